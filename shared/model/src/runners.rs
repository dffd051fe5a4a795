//! Runners as the control plane sees them: the last heartbeat of each, and the health derived
//! from its age.

use crate::Timestamp;
use serde::{Deserialize, Serialize};

/// One runner process of an install, as of its last heartbeat (KV bucket `runners`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunnerRecord {
    pub org: String,
    /// The runner process's id (`runner-<ulid>`): a restarted runner is a new one.
    pub id: String,
    pub install: String,
    pub version: String,
    pub running_jobs: u32,
    /// How often it sends heartbeats (it says so in each).
    pub interval_ms: u64,
    pub first_seen_ms: u64,
    pub last_seen_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunnerHealth {
    /// Heard from within two heartbeat intervals and a half.
    Active,
    /// Missed a few heartbeats: maybe cut off, maybe gone.
    Unhealthy,
    /// Not heard from for a minute or more.
    Offline,
}

impl RunnerRecord {
    pub fn health(&self, now: Timestamp) -> RunnerHealth {
        health_of(self.last_seen_ms, self.interval_ms, now)
    }
}

/// A runner's health from its last heartbeat's time and the interval it said it sends them at.
pub fn health_of(last_seen_ms: u64, interval_ms: u64, now: Timestamp) -> RunnerHealth {
    let age = now.ms().saturating_sub(last_seen_ms);
    let every = interval_ms.max(1);
    if age <= every * 5 / 2 {
        RunnerHealth::Active
    } else if age < every * 6 {
        RunnerHealth::Unhealthy
    } else {
        RunnerHealth::Offline
    }
}

/// The runner of an install to show, and what a queued job of that install is waiting for:
/// `None` when an active runner is connected, else why the job waits.
pub fn waiting_for_runner(
    install: &str,
    runners: &[RunnerRecord],
    queued_since: &str,
    now: Timestamp,
) -> Option<String> {
    if runners
        .iter()
        .any(|r| r.install == install && r.health(now) == RunnerHealth::Active)
    {
        return None;
    }
    let last = runners
        .iter()
        .filter(|r| r.install == install)
        .map(|r| r.last_seen_ms)
        .max();
    Some(match last {
        Some(ms) => format!(
            "queued: no runner connected for install {install} since {}",
            crate::format_ms(ms)
        ),
        None => format!(
            "queued: no runner has connected for install {install} (waiting since {queued_since})"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(install: &str, last: u64) -> RunnerRecord {
        RunnerRecord {
            org: "o".into(),
            id: format!("runner-{last}"),
            install: install.into(),
            version: "0".into(),
            running_jobs: 0,
            interval_ms: 10_000,
            first_seen_ms: 0,
            last_seen_ms: last,
        }
    }

    #[test]
    fn health_follows_the_age_of_the_last_heartbeat() {
        let x = r("a", 100_000);
        assert_eq!(x.health(Timestamp::from_ms(100_000)), RunnerHealth::Active);
        assert_eq!(x.health(Timestamp::from_ms(125_000)), RunnerHealth::Active);
        assert_eq!(
            x.health(Timestamp::from_ms(125_001)),
            RunnerHealth::Unhealthy
        );
        assert_eq!(x.health(Timestamp::from_ms(160_000)), RunnerHealth::Offline);
    }

    #[test]
    fn a_queued_job_says_which_runner_it_waits_for() {
        let now = 1_000_000;
        assert_eq!(
            waiting_for_runner("a", &[r("a", now - 1_000)], "t0", Timestamp::from_ms(now)),
            None
        );
        assert_eq!(
            waiting_for_runner("a", &[r("b", now)], "12:00", Timestamp::from_ms(now)).unwrap(),
            "queued: no runner has connected for install a (waiting since 12:00)"
        );
        let msg = waiting_for_runner(
            "a",
            &[r("a", 0), r("a", 10_000)],
            "t0",
            Timestamp::from_ms(now),
        )
        .unwrap();
        assert_eq!(
            msg,
            "queued: no runner connected for install a since 1970-01-01T00:00:10.000Z"
        );
    }
}
