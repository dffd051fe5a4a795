//! The customer's side of an install's page — what Nuon calls the customer portal — shown to
//! every token that reads the install, with the forms only a customer token may use: the app's
//! `CUSTOMER_PORTAL_README.md` rendered for the install; who approves its plans; break-glass (the
//! roles its actions may ask for, the requests waiting — an action that failed for want of its
//! role — the live grants, and the forms that grant for a while and revoke); and the install's
//! audit trail. Each part calls the API's own handler, so a customer sees here exactly what its
//! token reads through the API, and nothing of another install (`reach.rs`).

use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Redirect, Response};
use ferry_model::{self as m, api::AuditEntry, api::AuditQuery};
use maud::{Markup, html};

use super::{Session, failed, forbidden};
use crate::ApiError;
use crate::auth::same;
use crate::ids::Name;

/// How many of the install's newest audit records the page shows.
const TRAIL: usize = 50;

/// What the portal part of an install's page shows.
pub(super) struct Portal {
    readme: m::api::Readme,
    actions: Vec<m::api::ActionInfo>,
    trail: Vec<AuditEntry>,
    runners: Vec<m::api::RunnerInfo>,
}

/// Reads the portal's parts for install `name` through the API's handlers.
pub(super) async fn load(s: &Session, name: &str) -> Result<Portal, ApiError> {
    let readme = crate::readme::install_portal_readme(s.ctx(), Name(name.into())).await?;
    let actions = crate::actions::list_actions(s.ctx(), Name(name.into())).await?;
    let only = m::api::RunnerFilter {
        install: Some(name.into()),
    };
    let runners = crate::runners::list_runners(s.ctx(), Query(only)).await?;
    // Oldest first, a page at a time: the newest are the last pages' (bounded: a long-lived
    // install's full record is for `ferry audit --install`).
    let mut trail = Vec::new();
    let mut q = AuditQuery::default();
    for _ in 0..20 {
        let page =
            crate::audit::install_audit(s.ctx(), Name(name.into()), Query(q.clone())).await?;
        trail.extend(page.0.entries);
        if trail.len() > TRAIL {
            trail.drain(..trail.len() - TRAIL);
        }
        if !page.0.more {
            break;
        }
        q.after = Some(page.0.next);
    }
    trail.reverse();
    Ok(Portal {
        readme: readme.0,
        actions: actions.0,
        trail,
        runners: runners.0,
    })
}

/// The portal's sections of install `i`'s page.
pub(super) fn view(s: &Session, i: &m::Install, p: &Portal) -> Markup {
    html! {
        @if !p.readme.markdown.is_empty() {
            h2 { "For the customer" }
            @if let Some(w) = &p.readme.warning {
                p.warning { "Shown as written: it did not render (" (w) ")." }
            }
            // Markdown as HTML; the vendor's own HTML in it is shown as text (`markdown.rs`).
            div #portal-readme .markdown { (maud::PreEscaped(super::markdown::to_html(&p.readme.markdown))) }
        }
        p #approvals-by { "Plans are approved by "
            strong { (match i.approvals_by {
                m::ApprovalsBy::Vendor => "the vendor",
                m::ApprovalsBy::Customer => "the customer",
                m::ApprovalsBy::Both => "the vendor and the customer",
            }) } "." }
        (runner(&p.runners))
        (break_glass(s, i, &p.actions))
        h2 { "Audit trail" }
        table #audit-trail {
            thead { tr { th { "When" } th { "Who" } th { "What" } th { "Target" } } }
            tbody {
                @for e in &p.trail {
                    tr { td { (e.event.at) } td.mono { (e.event.actor) } td.mono { (e.event.action) }
                        td.mono { (e.event.target) } }
                }
            }
        }
    }
}

/// The install's runners as they last reported, and how the customer pauses them: on the host
/// or through the install stack, never from here (the control plane is the vendor's; a pause
/// the customer's own host keeps cannot be lifted by it).
fn runner(runners: &[m::api::RunnerInfo]) -> Markup {
    html! {
        h2 { "Runner" }
        @if runners.is_empty() {
            p #runner { "No runner has reported yet: launch the install stack (above)." }
        }
        @for r in runners {
            @let health = m::health_name(Some(r.health));
            p.runner data-runner=(r.runner.id) { "Runner " span.mono { (r.runner.id) } " "
                span class={ "badge " (health) } { (health) }
                " · version " (r.runner.version) " · last heard from " (r.last_seen) }
        }
        p { "To stop it taking jobs, pause it on its host (" code { "ferry-runner pause" } ", then "
            code { "ferry-runner resume" } ") or set the install stack's " code { "RunnerPaused" }
            " parameter to " code { "true" } ". Only you can lift either." }
    }
}

/// Break-glass: roles, requests, grants, and (for a customer token) the forms.
fn break_glass(s: &Session, i: &m::Install, actions: &[m::api::ActionInfo]) -> Markup {
    let mut roles: Vec<&str> = actions
        .iter()
        .filter_map(|a| a.break_glass_role.as_deref())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    let now = m::now_ms();
    let requests = m::api::break_glass_requests(actions, i, now);
    let may = s.may::<m::ops::GrantBreakGlassOp>();
    html! {
        @if !roles.is_empty() {
            h2 { "Break-glass" }
            @for r in &requests {
                p.problem.request data-role=(r.role) { "Action " strong { (r.action) } " asks for role "
                    span.mono { (r.role) } ": its run "
                    a.mono href={ "/ui/workflows/" (r.workflow) } { (r.workflow) }
                    " failed without it (" (r.failed_at) ")." }
            }
            table #break-glass {
                thead { tr { th { "Role" } th { "Needed by" } th { "Granted" } th {} } }
                tbody {
                    @for role in &roles {
                        @let grant = i.break_glass.get(*role).filter(|g| g.until_ms > now);
                        tr data-role=(role) {
                            td.mono { (role) }
                            td { (actions.iter().filter(|a| a.break_glass_role.as_deref() == Some(*role))
                                .map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")) }
                            td.grant { @match grant {
                                Some(g) => { "until " (m::format_ms(g.until_ms)) " by " (g.by) }
                                None => { "no" }
                            } }
                            td { @if may {
                                @if grant.is_some() {
                                    form.inline method="post" action={ "/ui/installs/" (i.name) "/break-glass/" (role) "/revoke" } {
                                        input type="hidden" name="csrf" value=(s.csrf);
                                        button.deny type="submit" { "Revoke" }
                                    }
                                } @else {
                                    form.inline method="post" action={ "/ui/installs/" (i.name) "/break-glass" } {
                                        input type="hidden" name="csrf" value=(s.csrf);
                                        input type="hidden" name="role" value=(role);
                                        select name="minutes" aria-label="for how long" {
                                            option value="15" { "15 minutes" }
                                            option value="60" selected { "1 hour" }
                                            option value="240" { "4 hours" }
                                            option value="1440" { "1 day" }
                                        }
                                        button.approve type="submit" { "Grant" }
                                    }
                                }
                            } }
                        }
                    }
                }
            }
            @if !may { p { "Only the install's customer grants these roles (a customer token)." } }
        }
    }
}

#[derive(serde::Deserialize)]
pub(super) struct GrantForm {
    csrf: String,
    role: String,
    minutes: u64,
}

/// Grants a break-glass role for the chosen time, as `ferry break-glass grant`.
pub(super) async fn grant(
    s: Session,
    Name(name): Name,
    axum::Form(f): axum::Form<GrantForm>,
) -> Response {
    if !same(&s.csrf, &f.csrf) {
        return forbidden();
    }
    if let Some(r) =
        super::fleet::refused_unless::<m::ops::GrantBreakGlassOp>(&s, "grant break-glass roles")
    {
        return r;
    }
    let body = m::api::GrantBreakGlass {
        role: f.role,
        for_secs: f.minutes.saturating_mul(60),
    };
    let to = format!("/ui/installs/{name}");
    match crate::actions::grant_break_glass(s.ctx(), Name(name), axum::Json(body)).await {
        Ok(_) => Redirect::to(&to).into_response(),
        Err(e) => failed(e),
    }
}

#[derive(serde::Deserialize)]
pub(super) struct CsrfOnly {
    csrf: String,
}

/// Ends a break-glass grant before its time.
pub(super) async fn revoke(
    s: Session,
    Path((name, role)): Path<(String, String)>,
    axum::Form(f): axum::Form<CsrfOnly>,
) -> Response {
    if !same(&s.csrf, &f.csrf) {
        return forbidden();
    }
    if let Some(r) =
        super::fleet::refused_unless::<m::ops::RevokeBreakGlass>(&s, "revoke break-glass roles")
    {
        return r;
    }
    let to = format!("/ui/installs/{name}");
    match crate::actions::revoke_break_glass(s.ctx(), Path((name, role))).await {
        Ok(_) => Redirect::to(&to).into_response(),
        Err(e) => failed(e),
    }
}
