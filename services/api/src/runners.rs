//! Runner routes: each runner's last heartbeat and its health now.

use axum::Json;
use ferry_model as m;
use ferry_model::api::RunnerFilter;
use ferry_model::ops::Operation as _;

use crate::auth::Ctx;
use crate::{ApiError, ApiState};

/// Runners heard from, with their health now; `?install=NAME` keeps one install's. Offline
/// runners stay listed for a day, then are forgotten; runners of deleted installs at once.
#[utoipa::path(
    get,
    path = m::ops::ListRunners::PATH,
    security(("token" = [m::ops::ListRunners::ROLE_NAME])),
    tag = "runners",
    params(RunnerFilter),
    responses((status = 200, description = "Runners heard from, with their health now", body = Vec<m::api::RunnerInfo>), crate::error::Invalid, crate::error::Refusals)
)]
pub async fn list_runners(
    Ctx(s): Ctx,
    axum::extract::Query(f): axum::extract::Query<RunnerFilter>,
) -> Result<Json<Vec<m::api::RunnerInfo>>, ApiError> {
    crate::ids::check_filter("install", f.install.as_deref())?;
    Ok(Json(runners(&s, f.install.as_deref()).await?))
}

async fn runners(s: &ApiState, install: Option<&str>) -> Result<Vec<m::api::RunnerInfo>, ApiError> {
    const FORGET_AFTER_MS: u64 = 24 * 3600 * 1000;
    let now = m::Timestamp::now();
    let reached = s.reached().await?;
    let mut all = s.store.repo::<m::RunnerRecord>().list(&s.org).await?;
    // Each install's creation: a runner last heard from before it served an install of that
    // name that was deleted (a name can be used again; deleting revokes the old runners, which
    // are heard from no more).
    let installs: std::collections::BTreeMap<String, u64> = s
        .store
        .repo::<m::Install>()
        .list(&s.org)
        .await?
        .into_iter()
        .map(|i| (i.name, m::ms_of(&i.created_at).unwrap_or(0)))
        .collect();
    all.retain(|r| {
        install.is_none_or(|i| r.install == i)
            && reached.has(&r.install)
            && installs
                .get(&r.install)
                .is_some_and(|created| r.last_seen_ms >= *created)
            && now.ms().saturating_sub(r.last_seen_ms) < FORGET_AFTER_MS
    });
    all.sort_by(|a, b| (&a.install, b.last_seen_ms).cmp(&(&b.install, a.last_seen_ms)));
    Ok(all
        .into_iter()
        .map(|r| m::api::RunnerInfo {
            health: r.health(now),
            last_seen: m::format_ms(r.last_seen_ms),
            runner: r,
        })
        .collect())
}
