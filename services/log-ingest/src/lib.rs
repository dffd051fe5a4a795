//! log-ingest: keeps job logs queryable after the fact, and shows runners' metrics. Runners
//! publish log batches to the `LOGS` stream (where the API follows them live); when a job
//! finishes, log-ingest archives its complete log as JSON lines in the `job_logs` object store,
//! so the log outlives the stream's retention. Runners' metric samples become `ferry_runner_*`
//! Prometheus metrics (`metrics.rs`). Every install's bytes in the streams it feeds are metered
//! against its quota, and an install past it is throttled and its junk purged (`quota.rs`).
//!
//! Every event is judged by the install in its subject before anything is stored: the job it
//! names must be that install's and the execution it names one granted to it (its token, see
//! `ferry_model::executions`); and only the lines of the job's own executions are archived
//! (`ferry_store::accepted_batch`). So no install can put its lines in another's archive.

use ferry_model::Job;
use ferry_protocol::messages::{EventBody, JobEvent};
use ferry_protocol::resources::consumers;
use ferry_protocol::subjects;
use ferry_store::{Handled, Store, StoreError, consume_messages_by_install};
use tracing::{info, warn};

pub mod metrics;
pub mod quota;

#[derive(Debug, thiserror::Error)]
pub enum LogIngestError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading runners' metric samples failed; the source keeps its kind.
    #[error("runner metrics: {0}")]
    Metrics(#[source] async_nats::Error),
    /// Metering or enforcing installs' quotas failed; the source keeps its kind.
    #[error("install quotas: {0}")]
    Quota(#[source] async_nats::Error),
}

#[derive(Clone)]
pub struct LogIngest {
    store: Store,
    limits: quota::Limits,
}

impl LogIngest {
    pub fn new(store: Store) -> Self {
        LogIngest {
            store,
            limits: quota::Limits::default(),
        }
    }

    /// This service with another quota per install.
    pub fn with_limits(mut self, limits: quota::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Archives logs and reads runners' metrics (shown through the process's metrics registry)
    /// until either fails.
    pub async fn run(self) -> Result<(), LogIngestError> {
        let samples = metrics::Samples::default();
        ferry_telemetry::register_collector(Box::new(samples.clone()));
        tokio::select! {
            r = self.clone().archive_logs() => r,
            r = metrics::run(self.store.clone(), samples) => r,
            r = quota::run(self.store.clone(), self.limits) => r,
        }
    }

    async fn archive_logs(self) -> Result<(), LogIngestError> {
        let consumer = self
            .store
            .bus()
            .durable("JOB_EVENTS", consumers::LOG_INGEST_EVENTS, vec![])
            .await?;
        info!("log-ingest started");
        // Archiving waits on the hub and the archive, not on this process: jobs of different
        // installs are archived at once.
        consume_messages_by_install(
            consumer,
            consumers::LOG_INGEST_EVENTS,
            8,
            move |subject, ev: JobEvent| {
                let s = self.clone();
                async move {
                    // Every job event is an execution's end (`EventBody::Finished`).
                    let EventBody::Finished(_) = ev.body;
                    let Some((org, install)) = subjects::org_install(&subject) else {
                        return Handled::Reject(format!("unexpected subject {subject}"));
                    };
                    match s.archive(org, install, &ev.job_id, &ev.execution_id).await {
                        Ok(()) => Handled::Done,
                        Err(e) => Handled::Retry(e.to_string()),
                    }
                }
            },
        )
        .await?;
        Ok(())
    }

    /// Writes the job's complete log as JSON lines, for a `Finished` event that install `install`
    /// sent for execution `token` of job `job`; nothing for an event the install may not send
    /// (counted and logged). The runner publishes (and has acknowledged) every log batch before
    /// the job's final event, so the log is complete when this runs.
    async fn archive(
        &self,
        org: &str,
        install: &str,
        job: &str,
        token: &str,
    ) -> Result<(), LogIngestError> {
        let Some(record) = self.store.repo::<Job>().get(org, job).await? else {
            refused(org, install, job, "no such job");
            return Ok(());
        };
        let record = record.value;
        if let Err(why) = record.accepts_log(install, token) {
            refused(org, install, job, &why);
            return Ok(());
        }
        let entries = self.store.job_log(&record).await?;
        self.store.archive_job_log(org, job, &entries).await?;
        ferry_telemetry::metrics()
            .log_lines_ingested
            .inc_by(entries.len() as u64);
        info!(org, install, job, lines = entries.len(), "job log archived");
        Ok(())
    }
}

/// An event that may not have its job's log archived: counted and logged, never retried.
fn refused(org: &str, install: &str, job: &str, why: &str) {
    warn!(
        org,
        install,
        job,
        reason = why,
        "finished event refused: log not archived"
    );
    ferry_telemetry::metrics()
        .messages_rejected
        .get_or_create(&ferry_telemetry::consumer_label("log-ingest-refused"))
        .inc();
}
