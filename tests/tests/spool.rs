//! Store and forward: the install's leaf keeps what its runner reports while the hub is out of
//! reach, and sends it once the link is back — in order, once, nothing lost.

use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{
    Link, NatsServer, Proc, copy_dir, ferry, repo_root, running_job, sync_and_create,
};

#[test]
fn a_job_that_prints_through_a_cut_link_delivers_every_line_in_order_once() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    // greeter's apply prints a numbered line every 100 ms for 80 s.
    let apply = app.join("components/src/greeter/apply.sh");
    let script = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(
        &apply,
        script.replace(
            "set -eu\n",
            "set -eu\ni=1; while [ $i -le 800 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.1; done\n",
        ),
    )
    .unwrap();
    // A lease longer than the cut: the job is not given up while its runner is unreachable.
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--job-lease-secs", "150"],
    );
    let hub_leaf_port: u16 = nats.leaf_url.rsplit(':').next().unwrap().parse().unwrap();
    let link = Link::start(hub_leaf_port);
    let identity = dir.path().join("runner/identity");
    nats.issue_install(ferry_tests::ORG, "prod", &identity);
    let through = format!("tls://127.0.0.1:{}", link.port);
    let nats_bin = ferry_tests::nats_server_bin();
    let _runner = Proc::spawn(
        "ferry-runner",
        &[
            "--nats-url",
            &through,
            "--nats-server",
            nats_bin.to_str().unwrap(),
            "--data-dir",
            dir.path().join("runner").to_str().unwrap(),
        ],
        dir.path().join("runner.log"),
    );
    let wf = sync_and_create(&api, &app, "prod");
    let job = running_job(&api, &wf, "greeter", "apply");
    // Some lines arrive live, then the link goes for 60 s while the job goes on printing.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ferry(&api, &["logs", "--job", &job]).1.contains("line 5\n") {
        assert!(Instant::now() < deadline, "no live lines");
        std::thread::sleep(Duration::from_millis(100));
    }
    link.cut();
    let cut_at = Instant::now();
    std::thread::sleep(Duration::from_secs(60));
    let during = ferry(&api, &["logs", "--job", &job]).1;
    link.restore();
    let last_before = during
        .lines()
        .filter_map(|l| l.trim().strip_prefix("line "))
        .filter_map(|n| n.trim().parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    assert!(
        last_before < 400,
        "the link was not cut: line {last_before} arrived during the cut"
    );
    assert!(cut_at.elapsed() >= Duration::from_secs(60));

    let done = wait_until(&api, &wf, 180, "the workflow to end", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    assert_eq!(
        name_of(&the_step(&done, "greeter", "apply").status),
        "succeeded"
    );
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    assert_eq!(j.executions.len(), 1, "ran once: {j:?}");
    let log = ferry(&api, &["logs", "--job", &job]).1;
    let numbers: Vec<u32> = log
        .lines()
        .filter_map(|l| l.trim().strip_prefix("line "))
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    assert_eq!(
        numbers,
        (1..=800).collect::<Vec<u32>>(),
        "every line, in order, once"
    );
}
