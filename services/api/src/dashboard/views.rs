//! The dashboard's pages for operating a fleet day to day (beside `pages.rs`, which has the
//! pages for following one deploy): the approvals inbox, a release with its waves, the audit
//! record, and the parts of other pages that act (deciding a plan with a reason, retrying or
//! skipping a failed step, an install's history with its rollback).

use ferry_model::api::{AuditEntry, AuditQuery, HistoryEntry};
use ferry_model::{self as m, Approval, Release, Workflow};
use maud::{Markup, html};

use super::Session;
use super::pages::{Plan, layout, name};

/// The forms that decide one waiting plan: approve, and deny behind a confirmation with a
/// reason and what the denial does. `back` is the page to come back to.
pub fn decision(s: &Session, wf: &str, a: &Approval, back: &str) -> Markup {
    let may = s.may::<m::ops::ApproveWorkflow>();
    let why = format!(
        "A {} token cannot decide on plans: an operator's can (and the install's customer's, \
         where it approves them)",
        s.caller.role.name()
    );
    let off = (!may).then_some(why.as_str());
    html! {
        form.inline method="post" action={ "/ui/workflows/" (wf) "/decide" } {
            input type="hidden" name="csrf" value=(s.csrf);
            input type="hidden" name="step" value=(a.step);
            input type="hidden" name="back" value=(back);
            input type="hidden" name="decision" value="approve";
            button type="submit" class="approve" data-decision="approve" disabled[!may] title=[off] { "approve " (a.component) }
        }
        // Said beside the disabled buttons too: a tooltip shows on no touch screen.
        @if let Some(why) = off { span.why { (why) } }
        details.deny {
            summary data-decision="deny" { "deny " (a.component) "…" }
            form method="post" action={ "/ui/workflows/" (wf) "/decide" } {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="step" value=(a.step);
                input type="hidden" name="back" value=(back);
                input type="hidden" name="decision" value="deny";
                label { "Why " input type="text" name="reason" maxlength=(m::MAX_REASON) placeholder="what is wrong with this plan"; }
                label { "Then "
                    select name="on_deny" {
                        option value="fail" { "fail the workflow" }
                        option value="skip_current" { "skip this apply, go on" }
                        option value="skip_dependents" { "skip this apply and what depends on it, go on" }
                    }
                }
                label { input type="checkbox" name="confirm" value="yes" required; " I mean to deny this plan" }
                button type="submit" class="deny" data-decision="deny" disabled[!may] title=[off] { "deny " (a.component) }
            }
        }
    }
}

/// A waiting plan's changes.
pub(super) fn plan(a: &Approval, plan: &Plan) -> Markup {
    html! {
        @match plan {
            Plan::Changes(changes) => pre.plan { (changes) },
            Plan::Log(lines) => {
                p { "The plan as its job printed it (" a href={ "/ui/jobs/" (a.plan_job) } { "whole log" } "):" }
                pre.plan { @for l in lines { (l) "\n" } }
            },
        }
    }
}

/// Every plan waiting for a decision, across installs, oldest first.
pub fn approvals(s: &Session, waiting: &[(Approval, Plan)]) -> Markup {
    layout(
        "Approvals",
        Some(s),
        html! {
            h1 { "Approvals" }
            @if waiting.is_empty() { p #no-approvals { "No plan waits for a decision." } }
            @for (a, p) in waiting {
                section.approval data-install=(a.install) data-step=(a.step) {
                    h2 { (a.component) " on " a href={ "/ui/installs/" (a.install) } { (a.install) } }
                    p { "Waiting since " (a.created_at) " · "
                        a.mono href={ "/ui/workflows/" (a.workflow_id) } { (a.workflow_id) } " · " (a.plan_summary) }
                    (plan(a, p))
                    (decision(s, &a.workflow_id, a, "/ui/approvals"))
                }
            }
        },
    )
}

/// How long a step took (or has run), as people read it.
pub fn took(st: &m::Step) -> String {
    let start = st.started_at.as_deref().and_then(m::ms_of);
    let end = st
        .finished_at
        .as_deref()
        .and_then(m::ms_of)
        .or_else(|| start.map(|_| m::now_ms()));
    match (start, end) {
        (Some(a), Some(b)) => {
            let d = std::time::Duration::from_millis(b.saturating_sub(a));
            if d.as_secs() >= 60 {
                format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
            } else {
                format!("{:.1}s", d.as_secs_f64())
            }
        }
        _ => String::new(),
    }
}

/// A failed or cancelled step of an ended workflow: retry from it, or skip it and go on.
pub fn respond(s: &Session, wf: &Workflow, st: &m::Step) -> Markup {
    let ended = wf.status.is_terminal() && wf.status != m::WorkflowStatus::Succeeded;
    let failed = matches!(st.status, m::StepStatus::Failed | m::StepStatus::Cancelled);
    let may = s.may::<m::ops::RetryWorkflow>();
    html! {
        @if ended && failed && may {
            @for action in ["retry", "skip"] {
                form.inline method="post" action={ "/ui/workflows/" (wf.id) "/respond" } {
                    input type="hidden" name="csrf" value=(s.csrf);
                    input type="hidden" name="step" value=(st.index);
                    input type="hidden" name="action" value=(action);
                    button type="submit" class=(action) data-respond=(action) { (action) }
                }
            }
        }
    }
}

/// An install's history, with the rollback to the config it ran before.
pub fn history(s: &Session, install: &m::Install, history: &[HistoryEntry]) -> Markup {
    let target = HistoryEntry::rollback_target(history, &install.app_config_id);
    let may = s.may::<m::ops::DeployInstall>();
    html! {
        h2 { "History" }
        @if let (Some(config), true) = (target, may) {
            form.inline #rollback method="post" action={ "/ui/installs/" (install.name) "/rollback" } {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="config" value=(config);
                label { input type="checkbox" name="confirm" value="yes" required; " deploy config " span.mono { (config) } " again" }
                button type="submit" data-rollback=(config) { "Roll back" }
            }
        }
        table #history {
            thead { tr { th { "Started" } th { "Kind" } th { "Config" } th { "Result" } th { "By" } th { "Workflow" } } }
            tbody {
                @for h in history {
                    tr {
                        td { (h.created_at) }
                        td { (h.kind.label()) }
                        td.mono { (h.app_config_id) }
                        td { span class={ "badge " (h.status) } { (h.status) } }
                        td { (h.by) }
                        td { a.mono href={ "/ui/workflows/" (h.workflow_id) } { (h.workflow_id) } }
                    }
                }
            }
        }
    }
}

/// One release: its waves and each install's deploy, and the buttons that pause, resume and
/// cancel it.
pub fn release(s: &Session, r: &Release) -> Markup {
    let may = s.may::<m::ops::PauseRelease>();
    let actions: &[&str] = match r.status {
        m::ReleaseStatus::Running => &["pause", "cancel"],
        m::ReleaseStatus::Paused | m::ReleaseStatus::Halted => &["resume", "cancel"],
        _ => &[],
    };
    layout(
        &format!("Release {}", r.id),
        Some(s),
        html! {
            h1 { "Release " span.mono { (r.id) } }
            p { "App " (r.app) " · config " span.mono { (r.config_id) } " · "
                span #release-status class={ "badge " (name(&r.status)) } { (name(&r.status)) } }
            @if let Some(why) = &r.reason { p.problem { (why) } }
            @if may {
                @for action in actions {
                    form.inline method="post" action={ "/ui/releases/" (r.id) "/" (action) } {
                        input type="hidden" name="csrf" value=(s.csrf);
                        button type="submit" data-release-action=(action) { (action) }
                    }
                }
            }
            @for (i, w) in r.waves.iter().enumerate() {
                @let passed = w.targets.iter().filter(|t| name(&t.status) == "succeeded").count();
                h2 { "Wave " (i + 1) " · " (passed) "/" (w.targets.len()) " deployed"
                    @if w.passed_ms.is_some() { " · passed" } @else if w.started_ms.is_some() { " · in progress" } }
                table.wave data-wave=(i + 1) {
                    thead { tr { th { "Install" } th { "Status" } th { "Deploy" } th { "Health" } th { "Message" } } }
                    tbody {
                        @for t in &w.targets {
                            tr {
                                td { a href={ "/ui/installs/" (t.install) } { (t.install) } }
                                td { span class={ "badge " (name(&t.status)) } { (name(&t.status)) } }
                                td { @if let Some(d) = &t.deploy { a.mono href={ "/ui/workflows/" (d) } { (d) } } }
                                td { @if let Some(h) = &t.health { a.mono href={ "/ui/workflows/" (h) } { (h) } } }
                                td { (t.message.as_deref().unwrap_or("")) }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// The audit record, newest first, with its filters.
pub fn audit(s: &Session, q: &AuditQuery, entries: &[AuditEntry]) -> Markup {
    let v = |o: &Option<String>| o.clone().unwrap_or_default();
    layout(
        "Audit",
        Some(s),
        html! {
            h1 { "Audit" }
            form #audit-filter method="get" action="/ui/audit" {
                label { "Install " input type="text" name="install" value=(v(&q.install)); }
                label { "Actor " input type="text" name="actor" value=(v(&q.actor)); }
                label { "Action " input type="text" name="action" value=(v(&q.action)) placeholder="install, approval.denied"; }
                button type="submit" { "Filter" }
            }
            table #audit {
                thead { tr { th { "When" } th { "Actor" } th { "Action" } th { "Target" } th { "Detail" } } }
                tbody {
                    @for e in entries {
                        tr {
                            td { (e.event.at) }
                            td { (e.event.actor) }
                            td.mono { (e.event.action) }
                            td.mono { (e.event.target) }
                            td.mono { (e.event.detail) }
                        }
                    }
                    @if entries.is_empty() { tr { td colspan="5" { "No records match." } } }
                }
            }
        },
    )
}
