//! Runner bootstrap: a new install's runner trades a one-time token and a CSR for its
//! certificate, and from then on proves who it is with that certificate alone.
//!
//! `installs create` hands out the first token (and `POST /v1/installs/{name}/runner-token` a
//! new one, for another runner host). The token is stored only as a hash, lives
//! `BOOTSTRAP_LIFETIME_SECS`, and is used once: the compare-and-swap that marks it used decides
//! between two runners presenting it at once. `POST /v1/bootstrap` needs no API token (the runner
//! has none); the bootstrap token is the credential, and the CA — not the CSR — decides the
//! certificate's identity: the token's org and install.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use ferry_model::api::RunnerToken;
use ferry_model::{self as m, BootstrapToken, TokenText};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tracing::{info, warn};

use crate::auth::Ctx;
use crate::error::ApiError;
use crate::handlers::audit;
use crate::{ApiState, now_unix};

/// What issues certificates: the hub's CA and how long its certificates live.
#[derive(Clone)]
pub struct Issuer {
    pub ca: Arc<ferry_pki::Ca>,
    pub lifetime: Duration,
}

/// A new bootstrap token for `install` of the caller's org.
pub(crate) async fn issue(s: &ApiState, install: &str) -> Result<RunnerToken, ApiError> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)
        .map_err(|e| ApiError::Unavailable(format!("no randomness for a token: {e}")))?;
    let text = TokenText {
        org: s.org.clone(),
        id: m::new_id(),
        secret: hex::encode(secret),
    };
    let record = BootstrapToken {
        id: text.id.clone(),
        org: s.org.clone(),
        install: install.into(),
        secret_sha256: hex::encode(Sha256::digest(text.secret.as_bytes())),
        created_at: m::now(),
        expires_unix: now_unix() + m::BOOTSTRAP_LIFETIME_SECS,
        used_at: None,
    };
    s.store.repo::<BootstrapToken>().create(&record).await?;
    audit(
        s,
        "install.runner_token",
        install,
        serde_json::json!({ "token": record.id }),
    )
    .await?;
    Ok(RunnerToken {
        token: text.render_bootstrap(),
        install: install.into(),
        expires_in_secs: m::BOOTSTRAP_LIFETIME_SECS,
    })
}

/// `POST /v1/installs/{name}/runner-token` (admin): a new one-time token for a runner.
pub async fn runner_token(
    Ctx(s): Ctx,
    Path(name): Path<String>,
) -> Result<Json<RunnerToken>, ApiError> {
    s.store
        .repo::<m::Install>()
        .get(&s.org, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?;
    Ok(Json(issue(&s, &name).await?))
}

#[derive(Debug, Deserialize)]
pub struct BootstrapRequest {
    pub token: String,
    /// PEM CSR for the key the runner made and keeps.
    pub csr: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BootstrapReply {
    pub org: String,
    pub install: String,
    /// PEM certificate for the CSR's key, naming the install.
    pub certificate: String,
    /// PEM certificate of the CA, to verify the hub with.
    pub ca: String,
}

/// `POST /v1/bootstrap`: a certificate for a one-time token and a CSR.
pub async fn bootstrap(
    State(s): State<ApiState>,
    Json(req): Json<BootstrapRequest>,
) -> Result<Json<BootstrapReply>, ApiError> {
    let refused = |why: &str| {
        warn!(reason = why, "bootstrap refused");
        ApiError::Unauthorized(why.into())
    };
    let Some(issuer) = s.issuer.clone() else {
        return Err(ApiError::Unavailable(
            "this API has no CA to issue certificates with (--hub-dir)".into(),
        ));
    };
    let text = TokenText::parse_bootstrap(req.token.trim())
        .ok_or_else(|| refused("not a bootstrap token"))?;
    let tokens = s.store.repo::<BootstrapToken>();
    let found = tokens
        .get(&text.org, &text.id)
        .await?
        .ok_or_else(|| refused("unknown bootstrap token"))?;
    let digest = hex::encode(Sha256::digest(text.secret.as_bytes()));
    if !crate::auth::same(&digest, &found.value.secret_sha256) {
        return Err(refused("unknown bootstrap token"));
    }
    if let Some(why) = found.value.unusable(now_unix()) {
        return Err(refused(why));
    }
    let record = found.value.clone();
    let identity = ferry_pki::InstallIdentity::new(&record.org, &record.install)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let certificate = issuer
        .ca
        .sign_install_csr(&req.csr, &identity, issuer.lifetime)
        .map_err(|e| ApiError::BadRequest(format!("the CSR: {e}")))?;
    // Used once: of two runners presenting it at once, the swap lets one through.
    let mut used = record.clone();
    used.used_at = Some(m::now());
    tokens
        .update(&used, found.revision)
        .await
        .map_err(|e| match e {
            ferry_store::StoreError::Conflict { .. } => {
                refused("this bootstrap token was already used")
            }
            e => e.into(),
        })?;
    let s = ApiState {
        org: record.org.clone(),
        actor: format!("bootstrap:{}", record.id),
        ..s
    };
    audit(
        &s,
        "install.runner_bootstrapped",
        &record.install,
        serde_json::json!({ "token": record.id }),
    )
    .await?;
    info!(org = %record.org, install = %record.install, "runner bootstrapped");
    Ok(Json(BootstrapReply {
        org: record.org,
        install: record.install,
        certificate,
        ca: issuer.ca.cert_pem().to_string(),
    }))
}
