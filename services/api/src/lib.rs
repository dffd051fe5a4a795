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
mod audit;
mod auth;
pub mod bootstrap;
pub mod callout;
mod dashboard;
mod error;
mod events;
mod handlers;
mod history;
mod ids;
mod installs;
mod jobs;
mod logs;
mod reach;
mod readme;
mod releases;
pub mod roles;
mod runners;
pub mod stacks;
pub use stacks::StackBucket;
pub mod streams;
mod workflows;

use axum::Router;
use ferry_model::ops::Operation as _;
use ferry_store::Store;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

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
    /// Event streams open now, within their caps (`streams.rs`).
    pub streams: std::sync::Arc<streams::OpenStreams>,
    /// The process's one reading of the `EVENTS` stream, shared by every open event stream.
    pub feed: ferry_store::events::EventFeed,
    /// The tasks that follow logs for open responses; stopping waits for them.
    pub tasks: ferry_store::Tasks,
    /// Where install stack templates are published for customers (`ferry-server
    /// --stack-bucket`); `None`: not configured.
    pub stack_bucket: Option<std::sync::Arc<dyn stacks::StackBucket>>,
    /// The installs the caller reaches (`reach.rs`): all of the org's unless its token is bound.
    pub scope: ferry_model::TokenScope,
    /// The caller's role (a customer decides plans for the customer).
    pub role: ferry_model::Role,
}

impl ApiState {
    /// This state as `caller` acts in it: its org, its name as the actor, the installs it reaches.
    pub(crate) fn for_caller(&self, caller: &auth::Caller) -> ApiState {
        ApiState {
            org: caller.org.clone(),
            actor: format!("token:{}", caller.name),
            scope: caller.scope.clone(),
            role: caller.role,
            ..self.clone()
        }
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The description of the API: its info and the bearer token every `/v1` route but
/// `/v1/bootstrap` and `/v1/openapi.json` asks for; the paths come from the handlers'
/// annotations as they are routed (`api_routes`).
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Ferry Control API",
        description = "Apps, installs, workflows, jobs, approvals, releases and runners of the caller's org. \
            Every route but /v1/bootstrap and /v1/openapi.json needs an API token (`Authorization: Bearer ferry_...`); \
            its role decides what it may do.",
    ),
    modifiers(&BearerToken),
    security(("token" = [])),
    tags(
        (name = "apps", description = "App packages and their config versions"),
        (name = "installs", description = "Installs of an app and the workflows that change them"),
        (name = "actions", description = "Actions run inside an install, and break-glass roles"),
        (name = "workflows", description = "Workflows, their steps, and decisions on plans"),
        (name = "jobs", description = "Jobs, their plans and logs"),
        (name = "events", description = "Live changes as Server-Sent Events"),
        (name = "releases", description = "Config versions rolled out in waves"),
        (name = "runners", description = "Runners, their health, tokens and certificates"),
        (name = "tokens", description = "API tokens of the org"),
        (name = "audit", description = "The org's audit record: who did what, when"),
    )
)]
struct ApiDoc;

struct BearerToken;

impl utoipa::Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API token: `ferry tokens create`"))
                    .build(),
            ),
        );
    }
}

/// Every `/v1` route that needs a token, each routed and described from the same annotation
/// (utoipa-axum): a route cannot be served without being described.
fn api_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::with_openapi(<ApiDoc as utoipa::OpenApi>::openapi())
        .routes(routes!(handlers::list_apps))
        .routes(routes!(handlers::get_app))
        .routes(routes!(handlers::get_config))
        .routes(routes!(handlers::app_fleet))
        .routes(routes!(handlers::sync_app))
        .routes(routes!(installs::list_installs, installs::create_install))
        .routes(routes!(installs::get_install, installs::delete_install))
        .routes(routes!(installs::deploy_install))
        .routes(routes!(installs::reprovision_install))
        .routes(routes!(installs::teardown_install))
        .routes(routes!(installs::update_inputs))
        .routes(routes!(installs::set_labels))
        .routes(routes!(installs::drift_check))
        .routes(routes!(
            stacks::install_stack,
            stacks::publish_install_stack
        ))
        .routes(routes!(readme::install_readme))
        .routes(routes!(readme::install_portal_readme))
        .routes(routes!(audit::install_audit))
        .routes(routes!(history::install_history))
        .routes(routes!(audit::list_audit))
        .routes(routes!(bootstrap::runner_token))
        .routes(routes!(bootstrap::revoke))
        .routes(routes!(installs::set_approve_all))
        .routes(routes!(installs::set_approvals))
        .routes(routes!(actions::list_actions))
        .routes(routes!(actions::run_action))
        .routes(routes!(actions::grant_break_glass))
        .routes(routes!(actions::revoke_break_glass))
        .routes(routes!(installs::run_runbook))
        .routes(routes!(releases::list_releases, releases::create_release))
        .routes(routes!(releases::get_release))
        .routes(routes!(releases::pause_release))
        .routes(routes!(releases::resume_release))
        .routes(routes!(releases::cancel_release))
        .routes(routes!(workflows::list_workflows))
        .routes(routes!(workflows::get_workflow))
        .routes(routes!(workflows::cancel_workflow))
        .routes(routes!(workflows::approve_workflow))
        .routes(routes!(workflows::deny_workflow))
        .routes(routes!(workflows::retry_workflow))
        .routes(routes!(workflows::skip_workflow))
        .routes(routes!(workflows::list_approvals))
        .routes(routes!(runners::list_runners))
        .routes(routes!(jobs::get_job))
        .routes(routes!(jobs::cancel_job))
        .routes(routes!(jobs::job_plan))
        .routes(routes!(logs::job_logs))
        .routes(routes!(logs::job_log_events))
        .routes(routes!(events::events))
        .routes(routes!(auth::list_tokens, auth::create_token))
        .routes(routes!(auth::revoke_token))
}

/// The routes that need no API token: a runner's bootstrap (its one-time token is the
/// credential) and the description itself.
fn open_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(bootstrap::bootstrap))
        .routes(routes!(openapi_json))
}

/// The API's OpenAPI 3.1 description: every route `router` serves under `/v1`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, mut doc) = api_routes().split_for_parts();
    let (_, open) = open_routes().split_for_parts();
    doc.merge(open);
    doc
}

/// The description, for people and tools that script against the API.
#[utoipa::path(
    get,
    path = ferry_model::ops::OpenApiDocument::PATH,
    tag = "apps",
    security(()),
    responses((status = 200, description = "This API's OpenAPI 3.1 description", body = Object))
)]
async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    static DOC: std::sync::OnceLock<utoipa::openapi::OpenApi> = std::sync::OnceLock::new();
    axum::Json(DOC.get_or_init(openapi).clone())
}

/// The API's routes and the dashboard's, to be served by `ferry-server` beside `/healthz` and
/// `/metrics`.
pub fn router(store: Store, issuer: Option<bootstrap::Issuer>) -> Router {
    router_with(
        store,
        issuer,
        streams::StreamCaps::default(),
        ferry_store::Tasks::default(),
        None,
    )
}

/// [`router`] with the operator's caps on open event streams, its tasks owned by `tasks`, and
/// the bucket install stacks are published to.
pub fn router_with(
    store: Store,
    issuer: Option<bootstrap::Issuer>,
    caps: streams::StreamCaps,
    tasks: ferry_store::Tasks,
    stack_bucket: Option<std::sync::Arc<dyn stacks::StackBucket>>,
) -> Router {
    // The org and actor here are never used: `auth::Ctx` replaces both with the caller's.
    let state = ApiState {
        feed: ferry_store::events::EventFeed::new(store.clone()),
        store,
        org: String::new(),
        actor: String::new(),
        issuer,
        streams: std::sync::Arc::new(streams::OpenStreams::new(caps)),
        tasks,
        stack_bucket,
        scope: Default::default(),
        role: ferry_model::Role::Viewer,
    };
    let (open, _) = open_routes().split_for_parts();
    let (api, _) = api_routes().split_for_parts();
    api.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_token,
    ))
    // Packages are capped at 32 MiB by the CLI; leave room for the bundle's framing.
    .layer(axum::extract::DefaultBodyLimit::max(40 * 1024 * 1024))
    .merge(open)
    .layer(axum::middleware::map_response(error::rejections_as_json))
    .with_state(state.clone())
    .merge(dashboard::router(state))
}

#[cfg(test)]
mod tests {
    /// Every API route goes through `api_routes` or `open_routes`, which describe what they
    /// route: a `/v1` route added any other way (`Router::route`) would be served but missing
    /// from the description, and fails here.
    #[test]
    fn no_api_route_bypasses_the_description() {
        let sources = [
            ("lib.rs", include_str!("lib.rs")),
            ("dashboard/mod.rs", include_str!("dashboard/mod.rs")),
        ];
        for (file, text) in sources {
            let text = text.split("#[cfg(test)]").next().unwrap_or(text);
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                assert!(
                    !(code.contains(".route(") && code.contains("\"/v1")),
                    "{file}:{}: a /v1 route outside routes!(): {line}",
                    n + 1
                );
            }
        }
    }

    /// The handlers `api_routes` and `open_routes` route, as their source names them.
    fn routed_handlers() -> usize {
        let text = include_str!("lib.rs");
        let text = text.split("#[cfg(test)]").next().unwrap_or(text);
        text.split("routes!(")
            .skip(1)
            .map(|rest| rest.split(')').next().unwrap_or("").split(',').count())
            .sum()
    }

    /// Every operation that takes a token describes its refusals, one shared declaration
    /// (`error::Refusals`): 401 and 403, each with the error body.
    #[test]
    fn every_operation_behind_a_token_describes_its_refusals_once() {
        let doc = super::openapi();
        let json = serde_json::to_value(&doc).unwrap();
        let mut checked = 0;
        for (path, item) in json["paths"].as_object().unwrap() {
            if path == "/v1/bootstrap" || path == "/v1/openapi.json" {
                continue;
            }
            for (method, op) in item.as_object().unwrap() {
                for (status, said) in [
                    ("401", "No valid token"),
                    ("403", "The token's role may not"),
                ] {
                    let r = &op["responses"][status];
                    assert_eq!(r["description"], said, "{method} {path} {status}");
                    assert_eq!(
                        r["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/ErrorBody",
                        "{method} {path} {status}"
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 40, "{checked}");
        let pasted = include_str!("installs.rs").matches("status = 403").count();
        assert_eq!(
            pasted, 0,
            "a route pastes the refusals instead of sharing them"
        );
    }

    #[test]
    fn every_routed_operation_is_described_with_its_responses() {
        let doc = super::openapi();
        let mut operations = 0;
        for (path, item) in &doc.paths.paths {
            for op in [&item.get, &item.post, &item.delete].into_iter().flatten() {
                operations += 1;
                assert!(
                    !op.responses.responses.is_empty(),
                    "{path} has an operation without responses"
                );
                assert!(op.tags.is_some(), "{path} has an untagged operation");
            }
        }
        assert_eq!(
            operations,
            routed_handlers(),
            "one operation per routed handler"
        );
    }
}
