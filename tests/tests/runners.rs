//! Runner hosts as an operator runs them: several for one install.

use std::time::{Duration, Instant};

use ferry_tests::{NatsServer, Proc, ferry_json, repo_root, sync_and_create, wait_for};

/// Two runner hosts of one install (each with its own data directory and certificate, as
/// `installs runner-token` hands out) stay connected side by side — the hub does not take one
/// leaf for the other reconnecting — and the install deploys.
#[test]
fn two_runner_hosts_of_one_install_do_not_knock_each_other_off() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let wf = sync_and_create(&api, &repo_root().join("examples/hello"), "prod");
    let _runners: Vec<Proc> = ["one", "two"]
        .iter()
        .map(|host| {
            Proc::runner(
                &nats.url,
                "prod",
                &dir.path().join(host),
                dir.path().join(format!("{host}.log")),
            )
        })
        .collect();
    let done = wait_for(&api, &wf, 120, "the deploy", |w| {
        w["status"] == "succeeded" || w["status"] == "failed"
    });
    assert_eq!(done["status"], "succeeded", "{done}");
    // Both keep their connection for a while: heartbeats from both, no displaced leaf.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runners = ferry_json(&api, &["runners", "list", "--install", "prod", "--json"]);
        let active = runners
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["health"] == "active")
            .count();
        if active == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "two active runners: {runners}");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    let hub_log = std::fs::read_to_string(nats.dir.path().join("nats.log")).unwrap();
    assert!(
        !hub_log.contains("Duplicate Remote LeafNode"),
        "a leaf displaced the other:\n{hub_log}"
    );
}
