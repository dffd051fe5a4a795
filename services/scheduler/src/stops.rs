//! Ending jobs before their runner reports: a cancel (pushed to the runner, or at once for a job
//! nobody claimed), an expired lease (the execution is lost; the job runs again or fails), an offer
//! no runner took in time. Each changes the job record by compare-and-swap through a pure function
//! of `ferry-model` (`Job::expire`, `Job::expire_offer`) and then ends the step like a result would.

use ferry_model::{self as m, StepOutcome, Workflow};
use ferry_protocol::subjects;
use ferry_store::StoreError;
use tracing::{info, warn};

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Times out a job no runner took within the available time, and fails its step.
    pub(crate) async fn expire_offer(&self, job: &m::Job) -> Result<(), SchedulerError> {
        let limit = self.available.as_millis() as u64;
        let mut expired = false;
        let job = self
            .store
            .repo::<m::Job>()
            .modify(&job.org, &job.id, |j| {
                expired = j.expire_offer(&m::now(), m::now_ms(), limit);
                Ok::<bool, ()>(expired)
            })
            .await?
            .ok();
        match job {
            Some(j) if expired => {
                warn!(org = %j.org, install = %j.install, job = %j.id, "offer timed out: no runner took it");
                self.apply_job_result(&j).await
            }
            _ => Ok(()),
        }
    }

    /// Ends an execution whose lease expired (`lost`, said in the job's log too), then offers the
    /// job again or, with no executions left, fails its step.
    pub(crate) async fn expire_lease(
        &self,
        wf: &Workflow,
        job_id: &str,
    ) -> Result<(), SchedulerError> {
        let mut expired = None;
        let job = self
            .store
            .repo::<m::Job>()
            .modify(&wf.org, job_id, |j| {
                expired = j.expire(&m::now(), m::now_ms());
                Ok::<bool, ()>(expired.is_some())
            })
            .await?
            .ok();
        let (Some(job), Some(expired)) = (job, expired) else {
            return Ok(());
        };
        let (m::Expired::Requeued { lost } | m::Expired::Exhausted { lost }) = &expired;
        warn!(org = %wf.org, install = %wf.install, job = %job_id, "{lost}");
        let execution = job
            .executions
            .last()
            .map(|e| e.id.clone())
            .unwrap_or_default();
        self.store
            .append_system_line(&wf.org, &wf.install, job_id, &execution, lost)
            .await?;
        match expired {
            m::Expired::Requeued { .. } => match wf.step(job.step) {
                Some(step) => self.start_step(wf, step.index).await,
                None => Ok(()),
            },
            m::Expired::Exhausted { .. } => self.apply_job_result(&job).await,
        }
    }

    /// Stops a step's job: a job no runner has claimed is cancelled here; a running one is asked
    /// to stop by a message to its install's runners (core NATS: a runner that misses it gets it
    /// again from the reconcile pass), and its step ends when the runner reports.
    pub(crate) async fn cancel_job(
        &self,
        wf: &Workflow,
        job_id: &str,
    ) -> Result<(), SchedulerError> {
        let mut was_queued = false;
        let r = self
            .store
            .repo::<m::Job>()
            .modify(&wf.org, job_id, |j| {
                if j.status != m::JobStatus::Queued {
                    return Ok::<bool, ()>(false);
                }
                j.status = m::JobStatus::Cancelled;
                j.error = Some("cancelled before a runner took it".into());
                j.finished_at = Some(m::now());
                was_queued = true;
                Ok(true)
            })
            .await;
        let job = match r {
            Ok(Ok(j)) => j,
            Ok(Err(())) => return Ok(()),
            // Never dispatched: the step can end now.
            Err(StoreError::NotFound { .. }) => {
                let step = wf
                    .steps
                    .iter()
                    .find(|s| s.job_id.as_deref() == Some(job_id));
                if let Some(s) = step {
                    return self
                        .complete_step(
                            &wf.org,
                            &wf.id,
                            s.index,
                            StepOutcome::Cancelled("cancelled before it was dispatched".into()),
                            Some("scheduler".into()),
                        )
                        .await;
                }
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        if was_queued || job.status.is_terminal() {
            return self.apply_job_result(&job).await;
        }
        self.client
            .publish(
                subjects::cancel(&wf.org, &wf.install, job_id),
                job_id.to_string().into(),
            )
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))?;
        info!(org = %wf.org, install = %wf.install, job = %job_id, "cancel sent to the runner");
        Ok(())
    }
}
