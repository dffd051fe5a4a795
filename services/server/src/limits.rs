//! The bounds an operator sets on what installs and API clients may cost the control plane:
//! the install-fed streams' byte caps (`ferry_store::StreamLimits`), the HTTP server's timeouts
//! and connection cap, and the number of open event streams. docs/security.md lists each with
//! its default.

use std::time::Duration;

use ferry_protocol::resources;
use ferry_store::StreamLimits;

/// A size on the command line: `2GiB`, `512MiB`, `1000000`; `0` for no cap.
fn size(s: &str) -> Result<i64, String> {
    let n: bytesize::ByteSize = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    i64::try_from(n.as_u64()).map_err(|_| format!("{s:?} is too large"))
}

/// Byte caps of the streams installs feed and of `EVENTS` (0: no cap). A full stream drops its
/// own oldest messages; the caps together must fit the hub's `max_file_store` with room left for
/// the records (nats-server refuses a stream whose cap does not fit). Without a flag a stream
/// keeps the cap it has, or gets its default when it has none (the defaults are in the help).
#[derive(clap::Args, Debug, Clone)]
pub struct StreamCapArgs {
    /// Cap of `LOGS`, the runners' job log lines (default 2GiB).
    #[arg(long, env = "FERRY_LOGS_MAX_BYTES", value_parser = size)]
    logs_max_bytes: Option<i64>,
    /// Cap of `JOB_EVENTS`, the runners' job events (default 512MiB).
    #[arg(long, env = "FERRY_JOB_EVENTS_MAX_BYTES", value_parser = size)]
    job_events_max_bytes: Option<i64>,
    /// Cap of `RESULTS`, job results too large for one message (default 1GiB).
    #[arg(long, env = "FERRY_RESULTS_MAX_BYTES", value_parser = size)]
    results_max_bytes: Option<i64>,
    /// Cap of `METRICS`, the runners' metric samples (default 256MiB).
    #[arg(long, env = "FERRY_METRICS_MAX_BYTES", value_parser = size)]
    metrics_max_bytes: Option<i64>,
    /// Cap of `EVENTS`, the record changes the API's /v1/events serves (default 1GiB).
    #[arg(long, env = "FERRY_EVENTS_MAX_BYTES", value_parser = size)]
    events_max_bytes: Option<i64>,
}

impl StreamCapArgs {
    pub fn limits(&self) -> Result<StreamLimits, String> {
        let given = [
            (resources::LOGS.name, self.logs_max_bytes),
            (resources::JOB_EVENTS.name, self.job_events_max_bytes),
            (resources::RESULTS.name, self.results_max_bytes),
            (resources::METRICS.name, self.metrics_max_bytes),
            (resources::events::STREAM, self.events_max_bytes),
        ];
        given
            .into_iter()
            .filter_map(|(name, bytes)| Some((name, bytes?)))
            .try_fold(StreamLimits::default(), |l, (name, bytes)| {
                l.with(name, bytes)
            })
    }
}

/// Each install's quota of bytes sent to the hub (log-ingest: `ferry_model::quotas`).
#[derive(clap::Args, Debug, Clone)]
pub struct QuotaArgs {
    /// Bytes one install may send into the hub's streams per minute (logs, events, results and
    /// metrics together, per stream); past it the install is throttled and what it sent there
    /// purged. Its runner's leaf keeps what it could not send.
    #[arg(long, env = "FERRY_INSTALL_QUOTA_PER_MIN", default_value = "256MiB", value_parser = size)]
    install_quota_per_min: i64,
    /// Seconds an install over its quota is refused by the hub (its live connections closed).
    #[arg(long, env = "FERRY_INSTALL_THROTTLE_SECS", default_value_t = 300)]
    install_throttle_secs: u64,
}

impl QuotaArgs {
    pub fn limits(&self) -> ferry_log_ingest::quota::Limits {
        ferry_log_ingest::quota::Limits {
            quota: ferry_model::quotas::Quota {
                bytes_per_window: u64::try_from(self.install_quota_per_min.max(1)).unwrap_or(1),
                window_ms: 60_000,
            },
            throttle: Duration::from_secs(self.install_throttle_secs.max(1)),
        }
    }
}

/// What one HTTP client may hold of the server.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpLimitArgs {
    /// Seconds a client has to send a request's headers; then the connection is closed (a
    /// slow-loris client holds nothing for longer).
    #[arg(long, env = "FERRY_HTTP_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub http_header_timeout_secs: u64,
    /// Seconds a request may take to arrive and be answered, body included (event streams,
    /// which stay open, excepted).
    #[arg(long, env = "FERRY_HTTP_REQUEST_TIMEOUT_SECS", default_value_t = 300)]
    pub http_request_timeout_secs: u64,
    /// Open HTTP connections at most; further ones wait in the listen queue until one closes.
    /// Keep it well below the process's open-file limit (`LimitNOFILE` in the systemd unit).
    #[arg(long, env = "FERRY_HTTP_MAX_CONNECTIONS", default_value_t = 4096)]
    pub http_max_connections: usize,
    /// Event streams (/v1/events, followed logs) open at once, per API token.
    #[arg(long, env = "FERRY_SSE_PER_TOKEN", default_value_t = 200)]
    pub sse_per_token: usize,
    /// Event streams open at once in this process, over all tokens.
    #[arg(long, env = "FERRY_SSE_MAX", default_value_t = 2000)]
    pub sse_max: usize,
    /// Event streams open at once per org, over its tokens (default: three quarters of
    /// --sse-max, so one org never holds every place).
    #[arg(long, env = "FERRY_SSE_PER_ORG")]
    pub sse_per_org: Option<usize>,
}

impl HttpLimitArgs {
    pub fn header_timeout(&self) -> Duration {
        Duration::from_secs(self.http_header_timeout_secs.max(1))
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.http_request_timeout_secs.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size("2GiB"), Ok(2 << 30));
        assert_eq!(size("512MiB"), Ok(512 << 20));
        assert_eq!(size("1000"), Ok(1000));
        assert_eq!(size("0"), Ok(0));
        assert!(size("lots").is_err());
    }
}
