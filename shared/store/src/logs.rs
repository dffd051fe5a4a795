//! Reading job logs back from the `LOGS` stream, for archiving (log-ingest) and serving (api).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use ferry_model::{Job, LogEntry};
use ferry_protocol::messages::{LogBatch, LogStream};
use ferry_protocol::{decode, subjects};
use futures_util::{Stream, StreamExt};
use tracing::warn;

use crate::{Store, StoreError, nats};

fn entries(batch: LogBatch, execution: String) -> impl Iterator<Item = LogEntry> {
    let LogBatch {
        first_seq, lines, ..
    } = batch;
    lines.into_iter().enumerate().map(move |(i, l)| LogEntry {
        execution: execution.clone(),
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

/// Bytes of text a whole job log is read up to (to archive it, or to serve it complete): a log
/// is what an install sends, and reading one of gigabytes into memory would take the server
/// down for everyone. The rest is left out, and a last line says so.
pub const JOB_LOG_LIMIT: usize = 64 << 20;

fn rejected(why: &str) {
    ferry_telemetry::metrics()
        .messages_rejected
        .get_or_create(&ferry_telemetry::consumer_label(why))
        .inc();
}

/// Whether a log batch stored on `subject` counts for `job`, and the public id of the execution
/// its lines are shown under. The control plane's own lines (`subjects::system_log`) count as
/// they are; a runner's count only if they name the job and the token of an execution granted
/// to the install in the subject (`Job::accepts_log`). A batch read here was published on the
/// job's own subjects, so a refusal means a runner of the job's own install sent it without
/// holding the execution: counted and logged, never shown.
pub fn accepted_batch(job: &Job, subject: &str, batch: &LogBatch) -> Result<String, String> {
    let Some((_, install)) = subjects::org_install(subject) else {
        return Err(format!("a log batch on unexpected subject {subject}"));
    };
    if batch.job_id != job.id {
        return Err(format!(
            "a log batch on job {}'s subject names job {}",
            job.id, batch.job_id
        ));
    }
    if subject.starts_with("ferry.sys.") {
        return Ok(batch.execution_id.clone());
    }
    job.accepts_log(install, &batch.execution_id)
        .map(str::to_string)
}

/// The subject a consumer reads a job's log on: its runners' lines and the control plane's, in one
/// filter (`subjects::job_log_filter`).
fn log_filter(job: &Job) -> String {
    subjects::job_log_filter(&job.org, &job.install, &job.id)
}

impl Store {
    /// Live log of a job from its first line: every line stored so far, then new ones as they come.
    /// The stream never ends by itself; the caller stops when the job is finished and it has caught
    /// up (see [`Store::job_log`]). Undecodable batches, and batches of no execution of the job
    /// (see [`accepted_batch`]), are skipped and counted; an execution that started after `job`
    /// was read is looked up again.
    pub async fn job_log_stream(
        &self,
        job: Job,
    ) -> Result<impl Stream<Item = LogEntry> + use<>, StoreError> {
        let stream = self.js.get_stream("LOGS").await.map_err(nats)?;
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: log_filter(&job),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(nats)?;
        let messages = consumer.messages().await.map_err(nats)?;
        let known = Arc::new(tokio::sync::Mutex::new(job));
        let store = self.clone();
        Ok(messages
            .filter_map(move |m| {
                let (known, store) = (known.clone(), store.clone());
                async move {
                    let m = m.ok()?;
                    let Ok(batch) = decode::<LogBatch>(&m.payload) else {
                        rejected("logs-reader");
                        return None;
                    };
                    let mut job = known.lock().await;
                    let mut verdict = accepted_batch(&job, &m.subject, &batch);
                    if verdict.is_err()
                        && let Ok(Some(fresh)) = store.repo::<Job>().get(&job.org, &job.id).await
                    {
                        *job = fresh.value;
                        verdict = accepted_batch(&job, &m.subject, &batch);
                    }
                    match verdict {
                        Ok(execution) => Some(futures_util::stream::iter(entries(batch, execution))),
                        Err(why) => {
                            warn!(org = %job.org, install = %job.install, job = %job.id, reason = %why, "log batch dropped");
                            rejected("logs-refused");
                            None
                        }
                    }
                }
            })
            .flatten())
    }

    /// Every line of a job's log stored so far, from executions of the job only (see
    /// [`accepted_batch`]), up to the store's job log limit ([`JOB_LOG_LIMIT`]): past it, one
    /// system line says the rest was cut.
    ///
    /// Read by batched direct gets where `LOGS` allows them (a single-node hub,
    /// `resources::Direct::SingleNode`): nothing is made at the server for the read. A consumer
    /// per read, which the server keeps after its last use, reached the stream's limit of a
    /// thousand when log-ingest archived a release's jobs (a hundred a second) and stalled
    /// archiving. A cluster reads through a consumer, deleted once read.
    pub async fn job_log(&self, job: &Job) -> Result<Vec<LogEntry>, StoreError> {
        let mut log = Collected::new(job, self.job_log_limit);
        if !self.job_log_direct(&mut log).await? {
            self.job_log_consumer(&mut log).await?;
        }
        Ok(log.out)
    }

    /// [`Store::job_log`] by direct gets, one subject at a time, merged in the stream's order:
    /// the control plane's lines (kept aside: [`Store::control_lines`]) and then the runners'
    /// (batched), each control line taken before the first runner line stored after it. `false`
    /// where the stream does not allow direct gets.
    ///
    /// Why two literal subjects and not the one filter ([`log_filter`]) a consumer reads: asked
    /// for the next message on a literal subject, the server goes through its per-subject index
    /// straight to it; on a wildcard, in a block where each subject has few messages (a job's log
    /// is a few batches among every job's), it tokenises and matches every message from the
    /// start of the block on. Log-ingest reads every finished job's log, so that scan was 8% of
    /// the hub's CPU in `loadtest release`.
    async fn job_log_direct(&self, log: &mut Collected<'_>) -> Result<bool, StoreError> {
        let job = log.job;
        let Some(mut control) = self.control_lines(job, log.limit).await? else {
            return Ok(false);
        };
        let mut more = true;
        let runner = subjects::log(&job.org, &job.install, &job.id);
        let direct = self.direct_read(&runner, |stored| {
            while control.front().is_some_and(|c| c.seq < stored.seq) {
                if let Some(c) = control.pop_front() {
                    more = log.take(&c.subject, &c.payload);
                    if !more {
                        return false;
                    }
                }
            }
            more = log.take(&stored.subject, &stored.payload);
            more
        });
        if !direct.await? {
            return Ok(false);
        }
        while more && let Some(c) = control.pop_front() {
            more = log.take(&c.subject, &c.payload);
        }
        Ok(true)
    }

    /// The control plane's lines of `job` (`subjects::system_log`), up to `limit` bytes of text,
    /// by one direct get each: most jobs have none, and a lone get says so in one reply, where a
    /// batched read costs a subscription of its own. `None` where the stream allows no direct
    /// gets.
    async fn control_lines(
        &self,
        job: &Job,
        limit: usize,
    ) -> Result<Option<VecDeque<Stored>>, StoreError> {
        let subject = subjects::system_log(&job.org, &job.install, &job.id);
        let client = self.js.client();
        let (mut lines, mut held, mut from) = (VecDeque::new(), 0, 1);
        // Past the limit the log is cut there: no need to hold more of it.
        while held <= limit {
            let request = serde_json::json!({ "seq": from, "next_by_subj": subject });
            let m = match client
                .request(DIRECT_GET_LOGS, request.to_string().into())
                .await
            {
                Ok(m) => m,
                Err(e) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
                    return Ok(None);
                }
                Err(e) => return Err(nats(e)),
            };
            match m.status.map(u16::from) {
                None => {
                    let seq = header(&m, "Nats-Sequence");
                    if seq < from {
                        return Err(StoreError::Nats(
                            "reading a job log: a direct get's reply without its sequence".into(),
                        ));
                    }
                    held += text_bytes(&m.payload);
                    let (subject, payload) = (subject.clone(), m.payload);
                    lines.push_back(Stored {
                        seq,
                        subject,
                        payload,
                    });
                    from = seq + 1;
                }
                Some(404) => break,
                Some(503) => return Ok(None),
                Some(code) => {
                    return Err(StoreError::Nats(
                        format!("reading a job log: status {code} {:?}", m.description).into(),
                    ));
                }
            }
        }
        Ok(Some(lines))
    }

    /// Every message on the literal `subject` of `LOGS`, in order, by batched direct gets, each
    /// handed to `each` until it says stop. `false` where the stream does not allow direct gets.
    async fn direct_read(
        &self,
        subject: &str,
        mut each: impl FnMut(Stored) -> bool,
    ) -> Result<bool, StoreError> {
        let client = self.js.client();
        let mut from = 1;
        loop {
            let inbox = client.new_inbox();
            let mut replies = client.subscribe(inbox.clone()).await.map_err(nats)?;
            let request = serde_json::json!({
                "seq": from,
                "next_by_subj": subject,
                "batch": DIRECT_BATCH,
                "max_bytes": DIRECT_BATCH_BYTES,
            });
            client
                .publish_with_reply(DIRECT_GET_LOGS, inbox, request.to_string().into())
                .await
                .map_err(nats)?;
            loop {
                let next = tokio::time::timeout(Duration::from_secs(10), replies.next()).await;
                let Ok(Some(m)) = next else {
                    return Err(StoreError::Timeout("reading a job log"));
                };
                match m.status.map(u16::from) {
                    None => {
                        let stored = Stored {
                            seq: header(&m, "Nats-Sequence"),
                            subject: subject.to_string(),
                            payload: m.payload.clone(),
                        };
                        if !each(stored) {
                            return Ok(true);
                        }
                    }
                    // End of this batch: more to read from past its last message, or done.
                    Some(204) if header(&m, "Nats-Num-Pending") > 0 => {
                        from = header(&m, "Nats-Last-Sequence") + 1;
                        break;
                    }
                    Some(204) | Some(404) => return Ok(true),
                    Some(503) => return Ok(false),
                    Some(code) => {
                        return Err(StoreError::Nats(
                            format!("reading a job log: status {code} {:?}", m.description).into(),
                        ));
                    }
                }
            }
        }
    }

    /// [`Store::job_log`] through an ordered consumer, deleted once read.
    async fn job_log_consumer(&self, log: &mut Collected<'_>) -> Result<(), StoreError> {
        let stream = self.js.get_stream_no_info("LOGS").await.map_err(nats)?;
        let mut consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: log_filter(log.job),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(nats)?;
        let info = consumer.info().await.map_err(nats)?;
        let (name, mut pending) = (info.name.clone(), info.num_pending);
        if pending > 0 {
            let mut messages = consumer.messages().await.map_err(nats)?;
            while pending > 0 {
                let next = tokio::time::timeout(Duration::from_secs(10), messages.next()).await;
                let Ok(Some(Ok(m))) = next else {
                    return Err(StoreError::Timeout("reading a job log"));
                };
                pending = m.info().map(|i| i.pending).unwrap_or(0);
                if !log.take(&m.subject, &m.payload) {
                    break;
                }
            }
        }
        // Gone now rather than when the server would drop it unused (30 s on).
        let _ = stream.delete_consumer(&name).await;
        Ok(())
    }
}

/// Messages a batched direct get of a job log asks for at once, and their bytes at most: a
/// batch an install sent is up to 1 MiB, and 256 of them in flight would be a quarter of a
/// gigabyte before the log's own limit is checked.
const DIRECT_BATCH: usize = 256;
const DIRECT_BATCH_BYTES: usize = 4 << 20;

/// The direct get API of `LOGS` (the services' JetStream API prefix is the default one).
const DIRECT_GET_LOGS: &str = "$JS.API.DIRECT.GET.LOGS";

/// The bytes of text a stored log batch holds (none if it does not decode: it is refused when
/// taken).
fn text_bytes(payload: &[u8]) -> usize {
    decode::<LogBatch>(payload).map_or(0, |b| b.lines.iter().map(|l| l.text.len()).sum())
}

/// A number a direct get's reply carries in header `name` (0 if none).
fn header(m: &async_nats::Message, name: &str) -> u64 {
    m.headers
        .as_ref()
        .and_then(|h| h.get(name))
        .and_then(|v| v.as_str().parse().ok())
        .unwrap_or(0)
}

/// One message of a job's log as a direct get returned it.
struct Stored {
    seq: u64,
    subject: String,
    payload: bytes::Bytes,
}

/// A job log being read: the lines kept so far and their bytes.
struct Collected<'a> {
    job: &'a Job,
    out: Vec<LogEntry>,
    kept: usize,
    limit: usize,
}

impl<'a> Collected<'a> {
    fn new(job: &'a Job, limit: usize) -> Self {
        Collected {
            job,
            out: Vec::new(),
            kept: 0,
            limit,
        }
    }

    /// Keeps the lines of one stored batch that count for the job; `false` once the log has
    /// reached its limit (the cut line added): read no further.
    fn take(&mut self, subject: &str, payload: &[u8]) -> bool {
        let job = self.job;
        let Ok(batch) = decode::<LogBatch>(payload) else {
            rejected("logs-reader");
            return true;
        };
        match accepted_batch(job, subject, &batch) {
            Ok(execution) => {
                for e in entries(batch, execution) {
                    if self.kept + e.text.len() > self.limit {
                        self.out.push(cut(&e, self.limit));
                        return false;
                    }
                    self.kept += e.text.len();
                    self.out.push(e);
                }
            }
            Err(why) => {
                warn!(org = %job.org, install = %job.install, job = %job.id, reason = %why, "log batch dropped");
                rejected("logs-refused");
            }
        }
        true
    }
}

/// The line that ends a log cut at `limit` bytes, in place of `first_left_out`.
fn cut(first_left_out: &LogEntry, limit: usize) -> LogEntry {
    LogEntry {
        stream: "system".into(),
        text: format!(
            "log cut: the rest of this job's log is past the {} MiB a job log is kept to",
            limit >> 20
        ),
        ..first_left_out.clone()
    }
}

impl Store {
    /// Adds a line of the control plane's own to an execution's log (a lost lease): the log tells
    /// everything that happened to the job, not only what its runner saw. `execution` is the
    /// execution's public id.
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
                subjects::system_log(org, install, job),
                &subjects::msg_id(org, install, &format!("{execution}-control")),
                &batch,
            )
            .await
            .map(drop)
    }
}
