//! Plans that wait for a person: listed, approved, denied; wrong-state responses refused.

use ferry_tests::{NatsServer, Proc, ferry, ferry_json, repo_root, step, wait_for};

fn create_prompt(api: &str, install: &str) -> String {
    let created = ferry_json(
        api,
        &[
            "installs", "create", "--app", "hello", "--name", install, "--json",
        ],
    );
    created["workflow_id"].as_str().unwrap().to_string()
}

fn waiting(w: &serde_json::Value) -> bool {
    w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["kind"] == "approve" && s["status"] == "waiting")
}

#[test]
fn prompted_plans_wait_and_are_approved_or_denied() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let app = repo_root().join("examples/hello");
    ferry_tests::sync_hello(&api, &app);
    let _runners: Vec<Proc> = ["prod", "stage", "auto"]
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

    // prod: the sandbox's plan waits, is listed, and is approved; then every later one.
    let wf = create_prompt(&api, "prod");
    wait_for(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let list = ferry_json(&api, &["approvals", "list", "--install", "prod", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["component"], "sandbox");
    assert!(!list[0]["plan_summary"].as_str().unwrap().is_empty());
    let (_, text, _) = ferry(&api, &["approvals", "list", "--install", "prod"]);
    assert!(
        text.contains(&format!("ferry workflows get {wf} --diff")),
        "{text}"
    );
    assert!(
        text.contains(&format!("ferry workflows approve {wf} --step")),
        "{text}"
    );
    // A step that does not wait is refused, and nothing changes.
    let (code, _, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "0"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("does not wait for a decision: it is succeeded"),
        "{err}"
    );
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("approved"), "{out}");
    loop {
        let w = wait_for(&api, &wf, 60, "an approval or the end", |w| {
            waiting(w) || w["status"] == "succeeded" || w["status"] == "failed"
        });
        if w["status"] == "succeeded" {
            for s in w["steps"].as_array().unwrap() {
                if s["kind"] == "approve" && s["status"] == "succeeded" {
                    assert_eq!(s["actor"], "token:admin", "{s}");
                }
            }
            break;
        }
        assert_ne!(w["status"], "failed", "{w}");
        let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--all"]);
        assert!(code == 0 || err.contains("already decided"), "{out}{err}");
    }

    // stage: the sandbox's plan is denied; its apply never runs and the workflow fails.
    let wf = create_prompt(&api, "stage");
    wait_for(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let (code, out, err) = ferry(&api, &["workflows", "deny", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    let done = wait_for(&api, &wf, 60, "the workflow to end", |w| {
        w["status"] == "failed" || w["status"] == "succeeded"
    });
    assert_eq!(done["status"], "failed");
    assert_eq!(step(&done, "sandbox", "approve")["message"], "plan denied");
    assert_eq!(step(&done, "sandbox", "apply")["status"], "not_attempted");
    // Deciding again is refused.
    let (code, _, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 1);
    assert!(err.contains("does not wait for a decision"), "{err}");
    assert!(
        ferry_json(&api, &["approvals", "list", "--json"])
            .as_array()
            .unwrap()
            .is_empty()
    );

    // auto: approve-all switched on while a plan waits releases it, and every later one.
    let wf = create_prompt(&api, "auto");
    wait_for(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let (code, out, err) = ferry(&api, &["installs", "approve-all", "auto", "on"]);
    assert_eq!(code, 0, "{out}{err}");
    let done = wait_for(&api, &wf, 60, "the workflow to end", |w| {
        w["status"] == "failed" || w["status"] == "succeeded"
    });
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(step(&done, "sandbox", "approve")["actor"], "approve-all");
    assert_eq!(step(&done, "reporter", "approve")["actor"], "approve-all");
}

#[test]
fn wait_follows_a_workflow_and_its_exit_code_says_how_it_ended() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("greeter    apply    ✓ succeeded"), "{out}");
    assert!(out.contains("succeeded"), "{out}");

    // A failing apply: --wait exits 1 and says why; `workflows get` exits 1 too.
    std::fs::write(
        app.join("components/src/greeter/apply.sh"),
        "#!/bin/sh\necho 'quota exceeded' >&2\nexit 3\n",
    )
    .unwrap();
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry(&api, &["installs", "deploy", "prod", "--wait", "--json"]);
    assert_eq!(code, 1, "{out}{err}");
    let wf: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(wf["status"], "failed");
    assert!(err.contains("quota exceeded"), "{err}");
    let id = wf["id"].as_str().unwrap();
    let (code, _, _) = ferry(&api, &["workflows", "get", id]);
    assert_eq!(code, 0, "get read the workflow");
    let (code, _, _) = ferry(&api, &["workflows", "wait", id]);
    assert_eq!(code, 1, "wait says how it ended");
}

#[test]
fn a_failed_apply_is_retried_from_its_plan_after_the_cause_is_fixed() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    let marker = dir.path().join("quota-raised");
    let apply = app.join("components/src/greeter/apply.sh");
    let text = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(
        &apply,
        text.replace(
            "set -eu\n",
            &format!(
                "set -eu\ntest -f {} || {{ echo 'quota exceeded' >&2; exit 3; }}\n",
                marker.display()
            ),
        ),
    )
    .unwrap();
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait", "--json"]);
    assert_eq!(code, 1, "{out}{err}");
    let wf: serde_json::Value = serde_json::from_str(&out).unwrap();
    let id = wf["id"].as_str().unwrap();
    // Not a failed step: refused.
    let (code, _, err) = ferry(&api, &["workflows", "retry", id, "--step", "0"]);
    assert_eq!(code, 1);
    assert!(err.contains("no failed or cancelled step `0`"), "{err}");

    std::fs::write(&marker, "").unwrap();
    let (code, out, err) = ferry(
        &api,
        &["workflows", "retry", id, "--step", "greeter", "--wait"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let done = ferry_json(&api, &["workflows", "get", id, "--json"]);
    assert_eq!(done["status"], "succeeded");
    let plan = step(&done, "greeter", "plan");
    assert_eq!(plan["attempt"], 2, "planned again: {plan}");
    assert_eq!(step(&done, "greeter", "apply")["attempt"], 2);
    assert_eq!(
        ferry_json(&api, &["installs", "get", "prod", "--json"])["status"],
        "active"
    );
    let (code, _, err) = ferry(&api, &["workflows", "retry", id, "--step", "greeter"]);
    assert_eq!(code, 1);
    assert!(err.contains("no failed or cancelled step"), "{err}");
}

#[test]
fn a_denial_can_skip_the_plan_and_what_depends_on_it() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = repo_root().join("examples/hello");
    ferry_tests::sync_hello(&api, &app);
    // greeter → counter → reporter: approve until counter's plan waits, then deny it.
    let wf = create_prompt(&api, "prod");
    loop {
        let w = wait_for(&api, &wf, 60, "an approval", waiting);
        if step(&w, "counter", "approve")["status"] == "waiting" {
            break;
        }
        let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--all"]);
        assert!(code == 0 || err.contains("already decided"), "{out}{err}");
    }
    let (code, out, err) = ferry(
        &api,
        &[
            "workflows",
            "deny",
            &wf,
            "--step",
            "counter",
            "--skip-dependents",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let done = wait_for(&api, &wf, 60, "the workflow to end", |w| {
        w["status"] == "failed" || w["status"] == "succeeded"
    });
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(step(&done, "greeter", "apply")["status"], "succeeded");
    assert_eq!(step(&done, "counter", "apply")["status"], "skipped");
    for kind in ["plan", "approve", "apply"] {
        let s = step(&done, "reporter", kind);
        assert_eq!(s["status"], "skipped", "{s}");
    }
    assert_eq!(
        step(&done, "reporter", "plan")["message"],
        "skipped: it depends on counter, whose plan was denied"
    );
}

#[test]
fn skipping_a_waiting_plan_and_a_failed_step_records_who_and_runs_on() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = repo_root().join("examples/hello");
    ferry_tests::sync_hello(&api, &app);
    let wf = create_prompt(&api, "prod");
    let is_waiting =
        |c: &'static str| move |w: &serde_json::Value| step(w, c, "approve")["status"] == "waiting";
    wait_for(
        &api,
        &wf,
        60,
        "the sandbox plan to wait",
        is_waiting("sandbox"),
    );
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    wait_for(
        &api,
        &wf,
        60,
        "greeter's plan to wait",
        is_waiting("greeter"),
    );
    let w = ferry_json(&api, &["workflows", "get", &wf, "--json"]);
    let approved = &step(&w, "sandbox", "approve")["responses"][0];
    assert_eq!(approved["action"], "approve", "{w}");
    assert_eq!(approved["actor"], "token:admin");

    // A running or finished step cannot be skipped; nothing changes.
    let (code, _, err) = ferry(&api, &["workflows", "skip", &wf, "--step", "0"]);
    assert_eq!(code, 1);
    assert!(err.contains("step 0 cannot be skipped"), "{err}");

    let (code, out, err) = ferry(&api, &["workflows", "skip", &wf, "--step", "greeter"]);
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_for(&api, &wf, 60, "greeter's apply to be skipped", |w| {
        step(w, "greeter", "apply")["status"] == "skipped"
    });
    let approve = step(&w, "greeter", "approve");
    assert_eq!(approve["status"], "skipped");
    assert_eq!(approve["message"], "skipped by token:admin");
    assert_eq!(approve["responses"][0]["action"], "skip");
    assert_eq!(approve["responses"][0]["actor"], "token:admin");
    // Its approval is no longer listed as waiting.
    let list = ferry_json(&api, &["approvals", "list", "--install", "prod", "--json"]);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|a| a["component"] != "greeter"),
        "{list}"
    );
    // What depends on greeter plans and waits with what greeter had (nothing: never applied).
    let w = wait_for(&api, &wf, 60, "counter's plan to wait or fail", |w| {
        step(w, "counter", "approve")["status"] == "waiting" || w["status"] == "failed"
    });
    // counter's Terraform reads greeter's outputs, which were never applied: its plan fails.
    assert_eq!(w["status"], "failed", "{w}");
    assert_eq!(step(&w, "counter", "plan")["status"], "failed");

    // Skipping the failed plan runs the ended workflow on: reporter, not attempted before, plans
    // now (with nothing from counter, so it fails or waits; either way it ran).
    let (code, out, err) = ferry(&api, &["workflows", "skip", &wf, "--step", "counter"]);
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_for(&api, &wf, 60, "reporter's plan to end", |w| {
        !matches!(
            step(w, "reporter", "plan")["status"].as_str(),
            Some("pending" | "running")
        )
    });
    for k in ["plan", "approve", "apply"] {
        assert_eq!(step(&w, "counter", k)["status"], "skipped", "{k}: {w}");
    }
    assert!(
        step(&w, "reporter", "plan")["job_id"].is_string(),
        "reporter's plan ran: {w}"
    );
    drop(runner);
}

#[test]
fn terraform_plans_are_summarised_and_shown_from_their_json_and_a_failure_names_its_error() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);
    let created = ferry_json(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "prod",
            "--approve-all",
            "--json",
        ],
    );
    let wf = created["workflow_id"].as_str().unwrap().to_string();
    let done = wait_for(&api, &wf, 120, "the deploy to end", |w| {
        w["status"] == "succeeded" || w["status"] == "failed"
    });
    assert_eq!(done["status"], "succeeded", "{done}");
    // The summary is counted from `terraform show -json`.
    let plan = step(&done, "counter", "plan");
    assert_eq!(
        plan["message"], "Plan: 1 to add, 0 to change, 0 to destroy. 2 output(s) change.",
        "{plan}"
    );
    let (_, out, _) = ferry(&api, &["workflows", "get", &wf, "--diff"]);
    assert!(out.contains("plan of counter (step"), "{out}");
    assert!(out.contains("  + terraform_data.message\n"), "{out}");
    assert!(out.contains("      input = \"hello, prod!\"\n"), "{out}");
    assert!(
        out.contains("  output upper: (known after apply)\n"),
        "{out}"
    );
    assert!(out.contains("  output length: 12\n"), "{out}");
    assert!(
        out.contains("no structured plan: see `ferry logs --job"),
        "{out}"
    );
    let both = ferry_json(&api, &["workflows", "get", &wf, "--diff", "--json"]);
    let index = plan["index"].to_string();
    assert_eq!(
        both["plans"][&index]["resource_changes"][0]["address"], "terraform_data.message",
        "{both}"
    );
    // A change shows its values, as `terraform plan` does.
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "update-inputs",
            "prod",
            "--input",
            "greeting=bonjour",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let install = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    let again = install["last_workflow"].as_str().unwrap();
    let (_, out, _) = ferry(&api, &["workflows", "get", again, "--diff"]);
    assert!(out.contains("  ~ terraform_data.message\n"), "{out}");
    assert!(
        out.contains("      input: \"hello, prod!\" -> \"bonjour, prod!\"\n"),
        "{out}"
    );
    assert!(out.contains("  output length: 12 -> 14\n"), "{out}");

    // A broken module: the step says Terraform's first error and where it is.
    std::fs::write(
        app.join("components/src/counter/main.tf"),
        "variable \"message\" {\n  type = string\n}\n\noutput \"upper\" {\n  value = var.nope\n}\n",
    )
    .unwrap();
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "deploy",
            "prod",
            "--component",
            "counter",
            "--wait",
            "--json",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    let failed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        step(&failed, "counter", "plan")["message"],
        "terraform plan failed: Reference to undeclared input variable (main.tf:6)",
        "{failed}"
    );
}

#[test]
fn a_plan_older_than_its_age_is_planned_and_approved_again_before_it_applies() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--max-plan-age-secs", "2"],
    );
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let wf = create_prompt(&api, "prod");
    let sandbox_waits =
        |w: &serde_json::Value| step(w, "sandbox", "approve")["status"] == "waiting";
    wait_for(&api, &wf, 60, "the sandbox plan to wait", sandbox_waits);
    std::thread::sleep(std::time::Duration::from_secs(3));
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    // Too old: planned again, and asked again.
    let w = wait_for(&api, &wf, 60, "the sandbox to be planned again", |w| {
        step(w, "sandbox", "plan")["attempt"] == 2 && sandbox_waits(w)
    });
    let message = step(&w, "sandbox", "approve")["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        message.starts_with("planned again: the approved plan was 3s")
            && message.ends_with("old (more than 2s)"),
        "{message}"
    );
    assert_eq!(step(&w, "sandbox", "apply")["status"], "pending");
    // A fresh plan approved at once is applied (asked again only if this machine is slower than 2 s).
    for _ in 0..5 {
        ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
        let w = wait_for(&api, &wf, 60, "the apply or another approval", |w| {
            step(w, "sandbox", "apply")["status"] == "succeeded" || sandbox_waits(w)
        });
        if step(&w, "sandbox", "apply")["status"] == "succeeded" {
            return;
        }
    }
    panic!("the sandbox was never applied");
}

/// A `--wait`ing command that reaches a plan waiting for review says so, with the commands that
/// show the plan and decide it, and goes on once it is decided.
#[test]
fn a_waiting_command_says_which_command_decides_a_waiting_plan() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let token = ferry_tests::token_for(&api).unwrap();
    let waiting_cli = std::process::Command::new(ferry_tests::bin("ferry"))
        .env("FERRY_TOKEN", &token)
        .args([
            "--api", &api, "installs", "create", "--app", "hello", "--name", "prod",
        ])
        .arg("--wait")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Decide every plan as it comes, until the workflow ends.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let wf = loop {
        let (code, out, _) = ferry(&api, &["installs", "get", "prod", "--json"]);
        if code == 0 {
            let i: serde_json::Value = serde_json::from_str(&out).unwrap();
            if let Some(wf) = i["last_workflow"].as_str() {
                break wf.to_string();
            }
        }
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    approve_to_the_end(&api, &wf);
    let out = waiting_cli.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("'s plan waits for a decision"), "{text}");
    assert!(
        text.contains(&format!("ferry workflows approve {wf} --step")),
        "{text}"
    );
    assert!(
        text.contains(&format!("ferry workflows get {wf} --diff")),
        "{text}"
    );
}

/// Approves every waiting plan of workflow `wf` until it ends; returns it.
fn approve_to_the_end(api: &str, wf: &str) -> serde_json::Value {
    loop {
        let w = wait_for(api, wf, 60, "a decision to make, or the end", |w| {
            waiting(w) || w["status"] == "succeeded" || w["status"] == "failed"
        });
        if !waiting(&w) {
            return w;
        }
        // Decided as a person would, not within a `--wait` printer's poll.
        std::thread::sleep(std::time::Duration::from_millis(800));
        let (code, out, err) = ferry(api, &["workflows", "approve", wf, "--all"]);
        assert_eq!(code, 0, "{out}{err}");
    }
}

/// Tearing down an install without approve-all destroys nothing before a person approves each
/// component's destruction, as any other change.
#[test]
fn a_teardown_without_approve_all_waits_for_each_destroy_to_be_approved() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let wf = create_prompt(&api, "prod");
    assert_eq!(approve_to_the_end(&api, &wf)["status"], "succeeded");

    let (code, out, err) = ferry(&api, &["installs", "teardown", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    let install = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    let td = install["last_workflow"].as_str().unwrap().to_string();
    let w = wait_for(&api, &td, 60, "the first destroy to wait", waiting);
    let first = step(&w, "reporter", "teardown");
    assert_eq!(
        first["status"], "pending",
        "nothing destroyed before the decision: {w}"
    );
    let list = ferry_json(&api, &["approvals", "list", "--install", "prod", "--json"]);
    assert!(
        list[0]["plan_summary"]
            .as_str()
            .unwrap()
            .starts_with("Teardown of the install: `reporter` will be torn down"),
        "{list}"
    );
    let done = approve_to_the_end(&api, &td);
    assert_eq!(done["status"], "succeeded", "{done}");
    let after = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    assert!(
        after["components"].as_object().is_none_or(|c| c.is_empty()),
        "{after}"
    );
}
