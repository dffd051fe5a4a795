//! The caps on the hub's streams, chosen by the operator (`ferry-server --logs-max-bytes`, ...)
//! or left at their defaults (`ferry_protocol::resources`).
//!
//! Why caps, and why per stream: JetStream stores a message before any handler judges it, and
//! the control plane's records (KV buckets, `AUDIT`) share the hub's store with what installs
//! send. A stream with `max_bytes` reserves that much of the server's `max_file_store` when it is
//! made (nats-server refuses a stream whose cap does not fit), so the install-fed streams can
//! never take the space the records need: a full `LOGS` drops its own oldest lines and nothing
//! else fails. Which install filled it is found and throttled by log-ingest (`quota`).

use std::collections::HashMap;

use ferry_protocol::resources::{self, StreamDef};

/// Byte caps by stream name; a stream not named keeps its default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamLimits {
    max_bytes: HashMap<&'static str, i64>,
}

impl StreamLimits {
    /// These limits with stream `name` capped at `bytes` (0: no cap), whatever cap it has. Names that are not a
    /// stream with a cap are refused: a typo must not silently leave a stream unbounded.
    pub fn with(mut self, name: &str, bytes: i64) -> Result<StreamLimits, String> {
        let def = Self::capped()
            .find(|d| d.name == name)
            .ok_or_else(|| format!("{name} is not a stream with a byte cap"))?;
        self.max_bytes.insert(def.name, bytes.max(0));
        Ok(self)
    }

    /// The cap stream `def` gets: the operator's, else the one it has (`have`, 0 for none or
    /// a stream not made yet), else its default. So a process started without the flags
    /// (`ferry-server init`, a replica) never undoes an operator's cap, and a stream made
    /// before caps existed gets its default.
    pub fn max_bytes(&self, def: &StreamDef, have: i64) -> i64 {
        self.max_bytes
            .get(def.name)
            .copied()
            .unwrap_or(if have > 0 { have } else { def.max_bytes })
    }

    /// The cap of the `EVENTS` stream, as [`StreamLimits::max_bytes`].
    pub fn events_max_bytes(&self, have: i64) -> i64 {
        self.max_bytes
            .get(resources::events::STREAM)
            .copied()
            .unwrap_or(if have > 0 {
                have
            } else {
                resources::events::MAX_BYTES
            })
    }

    /// What the capped streams reserve together, in bytes: the hub's `max_file_store` must
    /// hold this and leave room for the records (docs/security.md).
    pub fn reserved(&self) -> i64 {
        resources::STREAMS
            .iter()
            .map(|d| self.max_bytes(d, 0))
            .sum::<i64>()
            + self.events_max_bytes(0)
    }

    fn capped() -> impl Iterator<Item = &'static StreamDef> {
        static EVENTS: StreamDef = StreamDef {
            name: resources::events::STREAM,
            subjects: &[],
            retention: resources::Retention::Limits,
            max_age_secs: resources::events::MAX_AGE_SECS,
            duplicate_window_secs: 0,
            deny_delete: false,
            deny_purge: false,
            max_consumers: 0,
            direct: resources::Direct::No,
            max_bytes: resources::events::MAX_BYTES,
            max_msg_size: 0,
        };
        resources::STREAMS
            .iter()
            .filter(|d| d.max_bytes > 0)
            .chain(std::iter::once(&EVENTS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stream_installs_feed_has_a_cap() {
        let limits = StreamLimits::default();
        for def in resources::STREAMS.iter().filter(|d| d.install_fed()) {
            assert!(limits.max_bytes(def, 0) > 0, "{} is uncapped", def.name);
        }
        // The defaults leave most of the hub's default 8 GB store to the records.
        assert!(limits.reserved() < 5 << 30, "{}", limits.reserved());
    }

    #[test]
    fn an_operator_sets_a_cap_by_stream_name_and_a_typo_is_refused() {
        let limits = StreamLimits::default().with("LOGS", 1 << 20).unwrap();
        assert_eq!(limits.max_bytes(&resources::LOGS, 7), 1 << 20);
        assert_eq!(
            limits.max_bytes(&resources::METRICS, 0),
            resources::METRICS.max_bytes
        );
        // Without the operator's word a stream keeps the cap it has.
        assert_eq!(limits.max_bytes(&resources::METRICS, 9), 9);
        let events = limits.with("EVENTS", 5).unwrap();
        assert_eq!(events.events_max_bytes(9), 5);
        assert_eq!(StreamLimits::default().events_max_bytes(9), 9);
        assert!(StreamLimits::default().with("LOG", 1).is_err());
        assert!(StreamLimits::default().with("AUDIT", 1).is_err());
    }
}
