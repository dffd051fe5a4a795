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
    each_message(consumer, label, move |msg| {
        let handled = handler(msg);
        async move {
            let (msg, outcome) = handled.await;
            settle(msg, outcome, label).await;
            Ok(())
        }
    })
    .await
}

/// Passes every message of a consumer to `take`, forever, resubscribing after an error of the
/// consumer's; an error of `take`'s ends it.
async fn each_message<F, Fut>(
    consumer: PullConsumer,
    label: &'static str,
    mut take: F,
) -> Result<(), StoreError>
where
    F: FnMut(jetstream::Message) -> Fut,
    Fut: Future<Output = Result<(), StoreError>>,
{
    loop {
        let mut messages = consumer.messages().await.map_err(nats)?;
        while let Some(next) = messages.next().await {
            match next {
                Ok(msg) => take(msg).await?,
                Err(e) => {
                    warn!(consumer = label, error = %e, "consumer error; resubscribing");
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Acknowledges a handled message according to what its handler made of it.
async fn settle(msg: jetstream::Message, outcome: Handled, label: &'static str) {
    let metrics = ferry_telemetry::metrics();
    let l = ferry_telemetry::consumer_label(label);
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

/// [`consume_messages`] with the messages of different installs handled at once, in `lanes`
/// lanes: a message goes to the lane of its subject's org and install
/// (`subjects::org_install`), and each lane handles its messages one at a time, in order. So an
/// install's messages keep their order, and a thousand installs' do not queue behind each other:
/// the scheduler handling runners' results one at a time was what a release over a thousand
/// installs waited on (a backlog of 600 to 1,600 results for 20 s, loadtest/README.md).
///
/// Handlers of different installs must not rely on running alone: they already share the
/// records with the other replicas of their service, through compare-and-swap.
pub async fn consume_messages_by_install<M, F, Fut>(
    consumer: PullConsumer,
    label: &'static str,
    lanes: usize,
    handler: F,
) -> Result<(), StoreError>
where
    M: Message + Send + 'static,
    F: Fn(String, M) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Handled> + Send + 'static,
{
    let key = |subject: &str, _: &M| lane_key(&subjects::org_install(subject));
    consume_messages_in_lanes(consumer, label, lanes, key, handler).await
}

/// [`consume_messages_by_install`] with the lane chosen by `key` of each message's subject and
/// content: messages of one key are handled in order, of different keys at once.
pub async fn consume_messages_in_lanes<M, K, F, Fut>(
    consumer: PullConsumer,
    label: &'static str,
    lanes: usize,
    key: K,
    handler: F,
) -> Result<(), StoreError>
where
    M: Message + Send + 'static,
    K: Fn(&str, &M) -> u64,
    F: Fn(String, M) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Handled> + Send + 'static,
{
    let lanes = lanes.max(1);
    let mut tasks = tokio::task::JoinSet::new();
    let senders: Vec<_> = (0..lanes)
        .map(|_| {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<(jetstream::Message, M)>(64);
            let handler = handler.clone();
            tasks.spawn(async move {
                while let Some((msg, m)) = rx.recv().await {
                    let outcome = handler(msg.subject.to_string(), m).await;
                    settle(msg, outcome, label).await;
                }
            });
            tx
        })
        .collect();
    // The lanes are this function's: they end when it does (`tasks` dropped aborts them).
    let read = each_message(consumer, label, move |msg| {
        let to = match decode::<M>(&msg.payload) {
            Ok(m) => Ok((
                senders[(key(&msg.subject, &m) % lanes as u64) as usize].clone(),
                m,
            )),
            Err(e) => Err(e.to_string()),
        };
        async move {
            match to {
                // Handed on: the lane settles it. A lane gone (its handler panicked) ends the
                // service loudly; the message, unacknowledged, is redelivered to its successor.
                Ok((tx, m)) => tx
                    .send((msg, m))
                    .await
                    .map_err(|_| StoreError::SubscriptionEnded(label)),
                Err(why) => {
                    settle(msg, Handled::Reject(why), label).await;
                    Ok(())
                }
            }
        }
    });
    let result = read.await;
    tasks.shutdown().await;
    result
}

/// A lane key from anything hashable: the same value, the same lane, every time.
pub fn lane_key(value: &impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
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
