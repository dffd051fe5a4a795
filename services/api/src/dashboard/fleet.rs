//! The dashboard's routes for operating a fleet: the approvals inbox, a release's page and its
//! pause/resume/cancel, the audit page, and the forms that act on a workflow (decide with a
//! reason, retry, skip) or an install (roll back). Each calls the API's own handler, so it
//! acts with the signed-in token's role exactly as the API would.

use axum::extract::Query;
use axum::response::{IntoResponse, Redirect, Response};
use ferry_model::{self as m, api::AuditQuery};

use super::{Session, failed, forbidden, pages, views};
use crate::ApiError;
use crate::auth::same;
use crate::ids::Name;

/// Refusal as a page when the token's role may not make API operation `O`.
pub(super) fn refused_unless<O: m::ops::Operation>(s: &Session, what: &str) -> Option<Response> {
    if s.may::<O>() {
        return None;
    }
    let why = format!(
        "a {} token cannot {what}: sign in with one that may",
        s.caller.role.name()
    );
    Some((axum::http::StatusCode::FORBIDDEN, pages::error(&why)).into_response())
}

/// Every plan waiting, oldest first, each with what it changes.
pub(super) async fn approvals(s: Session) -> Response {
    let filter = m::api::ApprovalFilter { install: None };
    let mut list = match crate::workflows::list_approvals(s.ctx(), Query(filter)).await {
        Ok(a) => a.0,
        Err(e) => return failed(e),
    };
    list.retain(|a| a.status == m::ApprovalStatus::Pending);
    list.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    let mut waiting = Vec::new();
    for a in list {
        let plan = super::plan_of(&s, &a.plan_job).await;
        waiting.push((a, plan));
    }
    views::approvals(&s, &waiting).into_response()
}

/// The installs with a plan waiting for a decision (the installs page marks them).
pub(super) async fn waiting_installs(s: &Session) -> std::collections::BTreeSet<String> {
    let filter = m::api::ApprovalFilter { install: None };
    match crate::workflows::list_approvals(s.ctx(), Query(filter)).await {
        Ok(a) => {
            a.0.into_iter()
                .filter(|a| a.status == m::ApprovalStatus::Pending)
                .map(|a| a.install)
                .collect()
        }
        Err(_) => Default::default(),
    }
}

#[derive(serde::Deserialize)]
pub(super) struct DecideForm {
    csrf: String,
    step: String,
    /// `approve` or `deny`.
    decision: String,
    /// Deny: why.
    #[serde(default)]
    reason: Option<String>,
    /// Deny: `fail`, `skip_current` or `skip_dependents`.
    #[serde(default)]
    on_deny: Option<String>,
    /// Deny: the box that says it is meant.
    #[serde(default)]
    confirm: Option<String>,
    /// The page to come back to (one of the dashboard's own).
    #[serde(default)]
    back: Option<String>,
}

pub(super) async fn decide(
    s: Session,
    Name(id): Name,
    axum::Form(f): axum::Form<DecideForm>,
) -> Response {
    if !same(&s.csrf, &f.csrf) {
        return forbidden();
    }
    let approve = match f.decision.as_str() {
        "approve" => true,
        "deny" => false,
        _ => return failed(ApiError::BadRequest("decide `approve` or `deny`".into())),
    };
    let refused = match approve {
        true => refused_unless::<m::ops::ApproveWorkflow>(&s, "decide on plans"),
        false => refused_unless::<m::ops::DenyWorkflow>(&s, "decide on plans"),
    };
    if let Some(r) = refused {
        return r;
    }
    if !approve && f.confirm.as_deref() != Some("yes") {
        return failed(ApiError::BadRequest(
            "a denial needs its confirmation box ticked".into(),
        ));
    }
    let on_deny = match f.on_deny.as_deref() {
        None | Some("fail") => m::OnDeny::Fail,
        Some("skip_current") => m::OnDeny::SkipCurrent,
        Some("skip_dependents") => m::OnDeny::SkipDependents,
        Some(other) => return failed(ApiError::BadRequest(format!("on_deny `{other}`"))),
    };
    let body = axum::Json(m::api::Decision {
        step: Some(f.step),
        all: false,
        on_deny,
        reason: f.reason.filter(|_| !approve),
    });
    let r = match approve {
        true => crate::workflows::approve_workflow(s.ctx(), Name(id.clone()), body).await,
        false => crate::workflows::deny_workflow(s.ctx(), Name(id.clone()), body).await,
    };
    // Back only to one of the dashboard's own pages.
    let back = f
        .back
        .filter(|b| b.starts_with("/ui/") && !b.contains("//"))
        .unwrap_or_else(|| format!("/ui/workflows/{id}"));
    match r {
        Ok(_) => Redirect::to(&back).into_response(),
        Err(e) => failed(e),
    }
}

#[derive(serde::Deserialize)]
pub(super) struct RespondForm {
    csrf: String,
    step: String,
    /// `retry` or `skip`.
    action: String,
}

/// Retry a failed workflow from a step, or skip the step and go on.
pub(super) async fn respond(
    s: Session,
    Name(id): Name,
    axum::Form(f): axum::Form<RespondForm>,
) -> Response {
    if !same(&s.csrf, &f.csrf) {
        return forbidden();
    }
    if let Some(r) = refused_unless::<m::ops::RetryWorkflow>(&s, "retry or skip steps") {
        return r;
    }
    let body = axum::Json(m::api::StepRef { step: f.step });
    let r = match f.action.as_str() {
        "retry" => crate::workflows::retry_workflow(s.ctx(), Name(id.clone()), body).await,
        "skip" => crate::workflows::skip_workflow(s.ctx(), Name(id.clone()), body).await,
        _ => return failed(ApiError::BadRequest("`retry` or `skip`".into())),
    };
    match r {
        Ok(_) => Redirect::to(&format!("/ui/workflows/{id}")).into_response(),
        Err(e) => failed(e),
    }
}

#[derive(serde::Deserialize)]
pub(super) struct RollbackForm {
    csrf: String,
    config: String,
    #[serde(default)]
    confirm: Option<String>,
}

/// Deploys the config version the install ran before (a rollback), as `installs rollback`.
pub(super) async fn rollback(
    s: Session,
    Name(name): Name,
    axum::Form(f): axum::Form<RollbackForm>,
) -> Response {
    if !same(&s.csrf, &f.csrf) {
        return forbidden();
    }
    if let Some(r) = refused_unless::<m::ops::DeployInstall>(&s, "deploy") {
        return r;
    }
    if f.confirm.as_deref() != Some("yes") {
        return failed(ApiError::BadRequest(
            "a rollback needs its confirmation box ticked".into(),
        ));
    }
    let scope = m::DeployScope {
        config: Some(f.config),
        ..Default::default()
    };
    match crate::installs::deploy_install(s.ctx(), Name(name), Some(axum::Json(scope))).await {
        Ok((_, d)) => Redirect::to(&format!("/ui/workflows/{}", d.0.workflow_id)).into_response(),
        Err(e) => failed(e),
    }
}

pub(super) async fn release(s: Session, Name(id): Name) -> Response {
    match crate::releases::get_release(s.ctx(), Name(id)).await {
        Ok(r) => views::release(&s, &r.0).into_response(),
        Err(e) => failed(e),
    }
}

#[derive(serde::Deserialize)]
pub(super) struct CsrfOnly {
    csrf: String,
}

/// Pause, resume or cancel a release.
pub(super) async fn release_action(
    s: Session,
    axum::extract::Path((id, action)): axum::extract::Path<(String, String)>,
    axum::Form(f): axum::Form<CsrfOnly>,
) -> Response {
    if !same(&s.csrf, &f.csrf) {
        return forbidden();
    }
    if let Some(r) = refused_unless::<m::ops::PauseRelease>(&s, "change a release") {
        return r;
    }
    if let Err(e) = crate::ids::check_filter("release", Some(&id)) {
        return failed(e);
    }
    let r = match action.as_str() {
        "pause" => crate::releases::pause_release(s.ctx(), Name(id.clone())).await,
        "resume" => crate::releases::resume_release(s.ctx(), Name(id.clone())).await,
        "cancel" => crate::releases::cancel_release(s.ctx(), Name(id.clone())).await,
        _ => return failed(ApiError::NotFound(format!("no release action `{action}`"))),
    };
    match r {
        Ok(_) => Redirect::to(&format!("/ui/releases/{id}")).into_response(),
        Err(e) => failed(e),
    }
}

/// The newest records shown, at most.
const AUDIT_SHOWN: usize = 200;

/// The audit record (admin), newest first: the last [`AUDIT_SHOWN`] records that match.
pub(super) async fn audit(s: Session, Query(mut q): Query<AuditQuery>) -> Response {
    if let Some(r) = refused_unless::<m::ops::ListAudit>(&s, "read the audit record") {
        return r;
    }
    for v in [&mut q.install, &mut q.actor, &mut q.action] {
        if v.as_deref().is_some_and(|t| t.trim().is_empty()) {
            *v = None;
        }
    }
    // Without a start, the last week: a page view never reads the whole history.
    if q.since.is_none() && q.after.is_none() {
        q.since = Some(m::format_ms(
            m::now_ms().saturating_sub(7 * 24 * 3600 * 1000),
        ));
    }
    let shown = q.clone();
    let mut all: Vec<m::api::AuditEntry> = Vec::new();
    loop {
        let page = match crate::audit::list_audit(s.ctx(), Query(q.clone())).await {
            Ok(p) => p.0,
            Err(e) => return failed(e),
        };
        all.extend(page.entries);
        if all.len() > AUDIT_SHOWN {
            all.drain(..all.len() - AUDIT_SHOWN);
        }
        if !page.more {
            break;
        }
        q.after = Some(page.next);
        q.since = None;
    }
    all.reverse();
    views::audit(&s, &shown, &all).into_response()
}
