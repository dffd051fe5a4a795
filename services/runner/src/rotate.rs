//! Certificate rotation over the live connection: before the install's certificate expires (a
//! third of its life left), the runner makes a new key, asks for a certificate for it on
//! `ferry.rx.<org>.<install>.renew` — over the connection the current certificate opened — stores
//! it, and reconnects with it: the leaf is restarted (its spool is on disk, and jobs go on), or in
//! direct mode the client reconnects (it reads the files on each connect). Jobs are not
//! interrupted; a report made meanwhile waits in the spool or is retried.

use std::sync::Arc;
use std::time::Duration;

use ferry_pki::{InstallFiles, InstallIdentity};
use ferry_protocol::messages::{RenewReply, RenewRequest};
use ferry_protocol::rpc::ask;
use ferry_protocol::subjects;
use tokio::sync::Notify;
use tracing::{info, warn};

/// How the runner starts using a new certificate.
pub enum Reconnect {
    /// Restart the leaf, which reads the certificate when it starts.
    Leaf(Arc<Notify>),
    /// Reconnect the runner's own client.
    Direct(async_nats::Client),
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Renews the certificate whenever it is due, until the runner stops.
pub async fn rotate_loop(
    client: async_nats::Client,
    files: InstallFiles,
    identity: InstallIdentity,
    reconnect: Reconnect,
) {
    loop {
        let info = match files.info() {
            Ok(i) => i,
            Err(e) => {
                warn!(error = %e, "cannot read the install's certificate");
                tokio::time::sleep(Duration::from_secs(60)).await;
                continue;
            }
        };
        let life = info.not_after_unix.saturating_sub(info.not_before_unix);
        let check = Duration::from_secs((life / 10).clamp(1, 60));
        if !info.due(now_unix()) {
            tokio::time::sleep(check).await;
            continue;
        }
        match renew(&client, &files, &identity, &info.serial).await {
            Ok(serial) => {
                info!(%serial, old = %info.serial, "certificate renewed; reconnecting with it");
                match &reconnect {
                    Reconnect::Leaf(restart) => restart.notify_one(),
                    Reconnect::Direct(c) => {
                        if let Err(e) = c.force_reconnect().await {
                            warn!(error = %e, "could not reconnect with the new certificate");
                        }
                    }
                }
            }
            Err(e) => {
                warn!(error = %e, expires = info.not_after_unix, "certificate renewal failed; trying again");
                tokio::time::sleep(check).await;
            }
        }
    }
}

async fn renew(
    client: &async_nats::Client,
    files: &InstallFiles,
    identity: &InstallIdentity,
    current: &str,
) -> Result<String, String> {
    let csr = files.new_key_and_csr(identity).map_err(|e| e.to_string())?;
    // On the subject of the certificate this connection presented: the only renewal subject the
    // hub lets it use.
    let subject = subjects::renew_certificate(&identity.org, &identity.install, current);
    let request = RenewRequest { csr };
    let reply = ask(client, subject, &request, Duration::from_secs(10))
        .await
        .map_err(|e| e.to_string())?;
    match reply {
        RenewReply::Issued { certificate, ca } => {
            let serial = ferry_pki::CertInfo::parse(&certificate)
                .map_err(|e| e.to_string())?
                .serial;
            files.store(&certificate, &ca).map_err(|e| e.to_string())?;
            Ok(serial)
        }
        RenewReply::Refused { reason } => Err(reason),
    }
}
