//! `ferry dev`: the embedded default. One command on one machine starts a nats-server (JetStream,
//! domain `hub`) with its data in `--data-dir`, every control-plane service in one `ferry-server`
//! process, and a `ferry-runner` for a local install; then syncs the app, creates (or redeploys) the
//! install, and shows the deploy step by step.
//!
//! The pieces are separate processes talking over NATS exactly as in production: `ferry dev` only
//! supervises them. Each child gets `PR_SET_PDEATHSIG`, so even if `ferry dev` itself is killed with
//! SIGKILL, nothing is left behind.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ferry_model::api::{CreatedInstall, Deployed};
use ferry_model::{Install, Workflow, WorkflowStatus};
use serde_json::json;

use crate::client::Api;
use crate::commands;
use crate::render;

#[derive(clap::Args, Debug)]
pub struct DevArgs {
    /// Where NATS data, the services' logs and the local install's state live.
    #[arg(long, default_value = ".ferry/dev")]
    data_dir: PathBuf,
    /// The app package to deploy.
    #[arg(long, default_value = "examples/hello")]
    app: PathBuf,
    /// Name of the local install.
    #[arg(long, default_value = "dev")]
    install: String,
    /// Input values for the install, NAME=VALUE (repeatable).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    inputs: Vec<String>,
    /// Address of the API (also /healthz and /metrics).
    #[arg(long, default_value = "127.0.0.1:4600")]
    http_addr: SocketAddr,
    /// Exit once the deploy is over: 0 when the install is deployed, 1 (with the failing step's log)
    /// when not. Stops every process it started.
    #[arg(long)]
    exit_when_deployed: bool,
    /// Print the final install as JSON (with --exit-when-deployed).
    #[arg(long)]
    json: bool,
}

/// The child processes, stopped in reverse start order (runner, server, NATS) on drop.
struct Children {
    list: Vec<(&'static str, Child, PathBuf)>,
}

impl Children {
    fn spawn(&mut self, name: &'static str, cmd: &mut Command, log: PathBuf) -> Result<()> {
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone()?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        // SAFETY: the closure runs in the forked child before exec and only calls prctl(2), which is
        // async-signal-safe. PR_SET_PDEATHSIG ties the child's life to this process (the main thread,
        // which spawns every child), so a killed `ferry dev` leaves nothing behind.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {name} ({:?})", cmd.get_program()))?;
        self.list.push((name, child, log));
        Ok(())
    }

    /// A child that has exited: its name, status and log file.
    fn exited(&mut self) -> Option<(&'static str, String, PathBuf)> {
        for (name, child, log) in &mut self.list {
            if let Ok(Some(status)) = child.try_wait() {
                return Some((name, status.to_string(), log.clone()));
            }
        }
        None
    }

    fn stop(&mut self) {
        while let Some((_, mut child, _)) = self.list.pop() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `.tools/bin/<name>` in the working directory or any parent (the repository when run from a
/// checkout), then next to or above this executable, then `PATH`.
fn find_tool(name: &str) -> Option<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    for r in roots {
        let p = r.join(".tools/bin").join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    which(name)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A Ferry binary: next to this executable (a build or an install), else on `PATH`.
fn sibling(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the ferry executable")?;
    if let Some(p) = exe.parent().map(|d| d.join(name)).filter(|p| p.is_file()) {
        return Ok(p);
    }
    which(name).ok_or_else(|| {
        anyhow!(
            "{name} not found next to {} or on PATH: build the workspace (cargo build)",
            exe.display()
        )
    })
}

fn wait_for_port(port: u16, children: &mut Children, what: &str, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some((name, status, log)) = children.exited() {
            bail!(
                "{name} exited ({status}) while starting {what}; its log ({}):\n{}",
                log.display(),
                tail(&log, 20)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "{what} did not start listening on port {port} within {}s",
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Ok(())
}

pub async fn run(args: DevArgs) -> Result<i32> {
    let started = Instant::now();
    // Validate the app before starting anything: a bad package is the most likely first error.
    let (_, cfg) = commands::load_package(&args.app)?;
    if let Err(diags) = cfg {
        eprintln!("{diags}");
        bail!("{} is not a valid app package", args.app.display());
    }
    if TcpListener::bind(args.http_addr).is_err() {
        bail!(
            "{} is in use (another `ferry dev`?): pass --http-addr 127.0.0.1:PORT",
            args.http_addr
        );
    }
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let data = std::fs::canonicalize(&args.data_dir)?;
    let nats_bin = find_tool("nats-server").ok_or_else(|| anyhow!("nats-server not found: run nats/install (it installs the pinned version into .tools/bin)"))?;
    let server_bin = sibling("ferry-server")?;
    let runner_bin = sibling("ferry-runner")?;

    let mut children = Children { list: Vec::new() };

    // 1. NATS
    let (client_port, monitor_port) = (free_port()?, free_port()?);
    // The hub's trust directory: Ferry's CA, the hub's certificate, the services' credentials,
    // the auth callout's key — made once, kept with the data.
    let hub_dir = data.join("hub");
    let leaf_port = free_port()?;
    let out = Command::new(&server_bin)
        .arg("--hub-dir")
        .arg(&hub_dir)
        .args(["hub-init", "--leafnode-listen"])
        .arg(format!("127.0.0.1:{leaf_port}"))
        .output()
        .context("running ferry-server hub-init")?;
    if !out.status.success() {
        bail!(
            "ferry-server hub-init failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let conf = include_str!("../../nats/hub.conf")
        .replace("{{client_port}}", &client_port.to_string())
        .replace("{{monitor_port}}", &monitor_port.to_string())
        .replace("{{store_dir}}", &data.join("jetstream").to_string_lossy())
        .replace("{{auth_conf}}", "hub/auth.conf")
        .replace("{{leafnodes_conf}}", "hub/leafnodes.conf");
    let conf_path = data.join("nats.conf");
    std::fs::write(&conf_path, conf)?;
    step(
        started,
        &format!("starting nats-server ({})", nats_bin.display()),
    );
    children.spawn(
        "nats-server",
        Command::new(&nats_bin).arg("-c").arg(&conf_path),
        data.join("nats.log"),
    )?;
    wait_for_port(
        client_port,
        &mut children,
        "nats-server",
        Duration::from_secs(30),
    )?;
    let nats_url = format!("nats://127.0.0.1:{client_port}");

    // 2. The control plane, every service in one process.
    step(
        started,
        "starting ferry-server (api, scheduler, build, log-ingest, approval)",
    );
    children.spawn(
        "ferry-server",
        Command::new(&server_bin)
            .args([
                "--nats-url",
                &nats_url,
                "--http-addr",
                &args.http_addr.to_string(),
            ])
            .arg("--hub-dir")
            .arg(&hub_dir),
        data.join("server.log"),
    )?;
    wait_for_port(
        args.http_addr.port(),
        &mut children,
        "ferry-server",
        Duration::from_secs(60),
    )?;
    let token = admin_token(&server_bin, &nats_url, &hub_dir, &data)?;
    let api = Api::new(&format!("http://{}", args.http_addr), Some(&token))?;

    // 3. Sync, create or redeploy.
    let app_name = app_dir_name(&args.app)?;
    let sync = commands::sync(&api, &args.app, &app_name).await?;
    step(started, &render::sync(&sync).replace('\n', "\n           "));
    let existing: Option<Install> = api
        .get_opt(&format!("/v1/installs/{}", args.install))
        .await?;
    let workflow_id = match existing {
        Some(_) => {
            let d: Deployed = api
                .post(&format!("/v1/installs/{}/deploy", args.install), &json!({}))
                .await?;
            step(
                started,
                &format!(
                    "install {} exists: deploying the latest config (workflow {})",
                    args.install, d.workflow_id
                ),
            );
            d.workflow_id
        }
        None => {
            let body = json!({ "app": app_name, "name": args.install, "inputs": commands::parse_inputs(&args.inputs)?, "approve_all": true });
            let c: CreatedInstall = api.post("/v1/installs", &body).await?;
            step(
                started,
                &format!(
                    "install {} created with approve-all: provisioning (workflow {})",
                    args.install, c.workflow_id
                ),
            );
            c.workflow_id
        }
    };

    // 4. The install's runner (and, later, one for every other install created meanwhile),
    //    bootstrapped with a one-time token the first time; then watch.
    let runners = Runners {
        bin: runner_bin,
        leaf_url: format!("tls://127.0.0.1:{leaf_port}"),
        nats_bin: nats_bin.clone(),
        data: data.clone(),
    };
    let mut running = std::collections::BTreeSet::new();
    step(
        started,
        &format!("starting ferry-runner for install {}", args.install),
    );
    runners.start(&mut children, &api, &args.install).await?;
    running.insert(args.install.clone());

    let wf = tokio::select! {
        wf = watch(&api, &workflow_id, started, &mut children) => wf?,
        _ = stop_signal() => {
            eprintln!("interrupted; stopping");
            return Ok(130);
        }
    };
    let install: Install = api.get(&format!("/v1/installs/{}", args.install)).await?;
    if wf.status != WorkflowStatus::Succeeded {
        report_failure(&api, &wf).await;
        eprintln!(
            "\ndeploy of install {} failed after {:.1}s (logs: {})",
            args.install,
            started.elapsed().as_secs_f64(),
            data.display()
        );
        if args.exit_when_deployed {
            return Ok(1);
        }
    } else if args.json && args.exit_when_deployed {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "workflow": wf, "install": install }))?
        );
    } else {
        println!(
            "\ninstall {} deployed in {:.1}s\n",
            args.install,
            started.elapsed().as_secs_f64()
        );
        println!("{}", render::install(&install));
    }
    if args.exit_when_deployed {
        return Ok(0);
    }

    let base = api.base().to_string();
    println!("\nFerry is running. API: {base}  NATS: {nats_url}");
    println!(
        "  export FERRY_TOKEN=$(cat {})    # the local admin token",
        data.join(ADMIN_TOKEN).display()
    );
    println!("  ferry --api {base} installs get {}", args.install);
    println!("  ferry --api {base} workflows get {workflow_id}");
    println!(
        "Logs of the processes are in {}. Press Ctrl-C to stop.",
        data.display()
    );
    println!("  installs created meanwhile get a runner of their own");
    loop {
        tokio::select! {
            _ = stop_signal() => return Ok(0),
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                if let Some((name, status, log)) = children.exited() {
                    eprintln!("{name} exited ({status}); its log ({}):\n{}", log.display(), tail(&log, 20));
                    return Ok(1);
                }
                let installs: Vec<Install> = match api.get("/v1/installs").await {
                    Ok(i) => i,
                    Err(_) => continue,
                };
                for i in installs {
                    if running.insert(i.name.clone()) {
                        step(started, &format!("starting ferry-runner for install {}", i.name));
                        runners.start(&mut children, &api, &i.name).await?;
                    }
                }
            }
        }
    }
}

/// How `ferry dev` starts a runner for an install: its own data directory and log.
struct Runners {
    bin: PathBuf,
    /// The hub's leafnode URL: each runner's leaf nats-server connects there.
    leaf_url: String,
    nats_bin: PathBuf,
    data: PathBuf,
}

impl Runners {
    /// Starts a runner for `install`; the first time, with a one-time bootstrap token from the
    /// API (the runner makes its key and gets its certificate itself).
    async fn start(&self, children: &mut Children, api: &Api, install: &str) -> Result<()> {
        let dir = self.data.join("installs").join(install);
        std::fs::create_dir_all(&dir)?;
        let mut cmd = Command::new(&self.bin);
        cmd.args(["--nats-url", &self.leaf_url, "--install", install])
            .arg("--nats-server")
            .arg(&self.nats_bin)
            .arg("--data-dir")
            .arg(&dir);
        if !dir.join("identity").join("cert.pem").exists() {
            let t = crate::bootstrap::runner_token(api, install).await?;
            cmd.args(["--api", api.base()])
                .env("FERRY_BOOTSTRAP_TOKEN", t.token);
        }
        children.spawn(
            "ferry-runner",
            &mut cmd,
            self.data.join(format!("runner-{install}.log")),
        )
    }
}

fn app_dir_name(dir: &Path) -> Result<String> {
    let abs = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    Ok(abs
        .file_name()
        .map(|s| {
            s.to_string_lossy()
                .to_lowercase()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        })
        .unwrap_or_else(|| "app".into()))
}

use crate::watch::step;

/// Follows the workflow (see [`crate::watch::follow`]), stopping if a process `ferry dev` started
/// exits meanwhile.
async fn watch(api: &Api, id: &str, started: Instant, children: &mut Children) -> Result<Workflow> {
    crate::watch::follow(api, id, started, || match children.exited() {
        Some((name, status, log)) => bail!(
            "{name} exited ({status}) during the deploy; its log ({}):\n{}",
            log.display(),
            tail(&log, 30)
        ),
        None => Ok(()),
    })
    .await
}

async fn report_failure(api: &Api, wf: &Workflow) {
    crate::watch::report_failure(api, wf).await
}

/// Ctrl-C or SIGTERM: both stop `ferry dev` and everything it started.
async fn stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Where `ferry dev` keeps the admin token of its hub, beside the hub's data.
pub const ADMIN_TOKEN: &str = "admin.token";

/// The local admin token: the one this data directory's hub was initialised with, or a new one
/// (`ferry-server init`) the first time.
fn admin_token(
    server_bin: &std::path::Path,
    nats_url: &str,
    hub_dir: &std::path::Path,
    data: &std::path::Path,
) -> Result<String> {
    let file = data.join(ADMIN_TOKEN);
    if !file.exists() {
        let out = Command::new(server_bin)
            .args(["--nats-url", nats_url, "--hub-dir"])
            .arg(hub_dir)
            .args(["init", "--name", "local-admin", "--token-file"])
            .arg(&file)
            .output()
            .context("running ferry-server init")?;
        if !out.status.success() {
            anyhow::bail!(
                "ferry-server init failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok(text.trim().to_string())
}
