//! Drift checks: plans that apply nothing, with the config the install runs. A Terraform
//! component whose state was changed behind Ferry's back is marked drifted (and audited), one
//! with no change is not; a deploy of it reconciles it; `drift_schedule` runs the check on its
//! own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, ferry, repo_root};

fn hello(dir: &Path) -> PathBuf {
    let app = dir.join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    // counter's drift is checked every minute.
    let counter = app.join("components/counter.toml");
    let text = std::fs::read_to_string(&counter).unwrap();
    let text = text.replacen(
        "directory = ",
        "drift_schedule = \"* * * * *\"\ndirectory = ",
        1,
    );
    std::fs::write(&counter, text).unwrap();
    app
}

/// Changes counter's Terraform state behind Ferry's back: its resource's recorded input.
fn tamper(runner: &Path) {
    let path = runner.join("state/counter/terraform.tfstate");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let attrs = &mut state["resources"][0]["instances"][0]["attributes"];
    attrs["input"]["value"] = "changed by hand".into();
    attrs["output"]["value"] = "changed by hand".into();
    state["serial"] = (state["serial"].as_u64().unwrap() + 1).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
}

/// The drift found on component `c`, if a check has looked.
fn drift(install: &Install, c: &str) -> Option<ferry_model::Drift> {
    install.components.get(c).and_then(|s| s.drift.clone())
}

fn drifted(install: &Install, c: &str) -> bool {
    drift(install, c).is_some_and(|d| d.drifted)
}

#[test]
fn a_component_changed_behind_ferrys_back_is_drifted_until_a_deploy_and_the_schedule_checks_too() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let runner_dir = dir.path().join("runner");
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &runner_dir,
        dir.path().join("runner.log"),
    );
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let w = wait_until(&api, &wf, 120, "provisioning", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");

    // Nothing changed: nothing drifted.
    let (code, out, err) = ferry(&api, &["installs", "drift-check", "prod", "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    let i = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert!(!drifted(&i, "counter"), "{i:?}");
    assert!(!drifted(&i, "greeter"), "{i:?}");
    assert_eq!(
        name_of(&i.status),
        "active",
        "a check changes no status: {i:?}"
    );

    tamper(&runner_dir);
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "drift-check",
            "prod",
            "--component",
            "counter",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let i = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    let d = drift(&i, "counter").unwrap();
    assert!(d.drifted, "{i:?}");
    assert!(d.summary.contains("1 to change"), "{d:?}");
    assert_eq!(name_of(&i.components["counter"].status), "active");
    let drifted = cli::<Vec<Install>>(&api, &["installs", "list", "--drifted", "--json"]);
    assert_eq!(drifted[0].name, "prod", "{drifted:?}");
    let (_, shown, _) = ferry(&api, &["installs", "get", "prod"]);
    assert!(shown.contains("drift of counter: DRIFTED"), "{shown}");
    // The app's fleet shows it too.
    let fleet = cli::<Fleet>(&api, &["apps", "get", "hello", "--json"]);
    assert_eq!(fleet.drifted, ["prod"], "{fleet:?}");
    assert_eq!(fleet.by_status.get("active"), Some(&1), "{fleet:?}");
    let latest = fleet.latest_config.clone().unwrap();
    assert_eq!(fleet.by_config.get(&latest), Some(&1), "{fleet:?}");
    // The install's page names it, linked to the check whose plan is the drift.
    let page = dashboard_page(&api, "/ui/installs/prod");
    let marked = page
        .split("id=\"drift\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no drift on the page: {page}"));
    assert!(
        marked.contains(&format!("href=\"/ui/workflows/{}\"", d.workflow))
            && marked.contains(">counter</a>"),
        "{marked}"
    );

    // A deploy of it puts it back as the config says.
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "deploy",
            "prod",
            "--component",
            "counter",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let drifted = cli::<Vec<Install>>(&api, &["installs", "list", "--drifted", "--json"]);
    assert!(drifted.is_empty(), "{drifted:?}");

    // The schedule finds it again, within a minute and a bit.
    tamper(&runner_dir);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let i = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
        if let Some(d) = drift(&i, "counter").filter(|d| d.drifted) {
            let w = cli::<Workflow>(&api, &["workflows", "get", &d.workflow, "--json"]);
            assert_eq!(name_of(&w.kind), "drift-check");
            assert_eq!(w.cause.as_deref(), Some("schedule"));
            // A check applies nothing.
            assert!(w.steps.iter().all(|s| name_of(&s.kind) != "apply"), "{w:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the scheduled check did not find the drift: {i:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let audit = nats.audit_events();
    let drifted: Vec<_> = audit
        .iter()
        .filter(|e| e.action == "component.drifted")
        .collect();
    assert_eq!(drifted.len(), 2, "{drifted:?}");
}

#[test]
fn a_deploy_started_during_a_drift_check_cancels_it_and_a_check_never_waits_on_a_deploy() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    // greeter's plan takes a while: the deploy surely comes while the check plans.
    let plan = app.join("components/src/greeter/plan.sh");
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, text.replacen("\n", "\nsleep 3\n", 1)).unwrap();
    let nats = NatsServer::start();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    // A check while the install is provisioning is refused, saying why.
    let (code, _, err) = ferry(&api, &["installs", "drift-check", "prod"]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("is busy with workflow {wf}")),
        "{err}"
    );
    wait_until(&api, &wf, 120, "provisioning", |w| {
        name_of(&w.status) == "succeeded"
    });

    let check = cli::<Deployed>(&api, &["installs", "drift-check", "prod", "--json"]);
    let check = check.workflow_id.as_str().to_string();
    let deploy = cli::<Deployed>(&api, &["installs", "deploy", "prod", "--json"]);
    let deploy = deploy.workflow_id.as_str().to_string();
    let c = wait_until(&api, &check, 60, "the check to end", |w| {
        name_of(&w.status) == "cancelled"
            || name_of(&w.status) == "succeeded"
            || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&c.status), "cancelled", "{c:?}");
    let d = wait_until(&api, &deploy, 120, "the deploy to end", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&d.status), "succeeded", "{d:?}");
}

#[test]
fn a_scheduled_check_that_meets_a_deploy_is_skipped_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    let nats = NatsServer::start();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    wait_until(&api, &wf, 120, "provisioning", |w| {
        name_of(&w.status) == "succeeded"
    });
    // A deploy whose greeter apply outlasts the next tick of counter's schedule.
    let apply = app.join("components/src/greeter/apply.sh");
    let text = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(&apply, text.replacen("set -eu\n", "set -eu\nsleep 75\n", 1)).unwrap();
    ferry_tests::sync_hello(&api, &app);
    let deploy = cli::<Deployed>(&api, &["installs", "deploy", "prod", "--json"]);
    let deploy = deploy.workflow_id.as_str().to_string();
    let deadline = Instant::now() + Duration::from_secs(90);
    let skipped = loop {
        let i = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
        if let Some(d) = drift(&i, "counter").filter(|d| d.summary.contains("skipped")) {
            break d;
        }
        assert!(Instant::now() < deadline, "no check was skipped: {i:?}");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        skipped.summary,
        format!("check skipped: workflow {deploy} is in progress"),
        "{skipped:?}"
    );
    assert_eq!(skipped.workflow, deploy);
    // The deploy goes on untouched.
    let w = wait_until(&api, &deploy, 120, "the deploy to end", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");
}

/// A dashboard page as an admin's session sees it.
fn dashboard_page(api: &str, page: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-sf", "-H", &ferry_tests::dashboard_cookie(api)])
        .arg(format!("{api}{page}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{page}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
