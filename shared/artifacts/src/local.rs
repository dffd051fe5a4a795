use std::path::{Path, PathBuf};

use crate::{ArtifactError, BlobStore, digest_hex, verify};

/// An OCI image-layout directory (`oci-layout`, `index.json`, `blobs/sha256/<hex>`): the install's
/// own store in the embedded default. Writes go to a temporary file and are renamed into place, so a
/// crash never leaves a partial blob under a digest's name, nor half an `index.json`. A manifest
/// stored with a tag is listed in `index.json` under that name
/// (`org.opencontainers.image.ref.name`), so standard tools (skopeo `oci:DIR:TAG`, oras, crane)
/// open it.
#[derive(Debug, Clone)]
pub struct LocalLayout {
    root: PathBuf,
    /// `index.json` is read, changed and written whole: one writer at a time in this process
    /// (and a file lock between processes).
    index: std::sync::Arc<tokio::sync::Mutex<()>>,
}

const REF_NAME: &str = "org.opencontainers.image.ref.name";

impl LocalLayout {
    pub fn open(root: &Path) -> Result<LocalLayout, ArtifactError> {
        std::fs::create_dir_all(root.join("blobs/sha256"))?;
        let marker = root.join("oci-layout");
        if !marker.exists() {
            std::fs::write(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        let index = root.join("index.json");
        if !index.exists() {
            std::fs::write(
                &index,
                br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#,
            )?;
        }
        Ok(LocalLayout {
            root: root.to_path_buf(),
            index: Default::default(),
        })
    }

    fn path(&self, digest: &str) -> Result<PathBuf, ArtifactError> {
        Ok(self.root.join("blobs/sha256").join(digest_hex(digest)?))
    }

    /// Unpacks artifact `manifest_digest` into `dir`, every read verified, on the calling thread:
    /// for the blocking pool. Preparing a job's work directory this way is one trip to the pool
    /// where [`crate::unpack`] takes one per read (the runner's `prepare`, measured by `loadtest
    /// dispatch --breakdown`). `NotFound` when the manifest is not here (it is written last, so
    /// then the artifact is not).
    pub fn unpack_blocking(&self, manifest_digest: &str, dir: &Path) -> Result<(), ArtifactError> {
        let read = |digest: &str| -> Result<Vec<u8>, ArtifactError> {
            let bytes = std::fs::read(self.path(digest)?).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ArtifactError::NotFound(digest.into()),
                _ => e.into(),
            })?;
            verify(digest, &bytes)?;
            Ok(bytes)
        };
        let manifest = crate::Manifest::parse(manifest_digest, &read(manifest_digest)?)?;
        for layer in &manifest.layers {
            crate::unpack_layer(&read(&layer.digest)?, dir)?;
        }
        Ok(())
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

    /// One trip to the blocking pool for the whole write, the check of its digest included (a
    /// layer may be hundreds of megabytes to hash): a file write, a rename and their checks each
    /// as a trip of their own (`tokio::fs`) were a fifth of the runners' CPU in `loadtest
    /// release`, in waking the pool's threads.
    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        let (digest, path, bytes) = (digest.to_string(), self.path(digest)?, bytes.to_vec());
        blocking("writing a blob", move || write_blob(&digest, &path, &bytes)).await
    }

    async fn put_manifest(
        &self,
        digest: &str,
        bytes: &[u8],
        media_type: &str,
        tag: Option<&str>,
    ) -> Result<(), ArtifactError> {
        let Some(tag) = tag else {
            return self.put_blob(digest, bytes).await;
        };
        let _one = self.index.lock().await;
        let (root, path) = (self.root.clone(), self.path(digest)?);
        let entry = serde_json::json!({
            "mediaType": media_type,
            "digest": digest,
            "size": bytes.len(),
            "annotations": { REF_NAME: tag },
        });
        let (digest, bytes, tag) = (digest.to_string(), bytes.to_vec(), tag.to_string());
        blocking("writing a manifest", move || {
            write_blob(&digest, &path, &bytes)?;
            add_to_index(&root, entry, &tag)
        })
        .await
    }
}

/// `f` on the blocking pool; `what` names it if the pool drops it.
async fn blocking(
    what: &str,
    f: impl FnOnce() -> Result<(), ArtifactError> + Send + 'static,
) -> Result<(), ArtifactError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ArtifactError::Store(format!("{what}: {e}")))?
}

/// Writes `bytes`, checked against `digest`, at `path` through a temporary file renamed into
/// place.
fn write_blob(digest: &str, path: &Path, bytes: &[u8]) -> Result<(), ArtifactError> {
    verify(digest, bytes)?;
    // A name of its own per write: two jobs of this process copying artifacts that share a blob
    // write it at once, and with one temporary name the first rename took the second write's
    // file from under it.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp-{}-{n}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Lists `entry` in the layout's `index.json` as `tag`, under an exclusive lock on
/// `index.json.lock`: the runner and its plugin processes (which copy images) may both write it.
fn add_to_index(root: &Path, entry: serde_json::Value, tag: &str) -> Result<(), ArtifactError> {
    let lock = std::fs::File::create(root.join("index.json.lock"))?;
    lock.lock()?;
    let path = root.join("index.json");
    let mut index: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)
        .map_err(|e| ArtifactError::Store(format!("{}: {e}", path.display())))?;
    let list = index["manifests"]
        .as_array_mut()
        .ok_or_else(|| ArtifactError::Store(format!("{}: no `manifests` list", path.display())))?;
    list.retain(|m| m["annotations"][REF_NAME] != tag);
    list.push(entry);
    let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
    std::fs::write(
        &tmp,
        serde_json::to_vec(&index).map_err(|e| ArtifactError::Store(e.to_string()))?,
    )?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}
