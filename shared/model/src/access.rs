//! Whether an install's runners may connect, bootstrap and renew their certificates, as pure
//! functions of one record.
//!
//! Revocation is of the install, not of a list of certificates. A revocation (or the install's
//! deletion) marks the install's [`RunnerAccess`] revoked and starts a new epoch in one
//! compare-and-swap, before anything else happens: from then on the hub's auth callout refuses
//! every certificate of the install, and no renewal or bootstrap is served, until an operator
//! issues a new bootstrap token. Every certificate records the epoch it was issued in, and only
//! certificates of the current epoch are admitted, so a renewal that was under way while the
//! revocation ran — whatever its serial or issue time — yields a certificate that never works.

use serde::{Deserialize, Serialize};

use crate::Timestamp;
use crate::{BootstrapToken, IssuedCert};

/// An install's runner access. No record: the install was never revoked (epoch `""`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunnerAccess {
    pub org: String,
    pub install: String,
    /// Certificates and bootstrap tokens count only if issued in this epoch.
    pub epoch: String,
    /// Set by a revocation; cleared when an operator issues a new bootstrap token.
    pub revoked_at: Option<String>,
    /// The install sent more than its quota (log-ingest's `quota`): its connections are
    /// refused, and the live ones closed, until this time (ms since the epoch).
    #[serde(default)]
    pub throttled_until_ms: Option<u64>,
    /// Why, as the operator reads it (the stream and the bytes).
    #[serde(default)]
    pub throttle_reason: Option<String>,
}

impl RunnerAccess {
    /// The access of an install that has no record yet.
    pub fn open(org: &str, install: &str) -> RunnerAccess {
        RunnerAccess {
            org: org.into(),
            install: install.into(),
            epoch: String::new(),
            revoked_at: None,
            throttled_until_ms: None,
            throttle_reason: None,
        }
    }

    /// Refuses the install's connections until `until_ms` for `reason`. Returns whether that
    /// changed anything (a throttle already lasting as long is left as it is).
    pub fn throttle(&mut self, until_ms: u64, reason: String) -> bool {
        if self.throttled_until_ms.is_some_and(|t| t >= until_ms) {
            return false;
        }
        self.throttled_until_ms = Some(until_ms);
        self.throttle_reason = Some(reason);
        true
    }

    /// Whether the install is throttled at `now.ms()`.
    pub fn throttled(&self, now: Timestamp) -> bool {
        self.throttled_until_ms.is_some_and(|t| t > now.ms())
    }

    /// Why a connection of the install is refused at `now.ms()` whatever its certificate, if it
    /// is: the install is throttled.
    pub fn refuses_connection(&self, now: Timestamp) -> Option<String> {
        let until = self.throttled_until_ms.filter(|t| *t > now.ms())?;
        Some(format!(
            "install {}/{} is throttled for another {} s: {}",
            self.org,
            self.install,
            (until - now.ms()).div_ceil(1000),
            self.throttle_reason.as_deref().unwrap_or("over its quota")
        ))
    }

    /// Revokes every runner of the install: a new epoch, refused until reopened.
    pub fn revoke(&mut self, epoch: String, now: Timestamp) {
        self.epoch = epoch;
        self.revoked_at = Some(now.to_string());
    }

    /// Opens the install again to runners bootstrapped from now on (an operator issued a token);
    /// certificates of earlier epochs stay refused.
    pub fn reopen(&mut self) {
        self.revoked_at = None;
    }

    /// Why no certificate may be issued to the install now (bootstrap, renewal), if none may.
    pub fn refuses_issue(&self) -> Option<String> {
        self.revoked_at.as_ref().map(|at| {
            format!(
                "install {}/{} was revoked at {at}: it needs a new bootstrap token",
                self.org, self.install
            )
        })
    }

    /// Why bootstrap token `token` may not be traded for a certificate, if it may not: the
    /// install is revoked, or the token was issued before its latest revocation.
    pub fn refuses_token(&self, token: &BootstrapToken) -> Option<String> {
        self.refuses_issue().or_else(|| {
            (token.epoch != self.epoch).then(|| {
                "this bootstrap token was issued before the install was revoked".to_string()
            })
        })
    }

    /// Why a connection with a certificate whose issue record is `cert` (`None`: none recorded)
    /// is refused, if it is.
    pub fn refuses_certificate(&self, serial: &str, cert: Option<&IssuedCert>) -> Option<String> {
        if let Some(why) = self.refuses_issue() {
            return Some(why);
        }
        match cert {
            Some(c) if c.install != self.install || c.org != self.org => Some(format!(
                "certificate {serial} was issued to another install ({}/{})",
                c.org, c.install
            )),
            Some(c) if c.revoked_at.is_some() => Some(format!("certificate {serial} was revoked")),
            Some(c) if c.epoch != self.epoch => Some(format!(
                "certificate {serial} was issued before install {}/{} was last revoked",
                self.org, self.install
            )),
            Some(_) => None,
            // Certificates are recorded as they are issued; one without a record was not issued
            // through this control plane since the install's epoch began.
            None if !self.epoch.is_empty() => Some(format!(
                "certificate {serial} is not one this control plane issued to install {}/{}",
                self.org, self.install
            )),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::at;

    #[test]
    fn a_throttled_install_is_refused_until_its_throttle_ends_and_a_shorter_one_changes_nothing() {
        let mut a = RunnerAccess::open("acme", "prod");
        assert_eq!(a.refuses_connection(Timestamp::from_ms(0)), None);
        assert!(a.throttle(10_000, "LOGS: 300 MiB in a minute".into()));
        let why = a.refuses_connection(Timestamp::from_ms(1_000)).unwrap();
        assert!(why.contains("another 9 s") && why.contains("LOGS"), "{why}");
        assert!(a.throttled(Timestamp::from_ms(9_999)) && !a.throttled(Timestamp::from_ms(10_000)));
        assert!(!a.throttle(5_000, "later".into()));
        assert_eq!(a.refuses_connection(Timestamp::from_ms(10_000)), None);
    }

    fn cert(epoch: &str) -> IssuedCert {
        IssuedCert {
            serial: "01".into(),
            org: "acme".into(),
            install: "prod".into(),
            issued_at: "t".into(),
            not_after_unix: 10,
            revoked_at: None,
            epoch: epoch.into(),
        }
    }

    fn token(epoch: &str) -> BootstrapToken {
        BootstrapToken {
            id: "b".into(),
            org: "acme".into(),
            install: "prod".into(),
            secret_sha256: "00".into(),
            created_at: "t".into(),
            expires_unix: 10,
            used_at: None,
            epoch: epoch.into(),
        }
    }

    #[test]
    fn a_revoked_install_refuses_every_certificate_renewal_and_token_until_reopened() {
        let mut a = RunnerAccess::open("acme", "prod");
        assert_eq!(a.refuses_certificate("01", Some(&cert(""))), None);
        assert_eq!(a.refuses_issue(), None);
        a.revoke("e2".into(), at("2026-11-24T10:00:00Z"));
        for c in [Some(cert("")), Some(cert("e2")), None] {
            let why = a.refuses_certificate("01", c.as_ref()).unwrap();
            assert!(why.contains("revoked at 2026-11-24"), "{why}");
        }
        assert!(a.refuses_issue().is_some());
        assert!(a.refuses_token(&token("e2")).is_some());
        a.reopen();
        assert_eq!(a.refuses_token(&token("e2")), None);
        assert!(
            a.refuses_token(&token(""))
                .unwrap()
                .contains("before the install was revoked")
        );
        assert_eq!(a.refuses_certificate("01", Some(&cert("e2"))), None);
        let old = a.refuses_certificate("01", Some(&cert(""))).unwrap();
        assert!(
            old.contains("before install acme/prod was last revoked"),
            "{old}"
        );
        assert!(
            a.refuses_certificate("01", None).is_some(),
            "unrecorded after a revocation"
        );
    }

    #[test]
    fn a_certificate_of_another_install_or_marked_revoked_is_refused() {
        let a = RunnerAccess::open("acme", "prod");
        let mut c = cert("");
        c.install = "staging".into();
        assert!(a.refuses_certificate("01", Some(&c)).is_some());
        let mut c = cert("");
        c.revoked_at = Some("t".into());
        assert!(a.refuses_certificate("01", Some(&c)).is_some());
        assert_eq!(
            a.refuses_certificate("01", None),
            None,
            "never revoked: as before"
        );
    }
}
