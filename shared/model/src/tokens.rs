//! API tokens and roles: what each role may do (the role each API operation needs is declared
//! with the operation: `ferry-api`'s `roles.rs`).
//!
//! A token reads `ferry_<org>_<id>_<secret>`. Only the SHA-256 of the secret is stored: a leaked
//! `tokens` bucket gives nobody a working token. The secret is 32 random bytes, so a fast hash is
//! enough (a slow password hash defends guessable secrets, which these are not).

use serde::{Deserialize, Serialize};

/// What a token may do. Of the vendor's roles, each may do everything the one before it may;
/// `customer` stands apart (see [`Role::allows`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads everything of its org.
    Viewer,
    /// Also deploys, tears down, changes inputs, and responds to workflows and approvals.
    Operator,
    /// Also manages apps, creates and deletes installs, and manages tokens.
    Admin,
    /// The customer's security team: reads like a viewer, and alone grants and revokes
    /// break-glass roles on installs (no vendor role may).
    Customer,
}

impl Role {
    pub const fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
            Role::Customer => "customer",
        }
    }

    /// Whether a token of this role may make a request that needs `needed`.
    pub fn allows(self, needed: Role) -> bool {
        match (self, needed) {
            (Role::Customer, n) => matches!(n, Role::Viewer | Role::Customer),
            (_, Role::Customer) => false,
            (mine, n) => mine >= n,
        }
    }
}

/// A stored token: never its secret, only the secret's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApiToken {
    pub id: String,
    pub org: String,
    /// Who or what it is for (`alice`, `ci`); audit records name it.
    pub name: String,
    pub role: Role,
    /// The installs it reaches (`reach.rs`); empty: all of its org's.
    #[serde(default)]
    pub scope: crate::TokenScope,
    /// Hex SHA-256 of the secret.
    pub secret_sha256: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// A dashboard sign-in: the browser's cookie holds `<org>.<secret>`, this record is kept under
/// the secret's hash, and names the API token signed in with — never the token itself, so
/// signing out (deleting this) ends what the cookie can do, and revoking the token ends every
/// session made with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DashboardSession {
    /// Hex SHA-256 of the cookie's secret.
    pub id: String,
    pub org: String,
    /// The API token's id (`ApiToken::id`).
    pub token_id: String,
    /// Ms since the epoch after which the session is refused.
    pub expires_ms: u64,
}

/// How long a dashboard session lasts.
pub const DASHBOARD_SESSION_MS: u64 = 12 * 3600 * 1000;

/// The parts of a token as presented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenText {
    pub org: String,
    pub id: String,
    pub secret: String,
}

/// What a runner's one-time bootstrap token starts with (an API token starts `ferry_`).
pub const BOOTSTRAP_PREFIX: &str = "ferryboot_";

/// How long a bootstrap token may wait for its runner, unless the control plane says otherwise.
pub const BOOTSTRAP_LIFETIME_SECS: u64 = 3600;

/// A one-time token a runner trades, with a CSR, for its install's certificate
/// (`POST /v1/bootstrap`). Stored only as a hash; refused once used or past `expires_unix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BootstrapToken {
    pub id: String,
    pub org: String,
    pub install: String,
    /// Hex SHA-256 of the secret.
    pub secret_sha256: String,
    pub created_at: String,
    pub expires_unix: u64,
    pub used_at: Option<String>,
    /// The install's runner-access epoch when it was issued (see `access.rs`).
    #[serde(default)]
    pub epoch: String,
}

impl BootstrapToken {
    /// Why this token cannot be used at `now_unix`, if it cannot.
    pub fn unusable(&self, now_unix: u64) -> Option<&'static str> {
        if self.used_at.is_some() {
            Some("this bootstrap token was already used")
        } else if now_unix >= self.expires_unix {
            Some("this bootstrap token has expired")
        } else {
            None
        }
    }
}

/// An install certificate the control plane issued (at bootstrap), by serial: what a revocation
/// marks, and what the hub's auth callout checks on every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IssuedCert {
    /// The serial, lowercase hex.
    pub serial: String,
    pub org: String,
    pub install: String,
    pub issued_at: String,
    pub not_after_unix: u64,
    pub revoked_at: Option<String>,
    /// The install's runner-access epoch when it was issued (see `access.rs`).
    #[serde(default)]
    pub epoch: String,
}

impl IssuedCert {
    /// Why a renewal asked for with this certificate at `now_unix` is refused, if it is: the
    /// certificate belongs to another install, or has more than half of its `lifetime_secs`
    /// left. A runner renews once a third is left, so only a runner asking over and over is
    /// refused; one whose answer was lost asks again with the same certificate, still in time.
    pub fn refuses_renewal(
        &self,
        org: &str,
        install: &str,
        lifetime_secs: u64,
        now_unix: u64,
    ) -> Option<String> {
        if self.org != org || self.install != install {
            return Some(format!(
                "certificate {} is not one of install {org}/{install}",
                self.serial
            ));
        }
        let left = self.not_after_unix.saturating_sub(now_unix);
        (left > lifetime_secs / 2).then(|| {
            format!(
                "certificate {} has {} s of its life left: a runner renews once a third of it is left",
                self.serial, left
            )
        })
    }
}

impl TokenText {
    pub fn parse(text: &str) -> Option<TokenText> {
        TokenText::parse_with("ferry_", text)
    }

    /// A bootstrap token's parts (`ferryboot_<org>_<id>_<secret>`).
    pub fn parse_bootstrap(text: &str) -> Option<TokenText> {
        TokenText::parse_with(BOOTSTRAP_PREFIX, text)
    }

    fn parse_with(prefix: &str, text: &str) -> Option<TokenText> {
        let mut parts = text.strip_prefix(prefix)?.split('_');
        let (org, id, secret) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || [org, id, secret].iter().any(|p| p.is_empty()) {
            return None;
        }
        Some(TokenText {
            org: org.into(),
            id: id.into(),
            secret: secret.into(),
        })
    }

    pub fn render(&self) -> String {
        format!("ferry_{}_{}_{}", self.org, self.id, self.secret)
    }

    pub fn render_bootstrap(&self) -> String {
        format!("{BOOTSTRAP_PREFIX}{}_{}_{}", self.org, self.id, self.secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_is_refused_while_the_certificate_has_most_of_its_life_left() {
        let cert = IssuedCert {
            serial: "0a".into(),
            org: "acme".into(),
            install: "prod".into(),
            issued_at: String::new(),
            not_after_unix: 1_000,
            revoked_at: None,
            epoch: String::new(),
        };
        // A life of 900 s: refused with more than 450 s left, allowed with less.
        let early = cert.refuses_renewal("acme", "prod", 900, 100).unwrap();
        assert!(early.contains("900 s of its life left"), "{early}");
        assert_eq!(cert.refuses_renewal("acme", "prod", 900, 700), None);
        assert!(cert.refuses_renewal("acme", "staging", 900, 700).is_some());
    }

    #[test]
    fn the_vendors_roles_each_may_do_what_the_one_before_may() {
        assert!(Role::Admin > Role::Operator && Role::Operator > Role::Viewer);
    }

    #[test]
    fn break_glass_is_the_customers_alone_and_the_customer_only_reads_otherwise() {
        assert!(Role::Customer.allows(Role::Customer));
        assert!(Role::Customer.allows(Role::Viewer));
        assert!(!Role::Customer.allows(Role::Operator));
        assert!(
            !Role::Admin.allows(Role::Customer),
            "no vendor role grants break-glass"
        );
        assert!(Role::Admin.allows(Role::Operator) && !Role::Viewer.allows(Role::Operator));
    }

    #[test]
    fn a_bootstrap_token_is_usable_once_and_until_it_expires() {
        let mut t = BootstrapToken {
            id: "b1".into(),
            org: "acme".into(),
            install: "prod".into(),
            secret_sha256: "00".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            expires_unix: 1000,
            used_at: None,
            epoch: String::new(),
        };
        assert_eq!(t.unusable(999), None);
        assert!(t.unusable(1000).unwrap().contains("expired"));
        t.used_at = Some("2026-01-01T00:00:01Z".into());
        assert!(t.unusable(10).unwrap().contains("already used"));
        let text = TokenText::parse_bootstrap("ferryboot_acme_b1_ff").unwrap();
        assert_eq!(text.render_bootstrap(), "ferryboot_acme_b1_ff");
        assert!(TokenText::parse("ferryboot_acme_b1_ff").is_none());
        assert!(TokenText::parse_bootstrap("ferry_acme_b1_ff").is_none());
    }

    #[test]
    fn a_token_parses_only_in_its_own_shape() {
        let t = TokenText::parse("ferry_acme_01abc_deadbeef").unwrap();
        assert_eq!((t.org.as_str(), t.id.as_str()), ("acme", "01abc"));
        assert_eq!(t.render(), "ferry_acme_01abc_deadbeef");
        for bad in [
            "",
            "ferry_",
            "ferry_a_b",
            "ferry_a_b_c_d",
            "token_a_b_c",
            "ferry__b_c",
        ] {
            assert_eq!(TokenText::parse(bad), None, "{bad}");
        }
    }
}
