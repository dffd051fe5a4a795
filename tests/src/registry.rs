//! A real OCI distribution registry for tests: Debian's `docker-registry` (CNCF distribution 2.8,
//! put there by scripts/install-registry) on a free loopback port, its storage in a temporary
//! directory; killed when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RegistryServer {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub host: String,
    /// Where it keeps its blobs (a test may corrupt one there).
    pub storage: PathBuf,
    _dir: tempfile::TempDir,
}

impl RegistryServer {
    pub fn start() -> RegistryServer {
        // Registry clients (reqwest over rustls without a default provider) need ring installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("temp dir");
        let port = crate::free_port();
        let storage = dir.path().join("storage");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
                storage.display()
            ),
        )
        .expect("registry config");
        let bin = which("docker-registry")
            .expect("docker-registry is not installed: run scripts/install-registry");
        let child = Command::new(bin)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn docker-registry");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !crate::listening(port) {
            assert!(Instant::now() < deadline, "docker-registry did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        RegistryServer {
            child,
            host: format!("127.0.0.1:{port}"),
            storage,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:<port>/<repository>`, as `ferry_artifacts::Registry::new` takes it.
    pub fn url(&self, repository: &str) -> String {
        format!("http://{}/{repository}", self.host)
    }
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
