//! Granting a job as it is offered, when there is only one runner to grant it to.
//!
//! A job normally goes to a runner in two trips through the install's leaf: the offer out (the
//! doorbell), the claim back and its grant out (after a compare-and-swap of the record). When the
//! install has exactly one runner the control plane knows of, and that runner has a free slot,
//! the claim can only end one way, so the scheduler decides it at the offer: the job's record is
//! created already granted to that runner (one write, not a create and a compare-and-swap) and
//! the doorbell carries the grant. The runner starts without asking.
//!
//! Nothing is granted before its record is written (the doorbell rings after the write), and a
//! grant nobody hears is withdrawn ([`Job::withdraw_grant`]): the doorbell goes out with a reply
//! subject, and the hub answers it "no responders" when no runner of the install listens any
//! more. A runner that listens but never starts the job (hung) costs what a claimed job's silent
//! runner always costs: its lease, then another execution.
//!
//! An apply goes only to the runner that made its plan (plans stay on the host that made them),
//! which then may be one of several. When in doubt — two runners for any other job, one that
//! missed a heartbeat, one with no free slot — the job is offered to all and claimed as before.
//!
//! A runner that lost one of the job's executions is in doubt too, whatever its heartbeats said:
//! the lease is how the scheduler learns first that a runner died (its last heartbeat keeps it
//! `active` for up to two and a half intervals), and a grant to the dead is heard by nobody only
//! when no other runner of the install listens. Granted to it again, the job would spend every
//! execution on a runner that is gone while its successor waits (a killed runner's planned apply,
//! restarted on the same host, did exactly that).

use crate::{Granted, Job, JobStatus, Timestamp};

/// A runner of an install as the scheduler knows it, for [`pregrant_to`]: alive by its heartbeats,
/// busy by the jobs the scheduler itself gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeardRunner {
    pub id: String,
    pub last_seen_ms: u64,
    pub interval_ms: u64,
    /// How many jobs it runs at once, as its heartbeat says.
    pub max_jobs: u32,
    /// Its jobs not ended, among those this scheduler granted it (at their offer, or on its claim).
    /// Exact with one scheduler, and never stale as a heartbeat's count is (a job ends between
    /// two); with several, a runner may have more (the others'), and one whose slots turn out to
    /// be full keeps a granted job's lease while the job waits for a slot.
    pub open_jobs: u32,
}

/// The runner to grant an install's new job to at its offer, given the runners known for the
/// install. An apply goes to the runner that made its plan (`planner`: plans stay on the host
/// that made them), whatever others there are; any other job to the only runner not offline.
/// Either way only when that runner is active and has a free slot. `None`: offer the job to
/// all and let them claim it (an apply's other hosts leave it to its planner a while).
pub fn pregrant_to<'a>(
    runners: &'a [HeardRunner],
    now: Timestamp,
    planner: Option<&str>,
) -> Option<&'a str> {
    let health = |r: &HeardRunner| crate::health_of(r.last_seen_ms, r.interval_ms, now);
    let chosen = match planner {
        Some(p) => runners.iter().find(|r| r.id == p)?,
        None => {
            let mut alive = runners
                .iter()
                .filter(|r| health(r) != crate::RunnerHealth::Offline);
            let only = alive.next()?;
            if alive.next().is_some() {
                return None;
            }
            only
        }
    };
    let active = health(chosen) == crate::RunnerHealth::Active;
    (active && chosen.open_jobs < chosen.max_jobs).then_some(chosen.id.as_str())
}

/// How long before a heartbeat leaves a job granted to its runner may still be on its way to it
/// (and so not in the heartbeat's count): the doorbell's trip and the two clocks' offset.
pub const GRANT_IN_FLIGHT_MS: u64 = 2_000;

/// Whether a job granted to a runner at `granted_ms` still takes one of its slots once a heartbeat
/// heard at `heard_ms` says the runner runs `running_jobs`. A job whose end the scheduler never
/// saw (its result refused, or recorded by another replica) would otherwise hold its slot for
/// ever; a runner running nothing has none of the jobs granted it before its heartbeat left.
pub fn still_open(granted_ms: u64, running_jobs: u32, heard_ms: u64) -> bool {
    running_jobs > 0 || granted_ms > heard_ms.saturating_sub(GRANT_IN_FLIGHT_MS)
}

impl Job {
    /// Whether `runner` lost one of this job's executions (stopped renewing its lease).
    pub fn lost_by(&self, runner: &str) -> bool {
        self.executions
            .iter()
            .any(|e| e.status == crate::ExecutionStatus::Lost && e.runner == runner)
    }

    /// Offers a queued job and grants it to `runner` at once ([`pregrant_to`]): what
    /// [`Job::offered`] then [`Job::claim`] would do, with the control plane's timing points of
    /// a grant no claim asked for (`decided_us`: when it was decided). Refused to a runner that
    /// lost one of the job's executions (see the module's doc): the job is then offered to all.
    pub fn pregrant(
        &mut self,
        runner: &str,
        now: Timestamp,
        lease_ms: u64,
        secret: &str,
        decided_us: u64,
    ) -> Result<Granted, String> {
        if self.status != JobStatus::Queued {
            return Err(format!("job {} is {}", self.id, self.status.name()));
        }
        if self.lost_by(runner) {
            return Err(format!(
                "runner {runner} lost an execution of job {}",
                self.id
            ));
        }
        let mut next = self.clone();
        next.offered(now);
        let install = next.install.clone();
        let granted = next.claim(&install, runner, now, lease_ms, secret)?;
        next.time_claim(0, 0, decided_us);
        *self = next;
        Ok(granted)
    }

    /// Takes back a grant made at the offer to `runner` that no runner heard (see the module's
    /// doc): its execution is dropped, as if never granted, and the job is `available` again, to
    /// be offered to all. Returns whether it did: not for another install's job, nor once the
    /// job has moved on from that grant (another runner's claim of the job, which reuses the
    /// attempt's number, is not that grant).
    pub fn withdraw_grant(&mut self, install: &str, runner: &str) -> bool {
        let current = self.current_execution().is_some_and(|e| e.runner == runner);
        if self.install != install || !current {
            return false;
        }
        self.executions.pop();
        self.status = JobStatus::Available;
        self.lease_expires_ms = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobKind;

    const NOW: u64 = 1_000_000;

    fn heard(id: &str, ago_ms: u64, open: u32) -> HeardRunner {
        HeardRunner {
            id: id.into(),
            last_seen_ms: NOW - ago_ms,
            interval_ms: 10_000,
            max_jobs: 2,
            open_jobs: open,
        }
    }

    fn to(runners: &[HeardRunner]) -> Option<&str> {
        pregrant_to(runners, Timestamp::from_ms(NOW), None)
    }

    #[test]
    fn only_the_single_active_runner_with_a_free_slot_is_granted_at_the_offer() {
        assert_eq!(to(&[heard("a", 1_000, 0)]), Some("a"));
        assert_eq!(to(&[heard("a", 1_000, 1)]), Some("a"));
        // No runner known: offered to all.
        assert_eq!(to(&[]), None);
        // Its slots all taken by jobs not ended.
        assert_eq!(to(&[heard("a", 1_000, 2)]), None);
        // Two runners: which holds an apply's plan is theirs to know.
        assert_eq!(to(&[heard("a", 1_000, 0), heard("b", 2_000, 0)]), None);
        // One that missed heartbeats may be gone: a doubt, so offered to all.
        assert_eq!(to(&[heard("a", 30_000, 0)]), None);
        // A replaced runner still unhealthy beside its successor: a doubt too.
        assert_eq!(to(&[heard("a", 30_000, 0), heard("b", 1_000, 0)]), None);
        // One long offline is no doubt: the other is the install's runner.
        assert_eq!(
            to(&[heard("a", 90_000, 0), heard("b", 1_000, 0)]),
            Some("b")
        );
    }

    #[test]
    fn an_apply_is_granted_at_its_offer_only_to_the_runner_that_made_its_plan() {
        let apply = |runners: &[HeardRunner], planner| {
            pregrant_to(runners, Timestamp::from_ms(NOW), Some(planner)).map(str::to_string)
        };
        let two = [heard("a", 1_000, 0), heard("b", 2_000, 0)];
        // Among several: the planner, which alone holds the plan.
        assert_eq!(apply(&two, "b").as_deref(), Some("b"));
        // The only runner known did not make it (its planner restarted, or is not heard yet).
        assert_eq!(apply(&two[..1], "b"), None);
        // The planner, but busy or missing heartbeats.
        assert_eq!(apply(&[heard("b", 1_000, 2)], "b"), None);
        assert_eq!(apply(&[heard("b", 30_000, 0)], "b"), None);
    }

    #[test]
    fn a_runner_running_nothing_frees_the_slots_of_jobs_granted_before_its_heartbeat() {
        let heard = 100_000;
        // Running something: which of its jobs ended is not known, so all stay counted.
        assert!(still_open(1_000, 1, heard));
        // Running nothing: a job granted well before the heartbeat left has ended.
        assert!(!still_open(heard - GRANT_IN_FLIGHT_MS, 0, heard));
        assert!(!still_open(1_000, 0, heard));
        // One granted just before may still be on its way: it stays.
        assert!(still_open(heard - GRANT_IN_FLIGHT_MS + 1, 0, heard));
        assert!(still_open(heard, 0, heard));
    }

    fn queued() -> Job {
        Job::queued(
            "j".into(),
            "o".into(),
            "i".into(),
            "w".into(),
            1,
            JobKind::Plan,
            "c".into(),
            Timestamp::from_ms(NOW),
        )
    }

    #[test]
    fn a_pregrant_is_an_offer_and_a_claim_in_one_write() {
        let now = Timestamp::from_ms(NOW);
        let mut j = queued();
        j.offered_us = 7;
        let g = j.pregrant("runner-a", now, 30_000, "s3cret", 9).unwrap();
        assert_eq!(j.status, JobStatus::InProgress);
        assert!(j.offered_at.is_some());
        assert_eq!(j.lease_expires_ms, Some(NOW + 30_000));
        let e = j.current_execution().unwrap();
        assert_eq!(
            (e.runner.as_str(), e.attempt, e.id.as_str()),
            ("runner-a", 1, g.public_id.as_str())
        );
        assert!(e.has_token(&g.execution_id));
        assert_eq!(
            (
                e.timing.offered_us,
                e.timing.claimed_us,
                e.timing.decided_us
            ),
            (7, 0, 9)
        );
        // Only a queued job: granted once, never twice.
        let before = j.clone();
        assert!(j.pregrant("runner-b", now, 30_000, "x", 10).is_err());
        assert_eq!(j, before);
        // Its token opens nothing for another install.
        assert!(j.clone().claim("i", "runner-b", now, 1, "y").is_err());
    }

    #[test]
    fn the_record_write_of_a_grant_is_kept_from_the_runners_report() {
        let now = Timestamp::from_ms(NOW);
        let done = |written: u64| crate::Finished {
            status: crate::ExecutionStatus::Finished,
            outputs: Default::default(),
            sensitive_outputs: vec![],
            error: None,
            plan: None,
            ran_as: None,
            runner: Default::default(),
            grant_written_us: written,
        };
        let mut j = queued();
        let g = j.pregrant("runner-a", now, 30_000, "s", 9).unwrap();
        j.finish("i", &g.execution_id, done(42), now).unwrap();
        assert_eq!(j.executions[0].timing.written_us, 42);
        // A claimed execution keeps the point its scheduler saw; a runner's word is not taken.
        let mut c = queued();
        c.offered(now);
        let g = c.claim("i", "runner-a", now, 30_000, "s").unwrap();
        c.time_claim(5, 6, 7);
        c.finish("i", &g.execution_id, done(42), now).unwrap();
        assert_eq!(c.executions[0].timing.written_us, 5);
    }

    #[test]
    fn a_grant_nobody_heard_is_withdrawn_and_the_job_offered_to_all() {
        let now = Timestamp::from_ms(NOW);
        let mut j = queued();
        let g = j.pregrant("runner-a", now, 30_000, "s", 1).unwrap();
        assert_eq!(g.attempt, 1);
        // Not by another install, nor for another runner's execution.
        assert!(!j.clone().withdraw_grant("other", "runner-a"));
        assert!(!j.clone().withdraw_grant("i", "runner-b"));
        assert!(j.withdraw_grant("i", "runner-a"));
        assert_eq!(j.status, JobStatus::Available);
        assert!(j.executions.is_empty() && j.lease_expires_ms.is_none());
        // Claimed afresh as attempt 1: the withdrawn grant used no execution.
        let again = j.claim("i", "runner-b", now, 30_000, "t").unwrap();
        assert_eq!(again.attempt, 1);
        // A late "unheard" of the first grant does not take the new claim back.
        assert!(!j.clone().withdraw_grant("i", "runner-a"));
        // Nor anything once the job has ended.
        let mut ended = j.clone();
        ended.status = JobStatus::Finished;
        assert!(!ended.withdraw_grant("i", "runner-b"));
    }

    #[test]
    fn a_runner_that_lost_the_jobs_execution_is_not_granted_it_again_at_the_offer() {
        // The planner was killed mid-apply; its last heartbeat still says active.
        let mut j = queued();
        j.pregrant("a", Timestamp::from_ms(NOW), 3_000, "s", 1)
            .unwrap();
        let later = Timestamp::from_ms(NOW + 3_000);
        assert!(matches!(
            j.expire(later),
            Some(crate::Expired::Requeued { .. })
        ));
        assert!(j.lost_by("a") && !j.lost_by("b"));
        // Not granted to it: offered to all, its successor holding the plan claims it.
        let before = j.clone();
        assert!(j.pregrant("a", later, 3_000, "t", 2).is_err());
        assert_eq!(j, before);
        let g = j.pregrant("b", later, 3_000, "t", 2).unwrap();
        assert_eq!(g.attempt, 2);
        // A claim is the runner's own word that it is alive: that stays open to it.
        let mut claimed = before.clone();
        claimed.offered(later);
        assert!(claimed.claim("i", "a", later, 3_000, "u").is_ok());
    }
}
