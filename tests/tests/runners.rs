//! Runner hosts as an operator runs them: several for one install.

use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, repo_root, sync_and_create};

/// Two runner hosts of one install (each with its own data directory and certificate, as
/// `installs runner-token` hands out) stay connected side by side — the hub does not take one
/// leaf for the other reconnecting — and the install deploys, leaving no work directory behind.
/// The hosts share one install directory (`--install-dir`), as hosts of one install sharing a
/// file system may: the example's components write into what its sandbox made there.
#[test]
fn two_runner_hosts_of_one_install_do_not_knock_each_other_off() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    let wf = sync_and_create(&api, &app, "prod");
    let shared = dir.path().join("install").to_string_lossy().into_owned();
    let _runners: Vec<Proc> = ["one", "two"]
        .iter()
        .map(|host| {
            Proc::runner_with(
                &nats.url,
                "prod",
                &dir.path().join(host),
                dir.path().join(format!("{host}.log")),
                &["--install-dir", &shared],
            )
        })
        .collect();
    let done = wait_until(&api, &wf, 120, "the deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    // Each host prepares a job's work directory while its claim is out; the host whose claim
    // is refused removes it, the other after the job: nothing is left on either.
    let leftover = |host: &str| -> Vec<String> {
        std::fs::read_dir(dir.path().join(host).join("work"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into())
                    .collect()
            })
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(leftover("one").is_empty() && leftover("two").is_empty()) {
        assert!(
            Instant::now() < deadline,
            "work directories left behind: {:?} {:?}",
            leftover("one"),
            leftover("two")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Both keep their connection for a while: heartbeats from both, no displaced leaf.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runners =
            cli::<Vec<RunnerInfo>>(&api, &["runners", "list", "--install", "prod", "--json"]);
        let active = runners
            .iter()
            .filter(|r| name_of(&r.health) == "active")
            .count();
        if active == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "two active runners: {runners:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Both heard: a redeploy's plans are claimed (two runners could take them), each apply is
    // granted at its offer to the runner that made its plan, which alone holds it. (Greeter's
    // environment changes, so its plan has changes to apply.)
    let greeter = app.join("components/greeter.toml");
    let text = std::fs::read_to_string(&greeter).unwrap();
    std::fs::write(&greeter, format!("{text}EXTRA = \"2\"\n")).unwrap();
    ferry_tests::sync_hello(&api, &app);
    let redeploy = cli::<Deployed>(&api, &["installs", "deploy", "prod", "--json"]);
    let wf2 = redeploy.workflow_id.as_str().to_string();
    let done = wait_until(&api, &wf2, 120, "the redeploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    // (An unchanged component's apply is skipped: no job to look at.)
    let mut applied = 0;
    for component in ["greeter", "counter", "reporter"] {
        let job = |kind| {
            let id = the_step(&done, component, kind).job_id.clone()?;
            Some(cli::<Job>(&api, &["jobs", "get", &id, "--json"]).executions[0].clone())
        };
        let (Some(plan), Some(apply)) = (job("plan"), job("apply")) else {
            continue;
        };
        assert!(!plan.timing.granted_at_offer(), "{plan:?}");
        assert!(apply.timing.granted_at_offer(), "{apply:?}");
        assert_eq!(apply.runner, plan.runner, "applied where planned");
        applied += 1;
    }
    assert!(applied > 0, "{}", steps_of(&done));
    // A claimed job's timing has every point of the claim's path (one host, so one clock),
    // which `jobs get --timing` shows as spans.
    let claimed = the_step(&done, "greeter", "plan").job_id.clone().unwrap();
    let t = cli::<Job>(&api, &["jobs", "get", &claimed, "--json"]).executions[0].timing;
    let r = t.runner;
    let points = [
        t.offered_us,
        r.offer_seen_us,
        r.claim_sent_us,
        t.claimed_us,
        t.decided_us,
        r.granted_us,
        r.prepared_us,
        r.identity_us,
        r.spawned_us,
        r.exited_us,
    ];
    assert!(
        !t.granted_at_offer()
            && points.iter().all(|p| *p > 0)
            && points.windows(2).all(|w| w[0] <= w[1]),
        "{t:?}"
    );
    let (code, text, err) = ferry_tests::ferry(&api, &["jobs", "get", &claimed, "--timing"]);
    assert_eq!(code, 0, "{err}");
    // Every span but the one of a grant made at the offer.
    for span in ferry_model::Timing::span_names().filter(|s| *s != "grant_wait") {
        assert!(text.contains(span), "{span} missing:\n{text}");
    }
    std::thread::sleep(Duration::from_secs(3));
    let hub_log = std::fs::read_to_string(nats.dir.path().join("nats.log")).unwrap();
    assert!(
        !hub_log.contains("Duplicate Remote LeafNode"),
        "a leaf displaced the other:\n{hub_log}"
    );
}

/// Waits up to 20 s for `what` in the log at `log`; returns the log.
fn wait_in_log(log: &std::path::Path, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(what) {
            return text;
        }
        assert!(Instant::now() < deadline, "`{what}` never said:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A runner cut off from the hub says why in its own log — once, with what to do — instead of
/// "no responders" every second: a revoked install, and a hub URL nothing listens on.
#[test]
fn a_runner_says_once_why_it_cannot_reach_the_hub() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let wf = sync_and_create(&api, &repo_root().join("examples/hello"), "prod");
    let log = dir.path().join("runner.log");
    let mut runner = Proc::runner_with(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        log.clone(),
        &["--exit-when-refused-secs", "4"],
    );
    wait_until(&api, &wf, 120, "the deploy", |w| {
        name_of(&w.status) == "succeeded"
    });
    // Coming up, a runner waits for the control plane to answer without a warning.
    let started = std::fs::read_to_string(&log).unwrap();
    let first_read = started
        .find("reading offers from the control plane")
        .unwrap_or_else(|| panic!("never read offers:\n{started}"));
    assert!(
        !started[..first_read].contains("WARN"),
        "a warning before the link was up:\n{started}"
    );
    cli::<ferry_model::api::Revoked>(&api, &["installs", "revoke", "prod", "--json"]);
    wait_in_log(&log, "the hub refuses install prod's certificate");
    std::thread::sleep(Duration::from_secs(5));
    let text = std::fs::read_to_string(&log).unwrap();
    let warnings = text
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("the hub refuses install prod's certificate"))
        .count();
    assert_eq!(warnings, 1, "said once:\n{text}");
    assert!(text.contains("ferry installs runner-token prod"), "{text}");
    assert!(
        text.matches("reading offers failed").count() <= 1,
        "the same failure is not repeated every second:\n{text}"
    );
    // Refused without a break for longer than it was told to wait, it stops, saying why.
    let status = runner
        .wait_exit(Duration::from_secs(30))
        .expect("the runner stops");
    assert_eq!(
        status.code(),
        Some(3),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("ferry-runner: stopped: the hub refuses install prod's certificate"),
        "{text}"
    );

    // A hub URL nothing listens on.
    let other = dir.path().join("nowhere");
    ferry_tests::issue_install(
        &nats.hub.dir,
        ferry_tests::ORG,
        "prod",
        &other.join("identity"),
    );
    let closed = format!("tls://127.0.0.1:{}", ferry_tests::free_port());
    let nowhere_log = dir.path().join("nowhere.log");
    let _lost = Proc::spawn(
        "ferry-runner",
        &[
            "--nats-url",
            &closed,
            "--nats-server",
            ferry_tests::nats_server_bin().to_str().unwrap(),
            "--install",
            "prod",
            "--data-dir",
            other.to_str().unwrap(),
        ],
        nowhere_log.clone(),
    );
    let text = wait_in_log(&nowhere_log, "cannot reach the hub's leafnode port");
    assert!(
        text.contains(&closed) && text.contains("connection refused"),
        "{text}"
    );
}

/// A fleet found by its runners' health and by labels: `installs list --runner-health` and
/// `--label` (all of them must match), labels set at create and changed by `installs label`; a
/// label or a health the API cannot take is refused saying why.
#[test]
fn installs_are_listed_by_runner_health_and_labels() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let wf = sync_and_create(&api, &repo_root().join("examples/hello"), "prod");
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("r"),
        dir.path().join("r.log"),
    );
    wait_until(&api, &wf, 120, "the deploy", |w| {
        name_of(&w.status) == "succeeded"
    });
    cli::<Install>(
        &api,
        &["installs", "label", "prod", "team=payments", "--json"],
    );
    // No runner will ever come for this one.
    cli::<CreatedInstall>(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "idle",
            "--label",
            "team=search",
            "--label",
            "tier=gold",
            "--json",
        ],
    );
    let names = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["installs", "list", "--json"];
        all.extend_from_slice(args);
        cli::<Vec<Install>>(&api, &all)
            .into_iter()
            .map(|i| i.name)
            .collect()
    };
    assert_eq!(names(&[]), ["idle", "prod"]);
    // The runner's first heartbeat may come after its first jobs.
    let deadline = Instant::now() + Duration::from_secs(30);
    while names(&["--runner-health", "active"]).is_empty() {
        assert!(
            Instant::now() < deadline,
            "prod's runner never showed active"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(names(&["--runner-health", "active"]), ["prod"]);
    assert_eq!(names(&["--runner-health", "none"]), ["idle"]);
    assert!(names(&["--runner-health", "offline"]).is_empty());
    assert_eq!(names(&["--label", "team=payments"]), ["prod"]);
    assert_eq!(
        names(&["--label", "team=search", "--label", "tier=gold"]),
        ["idle"]
    );
    assert!(names(&["--label", "team=payments", "--label", "tier=gold"]).is_empty());

    let relabelled: Install = cli(
        &api,
        &[
            "installs",
            "label",
            "idle",
            "tier=silver",
            "--remove",
            "team",
            "--json",
        ],
    );
    assert_eq!(
        relabelled.labels,
        [("tier".to_string(), "silver".to_string())].into()
    );
    assert!(names(&["--label", "team=search"]).is_empty());
    let (_, text, _) = ferry_tests::ferry(&api, &["installs", "get", "idle"]);
    assert!(text.contains("labels: tier=silver"), "{text}");

    // A release chooses its installs by the same labels.
    let release = cli::<Release>(
        &api,
        &[
            "releases",
            "create",
            "--app",
            "hello",
            "--label",
            "team=payments",
            "--waves",
            "100%",
            "--json",
        ],
    );
    let targets: Vec<&str> = release.waves[0]
        .targets
        .iter()
        .map(|t| t.install.as_str())
        .collect();
    assert_eq!(targets, ["prod"], "{release:?}");
    let (code, _, err) = ferry_tests::ferry(
        &api,
        &[
            "releases",
            "create",
            "--app",
            "hello",
            "--label",
            "team=nobody",
            "--waves",
            "100%",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("no install to release to with those labels"),
        "{err}"
    );

    let (code, _, err) = ferry_tests::ferry(&api, &["installs", "label", "idle", "Tier=x"]);
    assert_ne!(code, 0);
    assert!(err.contains("label key \"Tier\""), "{err}");
    let token = ferry_tests::token_for(&api).unwrap();
    let out = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("{api}/v1/installs?runner_health=sleepy"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "400");
}

/// Waits until install `prod` has `n` active runners; returns their ids.
fn active_runners(api: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runners =
            cli::<Vec<RunnerInfo>>(api, &["runners", "list", "--install", "prod", "--json"]);
        let active: Vec<String> = runners
            .iter()
            .filter(|r| name_of(&r.health) == "active")
            .map(|r| r.runner.id.clone())
            .collect();
        if active.len() == n {
            return active;
        }
        assert!(Instant::now() < deadline, "{n} active runners: {runners:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every job of a finished workflow, as `jobs get` shows it.
fn jobs_of(api: &str, wf: &str) -> Vec<Job> {
    let w = cli::<Workflow>(api, &["workflows", "get", wf, "--json"]);
    w.steps
        .iter()
        .filter_map(|s| s.job_id.as_deref())
        .map(|j| cli::<Job>(api, &["jobs", "get", j, "--json"]))
        .collect()
}

/// An install with one runner: its jobs are granted to that runner as they are offered (the
/// record written granted, the doorbell carrying the grant), so the runner starts each without
/// claiming it — and the record still has the point its write was acknowledged, from the grant.
#[test]
fn the_only_runner_of_an_install_is_granted_its_jobs_without_claiming_them() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, runner, api, _app) = ferry_tests::provisioned_hello(&nats, dir.path());
    let id = active_runners(&api, 1).remove(0);
    let redeploy = cli::<Deployed>(&api, &["installs", "deploy", "prod", "--json"]);
    let wf = redeploy.workflow_id.as_str().to_string();
    let done = wait_until(&api, &wf, 90, "the redeploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    drop(runner);
    let jobs = jobs_of(&api, &wf);
    assert!(jobs.len() >= 4, "{jobs:?}");
    for j in &jobs {
        assert_eq!(j.executions.len(), 1, "{j:?}");
        let e = &j.executions[0];
        assert_eq!(e.runner, id, "{j:?}");
        let t = &e.timing;
        assert_eq!(t.claimed_us, 0, "granted at its offer, not claimed: {j:?}");
        assert!(t.decided_us >= t.offered_us && t.offered_us > 0, "{j:?}");
        assert!(
            t.written_us >= t.offered_us,
            "the write's point, from the grant: {j:?}"
        );
        assert_eq!(t.runner.claim_sent_us, 0, "{j:?}");
        assert!(t.runner.granted_us > 0, "{j:?}");
    }
}

/// A job granted at its offer to a runner that has just died: the hub answers its doorbell "no
/// responders", the scheduler takes the grant back at once and offers the job to all, and the
/// next runner claims it as the job's first execution — not after the dead runner's lease.
#[test]
fn a_grant_no_runner_hears_is_taken_back_and_the_job_offered_to_all() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let data = dir.path().join("runner");
    let first = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-1.log"));
    let wf = sync_and_create(&api, &repo_root().join("examples/hello"), "prod");
    let done = wait_until(&api, &wf, 90, "the first deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let dead = active_runners(&api, 1).remove(0);

    // Killed: still active by its last heartbeat, so the next job is granted to it.
    first.kill();
    let redeploy = cli::<Deployed>(&api, &["installs", "deploy", "prod", "--json"]);
    let wf2 = redeploy.workflow_id.as_str().to_string();
    let w = wait_until(&api, &wf2, 30, "a job offered to all", |w| {
        w.steps.iter().any(|s| {
            s.job_id.as_deref().is_some_and(|j| {
                name_of(&cli::<Job>(&api, &["jobs", "get", j, "--json"]).status) == "available"
            })
        })
    });
    let server_log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(
        server_log.contains("no runner heard the job's grant"),
        "{server_log}"
    );
    let _second = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-2.log"));
    let done = wait_until(&api, &wf2, 90, "the redeploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    for j in jobs_of(&api, &w.id) {
        assert_eq!(
            j.executions.len(),
            1,
            "no execution lost to the dead runner: {j:?}"
        );
        assert_ne!(j.executions[0].runner, dead, "{j:?}");
    }
}
