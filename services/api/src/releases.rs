//! Release routes: create a release (its waves planned from the app's installs), list, get,
//! pause, resume, cancel. The scheduler drives them (its `releases.rs`).

use axum::Json;
use axum::http::StatusCode;
use ferry_model::api::CreateRelease;
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, App, Install, Release};
use ferry_protocol::Control;

use crate::auth::Ctx;
use crate::handlers::audit;
use crate::ids::{Name, check_name};
use crate::{ApiError, ApiState};

#[utoipa::path(
    post,
    path = m::ops::CreateReleaseOp::PATH,
    security(("token" = [m::ops::CreateReleaseOp::ROLE_NAME])),
    tag = "releases",
    request_body = m::api::CreateRelease,
    responses((status = 201, description = "The release, started", body = m::Release), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn create_release(
    Ctx(s): Ctx,
    Json(req): Json<CreateRelease>,
) -> Result<(StatusCode, Json<Release>), ApiError> {
    if !s.scope.whole_org() {
        return Err(ApiError::Forbidden(
            "a token bound to installs makes no release (a release spans the fleet): deploy \
             each install instead"
                .into(),
        ));
    }
    check_name("app", &req.app)?;
    let app = s
        .store
        .repo::<App>()
        .get(&s.org, &req.app)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("app `{}` not found", req.app)))?
        .value;
    let config = match &req.config {
        Some(c) => crate::handlers::config_id(&s, &req.app, c).await?,
        None => app
            .latest_config
            .clone()
            .ok_or_else(|| ApiError::Conflict("the app has no config".into()))?,
    };
    let (_, _, cfg) = s.store.config(&s.org, &config).await?;
    if let Some(h) = &req.health
        && cfg.action(h).is_none()
    {
        return Err(ApiError::BadRequest(format!(
            "the health action `{h}` is not an action of config {config}"
        )));
    }
    m::check_labels(&req.labels).map_err(ApiError::BadRequest)?;
    for i in &req.installs {
        check_name("install", i)?;
    }
    let all = s.store.repo::<Install>().scan(&s.org).await?;
    let installs = req.targets(&all).map_err(ApiError::BadRequest)?;
    let waves = m::plan_waves(&installs, &req.waves).map_err(ApiError::BadRequest)?;
    let settings = req.settings();
    let r = Release::new(
        m::new_id(),
        &s.org,
        &req.app,
        &config,
        settings,
        waves,
        m::Timestamp::now(),
    );
    s.store
        .repo::<m::OpenRelease>()
        .create(&r.open_mark())
        .await?;
    s.store.repo::<Release>().create(&r).await?;
    // Its first wave starts now; were this lost, the scheduler's sweep starts it.
    s.store
        .bus()
        .control(&Control::ReleaseRequested {
            org: s.org.clone(),
            release_id: r.id.clone(),
        })
        .await?;
    let sizes: Vec<usize> = r.waves.iter().map(|w| w.targets.len()).collect();
    audit(
        &s,
        "release.created",
        &r.id,
        serde_json::json!({ "app": r.app, "config": config, "waves": sizes }),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(r)))
}

#[utoipa::path(
    get,
    path = m::ops::ListReleases::PATH,
    security(("token" = [m::ops::ListReleases::ROLE_NAME])),
    tag = "releases",
    responses((status = 200, description = "Releases, newest first", body = Vec<m::Release>), crate::error::Refusals)
)]
pub async fn list_releases(Ctx(s): Ctx) -> Result<Json<Vec<Release>>, ApiError> {
    // A release spans the fleet: a token bound to installs sees none (`reach.rs`).
    if !s.scope.whole_org() {
        return Ok(Json(Vec::new()));
    }
    let mut all = s.store.repo::<Release>().list(&s.org).await?;
    all.sort_by(|a, b| b.id.cmp(&a.id));
    Ok(Json(all))
}

#[utoipa::path(
    get,
    path = m::ops::GetRelease::PATH,
    security(("token" = [m::ops::GetRelease::ROLE_NAME])),
    tag = "releases",
    params(("id" = String, Path, description = "The release's id")),
    responses((status = 200, description = "The release", body = m::Release), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn get_release(Ctx(s): Ctx, Name(id): Name) -> Result<Json<Release>, ApiError> {
    Ok(Json(release(&s, &id).await?))
}

async fn release(s: &ApiState, id: &str) -> Result<Release, ApiError> {
    Ok(s.store
        .repo::<Release>()
        .get(&s.org, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("release `{id}` not found")))?
        .value)
}

/// Applies `f` (pause, resume, cancel) to the release by compare-and-swap; a refusal is a 409.
async fn change(
    s: &ApiState,
    id: &str,
    what: &str,
    f: impl Fn(&mut Release, m::Timestamp) -> Result<(), String>,
) -> Result<Json<Release>, ApiError> {
    release(s, id).await?;
    let now = m::Timestamp::now();
    let r = s
        .store
        .repo::<Release>()
        .modify(&s.org, id, |r| f(r, now).map(|()| true))
        .await?
        .map_err(ApiError::Conflict)?;
    if !r.status.is_terminal() {
        // Resumed after it ended its sweep: the scheduler reads it again.
        s.store
            .repo::<m::OpenRelease>()
            .create_if_absent(&r.open_mark())
            .await?;
    }
    audit(s, &format!("release.{what}"), id, serde_json::json!({})).await?;
    Ok(Json(r))
}

#[utoipa::path(
    post,
    path = m::ops::PauseRelease::PATH,
    security(("token" = [m::ops::PauseRelease::ROLE_NAME])),
    tag = "releases",
    params(("id" = String, Path, description = "The release's id")),
    responses((status = 200, description = "The release, paused", body = m::Release), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn pause_release(Ctx(s): Ctx, Name(id): Name) -> Result<Json<Release>, ApiError> {
    change(&s, &id, "paused", Release::pause).await
}

#[utoipa::path(
    post,
    path = m::ops::ResumeRelease::PATH,
    security(("token" = [m::ops::ResumeRelease::ROLE_NAME])),
    tag = "releases",
    params(("id" = String, Path, description = "The release's id")),
    responses((status = 200, description = "The release, going on", body = m::Release), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn resume_release(Ctx(s): Ctx, Name(id): Name) -> Result<Json<Release>, ApiError> {
    change(&s, &id, "resumed", Release::resume).await
}

#[utoipa::path(
    post,
    path = m::ops::CancelRelease::PATH,
    security(("token" = [m::ops::CancelRelease::ROLE_NAME])),
    tag = "releases",
    params(("id" = String, Path, description = "The release's id")),
    responses((status = 200, description = "The release, cancelled", body = m::Release), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn cancel_release(Ctx(s): Ctx, Name(id): Name) -> Result<Json<Release>, ApiError> {
    change(&s, &id, "cancelled", Release::cancel).await
}
