//! The hub a test runs against: a real nats-server secured as in production (TLS with client
//! certificates from its own CA, the services' users, the auth callout's configuration, a leafnode
//! port), and the registry that lets helpers find a hub's trust directory by its URL.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, nats_server_bin};

pub struct NatsServer {
    pub port: u16,
    pub url: String,
    /// The hub's leafnode URL (`tls://127.0.0.1:PORT`): installs' leaf servers connect there.
    pub leaf_url: String,
    child: Child,
    pub dir: tempfile::TempDir,
    /// The hub's trust directory (`ferry-server --hub-dir`).
    pub hub: ferry_pki::HubFiles,
}

/// Trust directories of the hubs tests started, by NATS URL (so `Proc::server(url)` finds it).
fn hubs() -> &'static std::sync::Mutex<std::collections::HashMap<String, PathBuf>> {
    static HUBS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, PathBuf>>> =
        std::sync::OnceLock::new();
    HUBS.get_or_init(Default::default)
}

/// Records the hub at `nats_url` (one URL, or a cluster's, comma-separated): its trust directory
/// and its leafnode URL(s), for [`hub_dir`] and [`leaf_url`].
pub(crate) fn register(nats_url: &str, dir: &Path, leaf_url: &str) {
    if let Ok(mut m) = hubs().lock() {
        m.insert(nats_url.to_string(), dir.to_path_buf());
        m.insert(format!("leaf:{nats_url}"), PathBuf::from(leaf_url));
    }
}

/// Starts the nats-server of `dir/nats.conf` (its log appended to `dir/nats.log`) and waits
/// until it accepts connections on `port`.
fn spawn_listening(dir: &Path, port: u16) -> std::process::Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("nats.log"))
        .expect("nats.log");
    let child = Command::new(nats_server_bin())
        .arg("-c")
        .arg(dir.join("nats.conf"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn nats-server");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nats-server did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The trust directory of the hub at `nats_url`.
pub fn hub_dir(nats_url: &str) -> PathBuf {
    hubs()
        .lock()
        .ok()
        .and_then(|m| m.get(nats_url).cloned())
        .unwrap_or_else(|| panic!("no hub started at {nats_url}"))
}

/// The leafnode URL of the hub test started at `nats_url`.
pub fn leaf_url(nats_url: &str) -> String {
    hubs()
        .lock()
        .ok()
        .and_then(|m| m.get(&format!("leaf:{nats_url}")).cloned())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| panic!("no hub started at {nats_url}"))
}

/// The org runners and tokens default to.
pub const ORG: &str = "default";

impl NatsServer {
    /// Starts a single JetStream server (domain `hub`) on a free loopback port and waits until it
    /// accepts connections.
    pub fn start() -> NatsServer {
        NatsServer::start_with_max_payload("8MB")
    }

    /// [`NatsServer::start`] with another message size limit (`"1MB"`), to test what does not fit.
    pub fn start_with_max_payload(max_payload: &str) -> NatsServer {
        NatsServer::start_with(max_payload, None)
    }

    /// [`NatsServer::start`] with a JetStream store of `max_file_store` (`"128MB"`): a hub
    /// that can be filled in a test.
    pub fn start_with_store(max_file_store: &str) -> NatsServer {
        NatsServer::start_with("8MB", Some(max_file_store))
    }

    fn start_with(max_payload: &str, max_file_store: Option<&str>) -> NatsServer {
        // The product's hub (nats/hub.conf) sets 8GB. Left unset, nats-server takes 75% of the
        // disk free at its start: on a CI machine short of disk the streams' caps
        // (`StreamLimits::reserved`, 4.75 GiB) stopped fitting and a stream was refused with
        // "insufficient storage resources". A test's outcome must not hang on the disk free.
        let store_limit = format!("  max_file_store: {}\n", max_file_store.unwrap_or("8GB"));
        // A benchmark's hub profiled (`go tool pprof`) and counted (its monitoring endpoint):
        // loadtest/README.md.
        let profile = [
            ("FERRY_HUB_PROF_PORT", "prof_port"),
            ("FERRY_HUB_HTTP_PORT", "http"),
        ]
        .iter()
        .filter_map(|(var, key)| Some(format!("{key}: {}\n", std::env::var(var).ok()?)))
        .collect::<String>();
        // Every protocol message the hub sees, to a file: which client sends what, per install
        // deployed (loadtest/README.md, "A release's requests counted").
        let profile = match std::env::var("FERRY_HUB_TRACE") {
            Ok(f) => format!("{profile}trace: true\nlog_file: \"{f}\"\n"),
            Err(_) => profile,
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let hub = ferry_pki::HubFiles::load_or_create(&dir.path().join("hub"), &[])
            .expect("hub trust directory");
        let port = free_port();
        let leaf_port = free_port();
        let conf = dir.path().join("nats.conf");
        std::fs::write(
            &conf,
            format!(
                "{profile}listen: \"127.0.0.1:{port}\"\nmax_payload: {max_payload}\njetstream {{\n  domain: hub\n  store_dir: \"{}\"\n{store_limit}}}\n{}{}",
                dir.path().join("js").display(),
                hub.auth_conf().expect("auth.conf"),
                hub.leafnodes_conf(&format!("127.0.0.1:{leaf_port}")),
            ),
        )
        .expect("write nats.conf");
        let child = spawn_listening(dir.path(), port);
        let url = format!("nats://127.0.0.1:{port}");
        let leaf_url = format!("tls://127.0.0.1:{leaf_port}");
        register(&url, &hub.dir, &leaf_url);
        NatsServer {
            port,
            url,
            leaf_url,
            child,
            dir,
            hub,
        }
    }

    /// Connects as one of the hub's configured users (`ferry_pki::hub::{SERVICES_USER,
    /// ADMIN_USER, SYS_USER}`).
    pub async fn connect_as(&self, user: &str) -> async_nats::Client {
        self.hub
            .credentials(user)
            .expect("credentials")
            .connect_options()
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("connecting as {user}: {e}"))
    }

    /// Stops the server (SIGKILL, as a crash would) and starts it again on the same ports and
    /// store, returning once it accepts connections: a hub restart.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn_listening(self.dir.path(), self.port);
    }

    /// Stops the server (SIGKILL, as a crash would) and leaves it stopped.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The nats-server's process id (to read its memory).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The operator's connection: may do anything, the audit stream included.
    pub async fn admin(&self) -> async_nats::Client {
        self.connect_as(ferry_pki::hub::ADMIN_USER).await
    }

    /// Every record of the `AUDIT` stream so far, oldest first (from a runtime of its own: for
    /// synchronous tests).
    pub fn audit_events(&self) -> Vec<ferry_model::AuditEvent> {
        let rt = tokio::runtime::Runtime::new().expect("a runtime");
        rt.block_on(async {
            let js = async_nats::jetstream::new(self.admin().await);
            let mut stream = js.get_stream("AUDIT").await.expect("the AUDIT stream");
            let last = stream.info().await.expect("its info").state.last_sequence;
            let mut out = Vec::new();
            for seq in 1..=last {
                if let Ok(m) = stream.get_raw_message(seq).await {
                    out.push(
                        serde_json::from_slice(&m.payload)
                            .unwrap_or_else(|e| panic!("audit record {seq} is not one: {e}")),
                    );
                }
            }
            out
        })
    }

    /// Issues install `install` of `org` a certificate from the hub's CA into `identity_dir`
    /// (the key made there), as bootstrapping does; returns the credentials.
    pub fn issue_install(
        &self,
        org: &str,
        install: &str,
        identity_dir: &Path,
    ) -> ferry_pki::Credentials {
        issue_install(&self.hub.dir, org, install, identity_dir)
    }
}

/// [`NatsServer::issue_install`] for the hub whose trust directory is `hub_dir`.
pub fn issue_install(
    hub_dir: &Path,
    org: &str,
    install: &str,
    identity_dir: &Path,
) -> ferry_pki::Credentials {
    let hub = ferry_pki::HubFiles::open(hub_dir).expect("hub");
    let id = ferry_pki::InstallIdentity::new(org, install).expect("identity");
    let files = ferry_pki::InstallFiles::new(identity_dir);
    let csr = files.new_key_and_csr(&id).expect("key and CSR");
    let ca = hub.ca().expect("CA");
    let cert = ca
        .sign_install_csr(&csr, &id, ferry_pki::DEFAULT_CERT_LIFETIME)
        .expect("sign");
    files.store(&cert, ca.cert_pem()).expect("store identity");
    files.credentials(&id)
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
