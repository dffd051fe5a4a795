//! One of the stores, chosen at run time (by a flag): the vendor's store in the build service, the
//! install's own store in the runner.

use crate::{ArtifactError, BlobStore, LocalLayout, NatsObjectStore, Registry};

#[derive(Clone)]
pub enum AnyStore {
    Layout(LocalLayout),
    /// Boxed: a JetStream handle is large beside the others.
    Nats(Box<NatsObjectStore>),
    Registry(Registry),
}

impl BlobStore for AnyStore {
    async fn has_blob(&self, digest: &str) -> Result<bool, ArtifactError> {
        match self {
            AnyStore::Layout(s) => s.has_blob(digest).await,
            AnyStore::Nats(s) => s.has_blob(digest).await,
            AnyStore::Registry(s) => s.has_blob(digest).await,
        }
    }

    async fn get_blob(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        match self {
            AnyStore::Layout(s) => s.get_blob(digest).await,
            AnyStore::Nats(s) => s.get_blob(digest).await,
            AnyStore::Registry(s) => s.get_blob(digest).await,
        }
    }

    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        match self {
            AnyStore::Layout(s) => s.put_blob(digest, bytes).await,
            AnyStore::Nats(s) => s.put_blob(digest, bytes).await,
            AnyStore::Registry(s) => s.put_blob(digest, bytes).await,
        }
    }

    async fn has_manifest(&self, digest: &str) -> Result<bool, ArtifactError> {
        match self {
            AnyStore::Layout(s) => s.has_manifest(digest).await,
            AnyStore::Nats(s) => s.has_manifest(digest).await,
            AnyStore::Registry(s) => s.has_manifest(digest).await,
        }
    }

    async fn get_manifest(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        match self {
            AnyStore::Layout(s) => s.get_manifest(digest).await,
            AnyStore::Nats(s) => s.get_manifest(digest).await,
            AnyStore::Registry(s) => s.get_manifest(digest).await,
        }
    }

    async fn put_manifest(
        &self,
        digest: &str,
        bytes: &[u8],
        media_type: &str,
        tag: Option<&str>,
    ) -> Result<(), ArtifactError> {
        match self {
            AnyStore::Layout(s) => s.put_manifest(digest, bytes, media_type, tag).await,
            AnyStore::Nats(s) => s.put_manifest(digest, bytes, media_type, tag).await,
            AnyStore::Registry(s) => s.put_manifest(digest, bytes, media_type, tag).await,
        }
    }
}
