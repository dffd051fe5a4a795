//! Dashboard sessions: the cookie holds `<org>.<secret>`, a random value that names a
//! `DashboardSession` record (kept under the secret's hash) — never the API token. Signing out
//! deletes the record, so a copied cookie stops working at once; revoking the token ends every
//! session made with it (each request reads the token's record again).

use ferry_model::{self as m, ApiToken, DashboardSession};
use sha2::{Digest, Sha256};

use crate::ApiState;
use crate::auth::Caller;
use crate::ids::check_name;

fn secret_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(format!("ferry-dashboard-session:{secret}")))
}

/// A new session for `caller`; the cookie's value.
pub(super) async fn start(s: &ApiState, caller: &Caller) -> Result<String, crate::ApiError> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b)
        .map_err(|e| crate::ApiError::Unavailable(format!("no randomness for a session: {e}")))?;
    let secret = hex::encode(b);
    s.store
        .repo::<DashboardSession>()
        .create(&DashboardSession {
            id: secret_hash(&secret),
            org: caller.org.clone(),
            token_id: caller.token_id.clone(),
            expires_ms: m::now_ms().saturating_add(m::DASHBOARD_SESSION_MS),
        })
        .await?;
    Ok(format!("{}.{secret}", caller.org))
}

/// The caller a cookie's value signs in as, if its session is live and its token not revoked.
pub(super) async fn resolve(s: &ApiState, cookie: &str) -> Option<Caller> {
    let (org, secret) = cookie.split_once('.')?;
    if check_name("org", org).is_err() || secret.len() != 64 {
        return None;
    }
    let session = s
        .store
        .repo::<DashboardSession>()
        .get(org, &secret_hash(secret))
        .await
        .ok()??
        .value;
    if session.expires_ms <= m::now_ms() {
        return None;
    }
    let token = s
        .store
        .repo::<ApiToken>()
        .get(org, &session.token_id)
        .await
        .ok()??
        .value;
    Caller::of(token).ok()
}

/// Ends the session a cookie's value names (nothing if there is none).
pub(super) async fn end(s: &ApiState, cookie: &str) -> Result<(), crate::ApiError> {
    if let Some((org, secret)) = cookie.split_once('.')
        && check_name("org", org).is_ok()
    {
        s.store
            .repo::<DashboardSession>()
            .delete(org, &secret_hash(secret))
            .await?;
    }
    Ok(())
}
