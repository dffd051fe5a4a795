//! A workflow's life around the state machine the executor runs (`effects.rs`): its steps laid
//! out from the app config and the install, the install's status and the audit record when it
//! ends, and the reconcile pass that re-drives every unfinished workflow from its records.

use ferry_model::{self as m, Workflow};
use ferry_store::StoreError;
use tracing::{info, warn};

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// The steps of a requested workflow, or the reason it cannot run: its install is reserved by
    /// another workflow (it lost the race, or was left behind by a crash), or its app config cannot
    /// be deployed.
    pub(crate) async fn lay_out(
        &self,
        wf: &Workflow,
    ) -> Result<Result<Vec<m::Step>, String>, SchedulerError> {
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

    /// Records the install's status for a workflow about to be finished
    /// (`Install::workflow_ended`).
    pub(crate) async fn finish_install(&self, wf: &Workflow) -> Result<(), SchedulerError> {
        if !wf.kind.sets_install_status() {
            return Ok(());
        }
        let now = m::Timestamp::now();
        let r = self
            .store
            .repo::<m::Install>()
            .modify_written(&self.installs, &wf.org, &wf.install, |i| {
                Ok::<bool, ()>(i.workflow_ended(wf, now))
            })
            .await;
        match r {
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A workflow has just been finished: count and audit it; the install's scheduled actions
    /// follow the config it now runs.
    pub(crate) async fn finished(&self, wf: &Workflow) -> Result<(), SchedulerError> {
        if wf.kind.sets_install_status()
            && let Err(e) = self.sync_cron_marks(&wf.org, &wf.install).await
        {
            warn!(org = %wf.org, install = %wf.install, error = %e, "scheduled actions not marked");
        }
        let outcome = wf.outcome();
        ferry_telemetry::metrics()
            .workflows_finished
            .get_or_create(&ferry_telemetry::OutcomeLabels {
                kind: wf.kind.label().into(),
                outcome: outcome.into(),
            })
            .inc();
        info!(org = %wf.org, install = %wf.install, workflow = %wf.id, outcome, "workflow finished");
        self.audit(&m::AuditEvent::workflow_ended(wf)).await
    }
}
