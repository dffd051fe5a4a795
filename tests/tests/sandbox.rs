//! The customer's controls hold against the vendor's own code (docs/security.md, "Each job in a
//! sandbox"): a hostile component, at plan and at apply, and a hostile action try everything of
//! the runner's a job must not reach and are refused each time, while the app's honest
//! components deploy as before; a grant file a job forges (on a runner its operator left
//! unsandboxed) is refused and audited; the customer pauses and resumes the runner on its host;
//! a host without a sandbox refuses jobs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, bin, ferry, repo_root};

/// What the probe tries, each printed `probe NAME: blocked` or `probe NAME: REACHED`.
const PROBES: &[&str] = &[
    "read-runner-key",
    "read-leaf-config",
    "read-artifact-store",
    "list-other-state",
    "read-job-file",
    "write-grant",
    "write-pins",
    "write-host-audit",
    "pause-the-runner",
    "token-in-env",
    "runner-setting-in-env",
    "see-runner",
    "signal-runner",
    "signal-sandbox-init",
    "write-runner-binary",
    "write-host-files",
    "run-as-root",
];

/// A shell script that tries, from inside a job, each thing of the runner's `PROBES` names.
fn probe_script(data: &Path, runner_pid: u32) -> String {
    let d = data.display();
    let exe = bin("ferry-runner");
    let exe = exe.display();
    let grant = r#"{"role":"probe-admin","until_ms":9999999999999,"granted_at_ms":0,"by":"job"}"#;
    format!(
        r#"#!/bin/sh
D='{d}'
probe() {{ name=$1; shift; if "$@" >/dev/null 2>&1; then echo "probe $name: REACHED"; else echo "probe $name: blocked"; fi; }}
probe read-runner-key cat "$D/identity/key.pem"
probe read-leaf-config cat "$D/leaf/nats.conf"
probe read-artifact-store cat "$D/registry/index.json"
probe list-other-state ls "$D/state/sandbox"
probe read-job-file cat ../job.json
probe write-grant sh -c "mkdir -p '$D/break-glass' && echo '{grant}' > '$D/break-glass/probe-admin.json'"
probe write-pins sh -c "echo '{{}}' > '$D/break-glass/pins.json'"
probe write-host-audit sh -c "echo forged >> '$D/break-glass/audit.log'"
probe pause-the-runner sh -c ": > '$D/paused'"
probe token-in-env sh -c "env | grep -q probe-bootstrap-secret"
probe runner-setting-in-env sh -c "env | grep -q FERRY_PROBE_SETTING"
probe see-runner test -d /proc/{runner_pid}
probe signal-runner kill -0 {runner_pid}
probe signal-sandbox-init kill -0 1
probe write-runner-binary test -w '{exe}'
probe write-host-files sh -c ": > /etc/ferry-probe"
probe run-as-root test "$(id -u)" = 0
"#
    )
}

/// Every probe reported, each blocked.
fn assert_all_blocked(what: &str, log: &str) {
    for p in PROBES {
        assert!(
            log.contains(&format!("probe {p}: blocked")),
            "{what}: probe {p} is not reported blocked:\n{log}"
        );
    }
    assert!(!log.contains("REACHED"), "{what}:\n{log}");
}

/// The example app with greeter probing at plan, at apply (then doing its honest work) and at
/// teardown, and an action `probe` that probes.
fn hostile_app(dir: &Path, data: &Path, runner_pid: u32) -> PathBuf {
    let app = dir.join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    let probe = probe_script(data, runner_pid);
    std::fs::write(app.join("components/src/greeter/probe.sh"), &probe).unwrap();
    std::fs::write(app.join("actions/scripts/probe.sh"), &probe).unwrap();
    for phase in ["plan", "apply"] {
        let path = app.join(format!("components/src/greeter/{phase}.sh"));
        let script = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            script.replace("set -eu\n", "set -eu\nsh ./probe.sh\n"),
        )
        .unwrap();
    }
    std::fs::write(
        app.join("components/src/greeter/teardown.sh"),
        "#!/bin/sh\nsh ./probe.sh\n",
    )
    .unwrap();
    std::fs::write(
        app.join("actions/probe.toml"),
        "name = \"probe\"\ntimeout = \"1m\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"probe\"\ninline_contents = \"./scripts/probe.sh\"\n",
    )
    .unwrap();
    app
}

fn ended(w: &Workflow) -> bool {
    name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
}

/// A step's job's log as text.
fn log_of(api: &str, w: &Workflow, component: &str, kind: &str) -> String {
    let job = the_step(w, component, kind).job_id.clone().unwrap();
    ferry_tests::job_log(api, &job)
        .into_iter()
        .map(|l| l.text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs manual action `name` of install `prod` to its end; its last run, and its log.
fn run_action(api: &str, name: &str) -> (ActionRunReport, String) {
    let _ = ferry(api, &["actions", "run", "prod", name, "--wait"]);
    let runs = cli::<Vec<ActionRunReport>>(api, &["actions", "runs", "prod", name, "--json"]);
    let run = runs[0].clone();
    let (_, log, _) = ferry(api, &["logs", "--workflow", &run.run]);
    (run, log)
}

/// `ferry-runner --data-dir DATA ARGS...` on the host, as the customer runs it; its stdout.
fn on_host(data: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(bin("ferry-runner"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn runner_env() -> Vec<(String, String)> {
    vec![
        (
            "FERRY_BOOTSTRAP_TOKEN".into(),
            "probe-bootstrap-secret".into(),
        ),
        ("FERRY_PROBE_SETTING".into(), "1".into()),
    ]
}

#[test]
fn a_hostile_component_and_action_reach_nothing_of_the_runners_and_the_honest_ones_deploy() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("runner");
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let runner = Proc::runner_env(
        &nats.url,
        "prod",
        &data,
        dir.path().join("runner.log"),
        &[],
        &runner_env(),
    );
    let app = hostile_app(dir.path(), &data, runner.pid());
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 180, "the deploy", ended);
    assert_eq!(name_of(&done.status), "succeeded", "{}", steps_of(&done));
    // What the probes read is there on the host: blocked means out of the job's reach.
    for p in [
        "identity/key.pem",
        "leaf/nats.conf",
        "registry/index.json",
        "state/sandbox",
    ] {
        assert!(data.join(p).exists(), "{p} is not on the host");
    }
    for phase in ["plan", "apply"] {
        let log = log_of(&api, &done, "greeter", phase);
        assert_all_blocked(&format!("greeter's {phase}"), &log);
        assert!(log.contains("sandboxed (bubblewrap) as uid"), "{log}");
    }
    // The honest components deployed as before: Terraform's, and the one reading greeter's.
    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert!(
        install.components["reporter"].outputs["summary"]
            .as_str()
            .is_some_and(|s| s.contains("characters")),
        "{:?}",
        install.components["reporter"]
    );
    assert!(
        !install.components["counter"].outputs.is_empty(),
        "{:?}",
        install.components["counter"]
    );
    let (run, log) = run_action(&api, "probe");
    assert_eq!(name_of(&run.status), "succeeded", "{run:?}");
    assert_all_blocked("the probe action", &log);

    // Nothing a job tried landed on the host, and the customer's controls say so.
    for p in [
        "break-glass/probe-admin.json",
        "break-glass/pins.json",
        "paused",
    ] {
        assert!(!data.join(p).exists(), "a job wrote {p}");
    }
    assert!(!Path::new("/etc/ferry-probe").exists());
    // The data directory is the runner's alone: jobs of another install's runner on this host
    // (whose sandboxes do not hide it) cannot read it either.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the runner's data directory is {mode:o}");
    assert_eq!(on_host(&data, &["break-glass", "list"]).trim(), "no grants");
    // The leaf takes only the runner: a local client without its password is refused.
    let conf = std::fs::read_to_string(data.join("leaf/nats.conf")).unwrap();
    let listen = conf
        .lines()
        .find_map(|l| l.trim().strip_prefix("listen: "))
        .unwrap()
        .trim_matches('"')
        .to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let refused = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(10),
            async_nats::ConnectOptions::new().connect(format!("nats://{listen}")),
        )
        .await
    });
    assert!(
        matches!(refused, Ok(Err(_))),
        "the leaf took a client without the runner's password"
    );
    assert_eq!(
        heard_sandbox(&api),
        Some(ferry_model::RunnerSandbox::BubblewrapJobUser)
    );
    // And at teardown.
    let (code, out, err) = ferry(&api, &["installs", "teardown", "prod", "--wait", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let torn: Workflow = serde_json::from_str(&out).unwrap();
    assert_all_blocked(
        "greeter's teardown",
        &log_of(&api, &torn, "greeter", "teardown"),
    );
}

#[test]
fn a_grant_file_a_job_forges_on_an_unsandboxed_runner_is_refused_and_audited() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("runner");
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner_with(
        &nats.url,
        "prod",
        &data,
        dir.path().join("runner.log"),
        &["--unsandboxed-jobs"],
    );
    let forge = format!(
        "name = \"forge\"\ntimeout = \"30s\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"forge\"\ncommand = \"mkdir -p {d}/break-glass && echo '{{\\\"role\\\":\\\"admin-access\\\",\\\"until_ms\\\":9999999999999,\\\"granted_at_ms\\\":0,\\\"by\\\":\\\"job\\\"}}' > {d}/break-glass/admin-access.json\"\n",
        d = data.display()
    );
    let fix = "name = \"fix\"\ntimeout = \"30s\"\nbreak_glass_role = \"admin-access\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"repair\"\ncommand = \"echo repaired\"\n";
    // The example app, honest but for an action that forges a grant file (as root: on this
    // runner nothing stops it).
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    for (name, toml) in [("forge", forge.as_str()), ("fix", fix)] {
        std::fs::write(app.join(format!("actions/{name}.toml")), toml).unwrap();
    }
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 180, "the deploy", ended);
    assert_eq!(name_of(&done.status), "succeeded", "{}", steps_of(&done));
    // Every job says it runs unsandboxed, and so does the runner's record.
    let log = log_of(&api, &done, "greeter", "plan");
    assert!(log.contains("NOT SANDBOXED"), "{log}");
    assert_eq!(
        heard_sandbox(&api),
        Some(ferry_model::RunnerSandbox::Unsandboxed)
    );
    let (_, table, _) = ferry(&api, &["runners", "list"]);
    assert!(table.contains("UNSANDBOXED"), "{table}");
    let page = std::process::Command::new("curl")
        .args(["-sf", "-H", &ferry_tests::dashboard_cookie(&api)])
        .arg(format!("{api}/ui/installs"))
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&page.stdout);
    assert!(
        html.contains("class=\"badge unsandboxed\"") && html.contains("UNSANDBOXED"),
        "the dashboard's installs page shows it: {html}"
    );

    let (forged, _) = run_action(&api, "forge");
    assert_eq!(name_of(&forged.status), "succeeded", "{forged:?}");
    assert!(data.join("break-glass/admin-access.json").exists());
    let (refused, _) = run_action(&api, "fix");
    assert_eq!(name_of(&refused.status), "failed", "{refused:?}");
    let why = refused.steps[0].message.as_deref().unwrap_or_default();
    assert!(
        why.contains("not made by `ferry-runner break-glass grant`"),
        "{why}"
    );
    let audit = std::fs::read_to_string(data.join("break-glass/audit.log")).unwrap();
    assert!(
        audit.contains("refused the grant file") && audit.contains("for action fix"),
        "{audit}"
    );
    let listed = on_host(&data, &["break-glass", "list"]);
    assert!(listed.contains("admin-access\tREFUSED"), "{listed}");
    // The customer's own grant, made by the command, is honoured.
    on_host(
        &data,
        &["break-glass", "grant", "admin-access", "--for", "1h"],
    );
    let (ran, _) = run_action(&api, "fix");
    assert_eq!(name_of(&ran.status), "succeeded", "{ran:?}");
}

#[test]
fn the_customer_pauses_the_runner_on_its_host_and_resumes_it() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("runner");
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 180, "the deploy", ended);
    assert_eq!(name_of(&done.status), "succeeded", "{}", steps_of(&done));

    assert!(on_host(&data, &["pause"]).contains("paused"));
    let health = || {
        cli::<Vec<RunnerInfo>>(&api, &["runners", "list", "--install", "prod", "--json"])
            .first()
            .map(|r| name_of(&r.health))
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while health() != "paused" {
        assert!(Instant::now() < deadline, "the runner is {}", health());
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, table, _) = ferry(&api, &["installs", "list", "--runner-health", "paused"]);
    assert!(table.contains("prod"), "{table}");
    // An action asked for meanwhile waits, saying for whom.
    let (code, out, err) = ferry(&api, &["actions", "run", "prod", "greeting_check"]);
    assert_eq!(code, 0, "{out}{err}");
    std::thread::sleep(Duration::from_secs(3));
    let runs = cli::<Vec<ActionRunReport>>(
        &api,
        &["actions", "runs", "prod", "greeting_check", "--json"],
    );
    assert!(!ended_status(&runs[0]), "{runs:?}");
    let (_, shown, _) = ferry(&api, &["workflows", "get", &runs[0].run]);
    assert!(shown.contains("customer paused"), "{shown}");

    assert!(on_host(&data, &["resume"]).contains("resumed"));
    let w = wait_until(&api, &runs[0].run, 60, "the action after the resume", ended);
    assert_eq!(name_of(&w.status), "succeeded", "{}", steps_of(&w));
    let audit = std::fs::read_to_string(data.join("break-glass/audit.log")).unwrap();
    assert!(
        audit.contains("runner paused by") && audit.contains("runner resumed by"),
        "{audit}"
    );
}

fn ended_status(r: &ActionRunReport) -> bool {
    matches!(name_of(&r.status).as_str(), "succeeded" | "failed")
}

#[test]
fn a_host_without_a_sandbox_refuses_jobs_and_says_how_to_run_them() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner_with(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--bwrap", "/nonexistent/bwrap"],
    );
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 120, "the deploy", ended);
    assert_eq!(name_of(&done.status), "failed", "{}", steps_of(&done));
    let plan = the_step(&done, "sandbox", "plan");
    let why = plan.message.as_deref().unwrap_or_default();
    assert!(
        why.contains("no sandbox for jobs on this host") && why.contains("--unsandboxed-jobs"),
        "{why}"
    );
    assert_eq!(
        heard_sandbox(&api),
        Some(ferry_model::RunnerSandbox::Unavailable)
    );
}

/// How the install's runner says it runs jobs, once it has been heard from.
fn heard_sandbox(api: &str) -> Option<ferry_model::RunnerSandbox> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runners = cli::<Vec<RunnerInfo>>(api, &["runners", "list", "--json"]);
        if let Some(r) = runners.first() {
            return r.runner.sandbox;
        }
        assert!(Instant::now() < deadline, "the runner was never heard");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// In a network namespace of the test's, a stand-in for the instance metadata service answers on
/// 169.254.169.254 and the runner host's setup (`deploy/runner/ferry-jobs-firewall`) is applied:
/// the runner's user reaches the service, a job (its plan, as the job's user) is refused, and
/// the same request as the job's user went through before the firewall.
#[test]
fn a_job_cannot_reach_the_instance_metadata_service_that_the_runner_reaches() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = ferry_tests::netns::Netns::create();
    ns.add_address("169.254.169.254/32");
    let leaf_port: u16 = nats.leaf_url.rsplit(':').next().unwrap().parse().unwrap();
    ns.relay(leaf_port);
    let site = dir.path().join("imds");
    std::fs::create_dir_all(site.join("latest/meta-data")).unwrap();
    std::fs::write(site.join("latest/meta-data/instance-id"), "i-standin").unwrap();
    let mut server = ns.command("python3");
    server
        .args(["-m", "http.server", "80", "--bind", "169.254.169.254"])
        .current_dir(&site);
    let _imds = Proc::spawn_command(server, dir.path().join("imds.log"));
    let fetch = |as_job: bool| {
        let mut c = ns.command("setpriv");
        if as_job {
            c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"]);
        }
        c.args(["curl", "-s", "--max-time", "3"])
            .arg("http://169.254.169.254/latest/meta-data/instance-id");
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while fetch(false) != "i-standin" {
        assert!(Instant::now() < deadline, "the stand-in never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        fetch(true),
        "i-standin",
        "without the firewall the job's user reaches it"
    );
    let firewall = ns
        .command("sh")
        .arg(repo_root().join("deploy/runner/ferry-jobs-firewall"))
        .arg("65534")
        .output()
        .unwrap();
    assert!(firewall.status.success(), "{firewall:?}");
    assert_eq!(
        fetch(false),
        "i-standin",
        "the runner's user still reaches it"
    );
    assert_eq!(fetch(true), "", "the job's user is refused");

    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner_in(
        &ns,
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--job-user", "65534:65534"],
    );
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    let plan = app.join("components/src/greeter/plan.sh");
    let script = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(
        &plan,
        script.replace(
            "set -eu\n",
            "set -eu\nif curl -s --max-time 3 http://169.254.169.254/latest/meta-data/instance-id; then echo 'imds: REACHED'; else echo 'imds: blocked'; fi\n",
        ),
    )
    .unwrap();
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 180, "the deploy", ended);
    assert_eq!(name_of(&done.status), "succeeded", "{}", steps_of(&done));
    let log = log_of(&api, &done, "greeter", "plan");
    assert!(log.contains("imds: blocked"), "{log}");
    assert!(
        !log.contains("i-standin") && !log.contains("REACHED"),
        "{log}"
    );
}

/// The runner's memory cgroup directory (the test's own: the runner it starts shares it), where
/// jobs' cgroups are made.
fn memory_cgroup() -> Option<std::path::PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, c, path) = (p.next()?, p.next()?, p.next()?);
        c.split(',').any(|c| c == "memory").then_some(path)
    })?;
    Some(Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')))
}

/// A job that takes more memory than `--job-memory-mb` is killed by the kernel within its own
/// cgroup, and its step says why; the runner and the next job go on; no cgroup of the job's is
/// left.
#[test]
fn a_job_past_its_memory_limit_is_killed_and_says_so_and_the_next_runs() {
    let Some(base) = memory_cgroup() else {
        panic!("this host has no cgroup v1 memory controller: /proc/self/cgroup names none");
    };
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner_with(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--job-memory-mb", "64"],
    );
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    // A line with no end, held whole by `tail`: 300 MiB.
    std::fs::write(
        app.join("actions/hog.toml"),
        "name = \"hog\"\ntimeout = \"1m\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"hog\"\ncommand = \"head -c 300M /dev/zero | tail -n 1 > /dev/null && echo survived\"\n",
    )
    .unwrap();
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 120, "the deploy", ended);
    assert_eq!(name_of(&done.status), "succeeded", "{}", steps_of(&done));

    let (run, log) = run_action(&api, "hog");
    assert_eq!(name_of(&run.status), "failed", "{log}");
    let w = ferry_tests::typed::workflow(&api, &run.run).unwrap();
    let why = w
        .steps
        .iter()
        .filter_map(|s| s.message.clone())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        why.contains("killed: the job ran out of memory (its limit is 64 MiB"),
        "{why}\n{log}"
    );
    assert!(!log.contains("survived"), "{log}");
    // The runner goes on: the next job runs, and nothing of the killed one's is left.
    let (run, log) = run_action(&api, "greeting_check");
    assert_eq!(name_of(&run.status), "succeeded", "{log}");
    let left: Vec<String> = std::fs::read_dir(&base)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ferry-job-") && (n.contains(&run.run) || n.contains(&w.id)))
        .collect();
    assert!(left.is_empty(), "cgroups left: {left:?}");
}
