//! Where a runner's job events, log batches and result chunks go: straight to the hub's streams
//! (direct mode), or into a durable spool on the install's leaf nats-server first (leaf mode,
//! the default), from which one forwarder sends them on to the hub, in order, as the link allows.
//!
//! The spool is the stream `SPOOL` in the leaf's own JetStream domain, on `spool.<subject>`. A
//! message leaves it only after the hub's stream acknowledged it (then it is deleted), so a cut
//! link, a hub outage or a runner restart loses nothing: the next forwarder starts from the first
//! message still there. Every message keeps its de-duplication id, so one sent twice (the hub's
//! acknowledgement lost on the way) is stored once. Core requests (claims, leases, offers) are not
//! spooled: they need an answer now, and a lease holds while no scheduler can be reached.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, stream::DirectGetErrorKind};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

/// The leaf's spool stream, and the prefix its subjects carry.
pub const SPOOL: &str = "SPOOL";
const PREFIX: &str = "spool.";

#[derive(Clone)]
pub enum Outbox {
    /// Published to the hub's streams, retried until acknowledged.
    Direct(jetstream::Context),
    /// Stored in the leaf's spool; `sent` wakes the forwarder.
    Spool {
        local: jetstream::Context,
        sent: Arc<Notify>,
    },
}

impl Outbox {
    /// Sends `payload` on `subject` with de-duplication id `msg_id` (namespaced here by the org
    /// and install of the subject: `subjects::msg_id`), durably: returns once the hub's stream
    /// (direct) or the leaf's spool has it, retrying until then. What it returns says where the
    /// message is: [`Self::forwarded`] waits until the hub has it.
    pub async fn send(&self, subject: &str, msg_id: &str, payload: Vec<u8>) -> Sent {
        let namespaced = match ferry_protocol::subjects::org_install(subject) {
            Some((org, install)) => ferry_protocol::subjects::msg_id(org, install, msg_id),
            None => msg_id.to_string(),
        };
        let msg_id = namespaced.as_str();
        match self {
            Outbox::Direct(js) => {
                publish_until_acked(js, subject, msg_id, payload).await;
                Sent::AtHub
            }
            Outbox::Spool { local, sent } => {
                let seq =
                    publish_until_acked(local, &format!("{PREFIX}{subject}"), msg_id, payload)
                        .await;
                sent.notify_one();
                Sent::Spooled(seq)
            }
        }
    }

    /// Waits until the hub's stream has a message sent earlier: the forwarder deletes a spooled
    /// message only once the hub acknowledged it (or refused it for good), so a message no longer
    /// in the spool is at the hub.
    pub async fn forwarded(&self, sent: Sent) {
        let (Outbox::Spool { local, .. }, Sent::Spooled(seq)) = (self, sent) else {
            return;
        };
        loop {
            let still_here = match local.get_stream_no_info(SPOOL).await {
                Ok(s) => match s.direct_get(seq).await {
                    Err(e) if e.kind() == DirectGetErrorKind::NotFound => false,
                    // Unknown (the leaf is busy or restarting): look again.
                    _ => true,
                },
                Err(_) => true,
            };
            if !still_here {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Where [`Outbox::send`] left a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// In the hub's stream.
    AtHub,
    /// In the leaf's spool at this sequence, until the forwarder has sent it on.
    Spooled(u64),
}

impl Outbox {
    /// Messages waiting in the spool for the link (0 in direct mode, or when unknown).
    pub async fn depth(&self) -> u64 {
        let Outbox::Spool { local, .. } = self else {
            return 0;
        };
        match local.get_stream(SPOOL).await {
            Ok(mut s) => s.info().await.map(|i| i.state.messages).unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Waits up to `within` until nothing is left to forward; whether that happened.
    pub async fn settle(&self, within: Duration) -> bool {
        let Outbox::Spool { local, .. } = self else {
            return true;
        };
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = match local.get_stream(SPOOL).await {
                Ok(mut s) => s.info().await.map(|i| i.state.messages).unwrap_or(1),
                Err(_) => 1,
            };
            if left == 0 {
                return true;
            }
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Publishes to a stream, retrying with backoff until the stream acknowledges; the message's
/// sequence in the stream (of the first copy, when the stream took it as a duplicate).
pub async fn publish_until_acked(
    js: &jetstream::Context,
    subject: &str,
    msg_id: &str,
    payload: Vec<u8>,
) -> u64 {
    let mut delay = Duration::from_millis(100);
    loop {
        match publish_once(js, subject, Some(msg_id), payload.clone().into()).await {
            Ok(seq) => return seq,
            Err(e) => {
                warn!(subject, error = %e, "publish failed; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}

async fn publish_once(
    js: &jetstream::Context,
    subject: &str,
    msg_id: Option<&str>,
    payload: bytes::Bytes,
) -> Result<u64, String> {
    let mut headers = async_nats::HeaderMap::new();
    if let Some(id) = msg_id {
        headers.insert(async_nats::header::NATS_MESSAGE_ID, id);
    }
    match js
        .publish_with_headers(subject.to_string(), headers, payload)
        .await
    {
        Ok(ack) => ack.await.map(|a| a.sequence).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Creates the spool stream on the leaf (kept across restarts).
pub async fn open_spool(local: &jetstream::Context) -> Result<(), async_nats::Error> {
    local
        .get_or_create_stream(jetstream::stream::Config {
            name: SPOOL.into(),
            subjects: vec![format!("{PREFIX}>")],
            storage: jetstream::stream::StorageType::File,
            allow_direct: true,
            duplicate_window: Duration::from_secs(600),
            ..Default::default()
        })
        .await?;
    Ok(())
}

/// Sends the spool on to the hub, oldest first, one message at a time; deletes each once the
/// hub's stream acknowledged it. Runs until the runner stops.
pub async fn forward(local: jetstream::Context, hub: jetstream::Context, sent: Arc<Notify>) {
    let mut delay = Duration::from_millis(100);
    let mut backlog_reported = false;
    loop {
        match forward_next(&local, &hub).await {
            Ok(true) => {
                delay = Duration::from_millis(100);
                if backlog_reported {
                    info!("the hub takes the spool again");
                    backlog_reported = false;
                }
            }
            Ok(false) => {
                // Empty: wait for the next message (or look again in a second).
                let _ = tokio::time::timeout(Duration::from_secs(1), sent.notified()).await;
            }
            Err(e) => {
                if !backlog_reported {
                    warn!(error = %e, "the hub does not take the spool now; keeping it and retrying");
                    backlog_reported = true;
                } else {
                    debug!(error = %e, "forwarding still failing");
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Forwards the oldest spooled message; `Ok(false)` when there is none.
async fn forward_next(
    local: &jetstream::Context,
    hub: &jetstream::Context,
) -> Result<bool, String> {
    let stream = local
        .get_stream_no_info(SPOOL)
        .await
        .map_err(|e| e.to_string())?;
    let msg = match stream
        .direct_get_next_for_subject(format!("{PREFIX}>"), None)
        .await
    {
        Ok(m) => m,
        Err(e) if e.kind() == DirectGetErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    let subject = msg
        .subject
        .strip_prefix(PREFIX)
        .unwrap_or(&msg.subject)
        .to_string();
    let id = msg
        .headers
        .get(async_nats::header::NATS_MESSAGE_ID)
        .map(|v| v.as_str().to_string());
    let sent = tokio::time::timeout(
        Duration::from_secs(10),
        publish_once(hub, &subject, id.as_deref(), msg.payload.clone()),
    )
    .await
    .map_err(|_| "no acknowledgement from the hub within 10 s".to_string())?;
    match sent {
        Ok(_) => {}
        // Larger than the hub takes: it never will. Dropped (and said), rather than holding up
        // everything behind it; the job it belonged to times out at the hub.
        Err(e) if e.to_lowercase().contains("maximum payload") => {
            tracing::error!(subject, bytes = msg.payload.len(), error = %e, "the hub refuses this spooled message as too large; dropping it");
        }
        Err(e) => return Err(e),
    }
    stream
        .delete_message(msg.sequence)
        .await
        .map_err(|e| e.to_string())?;
    Ok(true)
}
