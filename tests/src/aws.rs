//! An AWS API for tests: PyPI's moto server (`scripts/install-moto`) on a free port, and the AWS
//! CLI pointed at it, as a customer would run it (with throwaway credentials).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, listening, repo_root};

pub struct Moto {
    pub url: String,
    child: Child,
}

fn tools() -> PathBuf {
    repo_root().join(".tools/pip-aws")
}

impl Moto {
    /// Starts moto on a free port; waits until it listens.
    pub fn start() -> Moto {
        let tools = tools();
        assert!(
            tools.join("bin/moto_server").exists(),
            "moto is not installed: run scripts/install-moto"
        );
        let port = free_port();
        let child = Command::new("python3")
            .arg(tools.join("bin/moto_server"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("PYTHONPATH", &tools)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !listening(port) {
            assert!(Instant::now() < deadline, "moto did not listen on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        Moto {
            url: format!("http://127.0.0.1:{port}"),
            child,
        }
    }

    /// `aws ARGS` against this moto, in us-east-1; (exit code, stdout, stderr).
    pub fn aws(&self, args: &[&str]) -> (i32, String, String) {
        let tools = tools();
        let out = Command::new("python3")
            .arg(tools.join("bin/aws"))
            .args([
                "--endpoint-url",
                &self.url,
                "--region",
                "us-east-1",
                "--output",
                "json",
            ])
            .args(args)
            .env("PYTHONPATH", &tools)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env_remove("AWS_PROFILE")
            .output()
            .expect("run the AWS CLI");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// [`Moto::aws`] that must succeed, its JSON answer.
    pub fn aws_json(&self, args: &[&str]) -> serde_json::Value {
        let (code, out, err) = self.aws(args);
        assert_eq!(code, 0, "aws {args:?}: {out}{err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("aws {args:?}: {e}: {out}"))
    }
}

/// A PATH with the AWS CLI on it first, as `aws` (a wrapper in `dir/bin`), for processes that
/// run it as a customer's host would: a runner's jobs, the install stack's user data.
pub fn path_with_aws_cli() -> String {
    use std::os::unix::fs::PermissionsExt;
    // Under the repository's .tools, not the test's directory in /tmp: a sandboxed job has a
    // private /tmp, and must find the CLI on the host's read-only file system. Written whole
    // under another name, then renamed: tests running at once write the same file.
    let bin = repo_root().join(".tools/aws-cli-bin");
    std::fs::create_dir_all(&bin).expect("a bin directory");
    let wrapper = bin.join("aws");
    let tmp = bin.join(format!("aws.{}", std::process::id()));
    std::fs::write(
        &tmp,
        format!(
            "#!/bin/sh\nPYTHONPATH={0} exec python3 {0}/bin/aws \"$@\"\n",
            tools().display()
        ),
    )
    .expect("the aws wrapper");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
        .expect("the aws wrapper's mode");
    std::fs::rename(&tmp, &wrapper).expect("the aws wrapper");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// examples/aws-account synced as `aws-account` and an install `name` of it created.
pub fn aws_account_install(api: &str, name: &str) {
    let app = crate::repo_root().join("examples/aws-account");
    let (code, out, err) = crate::ferry(
        api,
        &[
            "apps",
            "sync",
            app.to_str().unwrap_or_default(),
            "--name",
            "aws-account",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = crate::ferry(
        api,
        &["installs", "create", "--app", "aws-account", "--name", name],
    );
    assert_eq!(code, 0, "{out}{err}");
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
