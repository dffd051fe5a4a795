//! Runner bootstrap, end to end: a one-time token from `installs create` or `installs
//! runner-bundle`, a key made by the runner itself, a certificate from the hub's CA, and a deploy
//! over the connection that certificate admits. Tokens work once; a runner serves only the
//! install its certificate names.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, ferry, sync_hello};

fn example() -> std::path::PathBuf {
    ferry_tests::repo_root().join("examples/hello")
}

/// `ferry-runner --bootstrap TOKEN` in leaf mode, with its data in `data`.
fn bootstrapping_runner(
    nats: &NatsServer,
    api: &str,
    token: &str,
    data: &Path,
    log: PathBuf,
) -> Proc {
    runner_bootstrapping_at(&nats.leaf_url, api, token, data, log)
}

/// [`bootstrapping_runner`] with the hub at `hub_url`.
fn runner_bootstrapping_at(
    hub_url: &str,
    api: &str,
    token: &str,
    data: &Path,
    log: PathBuf,
) -> Proc {
    Proc::spawn(
        "ferry-runner",
        &[
            "--nats-url",
            hub_url,
            "--nats-server",
            ferry_tests::nats_server_bin().to_str().unwrap(),
            "--api",
            api,
            "--bootstrap",
            token,
            "--data-dir",
            data.to_str().unwrap(),
        ],
        log,
    )
}

/// `installs create` of app `hello` as `prod`: its first workflow, its runner's one-time token,
/// and the whole answer.
fn create_prod(api: &str, approve_all: bool) -> (String, String, CreatedInstall) {
    let mut args = vec![
        "installs", "create", "--app", "hello", "--name", "prod", "--json",
    ];
    if approve_all {
        args.push("--approve-all");
    }
    let created: CreatedInstall = cli(api, &args);
    let token = created
        .runner_token
        .as_ref()
        .map(|t| t.token.clone())
        .unwrap_or_else(|| panic!("no runner token in {created:?}"));
    (created.workflow_id.clone(), token, created)
}

#[test]
fn a_runner_bootstraps_with_its_one_time_token_and_the_token_works_once() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    sync_hello(&api, &example());
    let (wf, token, created) = create_prod(&api, true);
    assert!(token.starts_with("ferryboot_default_"), "{created:?}");

    // A hub URL nothing listens on, and something that is not a NATS server (the API's HTTP
    // port): the runner says so before it spends the token, which stays usable.
    let closed = format!("tls://127.0.0.1:{}", ferry_tests::free_port());
    let http = api.replace("http://", "tls://");
    for (name, url, what) in [
        ("lost", closed.as_str(), "cannot reach the hub"),
        ("wrong", http.as_str(), "does not answer as a NATS server"),
    ] {
        let log = dir.path().join(format!("{name}.log"));
        let mut runner =
            runner_bootstrapping_at(url, &api, &token, &dir.path().join(name), log.clone());
        let status = runner.wait_exit(Duration::from_secs(30)).expect("it exits");
        assert!(!status.success());
        let said = std::fs::read_to_string(&log).unwrap();
        assert!(
            said.contains(what) && said.contains("the one-time token was not used"),
            "{said}"
        );
    }

    let data = dir.path().join("runner");
    let _runner = bootstrapping_runner(&nats, &api, &token, &data, dir.path().join("runner.log"));
    let done = wait_until(&api, &wf, 120, "the first deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    // The key was made here and kept private; the certificate names the install.
    let identity = ferry_pki::InstallFiles::new(&data.join("identity"));
    let mode = std::fs::metadata(identity.key())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let info = identity.info().unwrap();
    assert_eq!(
        (info.identity.org.as_str(), info.identity.install.as_str()),
        ("default", "prod")
    );

    // The same token again: refused, and the runner says why.
    let mut replay = bootstrapping_runner(
        &nats,
        &api,
        &token,
        &dir.path().join("replay"),
        dir.path().join("replay.log"),
    );
    let status = replay
        .wait_exit(Duration::from_secs(30))
        .expect("the replay exits");
    assert!(!status.success());
    let said = std::fs::read_to_string(dir.path().join("replay.log")).unwrap();
    assert!(
        said.contains("this bootstrap token was already used") && said.contains("401"),
        "{said}"
    );
    assert!(!dir.path().join("replay/identity/cert.pem").exists());
}

#[test]
fn a_runner_bundle_holds_what_the_runner_host_needs() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    sync_hello(&api, &example());
    let (code, out, err) = ferry_tests::create_hello(&api, "edge", &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("ferry-runner --bootstrap ferryboot_default_"),
        "{out}"
    );
    let bundle = dir.path().join("bundle");
    // This control plane was not told its hub's leafnode URL: the bundle is refused, not guessed.
    let (code, _, err) = ferry(
        &api,
        &[
            "installs",
            "runner-bundle",
            "edge",
            "--out",
            bundle.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("pass --hub-url"), "{err}");
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "runner-bundle",
            "edge",
            "--out",
            bundle.to_str().unwrap(),
            "--hub-url",
            &nats.leaf_url,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let env_text = std::fs::read_to_string(bundle.join("runner.env")).unwrap();
    let mode = std::fs::metadata(bundle.join("runner.env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the token file is private");
    let unit = std::fs::read_to_string(bundle.join("ferry-runner.service")).unwrap();
    assert!(
        unit.contains("EnvironmentFile=/etc/ferry/runner.env"),
        "{unit}"
    );
    let readme = std::fs::read_to_string(bundle.join("README.txt")).unwrap();
    assert!(readme.contains("systemctl"), "{readme}");
    assert!(
        readme.contains("The host needs: ferry-runner and nats-server"),
        "{readme}"
    );
    assert!(
        readme.contains("helm for helm_chart and kubectl for kubernetes_manifest and"),
        "{readme}"
    );

    // The runner, started with the bundle's environment (its data elsewhere), deploys.
    let mut env: Vec<(String, String)> = env_text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.retain(|(k, _)| k != "FERRY_RUNNER_DATA_DIR");
    env.push((
        "FERRY_NATS_SERVER".into(),
        ferry_tests::nats_server_bin()
            .to_string_lossy()
            .into_owned(),
    ));
    env.push((
        "FERRY_RUNNER_DATA_DIR".into(),
        dir.path().join("edge").to_string_lossy().into_owned(),
    ));
    let _runner = Proc::spawn_env("ferry-runner", &[], &env, dir.path().join("runner.log"));
    let installs = cli::<Install>(&api, &["installs", "get", "edge", "--json"]);
    let wf = installs.last_workflow.as_deref().unwrap().to_string();
    let done = wait_until(&api, &wf, 120, "the deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
}

#[test]
fn a_runner_serves_only_the_install_its_certificate_names() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("runner");
    nats.issue_install("default", "a", &data.join("identity"));
    let mut runner = Proc::spawn(
        "ferry-runner",
        &[
            "--nats-url",
            &nats.leaf_url,
            "--nats-server",
            ferry_tests::nats_server_bin().to_str().unwrap(),
            "--install",
            "b",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        dir.path().join("runner.log"),
    );
    let status = runner.wait_exit(Duration::from_secs(20)).expect("it exits");
    assert_eq!(status.code(), Some(2));
    let said = std::fs::read_to_string(dir.path().join("runner.log")).unwrap();
    assert!(
        said.contains("--install b: this runner's certificate is for install a"),
        "{said}"
    );
    // Without any certificate, it says how to get one.
    let mut bare = Proc::spawn(
        "ferry-runner",
        &[
            "--nats-url",
            &nats.leaf_url,
            "--nats-server",
            ferry_tests::nats_server_bin().to_str().unwrap(),
            "--data-dir",
            dir.path().join("bare").to_str().unwrap(),
        ],
        dir.path().join("bare.log"),
    );
    assert_eq!(
        bare.wait_exit(Duration::from_secs(20))
            .and_then(|s| s.code()),
        Some(2)
    );
    let said = std::fs::read_to_string(dir.path().join("bare.log")).unwrap();
    assert!(said.contains("no install certificate"), "{said}");
}

#[test]
fn a_revoked_certificate_loses_its_connection_within_seconds_and_is_refused_after() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    sync_hello(&api, &example());
    let (wf, token, _) = create_prod(&api, true);
    let data = dir.path().join("runner");
    let _runner = bootstrapping_runner(&nats, &api, &token, &data, dir.path().join("runner.log"));
    let done = wait_until(&api, &wf, 120, "the first deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");

    let identity = ferry_pki::InstallFiles::new(&data.join("identity"));
    let id = identity.info().unwrap().identity;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let watcher = rt.block_on(async {
        identity
            .credentials(&id)
            .connect_options()
            .max_reconnects(Some(1))
            .event_callback(move |e| {
                let tx = tx.clone();
                async move {
                    if matches!(e, async_nats::Event::Disconnected) {
                        let _ = tx.send(std::time::Instant::now());
                    }
                }
            })
            .connect(&nats.url)
            .await
            .expect("the install's certificate is admitted before the revocation")
    });

    let asked = std::time::Instant::now();
    let revoked: ferry_model::api::Revoked = cli(&api, &["installs", "revoke", "prod", "--json"]);
    assert_eq!(revoked.certificates.len(), 1, "{revoked:?}");
    assert!(
        revoked.connections_closed >= 2,
        "runner and watcher: {revoked:?}"
    );
    let dropped = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("disconnected within 5 s");
    assert!(dropped.duration_since(asked) < Duration::from_secs(5));
    drop(watcher);

    // The next connection with it is refused.
    let again = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(10),
            identity
                .credentials(&id)
                .connect_options()
                .connect(&nats.url),
        )
        .await
    });
    assert!(
        !matches!(again, Ok(Ok(_))),
        "a revoked certificate was admitted again"
    );
    let log = std::fs::read_to_string(nats.dir.path().join("nats.log")).unwrap();
    assert!(log.contains("was revoked at"), "the hub says why");
}

#[test]
fn a_certificate_is_renewed_before_it_expires_without_interrupting_a_running_job() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&example(), &app);
    // greeter's apply runs 70 s, longer than a certificate lives here.
    let apply = app.join("components/src/greeter/apply.sh");
    let script = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(
        &apply,
        script.replace(
            "set -eu\n",
            "set -eu\ni=1; while [ $i -le 70 ]; do echo \"tick $i\"; i=$((i+1)); sleep 1; done\n",
        ),
    )
    .unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--cert-lifetime-secs", "40"],
    );
    sync_hello(&api, &app);
    let (wf, token, _) = create_prod(&api, true);
    let data = dir.path().join("runner");
    let _runner = bootstrapping_runner(&nats, &api, &token, &data, dir.path().join("runner.log"));
    let identity = ferry_pki::InstallFiles::new(&data.join("identity"));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !identity.exists() {
        assert!(std::time::Instant::now() < deadline, "no certificate");
        std::thread::sleep(Duration::from_millis(50));
    }
    let first = identity.info().unwrap();
    let done = wait_until(&api, &wf, 200, "the workflow to end", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let job = the_step(&done, "greeter", "apply")
        .job_id
        .as_deref()
        .unwrap()
        .to_string();
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    assert_eq!(j.executions.len(), 1, "not interrupted: {j:?}");
    // The first certificate expired during the job; the runner holds a later one.
    let now = identity.info().unwrap();
    assert_ne!(now.serial, first.serial);
    assert!(now.not_after_unix > first.not_after_unix);
    let log = std::fs::read_to_string(dir.path().join("runner.log")).unwrap();
    assert!(
        log.contains("certificate renewed; reconnecting with it"),
        "{log}"
    );
    let ticks = ferry(&api, &["logs", "--job", &job]).1;
    assert!(ticks.contains("tick 70"), "{ticks}");
}

#[test]
fn a_runner_in_direct_mode_connects_itself_with_the_same_identity() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let data = dir.path().join("runner");
    nats.issue_install("default", "prod", &data.join("identity"));
    let mut runner = Proc::spawn(
        "ferry-runner",
        &[
            "--direct",
            "--nats-url",
            &nats.url,
            "--data-dir",
            data.to_str().unwrap(),
            "--drain-secs",
            "5",
        ],
        dir.path().join("runner.log"),
    );
    let wf = ferry_tests::sync_and_create(&api, &example(), "prod");
    let done = wait_until(&api, &wf, 120, "the deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    assert!(!data.join("leaf").exists(), "no leaf in direct mode");
    // SIGTERM stops it, within its drain.
    let exit = runner.terminate(Duration::from_secs(30));
    assert!(exit.is_some(), "a direct runner ignored SIGTERM");
}

#[test]
fn an_expired_bootstrap_token_is_refused() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--runner-token-secs", "1"],
    );
    sync_hello(&api, &example());
    let (_, token, created) = create_prod(&api, false);
    assert_eq!(created.runner_token.unwrap().expires_in_secs, 1);
    std::thread::sleep(Duration::from_secs(2));
    let mut runner = Proc::spawn(
        "ferry-runner",
        &[
            "--nats-url",
            &nats.leaf_url,
            "--nats-server",
            ferry_tests::nats_server_bin().to_str().unwrap(),
            "--api",
            &api,
            "--bootstrap",
            &token,
            "--data-dir",
            dir.path().join("runner").to_str().unwrap(),
        ],
        dir.path().join("runner.log"),
    );
    let status = runner.wait_exit(Duration::from_secs(30)).expect("it exits");
    assert!(!status.success());
    let said = std::fs::read_to_string(dir.path().join("runner.log")).unwrap();
    assert!(said.contains("this bootstrap token has expired"), "{said}");
    assert!(!dir.path().join("runner/identity/cert.pem").exists());
}
