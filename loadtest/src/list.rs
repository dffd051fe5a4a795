//! `list`: the API's install listing (`GET /v1/installs`, the path `ferry installs list` takes)
//! over N install records, served by the real api router in this process, against what one
//! pass over the bucket's stream costs in raw NATS (the baseline), and against the way listings
//! were read before (one KV get per install).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull};
use ferry_model as m;
use ferry_store::Store;
use futures_util::{StreamExt, TryStreamExt};

use crate::ORG;

/// Each figure is the median of this many rounds.
const ROUNDS: usize = 5;

pub async fn run(js: &jetstream::Context, store: &Store, counts: &[usize]) -> Result<()> {
    let (addr, token) = serve_api(store).await?;
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10}",
        "installs", "api ms", "scan ms", "gets ms", "raw ms", "api/raw", "KiB"
    );
    let mut made = 0;
    for &n in counts {
        made = add_installs(store, made, n).await?;
        let (api, bytes) = median(ROUNDS, || get_installs(addr, &token, n)).await?;
        let repo = store.repo::<m::Install>();
        let (scan, _) = median(ROUNDS, || async {
            let got = repo.scan(ORG).await?.len();
            Ok((Instant::now(), got))
        })
        .await?;
        let (gets, _) = median(1, || async {
            let got = repo.list(ORG).await?.len();
            Ok((Instant::now(), got))
        })
        .await?;
        let (raw, _) = median(ROUNDS, || raw_pass(js, n)).await?;
        println!(
            "{n:>8} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>9.1} {:>10}",
            ms(api),
            ms(scan),
            ms(gets),
            ms(raw),
            api.as_secs_f64() / raw.as_secs_f64(),
            bytes / 1024,
        );
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `f` `rounds` times; the median time of a round and the last round's result. Each round
/// returns when it ended (the time is taken from its start to then).
async fn median<F, Fut>(rounds: usize, f: F) -> Result<(Duration, usize)>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(Instant, usize)>>,
{
    let mut times = Vec::with_capacity(rounds);
    let mut last = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        let (end, got) = f().await?;
        times.push(end - start);
        last = got;
    }
    times.sort();
    Ok((times[times.len() / 2], last))
}

/// The api router on a free loopback port, and an admin token for it.
async fn serve_api(store: &Store) -> Result<(std::net::SocketAddr, String)> {
    let (record, text) = ferry_api::mint(ORG, "loadtest", m::Role::Admin, Default::default())?;
    store
        .repo::<m::ApiToken>()
        .create_if_absent(&record)
        .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = ferry_api::router(store.clone(), None);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((addr, text))
}

/// Creates install records `from..to` (as `POST /v1/installs` stores them), 256 at a time.
async fn add_installs(store: &Store, from: usize, to: usize) -> Result<usize> {
    let repo = store.repo::<m::Install>();
    futures_util::stream::iter(from..to)
        .map(|n| {
            let repo = repo.clone();
            async move {
                let mut i = install(n)?;
                i.labels
                    .insert("tier".into(), ["gold", "silver"][n % 2].into());
                repo.create_if_absent(&i).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(256)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(to.max(from))
}

fn install(n: usize) -> Result<m::Install> {
    let mut components = serde_json::Map::new();
    for c in ["greeter", "counter", "reporter"] {
        components.insert(
            c.into(),
            serde_json::json!({ "status": "active", "outputs": { "message": "hello, world" } }),
        );
    }
    Ok(serde_json::from_value(serde_json::json!({
        "org": ORG, "name": format!("install-{n:05}"), "app": "hello",
        "app_config_id": "01m8aaaaaaaaaaaaaaaaaaaaaa", "inputs": { "greeting": "hello" },
        "approve_all": true, "status": "active", "sandbox": { "status": "active" },
        "components": components, "last_workflow": null,
        "created_at": m::now(), "updated_at": m::now()
    }))?)
}

/// `GET /v1/installs` over HTTP/1.1, read to its end; checks it listed `n` installs.
async fn get_installs(
    addr: std::net::SocketAddr,
    token: &str,
    n: usize,
) -> Result<(Instant, usize)> {
    let (status, body) = crate::http::request(addr, "GET", "/v1/installs", token, None).await?;
    let end = Instant::now();
    if status != 200 {
        bail!("GET /v1/installs: {status}");
    }
    let listed = serde_json::from_slice::<Vec<serde_json::Value>>(&body)?.len();
    if listed != n {
        bail!("GET /v1/installs listed {listed} installs, not {n}");
    }
    Ok((end, body.len()))
}

/// The baseline: one ordered consumer over the installs bucket's stream, the last message of
/// each key, raw bytes (no decoding, no HTTP).
async fn raw_pass(js: &jetstream::Context, n: usize) -> Result<(Instant, usize)> {
    let stream = js
        .get_stream(format!(
            "KV_{}",
            ferry_protocol::resources::buckets::INSTALLS
        ))
        .await
        .context("the installs bucket's stream")?;
    let consumer = stream
        .create_consumer(pull::OrderedConfig {
            filter_subject: format!(
                "$KV.{}.{ORG}.>",
                ferry_protocol::resources::buckets::INSTALLS
            ),
            deliver_policy: DeliverPolicy::LastPerSubject,
            ..Default::default()
        })
        .await?;
    let mut messages = consumer.messages().await?;
    let mut got = 0;
    while let Some(msg) = messages.try_next().await? {
        got += 1;
        if msg.info().map_err(|e| anyhow::anyhow!("{e}"))?.pending == 0 {
            break;
        }
    }
    if got != n {
        bail!("the raw pass read {got} records, not {n}");
    }
    Ok((Instant::now(), got))
}
