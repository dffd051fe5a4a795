//! Bootstrap: the first start of a runner on a new host. It makes its key here (the key never
//! leaves the identity directory), sends a CSR with its one-time token to the API's
//! `POST /v1/bootstrap`, and stores the certificate and CA it gets back. The control plane, not
//! the runner, decides which install the certificate names: the one the token was issued for.

use ferry_client::{Client, ClientError};
use ferry_model::api::BootstrapRequest;
use ferry_model::ops;
use ferry_pki::{InstallFiles, InstallIdentity};
use tracing::info;

#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("not a bootstrap token (they start `ferryboot_`)")]
    NotAToken,
    #[error("{0}")]
    Pki(#[from] ferry_pki::PkiError),
    /// The API could not be reached, refused (its status and reason are in the message), or
    /// answered something else than a certificate.
    #[error("bootstrapping through the control plane's API: {0}")]
    Api(#[from] ClientError),
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
    let body = BootstrapRequest {
        token: token.to_string(),
        csr,
    };
    // No API token: the one-time token in the body is the credential.
    let reply = Client::new(api, None)?
        .call::<ops::Bootstrap>(&[], &(), &body)
        .await?;
    files.store(&reply.certificate, &reply.ca)?;
    info!(org = %reply.org, install = %reply.install, dir = %files.dir.display(), "bootstrapped: certificate stored");
    Ok(())
}
