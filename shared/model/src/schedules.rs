//! Cron schedules of actions, and when a scheduled action fires.
//!
//! One parser serves validation (`apps validate` says a schedule is wrong) and firing (the
//! scheduler evaluates it), so what validates is what fires. Schedules are five-field cron
//! expressions in UTC (through the `croner` crate), the `@hourly`-style macros, and Go's
//! `@every DURATION`.
//!
//! Firing is a pure function of a [`CronMark`] (when the action is due next) and the time: a
//! firing moves the mark past now, so the firings missed while no scheduler ran become one, not
//! one per missed tick; and two schedulers that both see a firing due race to move the mark by
//! compare-and-swap, so exactly one fires it.

use std::str::FromStr;

use crate::Timestamp;
use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

/// A parsed schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    Cron(Box<croner::Cron>),
    /// `@every 5m`: at every multiple of the period since the epoch.
    Every(u64),
}

/// Parses a schedule, or says what is wrong with it.
pub fn parse_schedule(text: &str) -> Result<Schedule, String> {
    let text = text.trim();
    if let Some(period) = text.strip_prefix("@every ") {
        let d = humantime::parse_duration(period.trim())
            .map_err(|e| format!("`@every {period}`: {e}"))?;
        let ms = d.as_millis() as u64;
        if ms < 1000 {
            return Err(format!("`@every {period}` is shorter than a second"));
        }
        return Ok(Schedule::Every(ms));
    }
    let expr = match text {
        "@annually" => "@yearly",
        "@midnight" => "@daily",
        "@yearly" | "@monthly" | "@weekly" | "@daily" | "@hourly" => text,
        m if m.starts_with('@') => return Err(format!("unknown macro `{m}`")),
        _ => {
            let fields = text.split_whitespace().count();
            if fields != 5 {
                return Err(format!(
                    "expected 5 fields (minute hour day month weekday), found {fields}"
                ));
            }
            text
        }
    };
    croner::Cron::from_str(expr)
        .map(|c| Schedule::Cron(Box::new(c)))
        .map_err(|e| e.to_string())
}

impl Schedule {
    /// The first firing strictly after `ms` (ms since the epoch, UTC).
    pub fn next_after(&self, ms: u64) -> Option<u64> {
        match self {
            Schedule::Every(period) => Some((ms / period + 1) * period),
            Schedule::Cron(c) => {
                let t: DateTime<Utc> = Utc.timestamp_millis_opt(ms as i64).single()?;
                let next = c.find_next_occurrence(&t, false).ok()?;
                u64::try_from(next.timestamp_millis()).ok()
            }
        }
    }
}

/// When a scheduled action of an install fires next. One record per (install, action).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CronMark {
    /// `<install>.<action>` (see [`CronMark::id_of`]).
    pub id: String,
    pub org: String,
    pub install: String,
    /// The action it runs (empty for a drift check).
    pub action: String,
    /// A drift check of this component (its `drift_schedule`), rather than an action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_of: Option<String>,
    /// The schedule it was computed from: a changed schedule starts afresh.
    pub schedule: String,
    /// The next firing, ms since the epoch.
    pub next_ms: u64,
    /// The last firing and the workflow it started.
    #[serde(default)]
    pub last_fired_ms: Option<u64>,
    #[serde(default)]
    pub last_workflow: Option<String>,
}

/// What to do about a scheduled action now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronDecision {
    /// Nothing is due.
    Wait,
    /// No mark yet, or its schedule changed: the first firing is the next one after now (an
    /// action does not fire for a time before it was scheduled).
    Start { next_ms: u64 },
    /// Fire once for `tick_ms` (the earliest missed one), then wait for `next_ms`.
    Fire { tick_ms: u64, next_ms: u64 },
}

impl CronMark {
    /// Its key: the install, then the action's name (which may hold `_`, as KV keys may).
    pub fn id_of(install: &str, action: &str) -> String {
        format!("{install}.{action}")
    }

    /// The key of a component's drift checks (`=` is in no action's name).
    pub fn drift_id_of(install: &str, component: &str) -> String {
        format!("{install}.drift={component}")
    }

    /// The decision for `schedule` (as written, and parsed) at `now.ms()`.
    pub fn decide(
        mark: Option<&CronMark>,
        written: &str,
        schedule: &Schedule,
        now: Timestamp,
    ) -> Option<CronDecision> {
        match mark {
            Some(m) if m.schedule == written => {
                if m.next_ms > now.ms() {
                    return Some(CronDecision::Wait);
                }
                let next_ms = schedule.next_after(now.ms())?;
                Some(CronDecision::Fire {
                    tick_ms: m.next_ms,
                    next_ms,
                })
            }
            _ => schedule
                .next_after(now.ms())
                .map(|next_ms| CronDecision::Start { next_ms }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn mark(next_ms: u64) -> CronMark {
        CronMark {
            id: "i.a".into(),
            org: "o".into(),
            install: "i".into(),
            action: "a".into(),
            drift_of: None,
            schedule: "* * * * *".into(),
            next_ms,
            last_fired_ms: None,
            last_workflow: None,
        }
    }

    #[test]
    fn five_field_schedules_and_macros_parse_and_others_are_refused_with_the_reason() {
        for ok in [
            "*/5 * * * *",
            "0 2 * * MON-FRI",
            "@daily",
            "@midnight",
            "@every 90s",
        ] {
            assert!(parse_schedule(ok).is_ok(), "{ok}");
        }
        let err = parse_schedule("* * * *").unwrap_err();
        assert!(err.contains("expected 5 fields"), "{err}");
        assert!(parse_schedule("61 * * * *").is_err());
        assert!(
            parse_schedule("@sometimes")
                .unwrap_err()
                .contains("unknown macro")
        );
    }

    #[test]
    fn firings_follow_the_schedule_in_utc() {
        let s = parse_schedule("*/5 * * * *").unwrap();
        // 2026-01-01T00:03:00Z → 00:05.
        let t = 1_767_225_780_000;
        assert_eq!(s.next_after(t), Some(t + 2 * MIN));
        let every = parse_schedule("@every 2m").unwrap();
        assert_eq!(every.next_after(t), Some(t + MIN));
    }

    #[test]
    fn a_new_schedule_starts_with_the_next_tick_not_a_past_one() {
        let s = parse_schedule("* * * * *").unwrap();
        let now = 10 * MIN + 30_000;
        assert_eq!(
            CronMark::decide(None, "* * * * *", &s, Timestamp::from_ms(now)),
            Some(CronDecision::Start { next_ms: 11 * MIN })
        );
        let changed = CronMark {
            schedule: "*/5 * * * *".into(),
            ..mark(0)
        };
        assert!(matches!(
            CronMark::decide(Some(&changed), "* * * * *", &s, Timestamp::from_ms(now)),
            Some(CronDecision::Start { .. })
        ));
    }

    #[test]
    fn missed_ticks_fire_once_and_the_next_firing_is_after_now() {
        let s = parse_schedule("* * * * *").unwrap();
        let m = mark(10 * MIN);
        assert_eq!(
            CronMark::decide(Some(&m), "* * * * *", &s, Timestamp::from_ms(10 * MIN - 1)),
            Some(CronDecision::Wait)
        );
        // An outage from 10:00 to 15:30: one firing, for the first missed tick.
        assert_eq!(
            CronMark::decide(
                Some(&m),
                "* * * * *",
                &s,
                Timestamp::from_ms(15 * MIN + 30_000)
            ),
            Some(CronDecision::Fire {
                tick_ms: 10 * MIN,
                next_ms: 16 * MIN
            })
        );
    }
}
