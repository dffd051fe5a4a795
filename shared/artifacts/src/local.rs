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

    /// Lists `digest` in `index.json` as `tag` (replacing what had that name).
    async fn name(
        &self,
        digest: &str,
        size: usize,
        media_type: &str,
        tag: &str,
    ) -> Result<(), ArtifactError> {
        let _one = self.index.lock().await;
        let root = self.root.clone();
        let entry = serde_json::json!({
            "mediaType": media_type,
            "digest": digest,
            "size": size,
            "annotations": { REF_NAME: tag },
        });
        let tag = tag.to_string();
        tokio::task::spawn_blocking(move || add_to_index(&root, entry, &tag))
            .await
            .map_err(|e| ArtifactError::Store(format!("updating index.json: {e}")))?
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

    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        verify(digest, bytes)?;
        let path = self.path(digest)?;
        // A name of its own per write: two jobs of this process copying artifacts that share a
        // blob write it at once, and with one temporary name the first rename took the second
        // write's file from under it.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp-{}-{n}", std::process::id()));
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &path).await?;
        Ok(())
    }

    async fn put_manifest(
        &self,
        digest: &str,
        bytes: &[u8],
        media_type: &str,
        tag: Option<&str>,
    ) -> Result<(), ArtifactError> {
        self.put_blob(digest, bytes).await?;
        if let Some(tag) = tag {
            self.name(digest, bytes.len(), media_type, tag).await?;
        }
        Ok(())
    }
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
