//! `ferry-loadtest`: benchmarks that print Ferry's figures next to raw-NATS baselines measured in
//! the same run, on the same server. Never a pass/fail timing assertion: a report.
//!
//! `dispatch`: N simulated installs, each with a lightweight runner in this process (`light.rs`:
//! a heartbeat, then a doorbell subscription; a grant made to it at the offer is its job, a ring
//! carrying an offer is claimed, and an empty ring makes it ask the scheduler for its install's
//! offers, exactly as `ferry-runner` does, through `ferry_runner::offers`). The real scheduler runs
//! in this process and grants the jobs. Noop jobs are dispatched through the scheduler's own
//! `offer_job` (an install with one runner: the record written granted, the doorbell carrying the
//! grant). Latency is the time from that call to the grant at the runner, each job dispatched once
//! the one before was granted (the path's latency, not queueing); offers/s is measured with
//! `--concurrency` dispatches at once; "at offer" is the share of its jobs granted at their offer
//! (the rest were claimed). Baselines: a core NATS request-reply round trip, and JetStream publish +
//! pull of same-size messages.
//!
//! `list`: the API's install listing over many installs (`list.rs`). `reconnect`: installs
//! admitted through the auth callout all at once (`reconnect.rs`). `release`: one release over
//! many installs with real runners (`release.rs`). `events`: the memory of open event streams
//! (`events.rs`).
//!
//! ```text
//! cargo run --release -p ferry-loadtest -- dispatch --installs 10,100,1000,5000 --jobs 300
//! cargo run --release -p ferry-loadtest -- list --installs 10,100,1000,5000
//! cargo run --release -p ferry-loadtest -- reconnect --installs 1000,5000
//! cargo build --release -p ferry-server -p ferry-cli && \
//!   cargo run --release -p ferry-loadtest -- release --installs 1000
//! cargo run --release -p ferry-loadtest -- events --streams 1000
//! ```

/// The allocator ferry-server and ferry-runner use, so the runners this process hosts spend what
/// real ones spend.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod breakdown;
mod events;
mod http;
mod leaf;
mod light;
mod list;
mod reconnect;
mod release;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use async_nats::jetstream::{self, consumer::pull, stream};
use clap::{Parser, Subcommand};
use ferry_model as m;
use ferry_protocol::messages::ClaimRequest;
use ferry_protocol::{encode, subjects};
use ferry_tests::fixtures::plan_job;
use futures_util::StreamExt;

#[derive(Parser)]
#[command(
    name = "ferry-loadtest",
    about = "Ferry benchmarks against raw-NATS baselines"
)]
struct Args {
    /// NATS URL; by default a nats-server is started on a free port (from .tools/bin or PATH).
    #[arg(long)]
    nats_url: Option<String>,
    /// The hub's trust directory, with --nats-url (`ferry-server hub-init`).
    #[arg(long, default_value = ".ferry/hub")]
    hub_dir: std::path::PathBuf,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Job dispatch to many installs vs raw request-reply and raw JetStream publish + pull.
    Dispatch {
        /// Install counts to measure, comma-separated.
        #[arg(long, default_value = "10,100,1000,5000", value_delimiter = ',')]
        installs: Vec<usize>,
        /// Noop jobs dispatched at each install count, spread over the installs.
        #[arg(long, default_value_t = 300)]
        jobs: usize,
        /// Jobs dispatched at once (the scheduler's concurrent handlers).
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Jobs dispatched one after another's claim, for the latency figures.
        #[arg(long, default_value_t = 1000)]
        samples: usize,
        /// Each simulated install behind a real leaf nats-server (the runner's own leaf, with
        /// the install's certificate, admitted by the auth callout), as every install runs; the
        /// round-trip baseline then goes through a leaf too. Leaves cost ~20 MB each: use
        /// install counts in the tens or hundreds.
        #[arg(long)]
        leaf: bool,
        /// Where a real job's time goes, span by span, instead of the offers alone: the real
        /// ferry-server (beside this binary) and real runners (behind their own leaves with
        /// --leaf), every install deployed --rounds times one deploy at a time; prints each
        /// span's p50 and p99 and offer-to-plugin-start against a raw round trip. Uses the
        /// largest --installs count.
        #[arg(long)]
        breakdown: bool,
        /// With --breakdown: how many times each install is deployed.
        #[arg(long, default_value_t = 20)]
        rounds: usize,
    },
    /// One release over many installs (real runners in this process, the real ferry-server
    /// beside this binary) vs one install's deploy in the same run.
    Release {
        /// Installs the release goes over.
        #[arg(long, default_value_t = 1000)]
        installs: usize,
        /// The release's waves.
        #[arg(long, default_value = "1,10%,100%")]
        waves: String,
        /// Where the runners' data directories go: the disks of the simulated hosts, all on
        /// one filesystem here. By default a tmpfs (`/dev/shm`, when there is one): on an ext4
        /// without a journal (this machine's root) every file created scans the inodes deleted
        /// in the last seconds, and a thousand hosts' work directories on one such disk cost
        /// the runners a fifth of their CPU (`perf`: `recently_deleted`), which no real host
        /// pays (loadtest/README.md).
        #[arg(long)]
        hosts_dir: Option<std::path::PathBuf>,
    },
    /// Internal: one job's plugin, for the runners `release` runs in this process.
    #[command(hide = true)]
    Plugin(ferry_runner::plugin::PluginArgs),
    /// Installs connecting at once, each with its own certificate, admitted by the auth callout
    /// (as after a hub restart) vs the same TLS connections for a configured user.
    Reconnect {
        /// Install counts to measure, comma-separated.
        #[arg(long, default_value = "1000,5000", value_delimiter = ',')]
        installs: Vec<usize>,
        /// Each install behind a real leaf nats-server of its own (the largest count; ~20 MB
        /// each), then the hub restarted: the time until every leaf is admitted again, each
        /// leaf's memory and the hub's per leaf.
        #[arg(long)]
        leaf: bool,
    },
    /// Open event streams (`GET /v1/events`) on the real ferry-server: its RSS per stream vs
    /// raw ordered consumers' in this process (build ferry-server and ferry-cli with --release).
    Events {
        /// Streams held open at once (by one token; the caps are raised to let them in).
        #[arg(long, default_value_t = 1000)]
        streams: usize,
        /// Record changes every stream then receives.
        #[arg(long, default_value_t = 5)]
        changes: usize,
    },
    /// The API's install listing (`GET /v1/installs`) over many installs vs one raw pass over
    /// the installs bucket's stream.
    List {
        /// Install counts to measure, comma-separated (records are added up to each).
        #[arg(long, default_value = "10,100,1000,5000", value_delimiter = ',')]
        installs: Vec<usize>,
    },
}

const ORG: &str = "bench";

/// Samples of each raw baseline: enough that one scheduling hiccup on a small machine does not move
/// the figure Ferry's are divided by.
pub(crate) const BASELINE_SAMPLES: usize = 20_000;

fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    // `release` runs real runners in this process; each job's plugin is this binary again, as
    // `ferry-runner plugin` is: synchronous, before any runtime exists.
    if let Cmd::Plugin(plugin) = &args.cmd {
        std::process::exit(ferry_runner::plugin::entry(plugin));
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(args))
}

// Long: the benchmark's script, top to bottom (start the hub, the scheduler, the installs,
// run the baseline, run the dispatch, print); it is read as a script.
async fn run(args: Args) -> Result<()> {
    let mut server = None;
    // The hub is a real one: TLS with client certificates, the services' user (as `ferry-server`
    // connects), the auth callout's configuration; the raw baselines run over the same link.
    let (url, hub) = match args.nats_url {
        Some(u) => (u, args.hub_dir.clone()),
        None => {
            let s = ferry_tests::NatsServer::start();
            let u = (s.url.clone(), s.hub.dir.clone());
            server = Some(s);
            u
        }
    };
    let client = ferry_pki::HubFiles::open(&hub)?
        .credentials(ferry_pki::hub::SERVICES_USER)?
        .connect_options()
        .connect(&url)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let js = jetstream::new(client.clone());
    let store = ferry_store::Store::ensure(js.clone(), 1).await?;
    if let Cmd::List { installs } = &args.cmd {
        return list::run(&js, &store, installs).await;
    }
    if let Cmd::Release {
        installs,
        waves,
        hosts_dir,
    } = &args.cmd
    {
        let Some(server) = &server else {
            anyhow::bail!("release starts its own hub (to read its CPU): drop --nats-url");
        };
        return release::run(server, *installs, waves, hosts_dir.as_deref()).await;
    }
    if let Cmd::Events { streams, changes } = &args.cmd {
        let Some(server) = &server else {
            anyhow::bail!("events starts its own hub: drop --nats-url");
        };
        return events::run(server, *streams, *changes).await;
    }
    if let Cmd::Dispatch {
        installs,
        leaf,
        breakdown: true,
        rounds,
        ..
    } = &args.cmd
    {
        let Some(server) = &server else {
            anyhow::bail!("--breakdown starts its own hub: drop --nats-url");
        };
        let n = installs.iter().copied().max().unwrap_or(1);
        return breakdown::run(server, n, *rounds, *leaf).await;
    }
    if let Cmd::Reconnect { installs, leaf } = &args.cmd {
        let Some(server) = &mut server else {
            anyhow::bail!("reconnect starts its own hub (to read its memory): drop --nats-url");
        };
        if *leaf {
            let n = installs.iter().copied().max().unwrap_or(1);
            return reconnect::run_leaves(server, &store, n).await;
        }
        return reconnect::run(server, &store, installs).await;
    }
    // The real scheduler grants the claims.
    let scheduler = ferry_scheduler::Scheduler::new(client.clone(), store.clone());
    tokio::spawn(scheduler.clone().run());
    scheduler_ready(&client).await?;
    match args.cmd {
        Cmd::List { .. }
        | Cmd::Reconnect { .. }
        | Cmd::Release { .. }
        | Cmd::Events { .. }
        | Cmd::Plugin { .. } => {}
        Cmd::Dispatch {
            installs,
            jobs,
            concurrency,
            samples,
            leaf,
            ..
        } => {
            // With --leaf: the largest count's installs, each behind its leaf, made once.
            let _kept;
            let leaves = match (leaf, &server) {
                (false, _) => Vec::new(),
                (true, None) => anyhow::bail!("--leaf starts its own hub: drop --nats-url"),
                (true, Some(server)) => {
                    let max = installs.iter().copied().max().unwrap_or(0);
                    let (made, kept) = leaf::installs(server, &store, max).await?;
                    _kept = kept;
                    made
                }
            };
            println!(
                "{:>8} {:>6} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9} {:>8}",
                "installs",
                "jobs",
                "offers/s",
                "p50 ms",
                "p99 ms",
                "consumers",
                "rr p99 ms",
                "js msgs/s",
                "p99/rr",
                "tput/js",
                "vs first",
                "at offer"
            );
            // Warm-up, not reported: the first measurements of a fresh server and process (page
            // faults, allocations, the file store's first blocks) would skew the first row.
            if let Some(&n) = installs.first() {
                let warm = installs_for(&client, &leaves, n, "w");
                dispatch(&store, &scheduler, &warm, jobs, concurrency).await?;
                baseline(&js, jobs, 256).await?;
            }
            let mut first_ratio = None;
            for n in installs {
                // Latency one job at a time (no queueing), throughput with concurrent dispatch.
                let lat = latency(
                    &client,
                    &scheduler,
                    &installs_for(&client, &leaves, n, "l"),
                    samples,
                )
                .await?;
                let some = installs_for(&client, &leaves, n, "i");
                let d = dispatch(&store, &scheduler, &some, jobs, concurrency).await?;
                let rr = match leaves.first() {
                    Some(i) => leaf::request_reply(&client, i, BASELINE_SAMPLES).await?,
                    None => request_reply(&client, BASELINE_SAMPLES).await?,
                };
                let raw = baseline(&js, BASELINE_SAMPLES, d.offer_size).await?;
                let ratio = d.rate / raw;
                let (p50, p99) = lat;
                let first = *first_ratio.get_or_insert(ratio);
                println!(
                    "{n:>8} {jobs:>6} {:>10.0} {:>10.2} {:>10.2} {:>9} {:>9.3} {raw:>10.0} {:>9.1} {ratio:>9.3} {:>9.2} {:>7.0}%",
                    d.rate,
                    p50.as_secs_f64() * 1e3,
                    p99.as_secs_f64() * 1e3,
                    d.consumers,
                    rr.as_secs_f64() * 1e3,
                    p99.as_secs_f64() / rr.as_secs_f64(),
                    ratio / first,
                    d.at_offer as f64 * 100.0 / jobs.max(1) as f64,
                );
            }
        }
    }
    Ok(())
}

struct Dispatched {
    rate: f64,
    /// Jobs granted at their offer (the rest were claimed).
    at_offer: usize,
    consumers: usize,
    offer_size: usize,
}

/// A simulated install: its name, and the connection its lightweight runner uses (the hub's
/// own, in direct mode; its leaf's, with `--leaf`).
#[derive(Clone)]
pub(crate) struct Install {
    name: String,
    client: async_nats::Client,
}

/// `n` installs for one measurement: fresh names on the shared connection, or (`--leaf`) the
/// first `n` of the leaf installs made for the run.
fn installs_for(
    client: &async_nats::Client,
    leaves: &[Install],
    n: usize,
    tag: &str,
) -> Vec<Install> {
    if !leaves.is_empty() {
        return leaves[..n.min(leaves.len())].to_vec();
    }
    let run = m::new_id();
    (0..n)
        .map(|i| Install {
            name: format!("{tag}{i}-{}", &run[20..]),
            client: client.clone(),
        })
        .collect()
}

/// Dispatches `jobs` noop jobs over `installs` installs, the way the scheduler does (job record,
/// offer, doorbell), `concurrency` at a time, and waits until every one was claimed.
async fn dispatch(
    store: &ferry_store::Store,
    scheduler: &ferry_scheduler::Scheduler,
    installs: &[Install],
    jobs: usize,
    concurrency: usize,
) -> Result<Dispatched> {
    let run = m::new_id();
    let names: Vec<String> = installs.iter().map(|i| i.name.clone()).collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let tasks = light::runners(&store.js.client(), installs, tx).await?;
    let size = encode(&plan_job(ORG, &names[0], "x").1).len();
    let start = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut pubs = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (scheduler, names, next, run) =
            (scheduler.clone(), names.clone(), next.clone(), run.clone());
        pubs.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= jobs {
                    return anyhow::Ok(());
                }
                // Spread over the installs: a fixed sample, the same at every install count.
                let install = &names[(i * 7919) % names.len()];
                let id = format!("{run}-j{i}");
                // The scheduler's own dispatch: record, offer, doorbell.
                let (job, offer) = plan_job(ORG, install, &id);
                scheduler.offer_job(job, offer).await?;
            }
        }));
    }
    for p in pubs {
        p.await??;
    }
    let (mut claimed, mut at_offer) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    while claimed < jobs {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(Some((_, _, pregranted))) = tokio::time::timeout(left, rx.recv()).await else {
            anyhow::bail!("only {claimed} of {jobs} jobs were granted");
        };
        claimed += 1;
        at_offer += usize::from(pregranted);
    }
    let rate = jobs as f64 / start.elapsed().as_secs_f64();
    let consumers = consumer_count(&store.js).await?;
    for t in tasks {
        t.abort();
    }
    Ok(Dispatched {
        rate,
        at_offer,
        consumers,
        offer_size: size,
    })
}

/// Dispatch-to-start latency, p50 and p99: `samples` noop jobs over `installs` installs, each
/// dispatched once the one before was claimed, so the figure is the path's and not queueing's.
async fn latency(
    hub: &async_nats::Client,
    scheduler: &ferry_scheduler::Scheduler,
    installs: &[Install],
    samples: usize,
) -> Result<(Duration, Duration)> {
    let run = m::new_id();
    let names: Vec<String> = installs.iter().map(|i| i.name.clone()).collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let tasks = light::runners(hub, installs, tx).await?;
    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples {
        let install = &names[(i * 7919) % names.len()];
        let id = format!("{run}-l{i}");
        let t0 = Instant::now();
        let (job, offer) = plan_job(ORG, install, &id);
        scheduler.offer_job(job, offer).await?;
        loop {
            match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                Ok(Some((granted, at, _))) if granted == id => {
                    latencies.push(at.saturating_duration_since(t0));
                    break;
                }
                Ok(Some(_)) => continue,
                _ => anyhow::bail!("job {i} of the latency run was not claimed within 10 s"),
            }
        }
    }
    for t in tasks {
        t.abort();
    }
    latencies.sort();
    let at = |q: usize| latencies[(latencies.len() * q / 100).min(latencies.len() - 1)];
    Ok((at(50), at(99)))
}

/// Waits until the scheduler answers claims (a claim of an unknown job is refused, not unanswered).
async fn scheduler_ready(client: &async_nats::Client) -> Result<()> {
    let probe = encode(&ClaimRequest {
        job_id: "none".into(),
        runner_id: "probe".into(),
    });
    for _ in 0..100 {
        if client
            .request(subjects::claim(ORG, "probe"), probe.clone().into())
            .await
            .is_ok()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the scheduler did not start answering claims")
}

/// Every consumer on the hub, over all streams.
async fn consumer_count(js: &jetstream::Context) -> Result<usize> {
    let mut names = js.stream_names();
    let mut total = 0;
    while let Some(name) = names.next().await {
        let mut s = js.get_stream(name?).await?;
        total += s.info().await?.state.consumer_count;
    }
    Ok(total)
}

/// p99 of `count` core NATS request-reply round trips to a responder on the same server.
pub(crate) async fn request_reply(client: &async_nats::Client, count: usize) -> Result<Duration> {
    let subject = format!("bench.rr.{}", m::new_id());
    let mut sub = client.subscribe(subject.clone()).await?;
    let responder_client = client.clone();
    let responder = tokio::spawn(async move {
        while let Some(msg) = sub.next().await {
            if let Some(reply) = msg.reply {
                let _ = responder_client.publish(reply, msg.payload).await;
            }
        }
    });
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let t = Instant::now();
        client.request(subject.clone(), "ping".into()).await?;
        times.push(t.elapsed());
    }
    responder.abort();
    times.sort();
    Ok(times[(times.len() * 99 / 100).min(times.len() - 1)])
}

/// Raw JetStream: the same number of same-size messages, published with 256 acks in flight,
/// drained by one pull consumer with acks; messages per second.
async fn baseline(js: &jetstream::Context, count: usize, size: usize) -> Result<f64> {
    let name = format!("BASELINE{}", &m::new_id()[20..]).to_uppercase();
    let s = js
        .create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![format!("baseline.{name}.>")],
            ..Default::default()
        })
        .await?;
    let payload = vec![7u8; size];
    let start = Instant::now();
    let mut inflight = std::collections::VecDeque::new();
    for i in 0..count {
        inflight.push_back(
            js.publish(
                format!("baseline.{name}.{}", i % 1000),
                payload.clone().into(),
            )
            .await?,
        );
        if inflight.len() >= 256
            && let Some(a) = inflight.pop_front()
        {
            a.await?;
        }
    }
    for a in inflight {
        a.await?;
    }
    let consumer = s
        .create_consumer(pull::Config {
            durable_name: None,
            ..Default::default()
        })
        .await?;
    let mut got = 0;
    let mut msgs = consumer.messages().await?;
    while got < count {
        let Some(m) = msgs.next().await else { break };
        m.map_err(|e| anyhow::anyhow!("{e}"))?
            .ack()
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        got += 1;
    }
    let rate = count as f64 / start.elapsed().as_secs_f64();
    js.delete_stream(&name).await?;
    Ok(rate)
}
