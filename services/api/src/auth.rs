//! Bearer tokens: every `/v1` request names a token; the token decides the org the request acts in,
//! the role it acts with (`roles::required`: the role each operation declares) and the installs
//! it reaches (`reach.rs`, checked first: out of reach is not found, whatever the role).
//!
//! The middleware resolves the token once and leaves the [`Caller`] in the request; handlers take
//! [`Ctx`] — the API state scoped to the caller's org, with the caller's name as the actor — instead
//! of the bare state, so no handler can reach another org's records by mistake. Token routes
//! (create, list, revoke) are here too: tokens are stored only as hashes, and a revoked token is
//! refused from the next request on.

use axum::Json;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ferry_model::api::{NewToken, TokenInfo};
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, ApiToken, Role, TokenText};
use sha2::{Digest, Sha256};

use crate::handlers::{audit, check_name};
use crate::ids::Name;
use crate::{ApiError, ApiState};

/// Who is calling: resolved from the request's token by [`require_token`].
#[derive(Debug, Clone)]
pub struct Caller {
    pub org: String,
    pub role: Role,
    pub name: String,
    /// The token's id (what a dashboard session names).
    pub token_id: String,
    /// The installs the token reaches.
    pub scope: m::TokenScope,
}

/// The API state scoped to the caller: its org, and its name as the actor of what it does.
pub struct Ctx(pub ApiState);

impl FromRequestParts<ApiState> for Ctx {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Response> {
        let caller = parts
            .extensions
            .get::<Caller>()
            .ok_or_else(|| refuse(StatusCode::UNAUTHORIZED, "this request carries no token"))?;
        // `require_token` has kept the caller to the installs it reaches (`reach::guard`).
        Ok(Ctx(state.for_caller(caller)))
    }
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, Json(serde_json::json!({ "error": why }))).into_response()
}

/// Resolves the bearer token of every request: 401 without a valid one, 403 when its role is not
/// enough for the route.
pub async fn require_token(State(s): State<ApiState>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(text) = presented else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "no token: run `ferry login --token T`, or set FERRY_TOKEN",
        );
    };
    let caller = match resolve(&s, text).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    // Before the role: a record out of the caller's reach is not found, whatever the role.
    let (mut parts, body) = req.into_parts();
    if let Err(e) = crate::reach::guard(&s.for_caller(&caller), &mut parts).await {
        return e.into_response();
    }
    let mut req = Request::from_parts(parts, body);
    // The route's template (`/v1/installs/{name}`), or the path when none matched (a 404 then).
    let path = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    // A route that declared no role needs the most a vendor token has (and fails
    // `roles::tests::the_served_description_is_the_table_of_operations` first).
    let op = crate::roles::declared(req.method().as_str(), &path);
    let permitted = op.map_or(caller.role.allows(Role::Admin), |op| {
        op.permits(caller.role)
    });
    if !permitted {
        let needed = op.and_then(|op| op.role).unwrap_or(Role::Admin);
        let also = op
            .and_then(|op| op.also)
            .map_or(String::new(), |a| format!(" or {}", a.name()));
        return refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "token `{}` is a {} token: this needs {}{also}",
                caller.name,
                caller.role.name(),
                needed.name()
            ),
        );
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

pub(crate) async fn resolve(s: &ApiState, text: &str) -> Result<Caller, Response> {
    let invalid = || refuse(StatusCode::UNAUTHORIZED, "invalid token");
    let t = TokenText::parse(text).ok_or_else(invalid)?;
    if check_name("org", &t.org).is_err() || check_name("token", &t.id).is_err() {
        return Err(invalid());
    }
    let stored = match s.store.repo::<ApiToken>().get(&t.org, &t.id).await {
        Ok(Some(v)) => v.value,
        Ok(None) => return Err(invalid()),
        Err(e) => return Err(ApiError::from(e).into_response()),
    };
    if !same(&hash(&t.secret), &stored.secret_sha256) {
        return Err(invalid());
    }
    Caller::of(stored).map_err(|why| refuse(StatusCode::UNAUTHORIZED, &why))
}

impl Caller {
    /// Who a stored token makes the caller, or why it may not be used (revoked; a customer
    /// token bound to no install).
    pub(crate) fn of(token: ApiToken) -> Result<Caller, String> {
        if token.revoked_at.is_some() {
            return Err("this token was revoked".into());
        }
        if let Some(why) = m::unbound_customer(&token.name, token.role, &token.scope) {
            return Err(why);
        }
        Ok(Caller {
            org: token.org,
            role: token.role,
            name: token.name,
            token_id: token.id,
            scope: token.scope,
        })
    }
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Equality that takes as long whatever the first difference (written by hand: one loop, and no
/// crate in the tree offers it without pulling in another).
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// A new token for `org`: the record to store and the text to hand out (once).
pub fn mint(
    org: &str,
    name: &str,
    role: Role,
    scope: m::TokenScope,
) -> Result<(ApiToken, String), getrandom::Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)?;
    let text = TokenText {
        org: org.into(),
        id: m::new_id(),
        secret: hex::encode(secret),
    };
    let record = ApiToken {
        id: text.id.clone(),
        org: org.into(),
        name: name.into(),
        role,
        scope,
        secret_sha256: hash(&text.secret),
        created_at: m::now(),
        revoked_at: None,
    };
    Ok((record, text.render()))
}

/// Creates a token of the caller's org; the answer is the only time its text is shown.
#[utoipa::path(
    post,
    path = m::ops::CreateToken::PATH,
    security(("token" = [m::ops::CreateToken::ROLE_NAME])),
    tag = "tokens",
    request_body = NewToken,
    responses((status = 201, description = "The token; its text is shown only here", body = m::api::CreatedToken), crate::error::Invalid, crate::error::Refusals)
)]
pub async fn create_token(
    Ctx(s): Ctx,
    Json(req): Json<NewToken>,
) -> Result<(StatusCode, Json<m::api::CreatedToken>), ApiError> {
    check_name("token name", &req.name)?;
    if let Some(why) = req.scope.refused_for(req.role) {
        return Err(ApiError::BadRequest(why));
    }
    for install in &req.scope.installs {
        check_name("install", install)?;
    }
    m::check_labels(&req.scope.labels).map_err(ApiError::BadRequest)?;
    let (record, text) = mint(&s.org, &req.name, req.role, req.scope)
        .map_err(|e| ApiError::BadRequest(format!("no randomness for a token: {e}")))?;
    s.store.repo::<ApiToken>().create(&record).await?;
    let detail =
        serde_json::json!({ "name": record.name, "role": record.role, "scope": record.scope });
    audit(&s, "token.created", &record.id, detail).await?;
    let info = TokenInfo::from(record);
    Ok((
        StatusCode::CREATED,
        Json(m::api::CreatedToken { token: text, info }),
    ))
}

#[utoipa::path(
    get,
    path = m::ops::ListTokens::PATH,
    security(("token" = [m::ops::ListTokens::ROLE_NAME])),
    tag = "tokens",
    responses((status = 200, description = "The org's tokens (never their secrets)", body = Vec<TokenInfo>), crate::error::Refusals)
)]
pub async fn list_tokens(Ctx(s): Ctx) -> Result<Json<Vec<TokenInfo>>, ApiError> {
    let mut all = s.store.repo::<ApiToken>().list(&s.org).await?;
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    Ok(Json(all.into_iter().map(TokenInfo::from).collect()))
}

/// Revokes a token: refused from its next request on.
#[utoipa::path(
    delete,
    path = m::ops::RevokeToken::PATH,
    security(("token" = [m::ops::RevokeToken::ROLE_NAME])),
    tag = "tokens",
    params(("id" = String, Path, description = "The token's id or name")),
    responses((status = 200, description = "The token, revoked", body = TokenInfo), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn revoke_token(Ctx(s): Ctx, Name(id): Name) -> Result<Json<TokenInfo>, ApiError> {
    let t = s
        .store
        .repo::<ApiToken>()
        .modify(&s.org, &id, |t| {
            if t.revoked_at.is_some() {
                return Ok::<bool, std::convert::Infallible>(false);
            }
            t.revoked_at = Some(m::now());
            Ok(true)
        })
        .await
        .map_err(|e| match e {
            ferry_store::StoreError::NotFound { .. } => {
                ApiError::NotFound(format!("token `{id}` not found"))
            }
            e => e.into(),
        })?;
    let t = match t {
        Ok(t) => t,
        Err(never) => match never {},
    };
    audit(
        &s,
        "token.revoked",
        &id,
        serde_json::json!({ "name": t.name }),
    )
    .await?;
    Ok(Json(t.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(role: Role, scope: m::TokenScope) -> ApiToken {
        ApiToken {
            id: "t1".into(),
            org: "o".into(),
            name: "acme-sec".into(),
            role,
            scope,
            secret_sha256: String::new(),
            created_at: "t".into(),
            revoked_at: None,
        }
    }

    /// A customer token stored before tokens were bound (no scope in its record) reaches
    /// nothing: it is refused, saying how to issue a bound one.
    #[test]
    fn a_customer_token_stored_unbound_is_refused_with_how_to_reissue_it() {
        let stored = r#"{"id":"t1","org":"o","name":"acme-sec","role":"customer",
            "secret_sha256":"","created_at":"t","revoked_at":null}"#;
        let old: ApiToken = serde_json::from_str(stored).unwrap();
        let why = Caller::of(old).unwrap_err();
        assert!(why.contains("--install NAME"), "{why}");
        let bound = m::TokenScope {
            installs: ["acme".to_string()].into(),
            ..Default::default()
        };
        let caller = Caller::of(token(Role::Customer, bound.clone())).unwrap();
        assert_eq!(caller.scope, bound);
        assert!(Caller::of(token(Role::Viewer, Default::default())).is_ok());
        let mut revoked = token(Role::Viewer, Default::default());
        revoked.revoked_at = Some("t".into());
        assert_eq!(Caller::of(revoked).unwrap_err(), "this token was revoked");
    }
}
