//! Each install's quota of bytes sent to the hub, as a pure function of what it sent and when.
//!
//! JetStream stores an install's message before any handler judges it, and the streams installs
//! feed are capped as a whole (`ferry_store::StreamLimits`): without a quota per install, one
//! install could fill a stream with junk and push every other install's oldest lines out.
//! log-ingest counts every install's bytes per window (headers only: the size, never the
//! payload); an install past its quota is throttled — its connections refused and closed for a
//! while ([`crate::RunnerAccess::throttle`]) — and what it sent in the stream is purged. Its
//! runner's leaf keeps what it could not send (store and forward), so an honest install that
//! was merely busy loses nothing; a compromised one loses its own junk and nobody else's.

use crate::Timestamp;
use std::collections::HashMap;

/// An install's allowance: bytes per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub bytes_per_window: u64,
    pub window_ms: u64,
}

/// What crossing the quota calls for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Over {
    /// Bytes the install sent in this window so far.
    pub sent: u64,
    /// The first crossing in this window (throttle it); later ones only purge again.
    pub first: bool,
}

/// Bytes each install (`(org, install)`) sent in the current window.
#[derive(Debug, Clone)]
pub struct Meter {
    quota: Quota,
    window_start_ms: u64,
    sent: HashMap<(String, String), u64>,
}

impl Meter {
    pub fn new(quota: Quota) -> Meter {
        Meter {
            quota,
            window_start_ms: 0,
            sent: HashMap::new(),
        }
    }

    /// Counts `bytes` sent by `install` of `org` at `now.ms()`. Returns what to do when this
    /// message takes the install past its quota, or past another multiple of it in the same
    /// window (so junk that kept arriving is purged again); `None` otherwise.
    pub fn add(&mut self, org: &str, install: &str, bytes: u64, now: Timestamp) -> Option<Over> {
        let window = self.quota.window_ms.max(1);
        if now.ms().saturating_sub(self.window_start_ms) >= window {
            self.window_start_ms = now.ms() - now.ms() % window;
            self.sent.clear();
        }
        let sent = self
            .sent
            .entry((org.to_string(), install.to_string()))
            .or_insert(0);
        let before = *sent;
        *sent = sent.saturating_add(bytes);
        let limit = self.quota.bytes_per_window.max(1);
        // How many whole quotas the install is past (none at exactly its quota).
        let past = |n: u64| n.saturating_sub(1) / limit;
        let (was, is) = (past(before), past(*sent));
        (is > was).then_some(Over {
            sent: *sent,
            first: was == 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: Quota = Quota {
        bytes_per_window: 100,
        window_ms: 60_000,
    };

    #[test]
    fn an_install_past_its_quota_is_throttled_once_and_purged_at_each_further_quota() {
        let mut m = Meter::new(Q);
        assert_eq!(m.add("acme", "a", 60, Timestamp::from_ms(1_000)), None);
        assert_eq!(
            m.add("acme", "a", 60, Timestamp::from_ms(2_000)),
            Some(Over {
                sent: 120,
                first: true
            })
        );
        assert_eq!(m.add("acme", "a", 10, Timestamp::from_ms(3_000)), None);
        assert_eq!(
            m.add("acme", "a", 100, Timestamp::from_ms(4_000)),
            Some(Over {
                sent: 230,
                first: false
            })
        );
        // Another install of the same org has its own allowance.
        assert_eq!(m.add("acme", "b", 99, Timestamp::from_ms(5_000)), None);
    }

    #[test]
    fn a_new_window_starts_every_install_afresh() {
        let mut m = Meter::new(Q);
        assert_eq!(m.add("acme", "a", 99, Timestamp::from_ms(59_000)), None);
        assert_eq!(m.add("acme", "a", 99, Timestamp::from_ms(61_000)), None);
        assert!(m.add("acme", "a", 1, Timestamp::from_ms(61_500)).is_none());
        assert!(m.add("acme", "a", 1, Timestamp::from_ms(62_000)).is_some());
    }

    #[test]
    fn one_message_larger_than_the_quota_crosses_it() {
        let mut m = Meter::new(Q);
        let over = m.add("acme", "a", 1_000, Timestamp::from_ms(0)).unwrap();
        assert!(over.first && over.sent == 1_000);
    }
}

/// A token bucket: up to `capacity` at once, one more every `refill_ms`. Certificate renewals
/// use one per install: a runner renews once per two thirds of its certificate's life, so a
/// bucket of 8 refilled every eighth of a life leaves room for several runners of one install
/// and for retries, and an install asking thousands of times gets eight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    tokens: f64,
    at_ms: u64,
}

impl TokenBucket {
    /// A full bucket at `now_ms`.
    pub fn full(capacity: u32, now_ms: u64) -> TokenBucket {
        TokenBucket {
            tokens: f64::from(capacity),
            at_ms: now_ms,
        }
    }

    /// Takes one token at `now_ms` if there is one; whether it could.
    pub fn take(&mut self, now_ms: u64, capacity: u32, refill_ms: u64) -> bool {
        let elapsed = now_ms.saturating_sub(self.at_ms) as f64;
        self.tokens = (self.tokens + elapsed / refill_ms.max(1) as f64).min(f64::from(capacity));
        self.at_ms = self.at_ms.max(now_ms);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod bucket_tests {
    use super::*;

    #[test]
    fn a_bucket_gives_its_capacity_at_once_then_one_per_refill() {
        let mut b = TokenBucket::full(3, 0);
        assert!((0..3).all(|_| b.take(0, 3, 1000)));
        assert!(!b.take(10, 3, 1000));
        assert!(!b.take(999, 3, 1000));
        assert!(b.take(1000, 3, 1000));
        assert!(!b.take(1000, 3, 1000));
        // Idle for long, it holds no more than its capacity.
        assert_eq!((0..10).filter(|_| b.take(100_000, 3, 1000)).count(), 3);
    }
}
