//! Records this process wrote last, to start its next change of one from them instead of a read.
//!
//! The scheduler changes one workflow ten times or so in a deploy, and its install half as often,
//! each time a read then a compare-and-swap. Most of those reads return what the scheduler itself
//! wrote a moment before. Kept here, the copy saves the read and its JSON; the compare-and-swap
//! still names the revision the copy was written at, so a copy someone else has since changed (the
//! API, another scheduler replica) costs one lost compare-and-swap and a fresh read, never a lost
//! change. Only a write the store took is trusted: a change that a copy finds already made, or
//! refuses, is decided again on a fresh read ([`Repo::modify_written`]), since the copy may be the
//! reason.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::StoreError;
use crate::repo::{Record, Repo, Versioned, key};

/// The last copy written of each record, by key; bounded (past `max` it starts over: a copy is
/// only ever a read saved).
pub struct LastWritten<T> {
    map: Mutex<HashMap<String, (Versioned<T>, Instant)>>,
    max: usize,
}

impl<T: Clone> LastWritten<T> {
    pub fn new(max: usize) -> LastWritten<T> {
        LastWritten {
            map: Mutex::new(HashMap::new()),
            max,
        }
    }

    /// The copy last written of `org`/`id`, if kept.
    pub fn get(&self, org: &str, id: &str) -> Option<Versioned<T>> {
        self.map
            .lock()
            .ok()?
            .get(&key(org, id))
            .map(|(v, _)| v.clone())
    }

    /// Whether this process wrote `org`/`id` within `d`: a record that moved that lately is
    /// being driven, and a safety net's pass may leave it to the next.
    pub fn written_within(&self, org: &str, id: &str, d: Duration) -> bool {
        self.map
            .lock()
            .ok()
            .and_then(|m| m.get(&key(org, id)).map(|(_, at)| at.elapsed() < d))
            .unwrap_or(false)
    }

    /// Keeps `v`, just written.
    pub fn put(&self, org: &str, id: &str, v: Versioned<T>) {
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= self.max {
                map.clear();
            }
            map.insert(key(org, id), (v, Instant::now()));
        }
    }

    /// Drops the copy of `org`/`id` (stale, or the record is done with).
    pub fn forget(&self, org: &str, id: &str) {
        if let Ok(mut map) = self.map.lock() {
            map.remove(&key(org, id));
        }
    }
}

impl<T: Record + Clone> Repo<T> {
    /// [`Repo::modify`] starting from the copy `written` holds, if any, and keeping what it
    /// writes there. When `f` leaves the copy as it is or refuses it, `f` runs again on a fresh
    /// read: the copy may be stale, and only a write the store took proves it was not.
    pub async fn modify_written<E>(
        &self,
        written: &LastWritten<T>,
        org: &str,
        id: &str,
        mut f: impl FnMut(&mut T) -> Result<bool, E>,
    ) -> Result<Result<T, E>, StoreError> {
        if let Some(copy) = written.get(org, id) {
            let at = copy.revision;
            match self.modify_from(Some(copy), org, id, &mut f).await {
                Ok(Ok(v)) if v.revision != at => {
                    written.put(org, id, v.clone());
                    return Ok(Ok(v.value));
                }
                Ok(_) => {}
                Err(e) => {
                    written.forget(org, id);
                    return Err(e);
                }
            }
        }
        match self.modify_from(None, org, id, f).await? {
            Ok(v) => {
                written.put(org, id, v.clone());
                Ok(Ok(v.value))
            }
            Err(e) => Ok(Err(e)),
        }
    }
}
