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
        let decided = match read.value.status {
            m::ApprovalStatus::Pending => match self.respond(org, read, response).await? {
                Some(a) => a,
                None => return Ok(()),
            },
            _ => read.value,
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

    /// Who decides pending approval `a` now, and how: the person's response, or approve-all
    /// for the vendor; `None` when nothing decides it yet.
    async fn who_decides<'a>(
        &self,
        org: &str,
        a: &m::Approval,
        install: &m::Install,
        response: Option<(bool, &'a str, bool)>,
    ) -> Result<Option<(bool, &'a str, m::Side)>, ApprovalError> {
        if let Some((approved, actor, by_customer)) = response {
            let side = if by_customer {
                m::Side::Customer
            } else {
                m::Side::Vendor
            };
            return Ok(Some((approved, actor, side)));
        }
        let by_workflow = !install.approve_all
            && self
                .store
                .repo::<m::Workflow>()
                .get(org, &a.workflow_id)
                .await?
                .is_some_and(|w| w.value.approve_all);
        if (!install.approve_all && !by_workflow) || !install.approvals_by.includes(m::Side::Vendor)
        {
            info!(org, install = %a.install, approval = %a.id, component = %a.component, approvals_by = install.approvals_by.name(), "plan waits for a decision");
            return Ok(None);
        }
        Ok(Some((true, APPROVE_ALL_ACTOR, m::Side::Vendor)))
    }

    /// Records a response to the pending approval `read` and audits it; the approval once
    /// decided (`None`: it still waits, or the response was refused).
    async fn respond(
        &self,
        org: &str,
        read: ferry_store::Versioned<m::Approval>,
        response: Option<(bool, &str, bool)>,
    ) -> Result<Option<m::Approval>, ApprovalError> {
        let a = read.value.clone();
        let install = self
            .store
            .repo::<m::Install>()
            .require(org, &a.install)
            .await?
            .value;
        let policy = install.approvals_by;
        let Some((approved, actor, side)) = self.who_decides(org, &a, &install, response).await?
        else {
            return Ok(None);
        };
        // From the copy just read: a decision made since costs a lost swap, no more.
        let mut outcome = Err(String::new());
        let r = self
            .store
            .repo::<m::Approval>()
            .modify_from(Some(read), org, &a.id, |a| {
                outcome = a.respond(side, approved, actor, policy, m::Timestamp::now());
                Ok::<bool, ()>(outcome.is_ok())
            })
            .await?;
        let a = r.map(|v| v.value).unwrap_or(a);
        let action = match (&outcome, approved) {
            (Err(why), _) => {
                warn!(org, approval = %a.id, actor, side = side.name(), reason = %why, "decision refused");
                return Ok(None);
            }
            (Ok(m::Decided::Waiting(_)), _) => format!("approval.{}_approved", side.name()),
            (Ok(m::Decided::Final), true) => "approval.approved".to_string(),
            (Ok(m::Decided::Final), false) => "approval.denied".to_string(),
        };
        info!(org, install = %a.install, approval = %a.id, component = %a.component, digest = %a.plan_digest, actor, side = side.name(), "{action}");
        self.store
            .bus()
            .audit(&m::AuditEvent {
                org: org.into(),
                at: m::now(),
                actor: actor.into(),
                action,
                target: a.id.clone(),
                detail: serde_json::json!({ "install": a.install, "component": a.component, "plan_digest": a.plan_digest, "reason": a.reason, "for": side.name() }),
            })
            .await?;
        Ok((a.status != m::ApprovalStatus::Pending).then_some(a))
    }
}
