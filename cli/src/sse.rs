//! Server-Sent Events from the API (`/v1/events`, `/v1/jobs/{id}/log`), resumed after a dropped
//! connection: the subscription remembers the last event id it got and reconnects with it as
//! `Last-Event-ID`, so the caller sees each event once, whatever happens to the connection.

use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use eventsource_stream::{Event, Eventsource};
use futures_util::{Stream, StreamExt};

use ferry_client::Client as Api;
use ferry_model::api::{EventsQuery, LogEventsQuery};
use ferry_model::events::EventFilter;
use ferry_model::ops;

type Events = Pin<Box<dyn Stream<Item = Result<Event, String>> + Send>>;

/// How long a subscription keeps trying to reconnect before giving up.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// What a subscription follows.
#[derive(Debug, Clone)]
pub enum Feed {
    /// The org's changes (`GET /v1/events`).
    Events(EventsQuery),
    /// One job's log (`GET /v1/jobs/{id}/log`).
    JobLog(String, LogEventsQuery),
}

impl Feed {
    /// The changes of one workflow's records of `kinds` (`workflow`, `workflow,job`).
    pub fn workflow(id: &str, kinds: &str) -> Feed {
        Feed::Events(EventsQuery {
            filter: EventFilter {
                workflow: Some(id.to_string()),
                kinds: Some(kinds.to_string()),
                ..Default::default()
            },
            last_event_id: None,
        })
    }
}

pub struct Subscription {
    api: Api,
    feed: Feed,
    last_id: Option<String>,
    events: Option<Events>,
}

impl Subscription {
    /// Subscribes to `feed`. The API answers once the subscription is in place: a change made
    /// after this returns is among the events.
    pub async fn open(api: &Api, feed: Feed) -> Result<Subscription> {
        let mut s = Subscription {
            api: api.clone(),
            feed,
            last_id: None,
            events: None,
        };
        s.events = Some(s.connect().await?);
        Ok(s)
    }

    async fn connect(&self) -> Result<Events> {
        let last = self.last_id.as_deref();
        let resp = match &self.feed {
            Feed::Events(q) => self.api.subscribe::<ops::Events>(&[], q, last).await?,
            Feed::JobLog(job, q) => {
                self.api
                    .subscribe::<ops::JobLogEvents>(&[job], q, last)
                    .await?
            }
        };
        let events = resp
            .bytes_stream()
            .eventsource()
            .map(|e| e.map_err(|e| e.to_string()));
        Ok(Box::pin(events))
    }

    /// The next event; reconnects (resuming after the last event seen) when the connection
    /// drops, and fails only when the API stays unreachable or refuses.
    pub async fn next(&mut self) -> Result<Event> {
        let mut down_since: Option<Instant> = None;
        loop {
            if let Some(events) = self.events.as_mut() {
                match events.next().await {
                    Some(Ok(e)) => {
                        if !e.id.is_empty() {
                            self.last_id = Some(e.id.clone());
                        }
                        return Ok(e);
                    }
                    Some(Err(_)) | None => self.events = None,
                }
            }
            let since = *down_since.get_or_insert_with(Instant::now);
            match self.connect().await {
                Ok(events) => self.events = Some(events),
                Err(e) if since.elapsed() > RECONNECT_FOR => {
                    bail!(
                        "lost the event stream {:?} and cannot resume it: {e}",
                        self.feed
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }
}
