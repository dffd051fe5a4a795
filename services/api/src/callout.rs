//! The hub's NATS auth callout: decides who a connecting runner is and what it may touch.
//!
//! nats-server asks, on `$SYS.REQ.USER.AUTH`, about every connection that is not one of the
//! control plane's configured users (`ferry_pki::hub`). By then the server's TLS layer has
//! verified the client certificate against Ferry's CA; the request carries it. The callout reads
//! the install the certificate names (its SPIFFE SAN URI), and admits the connection as a user
//! allowed exactly that install's subjects (`permissions::install`) until the
//! certificate expires. Anything else is refused with the reason, which the server logs. A new
//! install needs no hub restart and no configuration change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_model as m;
use ferry_pki::natsjwt::{self, AuthRequest, Grant, Permissions, SubjectRule};
use ferry_pki::{CertInfo, hub};
use ferry_store::Store;
use futures_util::StreamExt;
use tracing::{info, warn};

/// The subject nats-server sends authorization requests to.
pub const AUTH_SUBJECT: &str = "$SYS.REQ.USER.AUTH";

#[derive(Debug, thiserror::Error)]
pub enum CalloutError {
    #[error("subscribing to {AUTH_SUBJECT}: {0}")]
    Subscribe(#[source] async_nats::SubscribeError),
    #[error("the authorization request subscription ended")]
    Ended,
    #[error("asking the hub's servers: {0}")]
    Sys(String),
    #[error(transparent)]
    Store(#[from] ferry_store::StoreError),
}

/// The NATS user name an install's connections carry (what the server's connection list shows,
/// and what a revocation looks for).
pub fn user_name(org: &str, install: &str) -> String {
    format!("install:{org}.{install}")
}

/// What the callout decided about one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Admit(Box<Grant>),
    Refuse(String),
}

/// The certificate the server verified for the connection `req` describes.
pub fn certificate(req: &AuthRequest) -> Result<CertInfo, String> {
    let pem = req
        .client_tls
        .as_ref()
        .and_then(|t| t.verified_leaf())
        .ok_or("no client certificate verified by the hub's CA")?;
    CertInfo::parse(pem).map_err(|e| e.to_string())
}

/// The decision for a connection with certificate `info`, given its install's runner access and
/// the record of its issue (from the `certificates` bucket, if it has one): see
/// `ferry_model::RunnerAccess::refuses_certificate`.
pub fn decide(
    info: &CertInfo,
    access: &m::RunnerAccess,
    issued: Option<&m::IssuedCert>,
    now: m::Timestamp,
) -> Decision {
    if let Some(why) = access
        .refuses_certificate(&info.serial, issued)
        .or_else(|| access.refuses_connection(now))
    {
        return Decision::Refuse(why);
    }
    let id = &info.identity;
    let grant =
        ferry_protocol::permissions::install_certificate(&id.org, &id.install, &info.serial);
    let (publish, subscribe) = (grant.publish, grant.subscribe);
    Decision::Admit(Box::new(Grant {
        name: user_name(&id.org, &id.install),
        account: hub::ACCOUNT.into(),
        permissions: Permissions {
            publish: SubjectRule {
                allow: publish,
                deny: vec![],
            },
            subscribe: SubjectRule {
                allow: subscribe,
                deny: vec![],
            },
        },
        expires_unix: Some(info.not_after_unix),
    }))
}

/// The leaf connections this replica admitted, by install (`(org, install)`): the hub's
/// connection list (`CONNZ`) shows clients with the user the callout named, but its leaf list
/// (`LEAFZ`) names no user, so closing an install's leaf needs the server and connection id the
/// callout saw. Kept per replica (each answers a share of the requests; every replica closes
/// its own); the latest few per install.
#[derive(Debug, Clone, Default)]
pub struct Admitted {
    leafs: Arc<Mutex<HashMap<InstallKey, Vec<LeafConn>>>>,
}

/// `(org, install)`.
type InstallKey = (String, String);
/// A leaf connection: the hub server's id, and the connection's id on it.
type LeafConn = (String, u64);

/// Leaf connections kept per install: a leaf reconnecting many times leaves no more.
const LEAFS_KEPT: usize = 8;

impl Admitted {
    fn record(&self, org: &str, install: &str, server: &str, cid: u64) {
        if let Ok(mut leafs) = self.leafs.lock() {
            let list = leafs
                .entry((org.to_string(), install.to_string()))
                .or_default();
            list.push((server.to_string(), cid));
            if list.len() > LEAFS_KEPT {
                list.remove(0);
            }
        }
    }

    fn of(&self, org: &str, install: &str) -> Vec<LeafConn> {
        self.leafs
            .lock()
            .ok()
            .and_then(|l| l.get(&(org.to_string(), install.to_string())).cloned())
            .unwrap_or_default()
    }
}

/// Serves authorization requests until the subscription ends or `tasks` is asked to stop (then
/// the answers in flight are sent first). Every replica answers in one queue group.
pub async fn serve(
    client: async_nats::Client,
    issuer: nkeys::KeyPair,
    store: Store,
    admitted: Admitted,
    tasks: ferry_store::Tasks,
) -> Result<(), CalloutError> {
    // Raw, not `ferry_store::serve`: nats-server's auth callout protocol (JWTs signed with the
    // callout's key), not a Ferry message from an install.
    let mut sub = client
        .queue_subscribe(AUTH_SUBJECT, "ferry-auth".into())
        .await
        .map_err(CalloutError::Subscribe)?;
    info!("auth callout serving");
    let issuer = Arc::new(issuer);
    let serving = async {
        while let Some(msg) = sub.next().await {
            // Each in its own task: a hub restarting with thousands of installs asks about all
            // of them at once.
            let (client, issuer, store) = (client.clone(), issuer.clone(), store.clone());
            let admitted = admitted.clone();
            tasks.spawn(async move { answer(&client, &issuer, &store, &admitted, msg).await });
        }
        Err(CalloutError::Ended)
    };
    tasks.serve("callout", serving).await
}

/// Decides about one connection and answers the server.
async fn answer(
    client: &async_nats::Client,
    issuer: &nkeys::KeyPair,
    store: &Store,
    admitted: &Admitted,
    msg: async_nats::Message,
) {
    let Some(reply) = msg.reply.clone() else {
        return;
    };
    let text = String::from_utf8_lossy(&msg.payload);
    let req = match natsjwt::decode_request(&text) {
        Ok(r) => r,
        Err(e) => {
            // Without a readable request there is no one to address a refusal to: the
            // server times the connection out.
            warn!(error = %e, "unreadable authorization request");
            return;
        }
    };
    let decision = match certificate(&req) {
        Err(why) => Decision::Refuse(why),
        Ok(info) => match standing(store, &info).await {
            Ok((access, issued)) => {
                let d = decide(&info, &access, issued.as_ref(), m::Timestamp::now());
                if matches!(d, Decision::Admit(_)) && req.client_info.kind == "Leafnode" {
                    let id = &info.identity;
                    admitted.record(&id.org, &id.install, &req.server_id.id, req.client_info.id);
                }
                d
            }
            // Unknown is not admitted: the server retries the connection.
            Err(e) => Decision::Refuse(format!("cannot check revocation now: {e}")),
        },
    };
    let verdict = match &decision {
        Decision::Admit(_) => "admit",
        Decision::Refuse(_) => "refuse",
    };
    ferry_telemetry::metrics()
        .callout_decisions
        .get_or_create(&ferry_telemetry::DecisionLabels {
            decision: verdict.to_string(),
        })
        .inc();
    let response = match decision {
        Decision::Admit(grant) => {
            info!(user = %grant.name, client = req.client_info.id, host = %req.client_info.host, "connection admitted");
            natsjwt::allow(&req, &grant, issuer)
        }
        Decision::Refuse(reason) => {
            warn!(%reason, client = req.client_info.id, host = %req.client_info.host, "connection refused");
            natsjwt::deny(&req, &reason, issuer)
        }
    };
    match response {
        Ok(jwt) => {
            if let Err(e) = client.publish(reply, jwt.into()).await {
                warn!(error = %e, "could not answer an authorization request");
            }
        }
        Err(e) => warn!(error = %e, "could not sign an authorization response"),
    }
}

/// The certificate's install's runner access, and the record of its issue.
async fn standing(
    store: &Store,
    info: &CertInfo,
) -> Result<(m::RunnerAccess, Option<m::IssuedCert>), ferry_store::StoreError> {
    let id = &info.identity;
    let access = crate::bootstrap::access(store, &id.org, &id.install).await?;
    let issued = store
        .repo::<m::IssuedCert>()
        .get(&id.org, &info.serial)
        .await?
        .map(|c| c.value);
    Ok((access, issued))
}

/// Closes the live connections of every install log-ingest throttles (`RunnerAccess::throttle`),
/// as the throttle is written: the callout refuses their new ones meanwhile. Every api replica
/// watches; a second close of a closed connection finds nothing.
pub async fn close_throttled(
    sys: async_nats::Client,
    store: Store,
    admitted: Admitted,
) -> Result<(), CalloutError> {
    let changes = store.repo::<m::RunnerAccess>().watch().await?;
    let mut changes = std::pin::pin!(changes);
    info!("closing throttled installs' connections");
    while let Some(access) = changes.next().await {
        let Ok(access) = access else { continue };
        if access.throttled(m::Timestamp::now()) {
            warn!(org = %access.org, install = %access.install, reason = access.throttle_reason.as_deref().unwrap_or(""), "install throttled: closing its connections");
            if let Err(e) = kick(&sys, &access.org, &access.install).await {
                warn!(org = %access.org, install = %access.install, error = %e, "could not close a throttled install's connections");
            }
            for (server, cid) in admitted.of(&access.org, &access.install) {
                // A leaf closed already answers with an error: nothing to do.
                let ok = kick_one(&sys, &server, cid).await.is_ok();
                info!(org = %access.org, install = %access.install, %server, cid, ok, "throttled install's leaf closed");
            }
        }
    }
    Err(CalloutError::Ended)
}

/// Closes connection `cid` on hub server `server`.
async fn kick_one(
    sys: &async_nats::Client,
    server: &str,
    cid: u64,
) -> Result<async_nats::Message, async_nats::RequestError> {
    let body = serde_json::json!({ "cid": cid }).to_string();
    sys.request(format!("$SYS.REQ.SERVER.{server}.KICK"), body.into())
        .await
}

/// Closes every live connection of `install` on every hub server (with a system-account
/// connection): lists each server's connections of account `FERRY` (`CONNZ`) and kicks the
/// install's. Returns how many were closed.
pub async fn kick(
    sys: &async_nats::Client,
    org: &str,
    install: &str,
) -> Result<usize, CalloutError> {
    let err = |e: &dyn std::fmt::Display| CalloutError::Sys(e.to_string());
    let user = user_name(org, install);
    // Raw: a `$SYS` request every hub server answers (scatter-gather), read from an inbox of
    // its own until the servers have spoken.
    let inbox = sys.new_inbox();
    let mut replies = sys.subscribe(inbox.clone()).await.map_err(|e| err(&e))?;
    let filter = serde_json::json!({ "acc": hub::ACCOUNT, "auth": true, "limit": 100_000 });
    sys.publish_with_reply(
        "$SYS.REQ.SERVER.PING.CONNZ",
        inbox,
        filter.to_string().into(),
    )
    .await
    .map_err(|e| err(&e))?;
    sys.flush().await.map_err(|e| err(&e))?;
    let mut targets = Vec::new();
    // Every server answers; gather what arrives within a short window.
    let window = tokio::time::sleep(Duration::from_millis(500));
    tokio::pin!(window);
    loop {
        tokio::select! {
            _ = &mut window => break,
            msg = replies.next() => {
                let Some(msg) = msg else { break };
                let Ok(v) = serde_json::from_slice::<serde_json::Value>(&msg.payload) else { continue };
                let server = v["server"]["id"].as_str().unwrap_or_default().to_string();
                for c in v["data"]["connections"].as_array().into_iter().flatten() {
                    if c["authorized_user"].as_str() == Some(user.as_str()) {
                        targets.push((server.clone(), c["cid"].as_u64().unwrap_or_default()));
                    }
                }
            }
        }
    }
    let mut closed = 0;
    for (server, cid) in targets {
        match kick_one(sys, &server, cid).await {
            Ok(_) => closed += 1,
            Err(e) => warn!(%server, cid, error = %e, "could not close a revoked connection"),
        }
    }
    info!(org, install, closed, "closed the install's connections");
    Ok(closed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn info_for(install: &str) -> CertInfo {
        let ca = ferry_pki::Ca::generate("test").unwrap();
        let id = ferry_pki::InstallIdentity::new("acme", install).unwrap();
        let (csr, _key) = ferry_pki::generate_install_csr(&id).unwrap();
        let pem = ca
            .sign_install_csr(&csr, &id, Duration::from_secs(600))
            .unwrap();
        CertInfo::parse(&pem).unwrap()
    }

    #[test]
    fn an_install_certificate_is_admitted_with_its_install_permissions_until_it_expires() {
        let info = info_for("prod");
        let access = m::RunnerAccess::open("acme", "prod");
        let Decision::Admit(grant) = decide(&info, &access, None, m::Timestamp::from_ms(0)) else {
            panic!("refused");
        };
        assert_eq!(grant.name, "install:acme.prod");
        assert_eq!(grant.account, hub::ACCOUNT);
        assert_eq!(grant.expires_unix, Some(info.not_after_unix));
        let expected =
            ferry_protocol::permissions::install_certificate("acme", "prod", &info.serial);
        assert_eq!(grant.permissions.publish.allow, expected.publish);
        assert_eq!(grant.permissions.subscribe.allow, expected.subscribe);
    }

    #[test]
    fn every_certificate_of_a_revoked_install_is_refused_with_the_reason() {
        let info = info_for("prod");
        let mut access = m::RunnerAccess::open("acme", "prod");
        access.revoke("e1".into(), m::Timestamp::from_ms(1_767_225_600_000));
        let Decision::Refuse(why) = decide(&info, &access, None, m::Timestamp::from_ms(0)) else {
            panic!("admitted");
        };
        assert!(why.contains("revoked at 2026-01-01"), "{why}");
    }

    #[test]
    fn a_throttled_install_is_refused_until_the_throttle_ends() {
        let info = info_for("prod");
        let mut access = m::RunnerAccess::open("acme", "prod");
        access.throttle(60_000, "LOGS: 300 MiB in a minute".into());
        let Decision::Refuse(why) = decide(&info, &access, None, m::Timestamp::from_ms(1_000))
        else {
            panic!("admitted");
        };
        assert!(why.contains("throttled"), "{why}");
        assert!(matches!(
            decide(&info, &access, None, m::Timestamp::from_ms(60_000)),
            Decision::Admit(_)
        ));
    }
}
