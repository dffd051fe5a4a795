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
        RegistryServer::start_with(None)
    }

    /// A registry; with `htpasswd`, one that takes only the users it lists.
    fn start_with(htpasswd: Option<String>) -> RegistryServer {
        // Registry clients (reqwest over rustls without a default provider) need ring installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("temp dir");
        let port = crate::free_port();
        let storage = dir.path().join("storage");
        let config = dir.path().join("config.yml");
        let mut yaml = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            storage.display()
        );
        if let Some(users) = htpasswd {
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, users).expect("htpasswd");
            yaml.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: ferry-tests\n    path: {}\n",
                file.display()
            ));
        }
        std::fs::write(&config, yaml).expect("registry config");
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

impl RegistryServer {
    /// A registry that takes only `user` with `password` (HTTP basic auth from an htpasswd file,
    /// bcrypt as distribution requires).
    pub fn start_with_basic_auth(user: &str, password: &str) -> RegistryServer {
        let hash = bcrypt::hash(password, 5).expect("bcrypt");
        RegistryServer::start_with(Some(format!("{user}:{hash}\n")))
    }
}

/// A stand-in for the Amazon ECR API on a free loopback port, speaking the one call Ferry makes
/// of it for credentials (`GetAuthorizationToken`, AWS JSON 1.1) and `CreateRepository`: what an
/// AWS account would answer, with the credentials of a registry the test runs. It records each
/// call's target, `Authorization` header (the SDK's SigV4 signature) and body. No AWS endpoint is
/// reachable from these machines, so the SDK's real requests are answered here.
pub struct EcrStandIn {
    pub url: String,
    pub calls: std::sync::Arc<std::sync::Mutex<Vec<EcrCall>>>,
}

#[derive(Debug, Clone)]
pub struct EcrCall {
    pub target: String,
    pub authorization: String,
    pub body: serde_json::Value,
}

impl EcrStandIn {
    pub fn start(user: &str, password: &str, registry: &str) -> EcrStandIn {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let token = base64_encode(format!("{user}:{password}").as_bytes());
        let registry = registry.to_string();
        let seen = calls.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let (mut target, mut auth, mut length) = (String::new(), String::new(), 0usize);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    let value = line.split_once(':').map(|(_, v)| v.trim().to_string());
                    if lower.starts_with("x-amz-target:") {
                        target = value.unwrap_or_default();
                    } else if lower.starts_with("authorization:") {
                        auth = value.unwrap_or_default();
                    } else if lower.starts_with("content-length:") {
                        length = value.and_then(|v| v.parse().ok()).unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                seen.lock().expect("calls").push(EcrCall {
                    target: target.clone(),
                    authorization: auth,
                    body: serde_json::from_slice(&body).unwrap_or_default(),
                });
                let reply = if target.ends_with(".GetAuthorizationToken") {
                    format!(
                        "{{\"authorizationData\":[{{\"authorizationToken\":\"{token}\",\"expiresAt\":4102444800,\"proxyEndpoint\":\"http://{registry}\"}}]}}"
                    )
                } else {
                    let name = String::from_utf8_lossy(&body).to_string();
                    format!(
                        "{{\"repository\":{{\"repositoryName\":\"x\",\"note\":{}}}}}",
                        serde_json::json!(name)
                    )
                };
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        EcrStandIn {
            url: format!("http://127.0.0.1:{port}"),
            calls,
        }
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
