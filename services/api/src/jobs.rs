//! Job routes: get one (with its executions), cancel one.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ferry_model as m;
use ferry_protocol::Control;

use crate::handlers::{audit, check_name};
use crate::{ApiError, ApiState};

/// Asks the scheduler to stop one job (202): a queued one is cancelled at once, a running one on
/// its runner. Its step ends cancelled and its workflow starts nothing new.
pub async fn cancel_job(
    State(s): State<ApiState>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<m::Job>), ApiError> {
    check_name("job", &id)?;
    let j = s
        .store
        .repo::<m::Job>()
        .get(&s.org, &id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("job `{id}` not found")))?
        .value;
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
            actor: "api".into(),
        })
        .await?;
    audit(
        &s,
        "job.cancel",
        &id,
        serde_json::json!({ "install": j.install }),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(j)))
}

pub async fn get_job(
    State(s): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<m::Job>, ApiError> {
    check_name("job", &id)?;
    let j = s
        .store
        .repo::<m::Job>()
        .get(&s.org, &id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("job `{id}` not found")))?;
    Ok(Json(j.value))
}
