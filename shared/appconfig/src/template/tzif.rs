//! Time zones as Go's `time.LoadLocation` loads them on Linux: the IANA database's TZif files
//! under `/usr/share/zoneinfo` (or `$ZONEINFO`), their transitions, and the POSIX TZ rule at
//! their end for times past the last transition.
//!
//! Written here because the crates that do this (chrono-tz, jiff) embed or wrap their own
//! database and a date library Ferry does not otherwise need; what sprig's `dateInZone` needs
//! is one lookup: the offset and abbreviation in effect at an instant. Loaded zones are kept
//! for the life of the process, so a template reads each file at most once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// One kind of local time: offset east of UTC, whether it is daylight time, its abbreviation.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalType {
    pub offset: i32,
    pub dst: bool,
    pub abbr: String,
}

/// A loaded zone.
#[derive(Debug, PartialEq)]
pub struct Zone {
    pub name: String,
    types: Vec<LocalType>,
    /// Instants (Unix seconds) at which a type starts, in order.
    transitions: Vec<(i64, usize)>,
    rule: Option<Rule>,
}

impl Zone {
    /// The local time type at `secs`.
    pub fn lookup(&self, secs: i64) -> LocalType {
        let first = || {
            self.types
                .iter()
                .find(|t| !t.dst)
                .or(self.types.first())
                .cloned()
                .unwrap_or(LocalType {
                    offset: 0,
                    dst: false,
                    abbr: "UTC".into(),
                })
        };
        let after = self.transitions.partition_point(|(at, _)| *at <= secs);
        if after == 0 {
            return first();
        }
        if after == self.transitions.len()
            && let Some(rule) = &self.rule
        {
            return rule.lookup(secs);
        }
        let (_, t) = self.transitions[after - 1];
        self.types.get(t).cloned().unwrap_or_else(first)
    }
}

/// The zone named `name`, as Go's `LoadLocation` finds it; `None` when Go would fail
/// (`unknown time zone`, or a name that climbs out of the database).
pub fn load(name: &str) -> Option<Arc<Zone>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Arc<Zone>>>>> = OnceLock::new();
    if name.is_empty()
        || name.starts_with('/')
        || name.starts_with('\\')
        || name.split('/').any(|p| p == "..")
    {
        return None;
    }
    let cache = CACHE.get_or_init(Default::default);
    if let Ok(zones) = cache.lock()
        && let Some(z) = zones.get(name)
    {
        return z.clone();
    }
    let dir = std::env::var("ZONEINFO").unwrap_or_else(|_| "/usr/share/zoneinfo".into());
    let zone = std::fs::read(std::path::Path::new(&dir).join(name))
        .ok()
        .and_then(|bytes| parse(name, &bytes))
        .map(Arc::new);
    if let Ok(mut zones) = cache.lock() {
        zones.insert(name.to_string(), zone.clone());
    }
    zone
}

/// A TZif file (RFC 8536), version 1's 32-bit data or, when present, version 2's 64-bit data
/// and footer.
fn parse(name: &str, data: &[u8]) -> Option<Zone> {
    let header = |at: usize| -> Option<[usize; 6]> {
        if data.get(at..at + 4)? != b"TZif" {
            return None;
        }
        let mut counts = [0usize; 6];
        for (i, c) in counts.iter_mut().enumerate() {
            let b = data.get(at + 20 + i * 4..at + 24 + i * 4)?;
            *c = u32::from_be_bytes(b.try_into().ok()?) as usize;
        }
        Some(counts)
    };
    let counts = header(0)?;
    let block = |c: [usize; 6], time: usize| {
        let [isut, isstd, leap, timecnt, typecnt, charcnt] = c;
        timecnt * time + timecnt + typecnt * 6 + charcnt + leap * (time + 4) + isstd + isut
    };
    let version = *data.get(4)?;
    let (start, counts, time) = if version >= b'2' {
        let second = 44 + block(counts, 4);
        (second + 44, header(second)?, 8)
    } else {
        (44, counts, 4)
    };
    let [_, _, _, timecnt, typecnt, charcnt] = counts;
    let mut at = start;
    let mut times = Vec::with_capacity(timecnt);
    for _ in 0..timecnt {
        let b = data.get(at..at + time)?;
        times.push(if time == 8 {
            i64::from_be_bytes(b.try_into().ok()?)
        } else {
            i32::from_be_bytes(b.try_into().ok()?) as i64
        });
        at += time;
    }
    let indices = data.get(at..at + timecnt)?;
    at += timecnt;
    let infos = data.get(at..at + typecnt * 6)?;
    at += typecnt * 6;
    let chars = data.get(at..at + charcnt)?;
    let types = infos
        .chunks(6)
        .map(|t| {
            let abbr = chars.get(t[5] as usize..).unwrap_or_default();
            let end = abbr.iter().position(|c| *c == 0).unwrap_or(abbr.len());
            LocalType {
                offset: i32::from_be_bytes([t[0], t[1], t[2], t[3]]),
                dst: t[4] != 0,
                abbr: String::from_utf8_lossy(&abbr[..end]).into_owned(),
            }
        })
        .collect();
    let transitions = times
        .into_iter()
        .zip(indices.iter().map(|i| *i as usize))
        .collect();
    let rule = (version >= b'2')
        .then(|| {
            let rest = data.get(start + block(counts, 8)..)?;
            let text = std::str::from_utf8(rest).ok()?.trim_matches('\n');
            Rule::parse(text)
        })
        .flatten();
    Some(Zone {
        name: name.to_string(),
        types,
        transitions,
        rule,
    })
}

/// A POSIX TZ string (`EST5EDT,M3.2.0,M11.1.0`): standard time and, optionally, daylight time
/// between two yearly dates given as "the Nth weekday of a month" (the form the database uses).
#[derive(Debug, PartialEq)]
struct Rule {
    std: LocalType,
    dst: Option<(LocalType, Transition, Transition)>,
}

/// `Mm.w.d/time`: weekday `d` (0 Sunday) of week `w` (5: the last) of month `m`, at `time`
/// seconds of local time.
#[derive(Debug, PartialEq)]
struct Transition {
    month: u8,
    week: u8,
    weekday: u8,
    time: i64,
}

impl Rule {
    fn parse(s: &str) -> Option<Rule> {
        let (std_name, s) = tz_name(s)?;
        let (std_off, s) = tz_offset(s)?;
        let std = LocalType {
            offset: -std_off as i32,
            dst: false,
            abbr: std_name,
        };
        if s.is_empty() {
            return Some(Rule { std, dst: None });
        }
        let (dst_name, s) = tz_name(s)?;
        let (dst_off, s) = match s.strip_prefix(',') {
            Some(_) => (std_off - 3600, s),
            None => tz_offset(s)?,
        };
        let mut rules = s.strip_prefix(',')?.split(',');
        let start = Transition::parse(rules.next()?)?;
        let end = Transition::parse(rules.next()?)?;
        let dst = LocalType {
            offset: -dst_off as i32,
            dst: true,
            abbr: dst_name,
        };
        Some(Rule {
            std,
            dst: Some((dst, start, end)),
        })
    }

    fn lookup(&self, secs: i64) -> LocalType {
        let Some((dst, start, end)) = &self.dst else {
            return self.std.clone();
        };
        let year = time::OffsetDateTime::from_unix_timestamp(secs)
            .map(|t| t.year())
            .unwrap_or(1970);
        let (Some(from), Some(to)) = (start.at(year, self.std.offset), end.at(year, dst.offset))
        else {
            return self.std.clone();
        };
        let in_dst = if from < to {
            secs >= from && secs < to
        } else {
            // Southern hemisphere: daylight time spans the new year.
            secs < to || secs >= from
        };
        if in_dst {
            dst.clone()
        } else {
            self.std.clone()
        }
    }
}

impl Transition {
    fn parse(s: &str) -> Option<Transition> {
        let (date, time) = match s.split_once('/') {
            Some((d, t)) => (d, tz_offset(t).map(|(t, _)| t)?),
            None => (s, 7200),
        };
        let mut parts = date.strip_prefix('M')?.split('.');
        let mut next = || parts.next()?.parse::<u8>().ok();
        Some(Transition {
            month: next()?,
            week: next()?,
            weekday: next()?,
            time,
        })
    }

    /// The instant (Unix seconds) of this transition in `year`, in a local time `offset`
    /// seconds east of UTC.
    fn at(&self, year: i32, offset: i32) -> Option<i64> {
        let month = time::Month::try_from(self.month).ok()?;
        let first = time::Date::from_calendar_date(year, month, 1).ok()?;
        let dow = first.weekday().number_days_from_sunday();
        let mut day = (self.weekday + 7 - dow) % 7 + 1;
        let days = month.length(year);
        for _ in 1..self.week {
            if day + 7 > days {
                break;
            }
            day += 7;
        }
        let date = time::Date::from_calendar_date(year, month, day).ok()?;
        let midnight = date.midnight().assume_utc().unix_timestamp();
        Some(midnight + self.time - offset as i64)
    }
}

/// A zone abbreviation: letters, or anything between `<` and `>`.
fn tz_name(s: &str) -> Option<(String, &str)> {
    if let Some(rest) = s.strip_prefix('<') {
        let end = rest.find('>')?;
        return Some((rest[..end].to_string(), &rest[end + 1..]));
    }
    let end = s
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(s.len());
    (end >= 3).then(|| (s[..end].to_string(), &s[end..]))
}

/// `[+-]hh[:mm[:ss]]` in seconds (a POSIX offset is west of UTC: `EST5` is UTC-5).
fn tz_offset(s: &str) -> Option<(i64, &str)> {
    let (sign, s) = match s.as_bytes().first()? {
        b'-' => (-1, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(s.len());
    let mut secs = 0;
    for (i, part) in s[..end].split(':').enumerate().take(3) {
        let n: i64 = part.parse().ok()?;
        secs += n * [3600, 60, 1][i];
    }
    Some((sign * secs, &s[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_rules_give_daylight_time() {
        let rule = Rule::parse("EST5EDT,M3.2.0,M11.1.0").unwrap();
        // 2040-07-01 12:00 UTC is summer in New York; 2040-01-01 winter.
        assert_eq!(rule.lookup(2_224_929_600).abbr, "EDT");
        assert_eq!(rule.lookup(2_209_032_000).offset, -5 * 3600);
        let south = Rule::parse("<-03>3").unwrap();
        assert_eq!(south.lookup(0).abbr, "-03");
    }

    #[test]
    fn zones_load_from_the_database_or_not_at_all() {
        assert!(load("../etc/passwd").is_none());
        assert!(load("No/Such_Zone").is_none());
        if let Some(ny) = load("America/New_York") {
            // 2026-07-01 and 2026-01-01, noon UTC.
            assert_eq!(ny.lookup(1_782_907_200).abbr, "EDT");
            assert_eq!(ny.lookup(1_767_268_800).offset, -5 * 3600);
        }
    }
}
