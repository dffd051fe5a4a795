//! The test harness: real processes on free loopback ports, nothing mocked.
//!
//! * [`NatsServer`] starts the pinned nats-server (from `.tools/bin`, put there by `nats/install`, or
//!   from `PATH`) with JetStream in a temporary directory, and kills it when dropped.
//! * [`bin`] finds the workspace's built binaries (`ferry`, `ferry-server`, `ferry-runner`) in the
//!   target directory the tests run from.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// A port nothing listens on right now (the OS picks it; it is released before use, which is safe
/// enough on loopback in tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("bind 127.0.0.1:0")
}

/// Path of the nats-server binary: `.tools/bin/nats-server` or the first on `PATH`.
pub fn nats_server_bin() -> PathBuf {
    let local = repo_root().join(".tools/bin/nats-server");
    if local.is_file() {
        return local;
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join("nats-server");
            if p.is_file() {
                return p;
            }
        }
    }
    panic!("nats-server not found: run nats/install (it puts the pinned version in .tools/bin)");
}

/// A built binary of this workspace, next to the test executable's parent directory
/// (`target/<profile>/deps/test-*` → `target/<profile>/<name>`).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = dir.join(name);
    assert!(p.is_file(), "{} is not built: run `cargo build --workspace` first", p.display());
    p
}

pub struct NatsServer {
    pub port: u16,
    pub url: String,
    child: Child,
    pub dir: tempfile::TempDir,
}

impl NatsServer {
    /// Starts a single JetStream server (domain `hub`) on a free loopback port and waits until it
    /// accepts connections.
    pub fn start() -> NatsServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let conf = dir.path().join("nats.conf");
        std::fs::write(
            &conf,
            format!(
                "listen: \"127.0.0.1:{port}\"\nmax_payload: 8MB\njetstream {{\n  domain: hub\n  store_dir: \"{}\"\n}}\n",
                dir.path().join("js").display()
            ),
        )
        .expect("write nats.conf");
        let child = Command::new(nats_server_bin())
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nats-server");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not start on port {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        NatsServer { port, url: format!("nats://127.0.0.1:{port}"), child, dir }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
