//! An install's cron marks, in line with the config it runs: one per `cron` action and per
//! component's drift schedule (see `cron.rs` for how they fire).

use ferry_model as m;

use crate::{Scheduler, SchedulerError};

/// What a mark schedules: an action's runs, or a component's drift checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Action(String),
    Drift(String),
}

impl Target {
    pub(crate) fn of(mark: &m::CronMark) -> Target {
        match &mark.drift_of {
            Some(c) => Target::Drift(c.clone()),
            None => Target::Action(mark.action.clone()),
        }
    }

    pub(crate) fn id(&self, install: &str) -> String {
        match self {
            Target::Action(a) => m::CronMark::id_of(install, a),
            Target::Drift(c) => m::CronMark::drift_id_of(install, c),
        }
    }

    /// Its schedule in `cfg`, if it still has one.
    pub(crate) fn schedule<'c>(&self, cfg: &'c ferry_appconfig::AppConfig) -> Option<&'c str> {
        match self {
            Target::Action(a) => cfg.action(a).and_then(|a| a.cron_schedule()),
            Target::Drift(c) => cfg.component(c).and_then(|c| c.drift_schedule.as_deref()),
        }
    }

    /// Every target `cfg` schedules.
    pub(crate) fn all(cfg: &ferry_appconfig::AppConfig) -> Vec<Target> {
        let actions = cfg.actions.iter().map(|a| Target::Action(a.name.clone()));
        let drifts = cfg
            .sandbox
            .iter()
            .chain(&cfg.components)
            .map(|c| Target::Drift(c.name.clone()));
        actions
            .chain(drifts)
            .filter(|t| t.schedule(cfg).is_some())
            .collect()
    }

    pub(crate) fn mark(
        &self,
        org: &str,
        install: &str,
        written: &str,
        next_ms: u64,
    ) -> m::CronMark {
        let (action, drift_of) = match self {
            Target::Action(a) => (a.clone(), None),
            Target::Drift(c) => (String::new(), Some(c.clone())),
        };
        m::CronMark {
            id: self.id(install),
            org: org.into(),
            install: install.into(),
            action,
            drift_of,
            schedule: written.into(),
            next_ms,
            last_fired_ms: None,
            last_workflow: None,
        }
    }
}

impl Scheduler {
    /// Brings an install's marks in line with the config it runs: one per `cron` action (a new
    /// one starting at its next tick), none for an action that is gone or an install torn down
    /// or deleted.
    pub(crate) async fn sync_cron_marks(
        &self,
        org: &str,
        install: &str,
    ) -> Result<(), SchedulerError> {
        let marks = self.store.repo::<m::CronMark>();
        let existing = marks.list_under(org, install).await?;
        let current = self.store.repo::<m::Install>().get(org, install).await?;
        let wanted: Vec<(Target, String)> = match current.map(|v| v.value) {
            Some(i) if i.status != m::InstallStatus::TornDown => {
                match self.config(org, &i.app_config_id).await {
                    Ok(cfg) => Target::all(&cfg)
                        .into_iter()
                        .filter_map(|t| {
                            let written = t.schedule(&cfg)?.to_string();
                            Some((t, written))
                        })
                        .collect(),
                    Err(SchedulerError::Config(..)) => vec![],
                    Err(e) => return Err(e),
                }
            }
            _ => vec![],
        };
        for mark in &existing {
            if !wanted.iter().any(|(t, _)| t.id(install) == mark.id) {
                marks.delete(org, &mark.id).await?;
            }
        }
        for (target, written) in wanted {
            if existing.iter().any(|m| m.id == target.id(install)) {
                continue;
            }
            let next = m::parse_schedule(&written)
                .ok()
                .and_then(|s| s.next_after(m::now_ms()));
            if let Some(next_ms) = next {
                marks
                    .create_if_absent(&target.mark(org, install, &written, next_ms))
                    .await?;
            }
        }
        Ok(())
    }
}
