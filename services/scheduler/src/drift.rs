//! Drift checks: a workflow of kind `drift-check` builds, syncs and plans components with the
//! config the install runs and applies nothing. A plan with changes means what is deployed is no
//! longer what the last apply left: the component is marked drifted (with the plan's summary;
//! `workflows get --diff` on the check shows the changes), and the audit stream records it. A
//! deploy of the component clears the mark.
//!
//! A check never takes the install from a deploy: a scheduled check finding a workflow in progress
//! is skipped and says so on the component, and a deploy started while a check runs cancels the
//! check (`WorkflowKind::yields_install`).

use ferry_model::{self as m, Workflow};
use ferry_store::StoreError;
use tracing::info;

use crate::work::Work;
use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Starts the scheduled drift check of `component` for the tick `tick_ms`, once (its id is
    /// the tick's), if no workflow holds the install; otherwise records that it was skipped.
    /// What a check finds is `Install::job_ended`'s to record (see `events.rs`).
    pub(crate) async fn start_drift_check(
        &self,
        install: &m::Install,
        component: &str,
        tick_ms: u64,
    ) -> Result<String, SchedulerError> {
        let seed = format!("{}/{}/drift={component}", install.org, install.name);
        let id = m::id_at(tick_ms, &seed);
        if let Some(busy) = self.busy_with(install, &id).await? {
            info!(org = %install.org, install = %install.name, component, workflow = %busy, "drift check skipped: a workflow is in progress");
            let now = m::Timestamp::now();
            self.change_install_of(&install.org, &install.name, |i| {
                i.drift_skipped(component, &busy, now);
                true
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
                config: None,
            },
            m::Timestamp::now(),
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
        self.execute([Work::advance(&install.org, &id)]).await?;
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
}
