use async_nats::jetstream::object_store::{self, ObjectStore};
use tokio::io::AsyncReadExt;

use crate::{ArtifactError, BlobStore, digest_hex, verify};

/// Blobs in a JetStream object store, named `sha256/<hex>`: the vendor store of the embedded default.
#[derive(Clone)]
pub struct NatsObjectStore {
    os: ObjectStore,
}

impl NatsObjectStore {
    pub fn new(os: ObjectStore) -> Self {
        NatsObjectStore { os }
    }

    fn name(digest: &str) -> Result<String, ArtifactError> {
        Ok(format!("sha256/{}", digest_hex(digest)?))
    }
}

fn store_err<E: std::fmt::Display>(e: E) -> ArtifactError {
    ArtifactError::Store(e.to_string())
}

impl BlobStore for NatsObjectStore {
    async fn has_blob(&self, digest: &str) -> Result<bool, ArtifactError> {
        match self.os.info(Self::name(digest)?).await {
            Ok(info) => Ok(!info.deleted),
            Err(e) if e.kind() == object_store::InfoErrorKind::NotFound => Ok(false),
            Err(e) => Err(store_err(e)),
        }
    }

    async fn get_blob(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        let mut obj = match self.os.get(Self::name(digest)?).await {
            Ok(o) => o,
            Err(e) if e.kind() == object_store::GetErrorKind::NotFound => {
                return Err(ArtifactError::NotFound(digest.into()));
            }
            Err(e) => return Err(store_err(e)),
        };
        let mut buf = Vec::new();
        obj.read_to_end(&mut buf).await?;
        verify(digest, &buf)?;
        Ok(buf)
    }

    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        verify(digest, bytes)?;
        let mut reader = bytes;
        self.os
            .put(Self::name(digest)?.as_str(), &mut reader)
            .await
            .map_err(store_err)?;
        Ok(())
    }
}
