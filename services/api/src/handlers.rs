//! Shared route helpers (name checks, audit) and the app routes: sync a package, list and get apps.

use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;
use ferry_appconfig::Package;
use ferry_model::api::{SyncComponent, SyncResponse};
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, App, AppConfigVersion};
use ferry_protocol::resources::objects;
use tracing::info;

use crate::auth::Ctx;
use crate::error::ErrorBody;
use crate::ids::Name;
use crate::{ApiError, ApiState};

pub(crate) use crate::ids::check_name;

pub(crate) async fn audit(
    s: &ApiState,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) -> Result<(), ApiError> {
    s.store
        .bus()
        .audit(&m::AuditEvent {
            org: s.org.clone(),
            at: m::now(),
            actor: s.actor.clone(),
            action: action.into(),
            target: target.into(),
            detail,
        })
        .await?;
    Ok(())
}

/// `POST /v1/apps/{app}/configs`: validates the uploaded package and stores it as the app's next
/// config version, unless it is identical to the latest (then nothing is stored).
#[utoipa::path(
    post,
    path = m::ops::SyncApp::PATH,
    security(("token" = [m::ops::SyncApp::ROLE_NAME])),
    tag = "apps",
    params(("app" = String, Path, description = "The app's name")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "A package bundle as `ferry apps sync` uploads it"),
    responses((status = 200, description = "Unchanged: the latest config version", body = m::api::SyncResponse), (status = 201, description = "A new config version", body = m::api::SyncResponse), (status = 413, description = "Too large", body = ErrorBody), (status = 422, description = "The package is invalid (diagnostics with file, line and column)", body = ErrorBody), crate::error::Refusals)
)]
pub async fn sync_app(
    Ctx(s): Ctx,
    Name(app): Name,
    body: Bytes,
) -> Result<(StatusCode, Json<SyncResponse>), ApiError> {
    let pkg = Package::from_bundle(&body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let (pkg, report) = ferry_store::validate_package(pkg)
        .await
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let cfg = report
        .config
        .ok_or(ApiError::InvalidPackage(report.diagnostics))?;
    let content_hash = pkg.content_hash();

    let existing = s.store.repo::<App>().get(&s.org, &app).await?;
    let previous = match existing
        .as_ref()
        .and_then(|a| a.value.latest_config.clone())
    {
        Some(id) => s
            .store
            .repo::<AppConfigVersion>()
            .get(&s.org, &id)
            .await?
            .map(|v| v.value),
        None => None,
    };
    let summaries = summaries(&cfg);
    if let Some(p) = previous.as_ref().filter(|p| p.content_hash == content_hash) {
        let components = SyncComponent::compared(&summaries, Some(p))
            .into_iter()
            .map(|c| SyncComponent {
                changed: false,
                ..c
            })
            .collect();
        return Ok((
            StatusCode::OK,
            Json(SyncResponse {
                app,
                config_id: p.id.clone(),
                version: p.version,
                changed: false,
                components,
                deploy_order: p.deploy_order.clone(),
            }),
        ));
    }
    let components = SyncComponent::compared(&summaries, previous.as_ref());
    let version = previous.as_ref().map(|p| p.version + 1).unwrap_or(1);
    let rec = AppConfigVersion {
        id: m::new_id(),
        org: s.org.clone(),
        app: app.clone(),
        version,
        source_object: format!(
            "{}.{}.{}",
            s.org,
            app,
            content_hash.trim_start_matches("sha256:")
        ),
        content_hash,
        components: summaries,
        deploy_order: cfg.deploy_order,
        created_at: m::now(),
    };
    store_version(&s, &rec, &body, existing.is_none()).await?;
    Ok((
        StatusCode::CREATED,
        Json(SyncResponse {
            app,
            config_id: rec.id,
            version,
            changed: true,
            components,
            deploy_order: rec.deploy_order,
        }),
    ))
}

/// The sandbox's and components' summaries, by name.
fn summaries(cfg: &ferry_appconfig::AppConfig) -> Vec<m::ComponentSummary> {
    let mut summaries: Vec<m::ComponentSummary> = cfg
        .sandbox
        .iter()
        .chain(cfg.components.iter())
        .map(|c| m::ComponentSummary {
            name: c.name.clone(),
            kind: c.kind.as_str().into(),
            content_hash: c.content_hash.clone(),
            dependencies: c.dependencies.clone(),
        })
        .collect();
    summaries.sort_by(|a, b| a.name.cmp(&b.name));
    summaries
}

/// Stores a new config version: its package's bytes, its record, the app (created with it, or
/// pointed at it), and the audit event.
async fn store_version(
    s: &ApiState,
    rec: &AppConfigVersion,
    body: &[u8],
    new_app: bool,
) -> Result<(), ApiError> {
    s.store
        .put_object(objects::APP_SOURCES, &rec.source_object, body)
        .await?;
    s.store.repo::<AppConfigVersion>().create(rec).await?;
    let app = &rec.app;
    if new_app {
        let a = App {
            org: s.org.clone(),
            name: app.clone(),
            created_at: m::now(),
            updated_at: m::now(),
            latest_config: Some(rec.id.clone()),
            config_count: 1,
        };
        // Created concurrently by another sync: record this version as the latest instead.
        if !s.store.repo::<App>().create_if_absent(&a).await? {
            set_latest(s, app, rec).await?;
        }
    } else {
        set_latest(s, app, rec).await?;
    }
    let detail = serde_json::json!({ "config_id": rec.id, "version": rec.version });
    audit(s, "app.synced", app, detail).await?;
    info!(org = %s.org, app = %app, config = %rec.id, version = rec.version, "app config stored");
    Ok(())
}

async fn set_latest(s: &ApiState, app: &str, rec: &AppConfigVersion) -> Result<(), ApiError> {
    s.store
        .repo::<App>()
        .modify(&s.org, app, |a| {
            a.latest_config = Some(rec.id.clone());
            a.config_count += 1;
            a.updated_at = m::now();
            Ok::<bool, ()>(true)
        })
        .await?
        .ok();
    Ok(())
}

#[utoipa::path(
    get,
    path = m::ops::ListApps::PATH,
    security(("token" = [m::ops::ListApps::ROLE_NAME])),
    tag = "apps",
    responses((status = 200, description = "The org's apps", body = Vec<m::App>), crate::error::Refusals)
)]
pub async fn list_apps(Ctx(s): Ctx) -> Result<Json<Vec<App>>, ApiError> {
    let mut apps = s.store.repo::<App>().list(&s.org).await?;
    if !s.scope.whole_org() {
        // Only the apps the caller's installs run.
        let installs = s.store.repo::<ferry_model::Install>().scan(&s.org).await?;
        apps.retain(|a| {
            installs
                .iter()
                .any(|i| i.app == a.name && s.scope.covers(i))
        });
    }
    apps.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(apps))
}

/// Where an app's installs are: per config version and status, drifted, failing, waiting.
#[utoipa::path(
    get,
    path = m::ops::AppFleet::PATH,
    security(("token" = [m::ops::AppFleet::ROLE_NAME])),
    tag = "apps",
    params(("app" = String, Path, description = "The app's name")),
    responses((status = 200, description = "Where the app's installs stand", body = m::api::Fleet), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn app_fleet(
    Ctx(s): Ctx,
    Name(app): Name,
) -> Result<Json<ferry_model::api::Fleet>, ApiError> {
    let a = s
        .store
        .repo::<App>()
        .get(&s.org, &app)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("app `{app}` not found")))?
        .value;
    let installs: Vec<ferry_model::Install> = s
        .store
        .repo::<ferry_model::Install>()
        .list(&s.org)
        .await?
        .into_iter()
        .filter(|i| i.app == app && s.scope.covers(i))
        .collect();
    let waiting: Vec<String> = s
        .store
        .repo::<ferry_model::Approval>()
        .list(&s.org)
        .await?
        .into_iter()
        .filter(|a| a.status == ferry_model::ApprovalStatus::Pending)
        .map(|a| a.install)
        .collect();
    Ok(Json(ferry_model::api::Fleet::of(&a, &installs, &waiting)))
}

#[utoipa::path(
    get,
    path = m::ops::GetApp::PATH,
    security(("token" = [m::ops::GetApp::ROLE_NAME])),
    tag = "apps",
    params(("app" = String, Path, description = "The app's name")),
    responses((status = 200, description = "The app", body = m::App), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn get_app(Ctx(s): Ctx, Name(app): Name) -> Result<Json<App>, ApiError> {
    let a = s
        .store
        .repo::<App>()
        .get(&s.org, &app)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("app `{app}` not found")))?;
    Ok(Json(a.value))
}

#[utoipa::path(
    get,
    path = m::ops::GetConfig::PATH,
    security(("token" = [m::ops::GetConfig::ROLE_NAME])),
    tag = "apps",
    params(("id" = String, Path, description = "The config version's id")),
    responses((status = 200, description = "The config version: its number, components and deploy order", body = m::AppConfigVersion), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn get_config(
    Ctx(s): Ctx,
    Name(id): Name,
) -> Result<Json<m::AppConfigVersion>, ApiError> {
    let v = s
        .store
        .repo::<m::AppConfigVersion>()
        .get(&s.org, &id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("config version `{id}` not found")))?;
    Ok(Json(v.value))
}

/// The id of the config version of `app` that `given` names: its id, or its number (`2`, `v2`,
/// as `apps sync` prints it). A version of another app, or none, is not found.
pub(crate) async fn config_id(
    s: &crate::ApiState,
    app: &str,
    given: &str,
) -> Result<String, ApiError> {
    let not_found = || ApiError::NotFound(format!("app `{app}` has no config version `{given}`"));
    if let Some(n) = ferry_model::config_number(given) {
        let versions = s.store.repo::<m::AppConfigVersion>().scan(&s.org).await?;
        return versions
            .into_iter()
            .find(|v| v.app == app && v.version == n)
            .map(|v| v.id)
            .ok_or_else(not_found);
    }
    crate::ids::check_filter("config", Some(given))?;
    match s
        .store
        .repo::<m::AppConfigVersion>()
        .get(&s.org, given)
        .await?
    {
        Some(c) if c.value.app == app => Ok(given.to_string()),
        _ => Err(not_found()),
    }
}
