//! Which role of the customer's account each job runs as: least privilege per operation.
//!
//! Each step that runs a plugin in the account serves one operation: the sandbox's plan and
//! apply provision it (reprovision it, in any workflow but the install's provisioning), a
//! component's plan and apply deploy, a component's teardown tears down, the sandbox's
//! deprovisions, an action step is a trigger. The role, first found of:
//!
//! 1. an action's `break_glass_role` (the runner holds it to a live grant), then its step's
//!    `role`, then its own `role`;
//! 2. the component's (or the sandbox's) own `operation_roles`;
//! 3. a rule of `operation_roles.toml` for the principal, then one for `*` of its kind;
//! 4. the app's role of the operation's use: provision and reprovision the provision role,
//!    deploys and triggers the maintenance role, teardowns and deprovision the deprovision role.
//!
//! An app that declares no such role runs the job with no role ([`run_as`] gives `None`).

use ferry_model::{self as m, Step, StepKind, WorkflowKind};
use ferry_protocol::messages::RunAs;
use serde_json::Value;

use crate::{AppConfig, CloudRole, RoleUse};

/// What a job does in the customer's account, as `operation_roles` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Provision,
    Reprovision,
    Deploy,
    Teardown,
    Deprovision,
    Trigger,
}

impl Operation {
    pub fn name(self) -> &'static str {
        match self {
            Operation::Provision => "provision",
            Operation::Reprovision => "reprovision",
            Operation::Deploy => "deploy",
            Operation::Teardown => "teardown",
            Operation::Deprovision => "deprovision",
            Operation::Trigger => "trigger",
        }
    }

    /// The kind of role serving it where no rule names one.
    pub fn default_use(self) -> RoleUse {
        match self {
            Operation::Provision | Operation::Reprovision => RoleUse::Provision,
            Operation::Deploy | Operation::Trigger => RoleUse::Maintenance,
            Operation::Teardown | Operation::Deprovision => RoleUse::Deprovision,
        }
    }

    /// The operation of `step` in a workflow of `kind`; `None` for steps that run nothing in
    /// the account as a plugin (builds, syncs, approvals).
    pub fn of_step(kind: WorkflowKind, step: &Step) -> Option<Operation> {
        let sandbox = step.component == m::SANDBOX;
        Some(match step.kind {
            StepKind::Plan | StepKind::Apply if sandbox && kind == WorkflowKind::Provision => {
                Operation::Provision
            }
            StepKind::Plan | StepKind::Apply if sandbox => Operation::Reprovision,
            StepKind::Plan | StepKind::Apply => Operation::Deploy,
            StepKind::Teardown if sandbox => Operation::Deprovision,
            StepKind::Teardown => Operation::Teardown,
            StepKind::Action => Operation::Trigger,
            StepKind::Build | StepKind::Sync | StepKind::Approve => return None,
        })
    }
}

/// The principal `operation_roles` names for a component, the sandbox or an action.
pub fn principal(kind: StepKind, name: &str) -> String {
    match (kind, name) {
        (StepKind::Action, _) => format!("nuon::action:{name}"),
        (_, m::SANDBOX) => "nuon::sandbox".into(),
        _ => format!("nuon::component:{name}"),
    }
}

/// The declared role `principal` uses for `op` (steps 2 to 4 of the module's order).
pub fn role_for<'a>(cfg: &'a AppConfig, principal: &str, op: Operation) -> Option<&'a CloudRole> {
    let deployable = match principal.strip_prefix("nuon::component:") {
        Some(name) => cfg.component(name),
        None if principal == "nuon::sandbox" => cfg.sandbox.as_ref(),
        None => None,
    };
    let own = deployable.and_then(|c| {
        c.operation_roles
            .iter()
            .find(|(o, _)| o == op.name())
            .map(|(_, role)| role.as_str())
    });
    let wildcard = principal
        .rsplit_once(':')
        .map(|(kind, _)| format!("{kind}:*"));
    let rule = |p: &str| {
        cfg.operation_roles
            .iter()
            .find(|r| r.principal == p && r.operation == op.name())
            .map(|r| r.role.as_str())
    };
    let named = own
        .or_else(|| rule(principal))
        .or_else(|| wildcard.as_deref().and_then(rule));
    match named {
        Some(name) => cfg.roles.iter().find(|c| c.name == name),
        None => cfg
            .roles
            .iter()
            .find(|c| c.used_for == op.default_use() && c.cloud == "aws"),
    }
}

/// What a job of `principal` for `op` runs as, its role's name rendered against the install's
/// template state; `named` (an action's break-glass role, or its step's `role`) comes first.
pub fn run_as(
    cfg: &AppConfig,
    state: &Value,
    principal: &str,
    op: Operation,
    named: Option<&str>,
) -> Result<Option<RunAs>, String> {
    let role = match named {
        Some(name) => match cfg.roles.iter().find(|c| c.name == name) {
            Some(r) => Some(r),
            // Validation warned: the job names it, and a runner in a stack refuses it.
            None => return undeclared(name, state, op).map(Some),
        },
        None => role_for(cfg, principal, op),
    };
    let Some(role) = role else {
        return Ok(None);
    };
    let name = crate::template::render(&role.name, state)
        .map_err(|e| format!("cannot render the name of role `{}`: {e}", role.name))?;
    Ok(Some(RunAs {
        output: Some(role.used_for.output_key(&name)),
        role: name,
        operation: op.name().into(),
        break_glass: role.used_for == RoleUse::BreakGlass,
    }))
}

/// A role named but not declared: no stack output holds its ARN.
fn undeclared(name: &str, state: &Value, op: Operation) -> Result<RunAs, String> {
    Ok(RunAs {
        role: crate::template::render(name, state)
            .map_err(|e| format!("cannot render the name of role `{name}`: {e}"))?,
        operation: op.name().into(),
        output: None,
        break_glass: false,
    })
}
