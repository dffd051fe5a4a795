//! The approval service: plan review gates. It takes approval requests, decides the ones an
//! approve-all rule covers, and tells the scheduler. An approval binds to its plan's digest (the
//! scheduler hands exactly those bytes to the apply).
//!
//! Manual decisions (approve, deny, deny-and-skip), policies and stale-plan expiry build on this
//! record in a later issue; until then a plan not covered by approve-all waits.

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
                    let Control::ApprovalRequested { org, approval_id } = c else {
                        return Handled::Done;
                    };
                    match s.handle(&org, &approval_id).await {
                        Ok(()) => Handled::Done,
                        Err(e) => Handled::Retry(e.to_string()),
                    }
                }
            },
        )
        .await?;
        Ok(())
    }

    async fn handle(&self, org: &str, approval_id: &str) -> Result<(), ApprovalError> {
        let approvals = self.store.repo::<m::Approval>();
        let Some(a) = approvals.get(org, approval_id).await? else {
            warn!(
                org,
                approval = approval_id,
                "approval request for an unknown approval"
            );
            return Ok(());
        };
        let a = a.value;
        let decided = match a.status {
            m::ApprovalStatus::Pending => {
                let install = self
                    .store
                    .repo::<m::Install>()
                    .require(org, &a.install)
                    .await?
                    .value;
                if !install.approve_all {
                    info!(org, install = %a.install, approval = approval_id, component = %a.component, "plan waits for a decision");
                    return Ok(());
                }
                let r = approvals
                    .modify(org, approval_id, |a| {
                        if a.status != m::ApprovalStatus::Pending {
                            return Ok::<bool, ()>(false);
                        }
                        a.status = m::ApprovalStatus::Approved;
                        a.decided_by = Some(APPROVE_ALL_ACTOR.into());
                        a.decided_at = Some(m::now());
                        Ok(true)
                    })
                    .await?;
                let a = r.unwrap_or(a);
                info!(org, install = %a.install, approval = approval_id, component = %a.component, digest = %a.plan_digest, "plan approved by approve-all");
                self.store
                    .bus()
                    .audit(&m::AuditEvent {
                        org: org.into(),
                        at: m::now(),
                        actor: APPROVE_ALL_ACTOR.into(),
                        action: "approval.approved".into(),
                        target: approval_id.into(),
                        detail: serde_json::json!({ "install": a.install, "component": a.component, "plan_digest": a.plan_digest }),
                    })
                    .await?;
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
