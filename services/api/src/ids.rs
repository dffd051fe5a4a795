//! How every route judges the names and ids it is given: one function, [`check_name`], for path
//! segments (through the [`Name`] extractor, which every route with a `{…}` segment takes) and for
//! query filters. A name that could never name a record (`*`, `>`, `..`, empty, too long) is a
//! client error (400) before anything reaches the store, never a store error (503) that a client
//! would retry for ever.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use ferry_protocol::subjects;

use crate::ApiError;

/// At most this much of a refused name is echoed back.
const ECHO: usize = 80;

/// Checks that `name` can be a record's name or id (a subject token and a KV key segment).
pub(crate) fn check_name(kind: &str, name: &str) -> Result<(), ApiError> {
    if subjects::is_valid_token(name) {
        return Ok(());
    }
    let shown: String = name.chars().take(ECHO).collect();
    let more = if shown.len() < name.len() { "…" } else { "" };
    Err(ApiError::BadRequest(format!(
        "invalid {kind} name `{shown}{more}`: use 1-63 lowercase letters, digits and `-`"
    )))
}

/// A query filter's value, if any, checked like a path's.
pub(crate) fn check_filter(kind: &str, value: Option<&str>) -> Result<(), ApiError> {
    value.map_or(Ok(()), |v| check_name(kind, v))
}

/// What a route's one path parameter names, from the collection it is under.
fn kind_of(path: &str) -> &'static str {
    match path.trim_start_matches("/v1/").split('/').next() {
        Some("apps") => "app",
        Some("installs") => "install",
        Some("workflows") => "workflow",
        Some("jobs") => "job",
        Some("tokens") => "token",
        Some("releases") => "release",
        _ => "path",
    }
}

/// The one name or id in a route's path, checked by [`check_name`] before the handler runs.
pub struct Name(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Name {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let kind = kind_of(parts.uri.path());
        let Path(value) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::BadRequest(format!("the {kind} in the path: {e}")))?;
        check_name(kind, &value)?;
        Ok(Name(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_never_name_a_record_are_client_errors() {
        let long = "a".repeat(10_000);
        for bad in ["*", ">", "..", "", "a.b", "A", "-a", long.as_str()] {
            let Err(ApiError::BadRequest(why)) = check_name("job", bad) else {
                panic!("`{bad}` accepted");
            };
            assert!(why.len() < 300, "a refused name is not echoed whole");
        }
        assert!(check_name("job", "01jb-x").is_ok());
        assert!(check_filter("install", None).is_ok());
        assert!(check_filter("install", Some("*")).is_err());
    }

    #[test]
    fn the_kind_follows_the_collection() {
        assert_eq!(kind_of("/v1/jobs/x/logs"), "job");
        assert_eq!(kind_of("/v1/installs/x"), "install");
        assert_eq!(kind_of("/v1/other"), "path");
    }
}
