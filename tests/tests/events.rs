//! Live events and logs as Server-Sent Events (`GET /v1/events`, `GET /v1/jobs/{id}/log`),
//! resumed after a dropped connection, and `ferry logs -f` riding through an API restart.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferry_tests::{NatsServer, Proc, Sse, repo_root, sse_curl, sse_events};
use serde_json::Value;

/// Reads an SSE capture until `done` holds of its events (or panics after 60 s).
fn read_until(out: &Path, done: impl Fn(&[Sse]) -> bool) -> Vec<Sse> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let body = std::fs::read_to_string(out).unwrap_or_default();
        let events = sse_events(&body);
        if done(&events) {
            return events;
        }
        assert!(Instant::now() < deadline, "gave up waiting on:\n{body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until a capture shows the subscription is in place.
fn subscribed(out: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(out)
        .unwrap_or_default()
        .contains(": subscribed")
    {
        assert!(Instant::now() < deadline, "never subscribed");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn seqs(events: &[Sse]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| e.id.as_deref())
        .map(|id| id.parse().unwrap())
        .collect()
}

/// A one-shot capture of an SSE route: what arrives within `secs`.
fn capture(api: &str, path: &str, headers: &[&str], secs: u64, dir: &Path) -> String {
    let out = dir.join(format!("capture-{}", ferry_tests::free_port()));
    let mut child = sse_curl(api, path, headers, &out);
    std::thread::sleep(Duration::from_secs(secs));
    child.kill().ok();
    child.wait().ok();
    std::fs::read_to_string(&out).unwrap()
}

fn status_of(api: &str, path: &str, headers: &[&str]) -> (String, String) {
    let token = ferry_tests::token_for(api).unwrap();
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-w", "\n%{http_code}", "-H"])
        .arg(format!("authorization: Bearer {token}"));
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(format!("{api}{path}")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.to_string(), body.to_string())
}

#[test]
fn events_are_the_orgs_changes_in_order_and_resume_without_loss_or_repeat() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);

    let live = dir.path().join("live");
    let mut watcher = sse_curl(&api, "/v1/events", &[], &live);
    subscribed(&live);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let wf: Value = serde_json::from_str(&out).unwrap();
    let wf_id = wf["id"].as_str().unwrap();
    let events = read_until(&live, |events| {
        events
            .iter()
            .any(|e| e.event == "workflow" && e.json()["record"]["status"] == "succeeded")
    });
    watcher.kill().ok();
    watcher.wait().ok();

    // In the hub's order, each once, every kind of change the deploy made.
    let ids = seqs(&events);
    assert_eq!(ids.len(), events.len(), "every event has an id");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for kind in ["install", "workflow", "job"] {
        assert!(events.iter().any(|e| e.event == kind), "no {kind} event");
    }
    for e in &events {
        let data = e.json();
        assert_eq!(data["kind"], e.event.as_str());
        assert_eq!(data["seq"].to_string(), *e.id.as_ref().unwrap());
        assert_eq!(data["install"], "prod", "{data}");
    }
    let running = events
        .iter()
        .position(|e| e.event == "workflow" && e.json()["record"]["status"] == "running")
        .expect("the workflow was seen running");
    let done = events
        .iter()
        .position(|e| e.event == "workflow" && e.json()["record"]["status"] == "succeeded")
        .unwrap();
    assert!(running < done);

    // A client that dropped after the middle event gets exactly the ones after it.
    let middle = events.len() / 2;
    let last_seen = format!("last-event-id: {}", ids[middle]);
    let resumed = sse_events(&capture(&api, "/v1/events", &[&last_seen], 2, dir.path()));
    let resumed_ids = seqs(&resumed);
    assert!(
        resumed_ids.starts_with(&ids[middle + 1..]),
        "resumed after {}: {resumed_ids:?}, first saw {ids:?}",
        ids[middle]
    );
    assert_eq!(resumed[..events.len() - middle - 1], events[middle + 1..]);

    // Filters: one workflow's own changes; another install's, none of these.
    let path = format!("/v1/events?workflow={wf_id}&kinds=workflow");
    let filtered = sse_events(&capture(&api, &path, &["last-event-id: 0"], 2, dir.path()));
    assert!(!filtered.is_empty());
    assert!(
        filtered
            .iter()
            .all(|e| e.event == "workflow" && e.json()["id"] == wf_id),
        "{filtered:?}"
    );
    let other = sse_events(&capture(
        &api,
        "/v1/events?install=staging",
        &["last-event-id: 0"],
        2,
        dir.path(),
    ));
    assert!(other.is_empty(), "{other:?}");

    // Bad requests are refused before any stream opens.
    let (code, body) = status_of(&api, "/v1/events?kinds=step", &[]);
    assert_eq!(code, "400", "{body}");
    assert!(body.contains("unknown event kind `step`"), "{body}");
    let (code, body) = status_of(&api, "/v1/events", &["last-event-id: yesterday"]);
    assert_eq!(code, "400", "{body}");
    let (code, _) = status_of(&api, "/v1/events?install=a.b", &[]);
    assert_eq!(code, "400");

    // Another org on the same hub sees none of these changes.
    let other_org = ferry_tests::ferry_server(&nats.url)
        .args(["init", "--org", "globex"])
        .output()
        .unwrap();
    let token = String::from_utf8_lossy(&other_org.stdout)
        .trim()
        .to_string();
    let out = Command::new("curl")
        .args(["-sN", "--max-time", "2", "-H", "last-event-id: 0", "-H"])
        .arg(format!("authorization: Bearer {token}"))
        .arg(format!("{api}/v1/events"))
        .output()
        .unwrap();
    let theirs = sse_events(&String::from_utf8_lossy(&out.stdout));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(": subscribed"),
        "{out:?}"
    );
    assert!(theirs.is_empty(), "{theirs:?}");
}

#[test]
fn a_job_log_is_numbered_lines_that_resume_after_the_last_one_seen() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = ferry_tests::hello_with_greeter_prelude(
        dir.path(),
        "for i in $(seq 1 12); do echo \"line $i\"; done",
    );
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let wf: ferry_model::Workflow = serde_json::from_str(&out).unwrap();
    let job = ferry_tests::typed::the_step(&wf, "greeter", "apply")
        .job_id
        .as_deref()
        .unwrap();

    let path = format!("/v1/jobs/{job}/log");
    let all = sse_events(&capture(&api, &path, &[], 2, dir.path()));
    let (end, lines) = all.split_last().unwrap();
    assert_eq!(end.event, "end");
    assert_eq!(end.json()["status"], "finished");
    let numbers: Vec<u64> = seqs(lines);
    assert_eq!(numbers, (1..=lines.len() as u64).collect::<Vec<_>>());
    let texts: Vec<String> = lines
        .iter()
        .map(|l| l.json()["text"].as_str().unwrap().to_string())
        .collect();
    for i in 1..=12 {
        assert!(texts.contains(&format!("line {i}")), "{texts:?}");
    }

    // Resuming after line 3 gives lines 4.. and the end, the same as the first reading.
    let resumed = sse_events(&capture(&api, &path, &["last-event-id: 3"], 2, dir.path()));
    assert_eq!(resumed[..], all[3..]);
    // As does following a finished job.
    let followed = sse_events(&capture(
        &api,
        &format!("{path}?follow=true"),
        &["last-event-id: 3"],
        2,
        dir.path(),
    ));
    assert_eq!(followed[..], all[3..]);
}

#[test]
fn logs_follow_rides_through_an_api_restart_without_losing_or_repeating_a_line() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let port = ferry_tests::free_port();
    let log = dir.path().join("server.log");
    let (server, api) = Proc::server_on(&nats.url, log.clone(), &[], &[], port);
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let app = ferry_tests::hello_with_greeter_prelude(
        dir.path(),
        "for i in $(seq 1 60); do echo \"tick $i\"; sleep 0.1; done",
    );
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let created: Value = serde_json::from_str(&out).unwrap();
    let wf = created["workflow_id"].as_str().unwrap();
    let job = ferry_tests::running_job(&api, wf, "greeter", "apply");

    let out_path = dir.path().join("follow.out");
    let mut follower = Command::new(ferry_tests::bin("ferry"))
        .env("FERRY_TOKEN", ferry_tests::token_for(&api).unwrap())
        .env("XDG_CONFIG_HOME", "/nonexistent/ferry-tests")
        .args(["--api", &api, "logs", "--job", &job, "-f"])
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let printed = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::fs::read_to_string(&out_path)
            .unwrap_or_default()
            .matches("tick ")
            .count()
            < n
        {
            assert!(Instant::now() < deadline, "the follower printed too little");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    printed(3);
    server.kill();
    std::thread::sleep(Duration::from_millis(700));
    let (_server, _) = Proc::server_on(&nats.url, dir.path().join("server2.log"), &[], &[], port);
    let status = follower.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(follower.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    let out = std::fs::read_to_string(&out_path).unwrap();
    let ticks: Vec<&str> = out.lines().filter(|l| l.contains("tick ")).collect();
    let want: Vec<String> = (1..=60).map(|i| format!("tick {i}")).collect();
    assert_eq!(
        ticks.iter().map(|l| l.trim()).collect::<Vec<_>>(),
        want,
        "{out}"
    );
}
