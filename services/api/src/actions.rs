//! Action routes: an install's actions (from the app config it runs) with their latest runs,
//! and starting a run by hand. A run is a workflow of its own (kind `action`) that does not hold
//! the install: actions run beside deploys. Also the break-glass grants a customer token makes
//! for the actions that need a role.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use ferry_model::api::{ActionInfo, Deployed, GrantBreakGlass, RunAction};
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, Install};

use crate::ApiError;
use crate::auth::Ctx;
use crate::handlers::audit;
use crate::ids::{Name, check_name};
use crate::installs::{blank_workflow, install_of, record_workflow, request_workflow};

#[utoipa::path(
    get,
    path = m::ops::ListActions::PATH,
    security(("token" = [m::ops::ListActions::ROLE_NAME])),
    tag = "actions",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 200, description = "The install's actions", body = Vec<m::api::ActionInfo>), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn list_actions(
    Ctx(s): Ctx,
    Name(name): Name,
) -> Result<Json<Vec<ActionInfo>>, ApiError> {
    let install = install_of(&s, &name).await?;
    let (_, _, cfg) = s.store.config(&s.org, &install.app_config_id).await?;
    let marks = s.store.repo::<m::CronMark>();
    let mut out = Vec::new();
    for a in &cfg.actions {
        let next_run = match a.cron_schedule() {
            Some(_) => marks
                .get(&s.org, &m::CronMark::id_of(&name, &a.name))
                .await?
                .map(|v| m::format_ms(v.value.next_ms)),
            None => None,
        };
        out.push(ActionInfo {
            name: a.name.clone(),
            triggers: a
                .triggers
                .iter()
                .map(|t| {
                    [
                        Some(t.kind.as_str()),
                        t.cron_schedule.as_deref(),
                        t.component.as_deref(),
                    ]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" ")
                })
                .collect(),
            steps: a.steps.iter().map(|st| st.name.clone()).collect(),
            inputs: a
                .inputs
                .iter()
                .map(|i| match (&i.default, i.required) {
                    (_, true) => format!("{} ({}, required)", i.name, i.kind),
                    (Some(d), _) => format!("{} ({}, default {d})", i.name, i.kind),
                    (None, _) => format!("{} ({})", i.name, i.kind),
                })
                .collect(),
            dependencies: a.dependencies.clone(),
            break_glass_role: a.break_glass_role.clone(),
            next_run,
            last_run: install.actions.get(&a.name).cloned(),
        });
    }
    Ok(Json(out))
}

/// Starts a run of an action by hand, its inputs checked against the action's declarations.
#[utoipa::path(
    post,
    path = m::ops::RunActionOp::PATH,
    security(("token" = [m::ops::RunActionOp::ROLE_NAME])),
    tag = "actions",
    params(("name" = String, Path, description = "The install's name"), ("action" = String, Path, description = "The action's name")),
    request_body(content = Option<m::api::RunAction>, description = "The run's inputs"),
    responses((status = 202, description = "The action's run requested", body = m::api::Deployed), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn run_action(
    Ctx(s): Ctx,
    Path((name, action)): Path<(String, String)>,
    body: Option<Json<RunAction>>,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    check_name("install", &name)?;
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let install = install_of(&s, &name).await?;
    let (_, _, cfg) = s.store.config(&s.org, &install.app_config_id).await?;
    let Some(def) = cfg.action(&action) else {
        let known: Vec<&str> = cfg.actions.iter().map(|a| a.name.as_str()).collect();
        return Err(ApiError::NotFound(format!(
            "the app of install `{name}` has no action `{action}`{}",
            ferry_appconfig::did_you_mean(&action, known.iter().copied())
        )));
    };
    let inputs = def.run_inputs(&body.inputs).map_err(ApiError::BadRequest)?;
    let mut wf = blank_workflow(
        &s,
        &name,
        m::WorkflowKind::Action,
        &install.app_config_id,
        Default::default(),
    );
    wf.run = Some(m::ActionRun {
        action: def.name.clone(),
        trigger: "manual".into(),
        inputs: inputs.clone(),
    });
    record_workflow(&s, &wf).await?;
    request_workflow(&s, &wf).await?;
    audit(
        &s,
        "action.run",
        &name,
        serde_json::json!({ "action": def.name, "workflow": wf.id, "inputs": inputs.keys().collect::<Vec<_>>() }),
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Deployed {
            workflow_id: wf.id,
            app_config_id: install.app_config_id,
        }),
    ))
}

/// The longest a break-glass grant lasts.
const MAX_GRANT_SECS: u64 = 24 * 3600;

/// Grants a break-glass role on an install for a while (a customer token only: its declared role):
/// the install's actions naming it run until then, unless its runner takes host grants only.
#[utoipa::path(
    post,
    path = m::ops::GrantBreakGlassOp::PATH,
    security(("token" = [m::ops::GrantBreakGlassOp::ROLE_NAME])),
    tag = "actions",
    params(("name" = String, Path, description = "The install's name")),
    request_body = m::api::GrantBreakGlass,
    responses((status = 201, description = "Granted", body = m::Install), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn grant_break_glass(
    Ctx(s): Ctx,
    Name(name): Name,
    Json(req): Json<GrantBreakGlass>,
) -> Result<(StatusCode, Json<Install>), ApiError> {
    if req.for_secs == 0 || req.for_secs > MAX_GRANT_SECS {
        return Err(ApiError::BadRequest(format!(
            "a grant lasts from a second to a day ({MAX_GRANT_SECS} s), not {} s",
            req.for_secs
        )));
    }
    let current = install_of(&s, &name).await?;
    let (_, _, cfg) = s.store.config(&s.org, &current.app_config_id).await?;
    let roles: Vec<&str> = cfg
        .actions
        .iter()
        .filter_map(|a| a.break_glass_role.as_deref())
        .collect();
    if !roles.contains(&req.role.as_str()) {
        return Err(ApiError::BadRequest(format!(
            "no action of install `{name}`'s app needs break-glass role `{}` (they need: {})",
            req.role,
            if roles.is_empty() {
                "none".to_string()
            } else {
                roles.join(", ")
            }
        )));
    }
    let grant = m::BreakGlassGrant {
        by: s.actor.clone(),
        granted_at: m::now(),
        until_ms: m::now_ms() + req.for_secs * 1000,
    };
    let role = req.role.clone();
    let updated = s
        .store
        .repo::<Install>()
        .modify(&s.org, &name, |i| {
            i.break_glass.insert(role.clone(), grant.clone());
            Ok::<bool, ()>(true)
        })
        .await?
        .map_err(|()| ApiError::Conflict("the install changed".into()))?;
    // Its mark, for the scheduler to see it end (a grant renewed moves its end).
    let mark = m::GrantMark::of(&s.org, &name, &req.role, grant.until_ms);
    let marks = s.store.repo::<m::GrantMark>();
    if !marks.create_if_absent(&mark).await? {
        marks
            .modify(&s.org, &mark.id, |g| {
                g.until_ms = mark.until_ms;
                Ok::<bool, ()>(true)
            })
            .await?
            .ok();
    }
    audit(
        &s,
        "break_glass.granted",
        &format!("{name}/{}", req.role),
        serde_json::json!({ "install": name, "role": req.role, "until": m::format_ms(grant.until_ms) }),
    )
    .await?;
    Ok((StatusCode::OK, Json(updated.redacted())))
}

/// Ends a break-glass grant made through the API before its time.
#[utoipa::path(
    delete,
    path = m::ops::RevokeBreakGlass::PATH,
    security(("token" = [m::ops::RevokeBreakGlass::ROLE_NAME])),
    tag = "actions",
    params(("name" = String, Path, description = "The install's name"), ("role" = String, Path, description = "The break-glass role")),
    responses((status = 204, description = "Revoked"), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn revoke_break_glass(
    Ctx(s): Ctx,
    Path((name, role)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    check_name("install", &name)?;
    install_of(&s, &name).await?;
    let removed = s
        .store
        .repo::<Install>()
        .modify(&s.org, &name, |i| {
            if i.break_glass.remove(&role).is_none() {
                return Err(());
            }
            Ok(true)
        })
        .await?;
    if removed.is_err() {
        return Err(ApiError::NotFound(format!(
            "break-glass role `{role}` is not granted on install `{name}`"
        )));
    }
    s.store
        .repo::<m::GrantMark>()
        .delete(&s.org, &format!("{name}.{role}"))
        .await?;
    audit(
        &s,
        "break_glass.revoked",
        &format!("{name}/{role}"),
        serde_json::json!({ "install": name, "role": role }),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
