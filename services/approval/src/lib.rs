//! The approval service: plan review gates. It takes approval requests, decides the ones an
//! approve-all rule covers, and tells the scheduler. An approval binds to its plan's digest (the
//! scheduler hands exactly those bytes to the apply).
//!
//! A plan approve-all does not cover waits for a person: `ferry workflows approve` / `deny` reach
//! this service as `ApprovalResponse`. Policies and stale-plan expiry build on the same record
//! later.

use ferry_model as m;
use ferry_protocol::resources::consumers;
use ferry_protocol::{Control, subjects};
use ferry_store::{Handled, Store, StoreError, consume_messages};
use tracing::{info, warn};

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub const APPROVE_ALL_ACTOR: &str = "approve-all";

#[derive(Clone)]
pub struct ApprovalService {
    store: Store,
}

impl ApprovalService {
    pub fn new(store: Store) -> Self {
        ApprovalService { store }
    }

    pub async fn run(self) -> Result<(), ApprovalError> {
        let consumer = self
            .store
            .bus()
            .durable(
                "CONTROL",
                consumers::APPROVAL_CONTROL,
                vec![subjects::control_topic(subjects::topic::APPROVAL)],
            )
            .await?;
        info!("approval service started");
        consume_messages(
            consumer,
            consumers::APPROVAL_CONTROL,
            move |_, c: Control| {
                let s = self.clone();
                async move {
                    let r = match c {
                        Control::ApprovalRequested { org, approval_id } => {
                            s.handle(&org, &approval_id, None).await
                        }
                        Control::ApprovalResponse {
                            org,
                            approval_id,
                            approved,
                            actor,
                            by_customer,
                        } => {
                            let response = (approved, actor.as_str(), by_customer);
                            s.handle(&org, &approval_id, Some(response)).await
                        }
                        _ => Ok(()),
                    };
                    match r {
                        Ok(()) => Handled::Done,
                        Err(e) => Handled::Retry(e.to_string()),
                    }
                }
            },
        )
        .await?;
        Ok(())
    }

    /// Decides an approval: by a person's `response` (approved, who, for the customer), or by
    /// the install's approve-all (the vendor's rule). Who has a say is the install's
    /// `approvals_by`, read now: a side without one is refused; a plan both sides approve waits
    /// for the second. A pending approval nothing decides waits.
    async fn handle(
        &self,
        org: &str,
        approval_id: &str,
        response: Option<(bool, &str, bool)>,
    ) -> Result<(), ApprovalError> {
        let approvals = self.store.repo::<m::Approval>();
        let Some(read) = approvals.get(org, approval_id).await? else {
            warn!(
                org,
                approval = approval_id,
                "approval request for an unknown approval"
            );
            return Ok(());
        };
        let a = read.value.clone();
        let decided = match a.status {
            m::ApprovalStatus::Pending => {
                let install = self
                    .store
                    .repo::<m::Install>()
                    .require(org, &a.install)
                    .await?
                    .value;
                let policy = install.approvals_by;
                let (approved, actor, side) = match response {
                    Some((approved, actor, true)) => (approved, actor, m::Side::Customer),
                    Some((approved, actor, false)) => (approved, actor, m::Side::Vendor),
                    None => {
                        let by_workflow = !install.approve_all
                            && self
                                .store
                                .repo::<m::Workflow>()
                                .get(org, &a.workflow_id)
                                .await?
                                .is_some_and(|w| w.value.approve_all);
                        if (!install.approve_all && !by_workflow)
                            || !policy.includes(m::Side::Vendor)
                        {
                            info!(org, install = %a.install, approval = approval_id, component = %a.component, approvals_by = policy.name(), "plan waits for a decision");
                            return Ok(());
                        }
                        (true, APPROVE_ALL_ACTOR, m::Side::Vendor)
                    }
                };
                // From the copy just read: a decision made since costs a lost swap, no more.
                let mut outcome = Err(String::new());
                let r = approvals
                    .modify_from(Some(read), org, approval_id, |a| {
                        outcome = a.respond(side, approved, actor, policy, m::Timestamp::now());
                        Ok::<bool, ()>(outcome.is_ok())
                    })
                    .await?;
                let a = r.map(|v| v.value).unwrap_or(a);
                let action = match (&outcome, approved) {
                    (Err(why), _) => {
                        warn!(org, approval = approval_id, actor, side = side.name(), reason = %why, "decision refused");
                        return Ok(());
                    }
                    (Ok(m::Decided::Waiting(other)), _) => {
                        info!(org, install = %a.install, approval = approval_id, component = %a.component, actor, "plan approved for the {}; waits for the {}", side.name(), other.name());
                        format!("approval.{}_approved", side.name())
                    }
                    (Ok(m::Decided::Final), true) => "approval.approved".to_string(),
                    (Ok(m::Decided::Final), false) => "approval.denied".to_string(),
                };
                info!(org, install = %a.install, approval = approval_id, component = %a.component, digest = %a.plan_digest, actor, side = side.name(), "{action}");
                self.store
                    .bus()
                    .audit(&m::AuditEvent {
                        org: org.into(),
                        at: m::now(),
                        actor: actor.into(),
                        action,
                        target: approval_id.into(),
                        detail: serde_json::json!({ "install": a.install, "component": a.component, "plan_digest": a.plan_digest, "reason": a.reason, "for": side.name() }),
                    })
                    .await?;
                if a.status == m::ApprovalStatus::Pending {
                    return Ok(());
                }
                a
            }
            _ => a,
        };
        // Decided (now or before): tell the scheduler (again, harmlessly, on a redelivery).
        self.store
            .bus()
            .control(&Control::ApprovalDecided {
                org: org.into(),
                approval_id: approval_id.into(),
                workflow_id: decided.workflow_id.clone(),
                step: decided.step,
                approved: decided.status == m::ApprovalStatus::Approved,
            })
            .await?;
        Ok(())
    }
}
