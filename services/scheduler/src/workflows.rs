//! Executing the workflow state machine (`ferry_model::steps`): load the record, apply one
//! transition, save it by compare-and-swap, then perform the effects the transition returned.

use ferry_model::{self as m, Effect, Illegal, StepOutcome, Workflow, WorkflowStatus};
use ferry_store::StoreError;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Lays out a requested workflow (once), starts every step that is ready, and finishes the
    /// workflow when nothing is left. Safe to call any number of times.
    pub(crate) async fn advance(&self, org: &str, workflow_id: &str) -> Result<(), SchedulerError> {
        self.transition(org, workflow_id, |_| Ok(vec![])).await
    }

    /// Records how a started step ended and advances the workflow.
    pub(crate) async fn complete_step(
        &self,
        org: &str,
        workflow_id: &str,
        index: u32,
        outcome: StepOutcome,
        actor: Option<String>,
    ) -> Result<(), SchedulerError> {
        let now = m::now();
        self.transition(org, workflow_id, |wf| {
            wf.finish_step(index, outcome.clone(), actor.clone(), &now)
                .map(|()| vec![])
        })
        .await
    }

    /// The executor: applies `f` to the workflow (laying it out first if needed), advances it,
    /// saves the record if anything changed, then performs the effects. An [`Illegal`]
    /// transition (a duplicate or late message) leaves the record as it is.
    pub(crate) async fn transition(
        &self,
        org: &str,
        workflow_id: &str,
        mut f: impl FnMut(&mut Workflow) -> Result<Vec<Effect>, Illegal>,
    ) -> Result<(), SchedulerError> {
        let span = info_span!(
            "workflow",
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
                let mut wf = v.value.clone();
                tracing::Span::current().record("install", wf.install.as_str());
                let now = m::now();
                let mut effects = Vec::new();
                if wf.steps.is_empty() && !wf.status.is_terminal() {
                    let steps = self.lay_out(&wf).await?;
                    effects.extend(wf.lay_out(steps, &now).unwrap_or_default());
                }
                match f(&mut wf) {
                    Ok(e) => effects.extend(e),
                    Err(illegal) => debug!(%illegal, "transition refused; the record stands"),
                }
                effects.extend(wf.advance(&now));
                if wf == v.value {
                    return Ok(());
                }
                let finished = effects.iter().any(|e| matches!(e, Effect::Finished { .. }));
                if finished {
                    // The install's status first: whoever sees the workflow finished sees the
                    // install's final status too. (Idempotent if this CAS loop goes round again.)
                    self.finish_install(&wf).await?;
                }
                match repo.update(&wf, v.revision).await {
                    Ok(_) => {}
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(e) => return Err(e.into()),
                }
                // Effects after the record says what happened: if we crash in between, the
                // reconcile pass sees a started step without its effect and performs it.
                for effect in effects {
                    self.perform(&wf, effect).await?;
                }
                return Ok(());
            }
        }
        .instrument(span)
        .await
    }

    async fn perform(&self, wf: &Workflow, effect: Effect) -> Result<(), SchedulerError> {
        match effect {
            Effect::Start { step } => {
                if let Some(s) = wf.step(step) {
                    info!(component = %s.component, step = s.kind.label(), "step started");
                }
                // Boxed: starting a step can complete one (a reused build), which transitions again.
                Box::pin(self.start_step(wf, step)).await
            }
            Effect::CancelJob { job_id, .. } => Box::pin(self.cancel_job(wf, &job_id)).await,
            Effect::Finished { .. } => {
                // Boxed: its future is large, and this one nests in a step's (see `start_step`).
                Box::pin(self.finished(wf)).await;
                // Last: until it is gone, reconcile finishes what a crash here interrupted.
                self.store
                    .repo::<m::OpenWorkflow>()
                    .delete(&wf.org, &wf.id)
                    .await?;
                Ok(())
            }
        }
    }

    /// The steps of a requested workflow, or the reason it cannot run: its install is reserved by
    /// another workflow (it lost the race, or was left behind by a crash), or its app config cannot
    /// be deployed.
    async fn lay_out(&self, wf: &Workflow) -> Result<Result<Vec<m::Step>, String>, SchedulerError> {
        let install = self
            .store
            .repo::<m::Install>()
            .get(&wf.org, &wf.install)
            .await?
            .map(|i| i.value);
        let holder = install.as_ref().and_then(|i| i.last_workflow.clone());
        if wf.kind.reserves_install() && holder.as_deref() != Some(wf.id.as_str()) {
            let reason = format!(
                "not started: install `{}` is reserved by workflow {}",
                wf.install,
                holder.as_deref().unwrap_or("(none)")
            );
            warn!(%reason, "workflow not laid out");
            return Ok(Err(reason));
        }
        let cfg = match self.config(&wf.org, &wf.app_config_id).await {
            Ok(c) => c,
            Err(SchedulerError::Config(id, reason)) => {
                warn!(config = %id, %reason, "workflow cannot be laid out");
                return Ok(Err(format!("app config {id}: {reason}")));
            }
            Err(e) => return Err(e),
        };
        if wf.kind == m::WorkflowKind::Action {
            return Ok(crate::actions::lay_out_run(wf, &cfg, install.as_ref()));
        }
        let hooks = crate::actions::hooks(&cfg);
        if wf.kind == m::WorkflowKind::Teardown {
            let in_app = |n: &str| cfg.component(n).is_some();
            let stages = install
                .as_ref()
                .map(|i| i.teardown_stages(&cfg.deploy_order, in_app))
                .unwrap_or_default();
            if stages.is_empty() {
                return Ok(Err("nothing of this install is deployed".into()));
            }
            let laid = Workflow::teardown(
                wf.id.clone(),
                wf.org.clone(),
                wf.install.clone(),
                wf.app_config_id.clone(),
                &stages,
            );
            return Ok(Ok(laid.with_hooks(&hooks).steps));
        }
        let all = ferry_store::deploy_stages(&cfg);
        if wf.kind == m::WorkflowKind::Runbook {
            return Ok(crate::runbooks::lay_out_runbook(wf, &cfg, &all));
        }
        // A full deploy also tears down what was removed from the app but is still deployed.
        let removed = match (&install, wf.scope.components.is_empty()) {
            (Some(i), true) => i.deployed_outside(|n| all.iter().flatten().any(|d| d.name == n)),
            _ => vec![],
        };
        let stages = match wf.scope.select(&all) {
            Ok(s) => s,
            Err(reason) => return Ok(Err(reason)),
        };
        let mut laid = Workflow::deploy_scoped(
            wf.id.clone(),
            wf.org.clone(),
            wf.install.clone(),
            wf.kind,
            wf.app_config_id.clone(),
            &stages,
            wf.scope.plan_only,
        );
        // Hooks see the workflow as it runs: its scope and what started it.
        laid.scope = wf.scope.clone();
        laid.cause = wf.cause.clone();
        if wf.scope.plan_only {
            return Ok(Ok(laid.steps));
        }
        Ok(Ok(laid.with_removals(&removed).with_hooks(&hooks).steps))
    }

    /// CAS-modifies fields of a workflow's steps that are not its state (a build id); `f` returns
    /// false to leave it unchanged. Status changes go through [`Self::transition`].
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
        if !wf.kind.sets_install_status() {
            return Ok(());
        }
        let install_status = match (wf.status, wf.kind) {
            (WorkflowStatus::Succeeded, m::WorkflowKind::Teardown) => m::InstallStatus::TornDown,
            (WorkflowStatus::Succeeded, _) => m::InstallStatus::Active,
            _ => m::InstallStatus::Failed,
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

    /// A workflow has just been finished: count and audit it; the install's scheduled actions
    /// follow the config it now runs.
    async fn finished(&self, wf: &Workflow) {
        if wf.kind.sets_install_status()
            && let Err(e) = Box::pin(self.sync_cron_marks(&wf.org, &wf.install)).await
        {
            warn!(org = %wf.org, install = %wf.install, error = %e, "scheduled actions not marked");
        }
        let outcome = match wf.status {
            WorkflowStatus::Succeeded => "succeeded",
            WorkflowStatus::Cancelled => "cancelled",
            _ => "failed",
        };
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
    /// steps that have not happened (a crash between the record and the effect), picks up results
    /// that arrived while no scheduler ran, and advances. Reads only the open workflows.
    pub(crate) async fn reconcile(&self) -> Result<(), SchedulerError> {
        let open = self.store.repo::<m::OpenWorkflow>();
        for mark in open.list_all().await? {
            let wf = match self
                .store
                .repo::<Workflow>()
                .get(&mark.org, &mark.id)
                .await?
            {
                Some(v) => v.value,
                // Discarded by the API after losing a reservation, or never written.
                None => {
                    open.delete(&mark.org, &mark.id).await?;
                    continue;
                }
            };
            if wf.status.is_terminal() {
                // Finished, but the scheduler stopped before it removed the mark.
                self.finished_install_and_mark(&wf).await?;
                continue;
            }
            for step in &wf.steps {
                if matches!(step.status, m::StepStatus::Running | m::StepStatus::Waiting)
                    && let Err(e) = self.resume_step(&wf, step.index).await
                {
                    warn!(org = %wf.org, workflow = %wf.id, step = step.index, error = %e, "resuming step failed");
                }
            }
            self.advance(&wf.org, &wf.id).await?;
        }
        Ok(())
    }

    async fn finished_install_and_mark(&self, wf: &Workflow) -> Result<(), SchedulerError> {
        self.finish_install(wf).await?;
        self.store
            .repo::<m::OpenWorkflow>()
            .delete(&wf.org, &wf.id)
            .await?;
        Ok(())
    }
}
