//! The install stack's runner host as its user data sets it up: the vendor packs the runner
//! bundle for the stack (`installs runner-bundle --for-stack --archive`), the stack names its
//! URL and sha256, and the user data — run here as CloudFormation would substitute it, in a
//! scratch root instead of `/` — fetches and checks the bundle, reads the one-time token from
//! the account's Secrets Manager (moto), and runs the bundle's `install.sh`, whose runner
//! bootstraps: its key and certificate on the host, no token in its environment file.

use std::path::Path;
use std::time::{Duration, Instant};

use ferry_tests::aws::{Moto, path_with_aws_cli};
use ferry_tests::{NatsServer, Proc, bin, ferry, nats_server_bin, repo_root};
use serde_json::Value;

/// Kills the runner `install.sh` started in the background, however the test ends.
struct Started(std::path::PathBuf);

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(&self.0)
            .ok()
            .filter(|p| p.trim().parse::<u32>().is_ok())
        {
            let _ = std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status();
        }
    }
}

/// The user data as CloudFormation's `Fn::Sub` makes it: `${X}` from `values` (or `X`'s
/// default), `${!X}` written `${X}`.
fn substituted(template: &Value, values: &[(&str, &str)]) -> String {
    let sub = template["Resources"]["RunnerLaunchTemplate"]["Properties"]["LaunchTemplateData"]
        ["UserData"]["Fn::Base64"]["Fn::Sub"]
        .as_str()
        .expect("the user data is an Fn::Sub string");
    let mut out = sub.to_string();
    for (name, v) in values {
        out = out.replace(&format!("${{{name}}}"), v);
    }
    for (name, p) in template["Parameters"].as_object().unwrap() {
        if let Some(d) = p["Default"].as_str() {
            out = out.replace(&format!("${{{name}}}"), d);
        }
    }
    let out = out.replace("${!", "${");
    assert!(
        !out.contains("${AWS::") && !out.contains("${Runner"),
        "unsubstituted: {out}"
    );
    out
}

fn runner_bundle(api: &str, dir: &Path, hub: &str) -> (std::path::PathBuf, String, String) {
    let archive = dir.join("bundle.tar.gz");
    let (code, out, err) = ferry(
        api,
        &[
            "installs",
            "runner-bundle",
            "acme",
            "--for-stack",
            "--out",
            dir.join("bundle").to_str().unwrap(),
            "--hub-url",
            hub,
            "--binary",
            bin("ferry-runner").to_str().unwrap(),
            "--binary",
            nats_server_bin().to_str().unwrap(),
            "--archive",
            archive.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let sha = out.split_whitespace().next().unwrap().to_string();
    assert_eq!(sha.len(), 64, "{out}");
    let token = err
        .lines()
        .find_map(|l| l.split_once("BootstrapToken (usable once, within "))
        .and_then(|(_, rest)| rest.rsplit(' ').next())
        .expect("the token for the stack")
        .to_string();
    (archive, sha, token)
}

#[test]
fn the_stacks_user_data_installs_the_bundle_and_its_runner_bootstraps() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::aws::aws_account_install(&api, "acme");

    // The vendor: the bundle for the stack (no token inside), and the stack naming it.
    let (archive, sha, token) = runner_bundle(&api, dir.path(), &nats.leaf_url);
    let env = std::fs::read_to_string(dir.path().join("bundle/runner.env")).unwrap();
    assert!(!env.contains(&token), "{env}");
    let file = dir.path().join("stack.json");
    let url = format!("file://{}", archive.display());
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "stack",
            "acme",
            "--out",
            file.to_str().unwrap(),
            "--bundle-url",
            &url,
            "--bundle-sha256",
            &sha,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let template: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    // The host answers metadata requests with a session token only, and no further than itself.
    let metadata = &template["Resources"]["RunnerLaunchTemplate"]["Properties"]["LaunchTemplateData"]
        ["MetadataOptions"];
    assert_eq!(metadata["HttpTokens"], "required", "{metadata}");
    assert_eq!(metadata["HttpPutResponseHopLimit"], 1, "{metadata}");

    // The customer's account keeps the token (the stack's RunnerBootstrapToken secret).
    let moto = Moto::start();
    let secret = moto.aws_json(&[
        "secretsmanager",
        "create-secret",
        "--name",
        "ferry-acme-bootstrap",
        "--secret-string",
        &token,
    ]);
    let user_data = substituted(
        &template,
        &[
            ("AWS::Region", "us-east-1"),
            ("AWS::StackName", "ferry-acme"),
            ("RunnerBootstrapToken", secret["ARN"].as_str().unwrap()),
        ],
    );
    assert!(!user_data.contains(&token));

    // The host boots: the user data runs as root would, under a scratch root.
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let _started = Started(root.join("var/lib/ferry-runner/runner.pid"));
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&user_data)
        .env("FERRY_ROOT", &root)
        .env("PATH", path_with_aws_cli())
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_ENDPOINT_URL", &moto.url)
        .env("FERRY_STACK_ENDPOINT", &moto.url)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("bundle.tar.gz: OK"), "{stdout}");
    assert!(
        stdout.contains("ferry-runner installed for install acme"),
        "{stdout}"
    );
    let installed = std::fs::read_to_string(root.join("etc/ferry/runner.env")).unwrap();
    assert!(
        installed.contains("FERRY_STACK_NAME=ferry-acme"),
        "{installed}"
    );
    assert!(!installed.contains(&token), "{installed}");
    // The host's firewall for jobs (tested in `sandbox.rs`) is installed, and the runner's unit
    // runs it before each start.
    assert_eq!(
        std::fs::read_to_string(root.join("usr/local/bin/ferry-jobs-firewall")).unwrap(),
        std::fs::read_to_string(repo_root().join("deploy/runner/ferry-jobs-firewall")).unwrap()
    );
    let unit = std::fs::read_to_string(root.join("opt/ferry/ferry-runner.service")).unwrap();
    assert!(
        unit.contains("ExecStartPre=+/usr/local/bin/ferry-jobs-firewall")
            && unit.contains("Delegate=yes"),
        "{unit}"
    );

    // The runner bootstraps with the token from its file: its certificate is on the host.
    let identity = ferry_pki::InstallFiles::new(&root.join("var/lib/ferry-runner/identity"));
    let log = root.join("var/lib/ferry-runner/runner.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !identity.exists() {
        assert!(
            Instant::now() < deadline,
            "the runner did not bootstrap: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("runner started") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the runner did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // A bundle whose sha256 is not the stack's is refused before anything runs.
    std::fs::write(&archive, b"tampered").unwrap();
    let again = dir.path().join("again");
    std::fs::create_dir_all(&again).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&user_data)
        .env("FERRY_ROOT", &again)
        .env("PATH", path_with_aws_cli())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!again.join("etc/ferry/runner.env").exists());
}
