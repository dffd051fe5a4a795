//! Ferry's certificate authority: it issues each install's client certificate from a CSR, so the
//! install's private key is generated in the install and never leaves it (DESIGN.md §7).
//!
//! The CA decides the certificate's identity itself, from the bootstrap token the request came with;
//! whatever subject the CSR claims is discarded. The hub maps the certificate's subject
//! (`CN=<org>.<install>,O=ferry-install`) to a NATS user allowed only that install's subjects.
//! The certificate also names the install as a SPIFFE ID in its SAN URI
//! (`spiffe://ferry/org/<org>/install/<install>`), carries a random serial (what a revocation
//! names), and lives `DEFAULT_CERT_LIFETIME` unless told otherwise. The CA itself is created once,
//! in a directory the control plane keeps (`Ca::load_or_create`), so a restart keeps it.
//! Rotation over the live connection, revocation at the hub and the bootstrap exchange build on
//! this (issue 8).

use std::path::Path;
use std::time::Duration;

pub mod hub;
pub mod install;
pub mod natsjwt;

pub use hub::{ClusterRoutes, Credentials, HubFiles, HubNode};
pub use install::{CertInfo, InstallFiles};

use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};

/// How long an install certificate lives unless the control plane says otherwise.
pub const DEFAULT_CERT_LIFETIME: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate error: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("invalid identity `{0}`: org and install must be lowercase names")]
    InvalidIdentity(String),
    /// The error is shown in the message, not chained as a source, so that every caller's
    /// report carries it exactly once.
    #[error("the trust directory {dir}: {error}")]
    Store { dir: String, error: std::io::Error },
    #[error("no randomness: {0}")]
    Random(getrandom::Error),
    #[error("nkey: {0}")]
    Key(String),
    #[error("certificate: {0}")]
    Certificate(String),
}

/// Who an install certificate speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallIdentity {
    pub org: String,
    pub install: String,
}

pub const INSTALL_ORGANIZATION: &str = "ferry-install";

impl InstallIdentity {
    pub fn new(org: &str, install: &str) -> Result<Self, PkiError> {
        let ok = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        if ok(org) && ok(install) {
            Ok(InstallIdentity {
                org: org.into(),
                install: install.into(),
            })
        } else {
            Err(PkiError::InvalidIdentity(format!("{org}.{install}")))
        }
    }

    pub fn common_name(&self) -> String {
        format!("{}.{}", self.org, self.install)
    }

    /// The install's SPIFFE ID, as its certificate's SAN URI carries it.
    pub fn spiffe_id(&self) -> String {
        format!("spiffe://ferry/org/{}/install/{}", self.org, self.install)
    }

    /// The identity a SPIFFE ID names, if it is an install's.
    pub fn from_spiffe_id(uri: &str) -> Option<InstallIdentity> {
        let rest = uri.strip_prefix("spiffe://ferry/org/")?;
        let (org, install) = rest.split_once("/install/")?;
        InstallIdentity::new(org, install).ok()
    }

    /// The subject in RFC 2253 form, as nats-server's `verify_and_map` sees it.
    pub fn rfc2253_subject(&self) -> String {
        format!("CN={},O={INSTALL_ORGANIZATION}", self.common_name())
    }
}

pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    key_pem: String,
}

impl Ca {
    /// A new self-signed CA.
    pub fn generate(name: &str) -> Result<Ca, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        dn.push(DnType::OrganizationName, "ferry");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + time::Duration::days(3650);
        let cert = params.self_signed(&key)?;
        let key_pem = key.serialize_pem();
        Ok(Ca {
            cert_pem: cert.pem(),
            key_pem,
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA kept in `dir` (`ca.pem`, and `ca-key.pem` readable by its owner only), created there
    /// the first time.
    pub fn load_or_create(dir: &Path, name: &str) -> Result<Ca, PkiError> {
        let io = |error| PkiError::Store {
            dir: dir.display().to_string(),
            error,
        };
        let (cert, key) = (dir.join("ca.pem"), dir.join("ca-key.pem"));
        if cert.exists() {
            let c = std::fs::read_to_string(&cert).map_err(io)?;
            let k = std::fs::read_to_string(&key).map_err(io)?;
            return Ca::load(&c, &k);
        }
        let ca = Ca::generate(name)?;
        std::fs::create_dir_all(dir).map_err(io)?;
        write_new(&key, ca.key_pem(), 0o600).map_err(io)?;
        write_new(&cert, ca.cert_pem(), 0o644).map_err(io)?;
        Ok(ca)
    }

    /// Loads a CA from its certificate and key.
    pub fn load(cert_pem: &str, key_pem: &str) -> Result<Ca, PkiError> {
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Ca {
            issuer,
            cert_pem: cert_pem.into(),
            key_pem: key_pem.into(),
        })
    }

    pub(crate) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// Issues a client certificate for `identity` over the public key of `csr_pem`, valid for
    /// `validity`. The CSR's own subject and extensions are ignored.
    pub fn sign_install_csr(
        &self,
        csr_pem: &str,
        identity: &InstallIdentity,
        validity: Duration,
    ) -> Result<String, PkiError> {
        let csr = CertificateSigningRequestParams::from_pem(csr_pem)?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        // RFC 2253 lists RDNs last-first: O then CN here reads `CN=...,O=...` to nats-server.
        dn.push(DnType::OrganizationName, INSTALL_ORGANIZATION);
        dn.push(DnType::CommonName, identity.common_name());
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        params.subject_alt_names = vec![SanType::URI(identity.spiffe_id().try_into()?)];
        params.serial_number = Some(SerialNumber::from_slice(&random_serial()?));
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let now = time::OffsetDateTime::now_utc();
        // Back-dated for clocks a little behind, by at most a quarter of a short lifetime (so a
        // short-lived certificate does not start out due for renewal).
        let skew = (validity.as_secs() / 4).min(300) as i64;
        params.not_before = now - time::Duration::seconds(skew);
        params.not_after = now + time::Duration::seconds(validity.as_secs() as i64);
        let signed = CertificateSigningRequestParams {
            params,
            public_key: csr.public_key,
        }
        .signed_by(&self.issuer)?;
        Ok(signed.pem())
    }
}

/// 16 random bytes, the top bit clear (a serial is a positive integer).
pub(crate) fn random_serial() -> Result<[u8; 16], PkiError> {
    let mut serial = [0u8; 16];
    getrandom::fill(&mut serial).map_err(PkiError::Random)?;
    serial[0] &= 0x7f;
    Ok(serial)
}

/// Writes a new file with `mode` (never over an existing one: two processes creating the CA at
/// once must not both win).
pub(crate) fn write_new(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// Install side: a fresh key pair and a CSR for it. The key stays with the caller.
pub fn generate_install_csr(identity: &InstallIdentity) -> Result<(String, String), PkiError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, identity.common_name());
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key)?;
    Ok((csr.pem()?, key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn issues_a_client_certificate_that_chains_to_the_ca() {
        let ca = Ca::generate("ferry test ca").unwrap();
        let id = InstallIdentity::new("acme", "prod").unwrap();
        // The install asks as someone else; the CA issues for the identity it decided.
        let (csr, _key) =
            generate_install_csr(&InstallIdentity::new("evil", "other").unwrap()).unwrap();
        let cert = ca
            .sign_install_csr(&csr, &id, Duration::from_secs(3600))
            .unwrap();

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.cert_pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), &cert).unwrap();
        let verify = Command::new("openssl")
            .args(["verify", "-purpose", "sslclient", "-CAfile"])
            .arg(dir.path().join("ca.pem"))
            .arg(dir.path().join("cert.pem"))
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stdout)
        );
        let subject = Command::new("openssl")
            .args(["x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in"])
            .arg(dir.path().join("cert.pem"))
            .output()
            .unwrap();
        let subject = String::from_utf8_lossy(&subject.stdout);
        assert_eq!(subject.trim(), format!("subject={}", id.rfc2253_subject()));

        // A CA loaded from PEM signs too.
        let again = Ca::load(ca.cert_pem(), ca.key_pem()).unwrap();
        assert!(
            again
                .sign_install_csr(&csr, &id, Duration::from_secs(60))
                .is_ok()
        );
        assert!(
            ca.sign_install_csr("not a csr", &id, Duration::from_secs(60))
                .is_err()
        );
        assert!(InstallIdentity::new("Acme", "x").is_err());
    }

    #[test]
    fn a_certificate_names_its_install_as_a_spiffe_id_with_a_random_serial() {
        let ca = Ca::generate("ferry test ca").unwrap();
        let id = InstallIdentity::new("acme", "prod").unwrap();
        let (csr, _key) = generate_install_csr(&id).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let show = |cert: &str, what: &[&str]| {
            let path = dir.path().join("c.pem");
            std::fs::write(&path, cert).unwrap();
            let out = Command::new("openssl")
                .args(["x509", "-noout"])
                .args(what)
                .arg("-in")
                .arg(&path)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let a = ca
            .sign_install_csr(&csr, &id, DEFAULT_CERT_LIFETIME)
            .unwrap();
        let b = ca
            .sign_install_csr(&csr, &id, DEFAULT_CERT_LIFETIME)
            .unwrap();
        assert_eq!(id.spiffe_id(), "spiffe://ferry/org/acme/install/prod");
        let san = show(&a, &["-ext", "subjectAltName"]);
        assert!(
            san.contains("URI:spiffe://ferry/org/acme/install/prod"),
            "{san}"
        );
        assert_ne!(
            show(&a, &["-serial"]),
            show(&b, &["-serial"]),
            "each certificate its own serial"
        );
        assert_eq!(
            InstallIdentity::from_spiffe_id(&id.spiffe_id()),
            Some(id.clone())
        );
        assert_eq!(
            InstallIdentity::from_spiffe_id("spiffe://other/org/a/install/b"),
            None
        );
        // Valid now, and not a day from now plus a minute (24 hours by default).
        let path = dir.path().join("c.pem");
        std::fs::write(&path, &a).unwrap();
        let valid_for = |secs: &str| {
            Command::new("openssl")
                .args(["x509", "-noout", "-checkend", secs, "-in"])
                .arg(&path)
                .status()
                .unwrap()
                .success()
        };
        assert!(valid_for("86000"));
        assert!(!valid_for("86460"));
    }

    #[test]
    fn the_ca_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let ca_dir = dir.path().join("ca");
        let first = Ca::load_or_create(&ca_dir, "ferry").unwrap();
        let again = Ca::load_or_create(&ca_dir, "ferry").unwrap();
        assert_eq!(first.cert_pem(), again.cert_pem(), "a restart keeps the CA");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(ca_dir.join("ca-key.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
