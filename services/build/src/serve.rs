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

/// What an artifact read is checked against, kept once read: each install's app (an install
/// never moves to another app) and the component of each app's build by its manifest digest (a
/// build that has a digest has succeeded and never changes). A release's every install reads
/// the same few manifests: a miss read the install and listed every build of the org, which
/// grows with every version synced.
#[derive(Clone, Default)]
pub(crate) struct Allowed(Arc<Mutex<Known>>);

#[derive(Default)]
pub(crate) struct Known {
    /// `org.install` → its app.
    apps: HashMap<String, String>,
    /// `org.app.manifest` → the component built.
    builds: HashMap<String, String>,
}

/// Past this many installs or builds known, what is known starts over (each entry is a read
/// saved, never a decision).
const KNOWN_MAX: usize = 100_000;

/// Blobs served in the last minute, by org and digest. A runner reads a blob in chunks, and each
/// chunk's request reads the blob (and the manifest that lists it) again; a wave of installs
/// syncing one artifact reads the same blobs hundreds of times within seconds, and from the
/// hub's object store each read is a consumer the server keeps for 30 s after it ends (100
/// installs reached the stream's consumer limit: `loadtest release`). Every read has passed
/// the install's check first; what a digest names never changes.
pub(crate) type Recent = ferry_store::Recent;

impl Allowed {
    /// `f` on what is known; started over when it grew past [`KNOWN_MAX`]. `None` only if a
    /// thread panicked holding it (then nothing is known and everything is read again).
    fn with<R>(&self, f: impl FnOnce(&mut Known) -> R) -> Option<R> {
        let mut known = self.0.lock().ok()?;
        if known.apps.len() > KNOWN_MAX || known.builds.len() > KNOWN_MAX {
            *known = Known::default();
        }
        Some(f(&mut known))
    }
}

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

    /// The app and component whose build `manifest` is, if it is a build of the install's app.
    async fn allowed(
        &self,
        org: &str,
        install: &str,
        manifest: &str,
    ) -> Result<Option<(String, String)>, BuildError> {
        let Some((app, from_memory)) = self.app_of(org, install, false).await? else {
            return Ok(None);
        };
        if let Some(component) = self.component_of(org, &app, manifest).await? {
            return Ok(Some((app, component)));
        }
        if !from_memory {
            return Ok(None);
        }
        // An install deleted and made again, of another app, under the same name: its app
        // read afresh before a refusal.
        let Some((app, _)) = self.app_of(org, install, true).await? else {
            return Ok(None);
        };
        Ok(self
            .component_of(org, &app, manifest)
            .await?
            .map(|component| (app, component)))
    }

    /// The install's app, and whether it was known already (`fresh` reads it from the hub).
    async fn app_of(
        &self,
        org: &str,
        install: &str,
        fresh: bool,
    ) -> Result<Option<(String, bool)>, BuildError> {
        let key = format!("{org}.{install}");
        if !fresh && let Some(Some(app)) = self.allowed.with(|k| k.apps.get(&key).cloned()) {
            return Ok(Some((app, true)));
        }
        let Some(inst) = self.store.repo::<m::Install>().get(org, install).await? else {
            return Ok(None);
        };
        let app = inst.value.app;
        self.allowed.with(|k| k.apps.insert(key, app.clone()));
        Ok(Some((app, false)))
    }

    /// The component of `app` built as `manifest`; every build with a digest is learnt in one
    /// listing when it is not known yet.
    async fn component_of(
        &self,
        org: &str,
        app: &str,
        manifest: &str,
    ) -> Result<Option<String>, BuildError> {
        let key = format!("{org}.{app}.{manifest}");
        if let Some(Some(component)) = self.allowed.with(|k| k.builds.get(&key).cloned()) {
            return Ok(Some(component));
        }
        let builds = self.store.repo::<m::Build>().list(org).await?;
        let learnt = self.allowed.with(|k| {
            for b in builds {
                if let Some(digest) = b.digest {
                    k.builds
                        .insert(format!("{org}.{}.{digest}", b.app), b.component);
                }
            }
            k.builds.get(&key).cloned()
        });
        Ok(learnt.flatten())
    }
}
