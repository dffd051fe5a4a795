//! `GET /v1/installs/{name}/history`: the workflows that changed what an install runs, newest
//! first (`HistoryEntry::of` decides which and what each says), for `ferry installs history`,
//! `ferry installs rollback` and the dashboard's install page.

use axum::Json;
use ferry_model::api::HistoryEntry;
use ferry_model::{self as m, Workflow, ops::Operation as _};

use crate::auth::Ctx;
use crate::ids::Name;
use crate::{ApiError, ApiState};

#[utoipa::path(
    get,
    path = m::ops::InstallHistory::PATH,
    security(("token" = [m::ops::InstallHistory::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 200, description = "The install's deploys, newest first", body = Vec<HistoryEntry>), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn install_history(
    Ctx(s): Ctx,
    Name(name): Name,
) -> Result<Json<Vec<HistoryEntry>>, ApiError> {
    let install = crate::installs::install_of(&s, &name).await?;
    Ok(Json(history(&s, &install).await?))
}

/// The install's history: its own workflows only. A deleted install of the same name had all
/// its workflows ended before it was deleted, so before this one was created; this one's first
/// workflow is recorded just before the install itself, and ends after.
pub(crate) async fn history(
    s: &ApiState,
    install: &m::Install,
) -> Result<Vec<HistoryEntry>, ApiError> {
    let mut all = s.store.repo::<Workflow>().list(&s.org).await?;
    let since = m::ms_of(&install.created_at).unwrap_or(0);
    all.retain(|w| {
        w.install == install.name
            && w.finished_at
                .as_deref()
                .is_none_or(|f| m::ms_of(f).is_some_and(|t| t >= since))
    });
    // Ids are ULIDs: their order is creation order.
    all.sort_by(|a, b| b.id.cmp(&a.id));
    Ok(all.iter().filter_map(HistoryEntry::of).collect())
}
