//! The audit trail loses nothing the scheduler records. While the `AUDIT` stream takes no
//! writes, the scheduler's records are tried again (each failed attempt counted in
//! `ferry_audit_failures_total`) and what they are part of waits for them; once the stream
//! takes writes again, every record is there, each once.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, repo_root};

/// The value of the counter `series` on the API's `/metrics`, 0 when absent.
fn counter(api: &str, series: &str) -> f64 {
    let out = Command::new("curl")
        .args(["-s", &format!("{api}/metrics")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn audit_records_the_stream_refuses_are_retried_and_counted_not_lost() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);
    // Requested (and audited by the API) now; nothing runs until the runner starts.
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &[]);
    assert_eq!(code, 0, "{out}{err}");

    // The stream stops taking writes: its subjects moved away, as if it were gone.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let js = rt.block_on(async { jetstream::new(nats.admin().await) });
    let config = rt.block_on(async {
        let mut s = js.get_stream("AUDIT").await.unwrap();
        s.info().await.unwrap().config.clone()
    });
    let mut refusing = config.clone();
    refusing.subjects = vec!["ferry.audit-paused.>".into()];
    rt.block_on(async { js.update_stream(refusing).await.unwrap() });
    let before = nats.audit_events().len();

    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let failures = "ferry_audit_failures_total";
    wait_until("audit failures counted", Duration::from_secs(60), || {
        counter(&api, failures) >= 3.0
    });
    // The first job's end is not recorded: its step waits for its audit record.
    std::thread::sleep(Duration::from_secs(2));
    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert_ne!(name_of(&install.status), "active", "{install:#?}");
    assert_eq!(nats.audit_events().len(), before);

    rt.block_on(async { js.update_stream(config).await.unwrap() });
    wait_until("the deploy ends", Duration::from_secs(120), || {
        name_of(&cli::<Install>(&api, &["installs", "get", "prod", "--json"]).status) == "active"
    });
    let workflow = cli::<Install>(&api, &["installs", "get", "prod", "--json"])
        .last_workflow
        .unwrap();
    let wf = cli::<Workflow>(&api, &["workflows", "get", &workflow, "--json"]);
    let jobs: Vec<String> = wf
        .steps
        .iter()
        .filter_map(|s| s.job_id.as_deref().map(String::from))
        .collect();
    assert!(jobs.len() >= 8, "{wf:#?}");

    // Every record is there, once: the workflow's end and each job's.
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    wait_until("the workflow's record", Duration::from_secs(30), || {
        nats.audit_events()
            .iter()
            .any(|e| e.action == "workflow.succeeded" && e.target == workflow)
    });
    for e in nats.audit_events() {
        let key = (e.action.clone(), e.target.clone());
        *seen.entry(key).or_default() += 1;
    }
    for job in &jobs {
        let n = seen.get(&("job.finished".into(), job.clone()));
        assert_eq!(n, Some(&1), "job {job}: {seen:#?}");
    }
    assert_eq!(
        seen.get(&("workflow.succeeded".into(), workflow.clone())),
        Some(&1)
    );
    assert!(counter(&api, failures) >= 3.0);
}

/// `ferry audit` reads the record back: filtered by install, actor and action family, as text
/// or JSON lines, following new records with `-f`; a viewer may not read it.
#[test]
fn ferry_audit_reads_filters_exports_and_follows_the_record() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    for name in ["prod", "stage"] {
        let (code, out, err) = ferry_tests::create_hello(&api, name, &[]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let (code, out, err) = ferry_tests::ferry(&api, &["installs", "label", "prod", "tier=gold"]);
    assert_eq!(code, 0, "{out}{err}");

    let (code, text, err) =
        ferry_tests::ferry(&api, &["audit", "--install", "prod", "--action", "install"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("install.created") && l.contains(" prod")),
        "{text}"
    );
    assert!(lines.iter().any(|l| l.contains("install.labels")), "{text}");
    assert!(!text.contains("stage"), "another install's records: {text}");
    assert!(lines.iter().all(|l| l.contains("token:admin")), "{text}");

    let (code, jsonl, err) =
        ferry_tests::ferry(&api, &["audit", "--action", "install.created", "--json"]);
    assert_eq!(code, 0, "{err}");
    let entries: Vec<ferry_model::api::AuditEntry> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let targets: Vec<&str> = entries.iter().map(|e| e.event.target.as_str()).collect();
    assert_eq!(targets, ["prod", "stage"], "oldest first");
    // --since: how long ago, or a time; a time to come matches nothing; nonsense is refused.
    let (code, recent, err) = ferry_tests::ferry(
        &api,
        &[
            "audit",
            "--action",
            "install.created",
            "--since",
            "1h",
            "--json",
        ],
    );
    assert_eq!((code, recent.lines().count()), (0, 2), "{recent}{err}");
    let (code, later, err) =
        ferry_tests::ferry(&api, &["audit", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        later.is_empty() && err.contains("no audit records match"),
        "{later}{err}"
    );
    let (code, _, err) = ferry_tests::ferry(&api, &["audit", "--since", "yesterday"]);
    assert!(
        code != 0 && err.contains("a duration (90m, 2h, 7d)"),
        "{err}"
    );

    // Following: a record written after the reader caught up is printed.
    let out = dir.path().join("follow.out");
    let mut follower = Command::new(ferry_tests::bin("ferry"))
        .env("FERRY_TOKEN", ferry_tests::token_for(&api).unwrap())
        .args(["--api", &api, "audit", "--action", "install.labels", "-f"])
        .stdout(std::fs::File::create(&out).unwrap())
        .spawn()
        .unwrap();
    wait_until(
        "the follower to print the first record",
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(&out)
                .unwrap_or_default()
                .contains("tier")
        },
    );
    let (code, _, err) = ferry_tests::ferry(&api, &["installs", "label", "stage", "tier=silver"]);
    assert_eq!(code, 0, "{err}");
    wait_until(
        "the follower to print the new record",
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(&out)
                .unwrap_or_default()
                .contains("silver")
        },
    );
    let _ = follower.kill();
    let _ = follower.wait();

    // Reading the record takes an admin token.
    let (code, viewer, err) = ferry_tests::ferry(
        &api,
        &[
            "tokens", "create", "--name", "look", "--role", "viewer", "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let viewer: CreatedToken = serde_json::from_str(&viewer).unwrap();
    let denied = Command::new(ferry_tests::bin("ferry"))
        .env("FERRY_TOKEN", &viewer.token)
        .env("XDG_CONFIG_HOME", "/nonexistent/ferry-tests")
        .args(["--api", &api, "audit"])
        .output()
        .unwrap();
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("403"),
        "{denied:?}"
    );
}
