use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ferry_store::StoreError;
use serde_json::json;

/// What every error answer carries (the OpenAPI description's name for it).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for people.
    pub error: String,
    /// An invalid package's problems, each with its file, line and column.
    #[schema(value_type = Option<Vec<Object>>)]
    pub diagnostics: Option<serde_json::Value>,
}

/// The refusals of every route that takes a token, declared once and shared by each route's
/// description (`responses(..., crate::error::Refusals)`).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // Never built: it only describes the answers `auth::require_token` gives.
pub(crate) enum Refusals {
    #[response(status = 401, description = "No valid token")]
    Unauthorized(ErrorBody),
    #[response(status = 403, description = "The token's role may not")]
    Forbidden(ErrorBody),
}

/// A 400: the input is invalid (the message says why). Shared by each route's description.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // Never built: it describes what `ApiError::BadRequest` answers.
#[response(status = 400, description = "Invalid input")]
pub(crate) struct Invalid(ErrorBody);

/// A 404: nothing of that name or id in the caller's org.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // Never built: it describes what `ApiError::NotFound` answers.
#[response(status = 404, description = "Not found")]
pub(crate) struct NotFound(ErrorBody);

/// A 409: refused by the record's state (a workflow running, something still deployed).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // Never built: it describes what `ApiError::Conflict` answers.
#[response(status = 409, description = "Conflicts with the record's state")]
pub(crate) struct Conflict(ErrorBody);

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unauthorized(String),
    /// The caller may not (403): the message says why.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Unavailable(String),
    /// More than the control plane can store (413): the message says the limit.
    #[error("{0}")]
    TooLarge(String),
    /// Beyond a limit on what one caller may hold open (429): the message says the limit.
    #[error("{0}")]
    TooManyRequests(String),
    #[error("the app package is invalid")]
    InvalidPackage(ferry_appconfig::Diagnostics),
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, json!({ "error": m })),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, json!({ "error": m })),
            ApiError::Conflict(m) => (StatusCode::CONFLICT, json!({ "error": m })),
            ApiError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, json!({ "error": m })),
            ApiError::Forbidden(m) => (StatusCode::FORBIDDEN, json!({ "error": m })),
            ApiError::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, json!({ "error": m })),
            ApiError::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, json!({ "error": m })),
            ApiError::TooManyRequests(m) => (StatusCode::TOO_MANY_REQUESTS, json!({ "error": m })),
            ApiError::InvalidPackage(d) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({ "error": self.to_string(), "diagnostics": d }),
            ),
            ApiError::Store(StoreError::NotFound { key, .. }) => (
                StatusCode::NOT_FOUND,
                json!({ "error": format!("{key} not found") }),
            ),
            ApiError::Store(e) => {
                tracing::error!(error = %e, "store error");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({ "error": format!("the control plane's store is unavailable: {e}") }),
                )
            }
        };
        (status, Json(body)).into_response()
    }
}

/// The largest plain-text rejection rewritten as JSON (axum's are a line or two).
const MAX_REJECTION: usize = 16 * 1024;

/// axum's own rejections (a body that is not JSON: 415; JSON of the wrong shape: 422; a missing
/// or malformed path or query: 400; a wrong method: 405) come as plain text: rewritten as the
/// `{"error": ...}` every other error is, so a client reads one shape.
pub async fn rejections_as_json(response: Response) -> Response {
    let plain = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.starts_with("text/plain"));
    if !response.status().is_client_error() || !plain {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_REJECTION).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => String::new(),
    };
    let error = if text.is_empty() {
        parts
            .status
            .canonical_reason()
            .unwrap_or("bad request")
            .to_lowercase()
    } else {
        text
    };
    let mut out = (parts.status, Json(json!({ "error": error }))).into_response();
    for (k, v) in parts.headers.iter() {
        if k != axum::http::header::CONTENT_TYPE && k != axum::http::header::CONTENT_LENGTH {
            out.headers_mut().insert(k, v.clone());
        }
    }
    out
}
