//! `GET /v1/events`: the caller's org's record changes as Server-Sent Events.
//!
//! Each SSE event is one change: `event:` its kind (`install`, `workflow`, `job`, `approval`,
//! `release`), `id:` its position in the hub's `EVENTS` stream, `data:` a
//! `ferry_model::events::Event`. A client that lost its connection sends the last id it saw as
//! `Last-Event-ID` (browsers' `EventSource` does so by itself) and gets exactly the events after
//! it: none lost, none repeated, while the stream still holds them (a day). Resuming from
//! further back first sends an `event: gap`, so the client knows to read the records afresh.
//! Without `Last-Event-ID` the stream starts with the next change; a client that needs the
//! current state too subscribes first, then reads it (the response's headers arrive only once
//! the subscription is in place).

use ferry_model as m;
use ferry_model::api::EventsQuery;
use ferry_model::ops::Operation as _;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::Query;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use ferry_model::events::Event;
use ferry_store::events::Start;
use futures_util::{Stream, StreamExt};

use crate::ApiError;
use crate::auth::Ctx;
use crate::ids::check_filter;

/// Comment lines keep idle connections (and the proxies between) open.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where a client resumes: the `Last-Event-ID` header, or `?last_event_id=` for clients that
/// cannot set headers.
pub(crate) fn last_event_id(
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Option<u64>, ApiError> {
    let given = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("?"))
        .or(query);
    match given.map(str::trim) {
        None | Some("") => Ok(None),
        // JetStream's sequences stay far below 2^63: anything above is no id this stream sent
        // (and one more than u64::MAX, where a resume starts, does not exist).
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| *n < 1 << 63)
            .map(Some)
            .ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "Last-Event-ID `{}` is not an event id (a number this stream sent)",
                    v.chars().take(40).collect::<String>()
                ))
            }),
    }
}

#[utoipa::path(
    get,
    path = m::ops::Events::PATH,
    security(("token" = [m::ops::Events::ROLE_NAME])),
    tag = "events",
    params(("install" = Option<String>, Query, description = "Only this install's changes"), ("workflow" = Option<String>, Query, description = "Only this workflow's changes"), ("kinds" = Option<String>, Query, description = "Comma-separated kinds: install, workflow, job, approval, release"), ("last_event_id" = Option<String>, Query, description = "As Last-Event-ID, for clients that cannot set headers"), ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event")),
    responses((status = 200, description = "Server-Sent Events, one per change: `event:` the kind, `id:` the position to resume from, `data:` an `Event`; `gap` first when events since the given id are gone", content_type = "text/event-stream", body = ferry_model::events::Event), crate::error::Invalid, crate::error::Refusals)
)]
pub async fn events(
    Ctx(s): Ctx,
    headers: HeaderMap,
    Query(q): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    check_filter("install", q.filter.install.as_deref())?;
    check_filter("workflow", q.filter.workflow.as_deref())?;
    q.filter.check().map_err(ApiError::BadRequest)?;
    let from = match last_event_id(&headers, q.last_event_id.as_deref())? {
        Some(seq) => Start::After(seq),
        None => Start::Now,
    };
    let mut reach = match s.reached().await? {
        m::Reached::All => m::EventReach::new(s.scope.clone(), Default::default()),
        m::Reached::Only(names) => m::EventReach::new(s.scope.clone(), names),
    };
    let permit = s.streams.admit(&stream_owner(&s))?;
    let events = s.feed.subscribe(&s.org, from).await?;
    let gap = events.gap.then(|| {
        Ok(SseEvent::default()
            .event("gap")
            .data("events since the given id are no longer kept: read the records again"))
    });
    let filter = q.filter;
    let org = s.org.clone();
    let changes = events.stream.filter_map(move |e| {
        // The stream's place is held for as long as the response lives.
        let _held = &permit;
        let out = match e {
            // Every event goes past the reach (an install's change may bring it in or out).
            Ok(e) if reach.admits(&e) && filter.matches(&e) => Some(Ok(sse(&e))),
            Ok(_) => None,
            Err(err) => {
                // The ordered consumer recreates itself after an error, from the last message it
                // delivered, so nothing is skipped; the error is only logged.
                tracing::warn!(org = %org, error = %err, "event stream interrupted");
                None
            }
        };
        std::future::ready(out)
    });
    // A first comment tells a client the subscription is in place (its headers do too, but
    // not every client shows them).
    let subscribed = Ok(SseEvent::default().comment("subscribed"));
    let stream = futures_util::stream::iter(std::iter::once(subscribed).chain(gap)).chain(changes);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// Whose streams a stream counts among: the caller's token (org and token name).
pub(crate) fn stream_owner(s: &crate::ApiState) -> String {
    format!("{}/{}", s.org, s.actor)
}

fn sse(e: &Event) -> SseEvent {
    SseEvent::default()
        .event(e.kind.name())
        .id(e.seq.to_string())
        // An Event is plain data: serializing it cannot fail.
        .data(serde_json::to_string(e).unwrap_or_default())
}
