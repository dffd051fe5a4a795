//! OCI artifacts: the format component builds are packaged in, the stores they live in, and the
//! digest-verified copy that moves them from the vendor's store into an install's own store.
//!
//! A component artifact is an OCI image manifest with one config blob (what the artifact is) and one
//! `tar+gzip` layer (the component's files). Everything is addressed by SHA-256 digest and every blob
//! is verified on read, so a store can be untrusted: a wrong byte is an error, never a deploy.
//!
//! Stores: [`LocalLayout`] (an OCI image-layout directory, the install side of the embedded default)
//! and [`NatsObjectStore`] (the vendor store of the embedded default, in a JetStream object store the
//! runner reaches over its one NATS connection). Registries (OCI distribution, ECR) come later behind
//! the same [`BlobStore`] trait.

mod format;
mod local;
mod nats;

pub use format::{ArtifactConfig, BuiltArtifact, Descriptor, Manifest, pack, unpack_layer};
pub use local::LocalLayout;
pub use nats::NatsObjectStore;

use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("blob {0} not found")]
    NotFound(String),
    #[error("digest mismatch: expected {expected}, content hashes to {actual}")]
    DigestMismatch { expected: String, actual: String },
    #[error("invalid digest `{0}` (expected sha256:<64 hex>)")]
    InvalidDigest(String),
    #[error("invalid manifest {digest}: {reason}")]
    InvalidManifest { digest: String, reason: String },
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("store: {0}")]
    Store(String),
}

pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Checks the form of a digest (`sha256:` + 64 lowercase hex) and returns its hex part. Stores use
/// the hex part in paths and names, so this is also what keeps a digest from naming a path elsewhere.
pub fn digest_hex(digest: &str) -> Result<&str, ArtifactError> {
    let hex = digest
        .strip_prefix("sha256:")
        .ok_or_else(|| ArtifactError::InvalidDigest(digest.into()))?;
    if hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(hex)
    } else {
        Err(ArtifactError::InvalidDigest(digest.into()))
    }
}

pub fn verify(expected: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
    let actual = sha256_digest(bytes);
    if actual == expected {
        Ok(())
    } else {
        Err(ArtifactError::DigestMismatch {
            expected: expected.into(),
            actual,
        })
    }
}

/// Content-addressed blob storage. Manifests are blobs too.
#[allow(async_fn_in_trait)] // used with concrete types only; no Send bound needed across dyn
pub trait BlobStore {
    async fn has_blob(&self, digest: &str) -> Result<bool, ArtifactError>;
    /// The blob's bytes, verified against `digest`.
    async fn get_blob(&self, digest: &str) -> Result<Vec<u8>, ArtifactError>;
    /// Stores `bytes` after checking they hash to `digest`.
    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError>;
}

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CopyStats {
    pub blobs_copied: usize,
    pub blobs_skipped: usize,
    pub bytes_copied: u64,
}

/// Copies the artifact `manifest_digest` with all its blobs from `src` to `dst`, verifying every
/// digest and skipping blobs `dst` already has. The manifest is written last, so a copy cut short
/// never leaves a manifest whose blobs are missing.
pub async fn copy<S: BlobStore, D: BlobStore>(
    src: &S,
    dst: &D,
    manifest_digest: &str,
) -> Result<CopyStats, ArtifactError> {
    let mut stats = CopyStats::default();
    let manifest_bytes = src.get_blob(manifest_digest).await?;
    let manifest = Manifest::parse(manifest_digest, &manifest_bytes)?;
    for desc in std::iter::once(&manifest.config).chain(manifest.layers.iter()) {
        if dst.has_blob(&desc.digest).await? {
            stats.blobs_skipped += 1;
            continue;
        }
        let bytes = src.get_blob(&desc.digest).await?;
        dst.put_blob(&desc.digest, &bytes).await?;
        stats.blobs_copied += 1;
        stats.bytes_copied += bytes.len() as u64;
    }
    if dst.has_blob(manifest_digest).await? {
        stats.blobs_skipped += 1;
    } else {
        dst.put_blob(manifest_digest, &manifest_bytes).await?;
        stats.blobs_copied += 1;
        stats.bytes_copied += manifest_bytes.len() as u64;
    }
    Ok(stats)
}

/// Stores a freshly built artifact (blobs first, manifest last).
pub async fn push<D: BlobStore>(dst: &D, art: &BuiltArtifact) -> Result<(), ArtifactError> {
    for (digest, bytes) in &art.blobs {
        if !dst.has_blob(digest).await? {
            dst.put_blob(digest, bytes).await?;
        }
    }
    dst.put_blob(&art.manifest_digest, &art.manifest_bytes)
        .await
}

/// Unpacks the artifact's files into `dir` (which must exist and should be empty).
pub async fn unpack<S: BlobStore>(
    src: &S,
    manifest_digest: &str,
    dir: &std::path::Path,
) -> Result<(), ArtifactError> {
    let manifest = Manifest::parse(manifest_digest, &src.get_blob(manifest_digest).await?)?;
    for layer in &manifest.layers {
        let bytes = src.get_blob(&layer.digest).await?;
        unpack_layer(&bytes, dir)?;
    }
    Ok(())
}
