//! Serving the vendor's artifacts to installs.
//!
//! A runner may not read the hub's object stores; its artifact sync asks on
//! `ferry.rx.<org>.<install>.artifact` (`ArtifactRead`) for one blob at a time, chunk by chunk.
//! The install is the one the subject names (the hub lets an install publish only under its own
//! subjects), and it gets only artifacts built for its own app: the manifest it names must be a
//! build's digest for that app, and the blob that manifest itself or one it lists. The runner
//! verifies every digest itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ferry_artifacts::{BlobStore, Manifest};
use ferry_model as m;
use ferry_protocol::messages::{ArtifactRead, ArtifactReply};
use ferry_store::serve::{Answer, serve};
use tracing::warn;

use crate::{BuildError, BuildService};

/// `org.install.manifest` triples already found to be the install's app's builds, with the
/// build's component (a build's digest never changes, so a yes stays true).
#[derive(Clone, Default)]
pub(crate) struct Allowed(Arc<Mutex<HashMap<String, (String, String)>>>);

/// Blobs served in the last minute, by org and digest. A runner reads a blob in chunks, and each
/// chunk's request reads the blob (and the manifest that lists it) again; a wave of installs
/// syncing one artifact reads the same blobs hundreds of times within seconds, and from the
/// hub's object store each read is a consumer the server keeps for 30 s after it ends (100
/// installs reached the stream's consumer limit: `loadtest release`). Every read has passed
/// the install's check first; what a digest names never changes.
pub(crate) type Recent = ferry_store::Recent;

impl BuildService {
    /// A blob or manifest of the vendor store, from the recent reads when it is there.
    async fn blob(
        &self,
        org: &str,
        vendor: &ferry_artifacts::AnyStore,
        digest: &str,
        manifest: bool,
    ) -> Result<Arc<Vec<u8>>, ferry_artifacts::ArtifactError> {
        let key = format!("{org}/{digest}");
        if let Some(b) = self.blobs.get(&key) {
            return Ok(b);
        }
        let bytes = Arc::new(match manifest {
            true => vendor.get_manifest(digest).await?,
            false => vendor.get_blob(digest).await?,
        });
        self.blobs.put(key, bytes.clone());
        Ok(bytes)
    }

    pub async fn serve_artifacts(self) -> Result<(), BuildError> {
        let client = self.store.js.client();
        // A reply is one message: half the limit leaves room for framing.
        let chunk = (client.server_info().max_payload / 2).max(1024);
        let tasks = self.tasks.clone();
        serve::<ArtifactRead, _, _>(client, "build", &tasks, move |caller, read| {
            let s = self.clone();
            async move { Answer::reply(s.read(&caller.org, &caller.install, &read, chunk).await) }
        })
        .await?;
        Ok(())
    }

    async fn read(
        &self,
        org: &str,
        install: &str,
        r: &ArtifactRead,
        chunk: usize,
    ) -> ArtifactReply {
        let refused = |reason: String| ArtifactReply::Refused { reason };
        let vendor = match self.allowed(org, install, &r.manifest).await {
            Ok(Some((app, component))) => match self.vendor.of(org, &app, &component).await {
                Ok(v) => v,
                Err(e) => return refused(format!("the vendor registry: {e}")),
            },
            Ok(None) => {
                warn!(org, install, manifest = %r.manifest, "artifact read refused: not a build of the install's app");
                return refused(format!(
                    "{} is not an artifact of this install's app",
                    r.manifest
                ));
            }
            Err(e) => return refused(format!("checking the artifact: {e}")),
        };
        if r.digest != r.manifest {
            let listed = match self.blob(org, &vendor, &r.manifest, true).await {
                Ok(bytes) => Manifest::parse(&r.manifest, &bytes).map(|m| {
                    std::iter::once(&m.config)
                        .chain(m.layers.iter())
                        .any(|d| d.digest == r.digest)
                }),
                Err(e) => Err(e),
            };
            match listed {
                Ok(true) => {}
                Ok(false) => return refused(format!("{} is not part of {}", r.digest, r.manifest)),
                Err(e) => return refused(e.to_string()),
            }
        }
        // The whole blob is read for each chunk (artifacts are mostly smaller than one), from
        // the recent reads when it is there.
        let read = self
            .blob(org, &vendor, &r.digest, r.digest == r.manifest)
            .await;
        match read {
            Ok(bytes) => {
                let from = (r.offset as usize).min(bytes.len());
                // No more than the asking runner's server takes (a leaf may take less than
                // the hub).
                let chunk = chunk.min(r.max_chunk.max(1024) as usize);
                let to = (from + chunk).min(bytes.len());
                ArtifactReply::Chunk {
                    total: bytes.len() as u64,
                    bytes: bytes[from..to].to_vec(),
                }
            }
            Err(e) => refused(e.to_string()),
        }
    }

    /// The component whose build `manifest` is, if it is a build of the install's app.
    async fn allowed(
        &self,
        org: &str,
        install: &str,
        manifest: &str,
    ) -> Result<Option<(String, String)>, BuildError> {
        let key = format!("{org}.{install}.{manifest}");
        if let Some(found) = self
            .allowed
            .0
            .lock()
            .ok()
            .and_then(|a| a.get(&key).cloned())
        {
            return Ok(Some(found));
        }
        let Some(inst) = self.store.repo::<m::Install>().get(org, install).await? else {
            return Ok(None);
        };
        let found = self
            .store
            .repo::<m::Build>()
            .list(org)
            .await?
            .into_iter()
            .find(|b| b.app == inst.value.app && b.digest.as_deref() == Some(manifest))
            .map(|b| (b.app, b.component));
        if let Some(f) = &found
            && let Ok(mut a) = self.allowed.0.lock()
        {
            a.insert(key, f.clone());
        }
        Ok(found)
    }
}
