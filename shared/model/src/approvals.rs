//! Decisions on plans: an approval is decided once, by approve-all or by a person, and keeps who
//! and when; what a decision does to its approve step; and when an approved plan is too old to
//! apply.

use std::time::Duration;

use crate::Timestamp;
use crate::{OnDeny, StepOutcome};

/// What deciding an approve step does: how the step ends and the response recorded on it. A
/// denial fails the workflow, or skips the apply (and with `SkipDependents` what depends on it),
/// as the approval's `on_deny` says.
pub fn decided(
    approved: bool,
    on_deny: OnDeny,
    reason: Option<&str>,
) -> (StepOutcome, &'static str) {
    let skipped = |dependents| StepOutcome::Skipped {
        message: format!("{}; its apply is skipped", denial(reason)),
        dependents,
    };
    match (approved, on_deny) {
        (true, _) => (StepOutcome::Succeeded("plan approved".into()), "approve"),
        (false, OnDeny::Fail) => (StepOutcome::Failed(denial(reason)), "deny"),
        (false, OnDeny::SkipCurrent) => (skipped(false), "deny (skip-current)"),
        (false, OnDeny::SkipDependents) => (skipped(true), "deny (skip-dependents)"),
    }
}

/// How a denied plan's step reads: `plan denied`, with the reason the person gave.
pub fn denial(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("plan denied: {r}"),
        None => "plan denied".into(),
    }
}

/// The longest reason a denial keeps.
pub const MAX_REASON: usize = 500;

impl crate::Job {
    /// Why the plan this job made is too old to apply at `now.ms()`, if it is older than
    /// `max_age`: an approval given to it plans again instead. A plan not finished (or whose time
    /// cannot be read) is not judged.
    pub fn plan_too_old(&self, now: Timestamp, max_age: Duration) -> Option<String> {
        let made = self.finished_at.as_deref().and_then(crate::ms_of)?;
        let age = Duration::from_secs(now.ms().saturating_sub(made) / 1000);
        (age > max_age).then(|| {
            format!(
                "the approved plan was {} old (more than {})",
                humantime::format_duration(age),
                humantime::format_duration(max_age)
            )
        })
    }
}

impl crate::Approval {
    /// Records a decision on a pending approval; a decided one keeps its first decision.
    pub fn decide(&mut self, approved: bool, actor: &str, now: Timestamp) -> Result<(), String> {
        if self.status != crate::ApprovalStatus::Pending {
            return Err(format!(
                "the plan of {} was already {} by {}",
                self.component,
                if self.status == crate::ApprovalStatus::Approved {
                    "approved"
                } else {
                    "denied"
                },
                self.decided_by.as_deref().unwrap_or("someone")
            ));
        }
        self.status = if approved {
            crate::ApprovalStatus::Approved
        } else {
            crate::ApprovalStatus::Denied
        };
        self.decided_by = Some(actor.to_string());
        self.decided_at = Some(now.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::at;

    #[test]
    fn a_decision_ends_the_step_as_its_on_deny_says() {
        assert_eq!(
            decided(true, OnDeny::SkipDependents, None),
            (StepOutcome::Succeeded("plan approved".into()), "approve")
        );
        assert_eq!(
            decided(false, OnDeny::Fail, None),
            (StepOutcome::Failed("plan denied".into()), "deny")
        );
        assert_eq!(
            decided(false, OnDeny::Fail, Some(" drops the prod table ")),
            (
                StepOutcome::Failed("plan denied: drops the prod table".into()),
                "deny"
            )
        );
        assert!(matches!(
            decided(false, OnDeny::SkipCurrent, None),
            (
                StepOutcome::Skipped {
                    dependents: false,
                    ..
                },
                "deny (skip-current)"
            )
        ));
        assert!(matches!(
            decided(false, OnDeny::SkipDependents, None),
            (
                StepOutcome::Skipped {
                    dependents: true,
                    ..
                },
                "deny (skip-dependents)"
            )
        ));
    }

    #[test]
    fn a_plan_older_than_the_limit_is_too_old_to_apply() {
        let mut j = crate::Job::queued(
            "j".into(),
            "o".into(),
            "i".into(),
            "w".into(),
            2,
            crate::JobKind::Plan,
            "db".into(),
            at("2026-11-27T10:00:00.000Z"),
        );
        let made = crate::ms_of("2026-11-27T10:00:00.000Z").unwrap();
        let day = Duration::from_secs(24 * 3600);
        assert_eq!(
            j.plan_too_old(Timestamp::from_ms(made + 3 * 86_400_000), day),
            None,
            "not finished"
        );
        j.finished_at = Some("2026-11-27T10:00:00.000Z".into());
        assert_eq!(
            j.plan_too_old(Timestamp::from_ms(made + 3_600_000), day),
            None
        );
        assert_eq!(
            j.plan_too_old(Timestamp::from_ms(made + 86_400_000), day),
            None,
            "exactly the limit"
        );
        assert_eq!(
            j.plan_too_old(Timestamp::from_ms(made + 3 * 86_400_000), day)
                .as_deref(),
            Some("the approved plan was 3days old (more than 1day)")
        );
    }

    #[test]
    fn an_approval_is_decided_once() {
        let mut a = crate::Approval {
            id: "a".into(),
            org: "o".into(),
            install: "i".into(),
            workflow_id: "w".into(),
            step: 3,
            component: "db".into(),
            plan_job: "j".into(),
            plan_digest: "sha256:x".into(),
            plan_summary: String::new(),
            status: crate::ApprovalStatus::Pending,
            decided_by: None,
            decided_at: None,
            created_at: "t".into(),
            requested_at: None,
            on_deny: Default::default(),
            reason: None,
        };
        a.decide(true, "alice", Timestamp::from_ms(1000)).unwrap();
        assert_eq!(a.status, crate::ApprovalStatus::Approved);
        assert_eq!(
            a.decide(false, "bob", Timestamp::from_ms(2000))
                .unwrap_err(),
            "the plan of db was already approved by alice"
        );
        assert_eq!(a.decided_by.as_deref(), Some("alice"));
    }
}
