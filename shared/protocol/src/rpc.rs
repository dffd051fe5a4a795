//! Requests a runner makes of the control plane, declared once each: the request's type names its
//! reply's type, the subjects its servers listen on, and what a request that cannot be read is
//! answered. The services serve them with `ferry_store::serve` (which reads the caller from the
//! subject once, in one place, before any handler runs); the runner asks with [`ask`].
//!
//! Every such subject is `ferry.<kind>.<org>.<install>...`, and the hub lets an install's
//! connection publish only on its own (`permissions`): the subject is the only identity a
//! request has, and the [`Caller`] is read from it, never from the message.

use std::time::Duration;

use crate::codec::{CodecError, Message, decode, encode};
use crate::messages::{
    ArtifactRead, ArtifactReply, ClaimReply, ClaimRequest, Heartbeat, LeaseRenewal, LeaseReply,
    OfferQuery, OfferReply, RenewReply, RenewRequest, StackReport,
};
use crate::subjects;

/// A message an install's runner sends the control plane on a subject of its own.
pub trait FromInstall: Message + Send + 'static {
    /// Its name in logs and metrics (`ferry_messages_rejected_total{consumer}`).
    const LABEL: &'static str;
    /// The subjects its servers subscribe to: every install's.
    const SERVED_ON: &'static [&'static str];
}

/// A [`FromInstall`] message that is answered.
pub trait Request: FromInstall {
    type Reply: Message + Send + 'static;
    /// The answer to a request that cannot be read, when the reply can say so.
    fn refused(reason: String) -> Option<Self::Reply>;
}

/// Who sent a message: the org and install its subject names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub org: String,
    pub install: String,
    /// The subject it came on (a renewal's names the certificate that asks).
    pub subject: String,
}

impl Caller {
    /// The caller a subject `ferry.<kind>.<org>.<install>...` names, if it is one.
    pub fn of(subject: &str) -> Option<Caller> {
        let (org, install) = subjects::org_install(subject)?;
        if !subjects::is_valid_token(org) || !subjects::is_valid_token(install) {
            return None;
        }
        Some(Caller {
            org: org.into(),
            install: install.into(),
            subject: subject.into(),
        })
    }

    /// The token after the install in the subject: the serial of the certificate a renewal on
    /// `ferry.renew.<org>.<install>.<serial>` comes from.
    pub fn serial(&self) -> Option<&str> {
        self.subject
            .strip_prefix("ferry.renew.")
            .and_then(|r| r.split('.').nth(2))
    }
}

impl FromInstall for ClaimRequest {
    const LABEL: &'static str = "claims";
    const SERVED_ON: &'static [&'static str] = &[subjects::CLAIM_ALL];
}
impl Request for ClaimRequest {
    type Reply = ClaimReply;
    fn refused(reason: String) -> Option<ClaimReply> {
        Some(ClaimReply::Refused { reason })
    }
}

impl FromInstall for LeaseRenewal {
    const LABEL: &'static str = "leases";
    const SERVED_ON: &'static [&'static str] = &[subjects::LEASE_ALL];
}
impl Request for LeaseRenewal {
    type Reply = LeaseReply;
    fn refused(reason: String) -> Option<LeaseReply> {
        Some(LeaseReply::Lost { reason })
    }
}

impl FromInstall for OfferQuery {
    const LABEL: &'static str = "offers";
    const SERVED_ON: &'static [&'static str] = &[subjects::OFFERS_ALL];
}
impl Request for OfferQuery {
    type Reply = OfferReply;
    /// An unreadable query is not answered: the runner's walk asks again.
    fn refused(_: String) -> Option<OfferReply> {
        None
    }
}

impl FromInstall for ArtifactRead {
    const LABEL: &'static str = "artifacts";
    const SERVED_ON: &'static [&'static str] = &[subjects::ARTIFACT_ALL];
}
impl Request for ArtifactRead {
    type Reply = ArtifactReply;
    fn refused(reason: String) -> Option<ArtifactReply> {
        Some(ArtifactReply::Refused {
            reason: format!("undecodable request: {reason}"),
        })
    }
}

impl FromInstall for RenewRequest {
    const LABEL: &'static str = "renewals";
    /// By the certificate that asks, and on the subject of runners from before that.
    const SERVED_ON: &'static [&'static str] =
        &[subjects::RENEW_CERTIFICATE_ALL, subjects::RENEW_ALL];
}
impl Request for RenewRequest {
    type Reply = RenewReply;
    fn refused(reason: String) -> Option<RenewReply> {
        Some(RenewReply::Refused {
            reason: format!("undecodable request: {reason}"),
        })
    }
}

impl FromInstall for Heartbeat {
    const LABEL: &'static str = "heartbeats";
    const SERVED_ON: &'static [&'static str] = &[subjects::HEARTBEAT_ALL];
}

impl FromInstall for StackReport {
    const LABEL: &'static str = "stack reports";
    const SERVED_ON: &'static [&'static str] = &[subjects::STACK_ALL];
}

/// Why a request got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Nobody answered within the time given (no server, or a slow one): ask again later.
    #[error("no answer within {0:?}")]
    NoAnswer(Duration),
    /// The request could not be sent, or no server listens; the source keeps its kind.
    #[error("NATS: {0}")]
    Nats(#[source] async_nats::RequestError),
    #[error("an unreadable answer: {0}")]
    Unreadable(#[source] CodecError),
}

impl AskError {
    /// Whether asking again may help (every kind but an unreadable answer).
    pub fn is_transient(&self) -> bool {
        !matches!(self, AskError::Unreadable(_))
    }

    /// Nothing serves the request at all (no service is running), as opposed to one that did
    /// not answer in time.
    pub fn nobody_serves(&self) -> bool {
        matches!(self, AskError::Nats(e) if e.kind() == async_nats::RequestErrorKind::NoResponders)
    }
}

/// Sends `request` on `subject` (one of the caller's own) and waits up to `within` for its
/// answer.
pub async fn ask<R: Request>(
    client: &async_nats::Client,
    subject: String,
    request: &R,
    within: Duration,
) -> Result<R::Reply, AskError> {
    let asked = client.request(subject, encode(request).into());
    let answer = tokio::time::timeout(within, asked)
        .await
        .map_err(|_| AskError::NoAnswer(within))?
        .map_err(AskError::Nats)?;
    decode::<R::Reply>(&answer.payload).map_err(AskError::Unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_is_the_subjects_org_and_install() {
        let c = Caller::of("ferry.rx.acme.prod.claim").unwrap();
        assert_eq!((c.org.as_str(), c.install.as_str()), ("acme", "prod"));
        assert_eq!(c.serial(), None);
        let r = Caller::of("ferry.renew.acme.prod.0a1b").unwrap();
        assert_eq!(r.serial(), Some("0a1b"));
        assert_eq!(Caller::of("ferry.rx.acme"), None);
        assert_eq!(Caller::of("other.rx.acme.prod"), None);
    }

    #[test]
    fn each_request_is_served_where_its_runner_sends_it() {
        fn served<R: FromInstall>(subject: &str) -> bool {
            R::SERVED_ON.iter().any(|all| {
                let (a, s): (Vec<&str>, Vec<&str>) =
                    (all.split('.').collect(), subject.split('.').collect());
                a.len() == s.len() && a.iter().zip(&s).all(|(p, t)| *p == "*" || p == t)
            })
        }
        assert!(served::<ClaimRequest>(&subjects::claim("o", "i")));
        assert!(served::<LeaseRenewal>(&subjects::lease("o", "i")));
        assert!(served::<OfferQuery>(&subjects::offers("o", "i")));
        assert!(served::<ArtifactRead>(&subjects::artifact("o", "i")));
        assert!(served::<RenewRequest>(&subjects::renew_certificate(
            "o", "i", "ab"
        )));
        assert!(served::<RenewRequest>(&subjects::renew("o", "i")));
        assert!(served::<Heartbeat>(&subjects::heartbeat("o", "i")));
        assert!(served::<StackReport>(&subjects::stack("o", "i")));
        assert!(!served::<ClaimRequest>(&subjects::lease("o", "i")));
    }
}
