//! The Control API: REST/JSON over HTTP for the CLI and the dashboard.
//!
//! Handlers validate input, write records of intent (app config versions, installs, workflow records)
//! with compare-and-swap, and publish requests on the `CONTROL` stream; they never call another
//! service directly. Every request carries a bearer token; everything it does is scoped to the
//! token's org, and its role decides what it may do (see `auth.rs`).
//!
//! Routes (all JSON unless noted):
//! * `POST /v1/apps/{app}/configs` — body: a package bundle (`application/octet-stream`); stores a new
//!   config version if anything changed.
//! * `GET /v1/apps`, `GET /v1/apps/{app}`
//! * `POST /v1/installs`, `GET /v1/installs`, `GET /v1/installs/{name}`, `POST /v1/installs/{name}/deploy`
//! * `GET /v1/workflows/{id}`, `GET /v1/jobs/{id}`
//! * `GET /v1/jobs/{id}/logs[?follow=true]` — JSON lines (`application/x-ndjson`); with `follow`, the
//!   response stays open until the job has finished and every line has been sent.
//! * `GET /v1/jobs/{id}/log[?follow=true]` — the same as Server-Sent Events, resumable with
//!   `Last-Event-ID` (`logs.rs`)
//! * `GET /v1/events[?install=&workflow=&kinds=]` — the org's record changes as Server-Sent
//!   Events, resumable with `Last-Event-ID` (`events.rs`)
//! * installs: `…/deploy`, `…/reprovision`, `…/teardown`, `…/inputs`, `…/labels`, `…/approve-all`, `DELETE`
//! * workflows: `GET /v1/workflows`, `…/{id}/cancel | approve | deny | retry | skip`;
//!   `GET /v1/approvals`, `GET /v1/runners`, `POST /v1/jobs/{id}/cancel`, `GET /v1/jobs/{id}/plan`
//! * `GET | POST /v1/tokens`, `DELETE /v1/tokens/{id}` (admin)
//! * `POST /v1/installs/{name}/revoke` (admin): revokes the install's runner certificates and
//!   closes their connections
//! * `POST /v1/installs/{name}/runner-token` (admin): a one-time token for a runner;
//!   `POST /v1/bootstrap` (no API token: the runner's one-time token is the credential) trades it
//!   and a CSR for the install's certificate (`bootstrap.rs`)
//!
//! * `/` and `/ui/…` — the web dashboard (`dashboard/`), signed in with a token in a cookie
//!
//! Beside the routes, `callout::serve` is the hub's NATS auth callout: it decides which install
//! a connecting runner is, from its certificate.

mod actions;
mod auth;
pub mod bootstrap;
pub mod callout;
mod dashboard;
mod error;
mod events;
mod handlers;
mod ids;
mod installs;
mod jobs;
mod logs;
mod releases;
mod runners;
mod workflows;

use axum::Router;
use axum::routing::{get, post};
use ferry_store::Store;

pub use auth::mint;
pub use error::ApiError;

#[derive(Clone)]
pub struct ApiState {
    pub store: Store,
    /// The org requests act in: the caller's (see `auth::Ctx`).
    pub org: String,
    /// Who acts, as audit records and steps name it (`token:<name>`).
    pub actor: String,
    /// Issues runners' certificates at bootstrap; `None` without a CA.
    pub issuer: Option<bootstrap::Issuer>,
}

/// Seconds since the Unix epoch.
pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The API's routes, to be served by `ferry-server` beside `/healthz` and `/metrics`.
pub fn router(store: Store, issuer: Option<bootstrap::Issuer>) -> Router {
    // The org and actor here are never used: `auth::Ctx` replaces both with the caller's.
    let state = ApiState {
        store,
        org: String::new(),
        actor: String::new(),
        issuer,
    };
    let open = Router::new()
        .route("/v1/bootstrap", post(bootstrap::bootstrap))
        .with_state(state.clone())
        .merge(dashboard::router(state.clone()));
    Router::new()
        .route("/v1/apps", get(handlers::list_apps))
        .route("/v1/apps/{app}", get(handlers::get_app))
        .route("/v1/apps/{app}/fleet", get(handlers::app_fleet))
        .route("/v1/apps/{app}/configs", post(handlers::sync_app))
        .route(
            "/v1/installs",
            get(installs::list_installs).post(installs::create_install),
        )
        .route(
            "/v1/installs/{name}",
            get(installs::get_install).delete(installs::delete_install),
        )
        .route("/v1/installs/{name}/deploy", post(installs::deploy_install))
        .route(
            "/v1/installs/{name}/reprovision",
            post(installs::reprovision_install),
        )
        .route(
            "/v1/installs/{name}/teardown",
            post(installs::teardown_install),
        )
        .route("/v1/installs/{name}/inputs", post(installs::update_inputs))
        .route("/v1/installs/{name}/labels", post(installs::set_labels))
        .route(
            "/v1/installs/{name}/drift-check",
            post(installs::drift_check),
        )
        .route(
            "/v1/installs/{name}/runner-token",
            post(bootstrap::runner_token),
        )
        .route("/v1/installs/{name}/revoke", post(bootstrap::revoke))
        .route(
            "/v1/installs/{name}/approve-all",
            post(installs::set_approve_all),
        )
        .route("/v1/installs/{name}/actions", get(actions::list_actions))
        .route(
            "/v1/installs/{name}/actions/{action}/runs",
            post(actions::run_action),
        )
        .route(
            "/v1/installs/{name}/break-glass",
            post(actions::grant_break_glass),
        )
        .route(
            "/v1/installs/{name}/break-glass/{role}",
            axum::routing::delete(actions::revoke_break_glass),
        )
        .route(
            "/v1/installs/{name}/runbooks/{runbook}/runs",
            post(installs::run_runbook),
        )
        .route(
            "/v1/releases",
            get(releases::list_releases).post(releases::create_release),
        )
        .route("/v1/releases/{id}", get(releases::get_release))
        .route("/v1/releases/{id}/pause", post(releases::pause_release))
        .route("/v1/releases/{id}/resume", post(releases::resume_release))
        .route("/v1/releases/{id}/cancel", post(releases::cancel_release))
        .route("/v1/workflows", get(workflows::list_workflows))
        .route("/v1/workflows/{id}", get(workflows::get_workflow))
        .route(
            "/v1/workflows/{id}/cancel",
            post(workflows::cancel_workflow),
        )
        .route(
            "/v1/workflows/{id}/approve",
            post(workflows::approve_workflow),
        )
        .route("/v1/workflows/{id}/deny", post(workflows::deny_workflow))
        .route("/v1/workflows/{id}/retry", post(workflows::retry_workflow))
        .route("/v1/workflows/{id}/skip", post(workflows::skip_workflow))
        .route("/v1/approvals", get(workflows::list_approvals))
        .route("/v1/runners", get(runners::list_runners))
        .route("/v1/jobs/{id}", get(jobs::get_job))
        .route("/v1/jobs/{id}/cancel", post(jobs::cancel_job))
        .route("/v1/jobs/{id}/plan", get(jobs::job_plan))
        .route("/v1/jobs/{id}/logs", get(logs::job_logs))
        .route("/v1/jobs/{id}/log", get(logs::job_log_events))
        .route("/v1/events", get(events::events))
        .route(
            "/v1/tokens",
            get(auth::list_tokens).post(auth::create_token),
        )
        .route("/v1/tokens/{id}", axum::routing::delete(auth::revoke_token))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        // Packages are capped at 32 MiB by the CLI; leave room for the bundle's framing.
        .layer(axum::extract::DefaultBodyLimit::max(40 * 1024 * 1024))
        .with_state(state)
        .merge(open)
}
