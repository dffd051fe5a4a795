//! A job's log: `GET /v1/jobs/{id}/logs` as JSON lines, `GET /v1/jobs/{id}/log` as Server-Sent
//! Events; either followed live to the job's end.

use ferry_model::api::{LogEventsQuery, LogQuery};
use ferry_model::ops::Operation as _;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Query;
use axum::http::header;
use axum::response::Response;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use ferry_model::{self as m, LogEntry};
use futures_util::StreamExt;
use tokio::sync::mpsc;

use ferry_store::Store;

use crate::ApiError;
use crate::auth::Ctx;
use crate::ids::Name;

/// A job's log as it is now, the last `tail` entries or all: from the archive once the job's
/// log was archived, else from the stream. What `GET /v1/jobs/{id}/logs` answers without
/// `follow`, and what the dashboard's job page shows.
pub(crate) async fn entries(
    s: &crate::ApiState,
    job: &m::Job,
    tail: Option<usize>,
) -> Result<Vec<LogEntry>, ApiError> {
    let all = match s.store.archived_job_log(&s.org, &job.id).await? {
        Some(archived) => archived,
        None => s.store.job_log(job).await?,
    };
    Ok(tailed(all, tail))
}

/// The last `tail` entries, or all.
fn tailed(mut entries: Vec<LogEntry>, tail: Option<usize>) -> Vec<LogEntry> {
    if let Some(n) = tail {
        entries.drain(..entries.len().saturating_sub(n));
    }
    entries
}

fn line(e: &LogEntry) -> Bytes {
    let mut v = serde_json::to_vec(e).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

#[utoipa::path(
    get,
    path = m::ops::JobLogs::PATH,
    security(("token" = [m::ops::JobLogs::ROLE_NAME])),
    tag = "jobs",
    params(("id" = String, Path, description = "The job's id"), LogQuery),
    responses((status = 200, description = "The log as JSON lines, one `LogEntry` each", content_type = "application/x-ndjson", body = m::LogEntry), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn job_logs(
    Ctx(s): Ctx,
    Name(id): Name,
    Query(q): Query<LogQuery>,
) -> Result<Response, ApiError> {
    let job = crate::jobs::job_of(&s, &id).await?;
    let ndjson = |body: Body| {
        Response::builder()
            .header(header::CONTENT_TYPE, "application/x-ndjson")
            .body(body)
            .unwrap_or_default()
    };
    let whole = !q.follow || job.status.is_terminal() || q.tail.is_some();
    // An archived log is a finished job's: whole too.
    if whole {
        let entries = entries(&s, &job, q.tail).await?;
        let body: Vec<u8> = entries.iter().flat_map(|e| line(e).to_vec()).collect();
        return Ok(ndjson(Body::from(body)));
    }

    let mut rx = follow(&s.tasks, s.store.clone(), job, 0);
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
        .map(|(_, e)| Ok::<_, Infallible>(line(&e)));
    Ok(ndjson(Body::from_stream(stream)))
}

/// Follows a job's log from its first line, sending each line after the first `skip` with its
/// number (1-based, in the order the `LOGS` stream holds the lines), and ends once the job has
/// finished and every line has been sent. A line's number is the same in every reading of the
/// log (live, complete, or archived: each reads the stream in order), which is what lets a
/// client resume from the last number it got.
fn follow(
    tasks: &ferry_store::Tasks,
    store: Store,
    job: m::Job,
    skip: u64,
) -> mpsc::Receiver<(u64, LogEntry)> {
    let (tx, rx) = mpsc::channel::<(u64, LogEntry)>(256);
    tasks.spawn(async move {
        let Ok(live) = store.job_log_stream(job.clone()).await else {
            return;
        };
        let mut live = std::pin::pin!(live);
        let mut n: u64 = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                // The client went away: stop reading now, not at the job's next line or its end
                // (a quiet job may run for hours).
                _ = tx.closed() => return,
                next = live.next() => {
                    let Some(e) = next else { break };
                    n += 1;
                    if n > skip && tx.send((n, e)).await.is_err() {
                        return; // the client went away
                    }
                }
                _ = tick.tick() => {
                    let done = matches!(store.repo::<m::Job>().get(&job.org, &job.id).await, Ok(Some(j)) if j.value.status.is_terminal());
                    if done {
                        // Whatever the live reading has not reached yet is in the complete log.
                        if let Ok(all) = store.job_log(&job).await {
                            for (i, e) in all.into_iter().enumerate() {
                                let number = i as u64 + 1;
                                if number > n.max(skip) && tx.send((number, e)).await.is_err() {
                                    return;
                                }
                            }
                        }
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// `GET /v1/jobs/{id}/log`: the job's log as Server-Sent Events: `event: line` with `id:` the
/// line's number and `data:` a `LogEntry`, then `event: end` with the job's status once it has
/// finished (or at once, without `follow`, if it has not). `Last-Event-ID` resumes after that
/// line, from the stream or from the archive alike.
#[utoipa::path(
    get,
    path = m::ops::JobLogEvents::PATH,
    security(("token" = [m::ops::JobLogEvents::ROLE_NAME])),
    tag = "jobs",
    params(("id" = String, Path, description = "The job's id"), LogEventsQuery, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this line number")),
    responses((status = 200, description = "Server-Sent Events: `line` (id: the line's number; data: a `LogEntry`), then `end` (data: the job's status)", content_type = "text/event-stream", body = String), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn job_log_events(
    Ctx(s): Ctx,
    Name(id): Name,
    headers: axum::http::HeaderMap,
    Query(q): Query<LogEventsQuery>,
) -> Result<Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let skip = crate::events::last_event_id(&headers, q.last_event_id.as_deref())?.unwrap_or(0);
    let job = crate::jobs::job_of(&s, &id).await?;
    let permit = s.streams.admit(&crate::events::stream_owner(&s))?;
    let (tx, mut rx) = mpsc::channel::<(u64, LogEntry)>(256);
    let stored = match s.store.archived_job_log(&s.org, &id).await? {
        Some(entries) => Some(entries),
        None if !q.follow || job.status.is_terminal() => Some(s.store.job_log(&job).await?),
        None => None,
    };
    match stored {
        Some(entries) => {
            s.tasks.spawn(async move {
                let numbered = (1u64..).zip(entries).skip(skip as usize);
                for line in numbered {
                    if tx.send(line).await.is_err() {
                        return;
                    }
                }
            });
        }
        None => rx = follow(&s.tasks, s.store.clone(), job, skip),
    }
    let lines = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)).map(move |(n, e)| {
        // The stream's place is held for as long as the response lives.
        let _held = &permit;
        Ok(SseEvent::default()
            .event("line")
            .id(n.to_string())
            .data(serde_json::to_string(&e).unwrap_or_default()))
    });
    let (store, org) = (s.store.clone(), s.org.clone());
    let end = futures_util::stream::once(async move {
        let status = match store.repo::<m::Job>().get(&org, &id).await {
            Ok(Some(j)) => j.value.status.name().to_string(),
            _ => "unknown".to_string(),
        };
        Ok(SseEvent::default()
            .event("end")
            .data(serde_json::json!({ "job": id, "status": status }).to_string()))
    });
    Ok(Sse::new(lines.chain(end)).keep_alive(KeepAlive::new().interval(crate::events::KEEP_ALIVE)))
}
