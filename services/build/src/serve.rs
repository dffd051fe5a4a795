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
use ferry_protocol::{decode, encode, subjects};
use futures_util::StreamExt;
use tracing::{debug, warn};

use crate::{BuildError, BuildService};

/// `org.install.manifest` triples already found to be the install's app's builds, with the
/// build's component (a build's digest never changes, so a yes stays true).
#[derive(Clone, Default)]
pub(crate) struct Allowed(Arc<Mutex<HashMap<String, (String, String)>>>);

/// Blobs read in the last [`RECENT_FOR`], by org and digest, up to [`RECENT_BYTES`] in all.
///
/// A runner reads a blob in chunks, and each chunk's request reads the blob (and the manifest
/// that lists it) from the vendor store again; a wave of installs syncing one artifact reads the
/// same blobs hundreds of times within seconds. From the hub's object store each read is a
/// consumer that the server keeps for seconds after it ends: measured with 100 installs
/// (`loadtest release`), the stream reached its consumer limit and a sync failed. Blobs are
/// addressed by digest (what a digest names never changes) and every read has passed the
/// install's check first, so a short-lived copy changes nothing but the number of reads.
#[derive(Clone, Default)]
pub(crate) struct Recent(Arc<Mutex<RecentBlobs>>);

#[derive(Default)]
pub(crate) struct RecentBlobs {
    blobs: HashMap<String, (std::time::Instant, Arc<Vec<u8>>)>,
    bytes: usize,
}

/// How long a blob read stays at hand.
const RECENT_FOR: std::time::Duration = std::time::Duration::from_secs(60);
/// At most this much is kept; a blob over a quarter of it is never kept.
const RECENT_BYTES: usize = 64 * 1024 * 1024;

impl Recent {
    fn get(&self, key: &str) -> Option<Arc<Vec<u8>>> {
        let r = self.0.lock().ok()?;
        r.blobs
            .get(key)
            .filter(|(at, _)| at.elapsed() < RECENT_FOR)
            .map(|(_, b)| b.clone())
    }

    fn put(&self, key: String, blob: Arc<Vec<u8>>) {
        if blob.len() > RECENT_BYTES / 4 {
            return;
        }
        let Ok(mut r) = self.0.lock() else { return };
        // Expired first, then the oldest, until the new one fits.
        let mut by_age: Vec<(std::time::Instant, String)> = r
            .blobs
            .iter()
            .map(|(k, (at, _))| (*at, k.clone()))
            .collect();
        by_age.sort();
        for (at, k) in by_age {
            if at.elapsed() < RECENT_FOR && r.bytes + blob.len() <= RECENT_BYTES {
                break;
            }
            if let Some((_, old)) = r.blobs.remove(&k) {
                r.bytes -= old.len();
            }
        }
        r.bytes += blob.len();
        if let Some((_, old)) = r.blobs.insert(key, (std::time::Instant::now(), blob)) {
            r.bytes -= old.len();
        }
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
        let mut sub = client
            .queue_subscribe(subjects::ARTIFACT_ALL, "build".into())
            .await
            .map_err(|e| BuildError::Nats(Box::new(e)))?;
        // A reply is one message: half the limit leaves room for framing.
        let chunk = (client.server_info().max_payload / 2).max(1024);
        while let Some(msg) = sub.next().await {
            let s = self.clone();
            let client = client.clone();
            tokio::spawn(async move {
                let (Some(reply), Some((org, install))) =
                    (msg.reply.clone(), subjects::org_install(&msg.subject))
                else {
                    return;
                };
                let answer = match decode::<ArtifactRead>(&msg.payload) {
                    Ok(read) => s.read(org, install, &read, chunk).await,
                    Err(e) => ArtifactReply::Refused {
                        reason: format!("undecodable request: {e}"),
                    },
                };
                if let Err(e) = client.publish(reply, encode(&answer).into()).await {
                    debug!(error = %e, "could not answer an artifact read");
                }
            });
        }
        Err(BuildError::SubscriptionEnded)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_blobs_are_kept_within_their_budget_oldest_out_first() {
        let recent = Recent::default();
        let blob = |n: usize| Arc::new(vec![7u8; n]);
        let quarter = RECENT_BYTES / 4;
        recent.put("o/a".into(), blob(quarter));
        recent.put("o/b".into(), blob(quarter));
        recent.put("o/c".into(), blob(quarter));
        recent.put("o/d".into(), blob(quarter));
        assert!(recent.get("o/a").is_some());
        // A fifth does not fit: the oldest goes.
        recent.put("o/e".into(), blob(quarter));
        assert!(recent.get("o/a").is_none());
        assert!(recent.get("o/e").is_some());
        assert!(recent.0.lock().unwrap().bytes <= RECENT_BYTES);
        // Too large to keep at all.
        recent.put("o/huge".into(), blob(quarter + 1));
        assert!(recent.get("o/huge").is_none());
        // Another org's key is another entry.
        assert!(recent.get("p/e").is_none());
    }
}
