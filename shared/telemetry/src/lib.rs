//! Tracing and metrics setup shared by every Ferry binary.
//!
//! Metrics live in one process-wide Prometheus registry so any crate can count without threading a
//! handle through every call; the server exposes it on `/metrics`.

use std::sync::{Mutex, OnceLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Logs to stderr, filtered by `RUST_LOG` (default `info`, NATS client chatter at `warn`); colours
/// only on a terminal, so a log file holds plain text.
pub fn init_tracing() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,async_nats=warn"));
    // A second call (tests that start several components in one process) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MessageLabels {
    /// The consumer or subscription that handled the message.
    pub consumer: String,
}

/// An install's series (what log-ingest dropped of its runners' metrics).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InstallLabels {
    pub org: String,
    pub install: String,
}

/// One label, `state`, `health` or `decision` as the metric names it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HealthLabels {
    pub health: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    pub decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub kind: String,
    pub outcome: String,
}

pub struct Metrics {
    registry: Mutex<Registry>,
    /// Messages that failed to decode or had an unknown protocol version.
    pub messages_rejected: Family<MessageLabels, Counter>,
    /// Messages handled successfully.
    pub messages_handled: Family<MessageLabels, Counter>,
    /// Messages whose handler failed and that will be redelivered.
    pub messages_retried: Family<MessageLabels, Counter>,
    /// Jobs finished, by job kind and outcome.
    pub jobs_finished: Family<OutcomeLabels, Counter>,
    /// Workflows finished, by kind and outcome.
    pub workflows_finished: Family<OutcomeLabels, Counter>,
    /// Jobs offered to runners (scheduler).
    pub jobs_dispatched: Counter,
    /// From a job's offer to a runner's claim of it (scheduler).
    pub dispatch_latency: Histogram,
    /// Jobs of unfinished workflows, by state (scheduler, sampled).
    pub jobs_in_state: Family<StateLabels, Gauge>,
    /// Plans waiting for a decision (scheduler, sampled).
    pub approvals_waiting: Gauge,
    /// Runners by health (scheduler, sampled).
    pub runners: Family<HealthLabels, Gauge>,
    /// Log lines archived by log-ingest.
    pub log_lines_ingested: Counter,
    /// The auth callout's answers to connecting runners (api).
    pub callout_decisions: Family<DecisionLabels, Counter>,
    /// Runner metric series dropped over an install's budget (log-ingest).
    pub runner_series_dropped: Family<InstallLabels, Counter>,
    /// Times an install went over its quota of bytes sent and was throttled (log-ingest).
    pub install_quota_exceeded: Family<InstallLabels, Counter>,
    /// Messages of an install over its quota, purged from the hub's streams (log-ingest).
    pub install_messages_purged: Family<InstallLabels, Counter>,
    /// Attempts to write an audit record that failed (the record is written again until it
    /// is kept: see the scheduler's `audit.rs`).
    pub audit_failures: Counter,
}

/// Upper bounds of the dispatch latency histogram, in seconds.
const DISPATCH_BOUNDS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0];

// Long: the registration table of every control-plane metric (name, help, handle), one
// entry each, as docs/metrics.md lists them.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::with_prefix("ferry");
        let m = Metrics {
            registry: Mutex::new(Registry::default()),
            messages_rejected: Family::default(),
            messages_handled: Family::default(),
            messages_retried: Family::default(),
            jobs_finished: Family::default(),
            workflows_finished: Family::default(),
            jobs_dispatched: Counter::default(),
            dispatch_latency: Histogram::new(DISPATCH_BOUNDS),
            jobs_in_state: Family::default(),
            approvals_waiting: Gauge::default(),
            runners: Family::default(),
            log_lines_ingested: Counter::default(),
            callout_decisions: Family::default(),
            runner_series_dropped: Family::default(),
            install_quota_exceeded: Family::default(),
            install_messages_purged: Family::default(),
            audit_failures: Counter::default(),
        };
        registry.register(
            "messages_rejected",
            "Messages refused: undecodable or of an unknown protocol version",
            m.messages_rejected.clone(),
        );
        registry.register(
            "messages_handled",
            "Messages handled",
            m.messages_handled.clone(),
        );
        registry.register(
            "messages_retried",
            "Messages whose handling failed and will be redelivered",
            m.messages_retried.clone(),
        );
        registry.register(
            "jobs_finished",
            "Jobs finished by kind and outcome",
            m.jobs_finished.clone(),
        );
        registry.register(
            "workflows_finished",
            "Workflows finished by kind and outcome",
            m.workflows_finished.clone(),
        );
        registry.register(
            "jobs_dispatched",
            "Jobs offered to runners",
            m.jobs_dispatched.clone(),
        );
        registry.register(
            "dispatch_latency_seconds",
            "Seconds from a job's offer to a runner's claim of it",
            m.dispatch_latency.clone(),
        );
        registry.register(
            "jobs_in_state",
            "Jobs of unfinished workflows, by state (sampled every 15 s)",
            m.jobs_in_state.clone(),
        );
        registry.register(
            "approvals_waiting",
            "Plans waiting for a decision (sampled every 15 s)",
            m.approvals_waiting.clone(),
        );
        registry.register(
            "runners",
            "Runners by health (sampled every 15 s)",
            m.runners.clone(),
        );
        registry.register(
            "log_lines_ingested",
            "Job log lines archived",
            m.log_lines_ingested.clone(),
        );
        registry.register(
            "callout_decisions",
            "The auth callout's answers to connecting runners, by decision",
            m.callout_decisions.clone(),
        );
        registry.register(
            "runner_series_dropped",
            "Runner metric series dropped over an install's budget",
            m.runner_series_dropped.clone(),
        );
        registry.register(
            "install_quota_exceeded",
            "Times an install sent more than its quota in a window and was throttled",
            m.install_quota_exceeded.clone(),
        );
        registry.register(
            "install_messages_purged",
            "Messages of an install over its quota, purged from the hub's streams",
            m.install_messages_purged.clone(),
        );
        registry.register(
            "audit_failures",
            "Attempts to write an audit record that failed; each is tried again until kept",
            m.audit_failures.clone(),
        );
        if let Ok(mut r) = m.registry.lock() {
            *r = registry;
        }
        m
    })
}

/// Adds metrics produced at scrape time (runners' samples) to the registry.
pub fn register_collector(collector: Box<dyn prometheus_client::collector::Collector>) {
    if let Ok(mut r) = metrics().registry.lock() {
        r.register_collector(collector);
    }
}

/// The content type of [`encode_metrics`]' text: OpenMetrics 1.0.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The registry in the OpenMetrics text format (served as [`OPENMETRICS`]).
pub fn encode_metrics() -> String {
    let mut out = String::new();
    let m = metrics();
    if let Ok(r) = m.registry.lock() {
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &r);
    }
    out
}

pub fn consumer_label(consumer: &str) -> MessageLabels {
    MessageLabels {
        consumer: consumer.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_show_up_in_the_text_format() {
        metrics()
            .messages_rejected
            .get_or_create(&consumer_label("t"))
            .inc();
        let text = encode_metrics();
        assert!(
            text.contains("ferry_messages_rejected_total{consumer=\"t\"} 1"),
            "{text}"
        );
    }
}
