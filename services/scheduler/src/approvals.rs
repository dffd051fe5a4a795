//! Asking for a decision — an approval bound to what will run: a plan's digest, or, for a component
//! removed from the app, the artifact its teardown destroys — and carrying the decision into the
//! workflow. An approval given to a plan older than the scheduler's `max_plan_age` plans again
//! instead of applying.

use std::time::Duration;

use ferry_model::{self as m, StepKind, Workflow};
use ferry_protocol::Control;

use tracing::info;

use crate::dispatch::permanent;
use crate::effects::Work;
use crate::{Scheduler, SchedulerError};

/// What an approval approves: the job that made it, the digest it binds to, and its summary.
struct Subject {
    plan_job: String,
    digest: String,
    summary: String,
}

impl Scheduler {
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
        let denied = |dependents| m::StepOutcome::Skipped {
            message: "plan denied; its apply is skipped".into(),
            dependents,
        };
        let (outcome, action) = match (approved, on_deny) {
            (true, _) => (m::StepOutcome::Succeeded("plan approved".into()), "approve"),
            (false, m::OnDeny::Fail) => (m::StepOutcome::Failed("plan denied".into()), "deny"),
            (false, m::OnDeny::SkipCurrent) => (denied(false), "deny (skip-current)"),
            (false, m::OnDeny::SkipDependents) => (denied(true), "deny (skip-dependents)"),
        };
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
    async fn stale(&self, org: &str, plan_job: &str) -> Result<Option<String>, SchedulerError> {
        let job = self.store.repo::<m::Job>().get(org, plan_job).await?;
        let Some(made) = job
            .and_then(|j| j.value.finished_at)
            .as_deref()
            .and_then(m::ms_of)
        else {
            return Ok(None);
        };
        let age = Duration::from_secs(m::now_ms().saturating_sub(made) / 1000);
        Ok((age > self.max_plan_age).then(|| {
            format!(
                "the approved plan was {} old (more than {})",
                humantime::format_duration(age),
                humantime::format_duration(self.max_plan_age)
            )
        }))
    }

    /// Records the step's approval (once) and asks the approval service to decide it.
    pub(crate) async fn request_approval(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let subject = self.subject(wf, step).await?;
        let Some(approval_id) = step.approval_id.clone() else {
            return Err(permanent("step has no approval id"));
        };
        let approval = m::Approval {
            id: approval_id.clone(),
            org: wf.org.clone(),
            install: wf.install.clone(),
            workflow_id: wf.id.clone(),
            step: step.index,
            component: step.component.clone(),
            plan_job: subject.plan_job,
            plan_digest: subject.digest,
            plan_summary: subject.summary,
            status: m::ApprovalStatus::Pending,
            decided_by: None,
            decided_at: None,
            created_at: m::now(),
            requested_at: None,
            on_deny: Default::default(),
        };
        self.store
            .repo::<m::Approval>()
            .create_if_absent(&approval)
            .await?;
        self.store
            .bus()
            .control(&Control::ApprovalRequested {
                org: wf.org.clone(),
                approval_id: approval_id.clone(),
            })
            .await?;
        self.store
            .repo::<m::Approval>()
            .modify(&wf.org, &approval_id, |a| {
                if a.requested_at.is_some() {
                    return Ok::<bool, ()>(false);
                }
                a.requested_at = Some(m::now());
                Ok(true)
            })
            .await?
            .ok();
        Ok(vec![])
    }

    /// The plan an approve step approves, or — for a component removed from the app, whose
    /// approve step guards its teardown — the artifact the teardown destroys.
    async fn subject(&self, wf: &Workflow, step: &m::Step) -> Result<Subject, SchedulerError> {
        if let Some(plan_job) = wf
            .find(&step.component, StepKind::Plan)
            .and_then(|s| s.job_id.clone())
        {
            let job = self
                .store
                .repo::<m::Job>()
                .require(&wf.org, &plan_job)
                .await?
                .value;
            let Some(digest) = job.plan_digest.clone() else {
                return Err(permanent(format!("plan job {plan_job} produced no plan")));
            };
            return Ok(Subject {
                plan_job,
                digest,
                summary: job.plan_summary.unwrap_or_default(),
            });
        }
        if wf.find(&step.component, StepKind::Teardown).is_none() {
            return Err(permanent("no plan to approve"));
        }
        let install = self
            .store
            .repo::<m::Install>()
            .require(&wf.org, &wf.install)
            .await?
            .value;
        let Some(artifact) = install
            .component(&step.component)
            .and_then(|c| c.artifact_digest.clone())
        else {
            return Err(permanent(format!(
                "`{}` has nothing deployed to tear down",
                step.component
            )));
        };
        let why = match wf.kind {
            m::WorkflowKind::Teardown => "Teardown of the install",
            m::WorkflowKind::Runbook => "A runbook's step",
            _ => "Removed from the app",
        };
        Ok(Subject {
            plan_job: String::new(),
            digest: artifact,
            summary: format!(
                "{why}: `{}` will be torn down, destroying everything it deployed.",
                step.component
            ),
        })
    }
}
