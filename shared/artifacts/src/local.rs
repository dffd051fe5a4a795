use std::path::{Path, PathBuf};

use crate::{ArtifactError, BlobStore, digest_hex, verify};

/// An OCI image-layout directory (`oci-layout`, `blobs/sha256/<hex>`): the install's own store in the
/// embedded default. Writes go to a temporary file and are renamed into place, so a crash never
/// leaves a partial blob under a digest's name.
#[derive(Debug, Clone)]
pub struct LocalLayout {
    root: PathBuf,
}

impl LocalLayout {
    pub fn open(root: &Path) -> Result<LocalLayout, ArtifactError> {
        std::fs::create_dir_all(root.join("blobs/sha256"))?;
        let marker = root.join("oci-layout");
        if !marker.exists() {
            std::fs::write(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        Ok(LocalLayout {
            root: root.to_path_buf(),
        })
    }

    fn path(&self, digest: &str) -> Result<PathBuf, ArtifactError> {
        Ok(self.root.join("blobs/sha256").join(digest_hex(digest)?))
    }
}

impl BlobStore for LocalLayout {
    async fn has_blob(&self, digest: &str) -> Result<bool, ArtifactError> {
        Ok(tokio::fs::try_exists(self.path(digest)?).await?)
    }

    async fn get_blob(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        let bytes = match tokio::fs::read(self.path(digest)?).await {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ArtifactError::NotFound(digest.into()));
            }
            Err(e) => return Err(e.into()),
        };
        verify(digest, &bytes)?;
        Ok(bytes)
    }

    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        verify(digest, bytes)?;
        let path = self.path(digest)?;
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &path).await?;
        Ok(())
    }
}
