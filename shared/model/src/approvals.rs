//! Decisions on plans: an approval is decided once, by approve-all or by a person, and keeps who
//! and when.

impl crate::Approval {
    /// Records a decision on a pending approval; a decided one keeps its first decision.
    pub fn decide(&mut self, approved: bool, actor: &str, now: &str) -> Result<(), String> {
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
        };
        a.decide(true, "alice", "t1").unwrap();
        assert_eq!(a.status, crate::ApprovalStatus::Approved);
        assert_eq!(
            a.decide(false, "bob", "t2").unwrap_err(),
            "the plan of db was already approved by alice"
        );
        assert_eq!(a.decided_by.as_deref(), Some("alice"));
    }
}
