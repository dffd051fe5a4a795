//! `events`: what an open event stream (`GET /v1/events`) costs the real `ferry-server`, beside
//! the same number of raw ordered consumers on `EVENTS` held by this process (the NATS client's
//! own cost per consumer: the floor any stream sits on). Reported: the server's idle RSS, its RSS
//! with the streams open and after `--changes` record changes reached every stream, the RSS
//! per stream, what is left once they closed and after as many were opened again (reused, not
//! grown), and the raw baseline per consumer. (Before the
//! shared feed, each open stream was such a consumer: a thousand streams did not fit the
//! stream's consumer limit, and each cost the server megabytes.)

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use futures_util::StreamExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http;
use crate::reconnect::rss_kib;
use crate::release::{APP, control_plane, sync, write_app};

pub async fn run(hub: &ferry_tests::NatsServer, streams: usize, changes: usize) -> Result<()> {
    let work = tempfile::tempdir()?;
    let cap = (streams + 10).to_string();
    let (server, addr, token) = control_plane(
        hub,
        work.path(),
        &["--sse-per-token", &cap, "--sse-max", &cap],
    )
    .await?;
    let app = work.path().join("app");
    write_app(&app, 1)?;
    sync(addr, &token, &app).await?;
    let body = json!({ "app": APP, "name": "watched", "approve_all": true });
    http::json(addr, "POST", "/v1/installs", &token, Some(&body)).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_kib(server.id())?;

    let t = Instant::now();
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        open.push(open_stream(addr, &token).await?);
    }
    let opened = t.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let with_streams = rss_kib(server.id())?;

    // Record changes that every stream receives.
    for i in 0..changes {
        let body = json!({ "set": { "round": i.to_string() } });
        http::json(
            addr,
            "POST",
            "/v1/installs/watched/labels",
            &token,
            Some(&body),
        )
        .await?;
    }
    let received = drain(&mut open, changes).await;
    let after_changes = rss_kib(server.id())?;
    drop(open);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let closed = rss_kib(server.id())?;
    // The allocator keeps what closed streams freed; a second round reuses it rather than
    // growing (what a leak would do).
    let mut again = Vec::with_capacity(streams);
    for _ in 0..streams {
        again.push(open_stream(addr, &token).await?);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let reopened = rss_kib(server.id())?;
    drop(again);

    // A stream allows about a thousand consumers (nats-server 2.15's default), the server's
    // own and the catch-ups included: the baseline measures a few hundred and divides.
    let raw = raw_baseline(hub, streams.min(500)).await?;
    let rss = Rss {
        idle,
        with_streams,
        after_changes,
        closed,
        reopened,
    };
    print_table(streams, &rss, raw);
    println!(
        "opened in {:.1} s; {received} of {} change events arrived ({changes} changes to each stream)",
        opened.as_secs_f64(),
        changes * streams,
    );
    Ok(())
}

/// The control plane's resident memory at each point of the run, KiB.
struct Rss {
    idle: u64,
    with_streams: u64,
    after_changes: u64,
    closed: u64,
    reopened: u64,
}

/// The figures as a table: memory at each point, per stream, and the ratio to a raw consumer's.
fn print_table(streams: usize, m: &Rss, raw: f64) {
    let per = |kib: u64| (kib.saturating_sub(m.idle)) as f64 / streams as f64;
    println!(
        "{:>8} {:>9} {:>9} {:>11} {:>10} {:>10} {:>12} {:>12} {:>7}",
        "streams",
        "idle MB",
        "open MB",
        "changed MB",
        "KB/stream",
        "closed MB",
        "reopened MB",
        "raw KB/cons",
        "ratio"
    );
    let per_stream = per(m.after_changes.max(m.with_streams));
    println!(
        "{streams:>8} {:>9.1} {:>9.1} {:>11.1} {:>10.1} {:>10.1} {:>12.1} {:>12.1} {:>7.1}",
        m.idle as f64 / 1024.0,
        m.with_streams as f64 / 1024.0,
        m.after_changes as f64 / 1024.0,
        per_stream,
        m.closed as f64 / 1024.0,
        m.reopened as f64 / 1024.0,
        raw,
        per_stream / raw.max(0.1),
    );
}

/// An open `/v1/events` response, read up to its subscription comment.
async fn open_stream(addr: SocketAddr, token: &str) -> Result<tokio::net::TcpStream> {
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    let req = format!(
        "GET /v1/events?kinds=install HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    conn.write_all(req.as_bytes()).await?;
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains(": subscribed") {
        let n = tokio::time::timeout(Duration::from_secs(30), conn.read(&mut buf))
            .await
            .context("a stream that never subscribed")??;
        if n == 0 {
            bail!("a stream closed: {}", String::from_utf8_lossy(&seen));
        }
        seen.extend_from_slice(&buf[..n]);
    }
    if !seen.starts_with(b"HTTP/1.1 200") {
        bail!("{}", String::from_utf8_lossy(&seen));
    }
    Ok(conn)
}

/// Reads every stream until each shows `changes` events (or a few idle seconds pass); how many
/// arrived in all.
async fn drain(open: &mut [tokio::net::TcpStream], changes: usize) -> usize {
    let mut total = 0;
    for conn in open.iter_mut() {
        let mut text = String::new();
        let mut buf = [0u8; 16 * 1024];
        while text.matches("event: install").count() < changes {
            match tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => text.push_str(&String::from_utf8_lossy(&buf[..n])),
                _ => break,
            }
        }
        total += text.matches("event: install").count();
    }
    total
}

/// KiB of this process's RSS per ordered consumer on `EVENTS`, `n` of them open.
async fn raw_baseline(hub: &ferry_tests::NatsServer, n: usize) -> Result<f64> {
    let client = hub.connect_as(ferry_pki::hub::SERVICES_USER).await;
    let js = async_nats::jetstream::new(client);
    let stream = js
        .get_stream(ferry_protocol::resources::events::STREAM)
        .await?;
    let before = rss_kib(std::process::id())?;
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: ferry_protocol::resources::events::org_filter("bench"),
                deliver_policy: DeliverPolicy::New,
                ..Default::default()
            })
            .await?;
        let mut messages = consumer.messages().await?;
        // Polled once, as a served stream is, so the consumer's first pull is made.
        let _ = tokio::time::timeout(Duration::from_millis(1), messages.next()).await;
        held.push(messages);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib(std::process::id())?;
    drop(held);
    Ok(after.saturating_sub(before) as f64 / n as f64)
}
