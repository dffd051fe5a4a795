//! An install's life after its first deploy: teardown, delete, input updates, deploys of some
//! components, plan-only deploys, reprovision.

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, copy_dir, ferry, repo_root, server_and_runner};

/// Syncs `app` and deploys it to install `prod` (approve-all), waiting until it is deployed.
fn deploy_prod(api: &str, app: &std::path::Path) {
    ferry_tests::sync_hello(api, app);
    let (code, out, err) = ferry_tests::create_hello(api, "prod", &["--wait"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn teardown_destroys_in_reverse_deploy_order_then_the_sandbox() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    // Every component's teardown records its name, in order, in the install's directory on the
    // runner host (which a sandboxed job and the test both see).
    let order = dir.path().join("runner/install/torn-down");
    for c in ["greeter", "reporter"] {
        std::fs::write(
            app.join(format!("components/src/{c}/teardown.sh")),
            format!("#!/bin/sh\necho {c} >> {}\n", order.display()),
        )
        .unwrap();
    }
    deploy_prod(&api, &app);

    let (code, out, err) = ferry(&api, &["installs", "teardown", "prod", "--wait", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let wf: Workflow = serde_json::from_str(&out).unwrap();
    assert_eq!(name_of(&wf.kind), "teardown");
    let steps: Vec<(&str, String)> = wf
        .steps
        .iter()
        // Each destroy follows its approval (automatic here: approve-all).
        .filter(|s| name_of(&s.kind) == "teardown")
        .map(|s| (s.component.as_str(), name_of(&s.status)))
        .collect();
    assert_eq!(
        steps,
        [
            ("reporter", "succeeded".to_string()),
            ("counter", "succeeded".to_string()),
            ("greeter", "succeeded".to_string()),
            ("sandbox", "succeeded".to_string())
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&order).unwrap(),
        "reporter\ngreeter\n"
    );
    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(name_of(&install.status), "torn_down", "{install:?}");
    assert!(install.components.is_empty(), "{install:?}");

    // Nothing left to tear down: the workflow fails and says why.
    let (code, _, err) = ferry(&api, &["installs", "teardown", "prod", "--wait"]);
    assert_eq!(code, 1);
    assert!(err.contains("nothing of this install is deployed"), "{err}");

    // Torn down, it can be deleted.
    let (code, out, err) = ferry(&api, &["installs", "delete", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = ferry(&api, &["installs", "get", "prod"]);
    assert_eq!(code, 1);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn inputs_are_updated_and_an_install_with_deployed_components_is_not_deleted_without_force() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = repo_root().join("examples/hello");
    deploy_prod(&api, &app);
    // New input values are checked, stored and deployed.
    let (code, _, err) = ferry(
        &api,
        &["installs", "update-inputs", "prod", "--input", "greting=hi"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("unknown input `greting`"), "{err}");
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "update-inputs",
            "prod",
            "--input",
            "greeting=hi",
            "--wait",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    // Only what reads `greeting` (greeter) and what depends on it redeploys: not the sandbox.
    let wf: Workflow = serde_json::from_str(&out).unwrap();
    assert_eq!(
        laid_out(&wf).0,
        ["greeter", "counter", "reporter"],
        "{wf:?}"
    );
    assert!(wf.scope.with_dependents);
    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(install.inputs["greeting"], "hi");
    assert_eq!(
        install.components["greeter"].outputs["message"],
        "hi, prod!"
    );

    let (code, _, err) = ferry(&api, &["installs", "delete", "prod"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("still has sandbox, counter, greeter, reporter deployed"),
        "{err}"
    );
    assert_eq!(
        name_of(&cli::<Install>(&api, &["installs", "get", "prod", "--json"]).status),
        "active"
    );
    let (code, out, err) = ferry(&api, &["installs", "delete", "prod", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// The components (in step order, once each) and step kinds of a workflow.
fn laid_out(wf: &Workflow) -> (Vec<String>, std::collections::BTreeSet<String>) {
    let mut components: Vec<String> = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for s in &wf.steps {
        if !components.contains(&s.component) {
            components.push(s.component.clone());
        }
        kinds.insert(s.kind.label().to_string());
    }
    (components, kinds)
}

fn deploy_json(api: &str, args: &[&str]) -> Workflow {
    let (code, out, err) = ferry(api, args);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    let wf: Workflow = serde_json::from_str(&out).unwrap();
    assert_eq!(name_of(&wf.status), "succeeded", "{wf:?}");
    wf
}

#[test]
fn deploys_of_some_components_plan_only_deploys_and_reprovision() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = repo_root().join("examples/hello");
    deploy_prod(&api, &app);

    let (code, _, err) = ferry(&api, &["installs", "deploy", "prod", "--component", "nope"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("the app has no component nope (it has: counter, greeter, reporter, sandbox)"),
        "{err}"
    );

    let base = ["installs", "deploy", "prod", "--wait", "--json"];
    let wf = deploy_json(&api, &[&base[..], &["--component", "counter"]].concat());
    assert_eq!(laid_out(&wf).0, ["counter"]);
    let wf = deploy_json(
        &api,
        &[&base[..], &["--component", "greeter", "--with-dependents"]].concat(),
    );
    // counter reads greeter's outputs, reporter counter's: both depend on it.
    assert_eq!(laid_out(&wf).0, ["greeter", "counter", "reporter"]);
    let (_, shown, _) = ferry(&api, &["workflows", "get", wf.id.as_str()]);
    assert!(shown.contains("scope: greeter + dependents"), "{shown}");

    // Plans only: every component plans, nothing is approved or applied.
    let before = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    let wf = deploy_json(&api, &[&base[..], &["--plan-only"]].concat());
    let (components, kinds) = laid_out(&wf);
    assert_eq!(components, ["sandbox", "greeter", "counter", "reporter"]);
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["build", "plan", "sync"]
    );
    let after = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    for c in ["greeter", "counter", "reporter"] {
        assert_eq!(
            after.components[c].applied_digest, before.components[c].applied_digest,
            "{c}"
        );
    }

    // Reprovision: the sandbox again, nothing else.
    let wf = deploy_json(
        &api,
        &["installs", "reprovision", "prod", "--wait", "--json"],
    );
    assert_eq!(name_of(&wf.kind), "provision");
    let (components, kinds) = laid_out(&wf);
    assert_eq!(components, ["sandbox"]);
    assert!(kinds.contains("apply"), "{kinds:?}");
}

#[test]
fn sensitive_inputs_and_outputs_are_used_but_never_shown() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let inputs = std::fs::read_to_string(app.join("inputs.toml")).unwrap();
    std::fs::write(
        app.join("inputs.toml"),
        inputs.replace(
            "default = \"hello\"",
            "default = \"hello\"\nsensitive = true",
        ),
    )
    .unwrap();
    let tf = app.join("components/src/counter/main.tf");
    let mut module = std::fs::read_to_string(&tf).unwrap();
    module.push_str(
        "\noutput \"secret\" {\n  value     = \"s3cr3t-${var.message}\"\n  sensitive = true\n}\n",
    );
    std::fs::write(&tf, module).unwrap();
    deploy_prod(&api, &app);
    // Its default is as secret as a value given: masked in the log that echoes it, and the
    // output that shows it is sensitive too.
    let first = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    let wf = first.last_workflow.as_deref().unwrap();
    let w = cli::<Workflow>(&api, &["workflows", "get", wf, "--json"]);
    let greeter = the_step(&w, "greeter", "apply").job_id.as_deref().unwrap();
    let (code, log, err) = ferry(&api, &["logs", "--job", greeter]);
    assert_eq!(code, 0, "{err}");
    assert!(log.contains("greeter wrote: ***, prod!"), "{log}");
    assert_eq!(
        first.components["greeter"].outputs["message"], "(sensitive)",
        "{first:?}"
    );
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "update-inputs",
            "prod",
            "--input",
            "greeting=hey",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");

    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(install.inputs["greeting"], "(sensitive)", "{install:?}");
    // Used in clear where it is needed (greeter greets with it), but its output echoes it, so
    // that output is shown as sensitive too.
    assert_eq!(
        install.components["greeter"].outputs["message"],
        "(sensitive)"
    );
    assert!(
        install.components["greeter"]
            .sensitive_outputs
            .iter()
            .any(|n| n == "message"),
        "{install:?}"
    );
    assert_eq!(
        install.components["counter"].outputs["secret"],
        "(sensitive)"
    );
    let wf = install.last_workflow.as_deref().unwrap();
    // What the CLI prints, as text: the value appears nowhere in it.
    let diff = cli::<serde_json::Value>(&api, &["workflows", "get", wf, "--diff", "--json"]);
    let w: Workflow = serde_json::from_value(diff["workflow"].clone()).unwrap();
    let apply = the_step(&w, "counter", "apply").job_id.clone().unwrap();
    let json = |args: &[&str]| ferry(&api, args).1;
    for shown in [
        json(&["installs", "get", "prod", "--json"]),
        json(&["installs", "list", "--json"]),
        json(&["jobs", "get", &apply, "--json"]),
        diff.to_string(),
        ferry(&api, &["installs", "get", "prod"]).1,
    ] {
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }
    // Nor in the job logs: greeter echoes the sensitive greeting, which its log masks.
    let greeter = the_step(&w, "greeter", "apply").job_id.clone().unwrap();
    let (code, log, err) = ferry(&api, &["logs", "--job", &greeter]);
    assert_eq!(code, 0, "{err}");
    assert!(log.contains("greeter wrote: ***, prod!"), "{log}");
    assert!(!log.contains("hey"), "{log}");

    // Nor in the live events (every change since the hub started), nor on the dashboard.
    let events = dir.path().join("events");
    let mut watcher = ferry_tests::sse_curl(&api, "/v1/events", &["last-event-id: 0"], &events);
    std::thread::sleep(std::time::Duration::from_secs(2));
    watcher.kill().ok();
    watcher.wait().ok();
    let seen = std::fs::read_to_string(&events).unwrap();
    let installs = ferry_tests::sse_events(&seen)
        .into_iter()
        .filter(|e| e.event == "install")
        .count();
    assert!(installs > 0, "{seen}");
    assert!(!seen.contains("s3cr3t"), "{seen}");
    assert!(!seen.contains("\"greeting\":\"hey\""), "{seen}");
    let session = ferry_tests::dashboard_cookie(&api);
    for page in [
        "/ui/installs/prod".to_string(),
        format!("/ui/jobs/{apply}"),
        format!("/ui/jobs/{greeter}"),
    ] {
        let out = std::process::Command::new("curl")
            .args(["-sf", "-H", &session])
            .arg(format!("{api}{page}"))
            .output()
            .unwrap();
        let html = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && html.contains("<main>"),
            "{page}: {html}"
        );
        assert!(!html.contains("s3cr3t"), "{page}: {html}");
        if page.starts_with("/ui/jobs/") {
            assert!(!html.contains("hey"), "{page}: {html}");
        } else {
            assert!(html.contains("greeting = (sensitive)"), "{page}: {html}");
            // The components' outputs are shown, the sensitive ones masked.
            assert!(html.contains("secret = (sensitive)"), "{page}: {html}");
            assert!(html.contains("message = (sensitive)"), "{page}: {html}");
        }
    }
}

#[test]
fn a_component_removed_from_the_app_is_torn_down_by_the_next_deploy_after_its_approval() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let marker = dir.path().join("runner/install/reporter-torn-down");
    // Its teardown runs from the config it was deployed with, and its templates still render.
    std::fs::write(
        app.join("components/src/reporter/teardown.sh"),
        format!(
            "#!/bin/sh\necho \"$LOUD\" > {}\nrm -f \"$ROOT/report.txt\"\n",
            marker.display()
        ),
    )
    .unwrap();
    deploy_prod(&api, &app);
    let report = std::fs::read_dir(dir.path().join("runner/install/root"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name() == "report.txt");
    assert!(report, "reporter deployed");

    std::fs::remove_file(app.join("components/reporter.toml")).unwrap();
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry(&api, &["installs", "approve-all", "prod", "off"]);
    assert_eq!(code, 0, "{out}{err}");
    let started = cli::<Deployed>(&api, &["installs", "deploy", "prod", "--json"]);
    let id = started.workflow_id.as_str();
    // Nothing else changed: only the removal waits, and its approval says what it does.
    wait_until(&api, id, 60, "the removal's approval", |w| {
        step_is(w, "reporter", "approve", "waiting")
    });
    let list = cli::<Vec<Approval>>(&api, &["approvals", "list", "--install", "prod", "--json"]);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(
        list[0].plan_summary,
        "Removed from the app: `reporter` will be torn down, destroying everything it deployed."
    );
    assert!(!marker.exists(), "not before its approval");
    let (code, out, err) = ferry(&api, &["workflows", "approve", id, "--step", "reporter"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = ferry(&api, &["workflows", "wait", id, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let wf: Workflow = serde_json::from_str(&out).unwrap();
    let approve = the_step(&wf, "reporter", "approve");
    assert_eq!(name_of(&approve.status), "succeeded", "{wf:?}");
    assert_eq!(
        name_of(&the_step(&wf, "reporter", "teardown").status),
        "succeeded"
    );
    // After every apply of the deploy.
    let last_apply = wf
        .steps
        .iter()
        .filter(|s| name_of(&s.kind) == "apply")
        .map(|s| s.index)
        .max()
        .unwrap();
    assert!(approve.index > last_apply);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "HELLO, PROD!\n");
    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert!(!install.components.contains_key("reporter"), "{install:?}");
    assert_eq!(name_of(&install.status), "active");
}
