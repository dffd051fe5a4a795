//! End-to-end: `ferry dev` deploys the example app through real processes — nats-server, ferry-server
//! (all services), ferry-runner, and a plugin process per job (sh scripts and terraform).

use std::collections::BTreeMap;

use ferry_tests::typed::*;
use ferry_tests::{FerryDev, copy_dir, ferry, repo_root};

fn example() -> std::path::PathBuf {
    repo_root().join("examples/hello")
}

#[test]
fn ferry_dev_deploys_the_example_app_in_dependency_order() {
    let dev = FerryDev::start(&example(), &[]);
    let out = std::fs::read_to_string(&dev.output).unwrap();
    assert!(out.contains("install dev deployed"), "{out}");

    // Final component outputs, through the CLI.
    let install = cli::<Install>(&dev.api, &["installs", "get", "dev", "--json"]);
    assert_eq!(name_of(&install.status), "active");
    let out = |c: &str, k: &str| install.components[c].outputs[k].clone();
    assert_eq!(out("greeter", "message"), "hello, dev!");
    assert_eq!(out("counter", "upper"), "HELLO, DEV!");
    assert_eq!(out("counter", "length"), 11);
    assert_eq!(out("reporter", "summary"), "HELLO, DEV! has 11 characters");
    let root = install.sandbox.outputs["root"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(format!("{root}/report.txt")).unwrap(),
        "HELLO, DEV! has 11 characters\n"
    );

    // The order of applies: each starts only after everything it depends on has been applied.
    let wf_id = install.last_workflow.as_deref().unwrap();
    let wf = cli::<Workflow>(&dev.api, &["workflows", "get", wf_id, "--json"]);
    assert_eq!(name_of(&wf.status), "succeeded");
    let mut applies: BTreeMap<&str, (String, String)> = BTreeMap::new();
    for name in ["sandbox", "greeter", "counter", "reporter"] {
        let s = the_step(&wf, name, "apply");
        assert_eq!(name_of(&s.status), "succeeded", "{name} apply");
        assert_eq!(
            the_step(&wf, name, "approve").actor.as_deref(),
            Some("approve-all")
        );
        let job_id = s.job_id.as_deref().unwrap();
        let j = cli::<Job>(&dev.api, &["jobs", "get", job_id, "--json"]);
        assert_eq!(name_of(&j.status), "finished");
        let e = &j.executions[0];
        applies.insert(name, (e.started_at.clone(), e.finished_at.clone().unwrap()));
    }
    for (before, after) in [
        ("sandbox", "greeter"),
        ("greeter", "counter"),
        ("counter", "reporter"),
    ] {
        assert!(
            applies[before].1 <= applies[after].0,
            "{after} applied before {before} finished: {applies:?}"
        );
    }

    // Where a job's time went: every point from the offer to the plugin's exit, in order (one
    // host, so one clock), and `jobs get --timing` shows the spans. `ferry dev` has one runner:
    // once the scheduler has heard its heartbeat, a job is granted at its offer (the grant
    // decided, announced to the runner while its record is written, then made); before, it is
    // claimed (a deploy can be over before the first heartbeat is heard).
    let greeter = the_step(&wf, "greeter", "apply").job_id.clone().unwrap();
    let j = cli::<Job>(&dev.api, &["jobs", "get", &greeter, "--json"]);
    let t = j.executions[0].timing;
    let r = t.runner;
    let (points, spans): (Vec<u64>, Vec<&str>) = if t.granted_at_offer() {
        // Announced as the record is written, so seen before or after the write's point, and
        // made once it is written.
        assert!(
            t.offered_us <= r.offer_seen_us && r.offer_seen_us <= r.granted_us,
            "{t:?}"
        );
        (
            vec![t.offered_us, t.decided_us, t.written_us],
            vec![
                "record_write",
                "grant_wait",
                "prepare",
                "identity",
                "spawn",
                "plugin",
            ],
        )
    } else {
        assert!(
            t.written_us >= t.offered_us && t.written_us <= t.decided_us,
            "{t:?}"
        );
        let points = vec![
            t.offered_us,
            r.offer_seen_us,
            r.claim_sent_us,
            t.claimed_us,
            t.decided_us,
        ];
        let claimed = ferry_model::Timing::span_names().filter(|s| *s != "grant_wait");
        (points, claimed.collect())
    };
    let after = [
        r.granted_us,
        r.prepared_us,
        r.identity_us,
        r.spawned_us,
        r.exited_us,
    ];
    let points: Vec<u64> = points.into_iter().chain(after).collect();
    assert!(
        points.iter().all(|p| *p > 0) && points.windows(2).all(|w| w[0] <= w[1]),
        "{t:?}"
    );
    let (code, text, err) = ferry(&dev.api, &["jobs", "get", &greeter, "--timing"]);
    assert_eq!(code, 0, "{err}");
    for span in spans {
        assert!(text.contains(span), "{span} missing:\n{text}");
    }
    assert_eq!(
        text.contains("granted at its offer: no claim"),
        t.granted_at_offer(),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("offer to plugin start: ")),
        "{text}"
    );

    // `ferry logs` returns the lines the scripts printed.
    let greeter_apply = the_step(&wf, "greeter", "apply").job_id.as_deref().unwrap();
    let (code, log, err) = ferry(&dev.api, &["logs", "--job", greeter_apply]);
    assert_eq!(code, 0, "{err}");
    assert!(log.contains("greeter wrote: hello, dev!"), "{log}");
    let reporter_apply = the_step(&wf, "reporter", "apply")
        .job_id
        .as_deref()
        .unwrap();
    let (_, log, _) = ferry(&dev.api, &["logs", "--job", reporter_apply, "-f"]);
    assert!(
        log.contains("reporter: HELLO, DEV! has 11 characters"),
        "{log}"
    );
    let counter_plan = the_step(&wf, "counter", "plan").job_id.as_deref().unwrap();
    let lines = ferry_tests::job_log(&dev.api, counter_plan);
    assert!(
        lines.iter().any(|l| l.text.contains("Plan: 1 to add")),
        "{log}"
    );
    assert_eq!(
        the_step(&wf, "counter", "plan").message.as_deref(),
        Some("Plan: 1 to add, 0 to change, 0 to destroy. 2 output(s) change.")
    );

    // A second deploy of the same config changes nothing: every plan says so and no apply runs.
    let deployed = cli::<Deployed>(&dev.api, &["installs", "deploy", "dev", "--json"]);
    let wf2_id = deployed.workflow_id.as_str().to_string();
    let wf2 = wait_workflow(&dev.api, &wf2_id);
    assert_eq!(name_of(&wf2.status), "succeeded");
    for name in ["sandbox", "greeter", "counter", "reporter"] {
        assert_eq!(
            name_of(&the_step(&wf2, name, "apply").status),
            "skipped",
            "{name}"
        );
        assert!(
            the_step(&wf2, name, "build")
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with("reused build")),
            "{name}"
        );
    }
}

#[test]
fn exit_when_deployed_reports_a_failing_step_and_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&example(), &app);
    std::fs::write(
        app.join("components/src/reporter/apply.sh"),
        "#!/bin/sh\necho \"about to fail\"\necho boom >&2\nexit 3\n",
    )
    .unwrap();
    let port = ferry_tests::free_port();
    let data = dir.path().join("data");
    let out = std::process::Command::new(ferry_tests::bin("ferry"))
        .current_dir(repo_root())
        .args([
            "dev",
            "--exit-when-deployed",
            "--http-addr",
            &format!("127.0.0.1:{port}"),
            "--input",
            "greeting=hi",
            "--data-dir",
        ])
        .arg(&data)
        .arg("--app")
        .arg(&app)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("reporter apply) failed: apply.sh failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("about to fail") && stderr.contains("boom"),
        "the failing step's log tail: {stderr}"
    );
    // The input reached the components that did deploy.
    assert!(
        stdout.contains("greeter    apply    ✓ succeeded"),
        "{stdout}"
    );
    let greeting =
        std::fs::read_to_string(data.join("installs/dev/install/root/greeting.txt")).unwrap();
    assert_eq!(greeting, "hi, dev!\n");
    // Nothing left behind: the API port is closed and no process runs from this data directory.
    assert!(!ferry_tests::listening(port));
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout);
    assert!(
        !ps.contains(&data.to_string_lossy().to_string()),
        "processes left behind:\n{ps}"
    );
}

#[test]
fn invalid_input_and_invalid_packages_are_refused_with_clear_errors() {
    let dev = FerryDev::start(&example(), &[]);
    let (code, _, err) = ferry(
        &dev.api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "second",
            "--input",
            "greetin=x",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("unknown input `greetin` (did you mean `greeting`?)"),
        "{err}"
    );
    // Another install created while `ferry dev` runs gets a runner of its own and deploys.
    let (code, out, err) = ferry_tests::create_hello(&dev.api, "second", &["--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    // A value of the wrong type is refused at create, naming the input.
    let typed = ferry_tests::repo_root().join("tests/fixtures/apps/local-scripts");
    let (code, out, err) = ferry(
        &dev.api,
        &["apps", "sync", typed.to_str().unwrap(), "--name", "typed"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = ferry(
        &dev.api,
        &[
            "installs", "create", "--app", "typed", "--name", "t1", "--input", "port=abc",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("input `port` must be a number, got `abc`"),
        "{err}"
    );
    let (code, _, err) = ferry(
        &dev.api,
        &["installs", "create", "--app", "nope", "--name", "third"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("app `nope` not found"), "{err}");
    let (code, _, err) = ferry(
        &dev.api,
        &["installs", "create", "--app", "helo", "--name", "third"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("app `helo` not found (did you mean `hello`?)"),
        "{err}"
    );
    let (code, _, err) = ferry(&dev.api, &["workflows", "get", "doesnotexist"]);
    assert_eq!(code, 1);
    assert!(err.contains("not found"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("broken");
    copy_dir(&example(), &app);
    std::fs::write(app.join("components/counter.toml"), "name = \"counter\"\ntype = \"terraform_module\"\ndirectory = \"components/src/counter\"\n[vars]\nmessage = \"{{.nuon.components.greter.outputs.message}}\"\n").unwrap();
    let (code, _, err) = ferry(&dev.api, &["apps", "sync", app.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("components/counter.toml:5:14: error: unknown component `greter` (did you mean `greeter`?)"), "{err}");
    let (code, out, _) = ferry(&dev.api, &["apps", "validate", example().to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.contains("1. sandbox") && out.contains("2. greeter") && out.contains("4. reporter"),
        "{out}"
    );

    // Syncing the same package again stores nothing new.
    let r = cli::<SyncResponse>(
        &dev.api,
        &["apps", "sync", example().to_str().unwrap(), "--json"],
    );
    assert!(!r.changed);
    assert_eq!(r.version, 1);

    // Editing one component's file stores version 2 and only that component needs a new build.
    let edited = dir.path().join("hello");
    copy_dir(&example(), &edited);
    let apply = edited.join("components/src/reporter/apply.sh");
    let script = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(&apply, script.replace("reporter: ", "report: ")).unwrap();
    let r = cli::<SyncResponse>(
        &dev.api,
        &[
            "apps",
            "sync",
            edited.to_str().unwrap(),
            "--name",
            "hello",
            "--json",
        ],
    );
    assert_eq!((r.changed, r.version), (true, 2));
    let changed: Vec<&str> = r
        .components
        .iter()
        .filter(|c| c.changed)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(changed, vec!["reporter"]);
}

fn wait_workflow(api: &str, id: &str) -> Workflow {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        // Exit code 1 for a failed workflow: read the JSON either way.
        let (_, out, err) = ferry(api, &["workflows", "get", id, "--json"]);
        let wf: Workflow = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        if name_of(&wf.status) == "succeeded" || name_of(&wf.status) == "failed" {
            return wf;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "workflow {id} did not finish: {}",
            steps_of(&wf)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
