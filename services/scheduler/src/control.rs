//! The `CONTROL` stream's messages to the scheduler (a workflow requested, a build finished, a
//! decision made, a cancel, retry or skip asked for), each turned into work for the executor;
//! and what a handler's result means for its message.

use ferry_model as m;
use ferry_protocol::Control;
use ferry_store::Handled;
use tracing::{info, warn};

use crate::work::Work;
use crate::{Scheduler, SchedulerError};

impl Scheduler {
    pub(crate) async fn on_control(&self, c: Control) -> Result<(), SchedulerError> {
        let work = match c {
            Control::WorkflowRequested {
                org, workflow_id, ..
            } => Work::advance(&org, &workflow_id),
            Control::BuildFinished {
                org,
                build_id,
                workflow_id,
                step,
                ok,
                error,
            } => {
                let outcome = if ok {
                    m::StepOutcome::Succeeded(format!("artifact built ({build_id})"))
                } else {
                    m::StepOutcome::Failed(error.unwrap_or_else(|| "build failed".into()))
                };
                Work::on(
                    &org,
                    &workflow_id,
                    m::Change::finish(step, outcome, "build"),
                )
            }
            Control::ApprovalDecided {
                org,
                workflow_id,
                step,
                approved,
                approval_id,
            } => {
                return self
                    .approval_decided(&org, &workflow_id, step, approved, &approval_id)
                    .await;
            }
            Control::CancelRequested {
                org,
                workflow_id,
                actor,
            } => Work::on(&org, &workflow_id, m::Change::Cancel { actor }),
            Control::RetryRequested {
                org,
                workflow_id,
                step,
                actor,
                ..
            } => {
                info!(org, workflow = %workflow_id, step, %actor, "retry requested");
                let change = m::Change::Retry { step, actor };
                return self.run_on(&org, &workflow_id, change).await;
            }
            Control::SkipRequested {
                org,
                workflow_id,
                step,
                actor,
            } => {
                info!(org, workflow = %workflow_id, step, %actor, "skip requested");
                let change = m::Change::Skip { step, actor };
                return self.run_on(&org, &workflow_id, change).await;
            }
            Control::JobCancelRequested { org, job_id, actor } => {
                return self.job_cancel_requested(&org, &job_id, &actor).await;
            }
            Control::ReleaseRequested { org, release_id } => {
                info!(org, release = %release_id, "release requested");
                let work = self.drive_release(&org, &release_id).await?;
                return self.execute(work).await;
            }
            // Not ours: the consumer's filter keeps these away; acknowledge if one slips through.
            Control::BuildRequested { .. }
            | Control::ApprovalRequested { .. }
            | Control::ApprovalResponse { .. } => return Ok(()),
        };
        self.execute([work]).await
    }

    async fn job_cancel_requested(
        &self,
        org: &str,
        job_id: &str,
        actor: &str,
    ) -> Result<(), SchedulerError> {
        let Some(job) = self.store.repo::<m::Job>().get(org, job_id).await? else {
            return Ok(());
        };
        let Some(wf) = self
            .store
            .repo::<m::Workflow>()
            .get(org, &job.value.workflow_id)
            .await?
        else {
            return Ok(());
        };
        info!(org, job = %job_id, %actor, "job cancel requested");
        let work = self.cancel_job(&wf.value, job_id).await?;
        self.execute(work).await
    }

    /// Carries out a retry or a skip, then marks the workflow open again: the API marked it
    /// too, but the end of the earlier run may have removed that mark since, and reconcile must
    /// see it until it ends.
    async fn run_on(
        &self,
        org: &str,
        workflow_id: &str,
        change: m::Change,
    ) -> Result<(), SchedulerError> {
        self.execute([Work::on(org, workflow_id, change)]).await?;
        if let Some(wf) = self
            .store
            .repo::<m::Workflow>()
            .get(org, workflow_id)
            .await?
            && !wf.value.status.is_terminal()
        {
            self.store
                .repo::<m::OpenWorkflow>()
                .create_if_absent(&wf.value.open_mark())
                .await?;
        }
        Ok(())
    }

    /// Ends a decided approve step (approved, or denied as the approval's `on_deny` says) and
    /// records who responded; an approved plan too old to trust is planned again instead.
    pub(crate) async fn approval_decided(
        &self,
        org: &str,
        workflow_id: &str,
        step: u32,
        approved: bool,
        approval_id: &str,
    ) -> Result<(), SchedulerError> {
        let approval = self
            .store
            .repo::<m::Approval>()
            .get(org, approval_id)
            .await?
            .map(|a| a.value);
        let on_deny = approval.as_ref().map(|a| a.on_deny).unwrap_or_default();
        let actor = approval.as_ref().and_then(|a| a.decided_by.clone());
        let who = actor.clone().unwrap_or_else(|| "unknown".into());
        let stale = match approval
            .as_ref()
            .filter(|a| approved && !a.plan_job.is_empty())
        {
            Some(a) => self.stale(org, &a.plan_job).await?,
            None => None,
        };
        if let Some(why) = stale {
            info!(org, workflow = workflow_id, step, "{why}");
            let replan = m::Change::Replan { step, who, why };
            return self.execute([Work::on(org, workflow_id, replan)]).await;
        }
        let reason = approval.as_ref().and_then(|a| a.reason.as_deref());
        let (outcome, action) = m::decided(approved, on_deny, reason);
        let decided = m::Change::Decide {
            step,
            outcome,
            actor,
            who,
            action: action.into(),
        };
        self.execute([Work::on(org, workflow_id, decided)]).await
    }

    /// Why a plan job's plan is too old to apply, if it is.
    /// Why a plan job's plan is too old to apply (`Job::plan_too_old`), if it is.
    async fn stale(&self, org: &str, plan_job: &str) -> Result<Option<String>, SchedulerError> {
        let job = self.store.repo::<m::Job>().get(org, plan_job).await?;
        Ok(job.and_then(|j| j.value.plan_too_old(m::Timestamp::now(), self.max_plan_age)))
    }
}

/// Maps a handler's result to what the consumer does with the message.
pub(crate) fn handled(r: Result<(), SchedulerError>) -> Handled {
    match r {
        Ok(()) => Handled::Done,
        Err(e) if e.is_transient() => Handled::Retry(e.to_string()),
        Err(e) => {
            // A permanent error is recorded on the workflow by the handler where it can be; the message
            // itself would fail the same way forever.
            warn!(error = %e, "control message failed permanently");
            Handled::Done
        }
    }
}
