//! An S3-compatible store for tests: SeaweedFS's `weed mini` (`scripts/install-s3` puts it in
//! `.tools/bin`), on free loopback ports, with one access key. Requests from the test itself go
//! through curl's `--aws-sigv4`, so nothing here speaks S3 but real clients.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, repo_root};

const ACCESS_KEY: &str = "ferrytest";
const SECRET_KEY: &str = "ferrytestsecret";

pub struct S3Store {
    child: Child,
    /// `http://127.0.0.1:PORT`: the S3 endpoint.
    pub endpoint: String,
    pub dir: tempfile::TempDir,
}

impl S3Store {
    pub fn start() -> S3Store {
        let weed = repo_root().join(".tools/bin/weed");
        assert!(
            weed.is_file(),
            "{} is missing: run scripts/install-s3",
            weed.display()
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("s3.json");
        let identities = serde_json::json!({ "identities": [{
            "name": "ferry",
            "credentials": [{ "accessKey": ACCESS_KEY, "secretKey": SECRET_KEY }],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]});
        std::fs::write(&config, identities.to_string()).expect("write s3.json");
        let s3_port = free_port();
        // Every port weed opens, on a free one: tests run side by side.
        let ports: Vec<String> = [
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "s3.port.grpc",
            "s3.port.iceberg",
            "s3.port.lance",
            "admin.port",
            "admin.port.grpc",
        ]
        .iter()
        .map(|flag| format!("-{flag}={}", free_port()))
        .collect();
        let log = std::fs::File::create(dir.path().join("weed.log")).expect("log");
        let child = Command::new(&weed)
            .arg("mini")
            .arg(format!("-dir={}", dir.path().join("data").display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-s3.config={}", config.display()))
            .args(["-admin.ui=false", "-webdav=false"])
            .arg(format!("-s3.port={s3_port}"))
            .args(&ports)
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start weed mini");
        let store = S3Store {
            child,
            endpoint: format!("http://127.0.0.1:{s3_port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !crate::listening(s3_port) {
            assert!(
                Instant::now() < deadline,
                "weed mini did not start:\n{}",
                store.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        store
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("weed.log")).unwrap_or_default()
    }

    /// The credentials, as the AWS SDK reads them from the environment.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID".into(), ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), SECRET_KEY.into()),
        ]
    }

    /// A signed request; (HTTP status, body).
    fn request(&self, method: &str, path: &str) -> (u16, Vec<u8>) {
        let out = Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", "-X", method])
            .args(["--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
            .arg(format!("{ACCESS_KEY}:{SECRET_KEY}"))
            .arg(format!("{}{path}", self.endpoint))
            .output()
            .expect("run curl");
        let mut body = out.stdout;
        let split = body.iter().rposition(|b| *b == b'\n').unwrap_or(0);
        let code = String::from_utf8_lossy(&body[split..])
            .trim()
            .parse()
            .unwrap_or(0);
        body.truncate(split);
        (code, body)
    }

    /// Creates a bucket, retrying while the store is still coming up.
    pub fn create_bucket(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (code, body) = self.request("PUT", &format!("/{name}"));
            if code == 200 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "creating bucket {name}: HTTP {code} {}\n{}",
                String::from_utf8_lossy(&body),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// An object's bytes, or `None` (404).
    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        match self.request("GET", &format!("/{bucket}/{key}")) {
            (200, body) => Some(body),
            (404, _) => None,
            (code, body) => panic!(
                "GET {bucket}/{key}: HTTP {code} {}",
                String::from_utf8_lossy(&body)
            ),
        }
    }
}

impl S3Store {
    /// Stops the store's process (SIGSTOP): connections are accepted by the kernel and never
    /// answered, as an S3 that hangs.
    pub fn freeze(&self) {
        let _ = std::process::Command::new("kill")
            .args(["-STOP", &self.child.id().to_string()])
            .status();
    }

    /// Lets a frozen store go on (SIGCONT).
    pub fn thaw(&self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
    }
}

impl Drop for S3Store {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
