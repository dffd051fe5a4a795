//! A job's limits in time, and the pure function that applies them to its record.
//!
//! Four clocks, each with its own question:
//! * queue: recorded but never offered (the scheduler could not publish the offer);
//! * available: offered, but no runner of the install claimed it (the runner is gone);
//! * execution: one execution ran too long. The runner enforces it (kill, `timed_out`); the
//!   scheduler ends it one lease later if the runner never reported;
//! * overall: the job, all executions and waits included, took too long.
//!
//! Each job kind has its defaults ([`JobKind::default_timeouts`], and
//! [`JobKind::default_max_executions`]); the job record carries its own copy, so a change of
//! defaults never changes a job already queued.

use serde::{Deserialize, Serialize};

use crate::Timestamp;
use crate::{ExecutionStatus, Job, JobKind, JobStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobTimeouts {
    pub queue_secs: u64,
    pub available_secs: u64,
    pub execution_secs: u64,
    pub overall_secs: u64,
}

const HOUR: u64 = 3600;

impl Default for JobTimeouts {
    /// The limits of a record written before jobs carried their own.
    fn default() -> Self {
        JobKind::Apply.default_timeouts()
    }
}

impl JobKind {
    /// The limits a job of this kind gets unless its component or the scheduler sets others.
    pub fn default_timeouts(self) -> JobTimeouts {
        let execution_secs = match self {
            JobKind::Sync | JobKind::Plan => HOUR / 2,
            JobKind::Apply | JobKind::Teardown | JobKind::Action => HOUR,
        };
        JobTimeouts {
            queue_secs: HOUR,
            // An install's runner may be down for a while (a customer's maintenance window).
            available_secs: 24 * HOUR,
            execution_secs,
            overall_secs: 48 * HOUR,
        }
    }
}

impl JobKind {
    /// Executions a job of this kind gets: its first, and more after lost ones. A sync copies
    /// by digest and may simply run again; a plan or apply whose runner vanished runs again too
    /// (Terraform refuses a saved plan its state has moved past), but not without end.
    pub fn default_max_executions(self) -> u32 {
        match self {
            JobKind::Sync => 5,
            JobKind::Plan | JobKind::Apply | JobKind::Teardown => 3,
            // An action may not be safe to run twice (a migration): a lost one fails its step,
            // and a person decides whether to retry it.
            JobKind::Action => 1,
        }
    }
}

/// Which limit a job passed, and what the scheduler must do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedOut {
    pub reason: String,
    /// A runner still holds an execution: it must be told to stop.
    pub was_running: bool,
}

/// Milliseconds since the epoch of an RFC 3339 time of a record.
pub fn ms_of(t: &str) -> Option<u64> {
    humantime::parse_rfc3339(t)
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64)
}

impl Job {
    /// Applies the job's limits at `now.ms()`: if one has passed, the job (and its running execution)
    /// ends `timed_out` with the reason. `grace_ms` is how long past its execution limit the
    /// scheduler waits for the runner's own report (a lease period).
    pub fn check_timeouts(&mut self, now: Timestamp, grace_ms: u64) -> Option<TimedOut> {
        let reason = self.passed_limit(now, grace_ms)?;
        let was_running = self.status == JobStatus::InProgress;
        if let Some(e) = self
            .executions
            .last_mut()
            .filter(|e| e.status == ExecutionStatus::InProgress)
        {
            e.status = ExecutionStatus::TimedOut;
            e.finished_at = Some(now.to_string());
        }
        self.status = JobStatus::TimedOut;
        self.lease_expires_ms = None;
        self.error = Some(reason.clone());
        self.finished_at = Some(now.to_string());
        self.ended_by = Some(crate::SCHEDULER.into());
        Some(TimedOut {
            reason,
            was_running,
        })
    }

    /// The limit an unfinished job has passed at `now.ms()`, said as the reason it times out.
    pub fn passed_limit(&self, now: Timestamp, grace_ms: u64) -> Option<String> {
        let t = &self.timeouts;
        let past = |since: Option<u64>, secs: u64, extra: u64| {
            since.is_some_and(|s| now.ms() >= s.saturating_add(secs * 1000).saturating_add(extra))
        };
        if self.status.is_terminal() {
            return None;
        }
        if past(ms_of(&self.created_at), t.overall_secs, 0) {
            return Some(format!(
                "overall timeout: not finished within {}",
                secs(t.overall_secs)
            ));
        }
        match self.status {
            JobStatus::Queued => {
                // Queued again after a lost execution: the queue clock restarts then.
                let since = self
                    .executions
                    .last()
                    .and_then(|e| e.finished_at.as_deref())
                    .unwrap_or(&self.created_at);
                past(ms_of(since), t.queue_secs, 0).then(|| {
                    format!(
                        "queue timeout: not offered to a runner within {}",
                        secs(t.queue_secs)
                    )
                })
            }
            JobStatus::Available => {
                let since = self.offered_at.as_deref().and_then(ms_of);
                past(since, t.available_secs, 0).then(|| {
                    format!(
                        "available timeout: no runner of install {} took it within {}",
                        self.install,
                        secs(t.available_secs)
                    )
                })
            }
            JobStatus::InProgress => {
                let e = self.current_execution()?;
                past(ms_of(&e.started_at), t.execution_secs, grace_ms).then(|| {
                    format!(
                        "execution timeout: execution {} ran past {} and its runner did not report",
                        e.id,
                        secs(t.execution_secs)
                    )
                })
            }
            _ => None,
        }
    }
}

fn secs(s: u64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(s)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format_ms;
    use crate::time::at;

    fn job(created_ms: u64) -> Job {
        let mut j = Job::queued(
            "j".into(),
            "o".into(),
            "i".into(),
            "w".into(),
            1,
            JobKind::Plan,
            "c".into(),
            at("2026-01-01T00:00:00.000Z"),
        );
        j.created_at = format_ms(created_ms);
        j.timeouts = JobTimeouts {
            queue_secs: 10,
            available_secs: 20,
            execution_secs: 30,
            overall_secs: 100,
        };
        j
    }

    #[test]
    fn each_kind_has_its_defaults() {
        assert_eq!(JobKind::Sync.default_max_executions(), 5);
        assert_eq!(JobKind::Apply.default_max_executions(), 3);
        assert_eq!(JobKind::Plan.default_timeouts().execution_secs, 1800);
        assert_eq!(JobKind::Apply.default_timeouts().execution_secs, 3600);
        let d = JobKind::Sync.default_timeouts();
        assert!(d.overall_secs > d.available_secs + d.execution_secs);
    }

    #[test]
    fn a_job_never_offered_times_out_after_its_queue_time() {
        let mut j = job(0);
        assert_eq!(j.check_timeouts(Timestamp::from_ms(9_999), 0), None);
        let t = j.check_timeouts(Timestamp::from_ms(10_000), 0).unwrap();
        assert!(!t.was_running);
        assert_eq!(
            t.reason,
            "queue timeout: not offered to a runner within 10s"
        );
        assert_eq!(j.status, JobStatus::TimedOut);
        assert_eq!(
            j.check_timeouts(Timestamp::from_ms(99_999), 0),
            None,
            "already ended"
        );
    }

    #[test]
    fn an_offer_nobody_takes_times_out_after_its_available_time() {
        let mut j = job(0);
        j.offered(Timestamp::from_ms(5_000));
        assert_eq!(j.status, JobStatus::Available);
        assert_eq!(
            j.check_timeouts(Timestamp::from_ms(24_999), 0),
            None,
            "queue time no longer counts"
        );
        let t = j.check_timeouts(Timestamp::from_ms(25_000), 0).unwrap();
        assert_eq!(
            t.reason,
            "available timeout: no runner of install i took it within 20s"
        );
    }

    #[test]
    fn an_execution_its_runner_never_reports_times_out_one_grace_later() {
        let mut j = job(0);
        j.offered(Timestamp::from_ms(0));
        j.claim("i", "r", Timestamp::from_ms(1_000), 500, "")
            .unwrap();
        assert_eq!(
            j.check_timeouts(Timestamp::from_ms(31_000 + 4_999), 5_000),
            None
        );
        let t = j.check_timeouts(Timestamp::from_ms(36_000), 5_000).unwrap();
        assert!(t.was_running, "the runner must be told to stop");
        assert_eq!(j.executions[0].status, ExecutionStatus::TimedOut);
        assert_eq!(j.lease_expires_ms, None);
        assert!(
            j.current_execution().is_none(),
            "its late result is refused"
        );
    }

    #[test]
    fn the_overall_limit_counts_every_execution_and_wait() {
        let mut j = job(0);
        j.timeouts.execution_secs = 1_000;
        j.offered(Timestamp::from_ms(0));
        j.claim("i", "r", Timestamp::from_ms(1_000), 500, "")
            .unwrap();
        // Lost and queued again: the queue clock restarts, the overall one does not.
        j.expire(Timestamp::from_ms(90_000)).unwrap();
        assert_eq!(j.check_timeouts(Timestamp::from_ms(99_999), 0), None);
        let t = j.check_timeouts(Timestamp::from_ms(100_000), 0).unwrap();
        assert_eq!(t.reason, "overall timeout: not finished within 1m 40s");
        assert!(!t.was_running);
    }
}
