//! `release`: one release over N installs of an app with a no-op script component, against the
//! time of one install's deploy in the same run. The control plane is the real `ferry-server`
//! (every service, beside this binary: build it with `--release`); each install's runner is the
//! real runner (`ferry_runner::Runner`, direct mode, its own certificate, admitted by the auth
//! callout), N of them in this process, each starting the real plugin process per job (this
//! binary answers `plugin`, as `ferry-runner` does). Reported: the deploy's time, the release's
//! (create to succeeded), their ratio, jobs run, and the CPU seconds the hub nats-server and
//! `ferry-server` spent during the release, and what they spend in 10 s with the fleet idle; then
//! the same run's raw-NATS baseline (the messages the release stored, stored raw: `raw_writes`)
//! and the release's time and control-plane CPU as multiples of it, which the machine's speed
//! of the moment does not move as it moves the bare figures.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use serde_json::json;

use crate::http;

const ORG: &str = ferry_model::DEFAULT_ORG;
pub(crate) const APP: &str = "bench";

/// The simulated hosts' disks: `dir`, or a tmpfs when there is one (`--hosts-dir`'s help).
fn hosts(dir: Option<&Path>) -> Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    Ok(match dir {
        Some(d) => tempfile::tempdir_in(d)?,
        None if shm.is_dir() => tempfile::tempdir_in(shm)?,
        None => tempfile::tempdir()?,
    })
}

/// The release's line: its time against one deploy's, and the hub's and server's CPU.
fn print_times(n: usize, waves: usize, one: Duration, all: Duration, (hub, server): (f64, f64)) {
    println!(
        "{:>8} {:>6} {:>12} {:>12} {:>10} {:>12} {:>14}",
        "installs", "waves", "deploy s", "release s", "rel/dep", "hub cpu s", "server cpu s"
    );
    println!(
        "{n:>8} {waves:>6} {:>12.2} {:>12.2} {:>10.1} {hub:>12.1} {server:>14.1}",
        one.as_secs_f64(),
        all.as_secs_f64(),
        all.as_secs_f64() / one.as_secs_f64(),
    );
}

pub async fn run(
    hub: &ferry_tests::NatsServer,
    n: usize,
    waves: &str,
    hosts_dir: Option<&Path>,
) -> Result<()> {
    let work = tempfile::tempdir()?;
    let hosts = hosts(hosts_dir)?;
    let (server, addr, token) = control_plane(hub, work.path(), &[]).await?;
    let app = work.path().join("app");
    write_app(&app, 1)?;
    sync(addr, &token, &app).await?;
    let t = Instant::now();
    create_installs(addr, &token, n).await?;
    let _runners = runners(hub, hosts.path(), n, false).await?;
    wait_active(addr, &token, n).await?;
    println!(
        "{n} installs created and provisioned in {:.1} s (each runner in this process, direct mode; their data directories in {}: --hosts-dir)",
        t.elapsed().as_secs_f64(),
        hosts.path().display()
    );

    // One install's deploy of a new version, alone.
    write_app(&app, 2)?;
    sync(addr, &token, &app).await?;
    let t = Instant::now();
    let path = format!("/v1/installs/{}/deploy", name(0));
    let d = http::json(addr, "POST", &path, &token, Some(&json!({}))).await?;
    let wf = d["workflow_id"]
        .as_str()
        .context("a workflow id")?
        .to_string();
    wait_workflow(addr, &token, &wf).await?;
    let one = t.elapsed();

    print_idle(hub.pid(), server.id()).await;
    let cpu = |pid| cpu_secs(pid).unwrap_or(0.0);

    // The next version released over every install.
    write_app(&app, 3)?;
    sync(addr, &token, &app).await?;
    let (hub0, server0) = (cpu(hub.pid()), cpu(server.id()));
    let (own0, children0) = (cpu(std::process::id()), children_cpu_secs().unwrap_or(0.0));
    let admin = async_nats::jetstream::new(hub.admin().await);
    let (written0, bytes0) = written(&admin).await?;
    let t = now_ms();
    let body = json!({ "app": APP, "waves": waves, "approve_all": true });
    let r = http::json(addr, "POST", "/v1/releases", &token, Some(&body)).await?;
    let id = r["id"].as_str().context("a release id")?.to_string();
    let done = wait_release(addr, &token, &id).await?;
    // From the request to its last wave passed, by the scheduler's clock (this machine's): the
    // wait above looks only twice a second, as a user watching would.
    let passed = done["waves"].as_array().into_iter().flatten();
    let end = passed.filter_map(|w| w["passed_ms"].as_u64()).max();
    let all = Duration::from_millis(end.context("a wave's passed_ms")?.saturating_sub(t));
    let (hub1, server1) = (cpu(hub.pid()), cpu(server.id()));
    let waves_done = done["waves"].as_array().map_or(0, Vec::len);
    print_times(n, waves_done, one, all, (hub1 - hub0, server1 - server0));
    let (written1, bytes1) = written(&admin).await?;
    print_written(&written0, &written1, n);

    // Where the rest of the machine went: the runners (in this process) and their plugins.
    println!(
        "runners CPU {:.1} s, their plugin processes {:.1} s; the machine had {:.1} CPU s ({} cores)",
        cpu(std::process::id()) - own0,
        children_cpu_secs().unwrap_or(0.0) - children0,
        all.as_secs_f64() * cores(),
        cores()
    );
    let release = Spent {
        took: all,
        control_plane: (hub1 - hub0) + (server1 - server0),
        stored: written1
            .iter()
            .map(|(name, last)| last - written0.get(name).copied().unwrap_or(0))
            .sum(),
        bytes: bytes1.saturating_sub(bytes0),
    };
    print_baseline(hub, &release).await
}

/// What the connected fleet costs the hub and the server while nothing is deployed (heartbeats,
/// metrics), over 10 s.
async fn print_idle(hub: u32, server: u32) {
    let cpu = |pid| cpu_secs(pid).unwrap_or(0.0);
    let (hub0, server0) = (cpu(hub), cpu(server));
    tokio::time::sleep(Duration::from_secs(10)).await;
    println!(
        "idle for 10 s: hub CPU {:.2} s, server CPU {:.2} s",
        cpu(hub) - hub0,
        cpu(server) - server0
    );
}

/// What a release took and stored, to set beside the raw baseline.
struct Spent {
    took: Duration,
    /// Hub and server CPU seconds.
    control_plane: f64,
    /// Messages stored, and their bytes.
    stored: u64,
    bytes: u64,
}

/// The baseline (the hub storing as many messages, raw) and the release as multiples of it.
async fn print_baseline(hub: &ferry_tests::NatsServer, release: &Spent) -> Result<()> {
    let stored = release.stored;
    let size = (release.bytes / stored.max(1)).clamp(64, 64 * 1024) as usize;
    let (raw, raw_hub) = raw_writes(hub, stored, size).await?;
    println!(
        "raw NATS, same run: {stored} messages of {size} B stored by {RAW_WRITERS} writers in {:.2} s, hub CPU {:.1} s; \
         the release took {:.1}x that time and its control plane (hub + server) {:.1}x that CPU",
        raw.as_secs_f64(),
        raw_hub,
        release.took.as_secs_f64() / raw.as_secs_f64(),
        release.control_plane / raw_hub.max(0.01),
    );
    Ok(())
}

pub(crate) fn name(i: usize) -> String {
    format!("b{i:05}")
}

/// Installs `b00000`.. of the bench app, approve-all, created 32 at a time.
pub(crate) async fn create_installs(addr: SocketAddr, token: &str, n: usize) -> Result<()> {
    futures_util::stream::iter(0..n)
        .map(|i| async move {
            let body = json!({ "app": APP, "name": name(i), "approve_all": true });
            http::json(addr, "POST", "/v1/installs", token, Some(&body)).await
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    Ok(())
}

/// A sandbox and one component, both scripts that do nothing; `version` changes the component,
/// so each sync is a new config version whose deploy has one change.
pub(crate) fn write_app(dir: &Path, version: u32) -> Result<()> {
    let files = [
        (
            "metadata.toml",
            "version = \"v1\"\ndisplay_name = \"Bench\"\n".to_string(),
        ),
        (
            "sandbox.toml",
            "type = \"script\"\ndirectory = \"sandbox\"\n".to_string(),
        ),
        (
            "sandbox/apply.sh",
            "#!/bin/sh\necho '{}' > \"$FERRY_OUTPUTS\"\n".to_string(),
        ),
        (
            "components/noop.toml",
            "name = \"noop\"\ntype = \"script\"\ndirectory = \"components/src/noop\"\n".to_string(),
        ),
        (
            "components/src/noop/apply.sh",
            format!("#!/bin/sh\n# version {version}\necho '{{}}' > \"$FERRY_OUTPUTS\"\n"),
        ),
    ];
    for (path, text) in files {
        let p = dir.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, text)?;
    }
    Ok(())
}

/// `ferry-server` with every service on a free port, and its first admin token.
pub(crate) async fn control_plane(
    hub: &ferry_tests::NatsServer,
    dir: &Path,
    extra: &[&str],
) -> Result<(KillOnDrop, SocketAddr, String)> {
    let bin = beside("ferry-server")?;
    let hub_dir = hub.hub.dir.display().to_string();
    let token = std::process::Command::new(&bin)
        .args(["--nats-url", &hub.url, "--hub-dir", &hub_dir, "init"])
        .output()?;
    if !token.status.success() {
        bail!(
            "ferry-server init: {}",
            String::from_utf8_lossy(&token.stderr)
        );
    }
    let token = String::from_utf8_lossy(&token.stdout).trim().to_string();
    let addr: SocketAddr = format!("127.0.0.1:{}", ferry_tests::free_port()).parse()?;
    let child = std::process::Command::new(&bin)
        .args(["--nats-url", &hub.url, "--hub-dir", &hub_dir])
        .args(["--http-addr", &addr.to_string()])
        .args(extra)
        .stdout(std::fs::File::create(dir.join("server.log"))?)
        .stderr(std::fs::File::create(dir.join("server.err"))?)
        .spawn()?;
    let server = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        if Instant::now() > deadline {
            bail!("ferry-server did not start; see {}", dir.display());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((server, addr, token))
}

/// A binary built beside this one.
fn beside(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let p = exe.with_file_name(name);
    if !p.is_file() {
        bail!(
            "{} is not built: cargo build --release -p ferry-server -p ferry-cli",
            p.display()
        );
    }
    Ok(p)
}

pub(crate) async fn sync(addr: SocketAddr, token: &str, app: &Path) -> Result<()> {
    let out = tokio::process::Command::new(beside("ferry")?)
        .env("FERRY_TOKEN", token)
        .env("XDG_CONFIG_HOME", "/nonexistent/ferry-loadtest")
        .args(["--api", &format!("http://{addr}"), "apps", "sync"])
        .arg(app)
        .args(["--name", APP])
        .output()
        .await?;
    if !out.status.success() {
        bail!("ferry apps sync: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Each install's runner, in this process, with its certificate: connected directly, or
/// (`leaf`) through a leaf nats-server of its own, as `ferry-runner` runs by default.
pub(crate) async fn runners(
    hub: &ferry_tests::NatsServer,
    dir: &Path,
    n: usize,
    leaf: bool,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let binary = ferry_runner::leaf::find_binary(Some(&ferry_tests::nats_server_bin()))?;
    // Jobs sandboxed as `ferry-runner` sandboxes them on this host: the release's time includes
    // each job's sandbox (FERRY_LOADTEST_UNSANDBOXED=1 measures without, for the difference).
    let sandbox = ferry_runner::sandbox::Sandbox::detect(&ferry_runner::sandbox::Settings {
        unsandboxed: std::env::var_os("FERRY_LOADTEST_UNSANDBOXED").is_some(),
        ..Default::default()
    })
    .map_err(anyhow::Error::msg)?;
    println!("jobs: {}", sandbox.describe());
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let home = dir.join(name(i));
        let identity = home.join("identity");
        let creds = ferry_tests::issue_install(&hub.hub.dir, ORG, &name(i), &identity);
        let data_dir = std::path::absolute(home.join("data"))?;
        let (nats_url, mode) = match leaf {
            false => (hub.url.clone(), ferry_runner::runner::Mode::Direct),
            true => (
                hub.leaf_url.clone(),
                ferry_runner::runner::Mode::Leaf(ferry_runner::leaf::LeafConfig {
                    binary: binary.clone(),
                    hub: hub.leaf_url.clone(),
                    install: name(i),
                    dir: data_dir.join("leaf"),
                    identity: ferry_pki::InstallFiles::new(&identity),
                }),
            ),
        };
        let cfg = ferry_runner::runner::RunnerConfig {
            nats_url,
            credentials: creds,
            identity: Some(ferry_pki::InstallFiles::new(&identity)),
            org: ORG.into(),
            install: name(i),
            data_dir: data_dir.clone(),
            max_jobs: 4,
            idle_poll: Duration::from_secs(30),
            cancel_grace: Duration::from_secs(10),
            drain: Duration::from_secs(1),
            mode,
            give_up_when_refused: None,
            tools: ferry_runner::plugin::Tools {
                helm: None,
                kubectl: None,
                kubeconfig: None,
                registry: None,
                layout: Some(data_dir.join("registry")),
            },
            registry: None,
            break_glass_host_only: false,
            metrics_interval: Duration::from_secs(15),
            stack: None,
            sandbox: sandbox.clone(),
            job_env: vec![],
            hidden: vec![],
            install_dir: None,
        };
        let runner = Arc::new(ferry_runner::runner::Runner::connect(cfg).await?);
        tasks.push(tokio::spawn(async move {
            if let Err(e) = runner.run().await {
                eprintln!("a runner stopped: {e}");
            }
        }));
    }
    Ok(tasks)
}

pub(crate) async fn wait_active(addr: SocketAddr, token: &str, n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let active = http::json(addr, "GET", "/v1/installs?status=active", token, None).await?;
        let failed = http::json(addr, "GET", "/v1/installs?status=failed", token, None).await?;
        if let Some(f) = failed.as_array().and_then(|f| f.first()) {
            bail!("install {} failed to provision", f["name"]);
        }
        if active.as_array().map_or(0, Vec::len) == n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("not every install was provisioned within 30 minutes");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub(crate) async fn wait_workflow(addr: SocketAddr, token: &str, id: &str) -> Result<()> {
    loop {
        let wf = http::json(addr, "GET", &format!("/v1/workflows/{id}"), token, None).await?;
        match wf["status"].as_str() {
            Some("succeeded") => return Ok(()),
            Some("failed" | "cancelled") => {
                let why: Vec<String> = wf["steps"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|s| s["status"] == "failed")
                    .map(|s| format!("{} {}: {}", s["component"], s["kind"], s["message"]))
                    .collect();
                bail!("workflow {id} ended {}: {}", wf["status"], why.join("; "))
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Waits for the release to end, printing each second how many of its installs are deployed,
/// and each wave's time from its start to its last install passed.
async fn wait_release(addr: SocketAddr, token: &str, id: &str) -> Result<serde_json::Value> {
    let (start, mut shown) = (Instant::now(), 0);
    loop {
        let r = http::json(addr, "GET", &format!("/v1/releases/{id}"), token, None).await?;
        let secs = start.elapsed().as_secs();
        if secs > shown || r["status"] != "running" {
            shown = secs;
            println!(
                "  {:>5.1} s: {}",
                start.elapsed().as_secs_f64(),
                progress(&r)
            );
        }
        match r["status"].as_str() {
            Some("succeeded") => return Ok(r),
            Some("halted" | "cancelled") => {
                bail!("release {id} ended {}: {}", r["status"], r["reason"])
            }
            // A 1,000-install release's record is 150 KB: read ten times a second it was the
            // server's biggest decode, the benchmark weighing on what it measures.
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// Milliseconds since the epoch, as the model's timestamps count them.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Each wave's installs by status (`deploying 640, succeeded 260`), and its time from start to
/// passed once it passed.
fn progress(r: &serde_json::Value) -> String {
    let waves = r["waves"].as_array().into_iter().flatten();
    let each: Vec<String> = waves
        .map(|w| {
            let mut counts = std::collections::BTreeMap::<&str, usize>::new();
            for t in w["targets"].as_array().into_iter().flatten() {
                *counts
                    .entry(t["status"].as_str().unwrap_or("?"))
                    .or_default() += 1;
            }
            let took = match (w["started_ms"].as_u64(), w["passed_ms"].as_u64()) {
                (Some(a), Some(b)) => format!(" in {:.1} s", b.saturating_sub(a) as f64 / 1000.0),
                _ => String::new(),
            };
            let counts: Vec<String> = counts.iter().map(|(s, n)| format!("{s} {n}")).collect();
            format!("[{}{took}]", counts.join(", "))
        })
        .collect();
    each.join(" ")
}

/// CPU seconds (user + system) process `pid` has used.
fn cpu_secs(pid: u32) -> Result<f64> {
    cpu_fields(pid, 11)
}

/// Messages stored so far in each of the hub's streams (its last sequence), by name, and the
/// bytes all of them hold now.
async fn written(
    js: &async_nats::jetstream::Context,
) -> Result<(std::collections::BTreeMap<String, u64>, u64)> {
    let mut out = std::collections::BTreeMap::new();
    let mut bytes = 0;
    let mut names = js.stream_names();
    while let Some(name) = names.next().await {
        let name = name?;
        let mut stream = js.get_stream(&name).await?;
        let state = stream.info().await?.state.clone();
        bytes += state.bytes;
        out.insert(name, state.last_sequence);
    }
    Ok((out, bytes))
}

/// The same run's raw-NATS baseline for a release: `messages` messages of `size` bytes stored
/// in a scratch stream of the same hub, over the same kind of connection the control plane has
/// (TLS, a user of the hub's account), by [`RAW_WRITERS`] writers each waiting for its ack before
/// its next write, as the control plane's record writes do. Returns its time and the hub's CPU
/// seconds; the fleet stays connected meanwhile, its heartbeats in both figures as in the
/// release's. The release's figures divided by these say what the machine's speed of the moment
/// does not: this machine's speed moves by half from one run to the next.
async fn raw_writes(
    hub: &ferry_tests::NatsServer,
    messages: u64,
    size: usize,
) -> Result<(Duration, f64)> {
    const STREAM: &str = "BENCH_RAW";
    let js = async_nats::jetstream::new(hub.admin().await);
    js.create_stream(async_nats::jetstream::stream::Config {
        name: STREAM.into(),
        subjects: vec!["bench.raw.>".into()],
        ..Default::default()
    })
    .await?;
    let payload = bytes::Bytes::from(vec![b'x'; size]);
    let hub0 = cpu_secs(hub.pid()).unwrap_or(0.0);
    let t = Instant::now();
    let writers = (0..RAW_WRITERS).map(|w| {
        let (js, payload) = (js.clone(), payload.clone());
        let mine = messages / RAW_WRITERS + u64::from(w < messages % RAW_WRITERS);
        async move {
            for i in 0..mine {
                js.publish(format!("bench.raw.{w}.{}", i % 64), payload.clone())
                    .await?
                    .await?;
            }
            Ok::<(), anyhow::Error>(())
        }
    });
    futures_util::future::try_join_all(writers).await?;
    let took = t.elapsed();
    let hub_cpu = cpu_secs(hub.pid()).unwrap_or(0.0) - hub0;
    js.delete_stream(STREAM).await?;
    Ok((took, hub_cpu))
}

/// Writers at once in [`raw_writes`]: more than the control plane's record writers during a
/// release (16 lanes of results, 16 of control messages, the release's writer, the other
/// services), so that the baseline is the hub at its best.
const RAW_WRITERS: u64 = 64;

/// What the release wrote into each stream, per install, the most first.
fn print_written(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
    n: usize,
) {
    let mut rows: Vec<(u64, &String)> = after
        .iter()
        .map(|(name, last)| (last - before.get(name).copied().unwrap_or(0), name))
        .filter(|(d, _)| *d > 0)
        .collect();
    rows.sort_by(|a, b| b.cmp(a));
    let rows: Vec<String> = rows
        .iter()
        .map(|(d, name)| format!("{name} {:.1}", *d as f64 / n as f64))
        .collect();
    println!("messages stored per install: {}", rows.join(", "));
}

fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
}

/// CPU seconds of this process's children that have ended (the plugin processes its runners
/// started).
fn children_cpu_secs() -> Result<f64> {
    cpu_fields(std::process::id(), 13)
}

/// User plus system CPU seconds from field `at` of `/proc/<pid>/stat` (11: the process's own,
/// 13: its ended children's).
fn cpu_fields(pid: u32, at: usize) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces), from its closing parenthesis.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(at).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + f.get(at + 1).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    Ok(ticks / 100.0)
}

/// The control plane's process, killed with the benchmark.
pub(crate) struct KillOnDrop(std::process::Child);

impl KillOnDrop {
    pub(crate) fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
