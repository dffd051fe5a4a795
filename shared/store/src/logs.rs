//! Reading job logs back from the `LOGS` stream, for archiving (log-ingest) and serving (api).

use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use ferry_model::LogEntry;
use ferry_protocol::messages::{LogBatch, LogStream};
use ferry_protocol::{decode, subjects};
use futures_util::{Stream, StreamExt};

use crate::{Store, StoreError, nats};

fn entries(batch: LogBatch) -> impl Iterator<Item = LogEntry> {
    let LogBatch {
        execution_id,
        first_seq,
        lines,
        ..
    } = batch;
    lines.into_iter().enumerate().map(move |(i, l)| LogEntry {
        execution: execution_id.clone(),
        seq: first_seq + i as u64,
        at_ms: l.at_ms,
        stream: match l.stream {
            LogStream::Stdout => "stdout",
            LogStream::Stderr => "stderr",
            LogStream::System => "system",
        }
        .to_string(),
        text: l.text,
    })
}

impl Store {
    /// Live log of a job from its first line: every line stored so far, then new ones as they come.
    /// The stream never ends by itself; the caller stops when the job is finished and it has caught
    /// up (see [`Store::job_log`]). Undecodable batches are skipped and counted.
    pub async fn job_log_stream(
        &self,
        org: &str,
        install: &str,
        job: &str,
    ) -> Result<impl Stream<Item = LogEntry> + use<>, StoreError> {
        let stream = self.js.get_stream("LOGS").await.map_err(nats)?;
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: subjects::log(org, install, job),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(nats)?;
        let messages = consumer.messages().await.map_err(nats)?;
        Ok(messages
            .filter_map(|m| async move {
                let m = m.ok()?;
                match decode::<LogBatch>(&m.payload) {
                    Ok(b) => Some(futures_util::stream::iter(entries(b))),
                    Err(_) => {
                        ferry_telemetry::metrics()
                            .messages_rejected
                            .get_or_create(&ferry_telemetry::consumer_label("logs-reader"))
                            .inc();
                        None
                    }
                }
            })
            .flatten())
    }

    /// Every line of a job's log stored so far.
    pub async fn job_log(
        &self,
        org: &str,
        install: &str,
        job: &str,
    ) -> Result<Vec<LogEntry>, StoreError> {
        let subject = subjects::log(org, install, job);
        let stream = self.js.get_stream("LOGS").await.map_err(nats)?;
        let mut consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: subject,
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(nats)?;
        let mut pending = consumer.info().await.map_err(nats)?.num_pending;
        let mut out = Vec::new();
        if pending == 0 {
            return Ok(out);
        }
        let mut messages = consumer.messages().await.map_err(nats)?;
        while pending > 0 {
            let next = tokio::time::timeout(Duration::from_secs(10), messages.next()).await;
            let Ok(Some(Ok(m))) = next else {
                return Err(StoreError::Timeout("reading a job log"));
            };
            pending = m.info().map(|i| i.pending).unwrap_or(0);
            match decode::<LogBatch>(&m.payload) {
                Ok(b) => out.extend(entries(b)),
                Err(_) => {
                    ferry_telemetry::metrics()
                        .messages_rejected
                        .get_or_create(&ferry_telemetry::consumer_label("logs-reader"))
                        .inc();
                }
            }
        }
        Ok(out)
    }
}

impl Store {
    /// Adds a line of the control plane's own to an execution's log (a lost lease): the log tells
    /// everything that happened to the job, not only what its runner saw.
    pub async fn append_system_line(
        &self,
        org: &str,
        install: &str,
        job: &str,
        execution: &str,
        text: &str,
    ) -> Result<(), StoreError> {
        let batch = LogBatch {
            job_id: job.to_string(),
            execution_id: execution.to_string(),
            // After anything the runner could have written for this execution.
            first_seq: u64::from(u32::MAX),
            lines: vec![ferry_protocol::messages::LogLine {
                at_ms: ferry_model::now_ms(),
                stream: LogStream::System,
                text: text.to_string(),
            }],
        };
        self.bus()
            .publish_msg(
                subjects::log(org, install, job),
                &format!("{execution}-control"),
                &batch,
            )
            .await
            .map(drop)
    }
}

fn archive_name(org: &str, job: &str) -> String {
    format!("{org}.{job}")
}

impl Store {
    /// Archives a job's complete log as JSON lines in the `job_logs` object store.
    pub async fn archive_job_log(
        &self,
        org: &str,
        job: &str,
        entries: &[LogEntry],
    ) -> Result<(), StoreError> {
        let mut out = Vec::new();
        for e in entries {
            // LogEntry is plain data: serializing it cannot fail.
            if let Ok(line) = serde_json::to_vec(e) {
                out.extend_from_slice(&line);
                out.push(b'\n');
            }
        }
        self.put_object(
            ferry_protocol::resources::objects::JOB_LOGS,
            &archive_name(org, job),
            &out,
        )
        .await
    }

    /// A job's archived log, if log-ingest has archived it.
    pub async fn archived_job_log(
        &self,
        org: &str,
        job: &str,
    ) -> Result<Option<Vec<LogEntry>>, StoreError> {
        let Some(bytes) = self
            .get_object(
                ferry_protocol::resources::objects::JOB_LOGS,
                &archive_name(org, job),
            )
            .await?
        else {
            return Ok(None);
        };
        let entries = bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect();
        Ok(Some(entries))
    }
}
