//! Ending jobs before their runner reports: a cancel (pushed to the runner, or at once for a job
//! nobody claimed), an expired lease (the execution is lost; the job runs again or fails), a job
//! past one of its timeouts. Each changes the job record by compare-and-swap through a pure
//! function of `ferry-model` (`Job::expire`, `Job::check_timeouts`, `Job::cancel_unclaimed`) and
//! then ends the step like a result would.

use async_nats::jetstream::stream::LastRawMessageErrorKind;
use ferry_model::{self as m, StepOutcome, Workflow};
use ferry_protocol::codec::decode;
use ferry_protocol::messages::{EventBody, JobEvent, JobResult};
use ferry_protocol::resources::JOB_EVENTS;
use ferry_protocol::subjects;
use ferry_store::StoreError;
use tracing::{info, warn};

use crate::work::Work;
use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Ends a job past one of its timeouts (`timed_out`, said in its log), tells a runner still
    /// running it to stop, and fails its step.
    pub(crate) async fn time_out(
        &self,
        wf: &Workflow,
        job_id: &str,
    ) -> Result<Vec<Work>, SchedulerError> {
        let mut timed_out = None;
        let job = self
            .store
            .repo::<m::Job>()
            .modify(&wf.org, job_id, |j| {
                timed_out = j.check_timeouts(m::Timestamp::now(), self.grace_ms());
                Ok::<bool, ()>(timed_out.is_some())
            })
            .await?
            .ok();
        let (Some(job), Some(t)) = (job, timed_out) else {
            return Ok(vec![]);
        };
        warn!(org = %wf.org, install = %wf.install, job = %job_id, "{}", t.reason);
        if let Some(e) = job.executions.last() {
            self.store
                .append_system_line(&wf.org, &wf.install, job_id, &e.id, &t.reason)
                .await?;
        }
        if t.was_running {
            self.push_cancel(wf, job_id).await?;
        }
        self.apply_job_result(&job).await
    }

    /// How long past its execution limit a job's own runner gets to report: one lease.
    pub(crate) fn grace_ms(&self) -> u64 {
        self.lease.as_millis() as u64
    }

    /// Ends an execution whose lease expired (`lost`, said in the job's log too), then offers the
    /// job again or, with no executions left, fails its step.
    pub(crate) async fn expire_lease(
        &self,
        wf: &Workflow,
        read: &m::Job,
    ) -> Result<Vec<Work>, SchedulerError> {
        let job_id = read.id.as_str();
        if let Some((execution, result)) = self.result_at_hub(wf, read).await? {
            info!(org = %wf.org, install = %wf.install, job = %job_id, "lease ended, but the result is at the hub: applied");
            return self
                .record_result(&wf.org, &read.install, job_id, &execution, result)
                .await;
        }
        let mut expired = None;
        let job = self
            .store
            .repo::<m::Job>()
            .modify(&wf.org, job_id, |j| {
                expired = j.expire(m::Timestamp::now());
                Ok::<bool, ()>(expired.is_some())
            })
            .await?
            .ok();
        let (Some(job), Some(expired)) = (job, expired) else {
            return Ok(vec![]);
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
            m::Expired::Requeued { .. } => self.start_step(wf, job.step).await,
            m::Expired::Exhausted { .. } => self.apply_job_result(&job).await,
        }
    }

    /// The current execution's end, if it reached the hub and waits there for the results
    /// consumer: the latest event on the job's subject in `JOB_EVENTS` (read from the stream's
    /// leader). A scheduler stopped while holding it (a crash, a failover) leaves it undelivered
    /// for the consumer's ack wait, longer than a lease: applied now, the job does not run again.
    async fn result_at_hub(
        &self,
        wf: &Workflow,
        job: &m::Job,
    ) -> Result<Option<(String, JobResult)>, SchedulerError> {
        let stream = self
            .store
            .js
            .get_stream_no_info(JOB_EVENTS.name)
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))?;
        // The subject names the job's own install: only its runners may publish there.
        let subject = subjects::event(&wf.org, &job.install, &job.id);
        let last = match stream.get_last_raw_message_by_subject(&subject).await {
            Ok(m) => m,
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => return Ok(None),
            Err(e) => return Err(SchedulerError::Nats(Box::new(e))),
        };
        let Ok(event) = decode::<JobEvent>(&last.payload) else {
            return Ok(None);
        };
        if job.accepts_result(&job.install, &event.execution_id) != Ok(true) {
            return Ok(None);
        }
        let EventBody::Finished(result) = event.body;
        Ok(Some((event.execution_id, *result)))
    }

    /// Stops a step's job: a job no runner has claimed is cancelled here; a running one is asked
    /// to stop by a message to its install's runners (core NATS: a runner that misses it gets it
    /// again from the reconcile pass), and its step ends when the runner reports.
    pub(crate) async fn cancel_job(
        &self,
        wf: &Workflow,
        job_id: &str,
    ) -> Result<Vec<Work>, SchedulerError> {
        let mut was_queued = false;
        let r = self
            .store
            .repo::<m::Job>()
            .modify(&wf.org, job_id, |j| {
                was_queued = j.cancel_unclaimed(m::Timestamp::now());
                Ok::<bool, ()>(was_queued)
            })
            .await;
        let job = match r {
            Ok(Ok(j)) => j,
            Ok(Err(())) => return Ok(vec![]),
            // Never dispatched: the step can end now.
            Err(StoreError::NotFound { .. }) => {
                let step = wf
                    .steps
                    .iter()
                    .find(|s| s.job_id.as_deref() == Some(job_id));
                let never = StepOutcome::Cancelled("cancelled before it was dispatched".into());
                return Ok(step
                    .map(|s| Work::finish(wf, s.index, never, m::SCHEDULER))
                    .into_iter()
                    .collect());
            }
            Err(e) => return Err(e.into()),
        };
        if was_queued || job.status.is_terminal() {
            return self.apply_job_result(&job).await;
        }
        self.push_cancel(wf, job_id).await?;
        Ok(vec![])
    }

    async fn push_cancel(&self, wf: &Workflow, job_id: &str) -> Result<(), SchedulerError> {
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
