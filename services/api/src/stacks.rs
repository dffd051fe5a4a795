//! `GET /v1/installs/{name}/stack`: the install stack's CloudFormation template
//! (`ferry_appconfig::stack`), rendered with the install's state from the config version it
//! runs. The customer launches it in their own account; the control plane keeps nothing of it.

use axum::Json;
use axum::extract::Query;
use ferry_model::api::StackQuery;
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, Install};

use crate::ApiError;
use crate::auth::Ctx;
use crate::ids::Name;

#[utoipa::path(
    get,
    path = m::ops::InstallStackOp::PATH,
    security(("token" = [m::ops::InstallStackOp::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name"), StackQuery),
    responses((status = 200, description = "The install stack's CloudFormation template", body = Object), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn install_stack(
    Ctx(s): Ctx,
    Name(name): Name,
    Query(q): Query<StackQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let install = s
        .store
        .repo::<Install>()
        .get(&s.org, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?
        .value;
    let (_, _, cfg) = s.store.config(&s.org, &install.app_config_id).await?;
    if let Some(sha) = q.bundle_sha256.as_deref()
        && !(sha.len() == 64
            && sha
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
    {
        return Err(ApiError::BadRequest(format!(
            "bundle_sha256 `{sha}`: 64 lower-case hex digits"
        )));
    }
    let state = ferry_appconfig::jobs::install_state(&cfg, &install);
    let opts = ferry_appconfig::stack::StackOptions {
        install: install.name.clone(),
        bundle_url: q.bundle_url.unwrap_or_default(),
        bundle_sha256: q.bundle_sha256.unwrap_or_default(),
    };
    ferry_appconfig::stack::cloudformation(&cfg, &state, &opts)
        .map(Json)
        .map_err(|e| ApiError::BadRequest(e.to_string()))
}
