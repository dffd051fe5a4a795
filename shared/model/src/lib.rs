//! Ferry's domain types: the records of state kept in the hub's KV buckets and returned by the API.
//!
//! Records are stored as JSON, not postcard: they outlive any one build of Ferry, and JSON with serde
//! defaults lets a newer build read an older record (and an operator read one with `nats kv get`). The
//! compact binary codec is for the high-volume runner protocol only (see `ferry-protocol`).
//!
//! This crate imports no other workspace crate.

mod access;
pub mod api;
mod approvals;
mod audit;
mod builds;
pub mod events;
mod executions;
mod fleet;
mod hooks;
mod leases;
pub mod ops;
mod plans;
mod pregrants;
pub mod quotas;
mod reach;
mod records;
mod release_targets;
mod releases;
mod runners;
mod schedules;
mod scope;
mod stacks;
mod steps;
mod time;
mod timeouts;
mod timing;
mod tokens;
mod transitions;
mod workflow;

pub use access::*;
pub use approvals::{ApprovalsBy, Decided, MAX_REASON, Side, decided, denial};
pub use audit::SCHEDULER;
pub use executions::*;
pub use fleet::*;
pub use hooks::*;
pub use leases::*;
pub use plans::*;
pub use pregrants::*;
pub use reach::*;
pub use records::*;
pub use releases::*;
pub use runners::*;
pub use schedules::*;
pub use scope::*;
pub use stacks::{MAX_SECRETS, MAX_STACK_OUTPUTS, StackSeen};
pub use steps::*;
pub use time::Timestamp;
pub use timeouts::*;
pub use timing::{RunnerPoints, Span, Timing};
pub use tokens::*;
pub use transitions::*;
pub use workflow::*;

/// A new, time-sortable, subject-token-safe id (lowercase ULID).
pub fn new_id() -> String {
    ulid::Ulid::new().to_string().to_lowercase()
}

/// The id of something that happens once for `seed` at `ms` (a scheduled firing): a ULID of that
/// time whose random part is derived from `seed`, so whoever computes it gets the same id, and
/// creating the record twice is refused.
pub fn id_at(ms: u64, seed: &str) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(seed.as_bytes());
    let mut r = [0u8; 16];
    r.copy_from_slice(&h[..16]);
    ulid::Ulid::from_parts(ms, u128::from_be_bytes(r))
        .to_string()
        .to_lowercase()
}

impl Timestamp {
    /// Now, from the system clock. For the services: the model's own functions never read the
    /// clock, they are given the time (a test below holds them to it).
    pub fn now() -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        Timestamp::from_ms(ms)
    }
}

/// Now, as records keep it (RFC 3339 with milliseconds, UTC): `Timestamp::now()` as text.
pub fn now() -> String {
    Timestamp::now().rfc3339()
}

/// A time in ms since the epoch, as records keep it, like [`now`].
pub fn format_ms(ms: u64) -> String {
    Timestamp::from_ms(ms).rfc3339()
}

/// Now in µs since the epoch, for [`Timing`]'s points.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Now in ms since the epoch: `Timestamp::now().ms()`.
pub fn now_ms() -> u64 {
    Timestamp::now().ms()
}

/// The org `ferry-server init` (and `ferry dev`) makes the first admin token for unless told
/// otherwise, and a runner's org unless told otherwise. API requests act in their token's org.
pub const DEFAULT_ORG: &str = "default";

#[cfg(test)]
mod clock {
    /// The model is a function of records and the times it is given: no source of it but this
    /// file (whose `now`, `now_ms` and `now_us` are the services') reads the clock.
    #[test]
    fn the_model_reads_no_clock() {
        let needles = [
            ["crate::", "now()"].concat(),
            ["crate::", "now_ms()"].concat(),
            ["crate::", "now_us()"].concat(),
            ["SystemTime::", "now"].concat(),
        ];
        let mut dirs = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        let mut read = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.file_name().is_some_and(|n| n == "lib.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                read += 1;
                for n in &needles {
                    assert!(
                        !text.contains(n.as_str()),
                        "{} reads the clock ({n})",
                        path.display()
                    );
                }
            }
        }
        assert!(read > 10, "read {read} files");
    }
}
