//! Reading the `EVENTS` stream (`resources::events`): one org's record changes, in the hub's
//! order, from a position a client names.

use ferry_model as m;
use ferry_model::events::{Event, EventKind};
use ferry_protocol::resources::events;

use crate::{Record, Store, StoreError, nats};

pub use crate::feed::EventFeed;

/// The kind of event a write to `bucket` is: one mapping from the records' own buckets.
pub fn kind_of_bucket(bucket: &str) -> Option<EventKind> {
    let kinds = [
        (m::Install::BUCKET, EventKind::Install),
        (m::Workflow::BUCKET, EventKind::Workflow),
        (m::Job::BUCKET, EventKind::Job),
        (m::Approval::BUCKET, EventKind::Approval),
        (m::Release::BUCKET, EventKind::Release),
    ];
    kinds
        .into_iter()
        .find(|(b, _)| *b == bucket)
        .map(|(_, k)| k)
}

/// Where a client's events start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Changes made from now on.
    Now,
    /// Changes after the event with this sequence (the last one the client saw).
    After(u64),
}

/// One org's events, and whether some the client asked for are gone already.
pub struct Events<S> {
    /// The client resumed from a position older than the stream still holds: events between
    /// it and the first one sent are lost, and the client should read the records afresh.
    pub gap: bool,
    pub stream: S,
}

impl Store {
    /// The position of the latest event: a page read after this reads every change up to it,
    /// so its script resumes from here (`Start::After`) and misses none that came between.
    pub async fn events_position(&self) -> Result<u64, StoreError> {
        let mut stream = self.js.get_stream(events::STREAM).await.map_err(nats)?;
        Ok(stream.info().await.map_err(nats)?.state.last_sequence)
    }
}

/// The event a sourced KV write is: its subject names the bucket, org and key; a delete or
/// purge carries the `KV-Operation` header.
pub(crate) fn event_of(m: &async_nats::jetstream::Message) -> Option<Event> {
    let info = m.info().ok()?;
    let rest = m.subject.as_str().strip_prefix("$KV.")?;
    let (bucket, key) = rest.split_once('.')?;
    let (_org, id) = key.split_once('.')?;
    let kind = kind_of_bucket(bucket)?;
    let deleted = m
        .headers
        .as_ref()
        .and_then(|h| h.get("KV-Operation"))
        .is_some_and(|op| matches!(op.as_str(), "DEL" | "PURGE"));
    let record = if deleted {
        None
    } else {
        Some(serde_json::from_slice(&m.payload).ok()?)
    };
    let at_ms = u64::try_from(info.published.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
    Some(Event::new(info.stream_sequence, kind, id, at_ms, record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_source_is_a_kind_and_every_kind_has_a_source() {
        for b in events::SOURCES {
            assert!(kind_of_bucket(b).is_some(), "{b} has no event kind");
        }
        for k in EventKind::ALL {
            assert!(
                events::SOURCES.iter().any(|b| kind_of_bucket(b) == Some(k)),
                "{k:?} has no source"
            );
        }
    }
}
