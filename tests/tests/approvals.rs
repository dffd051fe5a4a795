//! Plans that wait for a person: listed, approved, denied; wrong-state responses refused.

use ferry_model::api::CreatedInstall;
use ferry_model::{Approval, Install, StepKind, StepStatus, Workflow, WorkflowStatus};
use ferry_tests::typed::{cli, name_of, step_is, steps_of, the_step, wait_until};
use ferry_tests::{NatsServer, Proc, ferry, repo_root};

fn create_prompt(api: &str, install: &str) -> String {
    let created: CreatedInstall = cli(
        api,
        &[
            "installs", "create", "--app", "hello", "--name", install, "--json",
        ],
    );
    created.workflow_id
}

fn waiting(w: &Workflow) -> bool {
    w.steps
        .iter()
        .any(|s| s.kind == StepKind::Approve && s.status == StepStatus::Waiting)
}

/// Approves, one step at a time, the plans of `w` waiting now (`approve --all` would approve
/// the later ones too).
fn approve_waiting_now(api: &str, w: &Workflow) {
    for s in w
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Approve && s.status == StepStatus::Waiting)
    {
        let (code, out, err) = ferry(
            api,
            &["workflows", "approve", &w.id, "--step", &s.component],
        );
        assert!(code == 0 || err.contains("already decided"), "{out}{err}");
    }
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
    wait_until(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let list: Vec<Approval> = cli(&api, &["approvals", "list", "--install", "prod", "--json"]);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].component, "sandbox");
    assert!(!list[0].plan_summary.is_empty());
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
        let w = wait_until(&api, &wf, 60, "an approval or the end", |w| {
            waiting(w) || name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
        });
        if name_of(&w.status) == "succeeded" {
            for s in w.steps {
                if s.kind == StepKind::Approve && s.status == StepStatus::Succeeded {
                    assert_eq!(s.actor.as_deref(), Some("token:admin"), "{s:?}");
                }
            }
            break;
        }
        assert_ne!(name_of(&w.status), "failed", "{w:?}");
        approve_waiting_now(&api, &w);
    }

    // stage: the sandbox's plan is denied; its apply never runs and the workflow fails.
    let wf = create_prompt(&api, "stage");
    wait_until(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let (code, out, err) = ferry(&api, &["workflows", "deny", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    let done = wait_until(&api, &wf, 60, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "failed");
    assert_eq!(
        the_step(&done, "sandbox", "approve").message.as_deref(),
        Some("plan denied")
    );
    assert_eq!(
        name_of(&the_step(&done, "sandbox", "apply").status),
        "not_attempted"
    );
    // Deciding again is refused.
    let (code, _, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 1);
    assert!(err.contains("does not wait for a decision"), "{err}");
    assert!(cli::<Vec<Approval>>(&api, &["approvals", "list", "--json"]).is_empty());

    // auto: approve-all switched on while a plan waits releases it, and every later one.
    let wf = create_prompt(&api, "auto");
    wait_until(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let (code, out, err) = ferry(&api, &["installs", "approve-all", "auto", "on"]);
    assert_eq!(code, 0, "{out}{err}");
    let done = wait_until(&api, &wf, 60, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    assert_eq!(
        the_step(&done, "sandbox", "approve").actor.as_deref(),
        Some("approve-all")
    );
    assert_eq!(
        the_step(&done, "reporter", "approve").actor.as_deref(),
        Some("approve-all")
    );
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
    // Under approve-all nothing waits for a person: no hint, and the decision says who made it.
    assert!(!out.contains("waits for a decision"), "{out}");
    assert!(out.contains("approved (approve-all)"), "{out}");

    // A failing apply: --wait exits 1 and says why; `workflows get` exits 1 too.
    std::fs::write(
        app.join("components/src/greeter/apply.sh"),
        "#!/bin/sh\necho 'quota exceeded' >&2\nexit 3\n",
    )
    .unwrap();
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry(&api, &["installs", "deploy", "prod", "--wait", "--json"]);
    assert_eq!(code, 1, "{out}{err}");
    let wf: Workflow = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(name_of(&wf.status), "failed");
    assert!(err.contains("quota exceeded"), "{err}");
    let id = wf.id.as_str();
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
    // In the install's directory on the runner host, which a sandboxed job sees.
    let marker = dir.path().join("runner/install/quota-raised");
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

    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(&marker, "").unwrap();
    let (code, out, err) = ferry(
        &api,
        &["workflows", "retry", id, "--step", "greeter", "--wait"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let done: Workflow = cli(&api, &["workflows", "get", id, "--json"]);
    assert_eq!(name_of(&done.status), "succeeded");
    let plan = the_step(&done, "greeter", "plan");
    assert_eq!(plan.attempt, 2, "planned again: {plan:?}");
    assert_eq!(the_step(&done, "greeter", "apply").attempt, 2);
    assert_eq!(
        name_of(&cli::<ferry_model::Install>(&api, &["installs", "get", "prod", "--json"]).status),
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
        let w = wait_until(&api, &wf, 60, "an approval", waiting);
        if name_of(&the_step(&w, "counter", "approve").status) == "waiting" {
            break;
        }
        approve_waiting_now(&api, &w);
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
    let done = wait_until(&api, &wf, 60, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    assert_eq!(
        name_of(&the_step(&done, "greeter", "apply").status),
        "succeeded"
    );
    assert_eq!(
        name_of(&the_step(&done, "counter", "apply").status),
        "skipped"
    );
    for kind in ["plan", "approve", "apply"] {
        let s = the_step(&done, "reporter", kind);
        assert_eq!(name_of(&s.status), "skipped", "{s:?}");
    }
    assert_eq!(
        the_step(&done, "reporter", "plan").message.as_deref(),
        Some("skipped: it depends on counter, whose plan was denied")
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
    let is_waiting = |c: &'static str| move |w: &Workflow| ferry_tests::typed::waits_on(w, c);
    wait_until(
        &api,
        &wf,
        60,
        "the sandbox plan to wait",
        is_waiting("sandbox"),
    );
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    wait_until(
        &api,
        &wf,
        60,
        "greeter's plan to wait",
        is_waiting("greeter"),
    );
    let w: Workflow = cli(&api, &["workflows", "get", &wf, "--json"]);
    let approved = &the_step(&w, "sandbox", "approve").responses[0];
    assert_eq!(name_of(&approved.action), "approve", "{}", steps_of(&w));
    assert_eq!(approved.actor, "token:admin");

    // A running or finished step cannot be skipped; nothing changes.
    let (code, _, err) = ferry(&api, &["workflows", "skip", &wf, "--step", "0"]);
    assert_eq!(code, 1);
    assert!(err.contains("step 0 cannot be skipped"), "{err}");

    let (code, out, err) = ferry(&api, &["workflows", "skip", &wf, "--step", "greeter"]);
    assert_eq!(code, 0, "{out}{err}");
    // The skip says what it puts at stake: what depends on greeter, which never deployed here.
    assert!(
        err.contains(
            "warning: counter, reporter depend on greeter: greeter has never deployed on prod"
        ),
        "{err}"
    );
    let w = wait_until(&api, &wf, 60, "greeter's apply to be skipped", |w| {
        step_is(w, "greeter", "apply", "skipped")
    });
    let approve = the_step(&w, "greeter", "approve");
    assert_eq!(name_of(&approve.status), "skipped");
    assert_eq!(approve.message.as_deref(), Some("skipped by token:admin"));
    assert_eq!(name_of(&approve.responses[0].action), "skip");
    assert_eq!(approve.responses[0].actor, "token:admin");
    // Its approval is no longer listed as waiting.
    let list: Vec<Approval> = cli(&api, &["approvals", "list", "--install", "prod", "--json"]);
    assert!(list.iter().all(|a| a.component != "greeter"), "{list:?}");
    // What depends on greeter plans and waits with what greeter had (nothing: never applied).
    let w = wait_until(&api, &wf, 60, "counter's plan to wait or fail", |w| {
        step_is(w, "counter", "approve", "waiting") || name_of(&w.status) == "failed"
    });
    // counter's Terraform reads greeter's outputs, which were never applied: its plan fails.
    assert_eq!(name_of(&w.status), "failed", "{w:?}");
    assert_eq!(name_of(&the_step(&w, "counter", "plan").status), "failed");

    // Skipping the failed plan runs the ended workflow on: reporter, not attempted before, plans
    // now (with nothing from counter, so it fails or waits; either way it ran).
    let (code, out, err) = ferry(&api, &["workflows", "skip", &wf, "--step", "counter"]);
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_until(&api, &wf, 60, "reporter's plan to end", |w| {
        ferry_tests::typed::step_of(w, "reporter", "plan")
            .is_some_and(|s| !matches!(name_of(&s.status).as_str(), "pending" | "running"))
    });
    for k in ["plan", "approve", "apply"] {
        assert_eq!(
            name_of(&the_step(&w, "counter", k).status),
            "skipped",
            "{k}: {w:?}"
        );
    }
    assert!(
        the_step(&w, "reporter", "plan").job_id.is_some(),
        "reporter's plan ran: {w:?}"
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
    let created: CreatedInstall = cli(
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
    let wf = created.workflow_id;
    let done = wait_until(&api, &wf, 120, "the deploy to end", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    // The summary is counted from `terraform show -json`.
    let plan = the_step(&done, "counter", "plan");
    assert_eq!(
        plan.message.as_deref(),
        Some("Plan: 1 to add, 0 to change, 0 to destroy. 2 output(s) change."),
        "{plan:?}"
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
    let both: serde_json::Value = cli(&api, &["workflows", "get", &wf, "--diff", "--json"]);
    // The JSON shape of `--diff --json` itself: the plan as Terraform wrote it.
    let index = plan.index.to_string();
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
    let install: Install = cli(&api, &["installs", "get", "prod", "--json"]);
    let again = install.last_workflow.unwrap();
    let (_, out, _) = ferry(&api, &["workflows", "get", &again, "--diff"]);
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
    let failed: Workflow = serde_json::from_str(&out).unwrap();
    assert_eq!(
        the_step(&failed, "counter", "plan").message.as_deref(),
        Some("terraform plan failed: Reference to undeclared input variable (main.tf:6)"),
        "{}",
        steps_of(&failed)
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
    let sandbox_waits = |w: &Workflow| step_is(w, "sandbox", "approve", "waiting");
    wait_until(&api, &wf, 60, "the sandbox plan to wait", sandbox_waits);
    std::thread::sleep(std::time::Duration::from_secs(3));
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    // Too old: planned again, and asked again.
    let w = wait_until(&api, &wf, 60, "the sandbox to be planned again", |w| {
        the_step(w, "sandbox", "plan").attempt == 2 && sandbox_waits(w)
    });
    let message = the_step(&w, "sandbox", "approve")
        .message
        .clone()
        .unwrap_or_default();
    assert!(
        message.starts_with("planned again: the approved plan was 3s")
            && message.ends_with("old (more than 2s)"),
        "{message}"
    );
    assert_eq!(name_of(&the_step(&w, "sandbox", "apply").status), "pending");
    // A fresh plan approved at once is applied (asked again only if this machine is slower than 2 s).
    for _ in 0..5 {
        ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
        let w = wait_until(&api, &wf, 60, "the apply or another approval", |w| {
            step_is(w, "sandbox", "apply", "succeeded") || sandbox_waits(w)
        });
        if name_of(&the_step(&w, "sandbox", "apply").status) == "succeeded" {
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

/// Approves the plans of workflow `wf`, once the first waits, with `approve --all` (which
/// approves the later ones as they come), and waits for its end; returns it.
fn approve_to_the_end(api: &str, wf: &str) -> Workflow {
    let w = wait_until(api, wf, 60, "a decision to make, or the end", |w| {
        waiting(w) || name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    if waiting(&w) {
        // Decided as a person would, not within a `--wait` printer's poll.
        std::thread::sleep(std::time::Duration::from_millis(800));
        let (code, out, err) = ferry(api, &["workflows", "approve", wf, "--all"]);
        assert_eq!(code, 0, "{out}{err}");
    }
    wait_until(api, wf, 120, "the end", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    })
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
    assert_eq!(
        approve_to_the_end(&api, &wf).status,
        WorkflowStatus::Succeeded
    );

    let (code, out, err) = ferry(&api, &["installs", "teardown", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    let install: Install = cli(&api, &["installs", "get", "prod", "--json"]);
    let td = install.last_workflow.unwrap();
    let w = wait_until(&api, &td, 60, "the first destroy to wait", waiting);
    let first = the_step(&w, "reporter", "teardown");
    assert_eq!(
        name_of(&first.status),
        "pending",
        "nothing destroyed before the decision: {w:?}"
    );
    let list: Vec<Approval> = cli(&api, &["approvals", "list", "--install", "prod", "--json"]);
    assert!(
        list[0]
            .plan_summary
            .starts_with("Teardown of the install: `reporter` will be torn down"),
        "{list:?}"
    );
    let done = approve_to_the_end(&api, &td);
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let after: Install = cli(&api, &["installs", "get", "prod", "--json"]);
    assert!(after.components.is_empty(), "{after:?}");
}

/// `approve --all` approves the plans waiting now and every later plan of that workflow as it
/// comes: the deploy runs to its end without another decision; later workflows still prompt.
#[test]
fn approve_all_on_a_workflow_approves_its_later_plans_as_they_come() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let wf = create_prompt(&api, "prod");
    wait_until(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("are approved as they come (1 waiting now)"),
        "{out}"
    );
    let done = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{}", steps_of(&done));
    assert_eq!(
        the_step(&done, "sandbox", "approve").actor.as_deref(),
        Some("token:admin")
    );
    assert_eq!(
        the_step(&done, "reporter", "approve").actor.as_deref(),
        Some("approve-all")
    );
    // Only that workflow: the install itself still prompts.
    let i = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert!(!i.approve_all);
}

/// Runs the CLI with `token` instead of the test hub's admin token.
fn as_token(api: &str, token: &str, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["--token", token];
    all.extend_from_slice(args);
    ferry(api, &all)
}

/// The audit records of `action`, as `ferry audit --json` prints them (a line each).
fn audited(api: &str, action: &str) -> Vec<ferry_model::AuditEvent> {
    let (code, out, err) = ferry(api, &["audit", "--action", action, "--json"]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| {
            serde_json::from_str::<ferry_model::api::AuditEntry>(l)
                .unwrap()
                .event
        })
        .collect()
}

/// Approves with `token` every plan of workflow `id` as it comes to wait, until it ends.
fn approve_until_ended(api: &str, token: &str, id: &str) -> Workflow {
    loop {
        let w = wait_until(api, id, 90, "a plan to wait or the end", |w| {
            waiting(w) || w.status.is_terminal()
        });
        if w.status.is_terminal() {
            return w;
        }
        for s in w
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::Approve && s.status == StepStatus::Waiting)
        {
            let (code, out, err) = as_token(
                api,
                token,
                &["workflows", "approve", id, "--step", &s.component],
            );
            assert!(code == 0 || err.contains("already"), "{out}{err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// An install whose plans its customer approves: the vendor's tokens and approve-all cannot
/// decide them; the customer's token does, through the same command. Under `both` each side
/// approves once and the plan waits for the second; the vendor cannot drop the customer's say,
/// and every change of who approves is audited.
#[test]
fn an_install_whose_customer_approves_its_plans_is_decided_by_the_customer() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let _runner = Proc::runner(
        &nats.url,
        "acme",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let created: CreatedInstall = cli(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "acme",
            "--approve-all",
            "--approvals",
            "customer",
            "--json",
        ],
    );
    let wf = created.workflow_id;
    // approve-all is the vendor's rule: the sandbox's plan still waits for the customer.
    wait_until(&api, &wf, 60, "the sandbox plan to wait", waiting);
    let (code, _, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("approved by its customer: a vendor token cannot decide them"),
        "{err}"
    );
    let customer = ferry_tests::typed::customer_token(&api, "acme-sec", "acme");
    let t = customer.as_str();
    let (code, _, err) = as_token(&api, t, &["workflows", "approve", &wf, "--all"]);
    assert_eq!(code, 1);
    assert!(err.contains("approve each plan for the customer"), "{err}");
    let done = approve_until_ended(&api, t, &wf);
    assert_eq!(
        done.status,
        WorkflowStatus::Succeeded,
        "{}",
        steps_of(&done)
    );
    let approvals = audited(&api, "approval.approved");
    assert!(
        approvals.iter().any(|a| a.actor == "token:acme-sec"),
        "{approvals:?}"
    );

    // The vendor cannot take the customer's say away; the customer can share it.
    let (code, _, err) = ferry(&api, &["installs", "approvals", "acme", "vendor"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("only the customer may stop approving"),
        "{err}"
    );
    let (code, out, err) = as_token(&api, t, &["installs", "approvals", "acme", "both"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("approved by both"), "{out}");
    let changes = audited(&api, "install.approvals_by");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].actor, "token:acme-sec");

    // Under both: approve-all (on for this install) approves for the vendor, and the plan
    // waits for the customer's approval.
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "update-inputs",
            "acme",
            "--input",
            "greeting=ahoy",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let deploy: ferry_model::api::Deployed = serde_json::from_str(&out).unwrap();
    let w = wait_until(
        &api,
        &deploy.workflow_id,
        60,
        "the first plan to wait",
        waiting,
    );
    let first = w
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Approve && s.status == StepStatus::Waiting)
        .unwrap()
        .component
        .clone();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let w = ferry_tests::typed::workflow(&api, &deploy.workflow_id).unwrap();
    assert!(
        step_is(&w, &first, "approve", "waiting"),
        "{}",
        steps_of(&w)
    );
    let waiting_list: Vec<Approval> =
        cli(&api, &["approvals", "list", "--install", "acme", "--json"]);
    assert_eq!(
        waiting_list[0].vendor_approved_by.as_deref(),
        Some("approve-all"),
        "{waiting_list:?}"
    );
    let (code, _, err) = ferry(
        &api,
        &[
            "workflows",
            "approve",
            &deploy.workflow_id,
            "--step",
            &first,
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("already approved for the vendor by approve-all"),
        "{err}"
    );
    let (code, out, err) = as_token(
        &api,
        t,
        &[
            "workflows",
            "approve",
            &deploy.workflow_id,
            "--step",
            &first,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    wait_until(
        &api,
        &deploy.workflow_id,
        60,
        "the plan to be decided",
        |w| !step_is(w, &first, "approve", "waiting"),
    );
}
