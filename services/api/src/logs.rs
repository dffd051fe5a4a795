//! `GET /v1/jobs/{id}/logs`: a job's log as JSON lines, optionally followed live.

use std::collections::HashSet;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Query;
use axum::http::header;
use axum::response::Response;
use ferry_model::{self as m, LogEntry};
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::ApiError;
use crate::auth::Ctx;
use crate::ids::Name;

#[derive(Debug, Deserialize)]
pub struct LogQuery {
    #[serde(default)]
    follow: bool,
    /// Only the last this many lines (not with `follow`).
    #[serde(default)]
    tail: Option<usize>,
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

pub async fn job_logs(
    Ctx(s): Ctx,
    Name(id): Name,
    Query(q): Query<LogQuery>,
) -> Result<Response, ApiError> {
    let job = s
        .store
        .repo::<m::Job>()
        .get(&s.org, &id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("job `{id}` not found")))?
        .value;
    let ndjson = |body: Body| {
        Response::builder()
            .header(header::CONTENT_TYPE, "application/x-ndjson")
            .body(body)
            .unwrap_or_default()
    };
    if let Some(entries) = s.store.archived_job_log(&s.org, &id).await? {
        let entries = tailed(entries, q.tail);
        let body: Vec<u8> = entries.iter().flat_map(|e| line(e).to_vec()).collect();
        return Ok(ndjson(Body::from(body)));
    }
    if !q.follow || job.status.is_terminal() || q.tail.is_some() {
        let entries = tailed(s.store.job_log(&job).await?, q.tail);
        let body: Vec<u8> = entries.iter().flat_map(|e| line(e).to_vec()).collect();
        return Ok(ndjson(Body::from(body)));
    }

    // Follow: stream lines as they arrive; once the job has finished, send whatever has not been
    // sent yet (the complete log is in the stream by then) and end.
    let (tx, mut rx) = mpsc::channel::<Bytes>(256);
    let store = s.store.clone();
    let org = s.org.clone();
    tokio::spawn(async move {
        let Ok(live) = store.job_log_stream(job.clone()).await else {
            return;
        };
        let mut live = std::pin::pin!(live);
        let mut sent: HashSet<(String, u64)> = HashSet::new();
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                next = live.next() => {
                    let Some(e) = next else { break };
                    if sent.insert((e.execution.clone(), e.seq)) && tx.send(line(&e)).await.is_err() {
                        return; // the client went away
                    }
                }
                _ = tick.tick() => {
                    let done = matches!(store.repo::<m::Job>().get(&org, &id).await, Ok(Some(j)) if j.value.status.is_terminal());
                    if done {
                        if let Ok(all) = store.job_log(&job).await {
                            for e in all {
                                if sent.insert((e.execution.clone(), e.seq)) && tx.send(line(&e)).await.is_err() {
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
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)).map(Ok::<_, Infallible>);
    Ok(ndjson(Body::from_stream(stream)))
}
