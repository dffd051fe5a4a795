//! Revocation is of the install: once `ferry installs revoke` starts, no renewal, no bootstrap and
//! no certificate of the install works — including certificates a renewal racing the revocation
//! obtained — until an operator issues a new bootstrap token.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ferry_protocol::messages::{RenewReply, RenewRequest};
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, ORG, Proc, repo_root, sync_hello, token_for};

/// A new key in `dir` and its CSR for install `prod`.
fn new_key(dir: &Path) -> (ferry_pki::InstallFiles, String) {
    let files = ferry_pki::InstallFiles::new(dir);
    let id = ferry_pki::InstallIdentity::new(ORG, "prod").unwrap();
    let csr = files.new_key_and_csr(&id).unwrap();
    (files, csr)
}

/// Whether the hub admits a connection with the identity in `dir`.
async fn admitted(nats: &NatsServer, dir: &Path) -> bool {
    let id = ferry_pki::InstallIdentity::new(ORG, "prod").unwrap();
    let connect = ferry_pki::InstallFiles::new(dir)
        .credentials(&id)
        .connect_options()
        .max_reconnects(Some(1))
        .connect(&nats.url);
    matches!(
        tokio::time::timeout(Duration::from_secs(10), connect).await,
        Ok(Ok(_))
    )
}

/// Asks for certificates over `client` until `stop`; returns the directories of those issued.
async fn renew_until(
    client: async_nats::Client,
    base: PathBuf,
    stop: Arc<AtomicBool>,
) -> Vec<PathBuf> {
    let mut issued = Vec::new();
    let subject = ferry_protocol::subjects::renew(ORG, "prod");
    for n in 0..5_000 {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let dir = base.join(format!("renewed-{n}"));
        let (files, csr) = new_key(&dir);
        let asked = client.request(
            subject.clone(),
            ferry_protocol::encode(&RenewRequest { csr }).into(),
        );
        let Ok(Ok(reply)) = tokio::time::timeout(Duration::from_secs(2), asked).await else {
            continue;
        };
        if let Ok(RenewReply::Issued { certificate, ca }) =
            ferry_protocol::decode::<RenewReply>(&reply.payload)
        {
            files.store(&certificate, &ca).unwrap();
            issued.push(dir);
        }
    }
    issued
}

/// `POST /v1/bootstrap` with `token` and a CSR for a key in `dir`; the HTTP status, and the
/// certificate stored in `dir` when one was issued.
fn bootstrap(api: &str, token: &str, dir: &Path) -> String {
    let (files, csr) = new_key(dir);
    let body = serde_json::json!({ "token": token, "csr": csr }).to_string();
    let out = Command::new("curl")
        .args([
            "-s",
            "-w",
            "\n%{http_code}",
            "-H",
            "Content-Type: application/json",
        ])
        .args(["-d", &body])
        .arg(format!("{api}/v1/bootstrap"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (reply, status) = text.rsplit_once('\n').unwrap();
    if status == "200" {
        let reply: ferry_model::api::BootstrapReply = serde_json::from_str(reply).unwrap();
        files.store(&reply.certificate, &reply.ca).unwrap();
    }
    status.to_string()
}

#[test]
fn renewals_racing_a_revoke_yield_no_certificate_that_works_after_it() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    // Renewals unlimited, so that they are still coming when the revocation lands.
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--renewals-at-once", "1000000"],
    );
    sync_hello(&api, &repo_root().join("examples/hello"));
    let created = cli::<CreatedInstall>(
        &api,
        &[
            "installs", "create", "--app", "hello", "--name", "prod", "--json",
        ],
    );
    let first_token = created.runner_token.unwrap().token;
    let unused_token: ferry_model::api::RunnerToken =
        cli(&api, &["installs", "runner-token", "prod", "--json"]);
    let unused_token = unused_token.token;
    assert_eq!(
        bootstrap(&api, &first_token, &dir.path().join("first")),
        "200"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let client = rt.block_on(async {
        assert!(admitted(&nats, &dir.path().join("first")).await);
        let id = ferry_pki::InstallIdentity::new(ORG, "prod").unwrap();
        ferry_pki::InstallFiles::new(&dir.path().join("first"))
            .credentials(&id)
            .connect_options()
            .connect(&nats.url)
            .await
            .unwrap()
    });
    let renewer = rt.spawn(renew_until(client, dir.path().to_path_buf(), stop.clone()));
    // Renewals work until the revocation, then race it.
    std::thread::sleep(Duration::from_millis(500));
    let revoked: ferry_model::api::Revoked = cli(&api, &["installs", "revoke", "prod", "--json"]);
    assert!(revoked.connections_closed >= 1, "{revoked:?}");
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let issued = rt.block_on(renewer).unwrap();
    assert!(!issued.is_empty(), "renewals worked before the revocation");

    rt.block_on(async {
        for d in issued.iter().chain([&dir.path().join("first")]) {
            assert!(
                !admitted(&nats, d).await,
                "{} works after the revocation (of {} renewed)",
                d.display(),
                issued.len()
            );
        }
    });
    assert_eq!(
        bootstrap(&api, &unused_token, &dir.path().join("old-token")),
        "401",
        "a token issued before the revocation"
    );

    // An operator's new token opens the install again, to runners bootstrapped with it only.
    let fresh: ferry_model::api::RunnerToken =
        cli(&api, &["installs", "runner-token", "prod", "--json"]);
    assert_eq!(
        bootstrap(&api, &fresh.token, &dir.path().join("fresh")),
        "200"
    );
    assert_eq!(
        bootstrap(&api, &unused_token, &dir.path().join("old-token-again")),
        "401",
        "a token of an earlier epoch stays refused"
    );
    rt.block_on(async {
        assert!(admitted(&nats, &dir.path().join("fresh")).await);
        assert!(
            !admitted(&nats, &issued[0]).await,
            "old certificates stay out"
        );
    });
    assert!(token_for(&api).is_some());
}

#[test]
fn a_connection_renews_only_its_own_certificate_and_not_while_it_has_most_of_its_life() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    sync_hello(&api, &repo_root().join("examples/hello"));
    let created = cli::<CreatedInstall>(
        &api,
        &[
            "installs", "create", "--app", "hello", "--name", "prod", "--json",
        ],
    );
    let token = created.runner_token.unwrap().token;
    assert_eq!(bootstrap(&api, &token, &dir.path().join("first")), "200");
    let files = ferry_pki::InstallFiles::new(&dir.path().join("first"));
    let serial = files.info().unwrap().serial;
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let id = ferry_pki::InstallIdentity::new(ORG, "prod").unwrap();
        let client = files
            .credentials(&id)
            .connect_options()
            .connect(&nats.url)
            .await
            .unwrap();
        let ask = |serial: String, n: usize| {
            let client = client.clone();
            let (_, csr) = new_key(&dir.path().join(format!("ask-{n}")));
            async move {
                let asked = client.request(
                    ferry_protocol::subjects::renew_certificate(ORG, "prod", &serial),
                    ferry_protocol::encode(&RenewRequest { csr }).into(),
                );
                match tokio::time::timeout(Duration::from_secs(5), asked).await {
                    Ok(Ok(reply)) => {
                        Some(ferry_protocol::decode::<RenewReply>(&reply.payload).unwrap())
                    }
                    _ => None,
                }
            }
        };
        // Its own certificate, just issued: refused, with the reason.
        match ask(serial.clone(), 0).await {
            Some(RenewReply::Refused { reason }) => {
                assert!(reason.contains("of its life left"), "{reason}")
            }
            other => panic!("a fresh certificate's renewal was answered {other:?}"),
        }
        // Another certificate's subject: the hub does not let this connection publish there.
        assert!(
            ask("00ff00ff".into(), 1).await.is_none(),
            "a connection asked a renewal for a certificate it did not present"
        );
    });
}
