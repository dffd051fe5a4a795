//! Scheduled actions: every few seconds, each install's `cron` actions that are due start a run.
//!
//! When an action fires is a pure function of its [`m::CronMark`] (`ferry_model::schedules`).
//! Firing exactly once, whatever the number of scheduler replicas and crashes: the run's
//! workflow id is derived from the install, the action and the tick ([`m::id_at`]), so of
//! replicas that see the same tick due, one creates the workflow and the others are refused;
//! the mark moves past now afterwards, and a crash before it moves only repeats a create that
//! is refused again. Missed ticks (no scheduler ran) fire once, for the first of them.

use std::time::Duration;

use ferry_model as m;
use ferry_store::StoreError;
use tracing::{info, warn};

use crate::{Scheduler, SchedulerError};

/// How often due actions are looked for.
pub const CRON_INTERVAL: Duration = Duration::from_secs(5);

impl Scheduler {
    pub(crate) async fn cron_loop(self) -> Result<(), SchedulerError> {
        let mut tick = tokio::time::interval(CRON_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.fire_due().await {
                warn!(error = %e, "scheduled actions pass failed");
            }
        }
    }

    /// One pass over the installs: break-glass grants that ended are removed (and audited), and
    /// the scheduled actions of those that may run actions (not torn down, provisioned once) fire.
    async fn fire_due(&self) -> Result<(), SchedulerError> {
        for install in self.store.repo::<m::Install>().list_all().await? {
            if !install.break_glass.is_empty() {
                self.expire_grants(&install).await?;
            }
            let provisioned = install.sandbox.artifact_digest.is_some()
                || install.status == m::InstallStatus::Active;
            if install.status == m::InstallStatus::TornDown || !provisioned {
                continue;
            }
            let cfg = match self.config(&install.org, &install.app_config_id).await {
                Ok(c) => c,
                Err(SchedulerError::Config(..)) => continue,
                Err(e) => return Err(e),
            };
            for action in &cfg.actions {
                let Some(written) = action.cron_schedule() else {
                    continue;
                };
                if let Err(e) = self.fire_if_due(&install, &action.name, written).await {
                    warn!(org = %install.org, install = %install.name, action = %action.name, error = %e, "scheduled action not fired");
                }
            }
        }
        Ok(())
    }

    /// Removes the install's API break-glass grants that have ended, each audited once (by
    /// whoever removes it).
    async fn expire_grants(&self, install: &m::Install) -> Result<(), SchedulerError> {
        let now = m::now_ms();
        let ended: Vec<(String, m::BreakGlassGrant)> = install
            .break_glass
            .iter()
            .filter(|(_, g)| g.until_ms <= now)
            .map(|(r, g)| (r.clone(), g.clone()))
            .collect();
        for (role, grant) in ended {
            let removed = self
                .store
                .repo::<m::Install>()
                .modify(&install.org, &install.name, |i| {
                    // Gone or renewed meanwhile: not this pass's to remove.
                    if i.break_glass.get(&role) != Some(&grant) {
                        return Err(());
                    }
                    i.break_glass.remove(&role);
                    Ok(true)
                })
                .await;
            match removed {
                Ok(Ok(_)) => {}
                Ok(Err(())) | Err(StoreError::NotFound { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
            let detail = serde_json::json!({
                "granted_by": grant.by, "until": m::format_ms(grant.until_ms),
            });
            self.audit_break_glass(
                &install.org,
                &install.name,
                "break_glass.expired",
                &role,
                detail,
            )
            .await;
        }
        Ok(())
    }

    async fn fire_if_due(
        &self,
        install: &m::Install,
        action: &str,
        written: &str,
    ) -> Result<(), SchedulerError> {
        let schedule = m::parse_schedule(written)
            .map_err(|why| SchedulerError::Config(install.app_config_id.clone(), why))?;
        let marks = self.store.repo::<m::CronMark>();
        let id = m::CronMark::id_of(&install.name, action);
        let current = marks.get(&install.org, &id).await?;
        let now = m::now_ms();
        let decision =
            m::CronMark::decide(current.as_ref().map(|v| &v.value), written, &schedule, now);
        let mut mark = current
            .as_ref()
            .map(|v| v.value.clone())
            .unwrap_or(m::CronMark {
                id: id.clone(),
                org: install.org.clone(),
                install: install.name.clone(),
                action: action.to_string(),
                schedule: written.to_string(),
                next_ms: 0,
                last_fired_ms: None,
                last_workflow: None,
            });
        match decision {
            None | Some(m::CronDecision::Wait) => return Ok(()),
            Some(m::CronDecision::Start { next_ms }) => {
                mark.schedule = written.to_string();
                mark.next_ms = next_ms;
            }
            Some(m::CronDecision::Fire { tick_ms, next_ms }) => {
                let workflow = self.start_scheduled_run(install, action, tick_ms).await?;
                mark.next_ms = next_ms;
                mark.last_fired_ms = Some(tick_ms);
                mark.last_workflow = Some(workflow);
            }
        }
        let saved = match &current {
            Some(v) => marks.update(&mark, v.revision).await.map(drop),
            None => marks.create(&mark).await.map(drop),
        };
        match saved {
            // Another replica moved it first: its decision stands.
            Ok(()) | Err(StoreError::Conflict { .. } | StoreError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Starts the run of `action` for the tick `tick_ms`, once: its id is the tick's.
    async fn start_scheduled_run(
        &self,
        install: &m::Install,
        action: &str,
        tick_ms: u64,
    ) -> Result<String, SchedulerError> {
        let id = m::id_at(
            tick_ms,
            &format!("{}/{}/{action}", install.org, install.name),
        );
        let mut wf = m::Workflow::requested(
            id.clone(),
            &install.org,
            &install.name,
            m::WorkflowKind::Action,
            &install.app_config_id,
            Default::default(),
        );
        wf.run = Some(m::ActionRun {
            action: action.to_string(),
            trigger: "cron".into(),
            inputs: Default::default(),
        });
        self.store
            .repo::<m::OpenWorkflow>()
            .create_if_absent(&wf.open_mark())
            .await?;
        match self.store.repo::<m::Workflow>().create(&wf).await {
            Ok(_) => {
                info!(org = %install.org, install = %install.name, action, tick = %m::format_ms(tick_ms), workflow = %id, "scheduled action fired");
                let _ = self
                    .store
                    .bus()
                    .audit(&m::AuditEvent {
                        org: install.org.clone(),
                        at: m::now(),
                        actor: "scheduler".into(),
                        action: "action.scheduled".into(),
                        target: id.clone(),
                        detail: serde_json::json!({
                            "install": install.name, "action": action, "tick": m::format_ms(tick_ms),
                        }),
                    })
                    .await;
            }
            // Fired by another replica, or by this one before a crash.
            Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        self.advance(&install.org, &id).await?;
        Ok(id)
    }
}
