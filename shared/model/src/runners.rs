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
    /// How it confines its jobs on the host, as it last said (`None`: a runner older than the
    /// sandbox, which runs jobs as itself).
    #[serde(default)]
    pub sandbox: Option<RunnerSandbox>,
    /// Its customer paused it on the host (`ferry-runner pause`): it takes no new job.
    #[serde(default)]
    pub paused: bool,
}

/// How a runner confines its jobs on the customer's host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunnerSandbox {
    /// bubblewrap, each job as the host's unprivileged job user.
    BubblewrapJobUser,
    /// bubblewrap in a user namespace, as the runner's own (non-root) uid.
    BubblewrapUserNamespace,
    /// Started with `--unsandboxed-jobs`: jobs run as the runner, with its data in reach.
    Unsandboxed,
    /// No sandbox on the host and none waived: the runner refuses every job.
    Unavailable,
}

impl RunnerSandbox {
    /// As `runners list` and the dashboard say it.
    pub fn name(self) -> &'static str {
        match self {
            RunnerSandbox::BubblewrapJobUser => "sandboxed (job user)",
            RunnerSandbox::BubblewrapUserNamespace => "sandboxed (user namespace)",
            RunnerSandbox::Unsandboxed => "UNSANDBOXED",
            RunnerSandbox::Unavailable => "no sandbox: refusing jobs",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunnerHealth {
    /// Heard from within two heartbeat intervals and a half.
    Active,
    /// Its customer paused it (on the host, or through the install stack, which stops the
    /// runner hosts): it takes no new job.
    Paused,
    /// Missed a few heartbeats: maybe cut off, maybe gone.
    Unhealthy,
    /// Not heard from for a minute or more.
    Offline,
}

impl RunnerRecord {
    /// Its health now. A runner whose last word was that its customer paused it is paused,
    /// heard from since or not: a customer who scales the runner hosts to zero stops it.
    pub fn health(&self, now: Timestamp) -> RunnerHealth {
        match self.paused {
            true => RunnerHealth::Paused,
            false => health_of(self.last_seen_ms, self.interval_ms, now),
        }
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
    if runners
        .iter()
        .any(|r| r.install == install && r.health(now) == RunnerHealth::Paused)
    {
        return Some(format!(
            "queued: the customer paused the runner of install {install} on its host (`ferry-runner resume` takes work again)"
        ));
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
            sandbox: Some(RunnerSandbox::BubblewrapJobUser),
            paused: false,
        }
    }

    #[test]
    fn a_paused_runner_heard_from_is_paused_not_unhealthy_and_a_job_waits_for_its_customer() {
        let now = 1_000_000;
        let mut x = r("a", now - 1_000);
        x.paused = true;
        assert_eq!(x.health(Timestamp::from_ms(now)), RunnerHealth::Paused);
        // Stopped by its customer after it said so (the stack scaled its hosts to zero): still
        // the customer's pause, not a runner gone wrong.
        assert_eq!(
            x.health(Timestamp::from_ms(now + 100_000)),
            RunnerHealth::Paused
        );
        let msg = waiting_for_runner("a", &[x], "t0", Timestamp::from_ms(now)).unwrap();
        assert!(msg.contains("customer paused"), "{msg}");
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
