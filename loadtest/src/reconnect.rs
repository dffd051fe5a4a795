//! `reconnect`: N simulated installs, each with its own certificate from Ferry's CA, connect to
//! the hub at once, as they would after a hub restart. Each connection is decided by the real
//! auth callout (`ferry_api::callout`, served in this process against the real store), so this
//! measures admission: the time until all are connected, the callout's decisions per second,
//! and the hub's resident memory per connected install. The baseline is the same number of TLS
//! connections with client certificates, made at once by one of the hub's configured users
//! (decided by the server itself, no callout).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;

use crate::ORG;

/// Connections being set up at once: all of them, as after a restart, but the TLS handshakes
/// are bounded by the process's own tasks.
const AT_ONCE: usize = 1024;

pub async fn run(
    hub: &ferry_tests::NatsServer,
    store: &ferry_store::Store,
    counts: &[usize],
) -> Result<()> {
    crate::leaf::serve_callout(hub, store).await?;
    let dir = tempfile::tempdir()?;
    let max = counts.iter().copied().max().unwrap_or(0);
    let started = Instant::now();
    let identities = issue(&hub.hub.dir, dir.path(), max).await?;
    println!(
        "{max} install certificates issued from CSRs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:>8} {:>10} {:>12} {:>10} {:>10} {:>12} {:>10}",
        "installs", "admit s", "decisions/s", "retries", "base s", "admit/base", "KiB/inst"
    );
    for &n in counts {
        let rss_before = rss_kib(hub.pid())?;
        let t = Instant::now();
        let (clients, retries) = connect_all(&hub.url, &identities[..n]).await?;
        let admit = t.elapsed();
        // Settle: the server's per-connection buffers are allocated as traffic starts.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss_after = rss_kib(hub.pid())?;
        drop(clients);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let services = hub.hub.credentials(ferry_pki::hub::SERVICES_USER)?;
        let t = Instant::now();
        let (base, _) = connect_all(&hub.url, &vec![services; n]).await?;
        let baseline = t.elapsed();
        drop(base);
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!(
            "{n:>8} {:>10.2} {:>12.0} {retries:>10} {:>10.2} {:>12.2} {:>10.1}",
            admit.as_secs_f64(),
            n as f64 / admit.as_secs_f64(),
            baseline.as_secs_f64(),
            admit.as_secs_f64() / baseline.as_secs_f64(),
            rss_after.saturating_sub(rss_before) as f64 / n as f64,
        );
    }
    Ok(())
}

/// `n` installs' identities, each a key made here and a certificate the CA signed from its CSR
/// (as bootstrapping does), on the blocking pool.
async fn issue(hub_dir: &Path, dir: &Path, n: usize) -> Result<Vec<ferry_pki::Credentials>> {
    let mut out = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(256) {
        let tasks: Vec<_> = chunk
            .iter()
            .map(|&i| {
                let (hub_dir, dir) = (hub_dir.to_path_buf(), dir.join(format!("i{i}")));
                tokio::task::spawn_blocking(move || {
                    ferry_tests::issue_install(&hub_dir, ORG, &format!("inst-{i:05}"), &dir)
                })
            })
            .collect();
        for t in tasks {
            out.push(t.await.context("issuing a certificate")?);
        }
    }
    Ok(out)
}

/// Connects every one of `creds` at once (up to [`AT_ONCE`] handshakes in flight); a refused or
/// timed-out connection is tried again, and counted.
async fn connect_all(
    url: &str,
    creds: &[ferry_pki::Credentials],
) -> Result<(Vec<async_nats::Client>, usize)> {
    let results: Vec<Result<(async_nats::Client, usize)>> =
        futures_util::stream::iter(creds.iter().cloned())
            .map(|c| {
                let url = url.to_string();
                async move {
                    let mut retries = 0;
                    loop {
                        match c.connect_options().connect(&url).await {
                            Ok(client) => return Ok((client, retries)),
                            // Refused while the callout is busy, or timed out: again.
                            Err(_) if retries < 20 => {
                                retries += 1;
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                            Err(e) => return Err(e).context("connecting an install"),
                        }
                    }
                }
            })
            .buffer_unordered(AT_ONCE)
            .collect()
            .await;
    let mut clients = Vec::with_capacity(results.len());
    let mut retries = 0;
    for r in results {
        let (c, n) = r?;
        clients.push(c);
        retries += n;
    }
    // Every connection is up: a flush on each goes through the server.
    for c in &clients {
        c.flush()
            .await
            .context("flushing an install's connection")?;
    }
    Ok((clients, retries))
}

/// The resident memory of process `pid`, in KiB.
pub(crate) fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    for line in status.lines() {
        if let Some(v) = line.strip_prefix("VmRSS:") {
            return Ok(v.trim().trim_end_matches(" kB").trim().parse()?);
        }
    }
    bail!("no VmRSS for process {pid}")
}

/// `reconnect --leaf`: `n` installs each behind a real leaf nats-server (`leaf.rs`: the runner's
/// own leaf code, admitted by the real callout), then the hub restarted (killed, started again
/// on its store): the time until every leaf is admitted again and answers through the hub, each
/// leaf's resident memory, and the hub's per leaf.
pub async fn run_leaves(
    hub: &mut ferry_tests::NatsServer,
    store: &ferry_store::Store,
    n: usize,
) -> Result<()> {
    let hub_before = rss_kib(hub.pid())?;
    let (installs, kept) = crate::leaf::installs(hub, store, n).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let hub_after = rss_kib(hub.pid())?;
    let leaves = processes_under(kept.dir())?;
    let leaf_kib: u64 = leaves.iter().filter_map(|p| rss_kib(*p).ok()).sum();
    tokio::task::block_in_place(|| hub.restart());
    let t = Instant::now();
    let mut each = readmitted(hub, &installs).await?;
    let all = t.elapsed();
    let hub_restarted = rss_kib(hub.pid())?;
    each.sort();
    report_hub_log(hub);
    println!(
        "after the restart: each leaf back in p50 {:.2} s, p90 {:.2} s, max {:.2} s",
        each[each.len() / 2].as_secs_f64(),
        each[each.len() * 9 / 10].as_secs_f64(),
        each[each.len() - 1].as_secs_f64(),
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    let hub_settled = rss_kib(hub.pid())?;
    println!(
        "the hub's memory 10 s later: {:.1} MiB ({:.1} KiB per leaf)",
        hub_settled as f64 / 1024.0,
        hub_settled as f64 / n as f64
    );
    println!(
        "{:>7} {:>10} {:>9} {:>13} {:>10} {:>16}",
        "leaves", "leaf procs", "leaf MiB", "hub KiB/leaf", "readmit s", "hub MiB restarted"
    );
    println!(
        "{n:>7} {:>10} {:>9.1} {:>13.1} {:>10.2} {:>16.1}",
        leaves.len(),
        leaf_kib as f64 / 1024.0 / leaves.len().max(1) as f64,
        hub_after.saturating_sub(hub_before) as f64 / n as f64,
        all.as_secs_f64(),
        hub_restarted as f64 / 1024.0,
    );
    drop(kept);
    Ok(())
}

/// Asks through every install's leaf until the restarted hub answers; how long each took.
async fn readmitted(
    hub: &ferry_tests::NatsServer,
    installs: &[crate::Install],
) -> Result<Vec<Duration>> {
    let t = Instant::now();
    let services = loop {
        let c = hub.hub.credentials(ferry_pki::hub::SERVICES_USER)?;
        match c.connect_options().connect(&hub.url).await {
            Ok(c) => break c,
            Err(_) if t.elapsed() < Duration::from_secs(60) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => return Err(e).context("connecting to the restarted hub"),
        }
    };
    let answering = crate::leaf::answer_all(&services).await?;
    let each = futures_util::stream::iter(installs.iter())
        .map(|i| crate::leaf::until_answered(i, Duration::from_secs(300)))
        .buffer_unordered(AT_ONCE)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>();
    answering.abort();
    each
}

/// What the storm cost the hub: its log's warnings and errors since the restart, by kind.
fn report_hub_log(hub: &ferry_tests::NatsServer) {
    let log = std::fs::read_to_string(hub.dir.path().join("nats.log")).unwrap_or_default();
    let after_restart = log
        .rsplit("Starting nats-server")
        .next()
        .unwrap_or_default();
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for line in after_restart
        .lines()
        .filter(|l| l.contains("[WRN]") || l.contains("[ERR]"))
    {
        // The message without its connection's address and numbers.
        let text: String = line
            .split_once(" - ")
            .map_or(line, |(_, m)| m)
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .take(70)
            .collect();
        *kinds.entry(text).or_default() += 1;
    }
    if kinds.is_empty() {
        println!("hub log after the restart: no warnings or errors");
    }
    for (text, count) in &kinds {
        println!("hub log after the restart: {count} x {text}");
    }
}

/// Processes whose command line names a path under `dir` (the leaves' configurations).
fn processes_under(dir: &Path) -> Result<Vec<u32>> {
    let needle = dir.display().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            out.push(pid);
        }
    }
    Ok(out)
}
