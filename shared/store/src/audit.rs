//! Reading the `AUDIT` stream back for `ferry audit` and `GET /v1/audit`: one org's records,
//! oldest first, filtered by [`AuditQuery::matches`], a page at a time.
//!
//! The stream is append-only (it refuses delete and purge), so a position in it names a record
//! for good: a page ends with the position read up to, and the next page (or a follower) starts
//! after it. A page scans at most [`SCAN_MAX`] records, matching or not, so a filter that matches
//! little cannot make one request read the whole history: the page comes back short with `more`
//! set, and the caller asks again from `next`.

use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use ferry_model::AuditEvent;
use ferry_model::api::{AuditEntry, AuditPage, AuditQuery};
use futures_util::StreamExt;

use crate::{Store, StoreError, nats};

/// Records one page reads through, at most.
pub const SCAN_MAX: u64 = 50_000;

impl Store {
    /// A page of `org`'s audit records that `q` asks for, after `q.after` (or from `q.since`).
    pub async fn audit_page(&self, org: &str, q: &AuditQuery) -> Result<AuditPage, StoreError> {
        let stream = self.js.get_stream("AUDIT").await.map_err(nats)?;
        let deliver_policy = match (q.after, q.since_ms()) {
            (Some(after), _) => DeliverPolicy::ByStartSequence {
                start_sequence: after + 1,
            },
            (None, Some(ms)) => DeliverPolicy::ByStartTime {
                start_time: time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
                    .unwrap_or(time::OffsetDateTime::UNIX_EPOCH),
            },
            (None, None) => DeliverPolicy::All,
        };
        let mut consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: ferry_protocol::subjects::audit(org, "*"),
                deliver_policy,
                ..Default::default()
            })
            .await
            .map_err(nats)?;
        let mut page = AuditPage {
            next: q.after.unwrap_or(0),
            ..Default::default()
        };
        let mut pending = consumer.info().await.map_err(nats)?.num_pending;
        if pending == 0 {
            return Ok(page);
        }
        let limit = q.limit();
        let mut messages = consumer.messages().await.map_err(nats)?;
        let mut scanned = 0;
        while pending > 0 {
            if page.entries.len() >= limit || scanned >= SCAN_MAX {
                page.more = true;
                break;
            }
            let next = tokio::time::timeout(Duration::from_secs(10), messages.next()).await;
            let Ok(Some(Ok(m))) = next else {
                return Err(StoreError::Timeout("reading the audit stream"));
            };
            let info = m.info().map_err(StoreError::Nats)?;
            pending = info.pending;
            page.next = info.stream_sequence;
            scanned += 1;
            // A record that does not read as one is skipped: the stream takes only what the
            // control plane writes, but a reader must not stop at one bad record.
            let Ok(event) = serde_json::from_slice::<AuditEvent>(&m.payload) else {
                continue;
            };
            if q.matches(&event) {
                page.entries.push(AuditEntry {
                    seq: info.stream_sequence,
                    event,
                });
            }
        }
        Ok(page)
    }
}
