//! Publishing to and consuming from the streams, the same way in every service.

use std::future::Future;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::{PullConsumer, pull};
use async_nats::jetstream::{self, AckKind};
use futures_util::StreamExt;
use tracing::{debug, warn};

use crate::{StoreError, nats};
use ferry_model::AuditEvent;
use ferry_protocol::messages::Control;
use ferry_protocol::{Message, decode, encode, subjects};

#[derive(Clone)]
pub struct Bus {
    js: jetstream::Context,
}

impl Bus {
    pub(crate) fn new(js: jetstream::Context) -> Self {
        Bus { js }
    }

    /// Publishes to a stream and waits for the stream's acknowledgement; returns the message's
    /// sequence in the stream. `msg_id` makes a repeated publish (a retry after a crash) a no-op
    /// within the stream's duplicate window (returning the first one's sequence).
    pub async fn publish(
        &self,
        subject: String,
        msg_id: &str,
        payload: Vec<u8>,
    ) -> Result<u64, StoreError> {
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, msg_id);
        let ack = self
            .js
            .publish_with_headers(subject, headers, payload.into())
            .await
            .map_err(nats)?
            .await
            .map_err(nats)?;
        Ok(ack.sequence)
    }

    pub async fn publish_msg<M: Message>(
        &self,
        subject: String,
        msg_id: &str,
        msg: &M,
    ) -> Result<u64, StoreError> {
        self.publish(subject, msg_id, encode(msg)).await
    }

    pub async fn control(&self, msg: &Control) -> Result<(), StoreError> {
        self.publish_msg(
            subjects::control(msg.topic(), msg.org()),
            &msg.dedup_id(),
            msg,
        )
        .await
        .map(drop)
    }

    /// Appends to the `AUDIT` stream (which refuses delete and purge).
    pub async fn audit(&self, event: &AuditEvent) -> Result<(), StoreError> {
        let kind = event
            .action
            .split('.')
            .next()
            .unwrap_or("other")
            .to_string();
        let payload = serde_json::to_vec(event).map_err(nats)?;
        let id = format!("{}-{}-{}", event.action, event.target, event.at);
        self.publish(subjects::audit(&event.org, &kind), &id, payload)
            .await
            .map(drop)
    }

    /// Opens (creating if needed) a durable pull consumer shared by every replica of a service.
    pub async fn durable(
        &self,
        stream: &str,
        name: &str,
        filters: Vec<String>,
    ) -> Result<PullConsumer, StoreError> {
        let s = self.js.get_stream(stream).await.map_err(nats)?;
        s.get_or_create_consumer(
            name,
            pull::Config {
                durable_name: Some(name.to_string()),
                filter_subjects: filters,
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_secs(60),
                max_ack_pending: 1000,
                max_deliver: MAX_DELIVER,
                ..Default::default()
            },
        )
        .await
        .map_err(nats)
    }
}

/// Deliveries of one message before a service gives up on it. With [`retry_delay`] they span
/// about ten minutes: long enough to outlast a restarting dependency, short enough that a message
/// that can never succeed does not loop for ever.
pub const MAX_DELIVER: i64 = 20;

/// How long to wait before the next delivery of a message delivered `delivered` times: doubling
/// from half a second, at most 60 s.
pub fn retry_delay(delivered: i64) -> Duration {
    let exp = u32::try_from(delivered.clamp(1, 8) - 1).unwrap_or(0);
    Duration::from_millis(500 * 2u64.pow(exp)).min(Duration::from_secs(60))
}

/// What a handler made of one message.
pub enum Handled {
    Done,
    /// Could not be handled now (a dependency is down, a race to retry): redeliver after a pause.
    Retry(String),
    /// Can never be handled (undecodable, unknown version): acknowledge it away and count it.
    Reject(String),
}

/// Runs `handler` over every message of a consumer, forever, acknowledging according to what it
/// returns. Messages of one consumer are handled one at a time; replicas of a service share the
/// consumer's messages.
pub async fn consume<F, Fut>(
    consumer: PullConsumer,
    label: &'static str,
    mut handler: F,
) -> Result<(), StoreError>
where
    F: FnMut(jetstream::Message) -> Fut,
    Fut: Future<Output = (jetstream::Message, Handled)>,
{
    let metrics = ferry_telemetry::metrics();
    let l = ferry_telemetry::consumer_label(label);
    loop {
        let mut messages = consumer.messages().await.map_err(nats)?;
        while let Some(next) = messages.next().await {
            let msg = match next {
                Ok(m) => m,
                Err(e) => {
                    warn!(consumer = label, error = %e, "consumer error; resubscribing");
                    break;
                }
            };
            let (msg, outcome) = handler(msg).await;
            let ack = match outcome {
                Handled::Done => {
                    metrics.messages_handled.get_or_create(&l).inc();
                    msg.ack().await
                }
                Handled::Retry(why) => {
                    let delivered = msg.info().map(|i| i.delivered).unwrap_or(1);
                    if delivered >= MAX_DELIVER {
                        // Retrying has not helped: drop it, counted and logged with its reason.
                        warn!(consumer = label, subject = %msg.subject, delivered, %why, "dropping a message that kept failing");
                        metrics.messages_rejected.get_or_create(&l).inc();
                        msg.ack_with(AckKind::Term).await
                    } else {
                        debug!(consumer = label, subject = %msg.subject, delivered, %why, "retrying message");
                        metrics.messages_retried.get_or_create(&l).inc();
                        msg.ack_with(AckKind::Nak(Some(retry_delay(delivered))))
                            .await
                    }
                }
                Handled::Reject(why) => {
                    warn!(consumer = label, subject = %msg.subject, %why, "rejected message");
                    metrics.messages_rejected.get_or_create(&l).inc();
                    msg.ack_with(AckKind::Term).await
                }
            };
            if let Err(e) = ack {
                warn!(consumer = label, error = %e, "acknowledgement failed; the message will be redelivered");
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// [`consume`] for messages of one protocol type: each message is decoded before `handler` sees it
/// (with its subject); one that does not decode, or has an unknown protocol version, is rejected and
/// counted without reaching the handler.
pub async fn consume_messages<M, F, Fut>(
    consumer: PullConsumer,
    label: &'static str,
    mut handler: F,
) -> Result<(), StoreError>
where
    M: Message,
    F: FnMut(String, M) -> Fut,
    Fut: Future<Output = Handled>,
{
    consume(consumer, label, move |msg| {
        let work = decode::<M>(&msg.payload).map(|m| handler(msg.subject.to_string(), m));
        async move {
            let outcome = match work {
                Ok(f) => f.await,
                Err(e) => Handled::Reject(e.to_string()),
            };
            (msg, outcome)
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_and_give_up_after_about_ten_minutes() {
        assert_eq!(retry_delay(1), Duration::from_millis(500));
        assert_eq!(retry_delay(2), Duration::from_secs(1));
        assert_eq!(retry_delay(8), Duration::from_secs(60));
        assert_eq!(retry_delay(40), Duration::from_secs(60));
        let total: Duration = (1..MAX_DELIVER).map(retry_delay).sum();
        assert!(
            total > Duration::from_secs(9 * 60) && total < Duration::from_secs(15 * 60),
            "{total:?}"
        );
    }
}
