//! Caps on open event streams (`/v1/events`, followed job logs). Each open stream holds a
//! JetStream consumer and a task's buffers for as long as the client stays; without a cap one
//! viewer token could open thousands and take the whole process's memory. A stream beyond a cap
//! is answered 429 with the limit; a stream's place is given back when its response ends (the
//! client closed it, or the server did).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::ApiError;

/// The limits: per token, and for the whole process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamCaps {
    pub per_token: usize,
    pub total: usize,
}

impl Default for StreamCaps {
    fn default() -> Self {
        StreamCaps {
            per_token: 200,
            total: 2000,
        }
    }
}

/// The streams open now, by token (`<org>/<actor>`).
#[derive(Debug, Default)]
pub struct OpenStreams {
    caps: StreamCaps,
    open: Mutex<(usize, HashMap<String, usize>)>,
}

/// One open stream's place; dropping it gives the place back.
#[derive(Debug)]
pub struct StreamPermit {
    streams: Arc<OpenStreams>,
    token: String,
}

impl OpenStreams {
    pub fn new(caps: StreamCaps) -> OpenStreams {
        OpenStreams {
            caps,
            open: Mutex::default(),
        }
    }

    /// A place for one more stream of `token`, or 429 saying which limit it reached.
    pub fn admit(self: &Arc<Self>, token: &str) -> Result<StreamPermit, ApiError> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| ApiError::Unavailable("event streams are unavailable".into()))?;
        let (total, by_token) = &mut *open;
        let mine = by_token.get(token).copied().unwrap_or(0);
        if mine >= self.caps.per_token {
            return Err(ApiError::TooManyRequests(format!(
                "this token has {mine} event streams open, the most one token may (--sse-per-token {}): close one first",
                self.caps.per_token
            )));
        }
        if *total >= self.caps.total {
            return Err(ApiError::TooManyRequests(format!(
                "the server has {total} event streams open, the most it serves (--sse-max {}): try again later",
                self.caps.total
            )));
        }
        *total += 1;
        by_token.insert(token.to_string(), mine + 1);
        Ok(StreamPermit {
            streams: self.clone(),
            token: token.to_string(),
        })
    }

    /// Streams open now: in all, and of `token`.
    pub fn open(&self, token: &str) -> (usize, usize) {
        self.open
            .lock()
            .map_or((0, 0), |o| (o.0, o.1.get(token).copied().unwrap_or(0)))
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Ok(mut open) = self.streams.open.lock() {
            let (total, by_token) = &mut *open;
            *total = total.saturating_sub(1);
            if let Some(n) = by_token.get_mut(&self.token) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    by_token.remove(&self.token);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_past_its_cap_is_refused_until_one_of_its_streams_ends() {
        let streams = Arc::new(OpenStreams::new(StreamCaps {
            per_token: 2,
            total: 3,
        }));
        let a1 = streams.admit("acme/a").unwrap();
        let _a2 = streams.admit("acme/a").unwrap();
        let e = streams.admit("acme/a").unwrap_err();
        assert!(matches!(&e, ApiError::TooManyRequests(m) if m.contains("--sse-per-token 2")));
        let _b1 = streams.admit("acme/b").unwrap();
        let e = streams.admit("acme/b").unwrap_err();
        assert!(matches!(&e, ApiError::TooManyRequests(m) if m.contains("--sse-max 3")));
        drop(a1);
        assert_eq!(streams.open("acme/a"), (2, 1));
        streams.admit("acme/a").unwrap();
    }
}
