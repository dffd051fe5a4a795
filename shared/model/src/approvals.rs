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

/// Who approves an install's plans.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalsBy {
    /// The vendor's operators (and approve-all, the vendor's rule).
    #[default]
    Vendor,
    /// The install's customer, with a customer token; no vendor token, and no approve-all.
    Customer,
    /// Both, each once; a denial by either denies.
    Both,
}

/// Which side a decision is made for: a customer token decides for the customer, every vendor
/// role (and approve-all) for the vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Vendor,
    Customer,
}

impl Side {
    pub fn of(role: crate::Role) -> Side {
        match role {
            crate::Role::Customer => Side::Customer,
            _ => Side::Vendor,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Vendor => "vendor",
            Side::Customer => "customer",
        }
    }
}

impl ApprovalsBy {
    pub const ALL: [ApprovalsBy; 3] = [
        ApprovalsBy::Vendor,
        ApprovalsBy::Customer,
        ApprovalsBy::Both,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ApprovalsBy::Vendor => "vendor",
            ApprovalsBy::Customer => "customer",
            ApprovalsBy::Both => "both",
        }
    }

    pub fn parse(s: &str) -> Option<ApprovalsBy> {
        ApprovalsBy::ALL.into_iter().find(|a| a.name() == s)
    }

    /// Whether `side` has a say.
    pub fn includes(self, side: Side) -> bool {
        matches!(
            (self, side),
            (ApprovalsBy::Both, _)
                | (ApprovalsBy::Vendor, Side::Vendor)
                | (ApprovalsBy::Customer, Side::Customer)
        )
    }

    /// Why `side` may not decide this install's plans, if it may not.
    pub fn refuses(self, side: Side) -> Option<String> {
        (!self.includes(side)).then(|| {
            format!(
                "this install's plans are approved by its {}: a {} token cannot decide them",
                match self {
                    ApprovalsBy::Vendor => "vendor",
                    _ => "customer",
                },
                side.name()
            )
        })
    }

    /// Why `side` may not change this to `to`, if it may not: a change that takes a side's say
    /// away needs that side (the vendor cannot drop its customer's approvals, nor the customer
    /// the vendor's).
    pub fn refuses_change(self, to: ApprovalsBy, side: Side) -> Option<String> {
        let dropped = [Side::Vendor, Side::Customer]
            .into_iter()
            .find(|s| *s != side && self.includes(*s) && !to.includes(*s))?;
        Some(format!(
            "only the {} may stop approving this install's plans (from `{}` to `{}`)",
            dropped.name(),
            self.name(),
            to.name()
        ))
    }
}

/// Where a decision leaves an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// Final: approved or denied.
    Final,
    /// Approved by one side; the other's approval is still wanted.
    Waiting(Side),
}

impl crate::Approval {
    /// Records `side`'s decision under the install's `policy`: a denial by a side with a say is
    /// final; an approval is final once every side with a say has approved. A side without a say
    /// is refused, as is a decision on an approval already decided.
    pub fn respond(
        &mut self,
        side: Side,
        approved: bool,
        actor: &str,
        policy: ApprovalsBy,
        now: Timestamp,
    ) -> Result<Decided, String> {
        if let Some(why) = policy.refuses(side) {
            return Err(why);
        }
        if self.status != crate::ApprovalStatus::Pending {
            return self.decide(approved, actor, now).map(|()| Decided::Final);
        }
        if approved {
            match side {
                Side::Vendor => self.vendor_approved_by = Some(actor.to_string()),
                Side::Customer => self.customer_approved_by = Some(actor.to_string()),
            }
            let other = match side {
                Side::Vendor => Side::Customer,
                Side::Customer => Side::Vendor,
            };
            let other_approved = match other {
                Side::Vendor => self.vendor_approved_by.is_some(),
                Side::Customer => self.customer_approved_by.is_some(),
            };
            if policy.includes(other) && !other_approved {
                return Ok(Decided::Waiting(other));
            }
        }
        self.decide(approved, actor, now).map(|()| Decided::Final)
    }

    /// Why `side` may not respond to this approval now, if it may not: it was decided, or this
    /// side already approved it and it waits for the other (`step` names it in the message).
    pub fn refuses_response(&self, side: Side, step: &str) -> Option<String> {
        if self.status != crate::ApprovalStatus::Pending {
            return Some(format!(
                "step {step} was already decided by {}",
                self.decided_by.as_deref().unwrap_or("someone")
            ));
        }
        let mine = match side {
            Side::Vendor => &self.vendor_approved_by,
            Side::Customer => &self.customer_approved_by,
        };
        mine.as_ref().map(|by| {
            format!(
                "step {step} was already approved for the {} by {by}; it waits for the other side",
                side.name()
            )
        })
    }

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
            vendor_approved_by: None,
            customer_approved_by: None,
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

    fn approval() -> crate::Approval {
        serde_json::from_value(serde_json::json!({
            "id": "a1", "org": "o", "install": "i", "workflow_id": "w", "step": 3,
            "component": "db", "plan_job": "w-2", "plan_digest": "sha256:p",
            "plan_summary": "", "status": "pending", "decided_by": null, "decided_at": null,
            "created_at": "t"
        }))
        .unwrap()
    }

    #[test]
    fn each_side_with_a_say_decides_once_and_a_denial_by_either_is_final() {
        let now = Timestamp::from_ms(1000);
        let mut a = approval();
        assert_eq!(
            a.respond(Side::Vendor, true, "token:ops", ApprovalsBy::Vendor, now),
            Ok(Decided::Final)
        );
        assert_eq!(a.status, crate::ApprovalStatus::Approved);

        let mut a = approval();
        let e = a
            .respond(Side::Vendor, true, "token:ops", ApprovalsBy::Customer, now)
            .unwrap_err();
        assert_eq!(
            e,
            "this install's plans are approved by its customer: a vendor token cannot decide them"
        );
        assert_eq!(a.status, crate::ApprovalStatus::Pending);
        assert!(
            a.respond(
                Side::Customer,
                false,
                "token:sec",
                ApprovalsBy::Customer,
                now
            ) == Ok(Decided::Final)
        );
        assert_eq!(a.status, crate::ApprovalStatus::Denied);

        let mut a = approval();
        assert_eq!(
            a.respond(Side::Vendor, true, "approve-all", ApprovalsBy::Both, now),
            Ok(Decided::Waiting(Side::Customer))
        );
        assert_eq!(a.status, crate::ApprovalStatus::Pending);
        assert_eq!(
            a.respond(Side::Customer, true, "token:sec", ApprovalsBy::Both, now),
            Ok(Decided::Final)
        );
        assert_eq!(a.status, crate::ApprovalStatus::Approved);
        assert_eq!(a.vendor_approved_by.as_deref(), Some("approve-all"));
        assert_eq!(a.decided_by.as_deref(), Some("token:sec"));

        let mut a = approval();
        a.respond(Side::Customer, true, "token:sec", ApprovalsBy::Both, now)
            .unwrap();
        a.respond(Side::Vendor, false, "token:ops", ApprovalsBy::Both, now)
            .unwrap();
        assert_eq!(a.status, crate::ApprovalStatus::Denied);
        assert!(
            a.respond(Side::Customer, true, "token:sec", ApprovalsBy::Both, now)
                .unwrap_err()
                .contains("already denied")
        );
    }

    #[test]
    fn a_side_alone_may_give_up_its_say() {
        use ApprovalsBy::*;
        assert!(Vendor.refuses_change(Both, Side::Vendor).is_none());
        assert!(Vendor.refuses_change(Customer, Side::Vendor).is_none());
        assert!(Vendor.refuses_change(Customer, Side::Customer).is_some());
        assert_eq!(
            Both.refuses_change(Vendor, Side::Vendor).as_deref(),
            Some(
                "only the customer may stop approving this install's plans (from `both` to `vendor`)"
            )
        );
        assert!(Both.refuses_change(Vendor, Side::Customer).is_none());
        assert!(Customer.refuses_change(Vendor, Side::Vendor).is_some());
        assert!(Customer.refuses_change(Both, Side::Vendor).is_none());
        assert_eq!(ApprovalsBy::parse("both"), Some(Both));
        assert_eq!(Side::of(crate::Role::Customer), Side::Customer);
        assert_eq!(Side::of(crate::Role::Admin), Side::Vendor);
    }
}
