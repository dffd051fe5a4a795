//! Asking for a decision — an approval bound to what will run: a plan's digest, or, for a component
//! removed from the app, the artifact its teardown destroys — and carrying the decision into the
//! workflow. An approval given to a plan older than the scheduler's `max_plan_age` plans again
//! instead of applying.

use ferry_model::{self as m, StepKind, Workflow};
use ferry_protocol::Control;

use crate::permanent;
use crate::work::Work;
use crate::{Scheduler, SchedulerError};

/// What an approval approves: the job that made it, the digest it binds to, and its summary.
struct Subject {
    plan_job: String,
    digest: String,
    summary: String,
}

impl Scheduler {
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
            reason: None,
            vendor_approved_by: None,
            customer_approved_by: None,
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
