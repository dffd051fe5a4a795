//! Time as a value: a [`Timestamp`] is a moment in ms since the Unix epoch (UTC). Every function
//! of the model that stamps or compares a time is given one (the model never reads the clock:
//! services pass `Timestamp::now()` in, tests pass fixed ones). Records keep their times as
//! RFC 3339 text with milliseconds — what the API shows and an operator reads with `nats kv get`
//! — so text is the edge: [`Timestamp::rfc3339`] (also `Display`) writes it, [`Timestamp::parse`]
//! reads it back.

use std::fmt;
use std::time::{Duration, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    pub const fn from_ms(ms: u64) -> Timestamp {
        Timestamp(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn ms(self) -> u64 {
        self.0
    }

    /// RFC 3339 with milliseconds, UTC: how records keep times.
    pub fn rfc3339(self) -> String {
        humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(self.0)).to_string()
    }

    /// A time as records keep it (RFC 3339); `None` for text that is not one.
    pub fn parse(text: &str) -> Option<Timestamp> {
        let t = humantime::parse_rfc3339(text).ok()?;
        let d = t.duration_since(UNIX_EPOCH).ok()?;
        Some(Timestamp(d.as_millis() as u64))
    }

    /// `ms` later.
    pub const fn plus_ms(self, ms: u64) -> Timestamp {
        Timestamp(self.0.saturating_add(ms))
    }

    /// How long after `earlier` this is (nothing if it is not after).
    pub const fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

impl From<Timestamp> for String {
    fn from(t: Timestamp) -> String {
        t.rfc3339()
    }
}

/// A fixed time for tests, from RFC 3339 text.
#[cfg(test)]
pub(crate) fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap_or_else(|| panic!("not RFC 3339: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_is_kept_as_rfc3339_with_milliseconds_and_read_back() {
        let t = Timestamp::from_ms(1_795_000_000_123);
        assert_eq!(t.rfc3339(), "2026-11-18T11:06:40.123Z");
        assert_eq!(t.to_string(), t.rfc3339());
        assert_eq!(Timestamp::parse(&t.rfc3339()), Some(t));
        assert_eq!(Timestamp::parse("yesterday"), None);
    }

    #[test]
    fn durations_between_timestamps_never_go_negative() {
        let t = Timestamp::from_ms(10_000);
        assert_eq!(t.plus_ms(5_000).since(t), Duration::from_secs(5));
        assert_eq!(t.since(t.plus_ms(5_000)), Duration::ZERO);
        assert_eq!(Timestamp::from_ms(u64::MAX).plus_ms(1).ms(), u64::MAX);
    }
}
