//! Recently read immutable bytes, kept for a while in a bounded budget.
//!
//! Why: every read of the hub's object store is an ordered consumer that the server keeps for
//! 30 s after the read ends (async-nats's ordered consumers' inactivity threshold), and a stream
//! holds a limited number of consumers. Reads of the same content-addressed object by many
//! installs at once (a package checked at each install's creation, an artifact synced by a
//! wave) reached that limit at 100 installs (`loadtest release`). Only what a name can never
//! change is kept: objects named by their content's digest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a read stays at hand.
pub const RECENT_FOR: Duration = Duration::from_secs(60);
/// At most this much is kept; an item over a quarter of it is never kept.
pub const RECENT_BYTES: usize = 64 * 1024 * 1024;

#[derive(Clone, Default)]
pub struct Recent(Arc<Mutex<Items>>);

#[derive(Default)]
pub struct Items {
    items: HashMap<String, (Instant, Arc<Vec<u8>>)>,
    bytes: usize,
}

impl Recent {
    /// The bytes kept under `key`, if they were read within [`RECENT_FOR`].
    pub fn get(&self, key: &str) -> Option<Arc<Vec<u8>>> {
        let r = self.0.lock().ok()?;
        r.items
            .get(key)
            .filter(|(at, _)| at.elapsed() < RECENT_FOR)
            .map(|(_, b)| b.clone())
    }

    /// Keeps `bytes` under `key`: expired items go first, then the oldest, until they fit.
    pub fn put(&self, key: String, bytes: Arc<Vec<u8>>) {
        if bytes.len() > RECENT_BYTES / 4 {
            return;
        }
        let Ok(mut r) = self.0.lock() else { return };
        let mut by_age: Vec<(Instant, String)> = r
            .items
            .iter()
            .map(|(k, (at, _))| (*at, k.clone()))
            .collect();
        by_age.sort();
        for (at, k) in by_age {
            if at.elapsed() < RECENT_FOR && r.bytes + bytes.len() <= RECENT_BYTES {
                break;
            }
            if let Some((_, old)) = r.items.remove(&k) {
                r.bytes -= old.len();
            }
        }
        r.bytes += bytes.len();
        if let Some((_, old)) = r.items.insert(key, (Instant::now(), bytes)) {
            r.bytes -= old.len();
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.0.lock().map_or(0, |r| r.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_reads_are_kept_within_their_budget_oldest_out_first() {
        let recent = Recent::default();
        let blob = |n: usize| Arc::new(vec![7u8; n]);
        let quarter = RECENT_BYTES / 4;
        for k in ["o/a", "o/b", "o/c", "o/d"] {
            recent.put(k.into(), blob(quarter));
        }
        assert!(recent.get("o/a").is_some());
        // A fifth does not fit: the oldest goes.
        recent.put("o/e".into(), blob(quarter));
        assert!(recent.get("o/a").is_none());
        assert!(recent.get("o/e").is_some());
        assert!(recent.bytes() <= RECENT_BYTES);
        // Too large to keep at all.
        recent.put("o/huge".into(), blob(quarter + 1));
        assert!(recent.get("o/huge").is_none());
        assert!(recent.get("p/e").is_none());
    }
}
