//! Bootstrap: the first start of a runner on a new host. It makes its key here (the key never
//! leaves the identity directory), sends a CSR with its one-time token to the API's
//! `POST /v1/bootstrap`, and stores the certificate and CA it gets back. The control plane, not
//! the runner, decides which install the certificate names: the one the token was issued for.

use ferry_pki::{InstallFiles, InstallIdentity};
use serde::{Deserialize, Serialize};
use tracing::info;

#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("not a bootstrap token (they start `ferryboot_`)")]
    NotAToken,
    #[error("{0}")]
    Pki(#[from] ferry_pki::PkiError),
    #[error("calling {url}: {source}")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("refused by the control plane ({status}): {reason}")]
    Refused { status: u16, reason: String },
}

#[derive(Serialize)]
struct Request<'a> {
    token: &'a str,
    csr: &'a str,
}

#[derive(Deserialize)]
struct Reply {
    org: String,
    install: String,
    certificate: String,
    ca: String,
}

/// Trades `token` for the install's certificate, stored in `files`.
pub async fn run(
    files: &InstallFiles,
    api: &str,
    token: &str,
    install: Option<&str>,
) -> Result<(), BootstrapError> {
    let text =
        ferry_model::TokenText::parse_bootstrap(token.trim()).ok_or(BootstrapError::NotAToken)?;
    // The CSR's subject is only a hint; the certificate names what the token was issued for.
    let hint = InstallIdentity::new(&text.org, install.unwrap_or("runner"))?;
    let csr = files.new_key_and_csr(&hint)?;
    let url = format!("{}/v1/bootstrap", api.trim_end_matches('/'));
    let http = |source| BootstrapError::Http {
        url: url.clone(),
        source,
    };
    let resp = reqwest::Client::new()
        .post(&url)
        .json(&Request { token, csr: &csr })
        .send()
        .await
        .map_err(http)?;
    let status = resp.status();
    if !status.is_success() {
        let body: serde_json::Value = resp.json().await.unwrap_or_default();
        return Err(BootstrapError::Refused {
            status: status.as_u16(),
            reason: body["error"]
                .as_str()
                .unwrap_or("no reason given")
                .to_string(),
        });
    }
    let reply: Reply = resp.json().await.map_err(http)?;
    files.store(&reply.certificate, &reply.ca)?;
    info!(org = %reply.org, install = %reply.install, dir = %files.dir.display(), "bootstrapped: certificate stored");
    Ok(())
}
