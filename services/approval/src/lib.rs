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
                        } => {
                            s.handle(&org, &approval_id, Some((approved, actor.as_str())))
                                .await
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

    /// Decides an approval: by a person's `response`, or by the install's approve-all. A pending
    /// approval neither covers waits.
    async fn handle(
        &self,
        org: &str,
        approval_id: &str,
        response: Option<(bool, &str)>,
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
                let (approved, actor) = match response {
                    Some(r) => r,
                    None => {
                        let install = self
                            .store
                            .repo::<m::Install>()
                            .require(org, &a.install)
                            .await?
                            .value;
                        let by_workflow = !install.approve_all
                            && self
                                .store
                                .repo::<m::Workflow>()
                                .get(org, &a.workflow_id)
                                .await?
                                .is_some_and(|w| w.value.approve_all);
                        if !install.approve_all && !by_workflow {
                            info!(org, install = %a.install, approval = approval_id, component = %a.component, "plan waits for a decision");
                            return Ok(());
                        }
                        (true, APPROVE_ALL_ACTOR)
                    }
                };
                // From the copy just read: a decision made since costs a lost swap, no more.
                let r = approvals
                    .modify_from(Some(read), org, approval_id, |a| {
                        Ok::<bool, ()>(a.decide(approved, actor, m::Timestamp::now()).is_ok())
                    })
                    .await?;
                let a = r.map(|v| v.value).unwrap_or(a);
                let outcome = if approved { "approved" } else { "denied" };
                info!(org, install = %a.install, approval = approval_id, component = %a.component, digest = %a.plan_digest, actor, "plan {outcome}");
                self.store
                    .bus()
                    .audit(&m::AuditEvent {
                        org: org.into(),
                        at: m::now(),
                        actor: actor.into(),
                        action: format!("approval.{outcome}"),
                        target: approval_id.into(),
                        detail: serde_json::json!({ "install": a.install, "component": a.component, "plan_digest": a.plan_digest, "reason": a.reason }),
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
