//! Trust, with real processes: the API's tokens (no token 401, a viewer deploying 403, another
//! org's token 404 on this org's install, a revoked token 401), and a runner that applies only
//! plans it produced itself.

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, ferry, repo_root, token_for};

/// Runs the CLI with exactly `token` (or none), not the test hub's admin token.
fn as_token(api: &str, token: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut cmd = std::process::Command::new(ferry_tests::bin("ferry"));
    cmd.current_dir(repo_root())
        .env_remove("FERRY_TOKEN")
        .env("XDG_CONFIG_HOME", "/nonexistent/ferry-tests");
    if let Some(t) = token {
        cmd.env("FERRY_TOKEN", t);
    }
    let out = cmd.arg("--api").arg(api).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn new_token(api: &str, name: &str, role: &str) -> (String, String) {
    let t = cli::<CreatedToken>(
        api,
        &["tokens", "create", "--name", name, "--role", role, "--json"],
    );
    (t.token.clone(), t.info.id.clone())
}

#[test]
fn every_request_needs_a_token_whose_role_and_org_allow_it() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::sync_and_create(&api, &repo_root().join("examples/hello"), "prod");

    // No token, a malformed one, a forged secret: 401, saying what to do.
    let (code, _, err) = as_token(&api, None, &["installs", "list"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no token: run `ferry login --token T`") && err.contains("401"),
        "{err}"
    );
    let (_, _, err) = as_token(&api, Some("nonsense"), &["installs", "list"]);
    assert!(
        err.contains("invalid token") && err.contains("401"),
        "{err}"
    );
    let admin = token_for(&api).unwrap();
    // The same token with its last hex digit changed (whatever it was).
    let last = if admin.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{last}", &admin[..admin.len() - 1]);
    let (_, _, err) = as_token(&api, Some(&forged), &["installs", "list"]);
    assert!(
        err.contains("invalid token") && err.contains("401"),
        "{err}"
    );

    // A viewer reads, and may not deploy (403); an operator deploys but may not create tokens.
    let (viewer, _) = new_token(&api, "vera", "viewer");
    let (code, out, err) = as_token(&api, Some(&viewer), &["installs", "get", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = as_token(&api, Some(&viewer), &["installs", "deploy", "prod"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("token `vera` is a viewer token: this needs operator") && err.contains("403"),
        "{err}"
    );
    let (operator, _) = new_token(&api, "otto", "operator");
    let (_, _, err) = as_token(&api, Some(&operator), &["tokens", "list"]);
    assert!(
        err.contains("this needs admin") && err.contains("403"),
        "{err}"
    );
    let (_, _, err) = as_token(&api, Some(&operator), &["installs", "delete", "prod"]);
    assert!(
        err.contains("this needs admin") && err.contains("403"),
        "{err}"
    );

    // Tokens are listed without their secrets, and stored only as hashes.
    let list = cli::<Vec<TokenInfo>>(&api, &["tokens", "list", "--json"]);
    assert_eq!(list.len(), 3, "{list:?}");
    let printed = ferry(&api, &["tokens", "list", "--json"]).1;
    assert!(!printed.contains(&viewer[viewer.len() - 20..]));

    // Another org's admin does not see this org's install: 404, as if it did not exist.
    let other = mint_for_org(&nats.url, "globex");
    let (code, _, err) = as_token(&api, Some(&other), &["installs", "get", "prod"]);
    assert_eq!(code, 1);
    assert!(err.contains("install `prod` not found"), "{err}");
    let listed = as_token(&api, Some(&other), &["installs", "list", "--json"]).1;
    assert_eq!(listed.trim(), "[]", "{listed}");

    // A revoked token is refused from its next request on.
    let (doomed, id) = new_token(&api, "temp", "viewer");
    assert_eq!(as_token(&api, Some(&doomed), &["installs", "list"]).0, 0);
    let (code, out, err) = ferry(&api, &["tokens", "revoke", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = as_token(&api, Some(&doomed), &["installs", "list"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("this token was revoked") && err.contains("401"),
        "{err}"
    );
}

/// The first admin token of another org on the same hub.
fn mint_for_org(nats_url: &str, org: &str) -> String {
    let out = ferry_tests::ferry_server(nats_url)
        .args(["init", "--org", org])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn init_prints_the_first_admin_token_once_and_login_saves_a_token() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    // The harness ran init: a second init is refused.
    let out = ferry_tests::ferry_server(&nats.url)
        .arg("init")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already has tokens"));

    let config = dir.path().join("config");
    let login = |token: &str| {
        std::process::Command::new(ferry_tests::bin("ferry"))
            .env("XDG_CONFIG_HOME", &config)
            .env_remove("FERRY_TOKEN")
            .args(["--api", &api, "login", "--token", token])
            .output()
            .unwrap()
    };
    assert!(
        !login("ferry_default_x_y").status.success(),
        "a bad token is not saved"
    );
    let admin = token_for(&api).unwrap();
    let out = login(&admin);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = config.join("ferry/token");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&saved).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // Later commands use it.
    let out = std::process::Command::new(ferry_tests::bin("ferry"))
        .env("XDG_CONFIG_HOME", &config)
        .env_remove("FERRY_TOKEN")
        .args(["--api", &api, "tokens", "list"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A plan approved at the hub that the install never produced is not applied: the runner applies
/// only its own copy of a plan it made (here the hub's approval record is rewritten to bless a
/// forged plan, as a forged "plan finished" result would).
#[test]
fn a_runner_applies_only_a_plan_it_produced_itself() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let created = cli::<CreatedInstall>(
        &api,
        &[
            "installs", "create", "--app", "hello", "--name", "prod", "--json",
        ],
    );
    let wf = created.workflow_id.as_str().to_string();
    let w = wait_until(&api, &wf, 60, "the sandbox plan to wait", |w| {
        step_is(w, "sandbox", "approve", "waiting")
    });
    let approval = the_step(&w, "sandbox", "approve")
        .approval_id
        .clone()
        .unwrap();
    let plan_job = the_step(&w, "sandbox", "plan")
        .job_id
        .as_deref()
        .unwrap()
        .to_string();
    // The forger's plan: its digest replaces the real one on the approval.
    let forged = b"#!/bin/sh\ntouch /tmp/pwned-by-forged-plan\n";
    let digest = {
        use std::fmt::Write;
        let out = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write as _;
                c.stdin.take().unwrap().write_all(forged)?;
                c.wait_with_output()
            })
            .unwrap();
        let mut d = String::from("sha256:");
        write!(
            d,
            "{}",
            String::from_utf8_lossy(&out.stdout)
                .split(' ')
                .next()
                .unwrap()
        )
        .unwrap();
        d
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let js = async_nats::jetstream::new(nats.admin().await);
        let kv = js.get_key_value("approvals").await.unwrap();
        let key = format!("default.{approval}");
        let entry = kv.entry(&key).await.unwrap().unwrap();
        let mut record: serde_json::Value = serde_json::from_slice(&entry.value).unwrap();
        record["plan_digest"] = serde_json::Value::String(digest.clone());
        kv.update(
            &key,
            serde_json::to_vec(&record).unwrap().into(),
            entry.revision,
        )
        .await
        .unwrap();
        // And the hub's copy of the plan is the forger's too.
        let plans = js.get_object_store("plans").await.unwrap();
        plans
            .put(format!("default.{plan_job}").as_str(), &mut &forged[..])
            .await
            .unwrap();
    });
    // A decision comes only from a person allowed to decide: a viewer's approval is refused.
    let (viewer, _) = new_token(&api, "vic", "viewer");
    let (code, _, err) = as_token(
        &api,
        Some(&viewer),
        &["workflows", "approve", &wf, "--step", "sandbox"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("403"), "{err}");
    let still = cli::<Workflow>(&api, &["workflows", "get", &wf, "--json"]);
    assert_eq!(
        name_of(&the_step(&still, "sandbox", "approve").status),
        "waiting"
    );
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    let done = wait_until(&api, &wf, 60, "the apply to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "failed", "{done:?}");
    let apply = the_step(&done, "sandbox", "apply");
    assert_eq!(
        apply.message.clone().unwrap_or_default(),
        format!(
            "refusing to apply: this install holds no plan {digest} of its own (it applies only \
             plans it produced); retry the step to plan again"
        ),
        "{apply:?}"
    );
    assert!(!std::path::Path::new("/tmp/pwned-by-forged-plan").exists());
}
