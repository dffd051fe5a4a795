use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use ferry_runner::{Runner, RunnerConfig};

/// Ferry's install runner: pulls its install's jobs over one outbound NATS connection and runs each
/// one as a child process through a plugin. Listens on no port; keeps no state of record.
#[derive(Parser, Debug)]
#[command(name = "ferry-runner", version)]
struct Args {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// NATS URL: the install's leaf nats-server, or the hub in direct mode.
    #[arg(long, env = "FERRY_NATS_URL", default_value = "nats://127.0.0.1:4222")]
    nats_url: String,
    /// The org this install belongs to.
    #[arg(long, env = "FERRY_ORG", default_value = "default")]
    org: String,
    /// The install this runner serves.
    #[arg(long, env = "FERRY_INSTALL")]
    install: Option<String>,
    /// Install-side data: the install's artifact store, component state, job work directories.
    #[arg(long, env = "FERRY_RUNNER_DATA_DIR", default_value = ".ferry/runner")]
    data_dir: PathBuf,
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
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Internal: run one job's plugin (started by the runner itself, one process per job).
    #[command(hide = true)]
    Plugin {
        #[arg(long)]
        job: PathBuf,
        #[arg(long)]
        result: PathBuf,
    },
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Some(Cmd::Plugin { job, result }) = &args.command {
        std::process::exit(ferry_runner::plugin::main(job, result));
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    ferry_telemetry::init_tracing();
    let Some(install) = args.install.clone() else {
        eprintln!("ferry-runner: --install (or FERRY_INSTALL) is required");
        std::process::exit(2);
    };
    let cfg = RunnerConfig {
        nats_url: args.nats_url,
        org: args.org,
        install,
        data_dir: args.data_dir,
        max_jobs: args.max_jobs,
        idle_poll: Duration::from_secs(30),
        cancel_grace: Duration::from_secs(args.cancel_grace_secs),
        drain: Duration::from_secs(args.drain_secs),
    };
    let runner = match Runner::connect(cfg).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ferry-runner: {e}");
            std::process::exit(1);
        }
    };
    let stop = async {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate() => {}
        }
    };
    if let Err(e) = runner.run_until(stop).await {
        eprintln!("ferry-runner: {e}");
        std::process::exit(1);
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
