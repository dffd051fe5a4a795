//! Many events about one record, applied in one write.
//!
//! A release's record names every install it goes over (for a thousand installs, about
//! 150 KB of JSON), and each of its workflows ending moved it with one read and one
//! compare-and-swap of the whole record: a wave of 900 deploys wrote it 900 times, copied each
//! time into `EVENTS`, and, with results handled at once, most writes lost their
//! compare-and-swap to another and were made again. Here the first event about a record makes
//! its handler the record's writer; events arriving meanwhile are queued under the record, and
//! the writer applies all that are waiting in each of its writes, until none is left. The
//! others' handlers return at once.
//!
//! Only this process's handlers coalesce: another replica's write is a compare-and-swap
//! conflict as before. What a writer could not apply (an error) stays queued for the next
//! event's handler, and the release sweep feeds every outcome back anyway: nothing queued here
//! is the only record of anything.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// Events waiting per record, and whether a handler is writing that record now.
pub(crate) struct Coalesce<K, V> {
    waiting: Mutex<HashMap<K, Waiting<V>>>,
}

struct Waiting<V> {
    events: Vec<V>,
    writing: bool,
}

impl<V> Waiting<V> {
    fn new() -> Self {
        Waiting {
            events: Vec::new(),
            writing: false,
        }
    }
}

impl<K, V> Default for Coalesce<K, V> {
    fn default() -> Self {
        Coalesce {
            waiting: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone, V> Coalesce<K, V> {
    /// Queues `event` under `key`. `true`: no handler writes `key` now, and the caller is its
    /// writer from here: it [`Coalesce::take`]s until that returns nothing.
    pub(crate) fn add(&self, key: &K, event: V) -> bool {
        let mut waiting = self.lock();
        let w = waiting.entry(key.clone()).or_insert_with(Waiting::new);
        w.events.push(event);
        !std::mem::replace(&mut w.writing, true)
    }

    /// For the writer of `key`: every event queued so far. Nothing means the writer's turn has
    /// ended (at once, under the lock: the next event makes its handler the writer).
    pub(crate) fn take(&self, key: &K) -> Vec<V> {
        let mut waiting = self.lock();
        let events = waiting
            .get_mut(key)
            .map(|w| std::mem::take(&mut w.events))
            .unwrap_or_default();
        if events.is_empty() {
            waiting.remove(key);
        }
        events
    }

    /// For the writer of `key` that failed: `events` (what it took and did not apply) go back
    /// in front, and the next event's handler becomes the writer.
    pub(crate) fn give_back(&self, key: &K, mut events: Vec<V>) {
        let mut waiting = self.lock();
        let w = waiting.entry(key.clone()).or_insert_with(Waiting::new);
        events.append(&mut w.events);
        w.events = events;
        w.writing = false;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Waiting<V>>> {
        // A handler that panicked holding the lock left the map whole (each change above
        // is a single step): go on with it.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_event_writes_and_the_others_wait_for_its_next_take() {
        let c = Coalesce::<&str, u32>::default();
        assert!(c.add(&"r", 1), "the first is the writer");
        assert!(!c.add(&"r", 2), "a writer is at work");
        assert!(c.add(&"other", 9), "another record has its own writer");
        assert_eq!(c.take(&"r"), vec![1, 2]);
        assert!(!c.add(&"r", 3), "still the first's turn");
        assert_eq!(c.take(&"r"), vec![3]);
        assert_eq!(c.take(&"r"), Vec::<u32>::new(), "the turn ends");
        assert!(c.add(&"r", 4), "the next event writes");
    }

    #[test]
    fn what_a_failed_writer_took_goes_back_to_the_next() {
        let c = Coalesce::<&str, u32>::default();
        assert!(c.add(&"r", 1));
        let taken = c.take(&"r");
        assert!(!c.add(&"r", 2));
        c.give_back(&"r", taken);
        assert!(c.add(&"r", 3), "the failed writer's turn is over");
        assert_eq!(c.take(&"r"), vec![1, 2, 3]);
    }
}
