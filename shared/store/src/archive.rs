//! Where complete job logs are kept once their job has ended, beyond the `LOGS` stream's
//! retention: the `job_logs` object store of the hub (the embedded default), or an external
//! [`LogArchive`] (S3 through `ferry-aws`, which implements it: the AWS SDK stays out of this
//! crate). In an external archive a log is one gzip-compressed JSON-lines object,
//! `<org>/<job>.jsonl.gz`; a log archived in the hub before an external archive was configured
//! is still found there.

use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::time::Duration;

use ferry_model::LogEntry;
use flate2::Compression;

use crate::{Store, StoreError};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How long a read of an archived log may take before the hub's copy is read instead: a log
/// read (the API, a live follow, the dashboard) must answer while S3 is down.
pub const ARCHIVE_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long archiving a log may take before the attempt fails (and is retried later).
pub const ARCHIVE_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// An external store of archived job logs.
pub trait LogArchive: Send + Sync {
    /// Where it is, for logs and messages (`s3://bucket/prefix`).
    fn describe(&self) -> String;
    /// Stores `body` under `name`, replacing what was there.
    fn put<'a>(&'a self, name: &'a str, body: Vec<u8>) -> BoxFuture<'a, Result<(), ArchiveError>>;
    /// What is stored under `name`; `None` if nothing is.
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, ArchiveError>>;
}

/// An external archive's failure, with its cause kept.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct ArchiveError {
    pub what: String,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

fn external_name(org: &str, job: &str) -> String {
    format!("{org}/{job}.jsonl.gz")
}

fn hub_name(org: &str, job: &str) -> String {
    format!("{org}.{job}")
}

fn json_lines(entries: &[LogEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        // LogEntry is plain data: serializing it cannot fail.
        if let Ok(line) = serde_json::to_vec(e) {
            out.extend_from_slice(&line);
            out.push(b'\n');
        }
    }
    out
}

fn entries(bytes: &[u8]) -> Vec<LogEntry> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

fn corrupt(name: String, reason: String) -> StoreError {
    StoreError::Object {
        bucket: "job log archive",
        name,
        reason,
    }
}

impl Store {
    /// Archives a job's complete log: in the external archive when one is configured, else in
    /// the hub's `job_logs` object store.
    pub async fn archive_job_log(
        &self,
        org: &str,
        job: &str,
        log: &[LogEntry],
    ) -> Result<(), StoreError> {
        let lines = json_lines(log);
        let Some(archive) = &self.log_archive else {
            return self
                .put_object(
                    ferry_protocol::resources::objects::JOB_LOGS,
                    &hub_name(org, job),
                    &lines,
                )
                .await;
        };
        let name = external_name(org, job);
        let compressed = tokio::task::spawn_blocking(move || {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
            gz.write_all(&lines).and_then(|()| gz.finish())
        })
        .await
        .map_err(|e| corrupt(name.clone(), format!("compressing: {e}")))?
        .map_err(|e| corrupt(name.clone(), format!("compressing: {e}")))?;
        // An archive that hangs fails the attempt; log-ingest tries again later.
        tokio::time::timeout(ARCHIVE_WRITE_TIMEOUT, archive.put(&name, compressed))
            .await
            .map_err(|_| {
                corrupt(
                    name.clone(),
                    format!(
                        "{} did not answer within {} s",
                        archive.describe(),
                        ARCHIVE_WRITE_TIMEOUT.as_secs()
                    ),
                )
            })??;
        Ok(())
    }

    /// A job's archived log, if log-ingest has archived it.
    pub async fn archived_job_log(
        &self,
        org: &str,
        job: &str,
    ) -> Result<Option<Vec<LogEntry>>, StoreError> {
        if let Some(archive) = &self.log_archive {
            let name = external_name(org, job);
            // An archive that does not answer in time is passed over: the caller then reads the
            // hub's copy or the stream, which hold the log for as long as the stream keeps it.
            match tokio::time::timeout(ARCHIVE_READ_TIMEOUT, archive.get(&name)).await {
                Ok(Ok(Some(compressed))) => {
                    let lines = tokio::task::spawn_blocking(move || {
                        let mut lines = Vec::new();
                        flate2::read::GzDecoder::new(compressed.as_slice())
                            .read_to_end(&mut lines)
                            .map(|_| entries(&lines))
                    })
                    .await
                    .map_err(|e| corrupt(name.clone(), format!("decompressing: {e}")))?
                    .map_err(|e| corrupt(name, format!("decompressing: {e}")))?;
                    return Ok(Some(lines));
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(org, job, archive = %archive.describe(), error = %e, "the job log archive failed: reading the hub's copy");
                }
                Err(_) => {
                    tracing::warn!(org, job, archive = %archive.describe(), timeout_secs = ARCHIVE_READ_TIMEOUT.as_secs(), "the job log archive did not answer: reading the hub's copy");
                }
            }
        }
        let bytes = self
            .get_object(
                ferry_protocol::resources::objects::JOB_LOGS,
                &hub_name(org, job),
            )
            .await?;
        Ok(bytes.map(|b| entries(&b)))
    }
}
