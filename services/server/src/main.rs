mod archive;
mod http;
mod limits;
mod stacks;

/// mimalloc instead of glibc's malloc: a release over 1,000 installs spent a quarter of this
/// process's CPU in glibc's allocator (`_int_malloc`, `free`, `malloc_consolidate`: many small,
/// short-lived records and messages across tokio's worker threads), which mimalloc's per-thread
/// free lists serve for a fraction of that (figures in loadtest/README.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::Router;
use axum::routing::get;
use clap::Parser;
use ferry_server::{Service, parse_services};
use ferry_store::CancellationToken;
use ferry_store::Store;
use tokio::task::JoinSet;
use tracing::{info, warn};

/// Ferry's control plane: runs any subset of its services (api, scheduler, build, log-ingest,
/// approval) against a NATS JetStream hub. Run more processes with a narrower --services to scale one
/// service; replicas share work through JetStream consumers.
#[derive(Parser, Debug)]
#[command(name = "ferry-server", version)]
struct Args {
    /// NATS URL of the hub; for a cluster, its nodes' URLs comma-separated.
    #[arg(long, env = "FERRY_NATS_URL", default_value = "nats://127.0.0.1:4222")]
    nats_url: String,
    /// The hub's trust directory (CA, certificates, NATS credentials, the callout's key), made by
    /// `ferry-server hub-init`. The services connect with its credentials, the api serves the
    /// hub's auth callout with its key, and installs' certificates are signed by its CA.
    #[arg(long, env = "FERRY_HUB_DIR", default_value = ".ferry/hub")]
    hub_dir: std::path::PathBuf,
    /// Comma-separated services to run, or `all`.
    #[arg(long, env = "FERRY_SERVICES", default_value = "all")]
    services: String,
    /// Address for HTTP: the API (if enabled), /healthz and /metrics.
    #[arg(long, env = "FERRY_HTTP_ADDR", default_value = "127.0.0.1:4600")]
    http_addr: SocketAddr,
    /// Replicas for streams, buckets and object stores created at start-up (3 in a cluster). A
    /// stream that has more keeps them: a process started with fewer never scales it down.
    #[arg(long, env = "FERRY_REPLICAS", default_value_t = 1)]
    replicas: usize,
    /// Seconds a runner holds a job without renewing it; past it the execution is `lost` and the
    /// job runs again (scheduler).
    #[arg(long, env = "FERRY_JOB_LEASE_SECS", default_value_t = 30)]
    job_lease_secs: u64,
    /// Seconds an offered job waits for its install's runner before it times out (scheduler;
    /// default: each job kind's own, 24 h).
    #[arg(long, env = "FERRY_JOB_AVAILABLE_SECS")]
    job_available_secs: Option<u64>,
    /// Seconds after which an approved plan is stale: it is planned and approved again before it
    /// is applied (scheduler; 72 h).
    #[arg(long, env = "FERRY_MAX_PLAN_AGE_SECS", default_value_t = 72 * 3600)]
    max_plan_age_secs: u64,
    /// Seconds a runner's one-time bootstrap token stays usable (api; an hour).
    #[arg(long, env = "FERRY_RUNNER_TOKEN_SECS", default_value_t = ferry_model::BOOTSTRAP_LIFETIME_SECS)]
    runner_token_secs: u64,
    /// Seconds an install certificate issued at bootstrap lives (api; 24 h).
    #[arg(long, env = "FERRY_CERT_LIFETIME_SECS", default_value_t = ferry_pki::DEFAULT_CERT_LIFETIME.as_secs())]
    cert_lifetime_secs: u64,
    /// Certificate renewals one install may make at once (api); one more comes back every
    /// eighth of a certificate's lifetime. A runner renews once per two thirds of a lifetime.
    #[arg(long, env = "FERRY_RENEWALS_AT_ONCE", default_value_t = ferry_api::bootstrap::RENEWALS_AT_ONCE)]
    renewals_at_once: u32,
    /// Installs' runners are started by whoever started this server (`ferry dev` does): creating
    /// an install hands out no bootstrap token, and says so (api).
    #[arg(long)]
    managed_runners: bool,
    /// The hub's leafnode URL as runner hosts reach it (`tls://hub.example.com:7422`): handed out
    /// with every runner token, so `ferry installs runner-bundle` needs no `--hub-url` (api).
    #[arg(long, env = "FERRY_RUNNER_HUB_URL")]
    runner_hub_url: Option<String>,
    /// An OCI registry repository for the vendor's artifacts (`https://registry.example.com/ferry`,
    /// `http://127.0.0.1:5000/ferry` for one on this host): builds are pushed there, each
    /// component under `<org>/<app>/<component>`, Helm charts as Helm's OCI charts. Default: the
    /// hub's `artifacts` object store (build).
    #[arg(long, env = "FERRY_VENDOR_REGISTRY")]
    vendor_registry: Option<String>,
    /// The --vendor-registry is Amazon ECR in this region: credentials from ECR's
    /// GetAuthorizationToken under this host's AWS identity, each repository created if missing.
    #[arg(
        long,
        env = "FERRY_VENDOR_REGISTRY_ECR_REGION",
        requires = "vendor_registry"
    )]
    vendor_registry_ecr_region: Option<String>,
    /// The vendor registry's user, with FERRY_VENDOR_REGISTRY_PASSWORD (basic auth).
    #[arg(long, env = "FERRY_VENDOR_REGISTRY_USER")]
    vendor_registry_user: Option<String>,
    /// The vendor registry's password (environment only, never a flag: it would show in `ps`).
    #[arg(skip = std::env::var("FERRY_VENDOR_REGISTRY_PASSWORD").ok())]
    vendor_registry_password: Option<String>,
    /// A bearer token for the vendor registry (environment only).
    #[arg(skip = std::env::var("FERRY_VENDOR_REGISTRY_TOKEN").ok())]
    vendor_registry_token: Option<String>,
    #[command(flatten)]
    log_archive: archive::LogArchiveArgs,
    #[command(flatten)]
    stack_bucket: stacks::StackBucketArgs,
    #[command(flatten)]
    stream_caps: limits::StreamCapArgs,
    #[command(flatten)]
    http_limits: limits::HttpLimitArgs,
    #[command(flatten)]
    quotas: limits::QuotaArgs,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// Creates the hub's trust directory (--hub-dir) if it is missing — Ferry's CA, the hub's
    /// TLS certificate, the services' and the operator's NATS credentials, the auth callout's
    /// key — and writes the hub's complete nats-server configuration there (`hub.conf`, with
    /// `auth.conf` and `leafnodes.conf`): `nats-server -c <hub-dir>/hub.conf` runs the hub.
    /// Safe to run again: trust files are kept, configurations rewritten.
    HubInit {
        /// More DNS names or IP addresses the hub's certificate covers (besides localhost and
        /// 127.0.0.1).
        #[arg(long = "server-name")]
        server_names: Vec<String>,
        /// Where the hub listens for installs' leaf servers; written to `leafnodes.conf` for
        /// the hub's configuration to `include`.
        #[arg(long, default_value = "0.0.0.0:7422")]
        leafnode_listen: String,
        /// Where the hub listens for clients (the control plane, `ferry-server --nats-url`).
        #[arg(long, default_value = "0.0.0.0:4222")]
        listen: String,
        /// Where the hub serves its monitoring endpoints (none unless given).
        #[arg(long)]
        monitor: Option<String>,
        /// The hub's JetStream store (default: `jetstream` in the hub directory).
        #[arg(long)]
        store_dir: Option<std::path::PathBuf>,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Creates an org's first admin token and prints it (the only time it is shown): run once
    /// per hub; further tokens come from `ferry tokens create`. Refused if the org has tokens.
    Init {
        #[arg(long, default_value = ferry_model::DEFAULT_ORG)]
        org: String,
        /// Who the token is for.
        #[arg(long, default_value = "admin")]
        name: String,
        /// Also write the token to this file (created with mode 0600).
        #[arg(long)]
        token_file: Option<std::path::PathBuf>,
    },
}

/// A node of a hub cluster (docs/operations.md). Each node runs `hub-init` with the same trust
/// directory (copied to its host, or shared on one) and its own `--node-name`, addresses and store.
#[derive(clap::Args, Debug)]
struct ClusterArgs {
    /// This node's name, unique in the cluster; its configuration is written as
    /// `<hub-dir>/<NAME>.conf` (and its leafnode listener as `<NAME>-leafnodes.conf`) instead of
    /// `hub.conf`, so several nodes can share one directory.
    #[arg(long)]
    node_name: Option<String>,
    /// Where this node listens for the other nodes' routes (`0.0.0.0:6222`): makes it a node of
    /// a cluster. Routes are TLS both ways with the directory's route certificate.
    #[arg(long, requires = "node_name")]
    cluster_listen: Option<String>,
    /// Every node's route URL (`tls://hub-1:6222`), this node's own included (it is skipped).
    #[arg(long = "route", requires = "cluster_listen")]
    routes: Vec<String>,
    /// The cluster's name, the same on every node.
    #[arg(long, default_value = "ferry-hub")]
    cluster_name: String,
}

/// Each worker thread's stack. The scheduler's step futures nest (a step's effect completes it
/// and starts the next); they are boxed where they nest, and this leaves room for the rest in
/// unoptimised builds, whose frames are several times larger than a release build's.
const WORKER_STACK_BYTES: usize = 8 * 1024 * 1024;

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    ferry_telemetry::init_tracing();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ferry-server: starting the async runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(Args::parse())) {
        eprintln!("ferry-server: {e:#}");
        std::process::exit(1);
    }
}

// Long: one arm per `ferry-server` subcommand and the serve path's wiring in start order;
// each step is a call.
async fn run(args: Args) -> Result<()> {
    match &args.cmd {
        Some(Cmd::HubInit {
            server_names,
            leafnode_listen,
            listen,
            monitor,
            store_dir,
            cluster,
        }) => {
            let store = store_dir
                .clone()
                .unwrap_or_else(|| args.hub_dir.join("jetstream"));
            let name = cluster.node_name.as_deref();
            let node = ferry_pki::HubNode {
                server_name: name.unwrap_or("ferry-hub").to_string(),
                listen: listen.clone(),
                monitor: monitor.clone(),
                store_dir: store,
                leafnodes: name.map_or("leafnodes.conf".into(), |n| format!("{n}-leafnodes.conf")),
                cluster: cluster
                    .cluster_listen
                    .as_ref()
                    .map(|l| ferry_pki::ClusterRoutes {
                        name: cluster.cluster_name.clone(),
                        listen: l.clone(),
                        routes: cluster.routes.clone(),
                    }),
            };
            let conf = name.map_or("hub.conf".into(), |n| format!("{n}.conf"));
            return hub_init(&args, server_names, leafnode_listen, &node, &conf);
        }
        Some(Cmd::Init {
            org,
            name,
            token_file,
        }) => return init(&args, org, name, token_file.as_deref()).await,
        None => {}
    }
    let services =
        parse_services(&args.services).map_err(|e| anyhow::anyhow!("--services: {e}"))?;
    let hub = ferry_pki::HubFiles::open(&args.hub_dir)?;
    let client = connect(&args, &hub, "ferry-server").await?;
    let js = async_nats::jetstream::new(client.clone());
    // Set up (or check) streams and buckets as the setup user; the services then open them as
    // their own users, which may not create or change them.
    ensure_store(js, &args).await?;

    let mut tasks: JoinSet<(Service, Result<()>)> = JoinSet::new();
    // Cancelled on SIGTERM: each service stops its loops and answers what it has in flight.
    let stop = CancellationToken::new();
    // The api serves HTTP too: it joins the router below.
    for &svc in services.iter().filter(|&&s| s != Service::Api) {
        spawn_service(&args, &hub, svc, &mut tasks, &stop).await?;
    }
    let names: Vec<String> = services.iter().map(|s| s.name().to_string()).collect();
    let mut app = Router::new()
        .route(
            "/healthz",
            get({
                let (client, names) = (client.clone(), names.clone());
                move || healthz(client.clone(), names.clone())
            }),
        )
        .route(
            "/metrics",
            get(|| async {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        ferry_telemetry::OPENMETRICS,
                    )],
                    ferry_telemetry::encode_metrics(),
                )
            }),
        );
    if services.contains(&Service::Api) {
        app = app.merge(start_api(&args, &hub, &mut tasks, &stop).await?);
    }
    let listener = tokio::net::TcpListener::bind(args.http_addr)
        .await
        .with_context(|| format!("binding {}", args.http_addr))?;
    info!(addr = %args.http_addr, services = ?names, "ferry-server listening");
    let http_limits = args.http_limits.clone();
    let serving = or_stop(stop.clone(), async move {
        http::serve(listener, app, &http_limits)
            .await
            .context("HTTP server")
    });
    tasks.spawn(async move { (Service::Api, serving.await) });

    tokio::select! {
        done = tasks.join_next() => {
            match done {
                Some(Ok((svc, Ok(())))) => anyhow::bail!("service {svc} stopped"),
                Some(Ok((svc, Err(e)))) => Err(e.context(format!("service {svc} failed"))),
                Some(Err(e)) => Err(anyhow::anyhow!("a service task panicked: {e}")),
                None => Ok(()),
            }
        }
        _ = shutdown_signal() => {
            info!("shutting down");
            stop.cancel();
            // The scheduler, build and the callout answer what they have in flight (up to
            // STOP_GRACE); the other loops end at once.
            let drained = async { while tasks.join_next().await.is_some() {} };
            let _ = tokio::time::timeout(ferry_store::STOP_GRACE + Duration::from_secs(1), drained).await;
            Ok(())
        }
    }
}

/// `work`, ended (as if it had returned) once `stop` is cancelled: for the loops that hold no
/// work of their own to finish (each handles one message at a time, and an unacknowledged
/// message is redelivered).
async fn or_stop(
    stop: CancellationToken,
    work: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    tokio::select! {
        r = work => r,
        () = stop.cancelled() => Ok(()),
    }
}

/// `hub-init`: the hub's trust directory, made once, and its nats-server configuration —
/// `hub.conf`, complete, including `auth.conf` and `leafnodes.conf` — written anew; prints every
/// file the directory holds and how to start the hub.
fn hub_init(
    args: &Args,
    server_names: &[String],
    leafnode_listen: &str,
    node: &ferry_pki::HubNode,
    conf_name: &str,
) -> Result<()> {
    // By its absolute path: the configurations name the files in it, and nats-server may run
    // from anywhere.
    std::fs::create_dir_all(&args.hub_dir)
        .with_context(|| format!("creating {}", args.hub_dir.display()))?;
    let dir = std::fs::canonicalize(&args.hub_dir)
        .with_context(|| format!("reading {}", args.hub_dir.display()))?;
    let hub = ferry_pki::HubFiles::load_or_create(&dir, server_names)
        .with_context(|| format!("creating the hub directory {}", dir.display()))?;
    let leafnodes = hub.path(&node.leafnodes);
    std::fs::write(&leafnodes, hub.leafnodes_conf(leafnode_listen))
        .with_context(|| format!("writing {}", leafnodes.display()))?;
    let conf = hub.path(conf_name);
    std::fs::write(&conf, hub.hub_conf(node))
        .with_context(|| format!("writing {}", conf.display()))?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    println!(
        "hub directory {} (trust files are made once and kept):",
        dir.display()
    );
    for f in files {
        println!("  {}", f.display());
    }
    println!("start the hub with: nats-server -c {}", conf.display());
    Ok(())
}

/// Starts one service (not the api) as its own NATS user, allowed only what its role needs.
async fn spawn_service(
    args: &Args,
    hub: &ferry_pki::HubFiles,
    svc: Service,
    tasks: &mut JoinSet<(Service, Result<()>)>,
    stop: &CancellationToken,
) -> Result<()> {
    let (client, store) = service_store(args, hub, svc).await?;
    match svc {
        Service::Api => {}
        Service::Scheduler => {
            let mut scheduler = ferry_scheduler::Scheduler::new(client, store)
                .with_lease(Duration::from_secs(args.job_lease_secs.max(1)))
                .with_max_plan_age(Duration::from_secs(args.max_plan_age_secs))
                .with_stop(stop.child_token());
            if let Some(secs) = args.job_available_secs {
                scheduler = scheduler.with_available(Duration::from_secs(secs.max(1)));
            }
            tasks.spawn(async move { (svc, scheduler.run().await.map_err(Into::into)) });
        }
        Service::Build => {
            let registry = match &args.vendor_registry {
                Some(url) => Some(
                    ferry_aws::RegistrySite::new(
                        url,
                        args.vendor_registry_ecr_region.clone(),
                        ferry_artifacts::Auth::from_parts(
                            args.vendor_registry_user.clone(),
                            args.vendor_registry_password.clone(),
                            args.vendor_registry_token.clone(),
                        ),
                    )
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("--vendor-registry {url}"))?,
                ),
                None => None,
            };
            let stop = stop.child_token();
            tasks.spawn(async move {
                let r = async {
                    ferry_build::BuildService::new(store, registry)
                        .await?
                        .with_stop(stop)
                        .run()
                        .await
                }
                .await;
                (svc, r.map_err(Into::into))
            });
        }
        Service::LogIngest => {
            let service = ferry_log_ingest::LogIngest::new(store).with_limits(args.quotas.limits());
            let running = or_stop(stop.clone(), async move { Ok(service.run().await?) });
            tasks.spawn(async move { (svc, running.await) });
        }
        Service::Approval => {
            let service = ferry_approval::ApprovalService::new(store);
            let running = or_stop(stop.clone(), async move { Ok(service.run().await?) });
            tasks.spawn(async move { (svc, running.await) });
        }
    }
    Ok(())
}

async fn init(args: &Args, org: &str, name: &str, file: Option<&std::path::Path>) -> Result<()> {
    let hub = ferry_pki::HubFiles::open(&args.hub_dir)?;
    let client = connect(args, &hub, "ferry-server init").await?;
    let store = ensure_store(async_nats::jetstream::new(client), args).await?;
    let tokens = store.repo::<ferry_model::ApiToken>();
    if !tokens.list(org).await?.is_empty() {
        anyhow::bail!(
            "org `{org}` already has tokens: create more with `ferry tokens create` (an admin token)"
        );
    }
    let (record, text) = ferry_api::mint(org, name, ferry_model::Role::Admin, Default::default())
        .context("generating a token")?;
    tokens.create(&record).await?;
    if let Some(path) = file {
        write_secret(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{text}");
    eprintln!("admin token `{name}` of org `{org}` created: it is shown only now");
    Ok(())
}

/// The api service: its NATS user's connection and store; the hub's auth callout and runners'
/// certificate renewals as tasks; its HTTP routes returned.
async fn start_api(
    args: &Args,
    hub: &ferry_pki::HubFiles,
    tasks: &mut JoinSet<(Service, Result<()>)>,
    stop: &CancellationToken,
) -> Result<Router> {
    let (client, store) = service_store(args, hub, Service::Api).await?;
    let sys = connect_with(args, hub, ferry_pki::hub::SYS_USER, "ferry-server (system)").await?;
    let issuer = ferry_api::bootstrap::Issuer {
        ca: std::sync::Arc::new(hub.ca()?),
        lifetime: Duration::from_secs(args.cert_lifetime_secs.max(60)),
        token_lifetime: Duration::from_secs(args.runner_token_secs.max(1)),
        sys,
        managed_runners: args.managed_runners,
        hub_url: args.runner_hub_url.clone(),
        renewals_at_once: args.renewals_at_once.max(1),
    };
    let admitted = ferry_api::callout::Admitted::default();
    let (sys, st, adm) = (issuer.sys.clone(), store.clone(), admitted.clone());
    let closing = or_stop(stop.clone(), async move {
        Ok(ferry_api::callout::close_throttled(sys, st, adm).await?)
    });
    tasks.spawn(async move { (Service::Api, closing.await) });
    let key = hub.callout_key()?;
    let (c, st) = (client.clone(), store.clone());
    let callout_tasks = ferry_store::Tasks::stopped_by(stop.child_token());
    tasks.spawn(async move {
        let r = ferry_api::callout::serve(c, key, st, admitted, callout_tasks).await;
        (Service::Api, r.map_err(Into::into))
    });
    let renewals = ferry_api::bootstrap::serve_renewals(
        client,
        store.clone(),
        issuer.clone(),
        ferry_store::Tasks::stopped_by(stop.child_token()),
    );
    let renewals = or_stop(stop.clone(), async move { Ok(renewals.await?) });
    tasks.spawn(async move { (Service::Api, renewals.await) });
    let total = args.http_limits.sse_max.max(1);
    let caps = ferry_api::streams::StreamCaps {
        per_token: args.http_limits.sse_per_token.max(1),
        per_org: (args.http_limits.sse_per_org)
            .unwrap_or_else(|| ferry_api::streams::StreamCaps::default_per_org(total))
            .max(1),
        total,
    };
    let tasks = ferry_store::Tasks::stopped_by(stop.child_token());
    let stack_bucket = args.stack_bucket.open().await?;
    Ok(ferry_api::router_with(
        store,
        Some(issuer),
        caps,
        tasks,
        stack_bucket,
    ))
}

/// A connection as `svc`'s own user, and the store opened through it.
async fn service_store(
    args: &Args,
    hub: &ferry_pki::HubFiles,
    svc: Service,
) -> Result<(async_nats::Client, Store)> {
    let client = connect_with(
        args,
        hub,
        svc.name(),
        &format!("ferry-server {}", svc.name()),
    )
    .await?;
    let mut store = Store::open(async_nats::jetstream::new(client.clone()))
        .await
        .with_context(|| format!("opening the store as {}", svc.name()))?;
    // The services that write and read archived job logs.
    if matches!(svc, Service::Api | Service::LogIngest)
        && let Some(archive) = args.log_archive.open().await?
    {
        info!(service = svc.name(), archive = %archive.describe(), "job logs archived outside the hub");
        store = store.with_log_archive(archive);
    }
    Ok((client, store))
}

/// Connects to the hub as the control plane's setup user (TLS client certificate; it may do
/// anything but change or delete the audit stream): streams and buckets, the first token.
async fn connect(args: &Args, hub: &ferry_pki::HubFiles, name: &str) -> Result<async_nats::Client> {
    connect_with(args, hub, ferry_pki::hub::SERVICES_USER, name).await
}

async fn connect_with(
    args: &Args,
    hub: &ferry_pki::HubFiles,
    user: &str,
    name: &str,
) -> Result<async_nats::Client> {
    hub.credentials(user)?
        .connect_options()
        .name(name)
        .retry_on_initial_connect()
        .connect(
            ferry_pki::hub::addrs(&args.nats_url)
                .with_context(|| format!("--nats-url {:?}", args.nats_url))?,
        )
        .await
        .with_context(|| format!("connecting to NATS at {}", args.nats_url))
}

/// Writes a secret readable by its owner only.
fn write_secret(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")
}

/// Creates streams and buckets, retrying while the hub's JetStream is still starting.
async fn ensure_store(js: async_nats::jetstream::Context, args: &Args) -> Result<Store> {
    let limits = args.stream_caps.limits().map_err(anyhow::Error::msg)?;
    let mut delay = Duration::from_millis(100);
    for attempt in 1.. {
        match Store::ensure_with(js.clone(), args.replicas, &limits).await {
            Ok(s) => return Ok(s),
            // Not a hub still starting: waiting would not help.
            Err(e @ ferry_store::StoreError::Protected { .. }) => return Err(e.into()),
            Err(e) if attempt < 30 => {
                warn!(attempt, error = %e, "JetStream not ready; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(e).context("setting up streams and buckets"),
        }
    }
    unreachable!()
}

async fn healthz(
    client: async_nats::Client,
    services: Vec<String>,
) -> (axum::http::StatusCode, axum::Json<serde_json::Value>) {
    let connected = client.connection_state() == async_nats::connection::State::Connected;
    let status = if connected {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        axum::Json(
            serde_json::json!({ "status": if connected { "ok" } else { "nats disconnected" }, "services": services }),
        ),
    )
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => return ctrl_c.await.unwrap_or(()),
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
}
