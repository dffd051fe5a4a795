//! OCI artifacts: the format component builds are packaged in, the stores they live in, and the
//! digest-verified copy that moves them from the vendor's store into an install's own store.
//!
//! A component artifact is an OCI image manifest with one config blob (what the artifact is) and one
//! `tar+gzip` layer (the component's files). Everything is addressed by SHA-256 digest and every blob
//! is verified on read, so a store can be untrusted: a wrong byte is an error, never a deploy.
//!
//! Stores, behind one [`BlobStore`] trait: [`LocalLayout`] (an OCI image-layout directory with its
//! `index.json`, the install side of the embedded default), [`NatsObjectStore`] (the vendor store of
//! the embedded default, in a JetStream object store) and [`Registry`] (an OCI distribution registry:
//! `docker-registry`, Docker Hub, ECR, ...; anonymous, basic or bearer-token auth).

mod any;
mod format;
mod helm;
mod local;
mod nats;
mod registry;

pub use any::AnyStore;
pub use format::{
    ArtifactConfig, BuiltArtifact, Descriptor, MANIFEST_MEDIA_TYPE, Manifest, Parsed, pack,
    parse_any, unpack_layer,
};
pub use helm::{HELM_CHART_MEDIA_TYPE, HELM_CONFIG_MEDIA_TYPE, chart_tag, pack_helm_chart};
pub use local::LocalLayout;
pub use nats::NatsObjectStore;
pub use registry::{Auth, Registry};

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
    #[error("registry {registry}: {source}")]
    Registry {
        registry: String,
        #[source]
        source: Box<oci_client::errors::OciDistributionError>,
    },
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

/// An artifact store: content-addressed blobs, and manifests (which point to blobs, or, in an
/// index, to other manifests). Where a store keeps manifests as blobs (a layout directory, an
/// object store), the manifest methods are the blob methods; a registry keeps them apart.
#[allow(async_fn_in_trait)] // used with concrete types only; no Send bound needed across dyn
pub trait BlobStore {
    async fn has_blob(&self, digest: &str) -> Result<bool, ArtifactError>;
    /// The blob's bytes, verified against `digest`.
    async fn get_blob(&self, digest: &str) -> Result<Vec<u8>, ArtifactError>;
    /// Stores `bytes` after checking they hash to `digest`.
    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError>;

    async fn has_manifest(&self, digest: &str) -> Result<bool, ArtifactError> {
        self.has_blob(digest).await
    }
    /// The manifest's bytes, verified against `digest`.
    async fn get_manifest(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        self.get_blob(digest).await
    }
    /// Stores a manifest (of `media_type`), and names it `tag` when given.
    async fn put_manifest(
        &self,
        digest: &str,
        bytes: &[u8],
        media_type: &str,
        tag: Option<&str>,
    ) -> Result<(), ArtifactError> {
        let _ = (media_type, tag);
        self.put_blob(digest, bytes).await
    }
}

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CopyStats {
    pub blobs_copied: usize,
    pub blobs_skipped: usize,
    pub bytes_copied: u64,
}

impl CopyStats {
    fn add(&mut self, other: CopyStats) {
        self.blobs_copied += other.blobs_copied;
        self.blobs_skipped += other.blobs_skipped;
        self.bytes_copied += other.bytes_copied;
    }
}

/// Blobs copied at once: enough to hide a registry's latency, few enough for a small host.
const COPY_CONCURRENCY: usize = 4;

/// Copies the artifact or image `manifest_digest` — for an index (a multi-platform image), every
/// platform's manifest — with all its blobs from `src` to `dst`, verifying every digest, skipping
/// blobs `dst` already has, `COPY_CONCURRENCY` blobs at a time. Each manifest is written after its
/// blobs, and an index after its manifests, so a copy cut short never leaves a manifest whose
/// content is missing, and running it again resumes where it stopped. `tag` names the top
/// manifest in `dst`.
pub async fn copy<S: BlobStore, D: BlobStore>(
    src: &S,
    dst: &D,
    manifest_digest: &str,
) -> Result<CopyStats, ArtifactError> {
    copy_tagged(src, dst, manifest_digest, None).await
}

/// [`copy`], naming the top manifest `tag` in `dst`.
pub async fn copy_tagged<S: BlobStore, D: BlobStore>(
    src: &S,
    dst: &D,
    manifest_digest: &str,
    tag: Option<&str>,
) -> Result<CopyStats, ArtifactError> {
    let bytes = src.get_manifest(manifest_digest).await?;
    let mut stats = CopyStats::default();
    let media_type = match format::parse_any(manifest_digest, &bytes)? {
        format::Parsed::Image { media_type, blobs } => {
            stats.add(copy_blobs(src, dst, &blobs).await?);
            media_type
        }
        format::Parsed::Index {
            media_type,
            manifests,
        } => {
            for m in &manifests {
                let child = src.get_manifest(m).await?;
                let format::Parsed::Image { media_type, blobs } = format::parse_any(m, &child)?
                else {
                    return Err(ArtifactError::InvalidManifest {
                        digest: m.clone(),
                        reason: "an index inside an index is not supported".into(),
                    });
                };
                stats.add(copy_blobs(src, dst, &blobs).await?);
                stats.add(put_manifest_once(dst, m, &child, &media_type, None).await?);
            }
            media_type
        }
    };
    stats.add(put_manifest_once(dst, manifest_digest, &bytes, &media_type, tag).await?);
    Ok(stats)
}

async fn put_manifest_once<D: BlobStore>(
    dst: &D,
    digest: &str,
    bytes: &[u8],
    media_type: &str,
    tag: Option<&str>,
) -> Result<CopyStats, ArtifactError> {
    if tag.is_none() && dst.has_manifest(digest).await? {
        return Ok(CopyStats {
            blobs_skipped: 1,
            ..Default::default()
        });
    }
    dst.put_manifest(digest, bytes, media_type, tag).await?;
    Ok(CopyStats {
        blobs_copied: 1,
        bytes_copied: bytes.len() as u64,
        ..Default::default()
    })
}

async fn copy_blobs<S: BlobStore, D: BlobStore>(
    src: &S,
    dst: &D,
    digests: &[String],
) -> Result<CopyStats, ArtifactError> {
    let mut stats = CopyStats::default();
    // In groups rather than a stream: a stream of borrowing futures is not provably `Send`, and
    // the runner runs a copy in a spawned task.
    for group in digests.chunks(COPY_CONCURRENCY) {
        let done = futures_util::future::try_join_all(group.iter().map(|d| copy_blob(src, dst, d)))
            .await?;
        for d in done {
            stats.add(d);
        }
    }
    Ok(stats)
}

async fn copy_blob<S: BlobStore, D: BlobStore>(
    src: &S,
    dst: &D,
    digest: &str,
) -> Result<CopyStats, ArtifactError> {
    if dst.has_blob(digest).await? {
        return Ok(CopyStats {
            blobs_skipped: 1,
            ..Default::default()
        });
    }
    let bytes = src.get_blob(digest).await?;
    dst.put_blob(digest, &bytes).await?;
    Ok(CopyStats {
        blobs_copied: 1,
        bytes_copied: bytes.len() as u64,
        ..Default::default()
    })
}

/// Stores a freshly built artifact (blobs first, manifest last).
pub async fn push<D: BlobStore>(dst: &D, art: &BuiltArtifact) -> Result<(), ArtifactError> {
    for (digest, bytes) in &art.blobs {
        if !dst.has_blob(digest).await? {
            dst.put_blob(digest, bytes).await?;
        }
    }
    dst.put_manifest(
        &art.manifest_digest,
        &art.manifest_bytes,
        &art.media_type,
        art.tag.as_deref(),
    )
    .await
}

/// Unpacks the artifact's files into `dir` (which must exist and should be empty).
pub async fn unpack<S: BlobStore>(
    src: &S,
    manifest_digest: &str,
    dir: &std::path::Path,
) -> Result<(), ArtifactError> {
    let manifest = Manifest::parse(manifest_digest, &src.get_manifest(manifest_digest).await?)?;
    for layer in &manifest.layers {
        let bytes = src.get_blob(&layer.digest).await?;
        // Decompressing and writing files is blocking work: the pool's, not a worker's.
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || unpack_layer(&bytes, &dir))
            .await
            .map_err(|e| ArtifactError::Store(format!("unpacking a layer: {e}")))??;
    }
    Ok(())
}
