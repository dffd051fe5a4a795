//! `GET /v1/audit`: the org's audit records, oldest first, filtered by install, actor, action
//! and time, a page at a time (`after` = the previous page's `next`). Admin only: the record
//! says who did what to every install. `ferry audit` reads it, follows it (`-f`) and exports it
//! as JSON lines (`--json`).

use axum::Json;
use axum::extract::Query;
use ferry_model::api::{AuditPage, AuditQuery};
use ferry_model::{self as m, ops::Operation as _};

use crate::ApiError;
use crate::auth::Ctx;
use crate::ids::Name;

#[utoipa::path(
    get,
    path = m::ops::ListAudit::PATH,
    security(("token" = [m::ops::ListAudit::ROLE_NAME])),
    tag = "audit",
    params(AuditQuery),
    responses((status = 200, description = "A page of audit records, oldest first", body = AuditPage), crate::error::Invalid, crate::error::Refusals)
)]
pub async fn list_audit(
    Ctx(s): Ctx,
    Query(q): Query<AuditQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    page(&s, q).await.map(Json)
}

/// `GET /v1/installs/{name}/audit`: the records about one install (the query's `install` is
/// that one), for anyone who reads the install: its customer sees what was done in their account.
#[utoipa::path(
    get,
    path = m::ops::InstallAudit::PATH,
    security(("token" = [m::ops::InstallAudit::ROLE_NAME])),
    tag = "audit",
    params(("name" = String, Path, description = "The install's name"), AuditQuery),
    responses((status = 200, description = "A page of the install's audit records, oldest first", body = AuditPage), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn install_audit(
    Ctx(s): Ctx,
    Name(name): Name,
    Query(mut q): Query<AuditQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    crate::installs::install_of(&s, &name).await?;
    q.install = Some(name);
    page(&s, q).await.map(Json)
}

async fn page(s: &crate::ApiState, q: AuditQuery) -> Result<AuditPage, ApiError> {
    q.check().map_err(ApiError::BadRequest)?;
    for (what, v) in [
        ("install", &q.install),
        ("actor", &q.actor),
        ("action", &q.action),
    ] {
        if let Some(v) = v
            && (v.is_empty() || v.len() > 256)
        {
            return Err(ApiError::BadRequest(format!("{what}: 1 to 256 characters")));
        }
    }
    Ok(s.store.audit_page(&s.org, &q).await?)
}
