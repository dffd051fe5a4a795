//! Install routes: create (reserving the install for its first workflow in the same write), get
//! and list (sensitive values redacted), approve-all, and every workflow started on an existing
//! install — deploy (with a scope), reprovision, teardown, input updates — through one
//! reserve-then-start path; delete.
//!
//! Long (about 700 lines) because each of its twelve routes carries its OpenAPI description
//! (`#[utoipa::path]`) beside it; the logic itself is the one path above.

use ferry_model::api::DeleteOptions;
use ferry_model::ops::Operation as _;
use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use ferry_model::api::{CreateInstall, CreatedInstall, Deployed};
use ferry_model::{self as m, App, Install, Workflow};
use ferry_protocol::Control;
use ferry_store::StoreError;
use tracing::info;

use crate::auth::Ctx;
use crate::handlers::{audit, check_name};
use crate::ids::Name;
use crate::{ApiError, ApiState};

/// Checks input values against the config's declarations; returns the config.
async fn check_inputs(
    s: &ApiState,
    config_id: &str,
    inputs: &BTreeMap<String, String>,
) -> Result<ferry_appconfig::AppConfig, ApiError> {
    if let Some(why) = Install::inputs_too_large(inputs) {
        return Err(ApiError::TooLarge(why));
    }
    let (_, _, cfg) = s.store.config(&s.org, config_id).await?;
    cfg.check_inputs(inputs).map_err(ApiError::BadRequest)?;
    Ok(cfg)
}

/// The inputs the config declares sensitive: the install records them, and the API never shows
/// their values.
fn sensitive_inputs(cfg: &ferry_appconfig::AppConfig) -> Vec<String> {
    cfg.inputs
        .iter()
        .filter(|i| i.sensitive)
        .map(|i| i.name.clone())
        .collect()
}

/// Records a new workflow and its open mark, without starting it: the caller reserves the install
/// for it first, then [`request_workflow`] starts it. A workflow that loses the reservation is
/// [`discard_workflow`]ed and never runs (the scheduler also refuses to start a workflow its
/// install does not point to).
async fn new_workflow(
    s: &ApiState,
    install: &str,
    kind: m::WorkflowKind,
    config_id: &str,
    scope: m::DeployScope,
) -> Result<Workflow, ApiError> {
    let wf = blank_workflow(s, install, kind, config_id, scope);
    record_workflow(s, &wf).await?;
    Ok(wf)
}

/// A workflow not laid out yet (the scheduler lays it out), not recorded yet.
pub(crate) fn blank_workflow(
    s: &ApiState,
    install: &str,
    kind: m::WorkflowKind,
    config_id: &str,
    scope: m::DeployScope,
) -> Workflow {
    let mut wf = Workflow::requested(
        m::new_id(),
        &s.org,
        install,
        kind,
        config_id,
        scope,
        m::Timestamp::now(),
    );
    wf.requested_by = Some(s.actor.clone());
    wf
}

/// Records a workflow and its open mark (see [`new_workflow`]).
pub(crate) async fn record_workflow(s: &ApiState, wf: &Workflow) -> Result<(), ApiError> {
    s.store
        .repo::<m::OpenWorkflow>()
        .create(&wf.open_mark())
        .await?;
    s.store.repo::<Workflow>().create(wf).await?;
    Ok(())
}

pub(crate) async fn request_workflow(s: &ApiState, wf: &Workflow) -> Result<(), ApiError> {
    s.store
        .bus()
        .control(&Control::WorkflowRequested {
            org: s.org.clone(),
            install: wf.install.clone(),
            workflow_id: wf.id.clone(),
        })
        .await?;
    Ok(())
}

async fn discard_workflow(s: &ApiState, wf: &Workflow) -> Result<(), ApiError> {
    s.store.repo::<Workflow>().delete(&wf.org, &wf.id).await?;
    s.store
        .repo::<m::OpenWorkflow>()
        .erase(&wf.org, &wf.id)
        .await?;
    Ok(())
}

/// The caller's install `name`, or 404.
pub(crate) async fn install_of(s: &ApiState, name: &str) -> Result<Install, ApiError> {
    Ok(s.store
        .repo::<Install>()
        .get(&s.org, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?
        .value)
}

#[utoipa::path(
    post,
    path = m::ops::CreateInstallOp::PATH,
    security(("token" = [m::ops::CreateInstallOp::ROLE_NAME])),
    tag = "installs",
    request_body = m::api::CreateInstall,
    responses((status = 201, description = "Created; its provision workflow requested", body = m::api::CreatedInstall), crate::error::Invalid, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn create_install(
    Ctx(s): Ctx,
    Json(req): Json<CreateInstall>,
) -> Result<(StatusCode, Json<CreatedInstall>), ApiError> {
    check_name("install", &req.name)?;
    check_name("app", &req.app)?;
    m::check_labels(&req.labels).map_err(ApiError::BadRequest)?;
    let Some(app) = s.store.repo::<App>().get(&s.org, &req.app).await? else {
        let apps = s.store.repo::<App>().list(&s.org).await?;
        let hint = ferry_appconfig::did_you_mean(&req.app, apps.iter().map(|a| a.name.as_str()));
        return Err(ApiError::NotFound(format!(
            "app `{}` not found{hint}: sync it first (`ferry apps list` shows the org's apps)",
            req.app
        )));
    };
    let config_id = app
        .value
        .latest_config
        .ok_or_else(|| ApiError::Conflict(format!("app `{}` has no config yet", req.app)))?;
    let sensitive_inputs = sensitive_inputs(&check_inputs(&s, &config_id, &req.inputs).await?);
    let wf = new_workflow(
        &s,
        &req.name,
        m::WorkflowKind::Provision,
        &config_id,
        Default::default(),
    )
    .await?;
    let install = Install::created(
        &s.org,
        req,
        &config_id,
        sensitive_inputs,
        &wf.id,
        m::Timestamp::now(),
    );
    // The install is created already reserved for its first workflow, in one write.
    match s.store.repo::<Install>().create(&install).await {
        Ok(_) => {}
        Err(StoreError::AlreadyExists { .. }) => {
            discard_workflow(&s, &wf).await?;
            return Err(ApiError::Conflict(format!(
                "install `{}` already exists",
                install.name
            )));
        }
        Err(e) => return Err(e.into()),
    }
    let runners_managed = s.issuer.as_ref().is_some_and(|i| i.managed_runners);
    let runner_token = match runners_managed {
        true => None,
        false => Some(crate::bootstrap::issue(&s, &install.name).await?),
    };
    request_workflow(&s, &wf).await?;
    let workflow_id = wf.id;
    audit(
        &s,
        "install.created",
        &install.name,
        serde_json::json!({ "app": install.app, "workflow": workflow_id }),
    )
    .await?;
    info!(org = %s.org, install = %install.name, workflow = %workflow_id, "install created");
    Ok((
        StatusCode::CREATED,
        Json(CreatedInstall {
            install: install.redacted(),
            workflow_id,
            runner_token,
            runners_managed,
        }),
    ))
}

/// Installs, by name; the query's filters combine (`ferry_model::InstallQuery`). The org's
/// install records are read in one pass over their bucket (`Repo::scan`), and the runners' only
/// when the query asks about their health.
#[utoipa::path(
    get,
    path = m::ops::ListInstalls::PATH,
    security(("token" = [m::ops::ListInstalls::ROLE_NAME])),
    tag = "installs",
    params(m::InstallQuery),
    responses((status = 200, description = "The org's installs that match every filter", body = Vec<m::Install>), crate::error::Invalid, crate::error::Refusals)
)]
pub async fn list_installs(
    Ctx(s): Ctx,
    axum::extract::Query(q): axum::extract::Query<m::InstallQuery>,
) -> Result<Json<Vec<Install>>, ApiError> {
    crate::ids::check_filter("app", q.app.as_deref())?;
    crate::ids::check_filter("config", q.config.as_deref())?;
    q.check().map_err(ApiError::BadRequest)?;
    let runners = match q.needs_runners() {
        true => s.store.repo::<m::RunnerRecord>().scan(&s.org).await?,
        false => Vec::new(),
    };
    let now = m::Timestamp::now();
    let mut installs = s.store.repo::<Install>().scan(&s.org).await?;
    installs
        .retain(|i| s.scope.covers(i) && q.matches(i, m::install_health(&i.name, &runners, now)));
    installs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(installs.into_iter().map(Install::redacted).collect()))
}

/// Sets and removes an install's labels (`POST /v1/installs/{name}/labels`).
#[utoipa::path(
    post,
    path = m::ops::SetLabelsOp::PATH,
    security(("token" = [m::ops::SetLabelsOp::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    request_body = m::api::SetLabels,
    responses((status = 200, description = "The install with its labels", body = m::Install), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn set_labels(
    Ctx(s): Ctx,
    Name(name): Name,
    Json(req): Json<m::api::SetLabels>,
) -> Result<Json<Install>, ApiError> {
    m::check_labels(&req.set).map_err(ApiError::BadRequest)?;
    let updated = s
        .store
        .repo::<Install>()
        .modify(&s.org, &name, |i| {
            let mut labels = i.labels.clone();
            labels.extend(req.set.clone());
            for k in &req.remove {
                labels.remove(k);
            }
            if labels == i.labels {
                return Ok(false);
            }
            m::check_labels(&labels)?;
            i.labels = labels;
            i.updated_at = m::now();
            Ok(true)
        })
        .await
        .map_err(install_error(&name))?
        .map_err(ApiError::BadRequest)?;
    audit(
        &s,
        "install.labels",
        &name,
        serde_json::json!({ "labels": updated.labels }),
    )
    .await?;
    Ok(Json(updated.redacted()))
}

/// A store error of a change to install `name`: a missing record is the install not found.
fn install_error(name: &str) -> impl Fn(StoreError) -> ApiError + '_ {
    move |e| match e {
        StoreError::NotFound { .. } => ApiError::NotFound(format!("install `{name}` not found")),
        e => e.into(),
    }
}

#[utoipa::path(
    get,
    path = m::ops::GetInstall::PATH,
    security(("token" = [m::ops::GetInstall::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 200, description = "The install (sensitive values redacted)", body = m::Install), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn get_install(Ctx(s): Ctx, Name(name): Name) -> Result<Json<Install>, ApiError> {
    let i = s
        .store
        .repo::<Install>()
        .get(&s.org, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?;
    Ok(Json(i.value.redacted()))
}

/// Switches an install's approve-all on or off. Switched on, the plans of its waiting approvals
/// are released at once (the approval service decides them as approve-all).
#[utoipa::path(
    post,
    path = m::ops::SetApproveAll::PATH,
    security(("token" = [m::ops::SetApproveAll::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    request_body = m::api::ApproveAll,
    responses((status = 200, description = "The install", body = m::Install), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn set_approve_all(
    Ctx(s): Ctx,
    Name(name): Name,
    Json(req): Json<m::api::ApproveAll>,
) -> Result<Json<Install>, ApiError> {
    let install = s
        .store
        .repo::<Install>()
        .modify(&s.org, &name, |i| {
            if i.approve_all == req.enabled {
                return Ok::<bool, ()>(false);
            }
            i.approve_all = req.enabled;
            i.updated_at = m::now();
            Ok(true)
        })
        .await
        .map_err(install_error(&name))?
        .unwrap_or_else(|()| unreachable!("the closure never refuses"));
    if req.enabled {
        let waiting = s.store.repo::<m::Approval>().list(&s.org).await?;
        for a in waiting
            .iter()
            .filter(|a| a.install == name && a.status == m::ApprovalStatus::Pending)
        {
            s.store
                .bus()
                .control(&Control::ApprovalResponse {
                    org: s.org.clone(),
                    approval_id: a.id.clone(),
                    approved: true,
                    actor: "approve-all".into(),
                    by_customer: false,
                })
                .await?;
        }
    }
    audit(
        &s,
        "install.approve_all",
        &name,
        serde_json::json!({ "enabled": req.enabled }),
    )
    .await?;
    Ok(Json(install.redacted()))
}

/// Sets who approves the install's plans (`ferry installs approvals I vendor|customer|both`):
/// the vendor with an operator's token, the customer with a customer token; a side's say is taken
/// away only by that side (`ApprovalsBy::refuses_change`). Plans waiting now are decided under
/// the new rule.
#[utoipa::path(
    post,
    path = m::ops::SetApprovalsOp::PATH,
    security(("token" = [m::ops::SetApprovalsOp::ROLE_NAME, m::ops::SetApprovalsOp::ALSO_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    request_body = m::api::SetApprovals,
    responses((status = 200, description = "The install", body = m::Install), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn set_approvals(
    Ctx(s): Ctx,
    Name(name): Name,
    Json(req): Json<m::api::SetApprovals>,
) -> Result<Json<Install>, ApiError> {
    let side = m::Side::of(s.role);
    let mut before = req.approvals_by;
    let install = s
        .store
        .repo::<Install>()
        .modify(&s.org, &name, |i| {
            before = i.approvals_by;
            if i.approvals_by == req.approvals_by {
                return Ok(false);
            }
            if let Some(why) = i.approvals_by.refuses_change(req.approvals_by, side) {
                return Err(why);
            }
            i.approvals_by = req.approvals_by;
            i.updated_at = m::now();
            Ok(true)
        })
        .await
        .map_err(install_error(&name))?
        .map_err(ApiError::Forbidden)?;
    if before != req.approvals_by {
        let detail = serde_json::json!({ "from": before.name(), "to": req.approvals_by.name(), "by": side.name() });
        audit(&s, "install.approvals_by", &name, detail).await?;
    }
    Ok(Json(install.redacted()))
}

/// Deploys the app's latest config to an existing install: everything, or the body's scope (some
/// components, with or without their dependents; plans only).
#[utoipa::path(
    post,
    path = m::ops::DeployInstall::PATH,
    security(("token" = [m::ops::DeployInstall::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    request_body(content = Option<m::DeployScope>, description = "What to deploy (default: every component)"),
    responses((status = 202, description = "The deploy workflow requested", body = m::api::Deployed), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn deploy_install(
    Ctx(s): Ctx,
    Name(name): Name,
    body: Option<Json<m::DeployScope>>,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    let scope = body.map(|Json(b)| b).unwrap_or_default();
    start_on_install(
        &s,
        &name,
        m::WorkflowKind::DeployComponents,
        None,
        scope,
        None,
    )
    .await
}

/// Plans and applies the install's sandbox again (after its approval), with the app's latest
/// config; the components stay as they are.
#[utoipa::path(
    post,
    path = m::ops::ReprovisionInstall::PATH,
    security(("token" = [m::ops::ReprovisionInstall::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 202, description = "The reprovision workflow requested", body = m::api::Deployed), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn reprovision_install(
    Ctx(s): Ctx,
    Name(name): Name,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    let scope = m::DeployScope {
        components: vec![m::SANDBOX.into()],
        ..Default::default()
    };
    start_on_install(&s, &name, m::WorkflowKind::Provision, None, scope, None).await
}

/// Forgets an install. Refused while a workflow runs on it, and while anything of it is deployed
/// (tear it down first) unless `?force=true`: its resources would be left with nobody to manage
/// them.
#[utoipa::path(
    delete,
    path = m::ops::DeleteInstall::PATH,
    security(("token" = [m::ops::DeleteInstall::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name"), DeleteOptions),
    responses((status = 204, description = "Deleted"), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn delete_install(
    Ctx(s): Ctx,
    Name(name): Name,
    axum::extract::Query(o): axum::extract::Query<DeleteOptions>,
) -> Result<StatusCode, ApiError> {
    let installs = s.store.repo::<Install>();
    let cur = installs
        .get(&s.org, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?
        .value;
    if let Some(wf_id) = &cur.last_workflow
        && let Some(wf) = s.store.repo::<Workflow>().get(&s.org, wf_id).await?
        && !wf.value.status.is_terminal()
    {
        return Err(ApiError::Conflict(format!(
            "install `{name}` is busy with workflow {wf_id}"
        )));
    }
    let deployed: Vec<&str> = std::iter::once((m::SANDBOX, &cur.sandbox))
        .chain(cur.components.iter().map(|(n, c)| (n.as_str(), c)))
        .filter(|(_, c)| c.artifact_digest.is_some())
        .map(|(n, _)| n)
        .collect();
    if !deployed.is_empty() && !o.force {
        return Err(ApiError::Conflict(format!(
            "install `{name}` still has {} deployed: run `ferry installs teardown {name}` first, \
             or delete with --force to leave them unmanaged",
            deployed.join(", ")
        )));
    }
    installs.delete(&s.org, &name).await?;
    // A deleted install's runners have nothing left to do: their certificates end with it.
    crate::bootstrap::revoke_install(&s, &name).await?;
    audit(
        &s,
        "install.deleted",
        &name,
        serde_json::json!({ "force": o.force, "left_deployed": deployed }),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Destroys what the install has deployed: components in reverse deploy order, then the sandbox,
/// with the config it was deployed with.
#[utoipa::path(
    post,
    path = m::ops::TeardownInstall::PATH,
    security(("token" = [m::ops::TeardownInstall::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 202, description = "The teardown workflow requested", body = m::api::Deployed), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn teardown_install(
    Ctx(s): Ctx,
    Name(name): Name,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    start_on_install(
        &s,
        &name,
        m::WorkflowKind::Teardown,
        None,
        Default::default(),
        None,
    )
    .await
}

/// Changes some of an install's input values and deploys what reads the changed inputs, with what
/// depends on it (everything, if the app changed since the install's last deploy).
#[utoipa::path(
    post,
    path = m::ops::UpdateInputs::PATH,
    security(("token" = [m::ops::UpdateInputs::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    request_body(content = std::collections::BTreeMap<String, String>, description = "Inputs to change, by name"),
    responses((status = 202, description = "Changed; a deploy workflow requested", body = m::api::Deployed), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn update_inputs(
    Ctx(s): Ctx,
    Name(name): Name,
    Json(changes): Json<BTreeMap<String, String>>,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    if changes.is_empty() {
        return Err(ApiError::BadRequest(
            "no input to change: --input NAME=VALUE".into(),
        ));
    }
    start_on_install(
        &s,
        &name,
        m::WorkflowKind::DeployComponents,
        Some(changes),
        Default::default(),
        None,
    )
    .await
}

/// Checks the install's drift: plans of its components (the body's, or all) with the config it
/// runs, applying nothing (see the scheduler's `drift.rs`).
#[utoipa::path(
    post,
    path = m::ops::DriftCheck::PATH,
    security(("token" = [m::ops::DriftCheck::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    request_body(content = Option<m::DeployScope>, description = "What to check (default: every component)"),
    responses((status = 202, description = "The drift check workflow requested", body = m::api::Deployed), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn drift_check(
    Ctx(s): Ctx,
    Name(name): Name,
    body: Option<Json<m::DeployScope>>,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    let mut scope = body.map(|Json(b)| b).unwrap_or_default();
    scope.plan_only = true;
    scope.with_dependents = false;
    start_on_install(&s, &name, m::WorkflowKind::DriftCheck, None, scope, None).await
}

/// Runs one of the app's runbooks on the install: its steps as one workflow, which holds the
/// install like a deploy (with the app's latest config).
#[utoipa::path(
    post,
    path = m::ops::RunRunbook::PATH,
    security(("token" = [m::ops::RunRunbook::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name"), ("runbook" = String, Path, description = "The runbook's name")),
    responses((status = 202, description = "The runbook's workflow requested", body = m::api::Deployed), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn run_runbook(
    Ctx(s): Ctx,
    axum::extract::Path((name, runbook)): axum::extract::Path<(String, String)>,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    start_on_install(
        &s,
        &name,
        m::WorkflowKind::Runbook,
        None,
        Default::default(),
        Some(runbook),
    )
    .await
}

/// Refuses a workflow of `kind` while another runs on the install, unless the one running gives
/// way (a drift check, to anything but another drift check): its id is returned, to be cancelled
/// once the new workflow holds the install.
async fn not_busy(
    s: &ApiState,
    install: &Install,
    kind: m::WorkflowKind,
) -> Result<Option<String>, ApiError> {
    let Some(wf_id) = &install.last_workflow else {
        return Ok(None);
    };
    let Some(wf) = s.store.repo::<Workflow>().get(&s.org, wf_id).await? else {
        return Ok(None);
    };
    if wf.value.status.is_terminal() {
        return Ok(None);
    }
    if wf.value.kind.yields_install() && !kind.yields_install() {
        return Ok(Some(wf_id.clone()));
    }
    Err(ApiError::Conflict(format!(
        "install `{}` is busy with workflow {wf_id} (a {})",
        install.name,
        wf.value.kind.label()
    )))
}

/// The config a workflow of `kind` runs on `install`: a teardown destroys, and a drift check
/// checks, what the install runs now; the rest deploy the app's latest.
async fn config_to_run(
    s: &ApiState,
    install: &Install,
    kind: m::WorkflowKind,
    asked: Option<&str>,
) -> Result<String, ApiError> {
    if matches!(
        kind,
        m::WorkflowKind::Teardown | m::WorkflowKind::DriftCheck
    ) {
        return Ok(install.app_config_id.clone());
    }
    // A config version named (a rollback): one of the install's own app, by id or number.
    if let Some(given) = asked {
        return crate::handlers::config_id(s, &install.app, given).await;
    }
    s.store
        .repo::<App>()
        .require(&s.org, &install.app)
        .await?
        .value
        .latest_config
        .ok_or_else(|| ApiError::Conflict("the app has no config".into()))
}

/// Refuses a runbook the config does not have, or a scope naming what it does not deploy.
async fn check_request(
    s: &ApiState,
    config_id: &str,
    runbook: Option<&str>,
    scope: &m::DeployScope,
) -> Result<(), ApiError> {
    if let Some(r) = runbook {
        let (_, _, cfg) = s.store.config(&s.org, config_id).await?;
        if cfg.runbook(r).is_none() {
            let known: Vec<&str> = cfg.runbooks.iter().map(|r| r.name.as_str()).collect();
            return Err(ApiError::NotFound(format!(
                "the app has no runbook `{r}`{}",
                ferry_appconfig::did_you_mean(r, known.iter().copied())
            )));
        }
    }
    if !scope.components.is_empty() {
        let (_, _, cfg) = s.store.config(&s.org, config_id).await?;
        scope
            .select(&ferry_store::deploy_stages(&cfg))
            .map_err(ApiError::BadRequest)?;
    }
    Ok(())
}

/// Sets changed input values on `install` (checked against config `config_id`) and returns the
/// deploy's scope: what reads a changed input redeploys, with what depends on it; unless the
/// app itself changed since the install's last deploy (then `scope`, everything).
async fn with_inputs(
    s: &ApiState,
    install: &mut Install,
    changes: BTreeMap<String, String>,
    config_id: &str,
    scope: m::DeployScope,
) -> Result<m::DeployScope, ApiError> {
    let changed: std::collections::BTreeSet<String> = changes
        .iter()
        .filter(|(k, v)| install.inputs.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect();
    let mut values = install.inputs.clone();
    values.extend(changes);
    let cfg = check_inputs(s, config_id, &values).await?;
    install.sensitive_inputs = sensitive_inputs(&cfg);
    install.inputs = values;
    let readers = cfg.readers_of(&changed);
    if install.app_config_id == config_id && !readers.is_empty() {
        return Ok(m::DeployScope {
            components: readers,
            with_dependents: true,
            plan_only: false,
            config: None,
        });
    }
    Ok(scope)
}

/// Starts a workflow of `kind` on an existing install that is not busy: reserve, then start.
/// `inputs` changes input values in the same compare-and-swap that reserves the install.
async fn start_on_install(
    s: &ApiState,
    name: &str,
    kind: m::WorkflowKind,
    inputs: Option<BTreeMap<String, String>>,
    scope: m::DeployScope,
    runbook: Option<String>,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    check_name("install", name)?;
    let installs = s.store.repo::<Install>();
    let cur = installs
        .get(&s.org, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?;
    let preempted = not_busy(s, &cur.value, kind).await?;
    let config_id = config_to_run(s, &cur.value, kind, scope.config.as_deref()).await?;
    check_request(s, &config_id, runbook.as_deref(), &scope).await?;
    let mut install = cur.value;
    let cause = inputs.as_ref().map(|_| "update-inputs".to_string());
    let scope = match inputs {
        Some(changes) => with_inputs(s, &mut install, changes, &config_id, scope).await?,
        None => scope,
    };
    // Reserve, then start: the workflow runs only if the install now points to it. Of concurrent
    // deploys one wins the compare-and-swap; the others are refused and their workflows discarded
    // before anything was requested.
    let mut wf = blank_workflow(s, name, kind, &config_id, scope);
    wf.cause = cause;
    wf.runbook = runbook;
    record_workflow(s, &wf).await?;
    install.app_config_id = config_id.clone();
    install.last_workflow = Some(wf.id.clone());
    if let Some(status) = kind.install_status_while_running() {
        install.status = status;
    }
    install.updated_at = m::now();
    match installs.update(&install, cur.revision).await {
        Ok(_) => {}
        Err(StoreError::Conflict { .. }) => {
            discard_workflow(s, &wf).await?;
            return Err(ApiError::Conflict(format!(
                "install `{name}` is busy: another workflow was just started"
            )));
        }
        Err(e) => return Err(e.into()),
    }
    request_workflow(s, &wf).await?;
    if let Some(check) = preempted {
        s.store
            .bus()
            .control(&Control::CancelRequested {
                org: s.org.clone(),
                workflow_id: check,
                actor: format!("{} (workflow {})", s.actor, wf.id),
            })
            .await?;
    }
    let workflow_id = wf.id;
    audit(
        s,
        &format!("install.{}", kind.label()),
        name,
        serde_json::json!({ "workflow": workflow_id, "config": config_id }),
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Deployed {
            workflow_id,
            app_config_id: config_id,
        }),
    ))
}
