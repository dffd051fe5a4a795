//! Nothing is lost when processes die: state of record is in NATS, the runner is stateless, and the
//! scheduler's reconcile pass finishes what a crash interrupted.

use std::path::PathBuf;

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, copy_dir, ferry, repo_root, running_job};

fn slow_example(dir: &std::path::Path) -> PathBuf {
    let app = dir.join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    // Greeter's apply takes a while, so the control plane can be killed while it runs.
    let apply = std::fs::read_to_string(app.join("components/src/greeter/apply.sh")).unwrap();
    std::fs::write(
        app.join("components/src/greeter/apply.sh"),
        apply.replace("set -eu\n", "set -eu\nsleep 2\n"),
    )
    .unwrap();
    app
}

fn create(api: &str, app: &std::path::Path) -> String {
    ferry_tests::sync_and_create(api, app, "prod")
}

#[test]
fn control_plane_killed_mid_deploy_finishes_after_restart() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = slow_example(dir.path());
    let (server, api) = Proc::server(&nats.url, dir.path().join("server-1.log"));
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let wf = create(&api, &app);

    wait_until(&api, &wf, 60, "greeter's apply to run", |w| {
        step_is(w, "greeter", "apply", "running")
    });
    server.kill();

    // The runner finishes greeter's apply with no control plane up; its result waits in JOB_EVENTS.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server-2.log"));
    let done = wait_until(&api, &wf, 90, "the workflow to finish", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(name_of(&install.status), "active");
    assert_eq!(
        install.components["reporter"].outputs["summary"],
        "HELLO, PROD! has 12 characters"
    );
    // Exactly one execution per job: nothing ran twice.
    for s in done.steps {
        if let Some(job) = s.job_id.as_deref() {
            let j = cli::<Job>(&api, &["jobs", "get", job, "--json"]);
            assert_eq!(j.executions.len(), 1, "{j:?}");
        }
    }
}

#[test]
fn a_runner_started_late_or_replaced_picks_up_waiting_jobs() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/hello");
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let wf = create(&api, &app);

    // No runner yet: the first sync job is offered and waits, available.
    let job = running_job(&api, &wf, "sandbox", "sync");
    assert_eq!(
        name_of(&cli::<Job>(&api, &["jobs", "get", &job, "--json"]).status),
        "available"
    );

    // A runner that dies before doing anything (SIGKILL right away), then the real one.
    let data = dir.path().join("runner");
    Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-0.log")).kill();
    let _runner = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-1.log"));
    let done = wait_until(&api, &wf, 90, "the workflow to finish", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
}

#[test]
fn garbage_on_a_runner_subject_is_rejected_and_counted() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let js = async_nats::jetstream::new(nats.admin().await);
        // An unknown protocol version, then bytes that are not a message at all.
        js.publish(
            "ferry.rx.default.prod.event.j1",
            vec![99u8, 4, 1, 2, 3].into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
        js.publish("ferry.rx.default.prod.event.j2", b"garbage".to_vec().into())
            .await
            .unwrap()
            .await
            .unwrap();
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = std::process::Command::new("curl")
            .args(["-sf", &format!("{api}/metrics")])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let count = |consumer: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with(&format!(
                        "ferry_messages_rejected_total{{consumer=\"{consumer}\"}}"
                    ))
                })
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        if count("scheduler-events") == 2 && count("log-ingest-events") == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "rejections not counted:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The services are still up and serving.
    let health = std::process::Command::new("curl")
        .args(["-sf", &format!("{api}/healthz")])
        .output()
        .unwrap();
    // The JSON shape of /healthz itself.
    let health: serde_json::Value = serde_json::from_slice(&health.stdout).unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["services"].as_array().unwrap().len(), 5);
    let (code, out, _) = ferry(&api, &["installs", "list", "--json"]);
    assert_eq!((code, out.trim()), (0, "[]"));
}

#[test]
fn a_runner_replaced_after_doing_work_takes_over_at_once() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/hello");
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let data = dir.path().join("runner");
    let first = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-1.log"));
    let wf = create(&api, &app);
    let done = wait_until(&api, &wf, 90, "the first deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");

    // The first runner dies with its consumer of offers still registered on the hub; a new runner
    // (and a second one beside it) must pick up the next deploy without waiting for that to expire.
    first.kill();
    let _second = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-2.log"));
    let _third = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-3.log"));
    let redeploy = cli::<Deployed>(&api, &["installs", "deploy", "prod", "--json"]);
    let wf2 = redeploy.workflow_id.as_str().to_string();
    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until(&api, &wf2, 30, "the redeploy", |w| {
            name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
        })
    }));
    let done = ended.unwrap_or_else(|stuck| {
        // Once, on a loaded CI machine, the redeploy stayed `Running` on a plan for the whole
        // wait: what the server and both runners saw is what would tell why.
        for log in ["server.log", "runner-2.log", "runner-3.log"] {
            show_tail(&dir.path().join(log), 80);
        }
        std::panic::resume_unwind(stuck)
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
}

/// The last `n` lines of a log, on stderr (shown with a failing test).
fn show_tail(log: &std::path::Path, n: usize) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    eprintln!("--- {} (last {n} lines) ---", log.display());
    for line in &lines[lines.len().saturating_sub(n)..] {
        eprintln!("{line}");
    }
}

#[test]
fn one_of_two_scheduler_replicas_killed_mid_deploy_loses_and_repeats_nothing() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = slow_example(dir.path());
    let (_rest, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--services", "api,build,log-ingest,approval"],
    );
    let scheduler = |n: u32| {
        Proc::server_with(
            &nats.url,
            dir.path().join(format!("scheduler-{n}.log")),
            &["--services", "scheduler"],
        )
        .0
    };
    let (a, _b) = (scheduler(1), scheduler(2));
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let wf = create(&api, &app);
    wait_until(&api, &wf, 60, "greeter's apply to run", |w| {
        step_is(w, "greeter", "apply", "running")
    });
    a.kill();

    let done = wait_until(&api, &wf, 120, "the workflow to finish", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    for s in done.steps {
        assert!(
            name_of(&s.status) == "succeeded" || name_of(&s.status) == "skipped",
            "{s:?}"
        );
        if let Some(job) = s.job_id.as_deref() {
            let j = cli::<Job>(&api, &["jobs", "get", job, "--json"]);
            assert_eq!(j.executions.len(), 1, "ran twice: {j:?}");
        }
    }
}

#[test]
fn a_job_runs_on_while_the_control_plane_is_down_longer_than_its_lease() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let apply = app.join("components/src/greeter/apply.sh");
    let text = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(&apply, text.replace("set -eu\n", "set -eu\nsleep 14\n")).unwrap();
    // A lease long enough that a loaded machine answers renewals within it (the runner stops a
    // job whose renewals go unanswered for two thirds of it), and a downtime longer than two.
    let lease = ["--job-lease-secs", "4"];
    let (server, api) = Proc::server_with(&nats.url, dir.path().join("server-1.log"), &lease);
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let wf = create(&api, &app);
    let job = running_job(&api, &wf, "greeter", "apply");
    // Down for more than twice the lease while the apply runs.
    server.kill();
    std::thread::sleep(std::time::Duration::from_secs(9));
    let (_server, api) = Proc::server_with(&nats.url, dir.path().join("server-2.log"), &lease);
    let done = wait_until(&api, &wf, 90, "the workflow to finish", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    assert_eq!(j.executions.len(), 1, "{j:?}");
    assert_eq!(name_of(&j.executions[0].status), "finished", "{j:?}");
}

/// Starts ferry-server against `nats_url` and expects it to refuse to start; returns what it said.
fn refused_start(nats_url: &str) -> String {
    let out = ferry_tests::ferry_server(nats_url)
        .arg("--http-addr")
        .arg(format!("127.0.0.1:{}", ferry_tests::free_port()))
        .output()
        .unwrap();
    assert!(!out.status.success(), "ferry-server started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn services_refuse_to_start_when_the_audit_stream_was_truncated_or_deleted() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (mut server, _api) = Proc::server(&nats.url, dir.path().join("server.log"));
    // A restart with AUDIT as it was set up is fine.
    server.terminate(std::time::Duration::from_secs(10));
    let (mut server, _api) = Proc::server(&nats.url, dir.path().join("server2.log"));
    server.terminate(std::time::Duration::from_secs(10));

    let rt = tokio::runtime::Runtime::new().unwrap();
    let js = rt.block_on(async { async_nats::jetstream::new(nats.admin().await) });
    // deny-delete and deny-purge do not stop a reconfiguration that keeps one message.
    rt.block_on(async {
        let mut s = js.get_stream("AUDIT").await.unwrap();
        let mut config = s.info().await.unwrap().config.clone();
        config.max_messages = 1;
        js.update_stream(config).await.unwrap();
    });
    let said = refused_start(&nats.url);
    assert!(
        said.contains("the AUDIT stream was reconfigured: max_msgs 1 (should be none)"),
        "{said}"
    );

    rt.block_on(async { js.delete_stream("AUDIT").await.unwrap() });
    let said = refused_start(&nats.url);
    assert!(
        said.contains("the AUDIT stream is missing (it was deleted)"),
        "{said}"
    );
}
