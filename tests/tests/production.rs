//! The README's production steps, run exactly as written — with this machine's names, ports and
//! directories in place of the examples' — deploy the example app: nothing to fill in by hand.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferry_tests::{bin, free_port, nats_server_bin, repo_root};

/// The shell block after the README's `<!-- production-steps -->` marker.
fn production_steps() -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let after = readme
        .split_once("<!-- production-steps -->")
        .expect("the README marks its production steps")
        .1;
    let body = after.split_once("```sh\n").expect("a sh block").1;
    body.split_once("\n```")
        .expect("the block ends")
        .0
        .to_string()
}

/// Kills the steps' whole process group (nats-server, ferry-server, the runner) when dropped,
/// and reaps the shell that ran them.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        for signal in ["-TERM", "-KILL"] {
            let _ = Command::new("kill")
                .args([signal, "--", &format!("-{}", self.0.id())])
                .status();
            std::thread::sleep(Duration::from_millis(500));
        }
        let _ = self.0.wait();
    }
}

/// `ferry` as the logged-in vendor of the steps (its token, its API), with `args`.
fn ferry<T: serde::de::DeserializeOwned>(dir: &Path, api: &str, args: &[&str]) -> Option<T> {
    let token = std::fs::read_to_string(dir.join("admin.token")).ok()?;
    let out = Command::new(bin("ferry"))
        .env("FERRY_TOKEN", token.trim())
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .args(["--api", api])
        .args(args)
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

#[test]
fn the_readmes_production_steps_deploy_the_example() {
    let dir = tempfile::tempdir().unwrap();
    let (nats, leaf, http) = (free_port(), free_port(), free_port());
    let here = |p: &str| dir.path().join(p).display().to_string();
    let example = repo_root().join("examples/hello").display().to_string();
    let mut steps = production_steps();
    let substitutions = [
        ("/etc/ferry/hub", here("hub")),
        ("hub.example.com", "127.0.0.1".to_string()),
        ("0.0.0.0", "127.0.0.1".to_string()),
        (":4222", format!(":{nats}")),
        (":7422", format!(":{leaf}")),
        (":4600", format!(":{http}")),
        ("apps sync examples/hello", format!("apps sync {example}")),
        (
            "--out bundle",
            format!("--out bundle --data-dir {}", here("runner")),
        ),
    ];
    // Each name goes to a mark first, and each mark to its value after: a free port that a
    // later name is part of (`:74225` holds `:7422`) must not be replaced again.
    for (i, (from, _)) in substitutions.iter().enumerate() {
        assert!(
            steps.contains(from),
            "the README's steps name {from}:\n{steps}"
        );
        steps = steps.replace(from, &format!("\u{1}{i}\u{1}"));
    }
    for (i, (_, to)) in substitutions.iter().enumerate() {
        steps = steps.replace(&format!("\u{1}{i}\u{1}"), to);
    }
    let script = dir.path().join("steps.sh");
    std::fs::write(&script, format!("set -euo pipefail\n{steps}\n")).unwrap();
    let path = format!(
        "{}:{}:{}",
        bin("ferry").parent().unwrap().display(),
        nats_server_bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = std::fs::File::create(dir.path().join("steps.log")).unwrap();
    let child = Command::new("bash")
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env_remove("FERRY_TOKEN")
        .env_remove("FERRY_API")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap();
    let _group = Group(child);

    let api = format!("http://127.0.0.1:{http}");
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        let wf =
            ferry::<ferry_model::Install>(dir.path(), &api, &["installs", "get", "prod", "--json"])
                .and_then(|i| i.last_workflow);
        if let Some(wf) = wf
            && let Some(w) = ferry::<ferry_model::Workflow>(
                dir.path(),
                &api,
                &["workflows", "get", &wf, "--json"],
            )
            && w.status.is_terminal()
        {
            break w.status;
        }
        assert!(
            Instant::now() < deadline,
            "the steps did not deploy within 3 minutes:\n{}",
            std::fs::read_to_string(dir.path().join("steps.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let log = std::fs::read_to_string(dir.path().join("steps.log")).unwrap_or_default();
    assert_eq!(status, ferry_model::WorkflowStatus::Succeeded, "{log}");
    // hub-init says what it wrote, the runner bootstrapped itself from the bundle.
    assert!(
        log.contains("hub.conf") && log.contains("auth.conf"),
        "{log}"
    );
    assert!(
        dir.path().join("runner/identity/cert.pem").exists(),
        "{log}"
    );
}
