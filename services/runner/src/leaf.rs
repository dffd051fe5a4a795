//! Leaf mode: the runner starts and supervises a nats-server beside it, in leaf mode, with its own
//! JetStream domain (`install-<install>-<host>`, see `host_id`). The leaf's only remote is the hub's leafnode port, over
//! mTLS with the install's certificate: that is the install's one outbound connection, and the hub
//! admits it with exactly the install's permissions, as it would the runner itself. The runner
//! (and anything a job starts) talks only to this local server, on loopback; the leaf's JetStream
//! holds the spool (`outbox.rs`) that keeps events and logs while the hub is out of reach.
//!
//! The leaf is the runner's child: it is restarted if it exits, and stopped with the runner (its
//! JetStream data stays in `<data>/leaf`, so a spool left behind is sent by the next runner).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use tracing::{info, warn};

use ferry_pki::InstallFiles;

#[derive(Debug, thiserror::Error)]
pub enum LeafError {
    #[error("nats-server for the leaf: {0}")]
    Binary(String),
    #[error("the leaf's directory {dir}: {error}")]
    Io { dir: String, error: std::io::Error },
    #[error("the leaf nats-server did not start within 20 s; its log is {0}")]
    NotStarted(String),
}

/// How to run the install's leaf.
#[derive(Debug, Clone)]
pub struct LeafConfig {
    /// The nats-server binary.
    pub binary: PathBuf,
    /// The hub's leafnode URL (`tls://hub:7422`).
    pub hub: String,
    pub install: String,
    /// `<data>/leaf`: configuration, log, JetStream store.
    pub dir: PathBuf,
    pub identity: InstallFiles,
}

/// The running leaf: its local URL; dropping it stops the supervisor and the server.
pub struct Leaf {
    pub url: String,
    /// The one local user the leaf takes (`runner`, with a password made at this start and
    /// kept only in the leaf's configuration, in the runner's data directory): a job on the host
    /// shares the runner's network, and must not speak for the install through its leaf.
    pub password: String,
    /// The leaf's log, and where this start's lines begin in it (see `link.rs`).
    pub log: PathBuf,
    pub log_start: u64,
    /// Notified: the supervisor restarts the server (to take up a renewed certificate).
    pub restart: std::sync::Arc<tokio::sync::Notify>,
    supervisor: tokio::task::JoinHandle<()>,
}

impl Drop for Leaf {
    fn drop(&mut self) {
        self.supervisor.abort();
    }
}

/// Finds a nats-server: `given`, else `nats-server` next to this executable, else on `PATH`.
pub fn find_binary(given: Option<&Path>) -> Result<PathBuf, LeafError> {
    if let Some(p) = given {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(LeafError::Binary(format!("{} is not a file", p.display())))
        };
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("nats-server")));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("nats-server"));
    beside
        .into_iter()
        .chain(on_path)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            LeafError::Binary(
                "not found beside ferry-runner or on PATH: pass --nats-server PATH (or --direct)"
                    .into(),
            )
        })
}

fn q(p: &Path) -> String {
    format!("\"{}\"", p.display())
}

/// This runner host's name among its install's runners: made once per data directory and kept
/// there. An install may have several runner hosts (each bootstrapped with its own token); the hub
/// takes two leaf connections with one server name for one server reconnecting, and drops the
/// older — so each leaf is named, and has its JetStream domain, after its install and its host.
pub fn host_id(dir: &Path) -> std::io::Result<String> {
    let file = dir.join("host-id");
    match std::fs::read_to_string(&file) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_string()),
        Ok(_) | Err(_) => {
            std::fs::create_dir_all(dir)?;
            let new = ferry_model::new_id();
            let id = new[new.len() - 8..].to_string();
            std::fs::write(&file, &id)?;
            Ok(id)
        }
    }
}

/// The user the runner connects to its leaf as.
pub const LOCAL_USER: &str = "runner";

impl Leaf {
    /// How the runner connects to its leaf: as its one local user.
    pub fn connect_options(&self) -> async_nats::ConnectOptions {
        async_nats::ConnectOptions::with_user_and_password(LOCAL_USER.into(), self.password.clone())
    }
}

/// The leaf's configuration: loopback only, one local user, its own JetStream domain, one
/// remote. Its message limit is NATS's default, 1 MiB, the smallest a Ferry hub has: a message
/// the spool takes must also fit the hub (a larger result goes in chunks of the leaf's limit).
fn config(cfg: &LeafConfig, port: u16, host: &str, password: &str) -> String {
    let id = &cfg.identity;
    format!(
        "# Written by ferry-runner on each start (leaf.rs).\n\
         server_name: \"leaf-{install}-{host}\"\n\
         listen: \"127.0.0.1:{port}\"\n\
         authorization {{ user: \"{LOCAL_USER}\", password: \"{password}\" }}\n\
         max_payload: 1MB\n\
         jetstream {{\n  domain: \"install-{install}-{host}\"\n  store_dir: {store}\n  max_memory_store: 64MB\n  max_file_store: 4GB\n}}\n\
         leafnodes {{\n  reconnect: 1\n  remotes: [ {{\n    urls: [{hub}]\n    tls: {{ cert_file: {cert}, key_file: {key}, ca_file: {ca} }}\n  }} ]\n}}\n",
        install = cfg.install,
        store = q(&cfg.dir.join("js")),
        // A hub cluster's nodes, comma-separated: the leaf keeps one link, to any of them, and
        // moves to another when its node goes away.
        hub = cfg
            .hub
            .split(',')
            .map(|u| format!("\"{}\"", u.trim()))
            .collect::<Vec<_>>()
            .join(", "),
        cert = q(&id.cert()),
        key = q(&id.key()),
        ca = q(&id.ca()),
    )
}

/// 32 random bytes, hex: the leaf's local password for this start.
fn new_password() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(hex::encode(bytes))
}

/// Writes `path` readable by the runner's user only (it holds the leaf's password).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(bytes)
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn spawn(
    cfg: &LeafConfig,
    conf: &Path,
) -> Result<(Child, Option<crate::orphans::Marker>), LeafError> {
    let io = |error| LeafError::Io {
        dir: cfg.dir.display().to_string(),
        error,
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(cfg.dir.join("nats.log"))
        .map_err(io)?;
    let mut cmd = Command::new(&cfg.binary);
    cmd.arg("-c")
        .arg(conf)
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        // Its own process group, recorded like a job's: a runner SIGKILLed (which no drop
        // handler sees) leaves it behind, and the next runner for the install kills it before
        // starting its own on the same store (`orphans.rs`).
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; between fork and exec the child only asks to be
    // killed when its parent dies, so a dead runner's leaf goes with it at once.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(io)?;
    let marker = child.id().and_then(|pid| {
        let data = cfg.dir.parent().unwrap_or(&cfg.dir);
        crate::orphans::record(data, Path::new("leaf"), pid)
    });
    Ok((child, marker))
}

/// Starts the leaf and waits until it accepts connections.
pub async fn start(cfg: LeafConfig) -> Result<Leaf, LeafError> {
    let io = |error| LeafError::Io {
        dir: cfg.dir.display().to_string(),
        error,
    };
    std::fs::create_dir_all(&cfg.dir).map_err(io)?;
    let port = free_port().map_err(io)?;
    let host = host_id(&cfg.dir).map_err(io)?;
    let conf = cfg.dir.join("nats.conf");
    let password = new_password().map_err(io)?;
    write_private(&conf, config(&cfg, port, &host, &password).as_bytes()).map_err(io)?;
    // Where this start's lines begin in the leaf's log (it is appended to across starts).
    let log_start = std::fs::metadata(cfg.dir.join("nats.log")).map_or(0, |m| m.len());
    let (mut child, mut marker) = spawn(&cfg, &conf)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if tokio::time::Instant::now() > deadline || matches!(child.try_wait(), Ok(Some(_))) {
            return Err(LeafError::NotStarted(
                cfg.dir.join("nats.log").display().to_string(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    info!(port, hub = %cfg.hub, "leaf nats-server started");
    let log = cfg.dir.join("nats.log");
    let restart = std::sync::Arc::new(tokio::sync::Notify::new());
    let asked = restart.clone();
    let supervisor = tokio::spawn(async move {
        loop {
            tokio::select! {
                status = child.wait() => {
                    warn!(?status, "the leaf nats-server exited; starting it again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                _ = asked.notified() => {
                    info!("restarting the leaf nats-server");
                    let _ = child.kill().await;
                }
            }
            drop(marker.take());
            match spawn(&cfg, &conf) {
                Ok((c, m)) => {
                    child = c;
                    marker = m;
                }
                Err(e) => {
                    warn!(error = %e, "could not start the leaf nats-server; trying again");
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
            }
        }
    });
    Ok(Leaf {
        url: format!("nats://127.0.0.1:{port}"),
        password,
        log,
        log_start,
        restart,
        supervisor,
    })
}
