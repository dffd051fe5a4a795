//! Workflow state transitions: laying out steps, advancing the graph, completing steps, finishing.

use ferry_model::{self as m, StepKind, StepStatus, Workflow, WorkflowStatus};
use ferry_store::StoreError;
use tracing::{Instrument, info, info_span, warn};

use crate::{Scheduler, SchedulerError};

/// A step the scheduler has just marked as started and whose side effect (build request, job offer,
/// approval request) must now happen.
pub(crate) struct Started {
    pub index: u32,
}

impl Scheduler {
    /// Fills in the steps of a requested workflow (once), starts every step that is ready, and
    /// finishes the workflow when nothing is left. Safe to call any number of times.
    pub(crate) async fn advance(&self, org: &str, workflow_id: &str) -> Result<(), SchedulerError> {
        let span = info_span!(
            "advance",
            org,
            workflow = workflow_id,
            install = tracing::field::Empty
        );
        async move {
            let repo = self.store.repo::<Workflow>();
            loop {
                let Some(v) = repo.get(org, workflow_id).await? else {
                    warn!("workflow not found");
                    return Ok(());
                };
                let mut wf = v.value;
                tracing::Span::current().record("install", wf.install.as_str());
                if wf.status.is_terminal() {
                    return Ok(());
                }
                let mut laid_out = false;
                if wf.steps.is_empty() {
                    match self.lay_out(&wf).await {
                        Ok(steps) => {
                            wf.steps = steps;
                            laid_out = true;
                        }
                        Err(e @ SchedulerError::Config(..)) => {
                            // The config cannot be deployed: fail the workflow visibly.
                            wf.status = WorkflowStatus::Failed;
                            wf.finished_at = Some(m::now());
                            wf.updated_at = m::now();
                            warn!(error = %e, "workflow cannot be laid out");
                            self.finish_install(&wf).await?;
                            match repo.update(&wf, v.revision).await {
                                Ok(_) => {
                                    self.finished(&wf).await;
                                    return Ok(());
                                }
                                Err(StoreError::Conflict { .. }) => continue,
                                Err(e) => return Err(e.into()),
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                let ready = wf.ready_steps();
                let mut started = Vec::new();
                for i in ready {
                    let id = format!("{}-{}", wf.id, i);
                    let Some(step) = wf.step_mut(i) else { continue };
                    step.started_at = Some(m::now());
                    match step.kind {
                        StepKind::Approve => {
                            step.status = StepStatus::Waiting;
                            step.approval_id = Some(id);
                        }
                        StepKind::Build => step.status = StepStatus::Running,
                        StepKind::Sync | StepKind::Plan | StepKind::Apply => {
                            step.status = StepStatus::Running;
                            step.job_id = Some(id);
                        }
                    }
                    started.push(Started { index: i });
                }
                let changed = wf.refresh_status();
                if started.is_empty() && !changed && !laid_out {
                    return Ok(());
                }
                if wf.status.is_terminal() {
                    // The install's status first: whoever sees the workflow finished sees the
                    // install's final status too. (Idempotent if this CAS loop goes round again.)
                    self.finish_install(&wf).await?;
                }
                wf.updated_at = m::now();
                match repo.update(&wf, v.revision).await {
                    Ok(_) => {}
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(e) => return Err(e.into()),
                }
                for s in &started {
                    if let Some(step) = wf.step(s.index) {
                        info!(component = %step.component, step = step.kind.label(), "step started");
                    }
                }
                // Side effects after the record says the step started: if we crash in between, the
                // reconcile pass sees a started step without its effect and performs it.
                for s in started {
                    self.start_step(&wf, s.index).await?;
                }
                if wf.status.is_terminal() {
                    self.finished(&wf).await;
                }
                return Ok(());
            }
        }
        .instrument(span)
        .await
    }

    async fn lay_out(&self, wf: &Workflow) -> Result<Vec<m::Step>, SchedulerError> {
        let cfg = self.config(&wf.org, &wf.app_config_id).await?;
        let mut stages: Vec<Vec<m::Deployable>> = Vec::new();
        if cfg.sandbox.is_some() {
            stages.push(vec![m::Deployable {
                name: m::SANDBOX.into(),
                dependencies: vec![],
            }]);
        }
        for stage in &cfg.deploy_order {
            stages.push(
                stage
                    .iter()
                    .filter_map(|name| cfg.component(name))
                    .map(|c| m::Deployable {
                        name: c.name.clone(),
                        dependencies: c.dependencies.clone(),
                    })
                    .collect(),
            );
        }
        let laid = Workflow::deploy(
            wf.id.clone(),
            wf.org.clone(),
            wf.install.clone(),
            wf.kind,
            wf.app_config_id.clone(),
            &stages,
        );
        Ok(laid.steps)
    }

    /// Records the end of a step (if it has not ended yet) and advances the workflow.
    pub(crate) async fn complete_step(
        &self,
        org: &str,
        workflow_id: &str,
        index: u32,
        status: StepStatus,
        message: Option<String>,
        actor: Option<String>,
    ) -> Result<(), SchedulerError> {
        self.update_steps(org, workflow_id, |wf| {
            let Some(step) = wf.step_mut(index) else { return false };
            if step.status.is_terminal() || step.status == StepStatus::Pending {
                return false;
            }
            step.status = status;
            step.finished_at = Some(m::now());
            step.message = message.clone();
            if actor.is_some() {
                step.actor = actor.clone();
            }
            info!(org, workflow = workflow_id, component = %step.component, step = step.kind.label(), status = ?status, "step finished");
            true
        })
        .await?;
        // Boxed: advancing starts steps, and starting a step can complete one (a reused build).
        Box::pin(self.advance(org, workflow_id)).await
    }

    /// CAS-modifies a workflow's steps; `f` returns false to leave it unchanged.
    pub(crate) async fn update_steps(
        &self,
        org: &str,
        workflow_id: &str,
        mut f: impl FnMut(&mut Workflow) -> bool,
    ) -> Result<(), SchedulerError> {
        self.store
            .repo::<Workflow>()
            .modify(org, workflow_id, |wf| {
                if !f(wf) {
                    return Ok::<bool, ()>(false);
                }
                wf.refresh_status();
                if wf.status.is_terminal() {
                    // Only `advance` finishes a workflow, after recording the install's status.
                    wf.status = WorkflowStatus::Running;
                    wf.finished_at = None;
                }
                wf.updated_at = m::now();
                Ok(true)
            })
            .await?
            // The closure never refuses: nothing to report.
            .ok();
        Ok(())
    }

    /// Records the install's status for a workflow about to be finished.
    async fn finish_install(&self, wf: &Workflow) -> Result<(), SchedulerError> {
        let ok = wf.status == WorkflowStatus::Succeeded;
        let install_status = if ok {
            m::InstallStatus::Active
        } else {
            m::InstallStatus::Failed
        };
        let r = self
            .store
            .repo::<m::Install>()
            .modify(&wf.org, &wf.install, |i| {
                if i.last_workflow.as_deref() != Some(wf.id.as_str()) || i.status == install_status
                {
                    return Ok::<bool, ()>(false);
                }
                i.status = install_status;
                i.updated_at = m::now();
                Ok(true)
            })
            .await;
        match r {
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A workflow has just been finished: count and audit it.
    async fn finished(&self, wf: &Workflow) {
        let ok = wf.status == WorkflowStatus::Succeeded;
        let outcome = if ok { "succeeded" } else { "failed" };
        ferry_telemetry::metrics()
            .workflows_finished
            .get_or_create(&ferry_telemetry::OutcomeLabels {
                kind: wf.kind.label().into(),
                outcome: outcome.into(),
            })
            .inc();
        info!(org = %wf.org, install = %wf.install, workflow = %wf.id, outcome, "workflow finished");
        let _ = self
            .store
            .bus()
            .audit(&m::AuditEvent {
                org: wf.org.clone(),
                at: m::now(),
                actor: "scheduler".into(),
                action: format!("workflow.{outcome}"),
                target: wf.id.clone(),
                detail: serde_json::json!({ "install": wf.install }),
            })
            .await;
    }

    /// Re-drives every unfinished workflow from its records: performs the side effects of started
    /// steps (again — they are idempotent), picks up results that arrived while no scheduler ran, and
    /// advances.
    pub(crate) async fn reconcile(&self) -> Result<(), SchedulerError> {
        for wf in self.store.repo::<Workflow>().list_all().await? {
            if wf.status.is_terminal() {
                continue;
            }
            for step in &wf.steps {
                if matches!(step.status, StepStatus::Running | StepStatus::Waiting)
                    && let Err(e) = self.resume_step(&wf, step.index).await
                {
                    warn!(org = %wf.org, workflow = %wf.id, step = step.index, error = %e, "resuming step failed");
                }
            }
            self.advance(&wf.org, &wf.id).await?;
        }
        Ok(())
    }
}
