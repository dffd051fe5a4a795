//! The side effects of starting a step: build requests, job offers, approval requests. Each is
//! idempotent (records are created with create-if-absent, messages carry de-duplication ids), so the
//! reconcile pass may perform them again after a crash.

use ferry_appconfig::jobs;
use ferry_appconfig::operations::Operation;
use ferry_model::{self as m, StepKind, StepOutcome, Workflow};
use ferry_protocol::Control;
use ferry_protocol::messages::{ApplyJob, ComponentJob, JobSpec, SyncJob};
use ferry_store::StoreError;
use tracing::info;

use crate::offers::Planned;
use crate::work::Work;
use crate::{Scheduler, SchedulerError, permanent};

impl Scheduler {
    /// Performs a started step's effect: requests its build or approval, or offers its job.
    /// A step that cannot start for a reason retrying will not fix yields the change that fails
    /// it; a transient error goes back to the caller.
    pub(crate) async fn start_step(
        &self,
        wf: &Workflow,
        index: u32,
    ) -> Result<Vec<Work>, SchedulerError> {
        let Some(step) = wf.step(index) else {
            return Ok(vec![]);
        };
        let r = match step.kind {
            StepKind::Build => self.request_build(wf, step).await,
            StepKind::Sync => self.dispatch_sync(wf, step).await,
            StepKind::Plan => self.dispatch_plan(wf, step).await,
            StepKind::Approve => self.request_approval(wf, step).await,
            StepKind::Apply => self.dispatch_apply(wf, step).await,
            StepKind::Teardown => self.dispatch_teardown(wf, step).await,
            StepKind::Action => self.dispatch_action(wf, step).await,
        };
        match r {
            Ok(work) => Ok(work),
            Err(e) if e.is_transient() => Err(e),
            Err(e) => Ok(vec![Work::finish(
                wf,
                index,
                StepOutcome::Failed(e.to_string()),
                m::SCHEDULER,
            )]),
        }
    }

    async fn request_build(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let cfg = self.config(&wf.org, &wf.app_config_id).await?;
        let Some(component) = cfg.component(&step.component) else {
            return Err(permanent(format!(
                "component `{}` is not in app config {}",
                step.component, wf.app_config_id
            )));
        };
        let app = self.app_of_config(&wf.org, &wf.app_config_id).await?;
        let fresh = m::Build::requested(
            &wf.org,
            &app,
            &component.name,
            &wf.app_config_id,
            &component.content_hash,
            m::Timestamp::now(),
        );
        let builds = self.store.repo::<m::Build>();
        // Read first: nearly every build a deploy asks for exists already (each install of a
        // release asks for the same), and a create that finds it costs the hub a refused write.
        let found = builds.get(&wf.org, &fresh.id).await?;
        if found.is_none() {
            builds.create_if_absent(&fresh).await?;
        }
        let (index, build_id) = (step.index, fresh.id);
        // Named at lay-out (`lay_out`'s `name_builds`), which saves a write here; a workflow
        // laid out before that was named, or with another name, is named now.
        if step.build_id.as_deref() != Some(build_id.as_str()) {
            self.update_steps(&wf.org, &wf.id, |w| match w.step_mut(index) {
                Some(s) if s.build_id.as_deref() != Some(build_id.as_str()) => {
                    s.build_id = Some(build_id.clone());
                    true
                }
                _ => false,
            })
            .await?;
        }
        let mut existing = match found {
            Some(v) => v,
            None => builds.require(&wf.org, &build_id).await?,
        };
        if existing.value.status == m::BuildStatus::Succeeded {
            info!(build = %build_id, "reusing existing build");
            let reused = StepOutcome::Succeeded(format!("reused build {build_id}"));
            return Ok(vec![Work::finish(wf, index, reused, "build")]);
        }
        // A new deploy retries a failed build.
        if existing.value.retried() {
            match builds.update(&existing.value, existing.revision).await {
                Ok(_) | Err(StoreError::Conflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.store
            .bus()
            .control(&Control::BuildRequested {
                org: wf.org.clone(),
                build_id,
                workflow_id: wf.id.clone(),
                step: index,
            })
            .await?;
        Ok(vec![])
    }

    /// The built artifact of `component` in this workflow: `(repository, manifest digest)`.
    async fn artifact_of(
        &self,
        wf: &Workflow,
        component: &str,
    ) -> Result<(String, String), SchedulerError> {
        let Some(build_id) = wf
            .find(component, StepKind::Build)
            .and_then(|s| s.build_id.clone())
        else {
            return Err(permanent(format!("no build recorded for `{component}`")));
        };
        let b = self
            .store
            .repo::<m::Build>()
            .require(&wf.org, &build_id)
            .await?
            .value;
        match b.digest {
            Some(d) if b.status == m::BuildStatus::Succeeded => Ok((b.repository, d)),
            _ => Err(permanent(format!("build {build_id} has no artifact"))),
        }
    }

    async fn dispatch_sync(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let (repository, digest) = self.artifact_of(wf, &step.component).await?;
        let spec = JobSpec::SyncArtifact(SyncJob {
            component: step.component.clone(),
            repository,
            digest,
        });
        self.dispatch(wf, step, m::JobKind::Sync, spec, None).await
    }

    /// The component job of a plan, apply or teardown (`ferry_appconfig::jobs::component_job`),
    /// from the records it is made of: the install, the config version the step runs with, the
    /// artifact it deploys or destroys.
    async fn component_job(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<ComponentJob, SchedulerError> {
        let install = self
            .store
            .repo::<m::Install>()
            .require(&wf.org, &wf.install)
            .await?
            .value;
        let cfg = self
            .config(&wf.org, &jobs::config_of_step(&install, wf, step))
            .await?;
        let digest = if step.kind == StepKind::Teardown {
            jobs::teardown_artifact(&install, &step.component).map_err(permanent)?
        } else {
            self.artifact_of(wf, &step.component).await?.1
        };
        let op = Operation::of_step(wf.kind, step).ok_or_else(|| {
            permanent(format!(
                "a {} step runs no component job",
                step.kind.label()
            ))
        })?;
        let component = step.component.clone();
        crate::rendered(move || jobs::component_job(&cfg, &install, &component, digest, op)).await
    }

    async fn dispatch_plan(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let job = self.component_job(wf, step).await?;
        // A drift check deploys nothing: the component's status stays as it is.
        if wf.kind != m::WorkflowKind::DriftCheck {
            let now = m::Timestamp::now();
            self.change_install(wf, |i| i.deploying(&step.component, now))
                .await?;
        }
        self.dispatch(wf, step, m::JobKind::Plan, JobSpec::Plan(job), None)
            .await
    }

    async fn dispatch_teardown(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let job = self.component_job(wf, step).await?;
        self.dispatch(wf, step, m::JobKind::Teardown, JobSpec::Teardown(job), None)
            .await
    }

    async fn dispatch_apply(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let Some(approval_id) = wf
            .find(&step.component, StepKind::Approve)
            .and_then(|s| s.approval_id.clone())
        else {
            return Err(permanent("no approval recorded for this apply"));
        };
        let approval = self
            .store
            .repo::<m::Approval>()
            .require(&wf.org, &approval_id)
            .await?
            .value;
        if approval.status != m::ApprovalStatus::Approved {
            return Err(permanent(format!(
                "approval {approval_id} is {:?}, not approved",
                approval.status
            )));
        }
        let component = self.component_job(wf, step).await?;
        // From here the install may hold what this artifact creates: a teardown destroys it with it.
        let artifact = component.artifact_digest.clone();
        self.change_install(wf, |i| {
            i.applying(&step.component, &artifact, &wf.app_config_id)
        })
        .await?;
        let plan = Planned {
            digest: approval.plan_digest.clone(),
            runner: self.planner(&wf.org, &approval.plan_job).await?,
        };
        // Only the digest travels: the runner applies its own copy of the plan it made.
        let spec = JobSpec::Apply(ApplyJob {
            component,
            plan_digest: approval.plan_digest,
        });
        self.dispatch(wf, step, m::JobKind::Apply, spec, Some(plan))
            .await
    }

    /// The runner that made a plan (its job's last execution's), which alone holds it.
    async fn planner(&self, org: &str, plan_job: &str) -> Result<Option<String>, SchedulerError> {
        let job = self.store.repo::<m::Job>().get(org, plan_job).await?;
        Ok(job.and_then(|j| j.value.executions.last().map(|e| e.runner.clone())))
    }
}
