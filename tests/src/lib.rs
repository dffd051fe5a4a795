//! The test harness: real processes on free loopback ports, nothing mocked.
//!
//! * [`NatsServer`] starts the pinned nats-server (from `.tools/bin`, put there by `nats/install`, or
//!   from `PATH`) with JetStream in a temporary directory, and kills it when dropped. It is a real
//!   hub: TLS with client certificates from its own CA, the services' and admin users, and the
//!   auth callout (`ferry_pki::hub`), so every test runs with the permissions production has.
//! * [`bin`] finds the workspace's built binaries (`ferry`, `ferry-server`, `ferry-runner`) in the
//!   target directory the tests run from.
//! * [`fixtures`] makes jobs as the scheduler does, for tests that drive it in-process.

pub mod aws;
pub mod browser;
mod cluster;
pub mod fixtures;
mod hub;
pub mod k8s;
mod link;
pub mod netns;
mod registry;
mod s3;
mod sse;
pub mod typed;

pub use cluster::{ClusterNode, NatsCluster};
pub use hub::{NatsServer, ORG, hub_dir, issue_install, leaf_url};
pub use link::Link;
pub use registry::{EcrCall, EcrStandIn, RegistryServer};
pub use s3::S3Store;
pub use sse::{Sse, sse_curl, sse_events};

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A port nothing listens on right now, released before use. Taken below the kernel's range
/// of ephemeral ports: tests make outgoing connections by the hundred (each takes an ephemeral
/// port), and a port the OS picked from that range was seen taken by one of them between its
/// check here and a server's bind ("address already in use").
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    if low > 12_000 {
        let (from, span) = (10_000u64, u64::from(low) - 10_000);
        // Never the same port twice in one process: a port handed out is not bound yet.
        static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
        for attempt in 0..200u32 {
            // Each RandomState has keys of its own: a new random pick each time.
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            h.write_u32(attempt);
            let port = (from + h.finish() % span) as u16;
            let Ok(mut given) = GIVEN.lock() else { break };
            if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
                given.push(port);
                return port;
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// Path of the nats-server binary: `.tools/bin/nats-server` or the first on `PATH`.
pub fn nats_server_bin() -> PathBuf {
    let local = repo_root().join(".tools/bin/nats-server");
    if local.is_file() {
        return local;
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join("nats-server");
            if p.is_file() {
                return p;
            }
        }
    }
    panic!("nats-server not found: run nats/install (it puts the pinned version in .tools/bin)");
}

/// A built binary of this workspace, next to the test executable's parent directory
/// (`target/<profile>/deps/test-*` → `target/<profile>/<name>`).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = dir.join(name);
    assert!(
        p.is_file(),
        "{} is not built: run `cargo build --workspace` first",
        p.display()
    );
    p
}

/// A running `ferry dev` (without `--exit-when-deployed`), stopped with SIGTERM when dropped.
pub struct FerryDev {
    pub api: String,
    pub data_dir: tempfile::TempDir,
    child: Child,
    pub output: PathBuf,
}

impl FerryDev {
    /// Starts `ferry dev` for `app` on free ports and waits until install `dev` has finished its
    /// first workflow (deployed or failed).
    pub fn start(app: &Path, extra: &[&str]) -> FerryDev {
        let data_dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let output = data_dir.path().join("ferry-dev.out");
        let out = std::fs::File::create(&output).expect("output file");
        let child = Command::new(bin("ferry"))
            .current_dir(repo_root())
            .args([
                "dev",
                "--http-addr",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(data_dir.path().join("dev"))
            .arg("--app")
            .arg(app)
            .args(extra)
            .stdout(out.try_clone().expect("clone"))
            .stderr(out)
            .spawn()
            .expect("spawn ferry dev");
        let dev = FerryDev {
            api: format!("http://127.0.0.1:{port}"),
            data_dir,
            child,
            output,
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let text = std::fs::read_to_string(&dev.output).unwrap_or_default();
            if text.contains("Ferry is running") || text.contains("failed after") {
                let token = dev.data_dir.path().join("dev").join("admin.token");
                if let Ok(t) = std::fs::read_to_string(token) {
                    register(&dev.api, t.trim().to_string());
                }
                return dev;
            }
            assert!(
                Instant::now() < deadline,
                "ferry dev did not finish deploying:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs the `ferry` CLI against this instance; returns (exit code, stdout, stderr).
    pub fn cli(&self, args: &[&str]) -> (i32, String, String) {
        ferry(&self.api, args)
    }

    /// The `ferry dev` process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What a failing test shows: `ferry dev`'s output, then the last lines of each log its
    /// processes wrote (the server's, each install's runner's).
    pub fn logs(&self) -> String {
        let mut out = std::fs::read_to_string(&self.output).unwrap_or_default();
        let mut logs: Vec<PathBuf> = std::fs::read_dir(self.data_dir.path().join("dev"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        for log in logs {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(60)..];
            out.push_str(&format!(
                "\n--- {} (last {} lines)\n",
                log.display(),
                tail.len()
            ));
            out.push_str(&tail.join("\n"));
        }
        out
    }
}

impl Drop for FerryDev {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Admin tokens of the hubs and APIs tests started, by NATS URL and by API URL.
fn tokens() -> &'static std::sync::Mutex<std::collections::HashMap<String, String>> {
    static TOKENS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, String>>,
    > = std::sync::OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

/// The admin token of the API at `api` (from `ferry-server init` or `ferry dev`), if a test
/// started it.
pub fn token_for(api: &str) -> Option<String> {
    tokens().lock().ok()?.get(api).cloned()
}

/// `ferry-server --nats-url URL --hub-dir DIR` for the hub test started at `nats_url`; add the
/// rest of the arguments.
pub fn ferry_server(nats_url: &str) -> Command {
    let mut cmd = Command::new(bin("ferry-server"));
    cmd.current_dir(repo_root())
        .args(["--nats-url", nats_url, "--hub-dir"])
        .arg(hub_dir(nats_url));
    cmd
}

/// The hub's first admin token: `ferry-server init` once per hub, then the same token.
fn hub_token(nats_url: &str) -> String {
    if let Some(t) = tokens().lock().ok().and_then(|m| m.get(nats_url).cloned()) {
        return t;
    }
    let out = ferry_server(nats_url)
        .arg("init")
        .output()
        .expect("run ferry-server init");
    assert!(
        out.status.success(),
        "ferry-server init failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if let Ok(mut m) = tokens().lock() {
        m.insert(nats_url.to_string(), token.clone());
    }
    token
}

fn register(api: &str, token: String) {
    if let Ok(mut m) = tokens().lock() {
        m.insert(api.to_string(), token);
    }
}

/// Runs the `ferry` CLI with `--api` (and the API's admin token); returns (exit code, stdout,
/// stderr).
pub fn ferry(api: &str, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(bin("ferry"));
    // Hermetic: no token but the one the test's hub gave (not a developer's `ferry login`).
    cmd.current_dir(repo_root())
        .env_remove("FERRY_TOKEN")
        .env("XDG_CONFIG_HOME", "/nonexistent/ferry-tests");
    if let Some(t) = token_for(api) {
        cmd.env("FERRY_TOKEN", t);
    }
    let out = cmd
        .arg("--api")
        .arg(api)
        .args(args)
        .output()
        .expect("run ferry");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A job's log as `ferry logs --job JOB --json` prints it: every line, typed.
pub fn job_log(api: &str, job: &str) -> Vec<ferry_model::LogEntry> {
    let (code, out, err) = ferry(api, &["logs", "--job", job, "--json"]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `ferry installs create --app hello --name NAME --approve-all` plus `extra` (`--wait`, `--json`);
/// returns the CLI's (exit code, stdout, stderr).
pub fn create_hello(api: &str, name: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "installs",
        "create",
        "--app",
        "hello",
        "--name",
        name,
        "--approve-all",
    ];
    args.extend_from_slice(extra);
    ferry(api, &args)
}

/// The example app copied into `dir/hello`, with `prelude` run first by the greeter's apply
/// (after its `set -eu`): a slow or chatty job to watch.
pub fn hello_with_greeter_prelude(dir: &Path, prelude: &str) -> PathBuf {
    let app = dir.join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let apply = app.join("components/src/greeter/apply.sh");
    let text = std::fs::read_to_string(&apply).expect("the greeter's apply.sh");
    std::fs::write(
        &apply,
        text.replacen("set -eu\n", &format!("set -eu\n{prelude}\n"), 1),
    )
    .expect("write apply.sh");
    app
}

/// Copies a directory tree (to make variants of the example app).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// True if something accepts connections on the port.
pub fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// A runner's arguments for `install` of the default org, in leaf mode, with a certificate from
/// the hub's CA (issued into `<data_dir>/identity` on first use) and the repository's helm and
/// kubectl.
fn runner_args(nats_url: &str, install: &str, data_dir: &Path, extra: &[&str]) -> Vec<String> {
    let identity = data_dir.join("identity");
    if !ferry_pki::InstallFiles::new(&identity).exists() {
        issue_install(&hub_dir(nats_url), ORG, install, &identity);
    }
    // Leaf mode, the default: the runner's own nats-server connects to the hub's leafnode port.
    let mut args: Vec<String> = vec![
        "--nats-url".into(),
        leaf_url(nats_url),
        "--nats-server".into(),
        nats_server_bin().to_string_lossy().into_owned(),
        "--install".into(),
        install.into(),
        "--data-dir".into(),
        data_dir.to_string_lossy().into_owned(),
    ];
    // helm and kubectl as scripts/install-helm-kubectl puts them, for Kubernetes components.
    for t in ["helm", "kubectl"] {
        let p = repo_root().join(".tools/bin").join(t);
        if p.is_file() {
            args.push(format!("--{t}"));
            args.push(p.display().to_string());
        }
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// A Ferry process (`ferry-server`, `ferry-runner`) with its output in a log file; SIGKILLed on drop.
pub struct Proc {
    child: Child,
    pub log: PathBuf,
}

impl Proc {
    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn spawn(binary: &str, args: &[&str], log: PathBuf) -> Proc {
        Proc::spawn_env(binary, args, &[], log)
    }

    /// [`Proc::spawn`] with environment variables set.
    pub fn spawn_env(binary: &str, args: &[&str], env: &[(String, String)], log: PathBuf) -> Proc {
        let out = std::fs::File::create(&log).expect("log file");
        let child = Command::new(bin(binary))
            .current_dir(repo_root())
            .args(args)
            .envs(env.iter().cloned())
            .stdout(out.try_clone().expect("clone"))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {binary}: {e}"));
        Proc { child, log }
    }

    /// `ferry-server` with every service, on a free port; waits for /healthz. Returns it and its API URL.
    pub fn server(nats_url: &str, log: PathBuf) -> (Proc, String) {
        Proc::server_with(nats_url, log, &[])
    }

    /// [`Proc::server`] with more arguments (`--job-lease-secs 3`, `--services scheduler`).
    pub fn server_with(nats_url: &str, log: PathBuf, extra: &[&str]) -> (Proc, String) {
        Proc::server_env(nats_url, log, extra, &[])
    }

    /// [`Proc::server_with`] with environment variables set (AWS credentials, for one).
    pub fn server_env(
        nats_url: &str,
        log: PathBuf,
        extra: &[&str],
        env: &[(String, String)],
    ) -> (Proc, String) {
        // A port handed out is free, not reserved: another test's process may bind it before
        // this server does (its nats-server, once, and the CLI then spoke HTTP to NATS). The
        // server then exits, and it starts again on another port.
        for _ in 0..4 {
            if let Some(started) = Proc::try_server_on(nats_url, &log, extra, env, free_port()) {
                return started;
            }
        }
        panic!(
            "ferry-server found no free port:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// [`Proc::server_env`] on a given port (to restart a server where its clients look for it).
    pub fn server_on(
        nats_url: &str,
        log: PathBuf,
        extra: &[&str],
        env: &[(String, String)],
        port: u16,
    ) -> (Proc, String) {
        Proc::try_server_on(nats_url, &log, extra, env, port).unwrap_or_else(|| {
            panic!(
                "ferry-server could not listen on {port}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        })
    }

    /// [`Proc::server_on`], or `None` when the server could not listen there: it says it
    /// listens (its log), not merely that something answers on the port.
    fn try_server_on(
        nats_url: &str,
        log: &Path,
        extra: &[&str],
        env: &[(String, String)],
        port: u16,
    ) -> Option<(Proc, String)> {
        let addr = format!("127.0.0.1:{port}");
        let hub = hub_dir(nats_url).to_string_lossy().to_string();
        let mut args = vec![
            "--nats-url",
            nats_url,
            "--http-addr",
            &addr,
            "--hub-dir",
            &hub,
        ];
        args.extend_from_slice(extra);
        let mut p = Proc::spawn_env("ferry-server", &args, env, log.to_path_buf());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let said = std::fs::read_to_string(&p.log).unwrap_or_default();
            if said.contains("ferry-server listening") && listening(port) {
                break;
            }
            if matches!(p.child.try_wait(), Ok(Some(_))) {
                return None;
            }
            assert!(
                Instant::now() < deadline,
                "ferry-server did not start:\n{said}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        let api = format!("http://127.0.0.1:{port}");
        register(&api, hub_token(nats_url));
        Some((p, api))
    }

    /// A runner for `install` of the default org, in leaf mode (its own nats-server, whose one
    /// remote is the hub's leafnode port), with a certificate from the hub's CA (issued into
    /// `<data_dir>/identity` on first use).
    pub fn runner(nats_url: &str, install: &str, data_dir: &Path, log: PathBuf) -> Proc {
        Proc::runner_with(nats_url, install, data_dir, log, &[])
    }

    /// [`Proc::runner`] with more arguments (`--cancel-grace-secs 1`).
    pub fn runner_with(
        nats_url: &str,
        install: &str,
        data_dir: &Path,
        log: PathBuf,
        extra: &[&str],
    ) -> Proc {
        Proc::runner_env(nats_url, install, data_dir, log, extra, &[])
    }

    /// [`Proc::runner_with`] with environment variables set (AWS credentials, for one).
    pub fn runner_env(
        nats_url: &str,
        install: &str,
        data_dir: &Path,
        log: PathBuf,
        extra: &[&str],
        env: &[(String, String)],
    ) -> Proc {
        let args = runner_args(nats_url, install, data_dir, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Proc::spawn_env("ferry-runner", &args, env, log)
    }

    /// [`Proc::runner_with`] inside network namespace `netns` (its hub relayed there:
    /// [`crate::netns::Netns::relay`]).
    pub fn runner_in(
        netns: &crate::netns::Netns,
        nats_url: &str,
        install: &str,
        data_dir: &Path,
        log: PathBuf,
        extra: &[&str],
    ) -> Proc {
        let mut cmd = netns.command(&bin("ferry-runner").to_string_lossy());
        cmd.args(runner_args(nats_url, install, data_dir, extra));
        Proc::spawn_command(cmd, log)
    }

    /// `cmd` with its output in `log`, from the repository's root unless it names another.
    pub fn spawn_command(mut cmd: Command, log: PathBuf) -> Proc {
        let out = std::fs::File::create(&log).expect("log file");
        if cmd.get_current_dir().is_none() {
            cmd.current_dir(repo_root());
        }
        let child = cmd
            .stdout(out.try_clone().expect("clone"))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        Proc { child, log }
    }

    /// SIGTERM, then waits up to `within` for the process to exit by itself; its exit status, or
    /// `None` if it was still running.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Waits up to `within` for the process to exit by itself; its exit status, or `None`.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// SIGKILL: no chance to clean up, as in a crash.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Syncs `app` as app `hello`.
pub fn sync_hello(api: &str, app: &Path) {
    let (code, out, err) = ferry(
        api,
        &[
            "apps",
            "sync",
            app.to_str().unwrap_or_default(),
            "--name",
            "hello",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
}

/// Waits until the `kind` step of `component` runs in `workflow`; returns its job's id.
pub fn running_job(api: &str, workflow: &str, component: &str, kind: &str) -> String {
    let what = format!("{component}'s {kind} to run");
    let w = typed::wait_until(api, workflow, 90, &what, |w| {
        typed::step_is(w, component, kind, "running")
    });
    typed::the_step(&w, component, kind)
        .job_id
        .clone()
        .unwrap_or_else(|| panic!("a running {kind} step has a job: {}", typed::steps_of(&w)))
}

/// Syncs `app` as app `hello` and creates install `install` (approve-all); returns its first
/// workflow's id.
pub fn sync_and_create(api: &str, app: &Path, install: &str) -> String {
    sync_hello(api, app);
    let created: ferry_model::api::CreatedInstall = typed::cli(
        api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            install,
            "--approve-all",
            "--json",
        ],
    );
    created.workflow_id
}

/// A `ferry-server` with every service and a runner for install `prod` (data and logs in `dir`);
/// returns both and the API URL.
pub fn server_and_runner(nats: &NatsServer, dir: &Path) -> (Proc, Proc, String) {
    let (server, api) = Proc::server(&nats.url, dir.join("server.log"));
    let runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.join("runner"),
        dir.join("runner.log"),
    );
    (server, runner, api)
}

/// [`server_and_runner`] with the example app copied into `dir/hello`, synced, and install
/// `prod` created (approve-all) and provisioned: the server, the runner, the API URL and the
/// app's directory (to change and sync again).
pub fn provisioned_hello(nats: &NatsServer, dir: &Path) -> (Proc, Proc, String, PathBuf) {
    let (server, runner, api) = server_and_runner(nats, dir);
    let app = dir.join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    sync_hello(&api, &app);
    let (code, out, err) = create_hello(&api, "prod", &["--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    (server, runner, api, app)
}

/// A dashboard session for the API's admin token, signed in through the sign-in form: the
/// `cookie:` header that carries it.
pub fn dashboard_cookie(api: &str) -> String {
    dashboard_cookie_for(api, &token_for(api).expect("the API's admin token"))
}

/// [`dashboard_cookie`] for `token`.
pub fn dashboard_cookie_for(api: &str, token: &str) -> String {
    let out = Command::new("curl")
        .args([
            "-s",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "-H",
            "cookie: ferry_login=n0nce",
        ])
        .args([
            "--data-urlencode",
            &format!("token={token}"),
            "-d",
            "csrf=n0nce",
        ])
        .arg(format!("{api}/ui/login"))
        .output()
        .expect("run curl");
    let headers = String::from_utf8_lossy(&out.stdout).to_lowercase();
    let value = headers
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: ferry_session="))
        .and_then(|v| v.split(';').next())
        .unwrap_or_else(|| panic!("no session from signing in: {headers}"))
        .to_string();
    format!("cookie: ferry_session={value}")
}

/// A runner's leaf as root on the runner's host finds it in its configuration (`conf`,
/// `<data>/leaf/nats.conf`, readable by the runner's user only): its local URL, and the options
/// that connect as its one local user. Nothing else on the host (a job) can.
pub fn leaf_access(conf: &Path) -> Option<(String, async_nats::ConnectOptions)> {
    let text = std::fs::read_to_string(conf).ok()?;
    let listen = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("listen: "))?
        .trim_matches('"')
        .to_string();
    let password = text
        .split("password: \"")
        .nth(1)?
        .split('"')
        .next()?
        .to_string();
    Some((
        format!("nats://{listen}"),
        async_nats::ConnectOptions::with_user_and_password("runner".into(), password),
    ))
}
