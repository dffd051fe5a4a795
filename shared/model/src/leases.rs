//! Job executions and their leases, as pure functions of the job record.
//!
//! A runner runs a job only while it holds the lease of the job's current execution: granted with
//! the claim, renewed by the runner while the job runs, and expiring when the runner stops renewing
//! (it was killed, or lost its connection). An expired lease makes the execution `lost`; the job
//! is queued again while executions remain, and fails when none do. The runner kills its job before
//! its own view of the lease ends, so a second execution never overlaps the first.

use crate::Timestamp;
use crate::{Execution, ExecutionStatus, Job, JobStatus, Outputs};

/// An execution granted by [`Job::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// The execution's token: for the claiming runner only.
    pub execution_id: String,
    /// Its public id, for logs and people.
    pub public_id: String,
    pub attempt: u32,
}

/// What [`Job::expire`] did to a job whose lease ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expired {
    /// Queued again for another runner: offer it again.
    Requeued { lost: String },
    /// No executions left: the job failed.
    Exhausted { lost: String },
}

/// How a runner says an execution ended, as [`Job::finish`] records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// `Finished`, `Failed`, `Cancelled` or `TimedOut`.
    pub status: ExecutionStatus,
    pub outputs: Outputs,
    pub sensitive_outputs: Vec<String>,
    pub error: Option<String>,
    /// The plan a plan job made.
    pub plan: Option<PlanMade>,
    /// The ARN of the role it ran as in the customer's account, if the runner assumed one.
    pub ran_as: Option<String>,
    /// When the runner reached each point of the execution, by its clock.
    pub runner: crate::RunnerPoints,
    /// For a job granted at its offer: when its record was written, by the control plane's
    /// clock, as the grant told the runner (0 otherwise; see `pregrants.rs`).
    pub grant_written_us: u64,
}

/// The longest role ARN a job record keeps (IAM's own limit is 2,048 characters).
pub const MAX_RAN_AS: usize = 2048;

/// A plan as the job record keeps it: its digest (the plan itself stays in the install), whether
/// it changes anything, and its one-line summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanMade {
    pub digest: String,
    pub changes: bool,
    pub summary: String,
}

/// What the reconcile pass does about a started step's job, from its record alone
/// ([`JobCheck::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobCheck {
    /// No record yet, or queued (again): offer it.
    Offer,
    /// Ended: apply its result to the step.
    ApplyResult,
    /// Past one of its limits: it ends `timed_out` (a runner still running it is told to stop).
    TimeOut,
    /// Offered and waiting: make sure the offer is really there.
    CheckOffer,
    /// Its runner stopped renewing the lease: the execution is lost.
    ExpireLease,
    /// Running while its workflow is cancelled: ask the runner again to stop it.
    Cancel,
    /// Running under its lease: nothing to do.
    Wait,
}

/// Whether leases that ended may be expired at `now.ms()` by a scheduler that has seen the hub
/// whole since `steady_since_ms`: not within a lease period of it, so runners cut off by the
/// same disruption (a hub node lost, their leaf moving) renew first.
pub fn may_expire_leases(steady_since_ms: u64, lease_ms: u64, now: Timestamp) -> bool {
    now.ms() >= steady_since_ms.saturating_add(lease_ms)
}

impl JobCheck {
    /// The check for a job record (`None`: the step has none yet). `leases_may_expire` is false
    /// until the scheduler has been up a lease period: a running job's runner may still be
    /// reporting after an outage, so neither its lease nor its limits end it before then.
    pub fn of(
        job: Option<&Job>,
        now: Timestamp,
        grace_ms: u64,
        leases_may_expire: bool,
        cancel_requested: bool,
    ) -> JobCheck {
        let Some(j) = job else {
            return JobCheck::Offer;
        };
        let running = j.status == JobStatus::InProgress;
        if j.status.is_terminal() {
            JobCheck::ApplyResult
        } else if (!running || leases_may_expire) && j.passed_limit(now, grace_ms).is_some() {
            JobCheck::TimeOut
        } else if j.status == JobStatus::Queued {
            JobCheck::Offer
        } else if j.status == JobStatus::Available {
            JobCheck::CheckOffer
        } else if j.lease_expired(now) && leases_may_expire {
            JobCheck::ExpireLease
        } else if cancel_requested {
            JobCheck::Cancel
        } else {
            JobCheck::Wait
        }
    }
}

impl Job {
    /// A new job, queued, not offered yet.
    // Each argument is one field of the new record, the time it is made included (the model
    // reads no clock).
    #[allow(clippy::too_many_arguments)]
    pub fn queued(
        id: String,
        org: String,
        install: String,
        workflow_id: String,
        step: u32,
        kind: crate::JobKind,
        component: String,
        now: Timestamp,
    ) -> Job {
        Job {
            id,
            org,
            install,
            workflow_id,
            step,
            kind,
            component,
            status: JobStatus::Queued,
            executions: vec![],
            max_executions: kind.default_max_executions(),
            timeouts: kind.default_timeouts(),
            outputs: Default::default(),
            sensitive_outputs: vec![],
            plan_digest: None,
            plan_changes: None,
            plan_summary: None,
            error: None,
            created_at: now.to_string(),
            finished_at: None,
            offered_us: 0,
            offered_at: None,
            lease_expires_ms: None,
            ended_by: None,
            ran_as: None,
        }
    }

    /// Grants a queued job to `runner`: a new execution holding a lease until `now.ms() + lease_ms`.
    ///
    /// `secret` (random, from the caller) is the execution's key: the granted `execution_id` is
    /// the execution's token, which goes only to the runner that claimed (in its own inbox); the
    /// record keeps its public id and the key's hash (see `executions.rs`).
    pub fn claim(
        &mut self,
        install: &str,
        runner: &str,
        now: Timestamp,
        lease_ms: u64,
        secret: &str,
    ) -> Result<Granted, String> {
        if self.install != install {
            return Err(format!("job {} is not a job of install {install}", self.id));
        }
        if !self.status.is_unclaimed() {
            return Err(format!("job {} is {}", self.id, self.status.name()));
        }
        if self.executions.len() as u32 >= self.max_executions {
            return Err(format!(
                "job {} has used all {} executions",
                self.id, self.max_executions
            ));
        }
        let attempt = self.executions.len() as u32 + 1;
        let public_id = crate::execution_public_id(&self.id, attempt);
        let execution_id = crate::execution_token(&public_id, secret);
        self.executions.push(Execution {
            id: public_id.clone(),
            key_sha256: crate::execution_key_hash(secret),
            attempt,
            runner: runner.to_string(),
            status: ExecutionStatus::InProgress,
            started_at: now.to_string(),
            finished_at: None,
            timing: Default::default(),
        });
        self.status = JobStatus::InProgress;
        self.lease_expires_ms = Some(now.ms() + lease_ms);
        Ok(Granted {
            execution_id,
            public_id,
            attempt,
        })
    }

    /// The execution that may report on the job: its latest, while it runs.
    pub fn current_execution(&self) -> Option<&Execution> {
        self.executions.last().filter(|e| {
            e.status == ExecutionStatus::InProgress && self.status == JobStatus::InProgress
        })
    }

    /// Extends the lease of `execution_id`, if it is still the current execution. A lease past its
    /// time but not yet expired (see [`Job::expire`]) is renewed too: no other runner has the job,
    /// and after a control-plane outage every lease is past its time.
    pub fn renew(
        &mut self,
        execution_id: &str,
        now: Timestamp,
        lease_ms: u64,
    ) -> Result<(), String> {
        match self.current_execution() {
            Some(e) if e.has_token(execution_id) => {}
            _ => return Err("the execution is not running any more".to_string()),
        }
        self.lease_expires_ms = Some(now.ms() + lease_ms);
        Ok(())
    }

    /// Records that the job's offer was published: `available` from now on. Returns whether it
    /// changed anything (a second offer of the same execution does not).
    pub fn offered(&mut self, now: Timestamp) -> bool {
        if self.status != JobStatus::Queued {
            return false;
        }
        self.status = JobStatus::Available;
        self.offered_at = Some(now.to_string());
        true
    }

    /// Queues again an `available` job whose offer never reached the stream (the scheduler stopped
    /// before publishing it), to be offered anew. Returns whether it did.
    pub fn offer_lost(&mut self) -> bool {
        if self.status != JobStatus::Available {
            return false;
        }
        self.status = JobStatus::Queued;
        self.offered_at = None;
        true
    }

    /// Ends a job no runner has claimed (a cancel): `not_attempted` if it never ran, `cancelled`
    /// if an earlier execution was lost. Returns whether it did; a claimed job must be stopped by
    /// its runner instead.
    pub fn cancel_unclaimed(&mut self, now: Timestamp) -> bool {
        if !self.status.is_unclaimed() {
            return false;
        }
        self.status = if self.executions.is_empty() {
            JobStatus::NotAttempted
        } else {
            JobStatus::Cancelled
        };
        self.error = Some("cancelled before a runner took it".into());
        self.finished_at = Some(now.to_string());
        self.ended_by = Some(crate::SCHEDULER.into());
        true
    }

    /// Records how an execution ended, as its runner reports it: the job ends with it. Refused,
    /// with the reason, for a job of another install and for an execution that is not the job's
    /// current one (a lost execution's late result: the job has moved on without it); `Ok(false)`
    /// when the job has already ended.
    pub fn finish(
        &mut self,
        install: &str,
        execution_id: &str,
        f: Finished,
        now: Timestamp,
    ) -> Result<bool, String> {
        if !self.accepts_result(install, execution_id)? {
            return Ok(false);
        }
        self.status = f.status.job_status();
        self.outputs = f.outputs;
        self.sensitive_outputs = f.sensitive_outputs;
        self.error = f.error;
        // An install says which role it ran as: kept only when it is an ARN's size.
        self.ran_as = f.ran_as.filter(|a| a.len() <= MAX_RAN_AS);
        if let Some(p) = f.plan {
            self.plan_digest = Some(p.digest);
            self.plan_changes = Some(p.changes);
            self.plan_summary = Some(p.summary);
        }
        self.finished_at = Some(now.to_string());
        self.lease_expires_ms = None;
        self.ended_by = Some(format!("runner:{install}"));
        if let Some(e) = self
            .executions
            .iter_mut()
            .find(|e| e.has_token(execution_id))
        {
            e.status = f.status;
            e.finished_at = Some(now.to_string());
            e.timing.runner = f.runner;
            // Only a grant made at the offer lacks the point (its record could not hold the
            // time of its own write); a claimed execution's stays as the scheduler saw it.
            if e.timing.written_us == 0 && e.timing.claimed_us == 0 {
                e.timing.written_us = f.grant_written_us;
            }
        }
        Ok(true)
    }

    /// Whether the current execution's lease has ended.
    pub fn lease_expired(&self, now: Timestamp) -> bool {
        self.status == JobStatus::InProgress && self.lease_expires_ms.is_some_and(|t| t <= now.ms())
    }

    /// Ends an execution whose lease ended: `lost`, then the job is queued again (and must be
    /// offered again) or, with no executions left, fails with the reason.
    pub fn expire(&mut self, now: Timestamp) -> Option<Expired> {
        if !self.lease_expired(now) {
            return None;
        }
        let lost = self.executions.last_mut().map(|e| {
            e.status = ExecutionStatus::Lost;
            e.finished_at = Some(now.to_string());
            format!(
                "execution {} lost: runner {} stopped renewing its lease",
                e.id, e.runner
            )
        })?;
        self.lease_expires_ms = None;
        if (self.executions.len() as u32) < self.max_executions {
            self.status = JobStatus::Queued;
            self.offered_at = None;
            Some(Expired::Requeued { lost })
        } else {
            self.status = JobStatus::Failed;
            self.error = Some(format!(
                "{lost}; all {} executions used",
                self.max_executions
            ));
            self.finished_at = Some(now.to_string());
            self.ended_by = Some(crate::SCHEDULER.into());
            Some(Expired::Exhausted { lost })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobKind;
    use crate::time::at;

    fn job(max: u32) -> Job {
        let mut j = Job::queued(
            "j".into(),
            "o".into(),
            "i".into(),
            "w".into(),
            1,
            JobKind::Apply,
            "c".into(),
            at("2026-01-01T00:00:00.000Z"),
        );
        j.max_executions = max;
        j.offered_at = Some("t0".into());
        j
    }

    #[test]
    fn leases_are_expired_only_a_lease_period_after_the_hub_was_last_seen_broken() {
        assert!(!may_expire_leases(
            1_000,
            30_000,
            Timestamp::from_ms(30_999)
        ));
        assert!(may_expire_leases(1_000, 30_000, Timestamp::from_ms(31_000)));
        assert!(!may_expire_leases(
            u64::MAX,
            30_000,
            Timestamp::from_ms(u64::MAX - 1)
        ));
    }

    #[test]
    fn the_reconcile_check_of_a_job_follows_its_record() {
        let check =
            |j: Option<&Job>, now, may_expire, cancel| JobCheck::of(j, now, 0, may_expire, cancel);
        assert_eq!(
            check(None, Timestamp::from_ms(0), true, false),
            JobCheck::Offer
        );
        let mut j = job(2);
        j.offered_at = None;
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(0), true, false),
            JobCheck::Offer
        );
        j.offered(Timestamp::from_ms(0));
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(0), true, false),
            JobCheck::CheckOffer
        );
        j.claim("i", "r", Timestamp::from_ms(1_000), 500, "")
            .unwrap();
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(1_100), true, false),
            JobCheck::Wait
        );
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(1_100), true, true),
            JobCheck::Cancel
        );
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(1_500), true, false),
            JobCheck::ExpireLease
        );
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(1_500), false, false),
            JobCheck::Wait,
            "not before the scheduler has been up a lease period"
        );
        // Past its overall limit: timed out, also while running, once leases may expire.
        j.created_at = "2026-11-22T12:00:00.000Z".into();
        j.timeouts.overall_secs = 1;
        let late = crate::ms_of(&j.created_at).unwrap() + 2_000;
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(late), true, false),
            JobCheck::TimeOut
        );
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(late), false, false),
            JobCheck::Wait
        );
        j.finish("i", "j-1", succeeded(None), Timestamp::from_ms(2000))
            .unwrap();
        assert_eq!(
            check(Some(&j), Timestamp::from_ms(late), true, false),
            JobCheck::ApplyResult
        );
    }

    fn succeeded(plan: Option<PlanMade>) -> Finished {
        let mut outputs = Outputs::new();
        outputs.insert("url".into(), "https://x".into());
        Finished {
            status: ExecutionStatus::Finished,
            outputs,
            sensitive_outputs: vec![],
            error: None,
            plan,
            ran_as: Some("arn:aws:sts::1:assumed-role/acme-maintenance/ferry-j".into()),
            runner: crate::RunnerPoints {
                spawned_us: 7_000,
                ..Default::default()
            },
            grant_written_us: 0,
        }
    }

    #[test]
    fn an_execution_keeps_the_claims_points_and_the_runners() {
        let mut j = job(2);
        j.offered_us = 1_000;
        j.claim("i", "r1", Timestamp::from_ms(1_000), 500, "s")
            .unwrap();
        j.time_claim(1_400, 2_000, 2_100);
        assert!(
            j.finish("i", "j-1-s", succeeded(None), Timestamp::from_ms(2000))
                .unwrap()
        );
        let t = j.executions[0].timing;
        assert_eq!(
            (t.offered_us, t.written_us, t.claimed_us, t.decided_us),
            (1_000, 1_400, 2_000, 2_100)
        );
        assert_eq!(t.offer_to_spawn_us(), Some(6_000));
    }

    #[test]
    fn a_role_longer_than_an_arn_is_not_kept() {
        let mut j = job(2);
        j.claim("i", "r1", Timestamp::from_ms(1_000), 500, "s")
            .unwrap();
        let mut f = succeeded(None);
        f.ran_as = Some("a".repeat(MAX_RAN_AS + 1));
        assert_eq!(
            j.finish("i", "j-1-s", f, Timestamp::from_ms(2000)),
            Ok(true)
        );
        assert_eq!(j.ran_as, None);
    }

    #[test]
    fn a_result_ends_the_job_only_from_its_install_and_its_current_execution() {
        let mut j = job(2);
        j.claim("i", "r1", Timestamp::from_ms(1_000), 500, "s")
            .unwrap();
        assert!(
            j.finish("x", "j-1-s", succeeded(None), Timestamp::from_ms(2000))
                .unwrap_err()
                .contains("install i, not x")
        );
        assert!(
            j.finish("i", "j-1", succeeded(None), Timestamp::from_ms(2000))
                .unwrap_err()
                .contains("not its current one")
        );
        assert_eq!(j.status, JobStatus::InProgress, "refusals change nothing");
        let plan = PlanMade {
            digest: "sha256:p".into(),
            changes: true,
            summary: "1 to add".into(),
        };
        assert_eq!(
            j.finish(
                "i",
                "j-1-s",
                succeeded(Some(plan)),
                Timestamp::from_ms(2000)
            ),
            Ok(true)
        );
        assert_eq!(j.status, JobStatus::Finished);
        assert_eq!(j.outputs["url"], "https://x");
        // The role it ran as in the customer's account is kept for the audit record (bounded).
        assert_eq!(
            crate::AuditEvent::job_ended(&j).detail["ran_as"],
            "arn:aws:sts::1:assumed-role/acme-maintenance/ferry-j"
        );
        assert_eq!(
            (
                j.plan_digest.as_deref(),
                j.plan_changes,
                j.plan_summary.as_deref()
            ),
            (Some("sha256:p"), Some(true), Some("1 to add"))
        );
        assert_eq!(j.executions[0].status, ExecutionStatus::Finished);
        assert_eq!(j.finished_at.as_deref(), Some("1970-01-01T00:00:02.000Z"));
        assert_eq!(j.lease_expires_ms, None);
        // A second report of the same end (a redelivered event) changes nothing.
        assert_eq!(
            j.finish("i", "j-1-s", succeeded(None), Timestamp::from_ms(3000)),
            Ok(false)
        );
        assert_eq!(j.finished_at.as_deref(), Some("1970-01-01T00:00:02.000Z"));
    }

    #[test]
    fn a_lost_executions_late_result_is_refused() {
        let mut j = job(2);
        j.claim("i", "r1", Timestamp::from_ms(1_000), 500, "")
            .unwrap();
        j.expire(Timestamp::from_ms(1_500)).unwrap();
        j.claim("i", "r2", Timestamp::from_ms(2_000), 500, "")
            .unwrap();
        let mut failed = succeeded(None);
        failed.status = ExecutionStatus::Failed;
        assert!(
            j.finish("i", "j-1", failed.clone(), Timestamp::from_ms(4000))
                .is_err()
        );
        assert_eq!(
            j.finish("i", "j-2", failed, Timestamp::from_ms(4000)),
            Ok(true)
        );
        assert_eq!(j.status, JobStatus::Failed);
        assert_eq!(j.executions[0].status, ExecutionStatus::Lost);
    }

    #[test]
    fn the_granted_token_ends_with_the_claims_secret_and_the_record_shows_the_public_id() {
        let mut j = job(2);
        let g = j
            .claim("i", "r1", Timestamp::from_ms(1_000), 500, "k3y")
            .unwrap();
        assert_eq!(g.execution_id, "j-1-k3y");
        assert_eq!(j.current_execution().unwrap().id, "j-1");
        assert!(j.renew("j-1-k3y", Timestamp::from_ms(1_100), 500).is_ok());
        assert!(
            j.renew("j-1", Timestamp::from_ms(1_100), 500).is_err(),
            "the guessable form is not it"
        );
    }

    #[test]
    fn a_claim_grants_one_execution_with_a_lease() {
        let mut j = job(2);
        let g = j
            .claim("i", "r1", Timestamp::from_ms(1_000), 500, "")
            .unwrap();
        assert_eq!(g.execution_id, "j-1");
        assert_eq!(g.attempt, 1);
        assert_eq!(j.status, JobStatus::InProgress);
        assert_eq!(j.lease_expires_ms, Some(1_500));
        assert_eq!(j.current_execution().unwrap().runner, "r1");
        // A second claim (another runner, the same offer delivered twice) is refused.
        assert_eq!(
            j.claim("i", "r2", Timestamp::from_ms(1_000), 500, "")
                .unwrap_err(),
            "job j is in_progress"
        );
        // Another install's runner cannot claim it.
        let mut other = job(2);
        assert!(
            other
                .claim("x", "r", Timestamp::from_ms(0), 1, "")
                .unwrap_err()
                .contains("install x")
        );
    }

    #[test]
    fn an_offered_job_is_available_and_a_cancel_ends_only_an_unclaimed_one() {
        let mut j = job(2);
        assert!(j.offered(Timestamp::from_ms(1000)));
        assert!(!j.offered(Timestamp::from_ms(2000)), "offered once");
        assert_eq!(j.status, JobStatus::Available);
        // Its offer never reached the stream: queued again, offered again.
        assert!(j.offer_lost());
        assert_eq!(
            (j.status, j.offered_at.as_deref()),
            (JobStatus::Queued, None)
        );
        assert!(!j.offer_lost());
        assert!(j.offered(Timestamp::from_ms(2000)));
        assert!(j.cancel_unclaimed(Timestamp::from_ms(3000)));
        assert_eq!(j.status, JobStatus::NotAttempted);

        let mut r = job(2);
        r.claim("i", "r", Timestamp::from_ms(0), 1_000, "").unwrap();
        assert!(
            !r.cancel_unclaimed(Timestamp::from_ms(0)),
            "its runner must stop it"
        );
        // Lost once, then cancelled while queued again: it did run.
        r.expire(Timestamp::from_ms(1_000)).unwrap();
        assert!(r.cancel_unclaimed(Timestamp::from_ms(0)));
        assert_eq!(r.status, JobStatus::Cancelled);
    }

    #[test]
    fn renewals_extend_only_the_current_execution_until_it_is_expired() {
        let mut j = job(2);
        j.claim("i", "r1", Timestamp::from_ms(1_000), 500, "")
            .unwrap();
        j.renew("j-1", Timestamp::from_ms(1_400), 500).unwrap();
        assert_eq!(j.lease_expires_ms, Some(1_900));
        assert!(
            j.renew("j-0", Timestamp::from_ms(1_400), 500).is_err(),
            "not the current execution"
        );
        assert!(!j.lease_expired(Timestamp::from_ms(1_899)));
        assert!(j.lease_expired(Timestamp::from_ms(1_900)));
        // Past its time but not expired yet (the scheduler was down): still renewable.
        j.renew("j-1", Timestamp::from_ms(5_000), 500).unwrap();
        assert_eq!(j.lease_expires_ms, Some(5_500));
    }

    #[test]
    fn an_expired_lease_loses_the_execution_and_requeues_until_none_are_left() {
        let mut j = job(2);
        j.claim("i", "r1", Timestamp::from_ms(1_000), 500, "")
            .unwrap();
        assert_eq!(j.expire(Timestamp::from_ms(1_499)), None, "still leased");
        assert_eq!(
            j.expire(Timestamp::from_ms(1_500)),
            Some(Expired::Requeued {
                lost: "execution j-1 lost: runner r1 stopped renewing its lease".into()
            })
        );
        assert_eq!(j.status, JobStatus::Queued);
        assert_eq!(j.offered_at, None, "to be offered again");
        assert_eq!(j.executions[0].status, ExecutionStatus::Lost);
        assert!(j.current_execution().is_none());
        assert!(
            j.renew("j-1", Timestamp::from_ms(1_600), 500).is_err(),
            "the lost runner cannot renew"
        );

        let g = j
            .claim("i", "r2", Timestamp::from_ms(2_000), 500, "")
            .unwrap();
        assert_eq!((g.execution_id.as_str(), g.attempt), ("j-2", 2));
        assert!(matches!(
            j.expire(Timestamp::from_ms(2_500)),
            Some(Expired::Exhausted { .. })
        ));
        assert_eq!(j.status, JobStatus::Failed);
        assert!(
            j.error
                .as_deref()
                .unwrap()
                .ends_with("all 2 executions used")
        );
        assert_eq!(
            j.expire(Timestamp::from_ms(9_999)),
            None,
            "a failed job has no lease"
        );
        assert!(
            j.claim("i", "r3", Timestamp::from_ms(3_000), 500, "")
                .is_err()
        );
    }
}
