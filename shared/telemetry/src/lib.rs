//! Tracing and metrics setup shared by every Ferry binary.
//!
//! Metrics live in one process-wide Prometheus registry so any crate can count without threading a
//! handle through every call; the server exposes it on `/metrics`.

use std::sync::{Mutex, OnceLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
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
    /// Jobs running in this process (runner).
    pub jobs_running: Gauge,
}

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
            jobs_running: Gauge::default(),
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
            "jobs_running",
            "Jobs running in this process",
            m.jobs_running.clone(),
        );
        if let Ok(mut r) = m.registry.lock() {
            *r = registry;
        }
        m
    })
}

/// The registry in Prometheus text format.
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
