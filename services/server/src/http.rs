//! The HTTP server, run by hand over hyper rather than `axum::serve`, which offers no
//! header-read timeout and no connection cap: a client that opens connections and sends half a
//! request would otherwise hold a file descriptor each, for ever, until `/healthz` itself
//! cannot be served.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::{debug, warn};

use crate::limits::HttpLimitArgs;

/// Serves `app` on `listener` until the listener fails for good: each connection must send its
/// headers within the header timeout and finish each request (body included) within the request
/// timeout; at most `http_max_connections` are open at once (the next waits in the listen queue).
/// Every connection's task is owned here.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: &HttpLimitArgs,
) -> std::io::Result<()> {
    let request_timeout = limits.request_timeout();
    let app = app.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| bounded(req, next, request_timeout),
    ));
    let permits = Arc::new(Semaphore::new(limits.http_max_connections.max(1)));
    let header_timeout = limits.header_timeout();
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return Ok(());
        };
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            // Out of file descriptors, or a connection reset before it was accepted: the
            // listener itself is fine; give the process a moment rather than spinning.
            Err(e) => {
                warn!(error = %e, "accepting an HTTP connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(app.clone());
        connections.spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = http
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            if let Err(e) = conn.await {
                debug!(%peer, error = %e, "HTTP connection ended");
            }
            drop(permit);
        });
    }
}

/// A request answered within `limit`, or 408. Only the handler's own work counts (reading the
/// body and making the response): a streamed response (Server-Sent Events) goes on after it.
async fn bounded(req: Request, next: Next, limit: Duration) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            axum::Json(serde_json::json!({ "error": "the request took too long" })),
        )
            .into_response(),
    }
}
