//! `ferry dev` as a newcomer uses it: started twice, installs deleted and created again.

use std::process::Command;
use std::time::Duration;

use ferry_tests::{FerryDev, bin, free_port, repo_root};

/// A second `ferry dev` on the same data directory refuses at once and names the one holding it,
/// instead of starting a second hub on the same store and breaking the first.
#[test]
fn a_second_ferry_dev_on_the_same_data_directory_refuses_naming_the_first() {
    let dev = FerryDev::start(&repo_root().join("examples/hello"), &[]);
    let out = Command::new(bin("ferry"))
        .current_dir(repo_root())
        .args(["dev", "--exit-when-deployed", "--http-addr"])
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--data-dir")
        .arg(dev.data_dir.path().join("dev"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "in use by another `ferry dev` (pid {})",
            dev.pid()
        )),
        "{err}"
    );
    // The first one is untouched.
    let (code, out, err) = dev.cli(&["installs", "get", "dev"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// An install deleted under `ferry dev` and created again under the same name deploys: its old,
/// revoked identity is forgotten with it, and the new runner bootstraps anew.
#[test]
fn an_install_deleted_and_created_again_under_ferry_dev_deploys() {
    let dev = FerryDev::start(&repo_root().join("examples/hello"), &[]);
    let create = || {
        dev.cli(&[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "again",
            "--approve-all",
            "--wait",
        ])
    };
    let (code, out, err) = create();
    assert_eq!(code, 0, "{out}{err}\n{}", dev.logs());
    let (code, out, err) = dev.cli(&["installs", "delete", "again", "--force"]);
    assert_eq!(code, 0, "{out}{err}\n{}", dev.logs());
    let output = || std::fs::read_to_string(&dev.output).unwrap_or_default();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !output().contains("install again deleted") {
        assert!(std::time::Instant::now() < deadline, "{}", dev.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, out, err) = create();
    assert_eq!(
        code,
        0,
        "created again and deployed: {out}{err}\n{}",
        dev.logs()
    );
    // Only the new install's runner is listed under its name, not the deleted one's.
    let runners: Vec<ferry_model::api::RunnerInfo> = ferry_tests::typed::cli(
        &dev.api,
        &["runners", "list", "--install", "again", "--json"],
    );
    assert_eq!(runners.len(), 1, "{runners:?}");
}

/// The CLI's habits a newcomer relies on: `--api` without a scheme, `ferry login --api URL`
/// remembered, tokens revoked by name, no runner command to run by hand under `ferry dev`, and
/// log files without terminal colours.
#[test]
fn cli_habits_under_ferry_dev() {
    // The hub's ports may be chosen (a firewall, a fixed leaf address for another host).
    let (nats, leaf) = (ferry_tests::free_port(), ferry_tests::free_port());
    // And its installs' runners may copy into a registry a cluster pulls from.
    let registry = ferry_tests::RegistryServer::start();
    let dev = FerryDev::start(
        &repo_root().join("examples/hello"),
        &[
            "--nats-port",
            &nats.to_string(),
            "--leaf-port",
            &leaf.to_string(),
            "--registry",
            &format!("http://{}", registry.host),
        ],
    );
    assert!(ferry_tests::listening(nats) && ferry_tests::listening(leaf));
    let catalog = Command::new("curl")
        .args(["-s", &format!("http://{}/v2/_catalog", registry.host)])
        .output()
        .unwrap();
    let catalog = String::from_utf8_lossy(&catalog.stdout);
    assert!(catalog.contains("\"dev/greeter\""), "{catalog}");
    let token = ferry_tests::token_for(&dev.api).unwrap();
    let config = tempfile::tempdir().unwrap();
    let ferry = |args: &[&str]| {
        let out = Command::new(bin("ferry"))
            .current_dir(repo_root())
            .env_remove("FERRY_TOKEN")
            .env_remove("FERRY_API")
            .env("XDG_CONFIG_HOME", config.path())
            .args(args)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let host_port = dev.api.trim_start_matches("http://");
    let (code, out, err) = ferry(&["login", "--api", host_port, "--token", &token]);
    assert_eq!(code, Some(0), "{out}{err}");
    // Neither --api nor a token from now on: both were saved.
    let (code, out, err) = ferry(&["installs", "get", "dev"]);
    assert_eq!(code, Some(0), "{out}{err}");

    let (code, out, err) = ferry(&["tokens", "create", "--name", "ci", "--role", "viewer"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = ferry(&["tokens", "revoke", "ci"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("token ci ("), "{out}");
    let (code, _, err) = ferry(&["tokens", "revoke", "nobody"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("no token has the id or name `nobody`"),
        "{err}"
    );

    let (code, out, err) = ferry(&[
        "installs",
        "create",
        "--app",
        "hello",
        "--name",
        "second",
        "--approve-all",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("ferry-runner --bootstrap"), "{out}");
    assert!(out.contains("its runner is started for you"), "{out}");

    let server_log = std::fs::read_to_string(dev.data_dir.path().join("dev/server.log")).unwrap();
    assert!(
        !server_log.contains('\u{1b}'),
        "no terminal escapes in a log file"
    );
}

/// A workflow's log in one command: every job in step order under a header, for one component
/// if asked, with timestamps if asked; the install's latest workflow by the install's name.
#[test]
fn a_workflows_log_reads_in_step_order_across_its_jobs() {
    let dev = FerryDev::start(&repo_root().join("examples/hello"), &[]);
    let (code, all, err) = dev.cli(&["logs", "--install", "dev"]);
    assert_eq!(code, 0, "{err}");
    let headers: Vec<&str> = all.lines().filter(|l| l.starts_with("── ")).collect();
    assert!(
        headers
            .first()
            .is_some_and(|h| h.starts_with("── sandbox sync")),
        "{all}"
    );
    let position = |what: &str| all.find(what).unwrap_or_else(|| panic!("{what} in {all}"));
    assert!(position("── greeter plan") < position("── greeter apply"));
    assert!(position("── greeter apply") < position("── reporter apply"));
    assert!(all.contains("[ferry] succeeded"), "{all}");

    let (code, greeter, err) = dev.cli(&[
        "logs",
        "--install",
        "dev",
        "--component",
        "greeter",
        "--timestamps",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        greeter
            .lines()
            .filter(|l| l.starts_with("── "))
            .all(|h| h.starts_with("── greeter ")),
        "{greeter}"
    );
    let line = greeter.lines().find(|l| !l.starts_with("── ")).unwrap();
    assert!(
        line.starts_with("20") && line.contains('T') && line.contains("Z  "),
        "{line}"
    );
}
