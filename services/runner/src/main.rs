/// mimalloc, as ferry-server uses (see its main.rs): a runner's records, messages and log batches
/// are many small, short-lived allocations across tokio's threads too, 12% of a release's runner
/// samples in glibc's allocator. A plugin process (this binary) starts no slower with it: the
/// same page faults, `perf stat`.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use ferry_runner::leaf::LeafConfig;
use ferry_runner::runner::Mode;
use ferry_runner::{Runner, RunnerConfig};

/// Ferry's install runner: pulls its install's jobs over one outbound NATS connection and runs each
/// one as a child process through a plugin. Listens on no port; keeps no state of record.
#[derive(Parser, Debug)]
#[command(name = "ferry-runner", version)]
struct Args {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// The hub: its leafnode URL (`tls://hub:7422`), which the runner's leaf nats-server connects
    /// to; with --direct, its client URL (`nats://hub:4222`), which the runner connects to.
    #[arg(long, env = "FERRY_NATS_URL", default_value = "tls://127.0.0.1:7422")]
    nats_url: String,
    /// Connect to the hub directly (mTLS, same identity and permissions) instead of through a
    /// leaf nats-server beside the runner: for hosts that cannot run one, and for load tests.
    /// Without the leaf there is no disk spool: events wait in memory while the hub is away.
    #[arg(long, env = "FERRY_DIRECT")]
    direct: bool,
    /// The nats-server binary for the leaf (default: beside ferry-runner, or on PATH).
    #[arg(long, env = "FERRY_NATS_SERVER")]
    nats_server: Option<PathBuf>,
    /// The install this runner serves, as a check: the runner serves the install its certificate
    /// names, and refuses to start if this names another.
    #[arg(long, env = "FERRY_INSTALL")]
    install: Option<String>,
    /// Install-side data: the install's artifact store, component state, job work directories,
    /// break-glass grants. Give the running runner's own (`ferry dev` puts each install's
    /// runner under its data directory: a refused action's message names it).
    #[arg(
        long,
        env = "FERRY_RUNNER_DATA_DIR",
        default_value = ".ferry/runner",
        global = true
    )]
    data_dir: PathBuf,
    /// The install's identity: `key.pem` (made here, never sent), `cert.pem` (from the hub's CA)
    /// and `ca.pem`. Default: `<data-dir>/identity`.
    #[arg(long, env = "FERRY_IDENTITY_DIR")]
    identity_dir: Option<PathBuf>,
    /// A one-time bootstrap token (from `ferry installs create` or `ferry installs runner-token`):
    /// the runner makes its key, sends a CSR with the token to --api, stores the certificate it
    /// gets, and from then on uses only that. Ignored once the identity directory holds one.
    #[arg(long, env = "FERRY_BOOTSTRAP_TOKEN")]
    bootstrap: Option<String>,
    /// --bootstrap from a file (the install stack's user data writes it there from Secrets
    /// Manager, so the token is in no environment listing).
    #[arg(long, env = "FERRY_BOOTSTRAP_TOKEN_FILE", conflicts_with = "bootstrap")]
    bootstrap_file: Option<PathBuf>,
    /// The control plane's API, for --bootstrap.
    #[arg(long, env = "FERRY_API", default_value = "http://127.0.0.1:4600")]
    api: String,
    /// How many jobs run at once.
    #[arg(long, env = "FERRY_MAX_JOBS", default_value_t = 4)]
    max_jobs: usize,
    /// On SIGTERM, how long running jobs may go on (no new ones are taken) before they are
    /// cancelled.
    #[arg(long, env = "FERRY_DRAIN_SECS", default_value_t = 60)]
    drain_secs: u64,
    /// How long a cancelled job's processes get between SIGTERM and SIGKILL.
    #[arg(long, env = "FERRY_CANCEL_GRACE_SECS", default_value_t = 10)]
    cancel_grace_secs: u64,
    /// How often the runner sends its metrics (jobs, plugin exits, spool, link, host CPU,
    /// memory and disk) to the hub.
    #[arg(long, env = "FERRY_METRICS_INTERVAL_SECS", default_value_t = 15)]
    metrics_interval_secs: u64,
    /// Exit (status 3) once the hub has refused this install's certificate this long without a
    /// break: the install was revoked or deleted (leaf mode; 0: never).
    #[arg(long, env = "FERRY_EXIT_WHEN_REFUSED_SECS", default_value_t = 120)]
    exit_when_refused_secs: u64,
    /// Run actions that need a break-glass role only while it is granted on this host
    /// (`ferry-runner break-glass grant`), never on a grant made through the control plane's API
    /// by a customer token.
    #[arg(long, env = "FERRY_BREAK_GLASS_HOST_ONLY")]
    break_glass_host_only: bool,
    /// The install stack this runner runs in (its CloudFormation stack's name): the runner reads
    /// its status and outputs and the install's secrets' status with the host's own identity and
    /// reports them (`.nuon.install_stack`, `.nuon.secrets` in templates), and runs each job as
    /// the role of its operation. The install stack's user data sets it.
    #[arg(long, env = "FERRY_STACK_NAME")]
    stack_name: Option<String>,
    /// The install stack's region (default: AWS_REGION).
    #[arg(long, env = "FERRY_STACK_REGION")]
    stack_region: Option<String>,
    /// Another AWS endpoint than AWS's own for the runner's calls in its account
    /// (CloudFormation, STS, Secrets Manager): a VPC endpoint, or an emulator in tests.
    #[arg(long, env = "FERRY_STACK_ENDPOINT")]
    stack_endpoint: Option<String>,
    /// How often the runner reads its stack and the install's secrets again, in seconds: a
    /// secret the customer sets is seen (and a deploy it held may be retried) this soon.
    #[arg(long, env = "FERRY_STACK_INTERVAL_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    stack_interval_secs: u64,
    /// The helm binary for helm_chart components (default: `helm` on PATH).
    #[arg(long, env = "FERRY_HELM")]
    helm: Option<PathBuf>,
    /// The kubectl binary for kubernetes_manifest components (default: `kubectl` on PATH).
    #[arg(long, env = "FERRY_KUBECTL")]
    kubectl: Option<PathBuf>,
    /// The cluster to deploy Kubernetes components into when the install's sandbox names none
    /// (without it, and outside a cluster, such components fail saying so).
    #[arg(long, env = "FERRY_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The install's own OCI registry repository (`https://123.dkr.ecr.eu-west-1.amazonaws.com/acme`,
    /// `http://127.0.0.1:5000/acme` on this host): component artifacts and container images are
    /// copied there, each component under `<path>/<component>`. Default: an OCI layout directory
    /// in --data-dir. Credentials: FERRY_REGISTRY_USER and FERRY_REGISTRY_PASSWORD, or
    /// FERRY_REGISTRY_TOKEN (environment only).
    #[arg(long, env = "FERRY_REGISTRY")]
    registry: Option<String>,
    /// The --registry is Amazon ECR in this region: its credentials come from ECR's
    /// GetAuthorizationToken under the host's AWS identity (asked for each job), and each
    /// component's repository is created if missing.
    #[arg(long, env = "FERRY_REGISTRY_ECR_REGION", requires = "registry")]
    registry_ecr_region: Option<String>,
    /// Run jobs without a sandbox, as the runner itself, with its data directory, identity and
    /// environment in their reach. Without it, a host without bubblewrap refuses every job.
    /// Said in every job's log, on `ferry runners list` and on the dashboard.
    #[arg(long, env = "FERRY_UNSANDBOXED_JOBS")]
    unsandboxed_jobs: bool,
    /// The user sandboxed jobs run as, a name or UID:GID (a runner started as root only).
    /// Default: the `ferry-job` user if the host has one (install.sh makes it), else nobody.
    #[arg(long, env = "FERRY_JOB_USER")]
    job_user: Option<String>,
    /// A host variable jobs get (a proxy, a CA bundle: `--job-env HTTPS_PROXY`); repeat for
    /// more. Nothing else of the runner's environment reaches a job but PATH, the locale and
    /// the credentials of the job's own role.
    #[arg(long = "job-env", env = "FERRY_JOB_ENV", value_delimiter = ',')]
    job_env: Vec<String>,
    /// The install's environment on this host, shared by its jobs (`FERRY_INSTALL_DIR` in
    /// theirs: what a local sandbox provisions and its components write into). Default:
    /// `<data-dir>/install`. Runner hosts of one install sharing a file system may share it.
    #[arg(long, env = "FERRY_RUNNER_INSTALL_DIR")]
    install_dir: Option<PathBuf>,
    /// The bubblewrap binary (default: `bwrap` on PATH).
    #[arg(long, env = "FERRY_BWRAP")]
    bwrap: Option<PathBuf>,
    /// How many processes (and threads) a job may have at once (its cgroup's `pids.max`, and
    /// the job user's RLIMIT_NPROC).
    #[arg(long, env = "FERRY_JOB_MAX_PROCS", default_value_t = 1024)]
    job_max_procs: u64,
    /// How much memory a job's processes may use together, in MiB (its cgroup's limit: past it
    /// the kernel kills the job, and its step says so); 0: no limit. Needs a root runner and a
    /// cgroup it may make groups in (cgroup v2: `Delegate=yes` in its unit).
    #[arg(long, env = "FERRY_JOB_MEMORY_MB", default_value_t = 4096)]
    job_memory_mb: u64,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Internal: run one job's plugin (started by the runner itself, one process per job).
    #[command(hide = true)]
    Plugin(ferry_runner::plugin::PluginArgs),
    /// The install's break-glass roles on this host: actions that name one (`break_glass_role`)
    /// run only while it is granted here. Grants are files in --data-dir; each grant and
    /// revocation is appended to `<data-dir>/break-glass/audit.log`.
    #[command(name = "break-glass", subcommand)]
    BreakGlass(BreakGlass),
    /// Stop this runner host taking new jobs (the running ones finish); the control plane shows
    /// the install as paused by its customer. Appended to `<data-dir>/break-glass/audit.log`.
    Pause,
    /// Let this runner host take jobs again.
    Resume,
}

#[derive(Subcommand, Debug)]
enum BreakGlass {
    /// Grant ROLE for a while (`--for 30m`, `--for 1h`; at most 24h).
    Grant {
        /// The role, as the app's actions name it in `break_glass_role`.
        role: String,
        /// How long the grant lasts (`30m`, `1h`; at most `24h`).
        #[arg(long = "for", value_parser = humantime::parse_duration)]
        duration: Duration,
    },
    /// End a grant now.
    Revoke {
        /// The role granted.
        role: String,
    },
    /// The grants on this host, with when each ends, and the role each action is pinned to.
    List,
    /// Let ACTION run with what the app's config says now: it was pinned to the role it first
    /// needed, and keeps needing it (whatever later configs say) until this.
    Unpin {
        /// The action's name.
        action: String,
    },
}

/// Carries out a `break-glass` command; the process's exit code.
fn break_glass(data_dir: &std::path::Path, cmd: &BreakGlass) -> i32 {
    use ferry_runner::breakglass;
    let by = std::env::var("USER").unwrap_or_else(|_| "the runner host".into());
    let r = match cmd {
        BreakGlass::Grant { role, duration } => breakglass::grant(data_dir, role, *duration, &by)
            .map(|g| {
                format!(
                    "granted {} until {}",
                    g.role,
                    ferry_model::format_ms(g.until_ms)
                )
            }),
        BreakGlass::Revoke { role } => breakglass::revoke(data_dir, role, &by).map(|had| {
            if had {
                format!("revoked {role}")
            } else {
                format!("{role} was not granted")
            }
        }),
        BreakGlass::List => {
            let now = ferry_model::now_ms();
            let lines: Vec<String> = breakglass::list(data_dir)
                .iter()
                .map(|g| match g {
                    Ok(g) => {
                        let state = if g.until_ms > now { "until" } else { "expired" };
                        format!(
                            "{}\t{state} {}\tby {}",
                            g.role,
                            ferry_model::format_ms(g.until_ms),
                            g.by
                        )
                    }
                    Err((name, why)) => format!("{name}\tREFUSED: {why}"),
                })
                .collect();
            let pins: Vec<String> = breakglass::pins(data_dir)
                .iter()
                .map(|(action, role)| format!("action {action}\tneeds {role}"))
                .collect();
            Ok(if lines.is_empty() && pins.is_empty() {
                "no grants".into()
            } else {
                lines.into_iter().chain(pins).collect::<Vec<_>>().join("\n")
            })
        }
        BreakGlass::Unpin { action } => {
            breakglass::unpin(data_dir, action, &by).map(|had| match had {
                Some(role) => format!("action {action} no longer pinned to role {role}"),
                None => format!("action {action} was not pinned"),
            })
        }
    };
    match r {
        Ok(msg) => {
            println!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// Carries out `pause` or `resume`; the process's exit code.
fn pause(data_dir: &std::path::Path, pause: bool) -> i32 {
    let by = std::env::var("USER").unwrap_or_else(|_| "the runner host".into());
    let r = match pause {
        true => ferry_runner::pause::pause(data_dir, &by).map(|did| match did {
            true => "paused: the runner takes no new job until `ferry-runner resume`",
            false => "already paused",
        }),
        false => ferry_runner::pause::resume(data_dir, &by).map(|did| match did {
            true => "resumed: the runner takes jobs again",
            false => "was not paused",
        }),
    };
    match r {
        Ok(msg) => {
            println!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn main() {
    let mut args = Args::parse();
    // Absolute: a job's paths (and its sandbox's mounts) must not depend on where it starts.
    if let Ok(d) = std::path::absolute(&args.data_dir) {
        args.data_dir = d;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    // A plugin is plain synchronous code (one that needs async makes its own runtime): it runs
    // before, and without, the runner's.
    match &args.command {
        Some(Cmd::Plugin(plugin)) => std::process::exit(ferry_runner::plugin::entry(plugin)),
        Some(Cmd::BreakGlass(cmd)) => std::process::exit(break_glass(&args.data_dir, cmd)),
        Some(Cmd::Pause) => std::process::exit(pause(&args.data_dir, true)),
        Some(Cmd::Resume) => std::process::exit(pause(&args.data_dir, false)),
        None => {}
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ferry-runner: starting the async runtime: {e}");
            std::process::exit(1);
        }
    };
    rt.block_on(run(args));
}

async fn run(args: Args) {
    ferry_telemetry::init_tracing();
    let cfg = match config(args).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ferry-runner: {e}");
            std::process::exit(2);
        }
    };
    let runner = match Runner::connect(cfg).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ferry-runner: {e}");
            std::process::exit(1);
        }
    };
    let mut gave_up = runner.gave_up();
    let mut refused = gave_up.clone();
    // Direct mode has no link watcher: its sender is gone, and this never ends. It must pend
    // as a future of its own: a `select!` branch whose handler pends would hold the select, and
    // the signals below would never be heard.
    let refusal = async move {
        if refused.wait_for(Option::is_some).await.is_err() {
            std::future::pending::<()>().await
        }
    };
    let stop = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate() => {}
            _ = refusal => {}
        }
    };
    if let Err(e) = runner.run_until(stop).await {
        eprintln!("ferry-runner: {e}");
        std::process::exit(1);
    }
    if let Some(why) = gave_up.borrow_and_update().clone() {
        eprintln!("ferry-runner: stopped: {why}");
        std::process::exit(3);
    }
}

async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

/// What can be checked before the one-time token is spent: the leaf's nats-server is there (in
/// leaf mode), and something listens at the hub's address. A token spent by a runner that then
/// cannot start is a token the operator must issue again.
async fn preflight(args: &Args) -> Result<(), String> {
    let kept = "the one-time token was not used";
    if !args.direct {
        ferry_runner::leaf::find_binary(args.nats_server.as_deref())
            .map_err(|e| format!("{e} ({kept})"))?;
    }
    // A cluster's nodes: one that answers is enough (the leaf moves between them).
    let mut first_error = None;
    for url in args.nats_url.split(',').map(str::trim) {
        match reach_hub(url, kept).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| format!("--nats-url is empty ({kept})")))
}

/// Something that greets as a Ferry hub answers at `url`.
async fn reach_hub(url: &str, kept: &str) -> Result<(), String> {
    let address = url
        .split("://")
        .last()
        .unwrap_or(url)
        .trim_end_matches('/')
        .to_string();
    let connect = tokio::net::TcpStream::connect(address.clone());
    match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(stream)) => hub_greeting(stream, url, kept).await,
        Ok(Err(e)) => Err(format!(
            "cannot reach the hub at {url} ({e}): check --nats-url, the hub's leafnode URL ({kept})"
        )),
        Err(_) => Err(format!(
            "the hub at {url} did not answer within 5 s: check --nats-url and the network ({kept})"
        )),
    }
}

/// Checks that what answers at the hub's address is a NATS server that requires TLS, as a Ferry
/// hub does on every port: a NATS server greets in clear text (`INFO {...}`) before the TLS
/// handshake, so this needs no certificate yet.
async fn hub_greeting(
    mut stream: tokio::net::TcpStream,
    url: &str,
    kept: &str,
) -> Result<(), String> {
    use tokio::io::AsyncReadExt;
    let mut greeting = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut greeting)).await;
    let n = match read {
        Ok(Ok(n)) => n,
        _ => 0,
    };
    let text = String::from_utf8_lossy(&greeting[..n]);
    if !text.starts_with("INFO ") {
        return Err(format!(
            "{url} does not answer as a NATS server: check --nats-url, the hub's leafnode URL ({kept})"
        ));
    }
    if !text.contains("\"tls_required\":true") {
        return Err(format!(
            "the NATS server at {url} does not require TLS, as a Ferry hub does: check --nats-url ({kept})"
        ));
    }
    Ok(())
}

/// The install's registry `--registry` names, its URL checked now: a bad one stops the runner at
/// start, not at its first job.
fn install_registry(
    args: &Args,
) -> Result<Option<ferry_runner::registry::InstallRegistry>, String> {
    Ok(match &args.registry {
        Some(url) => {
            ferry_artifacts::Registry::new(url, ferry_artifacts::Auth::Anonymous)
                .map_err(|e| format!("--registry {url}: {e}"))?;
            Some(ferry_runner::registry::InstallRegistry {
                url: url.clone(),
                ecr_region: args.registry_ecr_region.clone(),
            })
        }
        None => None,
    })
}

/// The install's identity directory and the identity its certificate names: bootstrapped with
/// the one-time token first if it holds none, and checked against `--install`.
async fn identity(
    args: &Args,
) -> Result<(ferry_pki::InstallFiles, ferry_pki::InstallIdentity), String> {
    let files = ferry_pki::InstallFiles::new(
        &args
            .identity_dir
            .clone()
            .unwrap_or_else(|| args.data_dir.join("identity")),
    );
    if !files.exists()
        && let Some(token) = bootstrap_token(args)?
    {
        preflight(args).await?;
        ferry_runner::bootstrap::run(&files, &args.api, &token, args.install.as_deref())
            .await
            .map_err(|e| format!("bootstrap: {e}"))?;
    }
    if !files.exists() {
        return Err(format!(
            "no install certificate in {}: bootstrap the runner first (`ferry installs runner-bundle`)",
            files.dir.display()
        ));
    }
    let info = files
        .info()
        .map_err(|e| format!("the certificate in {}: {e}", files.dir.display()))?;
    let id = info.identity;
    if let Some(asked) = &args.install
        && *asked != id.install
    {
        return Err(format!(
            "--install {asked}: this runner's certificate is for install {} (org {}), and a runner serves only that",
            id.install, id.org
        ));
    }
    Ok((files, id))
}

/// The runner's configuration: its org and install are the ones its certificate names.
async fn config(args: Args) -> Result<RunnerConfig, String> {
    let (files, id) = identity(&args).await?;
    let mode = if args.direct {
        Mode::Direct
    } else {
        Mode::Leaf(LeafConfig {
            binary: ferry_runner::leaf::find_binary(args.nats_server.as_deref())
                .map_err(|e| e.to_string())?,
            hub: args.nats_url.clone(),
            install: id.install.clone(),
            dir: args.data_dir.join("leaf"),
            identity: files.clone(),
        })
    };
    let install_registry = install_registry(&args)?;
    let stack = stack_source(&args);
    let sandbox = sandbox(&args).await?;
    let hidden = hidden_paths(&args, &files);
    Ok(RunnerConfig {
        mode,
        nats_url: args.nats_url,
        credentials: files.credentials(&id),
        identity: Some(files.clone()),
        org: id.org,
        install: id.install,
        data_dir: args.data_dir.clone(),
        max_jobs: args.max_jobs,
        idle_poll: Duration::from_secs(30),
        cancel_grace: Duration::from_secs(args.cancel_grace_secs),
        drain: Duration::from_secs(args.drain_secs),
        give_up_when_refused: (args.exit_when_refused_secs > 0)
            .then(|| Duration::from_secs(args.exit_when_refused_secs)),
        tools: ferry_runner::plugin::Tools {
            helm: args.helm,
            kubectl: args.kubectl,
            kubeconfig: args.kubeconfig,
            registry: install_registry.clone(),
            // Absolute: the plugin process may run elsewhere.
            layout: std::path::absolute(args.data_dir.join("registry")).ok(),
        },
        registry: install_registry,
        break_glass_host_only: args.break_glass_host_only,
        metrics_interval: Duration::from_secs(args.metrics_interval_secs.max(1)),
        stack,
        sandbox,
        job_env: args.job_env.clone(),
        hidden,
        install_dir: args
            .install_dir
            .as_deref()
            .and_then(|d| std::path::absolute(d).ok()),
    })
}

/// The jobs' sandbox on this host, as the flags ask (`sandbox.rs`), said in the runner's log.
async fn sandbox(args: &Args) -> Result<ferry_runner::sandbox::Sandbox, String> {
    use ferry_runner::sandbox::Sandbox;
    let settings = ferry_runner::sandbox::Settings {
        unsandboxed: args.unsandboxed_jobs,
        bwrap: args.bwrap.clone(),
        job_user: args.job_user.clone(),
        limits: ferry_runner::sandbox::Limits {
            max_procs: args.job_max_procs,
            memory_bytes: args.job_memory_mb << 20,
        },
    };
    // It starts a sandbox to see that one can be made: off the async runtime.
    let sandbox = tokio::task::spawn_blocking(move || Sandbox::detect(&settings))
        .await
        .map_err(|e| format!("checking for a sandbox: {e}"))??;
    match &sandbox {
        Sandbox::Unsandboxed => tracing::warn!(
            "--unsandboxed-jobs: jobs run as the runner, with its data directory, identity and environment in reach"
        ),
        Sandbox::Missing(why) => {
            tracing::error!("no sandbox for jobs: every job is refused: {why}")
        }
        s => tracing::info!(sandbox = %s.describe(), "jobs are sandboxed"),
    }
    Ok(sandbox)
}

/// What of the runner's no job may see besides its data directory: its identity directory, its
/// bootstrap token file, and `/etc/ferry` (where the runner's environment file is).
fn hidden_paths(args: &Args, files: &ferry_pki::InstallFiles) -> Vec<PathBuf> {
    [
        Some(files.dir.clone()),
        args.bootstrap_file.clone(),
        Some(PathBuf::from("/etc/ferry")),
    ]
    .into_iter()
    .flatten()
    .filter_map(|p| std::path::absolute(p).ok())
    .filter(|p| !p.starts_with(&args.data_dir))
    .collect()
}

/// The one-time token, given or in its file (read only when the runner has no certificate yet).
fn bootstrap_token(args: &Args) -> Result<Option<String>, String> {
    match (&args.bootstrap, &args.bootstrap_file) {
        (Some(t), _) => Ok(Some(t.clone())),
        (None, Some(f)) => std::fs::read_to_string(f)
            .map(|t| Some(t.trim().to_string()))
            .map_err(|e| format!("the bootstrap token file {}: {e}", f.display())),
        (None, None) => Ok(None),
    }
}

/// The install stack to read, when the runner runs in one (its region: the flag, else
/// AWS_REGION, else us-east-1).
fn stack_source(args: &Args) -> Option<ferry_runner::stack::StackSource> {
    let name = args.stack_name.clone()?;
    let region = args
        .stack_region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .unwrap_or_else(|| "us-east-1".into());
    Some(ferry_runner::stack::StackSource {
        name,
        region,
        endpoint: args.stack_endpoint.clone(),
        every: std::time::Duration::from_secs(args.stack_interval_secs),
    })
}
