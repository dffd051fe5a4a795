//! A job's end carried into its install (`Install::job_ended`, drift found or cleared, an
//! action's run) and the change that ends its step (`Job::step_outcome`), its audit record
//! first. Reached from a runner's result (`events.rs`) and from the scheduler's own ends of a job
//! (`stops.rs`) and the reconcile pass (`resume.rs`).

use ferry_model::{self as m, Workflow};

use crate::work::Work;
use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Carries an ended job into its install (`Install::job_ended`) and yields the change that
    /// ends its step (`Job::step_outcome`). Idempotent: a repeat changes nothing and yields a
    /// change the workflow refuses.
    pub(crate) async fn apply_job_result(&self, job: &m::Job) -> Result<Vec<Work>, SchedulerError> {
        // The copy last written will do once laid out: `job_context` reads only what a
        // workflow's lay-out fixed (its kind, its config, its action steps).
        let copy = self.workflows.get(&job.org, &job.workflow_id);
        let wf = match copy.filter(|v| !v.value.steps.is_empty()) {
            Some(v) => Some(v.value),
            None => self
                .store
                .repo::<Workflow>()
                .get(&job.org, &job.workflow_id)
                .await?
                .map(|v| v.value),
        };
        let ctx = self.job_context(job, wf.as_ref()).await?;
        // Before the step ends, like every record here: until it has, a failure is retried with
        // the step (this message redelivered, or the reconcile pass), and a record written twice
        // is the job's, the same each time, and kept once.
        self.audit(&m::AuditEvent::job_ended(job)).await?;
        let now = m::Timestamp::now();
        let mut ended = m::InstallChanged::default();
        self.change_install_of(&job.org, &job.install, |i| {
            ended = i.job_ended(job, &ctx, now);
            ended.changed
        })
        .await?;
        if ended.newly_drifted {
            self.audit(&m::AuditEvent::component_drifted(job)).await?;
        }
        let change = m::Change::finish(job.step, job.step_outcome(&ctx), "runner");
        Ok(vec![Work::on(&job.org, &job.workflow_id, change)])
    }

    /// What the job's workflow (if it still exists) says of it.
    pub(crate) async fn job_context(
        &self,
        job: &m::Job,
        wf: Option<&Workflow>,
    ) -> Result<m::JobContext, SchedulerError> {
        let Some(wf) = wf else {
            return Ok(m::JobContext::default());
        };
        let action_step = match job.kind {
            m::JobKind::Action => {
                let step = wf
                    .step(job.step)
                    .and_then(|s| s.action.as_ref())
                    .map(|a| a.step.clone())
                    .unwrap_or_default();
                let last = job.status == m::JobStatus::Finished
                    && self
                        .config(&job.org, &wf.app_config_id)
                        .await?
                        .action(&job.component)
                        .and_then(|a| a.steps.last())
                        .is_some_and(|s| s.name == step);
                Some(m::ActionStepEnd { step, last })
            }
            _ => None,
        };
        Ok(m::JobContext {
            drift_check: wf.kind == m::WorkflowKind::DriftCheck,
            action_step,
        })
    }
}
