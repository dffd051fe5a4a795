//! Drift checks: a workflow of kind `drift-check` builds, syncs and plans components with the
//! config the install runs and applies nothing. A plan with changes means what is deployed is no
//! longer what the last apply left: the component is marked drifted (with the plan's summary;
//! `workflows get --diff` on the check shows the changes), and the audit stream records it. A
//! deploy of the component clears the mark.
//!
//! A check never takes the install from a deploy: a scheduled check finding a workflow in progress
//! is skipped and says so on the component, and a deploy started while a check runs cancels the
//! check (`WorkflowKind::yields_install`).

use ferry_model::{self as m, StepOutcome, Workflow};
use ferry_store::StoreError;
use tracing::info;

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Starts the scheduled drift check of `component` for the tick `tick_ms`, once (its id is
    /// the tick's), if no workflow holds the install; otherwise records that it was skipped.
    pub(crate) async fn start_drift_check(
        &self,
        install: &m::Install,
        component: &str,
        tick_ms: u64,
    ) -> Result<String, SchedulerError> {
        let seed = format!("{}/{}/drift={component}", install.org, install.name);
        let id = m::id_at(tick_ms, &seed);
        if let Some(busy) = self.busy_with(install, &id).await? {
            let summary = format!("check skipped: workflow {busy} is in progress");
            info!(org = %install.org, install = %install.name, component, %summary, "drift check skipped");
            self.record_drift(&install.org, &install.name, component, |d| {
                d.workflow = busy.clone();
                d.summary = summary.clone();
            })
            .await?;
            return Ok(busy);
        }
        let mut wf = Workflow::requested(
            id.clone(),
            &install.org,
            &install.name,
            m::WorkflowKind::DriftCheck,
            &install.app_config_id,
            m::DeployScope {
                components: vec![component.to_string()],
                with_dependents: false,
                plan_only: true,
            },
            &m::now(),
        );
        wf.cause = Some("schedule".into());
        self.store
            .repo::<m::OpenWorkflow>()
            .create_if_absent(&wf.open_mark())
            .await?;
        match self.store.repo::<Workflow>().create(&wf).await {
            Ok(_) => {
                // Reserve the install for it, unless a workflow took it meanwhile: then the
                // check is not laid out, and says why.
                let before = install.last_workflow.clone();
                self.store
                    .repo::<m::Install>()
                    .modify(&install.org, &install.name, |i| {
                        if i.last_workflow != before {
                            return Err(());
                        }
                        i.last_workflow = Some(id.clone());
                        Ok(true)
                    })
                    .await?
                    .ok();
            }
            // Started by another scheduler replica, or by this one before a crash.
            Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        self.advance(&install.org, &id).await?;
        Ok(id)
    }

    /// The workflow in progress on the install (other than `id`), if any.
    async fn busy_with(
        &self,
        install: &m::Install,
        id: &str,
    ) -> Result<Option<String>, SchedulerError> {
        let Some(holder) = install.last_workflow.as_deref().filter(|h| *h != id) else {
            return Ok(None);
        };
        let wf = self
            .store
            .repo::<Workflow>()
            .get(&install.org, holder)
            .await?;
        Ok(wf
            .filter(|w| !w.value.status.is_terminal())
            .map(|_| holder.to_string()))
    }

    /// A drift check's plan ended: the component is drifted when its plan has changes (audited),
    /// in sync when it has none; a failed plan says the check failed.
    pub(crate) async fn drift_checked(&self, job: &m::Job) -> Result<StepOutcome, SchedulerError> {
        let summary = job.plan_summary.clone().unwrap_or_default();
        let drifted = job.status == m::JobStatus::Finished && job.plan_changes.unwrap_or(true);
        let said = match job.status {
            m::JobStatus::Finished => summary.clone(),
            _ => format!(
                "check failed: {}",
                job.error
                    .clone()
                    .unwrap_or_else(|| job.status.name().into())
            ),
        };
        let workflow = job.workflow_id.clone();
        let previously = self
            .record_drift(&job.org, &job.install, &job.component, |d| {
                d.workflow = workflow.clone();
                d.drifted = drifted;
                d.summary = said.clone();
            })
            .await?;
        if drifted && !previously {
            let _ = self
                .store
                .bus()
                .audit(&m::AuditEvent {
                    org: job.org.clone(),
                    at: m::now(),
                    actor: "scheduler".into(),
                    action: "component.drifted".into(),
                    target: format!("{}/{}", job.install, job.component),
                    detail: serde_json::json!({
                        "install": job.install, "component": job.component,
                        "workflow": job.workflow_id, "summary": summary,
                    }),
                })
                .await;
        }
        Ok(match job.status {
            m::JobStatus::Finished if drifted => {
                StepOutcome::Succeeded(format!("drifted: {summary}"))
            }
            m::JobStatus::Finished => StepOutcome::Succeeded(format!("in sync: {summary}")),
            m::JobStatus::Cancelled | m::JobStatus::NotAttempted => StepOutcome::Cancelled(said),
            _ => StepOutcome::Failed(said),
        })
    }

    /// Changes a component's drift record (made if missing); returns whether it was drifted
    /// before.
    async fn record_drift(
        &self,
        org: &str,
        install: &str,
        component: &str,
        f: impl Fn(&mut m::Drift),
    ) -> Result<bool, SchedulerError> {
        let mut before = false;
        let r = self
            .store
            .repo::<m::Install>()
            .modify(org, install, |i| {
                let c = i.component_mut(component);
                before = c.drift.as_ref().is_some_and(|d| d.drifted);
                let d = c.drift.get_or_insert_with(|| m::Drift {
                    checked_at: String::new(),
                    workflow: String::new(),
                    drifted: false,
                    summary: String::new(),
                });
                f(d);
                d.checked_at = m::now();
                Ok::<bool, ()>(true)
            })
            .await;
        match r {
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(before),
            Err(e) => Err(e.into()),
        }
    }
}
