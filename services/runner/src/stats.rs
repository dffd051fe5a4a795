//! The runner's measurements, sent to the hub as a `RunnerMetrics` message on its install's
//! metrics subject every interval (`--metrics-interval-secs`).
//!
//! Counters are kept since the runner started and sent whole each time, so a sample lost on a
//! cut link costs nothing: the next one carries the same totals. Samples are plain publishes,
//! not spooled: a stale measurement is worth nothing once a newer one exists. The hub's
//! log-ingest turns them into `ferry_runner_*` Prometheus metrics (docs/metrics.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use ferry_protocol::messages::{Histogram, HostStats, RunnerMetrics};
use ferry_protocol::{encode, subjects};
use tracing::debug;

use crate::outbox::Outbox;

/// Upper bounds of the job duration histogram, in seconds: from a quick script to a long
/// Terraform apply.
pub const JOB_SECONDS_BOUNDS: [f64; 10] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];

#[derive(Default)]
struct Counts {
    running: BTreeMap<String, u64>,
    finished: BTreeMap<(String, String), u64>,
    durations: BTreeMap<String, Histogram>,
    exits: BTreeMap<(String, i32), u64>,
    bytes_synced: u64,
    link_up: Option<bool>,
    link_reconnects: u64,
}

#[derive(Default)]
pub struct Stats {
    counts: Mutex<Counts>,
}

impl Stats {
    fn with<R>(&self, f: impl FnOnce(&mut Counts) -> R) -> Option<R> {
        self.counts.lock().ok().map(|mut c| f(&mut c))
    }

    pub fn job_started(&self, kind: &str) {
        self.with(|c| *c.running.entry(kind.to_string()).or_default() += 1);
    }

    pub fn job_finished(&self, kind: &str, outcome: &str, took: Duration) {
        self.with(|c| {
            if let Some(n) = c.running.get_mut(kind) {
                *n = n.saturating_sub(1);
            }
            *c.finished
                .entry((kind.to_string(), outcome.to_string()))
                .or_default() += 1;
            c.durations
                .entry(kind.to_string())
                .or_insert_with(|| Histogram::new(&JOB_SECONDS_BOUNDS))
                .observe(took.as_secs_f64());
        });
    }

    /// A plugin process ended: `code` is its exit code, or `None` when a signal killed it.
    /// A plugin process exited; `plugin` is its name (`script`, `terraform`, ..., `action`).
    pub fn plugin_exited(&self, plugin: &str, code: Option<i32>) {
        let key = (plugin.to_string(), code.unwrap_or(-1));
        self.with(|c| *c.exits.entry(key).or_default() += 1);
    }

    pub fn synced(&self, bytes: u64) {
        self.with(|c| c.bytes_synced += bytes);
    }

    /// The link's state now; a change from down to up counts as a reconnect.
    pub fn link(&self, up: bool) {
        self.with(|c| {
            if up && c.link_up == Some(false) {
                c.link_reconnects += 1;
            }
            c.link_up = Some(up);
        });
    }

    fn snapshot(&self, head: RunnerMetrics) -> RunnerMetrics {
        self.with(|c| RunnerMetrics {
            jobs_running: c.running.iter().map(|(k, n)| (k.clone(), *n)).collect(),
            jobs_finished: c
                .finished
                .iter()
                .map(|((k, o), n)| (k.clone(), o.clone(), *n))
                .collect(),
            job_seconds: c
                .durations
                .iter()
                .map(|(k, h)| (k.clone(), h.clone()))
                .collect(),
            plugin_exits: c
                .exits
                .iter()
                .map(|((k, code), n)| (k.clone(), *code, *n))
                .collect(),
            artifact_bytes_synced: c.bytes_synced,
            link_up: c.link_up.unwrap_or(head.link_up),
            link_reconnects: c.link_reconnects,
            ..head.clone()
        })
        .unwrap_or(head)
    }
}

/// What the publisher needs besides the counts.
pub struct Publisher {
    pub client: async_nats::Client,
    pub outbox: Outbox,
    pub org: String,
    pub install: String,
    pub runner_id: String,
    pub data_dir: PathBuf,
    pub interval: Duration,
    /// Direct mode: the link is this client's connection; leaf mode: the leaf's log watcher
    /// reports it through [`Stats::link`].
    pub direct: bool,
}

/// Sends a sample every interval, for as long as the runner runs.
pub async fn publish_loop(p: Publisher, stats: std::sync::Arc<Stats>) {
    let subject = subjects::metrics(&p.org, &p.install);
    let mut host = Host::new(p.data_dir.clone());
    let mut tick = tokio::time::interval(p.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if p.direct {
            let up = p.client.connection_state() == async_nats::connection::State::Connected;
            stats.link(up);
        }
        let head = RunnerMetrics {
            runner_id: p.runner_id.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            at_ms: ferry_model::now_ms(),
            interval_ms: p.interval.as_millis() as u64,
            jobs_running: vec![],
            jobs_finished: vec![],
            job_seconds: vec![],
            plugin_exits: vec![],
            artifact_bytes_synced: 0,
            spool_depth: p.outbox.depth().await,
            link_up: true,
            link_reconnects: 0,
            host: host.sample().await,
        };
        let sample = stats.snapshot(head);
        if let Err(e) = p
            .client
            .publish(subject.clone(), encode(&sample).into())
            .await
        {
            debug!(error = %e, "metrics sample not sent");
        }
    }
}

/// The host's CPU, memory and disk, read off the runtime (sysinfo reads `/proc` and calls
/// `statvfs`, which block).
struct Host {
    data_dir: PathBuf,
    /// `None` where the host's figures cannot be read (they are then sent as zeros).
    system: Option<std::sync::Arc<Mutex<sysinfo::System>>>,
}

impl Host {
    fn new(data_dir: PathBuf) -> Host {
        Host {
            // Compared with mount points, which are absolute.
            data_dir: std::path::absolute(&data_dir).unwrap_or(data_dir),
            system: sysinfo::System::new()
                .ok()
                .map(|s| std::sync::Arc::new(Mutex::new(s))),
        }
    }

    async fn sample(&mut self) -> HostStats {
        let (system, dir) = (self.system.clone(), self.data_dir.clone());
        tokio::task::spawn_blocking(move || {
            let mut out = HostStats::default();
            if let Some(Ok(mut s)) = system.as_ref().map(|s| s.lock()) {
                // CPU use is the change since the previous refresh: the last interval.
                s.refresh_cpu_usage();
                s.refresh_memory();
                out.cpu_percent = s.global_cpu_usage();
                out.memory_total_bytes = s.total_memory();
                out.memory_used_bytes = s.used_memory();
            }
            // The disk holding the data directory: the longest mount point it is under.
            if let Ok(disks) = sysinfo::Disks::new_with_refreshed_list()
                && let Some(d) = (&disks)
                    .into_iter()
                    .filter(|d| dir.starts_with(d.mount_point()))
                    .max_by_key(|d| d.mount_point().as_os_str().len())
            {
                out.disk_total_bytes = d.total_space();
                out.disk_used_bytes = d.total_space().saturating_sub(d.available_space());
            }
            out
        })
        .await
        .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_totals_since_start_and_the_link_counts_its_returns() {
        let s = Stats::default();
        s.job_started("plan");
        s.job_started("plan");
        s.job_finished("plan", "succeeded", Duration::from_secs(3));
        s.plugin_exited("script", Some(0));
        s.plugin_exited("script", None);
        s.synced(10);
        s.synced(5);
        s.link(true);
        s.link(false);
        s.link(true);
        let head = RunnerMetrics {
            runner_id: "r".into(),
            version: "v".into(),
            at_ms: 0,
            interval_ms: 15_000,
            jobs_running: vec![],
            jobs_finished: vec![],
            job_seconds: vec![],
            plugin_exits: vec![],
            artifact_bytes_synced: 0,
            spool_depth: 0,
            link_up: false,
            link_reconnects: 0,
            host: HostStats::default(),
        };
        let m = s.snapshot(head);
        assert_eq!(m.jobs_running, vec![("plan".into(), 1)]);
        assert_eq!(
            m.jobs_finished,
            vec![("plan".into(), "succeeded".into(), 1)]
        );
        let (_, h) = &m.job_seconds[0];
        assert_eq!((h.count, h.sum), (1, 3.0));
        assert_eq!(h.buckets[0], (1.0, 0));
        assert_eq!(h.buckets[1], (5.0, 1));
        assert_eq!(
            m.plugin_exits,
            vec![("script".into(), -1, 1), ("script".into(), 0, 1)]
        );
        assert_eq!(m.artifact_bytes_synced, 15);
        assert!(m.link_up);
        assert_eq!(m.link_reconnects, 1);
    }
}
