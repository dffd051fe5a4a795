//! Records that can no longer change, kept after their first read ([`Record::settled`]).
//!
//! A release asks for the same few succeeded builds over and over: every install's build, sync,
//! plan and apply steps read their build, and the build service checks each install's artifact
//! reads against them. That was eleven gets per install deployed (`loadtest release`), every one
//! answering what was already known. A record that says of itself that it is settled is read
//! from the hub once per process; anything else is read every time.
//!
//! Kept as its bytes and revision, decoded at each read (a small record's JSON costs far less
//! than a request to the hub); bounded, and started over when full: an entry is only ever a read
//! saved.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// At most this many records are kept (a build record is about 400 bytes).
const SETTLED_MAX: usize = 10_000;

#[derive(Clone, Default)]
pub(crate) struct Settled(Arc<Mutex<HashMap<String, (Bytes, u64)>>>);

impl Settled {
    /// The bytes and revision of `bucket`'s `key`, if it was read settled.
    pub(crate) fn get(&self, bucket: &str, key: &str) -> Option<(Bytes, u64)> {
        self.0.lock().ok()?.get(&entry(bucket, key)).cloned()
    }

    pub(crate) fn put(&self, bucket: &str, key: &str, bytes: Bytes, revision: u64) {
        let Ok(mut kept) = self.0.lock() else { return };
        if kept.len() >= SETTLED_MAX {
            kept.clear();
        }
        kept.insert(entry(bucket, key), (bytes, revision));
    }

    /// A record deleted through this process is not served from here again.
    pub(crate) fn forget(&self, bucket: &str, key: &str) {
        if let Ok(mut kept) = self.0.lock() {
            kept.remove(&entry(bucket, key));
        }
    }
}

fn entry(bucket: &str, key: &str) -> String {
    format!("{bucket}/{key}")
}
