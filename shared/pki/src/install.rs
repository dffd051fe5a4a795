//! The install side: the runner's identity directory, and reading who a certificate speaks for.
//!
//! A runner keeps `key.pem` (generated there, never sent anywhere), `cert.pem` (issued by the
//! hub's CA from a CSR) and `ca.pem` (to check the hub) in its identity directory. Its org and
//! install come from its certificate, never from a flag: a runner cannot act for an install it
//! holds no certificate of.

use std::path::{Path, PathBuf};

use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use crate::hub::Credentials;
use crate::{InstallIdentity, PkiError};

/// What an install certificate says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    pub identity: InstallIdentity,
    /// The serial in lowercase hex: what a revocation names.
    pub serial: String,
    pub not_before_unix: u64,
    pub not_after_unix: u64,
}

impl CertInfo {
    /// Whether it is time to renew at `now_unix`: less than a third of its life left.
    pub fn due(&self, now_unix: u64) -> bool {
        let life = self.not_after_unix.saturating_sub(self.not_before_unix);
        self.not_after_unix.saturating_sub(now_unix) < life / 3
    }
}

impl CertInfo {
    /// Reads the install identity (its SPIFFE SAN URI), serial and expiry of a PEM certificate.
    /// The chain is not checked here: the hub's TLS layer verified it before the callout asks.
    pub fn parse(pem_text: &str) -> Result<CertInfo, PkiError> {
        let bad = |why: String| PkiError::Certificate(why);
        let block = pem::parse(pem_text).map_err(|e| bad(format!("not PEM: {e}")))?;
        let (_, cert) = X509Certificate::from_der(block.contents())
            .map_err(|e| bad(format!("not an X.509 certificate: {e}")))?;
        let uris: Vec<&str> = cert
            .subject_alternative_name()
            .ok()
            .flatten()
            .map(|san| {
                san.value
                    .general_names
                    .iter()
                    .filter_map(|n| match n {
                        GeneralName::URI(u) => Some(*u),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let identity = uris
            .iter()
            .find_map(|u| InstallIdentity::from_spiffe_id(u))
            .ok_or_else(|| bad("the certificate names no Ferry install (SAN URI)".into()))?;
        let serial = cert
            .raw_serial()
            .iter()
            .skip_while(|b| **b == 0)
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(CertInfo {
            identity,
            serial,
            not_before_unix: cert.validity().not_before.timestamp().max(0) as u64,
            not_after_unix: cert.validity().not_after.timestamp().max(0) as u64,
        })
    }
}

/// A runner's identity directory.
#[derive(Debug, Clone)]
pub struct InstallFiles {
    pub dir: PathBuf,
}

impl InstallFiles {
    pub fn new(dir: &Path) -> InstallFiles {
        InstallFiles {
            dir: dir.to_path_buf(),
        }
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }
    pub fn key(&self) -> PathBuf {
        self.dir.join("key.pem")
    }
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// True once a certificate was stored.
    pub fn exists(&self) -> bool {
        self.cert().is_file() && self.key().is_file() && self.ca().is_file()
    }

    /// What the stored certificate says.
    pub fn info(&self) -> Result<CertInfo, PkiError> {
        let text = std::fs::read_to_string(self.cert()).map_err(|e| self.err(e))?;
        CertInfo::parse(&text)
    }

    /// A new key (kept here with mode 0600) and a CSR for it, to send with a bootstrap token.
    pub fn new_key_and_csr(&self, identity: &InstallIdentity) -> Result<String, PkiError> {
        let (csr, key) = crate::generate_install_csr(identity)?;
        std::fs::create_dir_all(&self.dir).map_err(|source| self.err(source))?;
        let tmp = self.dir.join("key.pem.new");
        let _ = std::fs::remove_file(&tmp);
        crate::write_new(&tmp, &key, 0o600).map_err(|source| self.err(source))?;
        Ok(csr)
    }

    /// Stores the certificate issued for the key [`InstallFiles::new_key_and_csr`] made, and the CA
    /// that issued it; from then on the runner uses only these.
    pub fn store(&self, cert_pem: &str, ca_pem: &str) -> Result<(), PkiError> {
        // Each file is written beside and renamed into place: a reader (the leaf restarting, a
        // crash) never sees half a certificate.
        let write = |name: &str, text: &str| {
            let part = self.dir.join(format!("{name}.part"));
            std::fs::write(&part, text)
                .and_then(|()| std::fs::rename(&part, self.dir.join(name)))
                .map_err(|source| self.err(source))
        };
        write("ca.pem", ca_pem)?;
        let new_key = self.dir.join("key.pem.new");
        if new_key.exists() {
            std::fs::rename(&new_key, self.key()).map_err(|source| self.err(source))?;
        }
        write("cert.pem", cert_pem)
    }

    fn err(&self, error: std::io::Error) -> PkiError {
        PkiError::Store {
            dir: self.dir.display().to_string(),
            error,
        }
    }

    /// Credentials for the hub (or the install's leaf): the certificate, and replies in the
    /// install's own inbox space.
    pub fn credentials(&self, identity: &InstallIdentity) -> Credentials {
        Credentials {
            ca: self.ca(),
            cert: self.cert(),
            key: self.key(),
            login: None,
            inbox_prefix: Some(inbox_prefix(identity)),
        }
    }
}

/// The inbox prefix of an install's connections: `_INBOX.<org>.<install>`. The install may
/// subscribe to nothing else's replies.
pub fn inbox_prefix(identity: &InstallIdentity) -> String {
    format!("_INBOX.{}.{}", identity.org, identity.install)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ca;
    use std::time::Duration;

    #[test]
    fn reads_the_identity_serial_and_expiry_of_an_issued_certificate() {
        let ca = Ca::generate("test").unwrap();
        let id = InstallIdentity::new("acme", "prod").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files = InstallFiles::new(dir.path());
        let csr = files.new_key_and_csr(&id).unwrap();
        let cert = ca
            .sign_install_csr(&csr, &id, Duration::from_secs(3600))
            .unwrap();
        files.store(&cert, ca.cert_pem()).unwrap();
        assert!(files.exists());
        let info = files.info().unwrap();
        assert_eq!(info.identity, id);
        assert!(!info.serial.is_empty());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(info.not_after_unix > now + 3500 && info.not_after_unix <= now + 3600);
        // Issued 5 minutes back-dated (the most): 65 minutes of life, due in its last 21 or so.
        assert!(!info.due(now));
        assert!(!info.due(info.not_after_unix - 22 * 60));
        assert!(info.due(info.not_after_unix - 21 * 60));
        assert!(info.due(info.not_after_unix + 1));
        // A certificate of the control plane names no install.
        let (server, _) = ca
            .sign_leaf(
                "hub",
                &["localhost".into()],
                &[rcgen::ExtendedKeyUsagePurpose::ServerAuth],
            )
            .unwrap();
        assert!(matches!(
            CertInfo::parse(&server),
            Err(PkiError::Certificate(_))
        ));
    }
}
