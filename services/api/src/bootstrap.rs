//! Runner bootstrap: a new install's runner trades a one-time token and a CSR for its
//! certificate, and from then on proves who it is with that certificate alone.
//!
//! `installs create` hands out the first token (and `POST /v1/installs/{name}/runner-token` a
//! new one, for another runner host). The token is stored only as a hash, lives
//! `Issuer::token_lifetime` (an hour by default), and is used once: the compare-and-swap that marks it used decides
//! between two runners presenting it at once. `POST /v1/bootstrap` needs no API token (the runner
//! has none); the bootstrap token is the credential, and the CA — not the CSR — decides the
//! certificate's identity: the token's org and install.

use crate::error::ErrorBody;
use ferry_model::api::{BootstrapReply, BootstrapRequest, Revoked};
use ferry_model::ops::Operation as _;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use ferry_model::api::RunnerToken;
use ferry_model::{self as m, BootstrapToken, TokenText};
use sha2::{Digest, Sha256};
use tracing::{info, warn};

use crate::auth::Ctx;
use crate::error::ApiError;
use crate::handlers::audit;
use crate::ids::Name;
use crate::{ApiState, now_unix};

/// What issues and revokes certificates: the hub's CA, how long its certificates live, and a
/// system-account connection to close a revoked certificate's live connections.
#[derive(Clone)]
pub struct Issuer {
    pub ca: Arc<ferry_pki::Ca>,
    pub lifetime: Duration,
    /// How long a bootstrap token waits for its runner.
    pub token_lifetime: Duration,
    pub sys: async_nats::Client,
    /// Installs' runners are started by the one who started the control plane (`ferry dev`):
    /// creating an install hands out no token (`installs runner-token` still does).
    pub managed_runners: bool,
    /// The hub's leafnode URL as runner hosts reach it, if the operator said.
    pub hub_url: Option<String>,
    /// Certificate renewals an install may make at once; one more comes back every eighth of
    /// a certificate's lifetime.
    pub renewals_at_once: u32,
}

/// The install's runner access as recorded (open with epoch `""` when it has no record).
pub(crate) async fn access(
    store: &ferry_store::Store,
    org: &str,
    install: &str,
) -> Result<m::RunnerAccess, ferry_store::StoreError> {
    Ok(store
        .repo::<m::RunnerAccess>()
        .get(org, install)
        .await?
        .map_or_else(|| m::RunnerAccess::open(org, install), |v| v.value))
}

/// Changes the install's runner access (creating its record); returns it as stored.
async fn change_access(
    s: &ApiState,
    install: &str,
    f: impl Fn(&mut m::RunnerAccess),
) -> Result<m::RunnerAccess, ApiError> {
    let changed = s
        .store
        .repo::<m::RunnerAccess>()
        .upsert(
            &s.org,
            install,
            || m::RunnerAccess::open(&s.org, install),
            |a| {
                f(a);
                Ok::<bool, std::convert::Infallible>(true)
            },
        )
        .await?;
    Ok(changed.unwrap_or_else(|never| match never {}))
}

/// Revokes the install (see `ferry_model::RunnerAccess`): first its access, in one
/// compare-and-swap — from then on no certificate of it is admitted, renewed or bootstrapped —
/// then marks its issued certificates, then closes its live connections.
pub(crate) async fn revoke_install(s: &ApiState, install: &str) -> Result<Revoked, ApiError> {
    let now = m::Timestamp::now();
    let epoch = m::new_id();
    change_access(s, install, |a| a.revoke(epoch.clone(), now)).await?;
    let certs = s.store.repo::<m::IssuedCert>();
    let mut revoked = Vec::new();
    for c in certs.list(&s.org).await? {
        if c.install != install || c.revoked_at.is_some() {
            continue;
        }
        let _always: Result<_, std::convert::Infallible> = certs
            .modify(&s.org, &c.serial, |c| {
                c.revoked_at.get_or_insert(now.to_string());
                Ok(true)
            })
            .await?;
        revoked.push(c.serial);
    }
    // Revoked first, then closed: a reconnect asks the callout, which now refuses it.
    let closed = match &s.issuer {
        Some(i) => {
            let kick = crate::callout::kick(&i.sys, &s.org, install);
            match tokio::time::timeout(Duration::from_secs(10), kick).await {
                Ok(r) => r.map_err(|e| {
                    ApiError::Unavailable(format!("closing the install's connections: {e}"))
                })?,
                Err(_) => {
                    return Err(ApiError::Unavailable(
                        "the install is revoked, but the hub did not answer within 10 s: its live connections may stay until they reconnect".into(),
                    ));
                }
            }
        }
        None => 0,
    };
    audit(
        s,
        "install.certificates_revoked",
        install,
        serde_json::json!({ "certificates": revoked, "connections_closed": closed, "epoch": epoch }),
    )
    .await?;
    Ok(Revoked {
        install: install.into(),
        certificates: revoked,
        connections_closed: closed,
    })
}

/// `POST /v1/installs/{name}/revoke` (admin): revokes the install; its runners are disconnected
/// within seconds and refused from then on, until an operator issues a new bootstrap token and a
/// runner bootstraps with it.
#[utoipa::path(
    post,
    path = m::ops::RevokeRunners::PATH,
    security(("token" = [m::ops::RevokeRunners::ROLE_NAME])),
    tag = "runners",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 200, description = "The install's runner certificates revoked and their connections closed", body = Revoked), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn revoke(Ctx(s): Ctx, Name(name): Name) -> Result<Json<Revoked>, ApiError> {
    s.store
        .repo::<m::Install>()
        .get(&s.org, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?;
    Ok(Json(revoke_install(&s, &name).await?))
}

/// A new bootstrap token for `install` of the caller's org. It opens a revoked install again, to
/// runners bootstrapped from now on.
pub(crate) async fn issue(s: &ApiState, install: &str) -> Result<RunnerToken, ApiError> {
    let access = change_access(s, install, m::RunnerAccess::reopen).await?;
    let lifetime = s
        .issuer
        .as_ref()
        .map_or(m::BOOTSTRAP_LIFETIME_SECS, |i| i.token_lifetime.as_secs());
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
        expires_unix: now_unix() + lifetime,
        used_at: None,
        epoch: access.epoch,
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
        expires_in_secs: lifetime,
        hub_url: s.issuer.as_ref().and_then(|i| i.hub_url.clone()),
    })
}

/// `POST /v1/installs/{name}/runner-token` (admin): a new one-time token for a runner.
#[utoipa::path(
    post,
    path = m::ops::RunnerTokenOp::PATH,
    security(("token" = [m::ops::RunnerTokenOp::ROLE_NAME])),
    tag = "runners",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 200, description = "A one-time token for the install's runner", body = m::api::RunnerToken), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn runner_token(Ctx(s): Ctx, Name(name): Name) -> Result<Json<RunnerToken>, ApiError> {
    s.store
        .repo::<m::Install>()
        .get(&s.org, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("install `{name}` not found")))?;
    Ok(Json(issue(&s, &name).await?))
}

/// `POST /v1/bootstrap`: a certificate for a one-time token and a CSR.
/// The bootstrap token `text` names, if its secret matches and it may still be used; refused
/// (401) otherwise, the same way whether it is unknown or its secret is wrong.
async fn usable_token(
    s: &ApiState,
    text: &str,
) -> Result<ferry_store::Versioned<BootstrapToken>, ApiError> {
    let refused = |why: &str| {
        warn!(reason = why, "bootstrap refused");
        ApiError::Unauthorized(why.into())
    };
    let text =
        TokenText::parse_bootstrap(text.trim()).ok_or_else(|| refused("not a bootstrap token"))?;
    let found = s
        .store
        .repo::<BootstrapToken>()
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
    Ok(found)
}

#[utoipa::path(
    post,
    path = m::ops::Bootstrap::PATH,
    security(()),
    tag = "runners",
    request_body = BootstrapRequest,
    responses((status = 200, description = "The install's certificate", body = BootstrapReply), crate::error::Invalid, (status = 401, description = "The one-time token is not valid", body = ErrorBody))
)]
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
    let found = usable_token(&s, &req.token).await?;
    let tokens = s.store.repo::<BootstrapToken>();
    let record = found.value.clone();
    let access = access(&s.store, &record.org, &record.install).await?;
    if let Some(why) = access.refuses_token(&record) {
        return Err(refused(&why));
    }
    let identity = ferry_pki::InstallIdentity::new(&record.org, &record.install)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let certificate = issuer
        .ca
        .sign_install_csr(&req.csr, &identity, issuer.lifetime)
        .map_err(|e| ApiError::BadRequest(format!("the CSR: {e}")))?;
    let info = ferry_pki::CertInfo::parse(&certificate)
        .map_err(|e| ApiError::Unavailable(format!("reading the certificate just issued: {e}")))?;
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
    s.store
        .repo::<m::IssuedCert>()
        .create(&m::IssuedCert {
            serial: info.serial.clone(),
            org: record.org.clone(),
            install: record.install.clone(),
            issued_at: m::now(),
            not_after_unix: info.not_after_unix,
            revoked_at: None,
            epoch: access.epoch.clone(),
        })
        .await?;
    let s = ApiState {
        org: record.org.clone(),
        actor: format!("bootstrap:{}", record.id),
        ..s
    };
    audit(
        &s,
        "install.runner_bootstrapped",
        &record.install,
        serde_json::json!({ "token": record.id, "certificate": info.serial }),
    )
    .await?;
    info!(org = %record.org, install = %record.install, serial = %info.serial, "runner bootstrapped");
    Ok(Json(BootstrapReply {
        org: record.org,
        install: record.install,
        certificate,
        ca: issuer.ca.cert_pem().to_string(),
    }))
}

/// Serves runners' certificate renewals (`RenewRequest`): on
/// `ferry.renew.<org>.<install>.<serial>`, where the hub lets a connection ask only for the
/// certificate it presented (`permissions::install_certificate`), so one with most of its life
/// left is refused (`IssuedCert::refuses_renewal`); and on `ferry.rx.<org>.<install>.renew`, the
/// subject of runners before that, within the same per-install bucket. Either way the connection
/// was admitted with the install's current certificate, so the new one names the install the
/// subject does. Every replica answers in one queue group.
pub async fn serve_renewals(
    client: async_nats::Client,
    store: ferry_store::Store,
    issuer: Issuer,
    tasks: ferry_store::Tasks,
) -> Result<(), ferry_store::StoreError> {
    use ferry_protocol::messages::{RenewReply, RenewRequest};
    use ferry_store::serve::{Answer, serve};
    let limits = std::sync::Arc::new(RenewalLimits::default());
    let feed = ferry_store::events::EventFeed::new(store.clone());
    serve::<RenewRequest, _, _>(client, "ferry-renew", &tasks, move |caller, req| {
        let s = ApiState {
            store: store.clone(),
            org: caller.org.clone(),
            actor: format!("runner:{}", caller.install),
            issuer: Some(issuer.clone()),
            streams: Default::default(),
            feed: feed.clone(),
            tasks: Default::default(),
            stack_bucket: None,
            scope: Default::default(),
            role: m::Role::Viewer,
        };
        let (limits, ca) = (limits.clone(), issuer.ca.cert_pem().to_string());
        async move {
            let (org, install) = (&caller.org, &caller.install);
            Answer::reply(
                match renew(&s, &limits, install, caller.serial(), &req.csr).await {
                    Ok((certificate, serial)) => {
                        info!(org, install, %serial, "certificate renewed");
                        RenewReply::Issued { certificate, ca }
                    }
                    Err(e) => {
                        warn!(org, install, error = %e, "certificate renewal refused");
                        RenewReply::Refused {
                            reason: e.to_string(),
                        }
                    }
                },
            )
        }
    })
    .await
}

/// Renewals an install may make at once by default (`ferry_model::quotas::TokenBucket`).
pub const RENEWALS_AT_ONCE: u32 = 8;

/// Each install's renewals allowed, in this replica (every replica answers a share of the
/// requests, so an install gets at most this many per replica: a bound all the same).
#[derive(Debug, Default)]
pub struct RenewalLimits {
    buckets: std::sync::Mutex<std::collections::HashMap<(String, String), m::quotas::TokenBucket>>,
}

impl RenewalLimits {
    /// Whether `install` of `org` may renew now, certificates living `lifetime`.
    fn allow(&self, org: &str, install: &str, lifetime: Duration, at_once: u32) -> bool {
        let now = m::now_ms();
        let refill = u64::try_from(lifetime.as_millis() / 8).unwrap_or(u64::MAX);
        let Ok(mut buckets) = self.buckets.lock() else {
            return false;
        };
        buckets
            .entry((org.to_string(), install.to_string()))
            .or_insert_with(|| m::quotas::TokenBucket::full(at_once, now))
            .take(now, at_once, refill)
    }
}

/// A new certificate for `install` of `s.org` over `csr`, recorded and audited.
async fn renew(
    s: &ApiState,
    limits: &RenewalLimits,
    install: &str,
    asking: Option<&str>,
    csr: &str,
) -> Result<(String, String), ApiError> {
    let issuer = s
        .issuer
        .as_ref()
        .ok_or_else(|| ApiError::Unavailable("no CA".into()))?;
    if let Some(serial) = asking {
        let cert = s
            .store
            .repo::<m::IssuedCert>()
            .get(&s.org, serial)
            .await?
            .ok_or_else(|| {
                ApiError::Unauthorized(format!("certificate {serial} was not issued here"))
            })?
            .value;
        if let Some(why) =
            cert.refuses_renewal(&s.org, install, issuer.lifetime.as_secs(), now_unix())
        {
            return Err(ApiError::TooManyRequests(why));
        }
    }
    if !limits.allow(&s.org, install, issuer.lifetime, issuer.renewals_at_once) {
        return Err(ApiError::TooManyRequests(format!(
            "install {}/{install} renewed its certificate {} times lately: a runner renews once per two thirds of a certificate's life; try again later",
            s.org, issuer.renewals_at_once
        )));
    }
    // Read before signing: a revocation that lands after this read starts a new epoch, and the
    // certificate recorded below, in this one, is never admitted.
    let access = access(&s.store, &s.org, install).await?;
    if let Some(why) = access.refuses_issue() {
        return Err(ApiError::Unauthorized(why));
    }
    let identity = ferry_pki::InstallIdentity::new(&s.org, install)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let certificate = issuer
        .ca
        .sign_install_csr(csr, &identity, issuer.lifetime)
        .map_err(|e| ApiError::BadRequest(format!("the CSR: {e}")))?;
    let info = ferry_pki::CertInfo::parse(&certificate)
        .map_err(|e| ApiError::Unavailable(format!("reading the certificate just issued: {e}")))?;
    s.store
        .repo::<m::IssuedCert>()
        .create(&m::IssuedCert {
            serial: info.serial.clone(),
            org: s.org.clone(),
            install: install.into(),
            issued_at: m::now(),
            not_after_unix: info.not_after_unix,
            revoked_at: None,
            epoch: access.epoch,
        })
        .await?;
    audit(
        s,
        "install.certificate_renewed",
        install,
        serde_json::json!({ "certificate": info.serial }),
    )
    .await?;
    Ok((certificate, info.serial))
}
