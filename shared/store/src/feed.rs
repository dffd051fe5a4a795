//! One reading of the `EVENTS` stream per process, shared by every open event stream.
//!
//! Why: a consumer per open `/v1/events` response cost the hub a consumer each (a stream allows
//! about a thousand) and the server megabytes each. Here a single ordered consumer reads every
//! org's changes and broadcasts them; each open response holds a broadcast receiver and a small
//! task that keeps its org's events. A response resuming from an earlier position first reads
//! what it missed with a consumer of its own, which ends once it has caught up; so does one that
//! fell too far behind the broadcast (it is never silently skipped ahead).
//!
//! No event is lost between the catch-up and the broadcast: the reader records the next
//! sequence it will broadcast before it broadcasts the one before; a response subscribes to the
//! broadcast first, then reads that position and catches up to just before it; anything at or
//! after it reaches the response through the broadcast, and duplicates are dropped by sequence.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use ferry_model::events::Event;
use ferry_protocol::resources::events;
use futures_util::StreamExt;
use tokio::sync::{broadcast, mpsc, watch};
use tracing::warn;

use crate::events::{Events, Start, event_of};
use crate::{Store, StoreError, nats};

/// Changes kept for receivers that are a little behind; one further behind catches up from the
/// stream.
const BROADCAST: usize = 1024;
/// Events buffered for one open response.
const PER_STREAM: usize = 32;

/// An event of some org, as broadcast.
#[derive(Debug, Clone)]
struct OrgEvent {
    org: String,
    event: Event,
}

/// A task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The process's shared reading of `EVENTS`; cheap to clone.
#[derive(Clone)]
pub struct EventFeed {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    tx: broadcast::Sender<Arc<OrgEvent>>,
    /// The next sequence the reader will broadcast: everything before it was broadcast.
    next: Arc<AtomicU64>,
    /// The first sequence the broadcast carries, once the reader started.
    started: watch::Receiver<Option<u64>>,
    start_tx: watch::Sender<Option<u64>>,
    reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(Some(task)) = self.reader.lock().map(|mut r| r.take()) {
            task.abort();
        }
    }
}

impl EventFeed {
    pub fn new(store: Store) -> EventFeed {
        let (tx, _) = broadcast::channel(BROADCAST);
        let (start_tx, started) = watch::channel(None);
        EventFeed {
            inner: Arc::new(Inner {
                store,
                tx,
                next: Arc::new(AtomicU64::new(0)),
                started,
                start_tx,
                reader: Mutex::new(None),
            }),
        }
    }

    /// Starts the shared reader unless it runs; returns the next sequence it will broadcast
    /// (everything before it was).
    async fn running(&self) -> Result<u64, StoreError> {
        if let Ok(mut reader) = self.inner.reader.lock()
            && reader.as_ref().is_none_or(|t| t.is_finished())
        {
            let _ = self.inner.start_tx.send(None);
            let reading = Reading {
                store: self.inner.store.clone(),
                tx: self.inner.tx.clone(),
                start: self.inner.start_tx.clone(),
                next: self.inner.next.clone(),
            };
            *reader = Some(tokio::spawn(reading.run()));
        }
        let mut started = self.inner.started.clone();
        tokio::time::timeout(Duration::from_secs(30), started.wait_for(Option::is_some))
            .await
            .map_err(|_| StoreError::Timeout("starting the event feed"))?
            .map_err(|_| StoreError::Timeout("starting the event feed"))?;
        Ok(self.inner.next.load(Ordering::SeqCst))
    }

    /// `org`'s events from `from` on, for as long as the caller reads.
    pub async fn subscribe(
        &self,
        org: &str,
        from: Start,
    ) -> Result<
        Events<impl futures_util::Stream<Item = Result<Event, StoreError>> + use<>>,
        StoreError,
    > {
        let rx = self.inner.tx.subscribe();
        let first_live = self.running().await?;
        let mut stream = self
            .inner
            .store
            .js
            .get_stream(events::STREAM)
            .await
            .map_err(nats)?;
        let info = stream.info().await.map_err(nats)?.state.clone();
        let (after, gap) = match from {
            Start::Now => (info.last_sequence, false),
            Start::After(seq) => (seq, seq.saturating_add(1) < info.first_sequence),
        };
        let (out, events) = mpsc::channel(PER_STREAM);
        let follower = Follower {
            js: self.inner.store.js.clone(),
            org: org.to_string(),
            out,
            last: after,
        };
        // The response owns its follower: dropping the stream ends the task at once.
        let task = AbortOnDrop(tokio::spawn(follower.run(rx, first_live)));
        let events = futures_util::stream::unfold((events, task), |(mut rx, task)| async move {
            rx.recv().await.map(|e| (e, (rx, task)))
        });
        Ok(Events {
            gap,
            stream: events,
        })
    }
}

/// The shared reader: every org's events from the stream's end, each broadcast, for as long
/// as the process runs (a broken reading resumes after the last event it broadcast).
struct Reading {
    store: Store,
    tx: broadcast::Sender<Arc<OrgEvent>>,
    start: watch::Sender<Option<u64>>,
    next: Arc<AtomicU64>,
}

impl Reading {
    async fn run(self) {
        let mut resume = None;
        loop {
            match self.read_from(&mut resume).await {
                Ok(()) => warn!("the event feed's reading ended; starting again"),
                Err(e) => warn!(error = %e, "the event feed's reading failed; starting again"),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn read_from(&self, resume: &mut Option<u64>) -> Result<(), StoreError> {
        let mut stream = self
            .store
            .js
            .get_stream(events::STREAM)
            .await
            .map_err(nats)?;
        let first = match *resume {
            Some(n) => n,
            None => stream.info().await.map_err(nats)?.state.last_sequence + 1,
        };
        let consumer = stream
            .create_consumer(OrderedConfig {
                deliver_policy: DeliverPolicy::ByStartSequence {
                    start_sequence: first,
                },
                ..Default::default()
            })
            .await
            .map_err(nats)?;
        let mut messages = consumer.messages().await.map_err(nats)?;
        *resume = Some(first);
        self.next.store(first, Ordering::SeqCst);
        let _ = self.start.send(Some(first));
        while let Some(m) = messages.next().await {
            let m = m.map_err(nats)?;
            let Ok(info) = m.info() else { continue };
            let seq = info.stream_sequence;
            *resume = Some(seq + 1);
            // Recorded before the broadcast: a response that reads it after subscribing gets
            // this event either from its catch-up or from the broadcast, never from neither.
            self.next.store(seq + 1, Ordering::SeqCst);
            let org = m
                .subject
                .as_str()
                .strip_prefix("$KV.")
                .and_then(|r| r.split('.').nth(1))
                .map(str::to_string);
            if let (Some(org), Some(event)) = (org, event_of(&m)) {
                // No receiver is no one listening: nothing to do.
                let _ = self.tx.send(Arc::new(OrgEvent { org, event }));
            }
        }
        Ok(())
    }
}

/// One open response's events: what it missed read from the stream, then the broadcast.
struct Follower {
    /// The hub's JetStream (not the whole `Store`: a thousand followers each holding every
    /// bucket's handle is memory for nothing).
    js: async_nats::jetstream::Context,
    org: String,
    out: mpsc::Sender<Result<Event, StoreError>>,
    /// The sequence of the last event sent (or the position it starts after).
    last: u64,
}

impl Follower {
    async fn run(mut self, mut rx: broadcast::Receiver<Arc<OrgEvent>>, first_live: u64) {
        if self.last.saturating_add(1) < first_live && !self.catch_up(Some(first_live - 1)).await {
            return;
        }
        loop {
            let got = tokio::select! {
                got = rx.recv() => got,
                _ = self.out.closed() => return,
            };
            match got {
                Ok(e) => {
                    if e.org == self.org && e.event.seq > self.last {
                        self.last = e.event.seq;
                        if self.out.send(Ok(e.event.clone())).await.is_err() {
                            return;
                        }
                    }
                }
                // Fell behind the broadcast: read what was missed from the stream, then go on
                // (what the broadcast still holds is dropped by sequence).
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if !self.catch_up(None).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Sends the org's events after `self.last`, up to `until` (or the stream's end); false
    /// when the response is gone.
    async fn catch_up(&mut self, until: Option<u64>) -> bool {
        let read = async {
            let stream = self.js.get_stream(events::STREAM).await.map_err(nats)?;
            let consumer = stream
                .create_consumer(OrderedConfig {
                    filter_subject: events::org_filter(&self.org),
                    deliver_policy: DeliverPolicy::ByStartSequence {
                        start_sequence: self.last + 1,
                    },
                    ..Default::default()
                })
                .await
                .map_err(nats)?;
            // Nothing pending: caught up already (the org had no change since).
            if consumer.cached_info().num_pending == 0 {
                return Ok(true);
            }
            let mut messages = consumer.messages().await.map_err(nats)?;
            let mut sent = Vec::new();
            loop {
                // Messages are pending: one arrives unless the hub is gone.
                let next =
                    match tokio::time::timeout(Duration::from_secs(30), messages.next()).await {
                        Ok(Some(m)) => m.map_err(nats)?,
                        Ok(None) => break,
                        Err(_) => return Err(StoreError::Timeout("reading missed events")),
                    };
                let Ok(info) = next.info() else { break };
                let (seq, pending) = (info.stream_sequence, info.pending);
                if until.is_some_and(|u| seq > u) {
                    break;
                }
                if let Some(e) = event_of(&next) {
                    sent.push(e);
                }
                if pending == 0 || until.is_some_and(|u| seq >= u) {
                    break;
                }
                if sent.len() >= PER_STREAM {
                    for e in sent.drain(..) {
                        self.last = e.seq;
                        if self.out.send(Ok(e)).await.is_err() {
                            return Ok(false);
                        }
                    }
                }
            }
            for e in sent {
                self.last = e.seq;
                if self.out.send(Ok(e)).await.is_err() {
                    return Ok(false);
                }
            }
            Ok::<_, StoreError>(true)
        };
        match read.await {
            Ok(open) => open,
            // The response ends with the error: its client resumes from the last event it got,
            // rather than going on past events it never received.
            Err(e) => {
                let _ = self.out.send(Err(e)).await;
                false
            }
        }
    }
}
