//! log-ingest: keeps job logs queryable after the fact. Runners publish log batches to the `LOGS`
//! stream (where the API follows them live); when a job finishes, log-ingest archives its complete log
//! as JSON lines in the `job_logs` object store, so the log outlives the stream's retention. S3 as the
//! archive, and runner metrics aggregation, come in a later issue behind the same flow.

use ferry_protocol::messages::{EventBody, JobEvent};
use ferry_protocol::resources::consumers;
use ferry_protocol::subjects;
use ferry_store::{Handled, Store, StoreError, consume_messages};
use tracing::{debug, info};

#[derive(Debug, thiserror::Error)]
pub enum LogIngestError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Clone)]
pub struct LogIngest {
    store: Store,
}

impl LogIngest {
    pub fn new(store: Store) -> Self {
        LogIngest { store }
    }

    pub async fn run(self) -> Result<(), LogIngestError> {
        let consumer = self
            .store
            .bus()
            .durable("JOB_EVENTS", consumers::LOG_INGEST_EVENTS, vec![])
            .await?;
        info!("log-ingest started");
        consume_messages(
            consumer,
            consumers::LOG_INGEST_EVENTS,
            move |subject, ev: JobEvent| {
                let s = self.clone();
                async move {
                    let EventBody::Finished(_) = ev.body else {
                        return Handled::Done;
                    };
                    let Some((org, install)) = subjects::org_install(&subject) else {
                        return Handled::Reject(format!("unexpected subject {subject}"));
                    };
                    match s.archive(org, install, &ev.job_id).await {
                        Ok(()) => Handled::Done,
                        Err(e) => Handled::Retry(e.to_string()),
                    }
                }
            },
        )
        .await?;
        Ok(())
    }

    /// Writes the job's complete log as JSON lines. The runner publishes (and has acknowledged) every
    /// log batch before the job's final event, so the log is complete when this runs.
    async fn archive(&self, org: &str, install: &str, job: &str) -> Result<(), LogIngestError> {
        let entries = self.store.job_log(org, install, job).await?;
        self.store.archive_job_log(org, job, &entries).await?;
        debug!(org, install, job, lines = entries.len(), "job log archived");
        Ok(())
    }
}
