//! Each install's quota of bytes sent to the hub (`ferry_model::quotas`), enforced.
//!
//! One ordered consumer per stream installs feed reads headers only (nats-server adds the
//! payload's size as `Nats-Msg-Size`), so counting costs no payload transfer. An install past its
//! quota in a window is throttled — its `RunnerAccess` marked until a time, which the api's auth
//! callout refuses and whose live connections the api closes — and what it sent into that
//! stream is purged: its own data only, whatever it named. The operator sees which install in
//! `ferry_install_quota_exceeded_total{org,install}`, in the log, and in the install's runner
//! access. Every replica counts every message and writes the same throttle; the write is
//! idempotent.

use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use ferry_model::RunnerAccess;
use ferry_model::quotas::{Meter, Over, Quota};
use ferry_protocol::resources::{self, StreamDef};
use ferry_protocol::subjects;
use ferry_store::Store;
use futures_util::StreamExt;
use tracing::{info, warn};

use crate::LogIngestError;

/// What an install may send, and how long it is refused once past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub quota: Quota,
    pub throttle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            quota: Quota {
                bytes_per_window: 256 << 20,
                window_ms: 60_000,
            },
            throttle: Duration::from_secs(300),
        }
    }
}

/// Counts every install-fed stream's messages by install, for as long as the service runs.
pub async fn run(store: Store, limits: Limits) -> Result<(), LogIngestError> {
    let mut meters = tokio::task::JoinSet::new();
    for def in resources::STREAMS.iter().filter(|d| d.install_fed()) {
        meters.spawn(meter(store.clone(), def, limits));
    }
    info!(
        bytes_per_window = limits.quota.bytes_per_window,
        window_ms = limits.quota.window_ms,
        "metering installs' bytes"
    );
    match meters.join_next().await {
        Some(Ok(r)) => r,
        Some(Err(e)) => Err(LogIngestError::Quota(Box::new(e))),
        None => Ok(()),
    }
}

/// Meters one stream.
async fn meter(
    store: Store,
    def: &'static StreamDef,
    limits: Limits,
) -> Result<(), LogIngestError> {
    let err = |e: async_nats::Error| LogIngestError::Quota(e);
    let stream = store
        .js
        .get_stream(def.name)
        .await
        .map_err(|e| err(e.into()))?;
    let filter = def
        .subjects
        .iter()
        .filter(|s| s.starts_with("ferry.rx."))
        .map(|s| s.to_string())
        .collect();
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subjects: filter,
            deliver_policy: DeliverPolicy::New,
            headers_only: true,
            ..Default::default()
        })
        .await
        .map_err(|e| err(e.into()))?;
    let mut messages = consumer.messages().await.map_err(|e| err(e.into()))?;
    let mut counts = Meter::new(limits.quota);
    while let Some(m) = messages.next().await {
        let m = m.map_err(|e| err(e.into()))?;
        let Some((org, install)) = subjects::org_install(&m.subject) else {
            continue;
        };
        let size = m
            .headers
            .as_ref()
            .and_then(|h| h.get("Nats-Msg-Size"))
            .and_then(|v| v.as_str().parse::<u64>().ok())
            .unwrap_or(0)
            + m.subject.len() as u64;
        if let Some(over) = counts.add(org, install, size, ferry_model::Timestamp::now()) {
            let (org, install) = (org.to_string(), install.to_string());
            // Errors are logged: the next crossing tries again, and metering goes on.
            if let Err(e) = enforce(&store, def, &org, &install, &over, limits).await {
                warn!(org, install, stream = def.name, error = %e, "could not enforce an install's quota");
            }
        }
    }
    Ok(())
}

/// Throttles the install (on its first crossing in the window) and purges what it sent into
/// `def`.
async fn enforce(
    store: &Store,
    def: &StreamDef,
    org: &str,
    install: &str,
    over: &Over,
    limits: Limits,
) -> Result<(), LogIngestError> {
    let labels = ferry_telemetry::InstallLabels {
        org: org.to_string(),
        install: install.to_string(),
    };
    if over.first {
        let reason = format!(
            "sent {} bytes to {} within {} s, over its quota of {} bytes",
            over.sent,
            def.name,
            limits.quota.window_ms / 1000,
            limits.quota.bytes_per_window
        );
        warn!(
            org,
            install,
            stream = def.name,
            sent = over.sent,
            "install over its quota: throttled"
        );
        ferry_telemetry::metrics()
            .install_quota_exceeded
            .get_or_create(&labels)
            .inc();
        let until = ferry_model::now_ms()
            .saturating_add(u64::try_from(limits.throttle.as_millis()).unwrap_or(u64::MAX));
        store
            .repo::<RunnerAccess>()
            .upsert(
                org,
                install,
                || RunnerAccess::open(org, install),
                |a| Ok::<_, std::convert::Infallible>(a.throttle(until, reason.clone())),
            )
            .await?
            .unwrap_or_else(|never| match never {});
    }
    let stream = store
        .js
        .get_stream(def.name)
        .await
        .map_err(|e| LogIngestError::Quota(e.into()))?;
    let purged = stream
        .purge()
        .filter(format!("ferry.rx.{org}.{install}.>"))
        .await
        .map_err(|e| LogIngestError::Quota(e.into()))?;
    ferry_telemetry::metrics()
        .install_messages_purged
        .get_or_create(&labels)
        .inc_by(purged.purged);
    info!(
        org,
        install,
        stream = def.name,
        purged = purged.purged,
        "install's messages over its quota purged"
    );
    Ok(())
}
