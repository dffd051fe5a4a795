//! Actions run inside an install by its runner: by hand (a later step reading an earlier one's
//! outputs), on a cron schedule (exactly once per tick under two scheduler replicas), around
//! deploys (a failing pre-deploy hook fails the deploy and is retried), and only while a
//! break-glass role they need is granted on the runner host.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, bin, ferry, repo_root};

fn hello(dir: &Path) -> PathBuf {
    let app = dir.join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    app
}

fn ended(w: &Workflow) -> bool {
    name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
}

/// A running control plane and install `prod` of `app`, provisioned.
struct Running {
    nats: NatsServer,
    _server: Proc,
    _runner: Proc,
    api: String,
}

fn provisioned(app: &Path, dir: &Path) -> Running {
    let nats = NatsServer::start();
    let (server, runner, api) = ferry_tests::server_and_runner(&nats, dir);
    let wf = ferry_tests::sync_and_create(&api, app, "prod");
    let w = wait_until(&api, &wf, 120, "provisioning", ended);
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");
    Running {
        nats,
        _server: server,
        _runner: runner,
        api,
    }
}

fn action_steps(w: &Workflow) -> Vec<&Step> {
    w.steps
        .iter()
        .filter(|s| name_of(&s.kind) == "action")
        .collect()
}

#[test]
fn a_manual_action_runs_its_steps_in_order_and_the_second_reads_the_firsts_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    let i = provisioned(&app, dir.path());

    // Inputs are checked against the action's declarations before anything runs.
    let (code, _, err) = ferry(
        &i.api,
        &[
            "actions",
            "run",
            "prod",
            "greeting_check",
            "--input",
            "TIMES=many",
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("`TIMES` must be a number"), "{err}");
    let (code, _, err) = ferry(&i.api, &["actions", "run", "prod", "greeting_chek"]);
    assert_ne!(code, 0);
    assert!(err.contains("did you mean `greeting_check`"), "{err}");

    let (code, out, err) = ferry(
        &i.api,
        &[
            "actions",
            "run",
            "prod",
            "greeting_check",
            "--input",
            "TIMES=2",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let runs = cli::<Vec<ActionRunReport>>(
        &i.api,
        &["actions", "runs", "prod", "greeting_check", "--json"],
    );
    let run = &runs[0];
    assert_eq!(name_of(&run.status), "succeeded", "{runs:?}");
    assert_eq!(run.trigger.as_deref(), Some("manual"));
    let steps = &run.steps;
    assert_eq!(steps[0].step.as_deref(), Some("read"));
    assert_eq!(steps[0].outputs["greeting"], "hello, prod!", "{runs:?}");
    assert_eq!(steps[1].step.as_deref(), Some("report"));
    // "hello, prod!" is two words: the second step read the first's output.
    assert_eq!(steps[1].outputs["words"], 2, "{runs:?}");

    // Its log shows both steps; the input reached the script (two lines).
    let id = run.run.as_str();
    let (code, log, err) = ferry(&i.api, &["logs", "--workflow", id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        log.matches("the greeting is: hello, prod!").count(),
        2,
        "{log}"
    );

    // The install keeps the latest run for templates and `actions list`.
    let listed =
        cli::<Vec<InstallAction>>(&i.api, &["actions", "list", "--install", "prod", "--json"]);
    let last = listed[0].action.last_run.as_ref().unwrap();
    assert_eq!(last.status, "succeeded", "{listed:?}");
    assert_eq!(last.outputs["steps"]["read"]["greeting"], "hello, prod!");
    assert_eq!(last.outputs["words"], 2);
}

/// A pre-deploy hook on greeter that fails until a marker file exists.
fn with_failing_hook(app: &Path, marker: &Path) {
    std::fs::write(
        app.join("actions/gate.toml"),
        format!(
            r#"name = "gate"
timeout = "30s"

[[triggers]]
type = "pre-deploy-component"
component_name = "greeter"

[[steps]]
name = "check"
command = "test -e {} && echo gate open"
"#,
            marker.display()
        ),
    )
    .unwrap();
}

#[test]
fn a_failing_pre_deploy_hook_fails_the_deploy_before_its_component_and_a_retry_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    // In the install's directory on the runner host: the one place of the host a job (in its
    // sandbox) and the test both see.
    let marker = dir.path().join("runner/install/gate-open");
    with_failing_hook(&app, &marker);
    let nats = NatsServer::start();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let w = wait_until(&api, &wf, 120, "the workflow to fail", ended);
    assert_eq!(name_of(&w.status), "failed", "{w:?}");
    let hook = action_steps(&w)[0];
    assert_eq!(hook.component, "gate");
    assert_eq!(
        hook.action.as_ref().map(|a| a.trigger.as_str()),
        Some("pre-deploy-component")
    );
    assert_eq!(name_of(&hook.status), "failed", "{w:?}");
    // Greeter's plan waited for the hook: it never ran.
    assert_eq!(
        name_of(&the_step(&w, "greeter", "plan").status),
        "not_attempted"
    );

    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(&marker, "").unwrap();
    let index = hook.index.to_string();
    let (code, out, err) = ferry(&api, &["workflows", "retry", &wf, "--step", &index]);
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_until(&api, &wf, 120, "the retried workflow to end", ended);
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");
    assert_eq!(action_steps(&w)[0].attempt, 2);
}

#[test]
fn a_cron_action_fires_once_per_tick_under_two_scheduler_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    std::fs::write(
        app.join("actions/tick.toml"),
        r#"name = "tick"
timeout = "30s"

[[triggers]]
type = "cron"
cron_schedule = "* * * * *"

[[steps]]
name = "stamp"
command = "date -u +%s"
"#,
    )
    .unwrap();
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    // A second scheduler, racing the first for every tick.
    let (_second, _) = Proc::server_with(
        &nats.url,
        dir.path().join("scheduler2.log"),
        &["--services", "scheduler"],
    );
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    wait_until(&api, &wf, 120, "provisioning", ended);
    let runs = |api: &str| {
        cli::<Vec<ActionRunReport>>(api, &["actions", "runs", "prod", "tick", "--json"])
    };
    // Two ticks: a schedule starts with the next minute, so the second comes within 2 min 10 s.
    let deadline = Instant::now() + Duration::from_secs(150);
    let all = loop {
        let r = runs(&api);
        let done = r
            .iter()
            .filter(|r| name_of(&r.status) == "succeeded")
            .count();
        if done >= 2 {
            break r;
        }
        assert!(Instant::now() < deadline, "two ticks did not run: {r:?}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let mut minutes: Vec<String> = all
        .iter()
        .map(|r| r.created_at.as_str()[..16].to_string())
        .collect();
    let n = minutes.len();
    minutes.dedup();
    assert_eq!(minutes.len(), n, "one run per tick: {all:?}");
    assert!(all.iter().all(|r| r.trigger.as_deref() == Some("cron")));
    let listed =
        cli::<Vec<InstallAction>>(&api, &["actions", "list", "--install", "prod", "--json"]);
    let tick = listed.iter().find(|a| a.action.name == "tick").unwrap();
    assert!(tick.action.next_run.is_some(), "{listed:?}");
}

#[test]
fn a_step_needing_a_break_glass_role_runs_only_while_the_host_grants_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    std::fs::write(
        app.join("actions/fix.toml"),
        r#"name = "fix"
timeout = "30s"
break_glass_role = "admin-access"

[[triggers]]
type = "manual"

[[steps]]
name = "repair"
command = "echo repaired"
"#,
    )
    .unwrap();
    let i = provisioned(&app, dir.path());
    let run = |api: &str| {
        let (_, out, err) = ferry(api, &["actions", "run", "prod", "fix", "--wait"]);
        let runs = cli::<Vec<ActionRunReport>>(api, &["actions", "runs", "prod", "fix", "--json"]);
        (runs[0].clone(), format!("{out}{err}"))
    };
    let (refused, shown) = run(&i.api);
    assert_eq!(name_of(&refused.status), "failed", "{refused:?}");
    let why = refused.steps[0].message.as_deref().unwrap();
    assert!(
        why.contains("break-glass role `admin-access`, which is not granted"),
        "{why}"
    );
    assert!(shown.contains("not granted"), "{shown}");
    // The refusal's command works as printed: it names this runner's data directory.
    let printed = why
        .split("grant it on the runner host: ")
        .nth(1)
        .and_then(|c| c.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no command in {why}"));
    assert!(
        printed.starts_with("ferry-runner break-glass grant admin-access --for 1h --data-dir "),
        "{printed}"
    );
    let help = std::process::Command::new(bin("ferry-runner"))
        .args(["break-glass", "grant", "--help"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("--data-dir"),
        "{help:?}"
    );

    let grant = |args: &[&str]| {
        let out = std::process::Command::new(bin("ferry-runner"))
            .args([
                "--data-dir",
                dir.path().join("runner").to_str().unwrap(),
                "break-glass",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let ran = std::process::Command::new("sh")
        .arg("-c")
        .arg(printed.replacen("ferry-runner", bin("ferry-runner").to_str().unwrap(), 1))
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    assert!(
        grant(&["list"]).contains("admin-access\tuntil"),
        "the printed command granted it"
    );
    grant(&["revoke", "admin-access"]);
    assert!(grant(&["grant", "admin-access", "--for", "4s"]).contains("granted admin-access"));
    let (ran, _) = run(&i.api);
    assert_eq!(name_of(&ran.status), "succeeded", "{ran:?}");
    let id = ran.run.as_str();
    let (_, log, _) = ferry(&i.api, &["logs", "--workflow", id]);
    assert!(
        log.contains("using break-glass role `admin-access` granted by"),
        "{log}"
    );

    std::thread::sleep(Duration::from_secs(5));
    let (expired, _) = run(&i.api);
    assert_eq!(name_of(&expired.status), "failed", "{expired:?}");
    let why = expired.steps[0].message.as_deref().unwrap();
    assert!(why.contains("grant expired"), "{why}");
    let listed = grant(&["list"]);
    assert!(listed.contains("admin-access\texpired"), "{listed}");
    assert!(
        listed.contains("action fix\tneeds admin-access"),
        "{listed}"
    );

    // A new config that drops the role from the action changes nothing on this host: the action
    // still needs the role it was first seen with, until the customer unpins it.
    let fix = std::fs::read_to_string(app.join("actions/fix.toml")).unwrap();
    std::fs::write(
        app.join("actions/fix.toml"),
        fix.replace("break_glass_role = \"admin-access\"\n", ""),
    )
    .unwrap();
    ferry_tests::sync_hello(&i.api, &app);
    let (code, out, err) = ferry(&i.api, &["installs", "deploy", "prod", "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    let (dropped, _) = run(&i.api);
    assert_eq!(name_of(&dropped.status), "failed", "{dropped:?}");
    let why = dropped.steps[0].message.as_deref().unwrap();
    assert!(
        why.contains("needs break-glass role `admin-access`"),
        "{why}"
    );
    let host_log =
        std::fs::read_to_string(dir.path().join("runner/break-glass/audit.log")).unwrap();
    assert!(
        host_log.contains("names no break-glass role for action `fix`")
            && host_log.contains("action fix step repair used break-glass role `admin-access`")
            && host_log.contains("action fix step repair refused"),
        "{host_log}"
    );
    assert!(grant(&["unpin", "fix"]).contains("no longer pinned to role admin-access"));
    let (ran, _) = run(&i.api);
    assert_eq!(name_of(&ran.status), "succeeded", "{ran:?}");
}

/// A runbook deploying greeter, running an action, then reprovisioning the sandbox alone.
fn with_runbook(app: &Path) {
    std::fs::create_dir_all(app.join("runbooks")).unwrap();
    std::fs::write(
        app.join("runbooks/refresh.toml"),
        r#"name = "refresh"
description = "Redeploy the greeter, check it, refresh the sandbox"

[[steps]]
name = "redeploy"
type = "component_deploy"
component_name = "greeter"

[[steps]]
name = "check"
type = "action"
action_name = "greeting_check"

[[steps]]
name = "sandbox"
type = "sandbox_reprovision"
skip_component_deploys = true

[[steps]]
name = "done"
type = "action"
command = "echo runbook finished"
"#,
    )
    .unwrap();
}

fn order(w: &Workflow) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for s in &w.steps {
        if seen.last() != Some(&s.component) {
            seen.push(s.component.clone());
        }
    }
    seen
}

#[test]
fn a_runbook_runs_a_deploy_an_action_and_a_sandbox_reprovision_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    with_runbook(&app);
    let i = provisioned(&app, dir.path());
    let (code, _, err) = ferry(&i.api, &["runbooks", "run", "prod", "refrsh"]);
    assert_ne!(code, 0);
    assert!(err.contains("did you mean `refresh`"), "{err}");
    let started = cli::<Deployed>(&i.api, &["runbooks", "run", "prod", "refresh", "--json"]);
    let id = started.workflow_id.as_str();
    let w = wait_until(&i.api, id, 120, "the runbook to end", ended);
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");
    assert_eq!(name_of(&w.kind), "runbook");
    assert_eq!(
        order(&w),
        ["greeter", "greeting_check", "sandbox", "refresh.done"],
        "{w:?}"
    );
    // Only greeter was deployed (not what depends on it), and the sandbox alone.
    assert!(w.steps.iter().all(|s| s.component != "counter"));
    let (_, log, _) = ferry(&i.api, &["logs", "--workflow", id]);
    assert!(log.contains("runbook finished"), "{log}");
    assert!(log.contains("the greeting is: hello, prod!"), "{log}");
}

#[test]
fn a_runbook_step_waits_for_approval_on_an_install_that_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    with_runbook(&app);
    let i = provisioned(&app, dir.path());
    let (code, out, err) = ferry(&i.api, &["installs", "approve-all", "prod", "off"]);
    assert_eq!(code, 0, "{out}{err}");
    // A change for greeter to plan: a new variable in its environment, in a new config.
    let greeter = app.join("components/greeter.toml");
    let text = std::fs::read_to_string(&greeter).unwrap();
    std::fs::write(&greeter, format!("{text}EXTRA = \"1\"\n")).unwrap();
    ferry_tests::sync_hello(&i.api, &app);
    let started = cli::<Deployed>(&i.api, &["runbooks", "run", "prod", "refresh", "--json"]);
    let id = started.workflow_id.as_str().to_string();
    let waiting = |w: &Workflow, c: &str| step_is(w, c, "approve", "waiting");
    for c in ["greeter", "sandbox"] {
        let w = wait_until(&i.api, &id, 120, &format!("{c}'s approval"), |w| {
            waiting(w, c) || ended(w)
        });
        if step_is(&w, c, "approve", "skipped") {
            continue;
        }
        assert!(waiting(&w, c), "{w:?}");
        let (code, out, err) = ferry(&i.api, &["workflows", "approve", &id, "--step", c]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let w = wait_until(&i.api, &id, 120, "the runbook to end", ended);
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");
    let approved: Vec<_> = w
        .steps
        .iter()
        .filter(|s| name_of(&s.kind) == "approve" && name_of(&s.status) == "succeeded")
        .collect();
    assert!(!approved.is_empty(), "a person approved: {w:?}");
}

#[test]
fn a_customer_token_grants_break_glass_through_the_api_and_every_grant_use_and_expiry_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let app = hello(dir.path());
    std::fs::write(
        app.join("actions/fix.toml"),
        "name = \"fix\"\ntimeout = \"30s\"\nbreak_glass_role = \"admin-access\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"repair\"\ncommand = \"echo repaired\"\n",
    )
    .unwrap();
    let i = provisioned(&app, dir.path());
    let created = cli::<CreatedToken>(
        &i.api,
        &[
            "tokens",
            "create",
            "--name",
            "acme-security",
            "--role",
            "customer",
            "--install",
            "prod",
            "--json",
        ],
    );
    let customer = created.token.as_str().to_string();
    // No vendor role grants break-glass, not even an admin; the customer does.
    let (code, _, err) = ferry(
        &i.api,
        &[
            "break-glass",
            "grant",
            "prod",
            "admin-access",
            "--for",
            "5s",
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("this needs customer"), "{err}");
    let as_customer = |args: &[&str]| {
        let mut all = vec!["--token", customer.as_str()];
        all.extend_from_slice(args);
        ferry(&i.api, &all)
    };
    let (code, _, err) = as_customer(&["break-glass", "grant", "prod", "root", "--for", "5s"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("no action of install `prod`'s app needs break-glass role `root`"),
        "{err}"
    );
    // The customer may read, not deploy.
    let (code, _, _) = as_customer(&["installs", "deploy", "prod"]);
    assert_ne!(code, 0);
    let (code, out, err) = as_customer(&[
        "break-glass",
        "grant",
        "prod",
        "admin-access",
        "--for",
        "6s",
    ]);
    assert_eq!(code, 0, "{out}{err}");

    let (code, out, err) = ferry(&i.api, &["actions", "run", "prod", "fix", "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    let runs = cli::<Vec<ActionRunReport>>(&i.api, &["actions", "runs", "prod", "fix", "--json"]);
    let id = runs[0].run.as_str();
    let (_, log, _) = ferry(&i.api, &["logs", "--workflow", id]);
    assert!(
        log.contains(
            "break-glass role `admin-access` granted through the API by token:acme-security"
        ),
        "{log}"
    );

    // The grant ends; the scheduler removes it and says so; the action is refused again.
    let deadline = Instant::now() + Duration::from_secs(30);
    while i
        .nats
        .audit_events()
        .iter()
        .all(|e| e.action != "break_glass.expired")
    {
        assert!(
            Instant::now() < deadline,
            "the grant's expiry was not audited"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let (code, _, _) = ferry(&i.api, &["actions", "run", "prod", "fix", "--wait"]);
    assert_eq!(code, 1);
    let events: Vec<String> = i
        .nats
        .audit_events()
        .iter()
        .map(|e| e.action.clone())
        .filter(|a| a.starts_with("break_glass."))
        .collect();
    assert_eq!(
        events,
        [
            "break_glass.granted",
            "break_glass.used",
            "break_glass.expired"
        ],
        "{events:?}"
    );
}
