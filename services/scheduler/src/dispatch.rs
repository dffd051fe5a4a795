//! The side effects of starting a step: build requests, job offers, approval requests. Each is
//! idempotent (records are created with create-if-absent, messages carry de-duplication ids), so the
//! reconcile pass may perform them again after a crash.

use ferry_appconfig::ComponentType;
use ferry_model::{self as m, StepKind, StepOutcome, Workflow};
use ferry_protocol::Control;
use ferry_protocol::messages::{
    ApplyJob, ComponentJob, ComponentKind, JobOffer, JobSpec, SyncJob, Timeouts,
};
use ferry_store::StoreError;
use tracing::info;

use crate::{Scheduler, SchedulerError};

/// The template state (`.nuon.*`) of an install as it is now: its inputs, the sandbox's and the
/// components' outputs, its action runs. What every job of the install renders against.
pub(crate) fn install_state(
    cfg: &ferry_appconfig::AppConfig,
    install: &m::Install,
) -> serde_json::Value {
    let outputs = install
        .components
        .iter()
        .map(|(k, v)| (k.clone(), v.outputs.clone()))
        .collect();
    cfg.template_state(&ferry_appconfig::state::Facts {
        org: &install.org,
        app: &install.app,
        install: &install.name,
        inputs: Some(&install.inputs),
        sandbox_outputs: Some(&install.sandbox.outputs),
        component_outputs: Some(&outputs),
        actions: Some(&install.actions),
    })
}

/// A step that cannot proceed for a reason retrying will not fix.
pub(crate) struct Permanent(pub(crate) String);

impl Scheduler {
    pub(crate) async fn start_step(&self, wf: &Workflow, index: u32) -> Result<(), SchedulerError> {
        let Some(step) = wf.step(index) else {
            return Ok(());
        };
        // Each boxed: a step's effect may complete it (a reused build) and start the next one,
        // so these futures nest; inline, their sizes add up on a worker thread's stack.
        let r = match step.kind {
            StepKind::Build => Box::pin(self.request_build(wf, step)).await,
            StepKind::Sync => Box::pin(self.dispatch_sync(wf, step)).await,
            StepKind::Plan => Box::pin(self.dispatch_plan(wf, step)).await,
            StepKind::Approve => Box::pin(self.request_approval(wf, step)).await,
            StepKind::Apply => Box::pin(self.dispatch_apply(wf, step)).await,
            StepKind::Teardown => Box::pin(self.dispatch_teardown(wf, step)).await,
            StepKind::Action => Box::pin(self.dispatch_action(wf, step)).await,
        };
        let failed = match r {
            Ok(Ok(())) => return Ok(()),
            Err(e) if e.is_transient() => return Err(e),
            Ok(Err(Permanent(msg))) => msg,
            Err(e) => e.to_string(),
        };
        self.complete_step(
            &wf.org,
            &wf.id,
            index,
            StepOutcome::Failed(failed),
            Some("scheduler".into()),
        )
        .await
    }

    /// Re-performs or completes a started step from the records (see `reconcile`).
    pub(crate) async fn resume_step(
        &self,
        wf: &Workflow,
        index: u32,
    ) -> Result<(), SchedulerError> {
        let Some(step) = wf.step(index) else {
            return Ok(());
        };
        match step.kind {
            StepKind::Build => {
                let build = match &step.build_id {
                    Some(id) => self
                        .store
                        .repo::<m::Build>()
                        .get(&wf.org, id)
                        .await?
                        .map(|v| v.value),
                    None => None,
                };
                match build.map(|b| b.status) {
                    Some(m::BuildStatus::Succeeded) => {
                        self.complete_step(
                            &wf.org,
                            &wf.id,
                            index,
                            StepOutcome::Succeeded("artifact built".into()),
                            Some("build".into()),
                        )
                        .await
                    }
                    _ => self.start_step(wf, index).await,
                }
            }
            StepKind::Sync
            | StepKind::Plan
            | StepKind::Apply
            | StepKind::Teardown
            | StepKind::Action => {
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
                    m::now_ms(),
                    self.grace_ms(),
                    self.may_expire_leases(),
                    wf.cancel_requested,
                );
                match (check, job) {
                    (m::JobCheck::Offer, _) => self.start_step(wf, index).await,
                    (m::JobCheck::ApplyResult, Some(j)) => self.apply_job_result(&j).await,
                    (m::JobCheck::TimeOut, Some(j)) => self.time_out(wf, &j.id).await,
                    // Offered: the offer waits in the JOBS stream until a runner claims it, or
                    // until its available time is over (unless it never got there).
                    (m::JobCheck::CheckOffer, Some(j)) => self.reoffer_if_lost(wf, &j).await,
                    (m::JobCheck::ExpireLease, Some(j)) => self.expire_lease(wf, &j.id).await,
                    // A cancel is a core NATS message: a runner that missed it hears it now.
                    (m::JobCheck::Cancel, Some(j)) => self.cancel_job(wf, &j.id).await,
                    _ => Ok(()),
                }
            }
            StepKind::Approve => {
                let approval = match &step.approval_id {
                    Some(id) => self
                        .store
                        .repo::<m::Approval>()
                        .get(&wf.org, id)
                        .await?
                        .map(|v| v.value),
                    None => None,
                };
                match approval {
                    Some(a) if a.status == m::ApprovalStatus::Approved => {
                        self.complete_step(
                            &wf.org,
                            &wf.id,
                            index,
                            StepOutcome::Succeeded("plan approved".into()),
                            a.decided_by,
                        )
                        .await
                    }
                    Some(a) if a.status == m::ApprovalStatus::Denied => {
                        self.complete_step(
                            &wf.org,
                            &wf.id,
                            index,
                            StepOutcome::Failed("plan denied".into()),
                            a.decided_by,
                        )
                        .await
                    }
                    Some(a) if a.requested_at.is_some() => Ok(()),
                    _ => self.start_step(wf, index).await,
                }
            }
        }
    }

    async fn request_build(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Result<(), Permanent>, SchedulerError> {
        let cfg = self.config(&wf.org, &wf.app_config_id).await?;
        let Some(component) = cfg.component(&step.component) else {
            return Ok(Err(Permanent(format!(
                "component `{}` is not in app config {}",
                step.component, wf.app_config_id
            ))));
        };
        let rec = self
            .store
            .repo::<m::AppConfigVersion>()
            .require(&wf.org, &wf.app_config_id)
            .await?
            .value;
        let hash = component.content_hash.trim_start_matches("sha256:");
        let build_id = format!(
            "{}-{}-{}",
            rec.app,
            component.name,
            &hash[..hash.len().min(16)]
        );
        let builds = self.store.repo::<m::Build>();
        let fresh = m::Build {
            id: build_id.clone(),
            org: wf.org.clone(),
            app: rec.app.clone(),
            component: component.name.clone(),
            config_id: wf.app_config_id.clone(),
            content_hash: component.content_hash.clone(),
            status: m::BuildStatus::Building,
            repository: format!("{}/{}/{}", wf.org, rec.app, component.name),
            digest: None,
            size: 0,
            media_type: None,
            error: None,
            created_at: m::now(),
            finished_at: None,
        };
        builds.create_if_absent(&fresh).await?;
        let index = step.index;
        let id = build_id.clone();
        self.update_steps(&wf.org, &wf.id, |w| match w.step_mut(index) {
            Some(s) if s.build_id.is_none() => {
                s.build_id = Some(id.clone());
                true
            }
            _ => false,
        })
        .await?;
        let existing = builds.require(&wf.org, &build_id).await?;
        match existing.value.status {
            m::BuildStatus::Succeeded => {
                info!(build = %build_id, "reusing existing build");
                Box::pin(self.complete_step(
                    &wf.org,
                    &wf.id,
                    index,
                    StepOutcome::Succeeded(format!("reused build {build_id}")),
                    Some("build".into()),
                ))
                .await?;
                return Ok(Ok(()));
            }
            m::BuildStatus::Failed => {
                // A new deploy retries a failed build.
                let mut b = existing.value;
                b.status = m::BuildStatus::Building;
                b.error = None;
                match builds.update(&b, existing.revision).await {
                    Ok(_) | Err(StoreError::Conflict { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            m::BuildStatus::Building => {}
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
        Ok(Ok(()))
    }

    /// The built artifact of `component` in this workflow: `(repository, manifest digest)`.
    async fn artifact_of(
        &self,
        wf: &Workflow,
        component: &str,
    ) -> Result<Result<(String, String), Permanent>, SchedulerError> {
        let Some(build_id) = wf
            .find(component, StepKind::Build)
            .and_then(|s| s.build_id.clone())
        else {
            return Ok(Err(Permanent(format!(
                "no build recorded for `{component}`"
            ))));
        };
        let b = self
            .store
            .repo::<m::Build>()
            .require(&wf.org, &build_id)
            .await?
            .value;
        match b.digest {
            Some(d) if b.status == m::BuildStatus::Succeeded => Ok(Ok((b.repository, d))),
            _ => Ok(Err(Permanent(format!("build {build_id} has no artifact")))),
        }
    }

    async fn dispatch_sync(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Result<(), Permanent>, SchedulerError> {
        let (repository, digest) = match self.artifact_of(wf, &step.component).await? {
            Ok(a) => a,
            Err(p) => return Ok(Err(p)),
        };
        let spec = JobSpec::SyncArtifact(SyncJob {
            component: step.component.clone(),
            repository,
            digest,
        });
        self.dispatch(wf, step, m::JobKind::Sync, spec, None)
            .await
            .map(Ok)
    }

    /// The component job of a plan or apply, with its templates rendered against the install now.
    async fn component_job(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Result<ComponentJob, Permanent>, SchedulerError> {
        let install = self
            .store
            .repo::<m::Install>()
            .require(&wf.org, &wf.install)
            .await?
            .value;
        // A teardown destroys with the config its component was deployed with (a component
        // removed from the app is only in that one).
        let config_id = match step.kind {
            StepKind::Teardown => install
                .component(&step.component)
                .and_then(|c| c.config_id.clone())
                .unwrap_or_else(|| wf.app_config_id.clone()),
            _ => wf.app_config_id.clone(),
        };
        let cfg = self.config(&wf.org, &config_id).await?;
        let Some(component) = cfg.component(&step.component) else {
            return Ok(Err(Permanent(format!(
                "component `{}` is not in the app config",
                step.component
            ))));
        };
        // A teardown destroys what the last apply deployed: that artifact, already in the
        // install's store. Everything else uses this workflow's build.
        let digest = if step.kind == StepKind::Teardown {
            match install
                .component(&step.component)
                .and_then(|c| c.artifact_digest.clone())
            {
                Some(d) => d,
                None => {
                    return Ok(Err(Permanent(format!(
                        "`{}` has no deployed artifact to tear down",
                        step.component
                    ))));
                }
            }
        } else {
            match self.artifact_of(wf, &step.component).await? {
                Ok((_, d)) => d,
                Err(p) => return Ok(Err(p)),
            }
        };

        let state = install_state(&cfg, &install);
        let rendered = match component.render(&state) {
            Ok(r) => r,
            Err(e) => return Ok(Err(Permanent(format!("cannot render templates: {e}")))),
        };
        let mut policies = Vec::new();
        for p in cfg.policies_for(component) {
            match ferry_appconfig::template::render(&p.text, &state) {
                Ok(rego) => policies.push(ferry_protocol::messages::PolicyDoc {
                    name: p.name.clone(),
                    rego,
                }),
                Err(e) => {
                    return Ok(Err(Permanent(format!(
                        "cannot render policy `{}`: {e}",
                        p.name
                    ))));
                }
            }
        }
        let needs_cluster = matches!(
            component.kind,
            ComponentType::HelmChart | ComponentType::KubernetesManifest | ComponentType::Job
        );
        let cluster = match ferry_appconfig::cluster::access(&install.sandbox.outputs) {
            Ok(c) => c.filter(|_| needs_cluster),
            Err(e) if needs_cluster => return Ok(Err(Permanent(e))),
            Err(_) => None,
        };
        Ok(Ok(ComponentJob {
            component: component.name.clone(),
            kind: match component.kind {
                ComponentType::Script => ComponentKind::Script,
                ComponentType::TerraformModule => ComponentKind::Terraform,
                ComponentType::HelmChart => ComponentKind::Helm,
                ComponentType::KubernetesManifest => ComponentKind::KubernetesManifest,
                ComponentType::ContainerImage => ComponentKind::ContainerImage,
                ComponentType::Job => ComponentKind::Job,
                other => {
                    return Ok(Err(Permanent(format!(
                        "`{}` components cannot be deployed by this version of Ferry yet",
                        other.as_str()
                    ))));
                }
            },
            artifact_digest: digest,
            vars: rendered.vars,
            env: rendered.env_vars,
            applied_digest: install
                .component(&component.name)
                .and_then(|c| c.applied_digest.clone()),
            redact: install.secret_values(&cfg.sensitive_defaults(&install.inputs)),
            settings: rendered.settings,
            timeout_secs: component.timeout_secs,
            cluster,
            policies,
        }))
    }

    async fn dispatch_plan(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Result<(), Permanent>, SchedulerError> {
        let job = match self.component_job(wf, step).await? {
            Ok(j) => j,
            Err(p) => return Ok(Err(p)),
        };
        // A drift check deploys nothing: the component's status stays as it is.
        if wf.kind != m::WorkflowKind::DriftCheck {
            self.set_component_status(wf, &step.component, m::ComponentStatus::Deploying)
                .await?;
        }
        self.dispatch(wf, step, m::JobKind::Plan, JobSpec::Plan(job), None)
            .await
            .map(Ok)
    }

    async fn dispatch_teardown(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Result<(), Permanent>, SchedulerError> {
        let job = match self.component_job(wf, step).await? {
            Ok(j) => j,
            Err(p) => return Ok(Err(p)),
        };
        self.dispatch(wf, step, m::JobKind::Teardown, JobSpec::Teardown(job), None)
            .await
            .map(Ok)
    }

    async fn dispatch_apply(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Result<(), Permanent>, SchedulerError> {
        let Some(approval_id) = wf
            .find(&step.component, StepKind::Approve)
            .and_then(|s| s.approval_id.clone())
        else {
            return Ok(Err(Permanent("no approval recorded for this apply".into())));
        };
        let approval = self
            .store
            .repo::<m::Approval>()
            .require(&wf.org, &approval_id)
            .await?
            .value;
        if approval.status != m::ApprovalStatus::Approved {
            return Ok(Err(Permanent(format!(
                "approval {approval_id} is {:?}, not approved",
                approval.status
            ))));
        }
        let component = match self.component_job(wf, step).await? {
            Ok(j) => j,
            Err(p) => return Ok(Err(p)),
        };
        // From here the install may hold what this artifact creates: a teardown destroys it with it.
        let artifact = component.artifact_digest.clone();
        self.store
            .repo::<m::Install>()
            .modify(&wf.org, &wf.install, |i| {
                let c = i.component_mut(&step.component);
                if c.artifact_digest.as_deref() == Some(artifact.as_str())
                    && c.config_id.as_deref() == Some(wf.app_config_id.as_str())
                {
                    return Ok::<bool, ()>(false);
                }
                c.artifact_digest = Some(artifact.clone());
                c.config_id = Some(wf.app_config_id.clone());
                Ok(true)
            })
            .await?
            .ok();
        let digest = approval.plan_digest.clone();
        // Only the digest travels: the runner applies its own copy of the plan it made.
        let spec = JobSpec::Apply(ApplyJob {
            component,
            plan_digest: approval.plan_digest,
        });
        self.dispatch(wf, step, m::JobKind::Apply, spec, Some(digest))
            .await
            .map(Ok)
    }

    /// Records the job (once) and offers it to the install's runner (see `offers.rs`).
    /// `plan_digest` is the approved plan an apply carries.
    pub(crate) async fn dispatch(
        &self,
        wf: &Workflow,
        step: &m::Step,
        kind: m::JobKind,
        spec: JobSpec,
        plan_digest: Option<String>,
    ) -> Result<(), SchedulerError> {
        let Some(job_id) = step.job_id.clone() else {
            return Ok(());
        };
        let mut job = m::Job::queued(
            job_id.clone(),
            wf.org.clone(),
            wf.install.clone(),
            wf.id.clone(),
            step.index,
            kind,
            step.component.clone(),
            &m::now(),
        );
        job.plan_digest = plan_digest;
        let cfg = self.config(&wf.org, &wf.app_config_id).await?;
        let timeout = match kind {
            // An action's `timeout` bounds each of its steps.
            m::JobKind::Action => cfg
                .action(&step.component)
                .and_then(|a| a.timeout_secs)
                .map(|s| s.ceil() as u64),
            _ => cfg.component(&step.component).and_then(|c| c.timeout_secs),
        };
        if let Some(secs) = timeout {
            job.timeouts.execution_secs = secs;
        }
        if let Some(available) = self.available {
            job.timeouts.available_secs = available.as_secs();
        }
        let offer = JobOffer {
            job_id,
            org: wf.org.clone(),
            install: wf.install.clone(),
            workflow_id: wf.id.clone(),
            spec,
            timeouts: Timeouts {
                execution_secs: u32::try_from(job.timeouts.execution_secs).unwrap_or(u32::MAX),
            },
        };
        Box::pin(self.offer_job(job, offer)).await
    }

    pub(crate) async fn set_component_status(
        &self,
        wf: &Workflow,
        component: &str,
        status: m::ComponentStatus,
    ) -> Result<(), SchedulerError> {
        self.store
            .repo::<m::Install>()
            .modify(&wf.org, &wf.install, |i| {
                let c = i.component_mut(component);
                if c.status == status {
                    return Ok::<bool, ()>(false);
                }
                c.status = status;
                c.updated_at = Some(m::now());
                Ok(true)
            })
            .await?
            // The closure never refuses: nothing to report.
            .ok();
        Ok(())
    }
}
