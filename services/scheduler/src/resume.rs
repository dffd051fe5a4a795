//! Re-driving a started step from the records (the reconcile pass): a step whose effect a crash
//! interrupted is started again, one whose build, approval or job has ended meanwhile is ended,
//! and a job is checked against its lease and its timeouts (`ferry_model::JobCheck`).

use async_nats::jetstream::stream::DirectGetErrorKind;
use ferry_model::{self as m, StepKind, StepOutcome, Workflow};
use ferry_protocol::subjects;

use crate::work::Work;
use crate::{RECONCILE_INTERVAL, Scheduler, SchedulerError};

impl Scheduler {
    /// What the records say a started step needs now.
    pub(crate) async fn resume_step(
        &self,
        wf: &Workflow,
        index: u32,
    ) -> Result<Vec<Work>, SchedulerError> {
        let Some(step) = wf.step(index) else {
            return Ok(vec![]);
        };
        match step.kind {
            StepKind::Build => self.resume_build(wf, step).await,
            StepKind::Approve => self.resume_approval(wf, step).await,
            StepKind::Sync
            | StepKind::Plan
            | StepKind::Apply
            | StepKind::Teardown
            | StepKind::Action => self.resume_job(wf, step).await,
        }
    }

    async fn resume_build(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let build = match &step.build_id {
            Some(id) => self.store.repo::<m::Build>().get(&wf.org, id).await?,
            None => None,
        };
        if build.is_some_and(|b| b.value.status == m::BuildStatus::Succeeded) {
            let built = StepOutcome::Succeeded("artifact built".into());
            return Ok(vec![Work::finish(wf, step.index, built, "build")]);
        }
        self.start_step(wf, step.index).await
    }

    async fn resume_approval(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let approval = match &step.approval_id {
            Some(id) => self.store.repo::<m::Approval>().get(&wf.org, id).await?,
            None => None,
        };
        let decided = |outcome, by: Option<String>| {
            let change = m::Change::Finish {
                step: step.index,
                outcome,
                actor: by,
            };
            Ok(vec![Work::on(&wf.org, &wf.id, change)])
        };
        match approval.map(|a| a.value) {
            Some(a) if a.status == m::ApprovalStatus::Approved => {
                decided(StepOutcome::Succeeded("plan approved".into()), a.decided_by)
            }
            Some(a) if a.status == m::ApprovalStatus::Denied => decided(
                StepOutcome::Failed(m::denial(a.reason.as_deref())),
                a.decided_by,
            ),
            Some(a) if a.requested_at.is_some() => Ok(vec![]),
            _ => self.start_step(wf, step.index).await,
        }
    }

    async fn resume_job(&self, wf: &Workflow, step: &m::Step) -> Result<Vec<Work>, SchedulerError> {
        let job = match &step.job_id {
            Some(id) => self
                .store
                .repo::<m::Job>()
                .get(&wf.org, id)
                .await?
                .map(|v| v.value),
            None => None,
        };
        let check = m::JobCheck::of(
            job.as_ref(),
            m::Timestamp::now(),
            self.grace_ms(),
            self.may_expire_leases(),
            wf.cancel_requested,
        );
        match (check, job) {
            (m::JobCheck::Offer, _) => self.start_step(wf, step.index).await,
            (m::JobCheck::ApplyResult, Some(j)) => self.apply_job_result(&j).await,
            (m::JobCheck::TimeOut, Some(j)) => self.time_out(wf, &j.id).await,
            // Offered: the offer waits in the JOBS stream until a runner claims it, or until
            // its available time is over (unless it never got there).
            (m::JobCheck::CheckOffer, Some(j)) => self.reoffer_if_lost(wf, &j).await,
            (m::JobCheck::ExpireLease, Some(j)) => self.expire_lease(wf, &j).await,
            // A cancel is a core NATS message: a runner that missed it hears it now.
            (m::JobCheck::Cancel, Some(j)) => self.cancel_job(wf, &j.id).await,
            _ => Ok(vec![]),
        }
    }

    /// An `available` job whose offer is not in `JOBS` (the scheduler stopped between writing the
    /// record and publishing): queued again, to be offered anew. Looked at only once the offer has
    /// had time to be published.
    pub(crate) async fn reoffer_if_lost(
        &self,
        wf: &m::Workflow,
        job: &m::Job,
    ) -> Result<Vec<Work>, SchedulerError> {
        let settled = job
            .offered_at
            .as_deref()
            .and_then(m::ms_of)
            .is_some_and(|t| m::now_ms() >= t + 2 * RECONCILE_INTERVAL.as_millis() as u64);
        if !settled {
            return Ok(vec![]);
        }
        let stream = self.jobs_stream().await?;
        let subject = subjects::job(&job.org, &job.install, &job.id);
        match stream.direct_get_last_for_subject(&subject).await {
            Ok(_) => return Ok(vec![]),
            Err(e) if e.kind() == DirectGetErrorKind::NotFound => {}
            Err(e) => return Err(SchedulerError::Nats(Box::new(e))),
        }
        let mut requeued = false;
        self.store
            .repo::<m::Job>()
            .modify(&job.org, &job.id, |j| {
                requeued = j.offer_lost();
                Ok::<bool, ()>(requeued)
            })
            .await?
            .ok();
        if !requeued {
            return Ok(vec![]);
        }
        tracing::warn!(org = %job.org, install = %job.install, job = %job.id, "an available job had no offer; offering it again");
        self.start_step(wf, job.step).await
    }
}
