//! Job routes: get one (with its executions), its plan as structured JSON, cancel one.

use axum::Json;
use axum::http::StatusCode;
use ferry_model as m;
use ferry_model::ops::Operation as _;
use ferry_protocol::Control;
use ferry_protocol::resources::objects;

use crate::ApiError;
use crate::auth::Ctx;
use crate::handlers::audit;
use crate::ids::Name;

/// Asks the scheduler to stop one job (202): a queued one is cancelled at once, a running one on
/// its runner. Its step ends cancelled and its workflow starts nothing new.
#[utoipa::path(
    post,
    path = m::ops::CancelJob::PATH,
    security(("token" = [m::ops::CancelJob::ROLE_NAME])),
    tag = "jobs",
    params(("id" = String, Path, description = "The job's id")),
    responses((status = 202, description = "Cancelling", body = m::Job), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn cancel_job(
    Ctx(s): Ctx,
    Name(id): Name,
) -> Result<(StatusCode, Json<m::Job>), ApiError> {
    let j = crate::jobs::job_of(&s, &id).await?;
    if j.status.is_terminal() {
        return Err(ApiError::Conflict(format!(
            "job {id} has already ended ({})",
            j.status.name()
        )));
    }
    s.store
        .bus()
        .control(&Control::JobCancelRequested {
            org: s.org.clone(),
            job_id: id.clone(),
            actor: s.actor.clone(),
        })
        .await?;
    audit(
        &s,
        "job.cancel",
        &id,
        serde_json::json!({ "install": j.install }),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(j.redacted())))
}

/// A plan job's structured plan as its plugin wrote it, if it has one: what `job_plan` serves and
/// the dashboard reads.
pub(crate) async fn plan_of(s: &crate::ApiState, id: &str) -> Result<Option<Vec<u8>>, ApiError> {
    Ok(s.store
        .get_object(objects::PLANS, &objects::plan_json(&s.org, id))
        .await?
        .map(|b| b.to_vec()))
}

/// A plan job's plan as structured JSON (Terraform's `show -json`), as the plugin gave it; 404
/// for a job without one (a script's plan is its log).
#[utoipa::path(
    get,
    path = m::ops::JobPlan::PATH,
    security(("token" = [m::ops::JobPlan::ROLE_NAME])),
    tag = "jobs",
    params(("id" = String, Path, description = "The job's id")),
    responses((status = 200, description = "The plan as its plugin gave it (Terraform's `show -json`)", body = Object), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn job_plan(
    Ctx(s): Ctx,
    Name(id): Name,
) -> Result<impl axum::response::IntoResponse, ApiError> {
    let bytes = plan_of(&s, &id).await?.ok_or_else(|| {
        ApiError::NotFound(format!(
            "job `{id}` has no structured plan (a script's plan is its log: ferry logs --job {id})"
        ))
    })?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        bytes,
    ))
}

#[utoipa::path(
    get,
    path = m::ops::GetJob::PATH,
    security(("token" = [m::ops::GetJob::ROLE_NAME])),
    tag = "jobs",
    params(("id" = String, Path, description = "The job's id")),
    responses((status = 200, description = "The job and its executions", body = m::Job), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn get_job(Ctx(s): Ctx, Name(id): Name) -> Result<Json<m::Job>, ApiError> {
    Ok(Json(job_of(&s, &id).await?.redacted()))
}

/// The caller's org's job `id`, or a 404.
pub(crate) async fn job_of(s: &crate::ApiState, id: &str) -> Result<m::Job, ApiError> {
    s.store
        .repo::<m::Job>()
        .get(&s.org, id)
        .await?
        .map(|v| v.value)
        .ok_or_else(|| ApiError::NotFound(format!("job `{id}` not found")))
}
