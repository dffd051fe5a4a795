//! `ferry-loadtest`: benchmarks that print Ferry's figures next to a raw-NATS baseline measured in
//! the same run, on the same server. Never a pass/fail timing assertion: a report.
//!
//! `dispatch`: job offers for N installs, published the way the scheduler publishes them (postcard,
//! dedup id, awaited ack, doorbell) and pulled the way each runner pulls them (from its install's
//! memory-backed, single-replica consumer). The baseline publishes the same number of same-size
//! messages with 256 acks in flight and drains them with one pull consumer. Run it at several install
//! counts to see whether dispatch cost stays flat as installs grow.
//!
//! ```text
//! cargo run --release -p ferry-loadtest -- dispatch --installs 10,100,1000 --jobs-per-install 10
//! ```

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use async_nats::jetstream::{self, consumer::pull, stream};
use clap::{Parser, Subcommand};
use ferry_protocol::messages::{ComponentJob, ComponentKind, JobOffer, JobSpec, Timeouts};
use ferry_protocol::{encode, subjects};
use futures_util::StreamExt;

#[derive(Parser)]
#[command(
    name = "ferry-loadtest",
    about = "Ferry benchmarks against a raw-NATS baseline"
)]
struct Args {
    /// NATS URL; by default a nats-server is started on a free port (from .tools/bin or PATH).
    #[arg(long)]
    nats_url: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Offer dispatch to many installs vs raw JetStream publish + pull.
    Dispatch {
        /// Install counts to measure, comma-separated.
        #[arg(long, default_value = "10,100,1000", value_delimiter = ',')]
        installs: Vec<usize>,
        #[arg(long, default_value_t = 10)]
        jobs_per_install: usize,
    },
}

#[tokio::main]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let _server;
    let url = match args.nats_url {
        Some(u) => u,
        None => {
            let s = ferry_tests::NatsServer::start();
            let u = s.url.clone();
            _server = s;
            u
        }
    };
    let client = async_nats::connect(&url)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let js = jetstream::new(client.clone());
    let store = ferry_store::Store::ensure(js.clone(), 1).await?;
    match args.cmd {
        Cmd::Dispatch {
            installs,
            jobs_per_install,
        } => {
            println!(
                "{:>9} {:>8} {:>16} {:>16} {:>7}",
                "installs", "offers", "ferry offers/s", "raw msgs/s", "ratio"
            );
            for n in installs {
                let (ferry_rate, size) = dispatch(&client, &store, n, jobs_per_install).await?;
                let raw_rate = baseline(&js, n * jobs_per_install, size).await?;
                println!(
                    "{n:>9} {:>8} {ferry_rate:>16.0} {raw_rate:>16.0} {:>7.2}",
                    n * jobs_per_install,
                    ferry_rate / raw_rate
                );
            }
        }
    }
    Ok(())
}

fn offer(install: &str, i: usize) -> JobOffer {
    JobOffer {
        job_id: format!("j{i}"),
        org: "bench".into(),
        install: install.into(),
        workflow_id: "wf".into(),
        spec: JobSpec::Plan(ComponentJob {
            component: "web".into(),
            kind: ComponentKind::Script,
            artifact_digest: format!("sha256:{}", "0".repeat(64)),
            vars: vec![("region".into(), "eu-west-1".into())],
            env: vec![("GREETING".into(), "hello".into())],
            applied_digest: None,
        }),
        timeouts: Timeouts::default(),
    }
}

/// Ferry's path: scheduler-style publishes, then every install's runner-style consumer drains its own
/// offers concurrently. Returns offers per second (publish to last ack) and the offer size.
async fn dispatch(
    client: &async_nats::Client,
    store: &ferry_store::Store,
    installs: usize,
    per: usize,
) -> Result<(f64, usize)> {
    let bus = store.bus();
    let run = format!(
        "r{}",
        Instant::now().elapsed().as_nanos() % 1_000_000 + installs as u128
    );
    let names: Vec<String> = (0..installs).map(|i| format!("{run}-i{i}")).collect();
    let size = encode(&offer(&names[0], 0)).len();
    let start = Instant::now();
    // Publishes: 64 concurrent publishers, each awaiting its acks, like the scheduler's handlers.
    let mut pubs = Vec::new();
    for chunk in names.chunks(names.len().div_ceil(64)) {
        let bus = bus.clone();
        let client = client.clone();
        let chunk = chunk.to_vec();
        pubs.push(tokio::spawn(async move {
            for name in &chunk {
                for j in 0..per {
                    let o = offer(name, j);
                    bus.publish_msg(
                        subjects::job("bench", name, &o.job_id),
                        &format!("{name}-{j}"),
                        &o,
                    )
                    .await?;
                }
                client
                    .publish(subjects::wake("bench", name), Default::default())
                    .await?;
            }
            anyhow::Ok(())
        }));
    }
    // Runners: one consumer per install, each fetching and acknowledging its own offers.
    let stream = store.js.get_stream("JOBS").await?;
    let mut runners = Vec::new();
    for name in &names {
        let consumer = stream
            .create_consumer(ferry_runner::runner::offers_consumer_config("bench", name))
            .await?;
        runners.push(tokio::spawn(async move {
            let mut got = 0;
            while got < per {
                let mut batch = consumer
                    .fetch()
                    .max_messages(per - got)
                    .expires(Duration::from_millis(500))
                    .messages()
                    .await?;
                while let Some(m) = batch.next().await {
                    let m = m.map_err(|e| anyhow::anyhow!("{e}"))?;
                    m.double_ack().await.map_err(|e| anyhow::anyhow!("{e}"))?;
                    got += 1;
                }
            }
            anyhow::Ok(())
        }));
    }
    for p in pubs {
        p.await??;
    }
    for r in runners {
        r.await??;
    }
    Ok((
        (installs * per) as f64 / start.elapsed().as_secs_f64(),
        size,
    ))
}

/// Raw NATS: the same number of same-size messages, published with 256 acks in flight, drained by
/// one pull consumer with acks.
async fn baseline(js: &jetstream::Context, count: usize, size: usize) -> Result<f64> {
    let name = format!("BASELINE{count}");
    let _ = js.delete_stream(&name).await;
    let s = js
        .create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![format!("baseline.{count}.>")],
            ..Default::default()
        })
        .await?;
    let payload = vec![7u8; size];
    let start = Instant::now();
    let mut inflight = std::collections::VecDeque::new();
    for i in 0..count {
        inflight.push_back(
            js.publish(
                format!("baseline.{count}.{}", i % 1000),
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
