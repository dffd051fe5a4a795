//! Scheduled actions, drift checks and ending break-glass grants: every few seconds, the marks
//! that are due.
//!
//! When an action fires is a pure function of its [`m::CronMark`] (`ferry_model::schedules`).
//! Firing exactly once, whatever the number of scheduler replicas and crashes: the run's
//! workflow id is derived from the install, the action and the tick ([`m::id_at`]), so of
//! replicas that see the same tick due, one creates the workflow and the others are refused;
//! the mark moves past now afterwards, and a crash before it moves only repeats a create that
//! is refused again. Missed ticks (no scheduler ran) fire once, for the first of them.
//!
//! The sweep reads marks, not installs: an install's marks follow its config each time a workflow
//! that changes it ends ([`Scheduler::sync_cron_marks`]), and once for every install when a
//! scheduler starts; an API break-glass grant leaves a [`m::GrantMark`]. So a sweep costs what
//! is scheduled, not the size of the fleet.

use std::time::Duration;

use ferry_model as m;
use ferry_store::StoreError;
use tracing::{info, warn};

use crate::cron_marks::Target;
use crate::work::Work;
use crate::{Scheduler, SchedulerError};

/// How often due marks are looked for.
pub const CRON_INTERVAL: Duration = Duration::from_secs(5);

impl Scheduler {
    pub(crate) async fn cron_loop(self) -> Result<(), SchedulerError> {
        let started = tokio::time::Instant::now();
        let mut marked = false;
        let mut tick = tokio::time::interval(CRON_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // Installs made before their marks existed (or while no scheduler ran) get them,
            // once, after the first lease period: runners renew their leases with a starting
            // scheduler then, and this reads every install.
            if !marked && started.elapsed() >= self.lease {
                marked = true;
                self.mark_every_install().await;
            }
            if let Err(e) = self.fire_due().await {
                warn!(error = %e, "scheduled actions pass failed");
            }
        }
    }

    async fn mark_every_install(&self) {
        match self.store.repo::<m::Install>().list_all().await {
            Ok(all) => {
                for i in all {
                    if let Err(e) = self.sync_cron_marks(&i.org, &i.name).await {
                        warn!(org = %i.org, install = %i.name, error = %e, "scheduled actions not marked");
                    }
                }
            }
            Err(e) => warn!(error = %e, "installs not read for their scheduled actions"),
        }
    }

    /// One sweep: due scheduled actions fire, and API break-glass grants that ended are removed
    /// (and audited).
    async fn fire_due(&self) -> Result<(), SchedulerError> {
        let now = m::now_ms();
        for mark in self.store.repo::<m::CronMark>().list_all().await? {
            if mark.next_ms > now {
                continue;
            }
            if let Err(e) = self.fire_mark(&mark).await {
                warn!(org = %mark.org, install = %mark.install, action = %mark.action, error = %e, "scheduled action not fired");
            }
        }
        self.drive_releases().await?;
        let grants = self.store.repo::<m::GrantMark>();
        for g in grants.list_all().await? {
            if g.until_ms > now {
                continue;
            }
            if let Some(i) = self
                .store
                .repo::<m::Install>()
                .get(&g.org, &g.install)
                .await?
            {
                self.expire_grants(&i.value).await?;
            }
            grants.delete(&g.org, &g.id).await?;
        }
        Ok(())
    }

    /// A due mark: its action fires if the install may run actions (provisioned once, not torn
    /// down) and still schedules it; a mark that names nothing any more is removed.
    async fn fire_mark(&self, mark: &m::CronMark) -> Result<(), SchedulerError> {
        let Some(install) = self
            .store
            .repo::<m::Install>()
            .get(&mark.org, &mark.install)
            .await?
            .map(|v| v.value)
        else {
            return self.sync_cron_marks(&mark.org, &mark.install).await;
        };
        let cfg = self.config(&install.org, &install.app_config_id).await?;
        let target = Target::of(mark);
        let Some(written) = target.schedule(&cfg) else {
            return self.sync_cron_marks(&mark.org, &mark.install).await;
        };
        if !install.runs_scheduled() {
            // Not now: the tick passes without a run.
            return self.skip_tick(mark, written).await;
        }
        self.fire_if_due(&install, &target, written).await
    }

    /// Moves a mark past now without firing.
    async fn skip_tick(&self, mark: &m::CronMark, written: &str) -> Result<(), SchedulerError> {
        let Some(next_ms) = m::parse_schedule(written)
            .ok()
            .and_then(|s| s.next_after(m::now_ms()))
        else {
            return Ok(());
        };
        self.store
            .repo::<m::CronMark>()
            .modify(&mark.org, &mark.id, |m| {
                m.next_ms = next_ms;
                m.schedule = written.to_string();
                Ok::<bool, ()>(true)
            })
            .await?
            .ok();
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
            // Audited before it is removed, at its end: whoever removes it (and a pass after a
            // failure) writes the same record, kept once.
            let expired =
                m::AuditEvent::break_glass_expired(&install.org, &install.name, &role, &grant);
            self.audit(&expired).await?;
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
                Ok(_) | Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn fire_if_due(
        &self,
        install: &m::Install,
        target: &Target,
        written: &str,
    ) -> Result<(), SchedulerError> {
        let schedule = m::parse_schedule(written)
            .map_err(|why| SchedulerError::Config(install.app_config_id.clone(), why))?;
        let marks = self.store.repo::<m::CronMark>();
        let id = target.id(&install.name);
        let current = marks.get(&install.org, &id).await?;
        let decision = m::CronMark::decide(
            current.as_ref().map(|v| &v.value),
            written,
            &schedule,
            m::Timestamp::now(),
        );
        let mut mark = current
            .as_ref()
            .map(|v| v.value.clone())
            .unwrap_or_else(|| target.mark(&install.org, &install.name, written, 0));
        match decision {
            None | Some(m::CronDecision::Wait) => return Ok(()),
            Some(m::CronDecision::Start { next_ms }) => {
                mark.schedule = written.to_string();
                mark.next_ms = next_ms;
            }
            Some(m::CronDecision::Fire { tick_ms, next_ms }) => {
                let workflow = match target {
                    Target::Action(a) => self.start_scheduled_run(install, a, tick_ms).await?,
                    Target::Drift(c) => self.start_drift_check(install, c, tick_ms).await?,
                };
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
            m::Timestamp::now(),
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
            }
            // Fired by another replica, or by this one before a crash.
            Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        // Either way: the record is the tick's, written again until it is kept.
        let tick = m::format_ms(tick_ms);
        let fired =
            m::AuditEvent::action_scheduled(&install.org, &install.name, action, &id, &tick);
        self.audit(&fired).await?;
        self.execute([Work::advance(&install.org, &id)]).await?;
        Ok(id)
    }
}

impl Scheduler {
    /// One pass over the open releases (the safety net and the clock: releases move on their
    /// workflows' ends, `releases.rs`).
    pub(crate) async fn drive_releases(&self) -> Result<(), SchedulerError> {
        let open = self.store.repo::<m::OpenRelease>();
        for mark in open.list_all().await? {
            let driven = match self.drive_release(&mark.org, &mark.id).await {
                Ok(work) => self.execute(work).await,
                Err(e) => Err(e),
            };
            if let Err(e) = driven {
                warn!(org = %mark.org, release = %mark.id, error = %e, "release not advanced");
            }
        }
        Ok(())
    }
}
