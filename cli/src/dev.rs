//! `ferry dev`: the embedded default. One command on one machine starts a nats-server (JetStream,
//! domain `hub`) with its data in `--data-dir`, every control-plane service in one `ferry-server`
//! process, and a `ferry-runner` for a local install; then syncs the app, creates (or redeploys) the
//! install, and shows the deploy step by step.
//!
//! The pieces are separate processes talking over NATS exactly as in production: `ferry dev` only
//! supervises them. Each child gets `PR_SET_PDEATHSIG`, so even if `ferry dev` itself is killed with
//! SIGKILL, nothing is left behind.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ferry_model::api::CreateInstall;
use ferry_model::{Install, Workflow, WorkflowStatus, ops};
use serde_json::json;

use crate::commands;
use crate::devprocs::{Children, find_tool, free_port, lock_data_dir, sibling, tail};
use crate::render;
use ferry_client::Client as Api;

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
    /// An OCI registry the installs' runners copy artifacts and images into, each install under
    /// its own path (`http://127.0.0.1:5000` gives install `dev` `http://127.0.0.1:5000/dev`):
    /// one the cluster your Kubernetes components deploy into can pull from. Credentials:
    /// FERRY_REGISTRY_USER and FERRY_REGISTRY_PASSWORD, passed on. Default: each runner's own
    /// OCI layout directory, which no cluster reads.
    #[arg(long, value_name = "URL")]
    registry: Option<String>,
    /// The hub's NATS client port, on 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "PORT")]
    nats_port: Option<u16>,
    /// The hub's leafnode port, where runners connect (default: a free one).
    #[arg(long, value_name = "PORT")]
    leaf_port: Option<u16>,
    /// The hub's NATS monitoring port (default: a free one).
    #[arg(long, value_name = "PORT")]
    nats_monitor_port: Option<u16>,
    /// Exit once the deploy is over: 0 when the install is deployed, 1 (with the failing step's log)
    /// when not. Stops every process it started.
    #[arg(long)]
    exit_when_deployed: bool,
    /// Print the final install as JSON (with --exit-when-deployed).
    #[arg(long)]
    json: bool,
}

/// Waits until something listens on `port`, failing early if a child exits meanwhile.
async fn wait_for_port(
    port: u16,
    children: &mut Children,
    what: &str,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
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
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(())
}

/// What `ferry dev` runs, found before anything starts, and the processes it started.
struct Platform {
    /// The data directory's lock, held while this `ferry dev` runs (see [`lock_data_dir`]).
    _lock: std::fs::File,
    started: Instant,
    /// `--data-dir`, absolute.
    data: PathBuf,
    nats_bin: PathBuf,
    server_bin: PathBuf,
    runner_bin: PathBuf,
    children: Children,
}

/// The hub as started: its NATS URL, its trust directory and its leafnode port.
struct Hub {
    nats_url: String,
    dir: PathBuf,
    leaf_port: u16,
}

pub async fn run(args: DevArgs) -> Result<i32> {
    let mut p = preflight(&args)?;
    let ports = HubPorts {
        client: port_or_free(args.nats_port)?,
        monitor: port_or_free(args.nats_monitor_port)?,
        leaf: port_or_free(args.leaf_port)?,
    };
    let hub = start_hub(&mut p, ports).await?;
    let api = start_server(&mut p, &args, &hub).await?;
    let workflow_id = sync_and_deploy(&api, &args, p.started).await?;

    // The install's runner (and, later, one for every other install created meanwhile),
    // bootstrapped with a one-time token the first time; then watch.
    let runners = Runners {
        bin: p.runner_bin.clone(),
        leaf_url: format!("tls://127.0.0.1:{}", hub.leaf_port),
        nats_bin: p.nats_bin.clone(),
        data: p.data.clone(),
        registry: args.registry.clone(),
    };
    let mut running = std::collections::BTreeSet::new();
    step(
        p.started,
        &format!("starting ferry-runner for install {}", args.install),
    );
    runners.start(&mut p.children, &api, &args.install).await?;
    running.insert(args.install.clone());

    let wf = tokio::select! {
        wf = watch(&api, &workflow_id, p.started, &mut p.children) => wf?,
        _ = stop_signal() => {
            eprintln!("interrupted; stopping");
            return Ok(130);
        }
    };
    let deployed = report(&api, &args, &wf, &p).await?;
    if args.exit_when_deployed {
        return Ok(if deployed { 0 } else { 1 });
    }
    let base = api.base().to_string();
    println!("\nFerry is running. API: {base}  NATS: {}", hub.nats_url);
    println!(
        "  export FERRY_TOKEN=$(cat {})    # the local admin token",
        p.data.join(ADMIN_TOKEN).display()
    );
    println!("  ferry --api {base} installs get {}", args.install);
    println!("  ferry --api {base} workflows get {workflow_id}");
    println!("Dashboard: {base}/ (sign in with the local admin token)");
    println!(
        "Logs of the processes are in {}. Press Ctrl-C to stop.",
        p.data.display()
    );
    println!("  installs created meanwhile get a runner of their own");
    supervise(&api, &runners, &mut p, running).await
}

/// Checks what can be checked before starting anything: the app package (the likeliest first
/// error), the API's address, the data directory and the binaries.
fn preflight(args: &DevArgs) -> Result<Platform> {
    let started = Instant::now();
    let (_, cfg) = commands::load_package(&args.app)?;
    if let Err(diags) = cfg {
        eprintln!("{diags}");
        bail!("{} is not a valid app package", args.app.display());
    }
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let lock = lock_data_dir(&args.data_dir)?;
    if TcpListener::bind(args.http_addr).is_err() {
        bail!(
            "{} is in use: pass --http-addr 127.0.0.1:PORT (and, for a second `ferry dev`, its own --data-dir)",
            args.http_addr
        );
    }
    Ok(Platform {
        _lock: lock,
        started,
        data: std::fs::canonicalize(&args.data_dir)?,
        nats_bin: find_tool("nats-server").ok_or_else(|| anyhow!("nats-server not found: run nats/install (it installs the pinned version into .tools/bin)"))?,
        server_bin: sibling("ferry-server")?,
        runner_bin: sibling("ferry-runner")?,
        children: Children { list: Vec::new() },
    })
}

/// The hub's trust directory (Ferry's CA, the hub's certificate, the services' credentials, the
/// auth callout's key — made once, kept with the data), then its nats-server.
/// The hub's ports: each as given, else a free one.
struct HubPorts {
    client: u16,
    monitor: u16,
    leaf: u16,
}

fn port_or_free(given: Option<u16>) -> Result<u16> {
    match given {
        Some(p) => Ok(p),
        None => free_port(),
    }
}

async fn start_hub(p: &mut Platform, ports: HubPorts) -> Result<Hub> {
    let (client_port, monitor_port, leaf_port) = (ports.client, ports.monitor, ports.leaf);
    let dir = p.data.join("hub");
    // Exactly what an operator runs: `hub-init` writes the hub's complete configuration.
    let out = Command::new(&p.server_bin)
        .arg("--hub-dir")
        .arg(&dir)
        .args(["hub-init", "--leafnode-listen"])
        .arg(format!("127.0.0.1:{leaf_port}"))
        .arg(format!("--listen=127.0.0.1:{client_port}"))
        .arg(format!("--monitor=127.0.0.1:{monitor_port}"))
        .arg("--store-dir")
        .arg(p.data.join("jetstream"))
        .output()
        .context("running ferry-server hub-init")?;
    if !out.status.success() {
        bail!(
            "ferry-server hub-init failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let conf_path = dir.join("hub.conf");
    step(
        p.started,
        &format!("starting nats-server ({})", p.nats_bin.display()),
    );
    p.children.spawn(
        "nats-server",
        Command::new(&p.nats_bin).arg("-c").arg(&conf_path),
        p.data.join("nats.log"),
    )?;
    let wait = Duration::from_secs(30);
    wait_for_port(client_port, &mut p.children, "nats-server", wait).await?;
    Ok(Hub {
        nats_url: format!("nats://127.0.0.1:{client_port}"),
        dir,
        leaf_port,
    })
}

/// The control plane, every service in one process; returns the API with the local admin token.
async fn start_server(p: &mut Platform, args: &DevArgs, hub: &Hub) -> Result<Api> {
    step(
        p.started,
        "starting ferry-server (api, scheduler, build, log-ingest, approval)",
    );
    let http_addr = args.http_addr.to_string();
    p.children.spawn(
        "ferry-server",
        Command::new(&p.server_bin)
            .args(["--nats-url", &hub.nats_url, "--http-addr", &http_addr])
            .arg("--managed-runners")
            .arg(format!(
                "--runner-hub-url=tls://127.0.0.1:{}",
                hub.leaf_port
            ))
            .arg("--hub-dir")
            .arg(&hub.dir),
        p.data.join("server.log"),
    )?;
    let wait = Duration::from_secs(60);
    wait_for_port(args.http_addr.port(), &mut p.children, "ferry-server", wait).await?;
    let token = admin_token(&p.server_bin, &hub.nats_url, &hub.dir, &p.data)?;
    Ok(Api::new(
        &format!("http://{}", args.http_addr),
        Some(&token),
    )?)
}

/// Syncs the app, then creates the install (with approve-all) or deploys the existing one with
/// the latest config; returns the workflow started.
async fn sync_and_deploy(api: &Api, args: &DevArgs, started: Instant) -> Result<String> {
    let app_name = app_dir_name(&args.app)?;
    let sync = commands::sync(api, &args.app, &app_name).await?;
    step(started, &render::sync(&sync).replace('\n', "\n           "));
    let existing = api.find::<ops::GetInstall>(&[&args.install]).await?;
    if let Some(busy) = running_workflow(api, existing.as_ref()).await? {
        step(
            started,
            &format!(
                "install {} is busy with workflow {busy} (started before): following it",
                args.install
            ),
        );
        return Ok(busy);
    }
    if existing.is_some() {
        let d = api
            .call::<ops::DeployInstall>(&[&args.install], &(), &None)
            .await?;
        step(
            started,
            &format!(
                "install {} exists: deploying the latest config (workflow {})",
                args.install, d.workflow_id
            ),
        );
        return Ok(d.workflow_id);
    }
    let body = CreateInstall {
        app: app_name,
        name: args.install.clone(),
        inputs: commands::parse_inputs(&args.inputs)?,
        approve_all: true,
        labels: Default::default(),
        approvals_by: Default::default(),
    };
    let c = api.call::<ops::CreateInstallOp>(&[], &(), &body).await?;
    step(
        started,
        &format!(
            "install {} created with approve-all: provisioning (workflow {})",
            args.install, c.workflow_id
        ),
    );
    Ok(c.workflow_id)
}

/// The workflow `install` is busy with, if one is still running (an earlier `ferry dev` stopped
/// while it ran: the new one follows it rather than failing on the install's reservation).
async fn running_workflow(api: &Api, install: Option<&Install>) -> Result<Option<String>> {
    let Some(id) = install.and_then(|i| i.last_workflow.as_deref()) else {
        return Ok(None);
    };
    let wf = api.find::<ops::GetWorkflow>(&[id]).await?;
    Ok(wf.filter(|w| !w.status.is_terminal()).map(|w| w.id))
}

/// Prints how the deploy ended (the failing step's log, or the install); returns whether it
/// succeeded.
async fn report(api: &Api, args: &DevArgs, wf: &Workflow, p: &Platform) -> Result<bool> {
    let install = api.run::<ops::GetInstall>(&[&args.install]).await?;
    let secs = p.started.elapsed().as_secs_f64();
    if wf.status != WorkflowStatus::Succeeded {
        report_failure(api, wf).await;
        eprintln!(
            "\ndeploy of install {} failed after {secs:.1}s (logs: {})",
            args.install,
            p.data.display()
        );
        return Ok(false);
    }
    if args.json && args.exit_when_deployed {
        let out = json!({ "workflow": wf, "install": install });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("\ninstall {} deployed in {secs:.1}s\n", args.install);
        println!("{}", render::install(&install));
    }
    Ok(true)
}

/// Runs until Ctrl-C or SIGTERM (0), or until a process it started exits (1), starting a runner
/// for every install created meanwhile.
async fn supervise(
    api: &Api,
    runners: &Runners,
    p: &mut Platform,
    mut running: std::collections::BTreeSet<String>,
) -> Result<i32> {
    loop {
        tokio::select! {
            _ = stop_signal() => return Ok(0),
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                if let Some((name, status, log)) = p.children.exited() {
                    eprintln!("{name} exited ({status}); its log ({}):\n{}", log.display(), tail(&log, 20));
                    // An install's runner stopping (its install revoked) stops only that install.
                    if !name.starts_with("ferry-runner ") {
                        return Ok(1);
                    }
                    p.children.stop_one(&name);
                    eprintln!("{name} is not restarted: fix the cause, then restart `ferry dev`");
                }
                let Ok(installs) = api.call::<ops::ListInstalls>(&[], &Default::default(), &()).await else {
                    continue;
                };
                let names: std::collections::BTreeSet<String> =
                    installs.iter().map(|i| i.name.clone()).collect();
                let gone: Vec<String> = running.difference(&names).cloned().collect();
                for name in gone {
                    // Forgetting a runner deletes its identity and state: only for an install the
                    // API says is gone, never on a listing's word alone.
                    if !matches!(api.find::<ops::GetInstall>(&[&name]).await, Ok(None)) {
                        continue;
                    }
                    running.remove(&name);
                    runners.forget(&mut p.children, &name)?;
                    step(p.started, &format!("install {name} deleted: its runner stopped, its identity and state forgotten"));
                }
                for i in installs {
                    if running.insert(i.name.clone()) {
                        step(p.started, &format!("starting ferry-runner for install {}", i.name));
                        runners.start(&mut p.children, api, &i.name).await?;
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
    /// `ferry dev --registry`: each install's runner copies into `<registry>/<install>`.
    registry: Option<String>,
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
        if let Some(r) = &self.registry {
            cmd.arg("--registry")
                .arg(format!("{}/{install}", r.trim_end_matches('/')));
        }
        // helm and kubectl from .tools/bin (scripts/dev installs them), for Kubernetes components.
        for tool in ["helm", "kubectl"] {
            if let Some(p) = find_tool(tool) {
                cmd.arg(format!("--{tool}")).arg(p);
            }
        }
        if !dir.join("identity").join("cert.pem").exists() {
            let t = crate::bootstrap::runner_token(api, install).await?;
            cmd.args(["--api", api.base()])
                .env("FERRY_BOOTSTRAP_TOKEN", t.token);
        }
        children.spawn(
            &format!("ferry-runner {install}"),
            &mut cmd,
            self.data.join(format!("runner-{install}.log")),
        )
    }

    /// Stops the runner of a deleted install and forgets its data directory (its revoked
    /// certificate, its state): an install created again under the name bootstraps anew.
    fn forget(&self, children: &mut Children, install: &str) -> Result<()> {
        children.stop_one(&format!("ferry-runner {install}"));
        let dir = self.data.join("installs").join(install);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("removing {}", dir.display())),
        }
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
