//! The web dashboard `ferry-server` serves at `/`: server-rendered pages (`pages.rs`, with
//! maud, which escapes every value it prints) over the API's own handlers (it reads no record
//! of the store itself: what it shows is what the operations of `ferry_model::ops` answer; it
//! asks the store only for the events stream's position its live script resumes from, and
//! keeps its sessions in it), and one small
//! script (`dashboard.js`) that follows the API's Server-Sent Events for live workflows and
//! logs. No build step: the script and the style sheet are compiled into the binary.
//!
//! Sign-in takes an API token and starts a session (`session.rs`): the `HttpOnly`,
//! `SameSite=Strict` cookie holds the session's secret, never the token, and signing out ends
//! it. Every page acts with the token's org and role, exactly as the API does for a bearer
//! token (the handlers are the API's). Every form carries a CSRF token: for a signed-in session
//! it is derived from the session's secret (an attacker's page can neither read the cookie nor
//! compute it); the sign-in form gets a random one, also held in a cookie. Pages are served
//! with a Content-Security-Policy that allows only this origin's script and style.

mod fleet;
mod markdown;
mod pages;
mod portal;
mod session;
mod views;

use axum::Router;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use cookie::{Cookie, SameSite};
use ferry_model as m;
use sha2::{Digest, Sha256};

use crate::auth::{Caller, Ctx, same};
use crate::ids::Name;
use crate::{ApiError, ApiState};

const SESSION: &str = "ferry_session";
const LOGIN_NONCE: &str = "ferry_login";

/// A signed-in request: the API state scoped to the token's org, who the caller is, and the
/// CSRF token its forms must carry.
pub(crate) struct Session {
    state: ApiState,
    caller: Caller,
    csrf: String,
}

impl Session {
    fn ctx(&self) -> Ctx {
        Ctx(self.state.clone())
    }

    /// Whether the caller's role may make API operation `O` (a viewer may not approve): the
    /// role the operation declares, as the API checks it.
    fn may<O: m::ops::Operation>(&self) -> bool {
        O::ROLE.is_some_and(|r| self.caller.role.allows(r))
            || O::ALSO.is_some_and(|r| self.caller.role.allows(r))
    }
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_string())
}

/// The CSRF token of a session: not the secret, not guessable without it.
fn csrf_of(token: &str) -> String {
    hex::encode(Sha256::digest(format!("ferry-dashboard-csrf:{token}")))
}

impl FromRequestParts<ApiState> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Response> {
        let to_login = || Redirect::to("/ui/login").into_response();
        let token = cookie_value(&parts.headers, SESSION).ok_or_else(to_login)?;
        let caller = session::resolve(state, &token).await.ok_or_else(to_login)?;
        let state = state.for_caller(&caller);
        crate::reach::guard(&state, parts).await.map_err(failed)?;
        Ok(Session {
            state,
            csrf: csrf_of(&token),
            caller,
        })
    }
}

/// The dashboard's routes (pages, forms, live streams, static files).
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui/installs") }))
        .route("/ui/login", get(login_page).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/installs", get(installs))
        .route("/ui/installs/{name}", get(install))
        .route("/ui/workflows/{id}", get(workflow))
        .route("/ui/workflows/{id}/decide", post(fleet::decide))
        .route("/ui/workflows/{id}/respond", post(fleet::respond))
        .route("/ui/installs/{name}/rollback", post(fleet::rollback))
        .route("/ui/installs/{name}/break-glass", post(portal::grant))
        .route(
            "/ui/installs/{name}/break-glass/{role}/revoke",
            post(portal::revoke),
        )
        .route("/ui/approvals", get(fleet::approvals))
        .route("/ui/releases/{id}", get(fleet::release))
        .route("/ui/releases/{id}/{action}", post(fleet::release_action))
        .route("/ui/audit", get(fleet::audit))
        .route("/ui/jobs/{id}", get(job))
        .route("/ui/releases", get(releases))
        .route("/ui/events", get(events))
        .route("/ui/jobs/{id}/log", get(job_log))
        .route("/ui/static/dashboard.js", get(script))
        .route("/ui/static/dashboard.css", get(style))
        .layer(axum::middleware::map_response(secure_headers))
        .with_state(state)
}

async fn secure_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    r
}

fn set_cookie(c: Cookie<'static>) -> (header::HeaderName, String) {
    (header::SET_COOKIE, c.to_string())
}

/// A cookie only Ferry's pages get, and no script reads; `Secure` (sent over HTTPS only) when
/// the request came through a TLS-terminating proxy that says so.
fn session_cookie(headers: &HeaderMap, name: &'static str, value: String) -> Cookie<'static> {
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"));
    Cookie::build((name, value))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(https)
        .path("/")
        .build()
}

async fn login_page(headers: HeaderMap) -> Response {
    let nonce = cookie_value(&headers, LOGIN_NONCE).unwrap_or_else(new_nonce);
    sign_in_form(&headers, StatusCode::OK, nonce, None)
}

fn new_nonce() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    hex::encode(b)
}

/// The sign-in page, with `nonce` both in its form and in the cookie the form is checked against.
fn sign_in_form(
    headers: &HeaderMap,
    status: StatusCode,
    nonce: String,
    problem: Option<&str>,
) -> Response {
    let page = pages::login(&nonce, problem);
    let cookie = set_cookie(session_cookie(headers, LOGIN_NONCE, nonce));
    (status, [cookie], page).into_response()
}

#[derive(serde::Deserialize)]
struct LoginForm {
    token: String,
    csrf: String,
}

async fn login(
    State(state): State<ApiState>,
    headers: HeaderMap,
    axum::Form(f): axum::Form<LoginForm>,
) -> Response {
    let nonce = cookie_value(&headers, LOGIN_NONCE).unwrap_or_default();
    if nonce.is_empty() || !same(&nonce, &f.csrf) {
        // A form from elsewhere, or an old one: a fresh form to sign in with.
        let why = Some("The form expired: sign in again.");
        return sign_in_form(&headers, StatusCode::FORBIDDEN, new_nonce(), why);
    }
    let token = f.token.trim().to_string();
    match crate::auth::resolve(&state, &token).await {
        Ok(caller) => match session::start(&state, &caller).await {
            Ok(cookie) => (
                [set_cookie(session_cookie(&headers, SESSION, cookie))],
                Redirect::to("/ui/installs"),
            )
                .into_response(),
            Err(e) => failed(e),
        },
        Err(_) => {
            let why = Some("That token is not valid (or was revoked).");
            sign_in_form(&headers, StatusCode::UNAUTHORIZED, nonce, why)
        }
    }
}

#[derive(serde::Deserialize)]
struct CsrfForm {
    csrf: String,
}

async fn logout(s: Session, headers: HeaderMap, axum::Form(f): axum::Form<CsrfForm>) -> Response {
    if !same(&s.csrf, &f.csrf) {
        return forbidden();
    }
    if let Some(cookie) = cookie_value(&headers, SESSION)
        && let Err(e) = session::end(&s.state, &cookie).await
    {
        return failed(e);
    }
    let mut gone = session_cookie(&headers, SESSION, String::new());
    gone.make_removal();
    ([set_cookie(gone)], Redirect::to("/ui/login")).into_response()
}

pub(super) fn forbidden() -> Response {
    (
        StatusCode::FORBIDDEN,
        "the form's CSRF token is missing or wrong",
    )
        .into_response()
}

/// An API error as a page, with the status the API gives it.
pub(super) fn failed(e: ApiError) -> Response {
    let msg = e.to_string();
    let status = e.into_response().status();
    (status, pages::error(&msg)).into_response()
}

async fn installs(s: Session) -> Response {
    let list = crate::installs::list_installs(s.ctx(), Query(m::InstallQuery::default())).await;
    let runners =
        crate::runners::list_runners(s.ctx(), Query(m::api::RunnerFilter { install: None })).await;
    let (list, runners) = match (list, runners) {
        (Ok(list), Ok(runners)) => (list.0, runners.0),
        (Err(e), _) | (_, Err(e)) => return failed(e),
    };
    let versions = config_versions(&s, list.iter().map(|i| i.app_config_id.as_str())).await;
    let waiting = fleet::waiting_installs(&s).await;
    pages::installs(&s, &list, &runners, &versions, &waiting).into_response()
}

/// The version number of each config id named (what `ferry apps sync` printed).
async fn config_versions<'a>(
    s: &Session,
    ids: impl Iterator<Item = &'a str>,
) -> std::collections::BTreeMap<String, u32> {
    let mut out = std::collections::BTreeMap::new();
    for id in ids {
        if out.contains_key(id) {
            continue;
        }
        if let Ok(v) = crate::handlers::get_config(s.ctx(), Name(id.to_string())).await {
            out.insert(id.to_string(), v.0.version);
        }
    }
    out
}

async fn install(s: Session, name: Name) -> Response {
    let i = match crate::installs::get_install(s.ctx(), name).await {
        Ok(i) => i.0,
        Err(e) => return failed(e),
    };
    let readme = match crate::readme::install_readme(s.ctx(), Name(i.name.clone())).await {
        Ok(r) => r.0,
        Err(e) => return failed(e),
    };
    let history = match crate::history::history(&s.state, &i).await {
        Ok(h) => h,
        Err(e) => return failed(e),
    };
    let filter = m::api::WorkflowFilter {
        install: Some(i.name.clone()),
        kind: None,
        action: None,
    };
    let portal = match portal::load(&s, &i.name).await {
        Ok(p) => portal::view(&s, &i, &p),
        Err(e) => return failed(e),
    };
    match crate::workflows::list_workflows(s.ctx(), Query(filter)).await {
        Ok(wfs) => pages::install(&s, &i, &readme, &history, &wfs.0, portal).into_response(),
        Err(e) => failed(e),
    }
}

async fn workflow(s: Session, Name(id): Name) -> Response {
    // Before the workflow is read: its page's script follows the changes after this position.
    let since = match s.state.store.events_position().await {
        Ok(p) => p,
        Err(e) => return failed(e.into()),
    };
    let wf = match crate::workflows::get_workflow(s.ctx(), Name(id)).await {
        Ok(wf) => wf.0,
        Err(e) => return failed(e),
    };
    let filter = m::api::ApprovalFilter {
        install: Some(wf.install.clone()),
    };
    let approvals = match crate::workflows::list_approvals(s.ctx(), Query(filter)).await {
        Ok(a) => a.0,
        Err(e) => return failed(e),
    };
    let mut waiting = Vec::new();
    for a in approvals.into_iter().filter(|a| a.workflow_id == wf.id) {
        let plan = plan_of(&s, &a.plan_job).await;
        waiting.push((a, plan));
    }
    pages::workflow(&s, &wf, &waiting, since).into_response()
}

/// The end of a script's plan log shown in place of its changes.
const PLAN_LOG_LINES: usize = 60;

/// What a plan changes, as a reviewer reads it: the structured plan's changes (Terraform's),
/// else the end of the plan job's log (a script's plan is what it printed).
pub(super) async fn plan_of(s: &Session, plan_job: &str) -> pages::Plan {
    let structured = crate::jobs::plan_of(&s.state, plan_job)
        .await
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    if let Some(p) = structured {
        return pages::Plan::Changes(m::plan_changes(&p));
    }
    let Ok(job) = crate::jobs::job_of(&s.state, plan_job).await else {
        return pages::Plan::Log(vec![]);
    };
    let lines = crate::logs::entries(&s.state, &job, Some(PLAN_LOG_LINES))
        .await
        .unwrap_or_default();
    pages::Plan::Log(lines.into_iter().map(|l| l.text).collect())
}

async fn job(s: Session, Name(id): Name) -> Response {
    let j = match crate::jobs::get_job(s.ctx(), Name(id.clone())).await {
        Ok(j) => j.0,
        Err(e) => return failed(e),
    };
    let lines = crate::logs::entries(&s.state, &j, None)
        .await
        .unwrap_or_default();
    pages::job(&s, &j, &lines).into_response()
}

async fn releases(s: Session) -> Response {
    match crate::releases::list_releases(s.ctx()).await {
        Ok(r) => pages::releases(&s, &r.0).into_response(),
        Err(e) => failed(e),
    }
}

/// The org's events for the page's script: the API's `/v1/events`, signed in by cookie (a
/// browser's `EventSource` sends no `Authorization` header).
async fn events(s: Session, headers: HeaderMap, q: Query<m::api::EventsQuery>) -> Response {
    match crate::events::events(s.ctx(), headers, q).await {
        Ok(sse) => sse.into_response(),
        Err(e) => e.into_response(),
    }
}

/// A job's log for the page's script: the API's `/v1/jobs/{id}/log`, signed in by cookie.
async fn job_log(
    s: Session,
    id: Name,
    headers: HeaderMap,
    q: Query<m::api::LogEventsQuery>,
) -> Response {
    match crate::logs::job_log_events(s.ctx(), id, headers, q).await {
        Ok(sse) => sse.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("dashboard.js"),
    )
        .into_response()
}

async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("dashboard.css"),
    )
        .into_response()
}
