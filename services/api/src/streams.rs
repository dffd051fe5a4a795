//! Caps on open event streams (`/v1/events`, followed job logs). Each open stream holds a
//! JetStream consumer and a task's buffers for as long as the client stays; without a cap one
//! viewer token could open thousands and take the whole process's memory. The caps are per
//! token, per org and for the process; the org's is below the process's, so one org (whose admin
//! can mint tokens) cannot hold every place and leave other orgs' viewers none. A stream beyond
//! a cap is answered 429 with the limit; a stream's place is given back when its response ends
//! (the client closed it, or the server did).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::ApiError;

/// The limits: per token, and for the whole process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamCaps {
    pub per_token: usize,
    pub per_org: usize,
    pub total: usize,
}

impl StreamCaps {
    /// The org's cap when the operator gives none: three quarters of the process's, and always
    /// at least one place below it, so another org's first stream is answered.
    pub fn default_per_org(total: usize) -> usize {
        (total - total / 4).min(total.saturating_sub(1)).max(1)
    }
}

impl Default for StreamCaps {
    fn default() -> Self {
        StreamCaps {
            per_token: 200,
            per_org: StreamCaps::default_per_org(2000),
            total: 2000,
        }
    }
}

/// What is open now: in all, by token (`<org>/<actor>`) and by org.
#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_token: HashMap<String, usize>,
    by_org: HashMap<String, usize>,
}

/// The streams open now.
#[derive(Debug, Default)]
pub struct OpenStreams {
    caps: StreamCaps,
    open: Mutex<Open>,
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

    /// A place for one more stream of `token` (`<org>/<actor>`), or 429 saying which limit it
    /// reached.
    pub fn admit(self: &Arc<Self>, token: &str) -> Result<StreamPermit, ApiError> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| ApiError::Unavailable("event streams are unavailable".into()))?;
        let org = org_of(token);
        let mine = open.by_token.get(token).copied().unwrap_or(0);
        let ours = open.by_org.get(org).copied().unwrap_or(0);
        if mine >= self.caps.per_token {
            return Err(ApiError::TooManyRequests(format!(
                "this token has {mine} event streams open, the most one token may (--sse-per-token {}): close one first",
                self.caps.per_token
            )));
        }
        if ours >= self.caps.per_org {
            return Err(ApiError::TooManyRequests(format!(
                "this org has {ours} event streams open, the most one org may (--sse-per-org {}): close one first",
                self.caps.per_org
            )));
        }
        if open.total >= self.caps.total {
            return Err(ApiError::TooManyRequests(format!(
                "the server has {} event streams open, the most it serves (--sse-max {}): try again later",
                open.total, self.caps.total
            )));
        }
        open.total += 1;
        open.by_token.insert(token.to_string(), mine + 1);
        open.by_org.insert(org.to_string(), ours + 1);
        Ok(StreamPermit {
            streams: self.clone(),
            token: token.to_string(),
        })
    }

    /// Streams open now: in all, and of `token`.
    pub fn open(&self, token: &str) -> (usize, usize) {
        self.open.lock().map_or((0, 0), |o| {
            (o.total, o.by_token.get(token).copied().unwrap_or(0))
        })
    }
}

/// The org of a stream's owner (`<org>/<actor>`).
fn org_of(token: &str) -> &str {
    token.split_once('/').map_or(token, |(org, _)| org)
}

/// Takes one from `key`'s count, forgetting it at zero.
fn release(counts: &mut HashMap<String, usize>, key: &str) {
    if let Some(n) = counts.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(key);
        }
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Ok(mut open) = self.streams.open.lock() {
            open.total = open.total.saturating_sub(1);
            release(&mut open.by_token, &self.token);
            release(&mut open.by_org, org_of(&self.token));
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
            per_org: 10,
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

    #[test]
    fn one_org_holding_all_it_may_leaves_another_orgs_first_stream_answered() {
        assert_eq!(StreamCaps::default_per_org(2000), 1500);
        assert_eq!(StreamCaps::default_per_org(4), 3);
        assert_eq!(StreamCaps::default_per_org(2), 1);
        let streams = Arc::new(OpenStreams::new(StreamCaps {
            per_token: 10,
            per_org: StreamCaps::default_per_org(4),
            total: 4,
        }));
        let held: Vec<_> = ["a1", "a2", "a3"]
            .iter()
            .map(|t| streams.admit(&format!("acme/{t}")).unwrap())
            .collect();
        let e = streams.admit("acme/a4").unwrap_err();
        assert!(matches!(&e, ApiError::TooManyRequests(m) if m.contains("--sse-per-org 3")));
        let _globex = streams.admit("globex/viewer").unwrap();
        drop(held);
        streams.admit("acme/a4").unwrap();
    }
}
