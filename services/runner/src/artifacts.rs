//! The vendor's artifacts, read through the install's own subjects.
//!
//! A runner may not open the hub's object stores (its permissions stop at its own subjects), so
//! an artifact sync asks the control plane for each blob on `ferry.rx.<org>.<install>.artifact`,
//! chunk by chunk; the build service answers only for artifacts built for the install's org.
//! Every blob is verified against its digest here, whoever answered.

use std::time::Duration;

use ferry_artifacts::{ArtifactError, BlobStore, verify};
use ferry_protocol::messages::{ArtifactRead, ArtifactReply};
use ferry_protocol::rpc::ask;
use ferry_protocol::subjects;

/// Artifacts larger than this are refused rather than held in memory.
const MAX_BLOB: u64 = 4 << 30;

/// How long a read waits for the control plane through an outage (a restart, a failover): a sync
/// started then goes on when it is back, rather than failing its deploy.
const PATIENCE: Duration = Duration::from_secs(120);

/// How long one read waits for its answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// A read-only [`BlobStore`] over the artifact request subject, for one artifact (`manifest`).
pub struct HubArtifacts {
    client: async_nats::Client,
    subject: String,
    manifest: String,
}

impl HubArtifacts {
    pub fn new(client: &async_nats::Client, org: &str, install: &str, manifest: &str) -> Self {
        HubArtifacts {
            client: client.clone(),
            subject: subjects::artifact(org, install),
            manifest: manifest.to_string(),
        }
    }

    async fn read(&self, digest: &str, offset: u64) -> Result<ArtifactReply, ArtifactError> {
        // Half of what this connection's server takes leaves room for the reply's framing.
        let limit = match self.client.server_info().max_payload {
            0 => 1024 * 1024,
            n => n,
        };
        let req = ArtifactRead {
            manifest: self.manifest.clone(),
            digest: digest.to_string(),
            offset,
            max_chunk: (limit / 2).max(1024) as u32,
        };
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let mut pause = Duration::from_millis(250);
        loop {
            let failed = match ask(&self.client, self.subject.clone(), &req, ANSWER_WITHIN).await {
                Ok(reply) => return Ok(reply),
                Err(e) if !e.is_transient() => {
                    return Err(ArtifactError::Store(format!("the reply for {digest}: {e}")));
                }
                Err(e) => format!("asking for {digest}: {e}"),
            };
            // No answer (no responders, a timeout): the control plane is away; wait for it.
            if tokio::time::Instant::now() + pause >= deadline {
                return Err(ArtifactError::Store(format!(
                    "{failed} (the control plane did not answer for {} s)",
                    PATIENCE.as_secs()
                )));
            }
            tracing::info!(digest, reason = %failed, "artifact read waits for the control plane");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(5));
        }
    }
}

impl BlobStore for HubArtifacts {
    async fn has_blob(&self, digest: &str) -> Result<bool, ArtifactError> {
        Ok(matches!(
            self.read(digest, 0).await?,
            ArtifactReply::Chunk { .. }
        ))
    }

    async fn get_blob(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        let mut blob = Vec::new();
        loop {
            match self.read(digest, blob.len() as u64).await? {
                ArtifactReply::Refused { reason } => {
                    return Err(ArtifactError::Store(format!("{digest}: {reason}")));
                }
                ArtifactReply::Chunk { total, bytes } => {
                    if total > MAX_BLOB {
                        return Err(ArtifactError::Store(format!(
                            "{digest} is {total} bytes, over the {MAX_BLOB} byte limit"
                        )));
                    }
                    let empty = bytes.is_empty();
                    blob.extend_from_slice(&bytes);
                    if blob.len() as u64 >= total {
                        break;
                    }
                    if empty {
                        return Err(ArtifactError::Store(format!(
                            "{digest}: the reply stopped at {} of {total} bytes",
                            blob.len()
                        )));
                    }
                }
            }
        }
        verify(digest, &blob)?;
        Ok(blob)
    }

    async fn put_blob(&self, digest: &str, _bytes: &[u8]) -> Result<(), ArtifactError> {
        Err(ArtifactError::Store(format!(
            "{digest}: the vendor's artifacts are read-only to an install"
        )))
    }
}
