//! Releases over several installs, each with its own runner: waves deploy in turn, a wave whose
//! health action fails on more installs than allowed halts the release (the later waves are not
//! touched), `resume` after the fix finishes it, and a scheduler restarted mid-wave starts
//! nothing twice.

use std::path::Path;
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, ferry, repo_root};

const INSTALLS: [&str; 6] = ["i1", "i2", "i3", "i4", "i5", "i6"];

/// examples/hello with a health action: it fails on an install whose greeting is `broken`.
fn app(dir: &Path) -> std::path::PathBuf {
    let app = dir.join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::write(
        app.join("actions/health.toml"),
        "name = \"health\"\ntimeout = \"30s\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"probe\"\ncommand = \"test \\\"{{.nuon.inputs.inputs.greeting}}\\\" != broken\"\n",
    )
    .unwrap();
    app
}

fn release_until(
    api: &str,
    id: &str,
    secs: u64,
    what: &str,
    done: impl Fn(&Release) -> bool,
) -> Release {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let r = cli::<Release>(api, &["releases", "get", id, "--json"]);
        if done(&r) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn targets(r: &Release, wave: usize) -> Vec<ferry_model::Target> {
    r.waves[wave].targets.clone()
}

#[test]
fn a_release_halts_on_a_failed_health_gate_resumes_after_the_fix_and_survives_a_scheduler_restart()
{
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let nats = NatsServer::start();
    let (server, api) = Proc::server(&nats.url, dir.path().join("server-1.log"));
    let _runners: Vec<Proc> = INSTALLS
        .iter()
        .map(|i| {
            Proc::runner(
                &nats.url,
                i,
                &dir.path().join(format!("runner-{i}")),
                dir.path().join(format!("runner-{i}.log")),
            )
        })
        .collect();
    ferry_tests::sync_hello(&api, &app);
    for i in INSTALLS {
        let greeting = if i == "i3" { "broken" } else { "hello" };
        let created = cli::<CreatedInstall>(
            &api,
            &[
                "installs",
                "create",
                "--app",
                "hello",
                "--name",
                i,
                "--approve-all",
                "--input",
                &format!("greeting={greeting}"),
                "--json",
            ],
        );
        let wf = created.workflow_id.as_str().to_string();
        wait_until(&api, &wf, 120, "provisioning", |w| {
            name_of(&w.status) == "succeeded"
        });
    }

    let created = cli::<Release>(
        &api,
        &[
            "releases",
            "create",
            "--app",
            "hello",
            "--installs",
            "i1,i2,i3,i4,i5,i6",
            "--waves",
            "1,50%,100%",
            "--health",
            "health",
            "--max-failures",
            "0",
            "--json",
        ],
    );
    let id = created.id.as_str().to_string();
    assert_eq!(
        created
            .waves
            .iter()
            .map(|w| w.targets.len())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );

    // i3's health check fails in wave 2: the release halts, wave 3 is never started.
    let halted = release_until(&api, &id, 120, "the release to halt", |r| {
        name_of(&r.status) == "halted"
    });
    assert!(
        halted
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("wave 2 has 1 failed")),
        "{halted:?}"
    );
    // `releases wait` returns when it halts, saying why and what goes on.
    let (code, _, err) = ferry(&api, &["releases", "wait", &id]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("wave 2 has 1 failed") && err.contains(&format!("ferry releases resume {id}")),
        "{err}"
    );
    let wave2 = targets(&halted, 1);
    let i3 = wave2.iter().find(|t| t.install == "i3").unwrap();
    assert_eq!(name_of(&i3.status), "failed");
    assert!(
        i3.message
            .as_deref()
            .is_some_and(|m| m.contains("health check")),
        "{i3:?}"
    );
    assert!(
        targets(&halted, 2)
            .iter()
            .all(|t| name_of(&t.status) == "pending" && t.deploy.is_none()),
        "{halted:?}"
    );
    std::thread::sleep(Duration::from_secs(6));
    let still = cli::<Release>(&api, &["releases", "get", &id, "--json"]);
    assert!(
        targets(&still, 2).iter().all(|t| t.deploy.is_none()),
        "{still:?}"
    );

    // The fix: i3's greeting. Then resume: i3 again, then wave 3.
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "update-inputs",
            "i3",
            "--input",
            "greeting=fixed",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = ferry(&api, &["releases", "resume", &id]);
    assert_eq!(code, 0, "{out}{err}");

    // The scheduler is killed once wave 3 has started, and started again.
    release_until(&api, &id, 120, "wave 3 to start", |r| {
        targets(r, 2)
            .iter()
            .any(|t| name_of(&t.status) == "deploying" || name_of(&t.status) == "checking")
    });
    server.kill();
    std::thread::sleep(Duration::from_secs(2));
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server-2.log"));
    let done = release_until(&api, &id, 180, "the release to finish", |r| {
        name_of(&r.status) == "succeeded" || name_of(&r.status) == "halted"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let (_, shown, _) = ferry(&api, &["releases", "get", &id]);
    assert!(shown.contains("wave 3 (passed)"), "{shown}");

    // Nothing ran twice: one release deploy per install of wave 3, and i3 deployed twice (once
    // per attempt).
    let all = cli::<Vec<Workflow>>(&api, &["workflows", "list", "--json"]);
    let cause = format!("release {id}");
    let deploys = |i: &str| {
        all.iter()
            .filter(|w| {
                w.install == i
                    && w.cause.as_deref() == Some(cause.as_str())
                    && name_of(&w.kind) == "deploy-components"
            })
            .count()
    };
    for i in ["i4", "i5", "i6"] {
        assert_eq!(deploys(i), 1, "{i}");
    }
    assert_eq!(deploys("i3"), 2);
    // Nor did any of wave 3's jobs: a result the killed scheduler had taken but not handled is
    // applied when its lease ends (it waits at the hub), not taken for a lost runner.
    for t in targets(&done, 2) {
        let wf = t.deploy.clone().unwrap();
        let w = cli::<Workflow>(&api, &["workflows", "get", &wf, "--json"]);
        for job in w.steps.iter().filter_map(|s| s.job_id.as_deref()) {
            let j = cli::<Job>(&api, &["jobs", "get", job, "--json"]);
            assert_eq!(ran(&api, &j).len(), 1, "job {job} of {wf} ran again: {j:?}");
        }
    }
}

/// The executions of `job` a runner started: those with a line of their own in the job's log.
/// A grant the killed scheduler had written but not yet announced (its doorbell goes out after
/// the write) is heard by no runner: that execution is lost when its lease ends, and the job is
/// offered again, as documented; its only line is the scheduler's saying it was lost.
fn ran<'a>(api: &str, job: &'a Job) -> Vec<&'a str> {
    let lines = ferry_tests::job_log(api, &job.id);
    job.executions
        .iter()
        .filter(|e| {
            let own = lines.iter().filter(|l| l.execution == e.id);
            let never_started = name_of(&e.status) == "lost"
                && own.clone().count() == 1
                && own.clone().all(|l| l.text.contains(" lost: runner "));
            !never_started
        })
        .map(|e| e.id.as_str())
        .collect()
}

/// A new config version for `app`: greeter's environment changes, so its plan has changes.
fn change_greeter(api: &str, app: &Path, value: &str) {
    let greeter = app.join("components/greeter.toml");
    let text = std::fs::read_to_string(&greeter).unwrap();
    let text = match text.find("EXTRA = ") {
        Some(at) => format!("{}EXTRA = \"{value}\"\n", &text[..at]),
        None => format!("{text}EXTRA = \"{value}\"\n"),
    };
    std::fs::write(&greeter, text).unwrap();
    ferry_tests::sync_hello(api, app);
}

#[test]
fn a_release_waits_for_a_prompting_installs_approval_unless_made_with_approve_all() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner(
        &nats.url,
        "solo",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    ferry_tests::sync_hello(&api, &app);
    let created = cli::<CreatedInstall>(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "solo",
            "--approve-all",
            "--json",
        ],
    );
    let wf = created.workflow_id.as_str().to_string();
    wait_until(&api, &wf, 120, "provisioning", |w| {
        name_of(&w.status) == "succeeded"
    });
    let (code, out, err) = ferry(&api, &["installs", "approve-all", "solo", "off"]);
    assert_eq!(code, 0, "{out}{err}");

    change_greeter(&api, &app, "1");
    let r = cli::<Release>(
        &api,
        &[
            "releases", "create", "--app", "hello", "--waves", "100%", "--json",
        ],
    );
    let id = r.id.as_str().to_string();
    let waiting = release_until(
        &api,
        &id,
        120,
        "the deploy to wait for its approval",
        |_| {
            let a =
                cli::<Vec<Approval>>(&api, &["approvals", "list", "--install", "solo", "--json"]);
            !a.is_empty()
        },
    );
    assert_eq!(name_of(&waiting.status), "running", "{waiting:?}");
    // Driven on the API's request, not left for the scheduler's next sweep.
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("release requested") && l.contains(&id)),
        "the scheduler was not asked to drive release {id}:\n{log}"
    );
    let deploy = targets(&waiting, 0)[0].deploy.clone().unwrap();
    let (code, out, err) = ferry(&api, &["workflows", "approve", &deploy, "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    let done = release_until(&api, &id, 120, "the release to finish", |r| {
        name_of(&r.status) == "succeeded"
    });
    assert_eq!(name_of(&targets(&done, 0)[0].status), "succeeded");

    // With --approve-all the release's plans are approved without anyone.
    change_greeter(&api, &app, "2");
    // `--wait` follows it to its end, wave by wave.
    let (code, out, err) = ferry(
        &api,
        &[
            "releases",
            "create",
            "--app",
            "hello",
            "--waves",
            "100%",
            "--approve-all",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("release ")?.strip_suffix(" started"))
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    assert!(out.contains("wave 1/1 passed"), "{out}");
    assert!(out.contains(&format!("release {id} succeeded")), "{out}");
    let (code, _, _) = ferry(&api, &["releases", "wait", &id]);
    assert_eq!(code, 0, "an ended release: wait returns at once");
    let done = cli::<Release>(&api, &["releases", "get", &id, "--json"]);
    let deploy = targets(&done, 0)[0].deploy.clone().unwrap();
    let w = cli::<Workflow>(&api, &["workflows", "get", &deploy, "--json"]);
    let approve = the_step(&w, "greeter", "approve");
    assert_eq!(approve.actor.as_deref(), Some("approve-all"), "{w:?}");
}
