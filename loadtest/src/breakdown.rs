//! `dispatch --breakdown`: where a real job's time goes, from its offer to its plugin process,
//! measured on what `ferry dev` runs — the real `ferry-server` (beside this binary), real
//! runners (`ferry_runner::Runner`, each behind its own leaf nats-server with `--leaf`, as every
//! install runs), and real workflows: every install deployed again and again, one deploy at a
//! time (a sync, a plan and an apply, each plan and apply a plugin process).
//!
//! Each job's execution carries its points (`ferry_model::Timing`: the scheduler's and the
//! runner's); this prints every span's p50 and p99 over all jobs, and the offer-to-plugin-start
//! p50 and p99 against a raw TLS request-reply through a leaf (or direct) in the same run.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use crate::http;
use crate::release::{self, APP};

const ORG: &str = ferry_model::DEFAULT_ORG;

pub async fn run(hub: &ferry_tests::NatsServer, n: usize, rounds: usize, leaf: bool) -> Result<()> {
    let work = tempfile::tempdir()?;
    let (_server, addr, token) = release::control_plane(hub, work.path(), &[]).await?;
    let app = work.path().join("app");
    release::write_app(&app, 1)?;
    release::sync(addr, &token, &app).await?;
    let t = Instant::now();
    release::create_installs(addr, &token, n).await?;
    let _runners = release::runners(hub, work.path(), n, leaf).await?;
    release::wait_active(addr, &token, n).await?;
    let how = if leaf {
        "behind its own leaf"
    } else {
        "direct"
    };
    println!(
        "{n} installs provisioned in {:.1} s (each runner in this process, {how})",
        t.elapsed().as_secs_f64()
    );
    let mut workflows = Vec::with_capacity(n * rounds);
    let t = Instant::now();
    for round in 0..rounds {
        release::write_app(&app, round as u32 + 2)?;
        release::sync(addr, &token, &app).await?;
        for i in 0..n {
            let path = format!("/v1/installs/{}/deploy", release::name(i));
            let d = http::json(addr, "POST", &path, &token, Some(&json!({}))).await?;
            let wf = d["workflow_id"].as_str().context("a workflow id")?;
            release::wait_workflow(addr, &token, wf).await?;
            workflows.push(wf.to_string());
        }
    }
    println!(
        "{} deploys, one at a time, in {:.1} s",
        workflows.len(),
        t.elapsed().as_secs_f64()
    );
    let timings = timings_of(addr, &token, &workflows).await?;
    let rr = baseline(hub, addr, &token, work.path(), leaf).await?;
    report(&timings, rr, leaf);
    Ok(())
}

/// The timing of every job the workflows ran (each job's last execution).
async fn timings_of(
    addr: SocketAddr,
    token: &str,
    workflows: &[String],
) -> Result<Vec<ferry_model::Timing>> {
    let mut out = Vec::new();
    for id in workflows {
        let wf = http::json(addr, "GET", &format!("/v1/workflows/{id}"), token, None).await?;
        let jobs = wf["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["job_id"].as_str());
        for job in jobs {
            let j = http::json(addr, "GET", &format!("/v1/jobs/{job}"), token, None).await?;
            let j: ferry_model::Job = serde_json::from_value(j)?;
            if let Some(e) = j.executions.last() {
                out.push(e.timing);
            }
        }
    }
    Ok(out)
}

/// p99 of raw TLS request-reply round trips: through a leaf of its own for an install made for
/// it (admitted by the same auth callout), or direct to the hub.
async fn baseline(
    hub: &ferry_tests::NatsServer,
    addr: SocketAddr,
    token: &str,
    dir: &std::path::Path,
    leaf: bool,
) -> Result<Duration> {
    let services = hub
        .hub
        .credentials(ferry_pki::hub::SERVICES_USER)?
        .connect_options()
        .connect(&hub.url)
        .await?;
    if !leaf {
        return crate::request_reply(&services, crate::BASELINE_SAMPLES).await;
    }
    // An install of its own (no runner takes its jobs), so the callout admits its leaf.
    let name = "rtt-baseline";
    let body = json!({ "app": APP, "name": name });
    http::json(addr, "POST", "/v1/installs", token, Some(&body)).await?;
    let (_leaf, install) = crate::leaf::leaf_install(hub, ORG, name, &dir.join(name)).await?;
    crate::leaf::request_reply_in(&services, ORG, &install, crate::BASELINE_SAMPLES).await
}

/// The value at `q` (0..=1) of sorted `v`.
fn at(v: &[u64], q: f64) -> u64 {
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

fn report(timings: &[ferry_model::Timing], rr: Duration, leaf: bool) {
    let mut spans: BTreeMap<&str, (&str, &str, Vec<u64>)> = BTreeMap::new();
    for t in timings {
        for s in t.spans() {
            spans
                .entry(s.name)
                .or_insert((s.clock, s.what, vec![]))
                .2
                .push(s.micros);
        }
    }
    let ms = |us: u64| us as f64 / 1000.0;
    println!(
        "{:<18} {:>6} {:>9} {:>9}  {:<14} what",
        "span", "jobs", "p50 ms", "p99 ms", "clock"
    );
    for name in ferry_model::Timing::span_names() {
        let Some((clock, what, v)) = spans.get_mut(name) else {
            continue;
        };
        v.sort_unstable();
        println!(
            "{name:<18} {:>6} {:>9.3} {:>9.3}  {clock:<14} {what}",
            v.len(),
            ms(at(v, 0.5)),
            ms(at(v, 0.99))
        );
    }
    let mut e2e: Vec<u64> = timings
        .iter()
        .filter_map(ferry_model::Timing::offer_to_spawn_us)
        .collect();
    e2e.sort_unstable();
    if e2e.is_empty() {
        println!("no job started a plugin");
        return;
    }
    let granted = timings.iter().filter(|t| t.granted_at_offer()).count();
    println!(
        "{granted} of {} executions granted at their offer (no claim: the install's one runner)",
        timings.len()
    );
    let rr_ms = rr.as_secs_f64() * 1000.0;
    let path = if leaf { "through a leaf" } else { "direct" };
    println!(
        "offer to plugin start over {} plugin jobs: p50 {:.3} ms, p99 {:.3} ms; raw TLS request-reply {path} p99 {rr_ms:.3} ms; p99/rr {:.1}",
        e2e.len(),
        ms(at(&e2e, 0.5)),
        ms(at(&e2e, 0.99)),
        ms(at(&e2e, 0.99)) / rr_ms
    );
}
