//! Runners' metric samples (`RunnerMetrics` on `ferry.rx.<org>.<install>.metrics`, stream
//! `METRICS`) turned into Prometheus metrics named `ferry_runner_*` on the hub's `/metrics`.
//!
//! Every replica of log-ingest reads every sample (an ordered consumer of its own, starting
//! from each subject's latest), so whichever replica Prometheus scrapes shows every runner. A
//! sample is hostile input: its org and install are the subject's (the hub's permissions let an
//! install publish only on its own), its label values are cut to a short safe alphabet, and an
//! install gets at most [`MAX_SERIES_PER_INSTALL`] series, whatever it sends. A runner not
//! heard from for a few of its intervals disappears from the output.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use ferry_protocol::messages::{Histogram, RunnerMetrics};
use ferry_protocol::{decode, resources, subjects};
use futures_util::StreamExt;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use tracing::{info, warn};

use crate::LogIngestError;

/// Series one install may have, over all its runners.
pub const MAX_SERIES_PER_INSTALL: usize = 256;
/// Longest label value kept from a sample.
const MAX_LABEL: usize = 48;

/// A runner: `(org, install, runner id)`.
type RunnerKey = (String, String, String);

/// A runner's latest sample, and when it arrived.
type Latest = (Instant, RunnerMetrics);
/// An install's runners' latest samples, by runner id.
type Runners = HashMap<String, Latest>;

/// The latest sample of each runner, by install (`(org, install)`) and runner id: a sample
/// costs a look at its own install's runners only, whatever the number of installs.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    inner: Arc<Mutex<HashMap<(String, String), Runners>>>,
}

/// A label value from a runner: lowercase letters, digits, `_`, `-` and `.`, at most
/// [`MAX_LABEL`] characters; anything else becomes `_`.
pub fn label(v: &str) -> String {
    v.chars()
        .take(MAX_LABEL)
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' | '-' | '.' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect()
}

/// Series a sample makes, besides the fixed ones.
fn series(m: &RunnerMetrics) -> usize {
    m.jobs_running.len()
        + m.jobs_finished.len()
        + m.plugin_exits.len()
        + m.job_seconds
            .iter()
            .map(|(_, h)| h.buckets.len() + 3)
            .sum::<usize>()
}

/// Series every sample makes whatever it holds (info, link, spool, host, …).
const FIXED_SERIES: usize = 11;

/// Whether a histogram can be shown as OpenMetrics requires: finite bounds, strictly
/// ascending (`+Inf` is implied, never sent), cumulative counts that never fall and never
/// exceed the total, a finite sum. One bad histogram from one runner would otherwise make a
/// strict parser refuse the whole scrape, every install's series with it.
pub fn valid_histogram(h: &Histogram) -> bool {
    let bounds_ok = h.buckets.iter().all(|(b, _)| b.is_finite())
        && h.buckets.windows(2).all(|w| w[0].0 < w[1].0);
    let counts_ok = h.buckets.windows(2).all(|w| w[0].1 <= w[1].1)
        && h.buckets.last().is_none_or(|(_, n)| *n <= h.count);
    bounds_ok && counts_ok && h.sum.is_finite()
}

/// Keeps the longest prefix of `items` whose series fit in `left`, and takes them from it.
fn keep_prefix<T>(items: &mut Vec<T>, left: &mut usize, cost: impl Fn(&T) -> usize) {
    let mut used = 0;
    let keep = items
        .iter()
        .take_while(|x| {
            used += cost(x);
            used <= *left
        })
        .count();
    items.truncate(keep);
    *left -= items.iter().map(&cost).sum::<usize>();
}

/// Cuts a sample to `budget` series (dropping from its variable lists, histograms first),
/// drops histograms OpenMetrics cannot show ([`valid_histogram`]) and cleans its label values;
/// returns how many series were dropped. Linear in the sample's size: a sample is hostile
/// input, and one with hundreds of thousands of entries must cost one pass, not one recount
/// per entry dropped.
pub fn bound(m: &mut RunnerMetrics, budget: usize) -> usize {
    let before = series(m);
    m.job_seconds.retain(|(_, h)| valid_histogram(h));
    let mut left = budget.saturating_sub(FIXED_SERIES);
    keep_prefix(&mut m.jobs_running, &mut left, |_| 1);
    keep_prefix(&mut m.jobs_finished, &mut left, |_| 1);
    keep_prefix(&mut m.plugin_exits, &mut left, |_| 1);
    keep_prefix(&mut m.job_seconds, &mut left, |(_, h)| h.buckets.len() + 3);
    m.runner_id = label(&m.runner_id);
    m.version = label(&m.version);
    for (k, _) in &mut m.jobs_running {
        *k = label(k);
    }
    for (k, o, _) in &mut m.jobs_finished {
        *k = label(k);
        *o = label(o);
    }
    for (k, _) in &mut m.job_seconds {
        *k = label(k);
    }
    for (k, _, _) in &mut m.plugin_exits {
        *k = label(k);
    }
    before - series(m)
}

/// How long a runner's sample stands: a few of its intervals, within sane limits.
fn lifetime(m: &RunnerMetrics) -> Duration {
    Duration::from_millis(m.interval_ms.saturating_mul(4))
        .clamp(Duration::from_secs(30), Duration::from_secs(15 * 60))
}

impl Samples {
    /// Keeps install `install`'s sample, within the install's series budget.
    pub fn record(&self, org: &str, install: &str, mut m: RunnerMetrics) {
        // No runner may have more than the install's whole budget: cut it to that before the
        // lock, so the work under the lock is small whatever the sample held.
        let dropped_early = bound(&mut m, MAX_SERIES_PER_INSTALL);
        let Ok(mut all) = self.inner.lock() else {
            return;
        };
        let now = Instant::now();
        let runners = all
            .entry((org.to_string(), install.to_string()))
            .or_default();
        runners.retain(|_, (at, s)| at.elapsed() < lifetime(s));
        let runner = label(&m.runner_id);
        let used: usize = runners
            .iter()
            .filter(|(r, _)| **r != runner)
            .map(|(_, (_, s))| series(s) + FIXED_SERIES)
            .sum();
        let budget = MAX_SERIES_PER_INSTALL.saturating_sub(used);
        // No room even for the runner's fixed series: the install has runners enough.
        let kept = budget >= FIXED_SERIES;
        let dropped = dropped_early
            + match kept {
                true => bound(&mut m, budget),
                false => series(&m) + FIXED_SERIES,
            };
        if dropped > 0 {
            warn!(org, install, runner = %runner, dropped, "runner metrics over the install's series budget");
            ferry_telemetry::metrics()
                .runner_series_dropped
                .get_or_create(&ferry_telemetry::InstallLabels {
                    org: org.to_string(),
                    install: install.to_string(),
                })
                .inc_by(dropped as u64);
        }
        if kept {
            runners.insert(runner, (now, m));
        }
    }

    /// Every runner's sample still standing (stale ones are forgotten here, at scrape time),
    /// with its age in seconds.
    fn fresh(&self) -> Vec<(RunnerKey, f64, RunnerMetrics)> {
        let Ok(mut all) = self.inner.lock() else {
            return vec![];
        };
        all.retain(|_, runners| {
            runners.retain(|_, (at, s)| at.elapsed() < lifetime(s));
            !runners.is_empty()
        });
        let mut out: Vec<_> = all
            .iter()
            .flat_map(|((org, install), runners)| {
                runners.iter().map(move |(runner, (at, s))| {
                    let key = (org.clone(), install.clone(), runner.clone());
                    (key, at.elapsed().as_secs_f64(), s.clone())
                })
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// Reads every runner's samples into `samples`, for as long as the service runs.
pub async fn run(store: ferry_store::Store, samples: Samples) -> Result<(), LogIngestError> {
    let stream = store
        .js
        .get_stream(resources::METRICS.name)
        .await
        .map_err(|e| LogIngestError::Metrics(Box::new(e)))?;
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: "ferry.rx.*.*.metrics".into(),
            deliver_policy: DeliverPolicy::LastPerSubject,
            ..Default::default()
        })
        .await
        .map_err(|e| LogIngestError::Metrics(Box::new(e)))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| LogIngestError::Metrics(Box::new(e)))?;
    info!("reading runner metrics");
    while let Some(m) = messages.next().await {
        let m = m.map_err(|e| LogIngestError::Metrics(Box::new(e)))?;
        let Some((org, install)) = subjects::org_install(&m.subject) else {
            continue;
        };
        match decode::<RunnerMetrics>(&m.payload) {
            Ok(sample) => samples.record(org, install, sample),
            Err(e) => {
                warn!(org, install, error = %e, "undecodable runner metrics");
                ferry_telemetry::metrics()
                    .messages_rejected
                    .get_or_create(&ferry_telemetry::consumer_label("runner-metrics"))
                    .inc();
            }
        }
    }
    Ok(())
}

type Labels = Vec<(&'static str, String)>;

/// One metric family: its name, help, type, and each series' labels and value.
struct Family {
    name: &'static str,
    help: &'static str,
    points: Vec<(Labels, Point)>,
}

enum Point {
    Gauge(f64),
    Counter(u64),
    Histogram(Histogram),
}

impl Point {
    fn metric_type(&self) -> MetricType {
        match self {
            Point::Gauge(_) => MetricType::Gauge,
            Point::Counter(_) => MetricType::Counter,
            Point::Histogram(_) => MetricType::Histogram,
        }
    }
}

/// Every `ferry_runner_*` family of the fresh samples (the registry adds the `ferry_` prefix).
// Long: the table of every `ferry_runner_*` family, one line each (docs/metrics.md lists the
// same); a table split over functions is harder to check against the docs.
fn families(samples: &[(RunnerKey, f64, RunnerMetrics)]) -> Vec<Family> {
    let mut f: Vec<Family> = vec![];
    let mut add = |name: &'static str, help: &'static str, labels: Labels, p: Point| match f
        .iter_mut()
        .find(|x| x.name == name)
    {
        Some(x) => x.points.push((labels, p)),
        None => f.push(Family {
            name,
            help,
            points: vec![(labels, p)],
        }),
    };
    for ((org, install, runner), age, m) in samples {
        let base = || -> Labels {
            vec![
                ("org", org.clone()),
                ("install", install.clone()),
                ("runner", runner.clone()),
            ]
        };
        let with = |extra: &[(&'static str, String)]| {
            let mut l = base();
            l.extend_from_slice(extra);
            l
        };
        add(
            "runner_info",
            "A runner heard from lately, with its version",
            with(&[("version", m.version.clone())]),
            Point::Gauge(1.0),
        );
        add(
            "runner_sample_age_seconds",
            "Seconds since the runner's latest sample arrived",
            base(),
            Point::Gauge(*age),
        );
        for (kind, n) in &m.jobs_running {
            add(
                "runner_jobs_running",
                "Jobs the runner is running, by kind",
                with(&[("kind", kind.clone())]),
                Point::Gauge(*n as f64),
            );
        }
        for (kind, outcome, n) in &m.jobs_finished {
            add(
                "runner_jobs_finished",
                "Jobs the runner finished since it started, by kind and outcome",
                with(&[("kind", kind.clone()), ("outcome", outcome.clone())]),
                Point::Counter(*n),
            );
        }
        for (kind, h) in &m.job_seconds {
            add(
                "runner_job_duration_seconds",
                "How long the runner's jobs took, by kind",
                with(&[("kind", kind.clone())]),
                Point::Histogram(h.clone()),
            );
        }
        for (plugin, code, n) in &m.plugin_exits {
            add(
                "runner_plugin_exits",
                "Plugin processes ended, by plugin and exit code (-1: killed by a signal)",
                with(&[("plugin", plugin.clone()), ("code", code.to_string())]),
                Point::Counter(*n),
            );
        }
        add(
            "runner_artifact_synced_bytes",
            "Bytes copied into the install's store by sync jobs",
            base(),
            Point::Counter(m.artifact_bytes_synced),
        );
        add(
            "runner_spool_depth",
            "Messages in the runner's spool waiting for the link",
            base(),
            Point::Gauge(m.spool_depth as f64),
        );
        add(
            "runner_link_up",
            "Whether the install's link to the hub is up (1) or down (0)",
            base(),
            Point::Gauge(f64::from(u8::from(m.link_up))),
        );
        add(
            "runner_link_reconnects",
            "Times the install's link came back after being down",
            base(),
            Point::Counter(m.link_reconnects),
        );
        add(
            "runner_host_cpu_percent",
            "CPU busy on the runner's host over the last interval, 0-100",
            base(),
            Point::Gauge(f64::from(m.host.cpu_percent)),
        );
        add(
            "runner_host_memory_used_bytes",
            "Memory in use on the runner's host",
            base(),
            Point::Gauge(m.host.memory_used_bytes as f64),
        );
        add(
            "runner_host_memory_total_bytes",
            "Memory of the runner's host",
            base(),
            Point::Gauge(m.host.memory_total_bytes as f64),
        );
        add(
            "runner_host_disk_used_bytes",
            "Used space of the runner's data directory's filesystem",
            base(),
            Point::Gauge(m.host.disk_used_bytes as f64),
        );
        add(
            "runner_host_disk_total_bytes",
            "Size of the runner's data directory's filesystem",
            base(),
            Point::Gauge(m.host.disk_total_bytes as f64),
        );
    }
    f
}

impl Collector for Samples {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in families(&self.fresh()) {
            let Some((_, first)) = family.points.first() else {
                continue;
            };
            let mut metric =
                encoder.encode_descriptor(family.name, family.help, None, first.metric_type())?;
            for (labels, point) in &family.points {
                let series = metric.encode_family(labels)?;
                match point {
                    Point::Gauge(v) => ConstGauge::new(*v).encode(series)?,
                    Point::Counter(v) => ConstCounter::new(*v).encode(series)?,
                    Point::Histogram(h) => {
                        let mut series = series;
                        series.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                            h.sum,
                            h.count,
                            &per_bucket(h),
                            None,
                        )?
                    }
                }
            }
        }
        Ok(())
    }
}

/// A histogram's counts per bucket (not cumulative: the encoder adds them up), with the
/// `+Inf` bucket last.
fn per_bucket(h: &Histogram) -> Vec<(f64, u64)> {
    let mut below = 0;
    let mut out: Vec<(f64, u64)> = h
        .buckets
        .iter()
        .map(|(bound, n)| {
            let here = n.saturating_sub(below);
            below = below.max(*n);
            (*bound, here)
        })
        .collect();
    out.push((f64::INFINITY, h.count.saturating_sub(below)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_protocol::messages::HostStats;

    fn sample(runner: &str, kinds: usize) -> RunnerMetrics {
        RunnerMetrics {
            runner_id: runner.into(),
            version: "0.1.0".into(),
            at_ms: 0,
            interval_ms: 15_000,
            jobs_running: vec![],
            jobs_finished: (0..kinds)
                .map(|i| (format!("kind{i}"), "succeeded".into(), 1))
                .collect(),
            job_seconds: vec![("plan".into(), Histogram::new(&[1.0, 5.0]))],
            plugin_exits: vec![("script".into(), 0, 2)],
            artifact_bytes_synced: 7,
            spool_depth: 0,
            link_up: true,
            link_reconnects: 0,
            host: HostStats::default(),
        }
    }

    #[test]
    fn label_values_from_runners_are_short_and_safe() {
        assert_eq!(label("Plan"), "plan");
        assert_eq!(label("a\"}\n{b"), "a____b");
        assert_eq!(label(&"x".repeat(500)).len(), MAX_LABEL);
    }

    #[test]
    fn an_install_gets_no_more_series_than_its_budget() {
        let s = Samples::default();
        s.record("acme", "prod", sample("r1", 10_000));
        s.record("acme", "prod", sample("r2", 10_000));
        let fresh = s.fresh();
        let total: usize = fresh.iter().map(|(_, _, m)| series(m) + FIXED_SERIES).sum();
        assert!(total <= MAX_SERIES_PER_INSTALL, "{total}");
        // A small sample of another install keeps everything.
        s.record("acme", "staging", sample("r3", 2));
        let staging = s
            .fresh()
            .into_iter()
            .find(|(k, _, _)| k.1 == "staging")
            .unwrap();
        assert_eq!(staging.2.jobs_finished.len(), 2);
        assert_eq!(staging.2.job_seconds.len(), 1);
    }

    #[test]
    fn a_huge_sample_is_cut_to_the_budget_in_one_pass() {
        let s = Samples::default();
        let mut m = sample("r1", 100_000);
        m.job_seconds = (0..100_000)
            .map(|i| (format!("k{i}"), Histogram::new(&[1.0])))
            .collect();
        m.plugin_exits = (0..100_000).map(|i| ("p".into(), i, 1)).collect();
        s.record("acme", "prod", m);
        let fresh = s.fresh();
        let m = &fresh[0].2;
        assert_eq!(series(m) + FIXED_SERIES, MAX_SERIES_PER_INSTALL);
        // Histograms go first, then exits: what is left is jobs finished.
        assert!(m.job_seconds.is_empty() && m.plugin_exits.is_empty());
        assert_eq!(m.jobs_finished.len(), MAX_SERIES_PER_INSTALL - FIXED_SERIES);
    }

    #[test]
    fn histograms_openmetrics_cannot_show_are_dropped() {
        let good = Histogram {
            buckets: vec![(1.0, 1), (5.0, 2)],
            sum: 3.0,
            count: 2,
        };
        assert!(valid_histogram(&good));
        let bad = [
            (vec![(f64::NAN, 1)], 1.0, 1),
            (vec![(5.0, 1), (1.0, 2)], 1.0, 2),
            (vec![(1.0, 1), (1.0, 1)], 1.0, 1),
            (vec![(f64::INFINITY, 1)], 1.0, 1),
            (vec![(1.0, 2), (5.0, 1)], 1.0, 2),
            (vec![(1.0, 5)], 1.0, 2),
            (vec![(1.0, 1)], f64::NAN, 1),
        ];
        let mut m = sample("r1", 0);
        m.job_seconds = bad
            .into_iter()
            .map(|(buckets, sum, count)| {
                let h = Histogram {
                    buckets,
                    sum,
                    count,
                };
                assert!(!valid_histogram(&h), "{h:?}");
                ("plan".to_string(), h)
            })
            .chain([("apply".to_string(), good)])
            .collect();
        let s = Samples::default();
        s.record("acme", "prod", m);
        let mut registry = prometheus_client::registry::Registry::with_prefix("ferry");
        registry.register_collector(Box::new(s));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(!text.contains("kind=\"plan\""), "{text}");
        assert!(
            !text.contains("NaN") && text.contains("kind=\"apply\""),
            "{text}"
        );
    }

    #[test]
    fn samples_encode_as_runner_families_with_org_and_install_labels() {
        let s = Samples::default();
        let mut m = sample("r1", 1);
        m.job_seconds[0].1.observe(3.0);
        m.job_seconds[0].1.observe(4.0);
        m.job_seconds[0].1.observe(40.0);
        s.record("acme", "prod", m);
        let mut registry = prometheus_client::registry::Registry::with_prefix("ferry");
        registry.register_collector(Box::new(s));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for want in [
            "ferry_runner_jobs_finished_total{org=\"acme\",install=\"prod\",runner=\"r1\",kind=\"kind0\",outcome=\"succeeded\"} 1",
            "ferry_runner_job_duration_seconds_bucket{le=\"1.0\",org=\"acme\",install=\"prod\",runner=\"r1\",kind=\"plan\"} 0",
            "ferry_runner_job_duration_seconds_bucket{le=\"5.0\",org=\"acme\",install=\"prod\",runner=\"r1\",kind=\"plan\"} 2",
            "ferry_runner_job_duration_seconds_bucket{le=\"+Inf\",org=\"acme\",install=\"prod\",runner=\"r1\",kind=\"plan\"} 3",
            "ferry_runner_plugin_exits_total{org=\"acme\",install=\"prod\",runner=\"r1\",plugin=\"script\",code=\"0\"} 2",
            "ferry_runner_link_up{org=\"acme\",install=\"prod\",runner=\"r1\"} 1",
            "# TYPE ferry_runner_job_duration_seconds histogram",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }
}
