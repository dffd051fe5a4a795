//! The hub's NATS auth callout: decides who a connecting runner is and what it may touch.
//!
//! nats-server asks, on `$SYS.REQ.USER.AUTH`, about every connection that is not one of the
//! control plane's configured users (`ferry_pki::hub`). By then the server's TLS layer has
//! verified the client certificate against Ferry's CA; the request carries it. The callout reads
//! the install the certificate names (its SPIFFE SAN URI), and admits the connection as a user
//! allowed exactly that install's subjects (`subjects::install_permissions`) until the
//! certificate expires. Anything else is refused with the reason, which the server logs. A new
//! install needs no hub restart and no configuration change.

use ferry_pki::natsjwt::{self, AuthRequest, Grant, Permissions, SubjectRule};
use ferry_pki::{CertInfo, hub};
use ferry_protocol::subjects;
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
}

/// What the callout decided about one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Admit(Box<Grant>),
    Refuse(String),
}

/// The decision for a connection, from what the server says about it.
pub fn decide(req: &AuthRequest) -> Decision {
    let Some(pem) = req.client_tls.as_ref().and_then(|t| t.verified_leaf()) else {
        return Decision::Refuse("no client certificate verified by the hub's CA".into());
    };
    let info = match CertInfo::parse(pem) {
        Ok(i) => i,
        Err(e) => return Decision::Refuse(e.to_string()),
    };
    let id = &info.identity;
    let (publish, subscribe) = subjects::install_permissions(&id.org, &id.install);
    Decision::Admit(Box::new(Grant {
        name: format!("install:{}.{}", id.org, id.install),
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

/// Serves authorization requests until the subscription ends. Every replica answers in one
/// queue group.
pub async fn serve(client: async_nats::Client, issuer: nkeys::KeyPair) -> Result<(), CalloutError> {
    let mut sub = client
        .queue_subscribe(AUTH_SUBJECT, "ferry-auth".into())
        .await
        .map_err(CalloutError::Subscribe)?;
    info!("auth callout serving");
    while let Some(msg) = sub.next().await {
        let Some(reply) = msg.reply.clone() else {
            continue;
        };
        let text = String::from_utf8_lossy(&msg.payload);
        let req = match natsjwt::decode_request(&text) {
            Ok(r) => r,
            Err(e) => {
                // Without a readable request there is no one to address a refusal to: the
                // server times the connection out.
                warn!(error = %e, "unreadable authorization request");
                continue;
            }
        };
        let response = match decide(&req) {
            Decision::Admit(grant) => {
                info!(user = %grant.name, client = req.client_info.id, host = %req.client_info.host, "connection admitted");
                natsjwt::allow(&req, &grant, &issuer)
            }
            Decision::Refuse(reason) => {
                warn!(%reason, client = req.client_info.id, host = %req.client_info.host, "connection refused");
                natsjwt::deny(&req, &reason, &issuer)
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
    Err(CalloutError::Ended)
}
