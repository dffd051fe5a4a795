//! Batches a job's log lines and publishes them to the `LOGS` stream.
//!
//! Lines are buffered for at most [`FLUSH_EVERY`] or [`MAX_LINES`] lines, then published as one
//! batch and acknowledged by the stream before the next; a failed publish is retried (with the same
//! message id, so a retry never duplicates), so no line is lost while the runner lives.

use std::time::Duration;

use crate::outbox::Outbox;
use ferry_protocol::messages::{LogBatch, LogLine, LogStream};
use ferry_protocol::{encode, subjects};
use tokio::sync::mpsc;

pub const FLUSH_EVERY: Duration = Duration::from_millis(200);
pub const MAX_LINES: usize = 200;
/// Longest line kept; longer lines are cut (with a marker) so one runaway line cannot exceed the
/// server's message size.
pub const MAX_LINE_BYTES: usize = 16 * 1024;
/// A batch stays well under NATS's default 1 MB message limit, however long its lines.
pub const MAX_BATCH_BYTES: usize = 256 * 1024;

#[derive(Clone)]
pub struct LogHandle {
    tx: mpsc::Sender<LogLine>,
    /// Values no line may show (the install's sensitive inputs and outputs), longest first.
    redact: std::sync::Arc<[String]>,
}

/// What a masked value reads in a log.
pub const MASK: &str = "***";

impl LogHandle {
    /// `text` with every value this job's log must not show replaced by [`MASK`].
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in self.redact.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), MASK);
            }
        }
        out
    }

    /// This log, masking `values` too (secret values a job comes to hold after it started).
    pub fn with_more(&self, values: Vec<String>) -> LogHandle {
        if values.is_empty() {
            return self.clone();
        }
        let mut all: Vec<String> = self.redact.iter().cloned().chain(values).collect();
        all.retain(|v| !v.is_empty());
        all.sort_by_key(|v| std::cmp::Reverse(v.len()));
        LogHandle {
            tx: self.tx.clone(),
            redact: all.into(),
        }
    }

    pub async fn line(&self, stream: LogStream, text: impl Into<String>) {
        let mut text: String = self.mask(&text.into());
        if text.len() > MAX_LINE_BYTES {
            let mut cut = MAX_LINE_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(" …[line truncated]");
        }
        // The receiver lives until the handle is closed; a send error means the job is over.
        let _ = self
            .tx
            .send(LogLine {
                at_ms: ferry_model::now_ms(),
                stream,
                text,
            })
            .await;
    }

    pub async fn system(&self, text: impl Into<String>) {
        self.line(LogStream::System, text).await
    }
}

/// Starts the batching task. Drop every [`LogHandle`] and await the returned task to flush the rest.
pub fn start(
    outbox: Outbox,
    org: &str,
    install: &str,
    job_id: &str,
    execution_id: &str,
    redact: Vec<String>,
) -> (LogHandle, tokio::task::JoinHandle<u64>) {
    let (tx, mut rx) = mpsc::channel::<LogLine>(1024);
    let subject = subjects::log(org, install, job_id);
    let (job_id, execution_id) = (job_id.to_string(), execution_id.to_string());
    let task = tokio::spawn(async move {
        let mut seq: u64 = 0;
        let mut buf: Vec<LogLine> = Vec::new();
        let mut bytes = 0;
        let mut open = true;
        while open {
            // Wait for the first line, then gather until the batch is full or old enough.
            match rx.recv().await {
                Some(l) => {
                    bytes = l.text.len();
                    buf.push(l);
                }
                None => open = false,
            }
            let deadline = tokio::time::Instant::now() + FLUSH_EVERY;
            while open && buf.len() < MAX_LINES && bytes < MAX_BATCH_BYTES {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(l)) => {
                        bytes += l.text.len();
                        buf.push(l);
                    }
                    Ok(None) => open = false,
                    Err(_) => break,
                }
            }
            if buf.is_empty() {
                continue;
            }
            let batch = LogBatch {
                job_id: job_id.clone(),
                execution_id: execution_id.clone(),
                first_seq: seq,
                lines: std::mem::take(&mut buf),
            };
            let n = batch.lines.len() as u64;
            outbox
                .send(
                    &subject,
                    &format!("{execution_id}-log-{seq}"),
                    encode(&batch),
                )
                .await;
            seq += n;
        }
        seq
    });
    let redact = redact.into();
    (LogHandle { tx, redact }, task)
}
