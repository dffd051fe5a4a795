//! Go's `time.Time` and `time.Duration` as sprig's date functions hand them to templates: a
//! time prints as Go prints it (`2026-11-27 10:00:00 +0000 UTC`, with ` m=+0.000012345` when it
//! came from `now`), formats and parses with Go's reference layout (`2006-01-02 15:04:05`), and
//! moves through zones loaded as Go loads them (`tzif.rs`).
//!
//! Go's `Local` is the renderer's own zone; Ferry takes it to be UTC, which is what Nuon's
//! control plane runs in, so a config renders the same wherever Ferry runs.
//!
//! The layout language is Go's alone (no Rust crate reads `Jan _2 15:04`), so `format` and
//! `parse` here follow `time.Format` and `time.Parse` chunk by chunk.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::tzif::{self, Zone};

/// Where a time's wall clock is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Loc {
    Utc,
    /// A fixed offset (east of UTC) with the name it prints (empty: the offset prints).
    Fixed(String, i32),
    Zone(Arc<Zone>),
}

impl Loc {
    /// Go's `LoadLocation` (`""` and `UTC` are UTC, `Local` is taken to be UTC); `None` for a
    /// zone Go would not find either.
    pub fn load(name: &str) -> Option<Loc> {
        match name {
            "" | "UTC" | "Local" => Some(Loc::Utc),
            name => tzif::load(name).map(Loc::Zone),
        }
    }

    /// The offset (seconds east of UTC) and abbreviation in effect at `secs`.
    fn at(&self, secs: i64) -> (i32, String) {
        match self {
            Loc::Utc => (0, "UTC".into()),
            Loc::Fixed(name, offset) => (*offset, name.clone()),
            Loc::Zone(z) => {
                let t = z.lookup(secs);
                (t.offset, t.abbr)
            }
        }
    }
}

/// A Go `time.Time`.
#[derive(Debug, Clone, PartialEq)]
pub struct GoTime {
    /// Unix seconds and nanoseconds.
    pub secs: i64,
    pub nanos: u32,
    pub loc: Loc,
    /// The monotonic clock reading `now` carries (nanoseconds since the process started).
    pub mono: Option<i64>,
}

/// Civil fields of a time in its zone.
pub struct Civil {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub yday: u16,
    pub weekday: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub nanos: u32,
    pub offset: i32,
    pub abbr: String,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

impl GoTime {
    /// Go's `time.Now()`, with its monotonic reading.
    pub fn now() -> GoTime {
        static START: OnceLock<Instant> = OnceLock::new();
        let start = *START.get_or_init(Instant::now);
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        GoTime {
            secs: wall.as_secs() as i64,
            nanos: wall.subsec_nanos(),
            loc: Loc::Utc,
            mono: Some(start.elapsed().as_nanos() as i64 + 1),
        }
    }

    /// Go's `time.Unix(secs, 0)` in `Local`.
    pub fn unix(secs: i64) -> GoTime {
        GoTime {
            secs,
            nanos: 0,
            loc: Loc::Utc,
            mono: None,
        }
    }

    /// Go's zero `time.Time`: January 1, year 1, UTC.
    pub fn zero() -> GoTime {
        GoTime::unix(-62_135_596_800)
    }

    /// Go's `t.In(loc)`: the same instant on another clock (the monotonic reading dropped).
    pub fn in_loc(&self, loc: Loc) -> GoTime {
        GoTime {
            loc,
            mono: None,
            ..self.clone()
        }
    }

    /// Go's `t.Add(d)`.
    pub fn add(&self, nanos: i128) -> GoTime {
        let total = self.secs as i128 * 1_000_000_000 + self.nanos as i128 + nanos;
        GoTime {
            secs: total.div_euclid(1_000_000_000) as i64,
            nanos: total.rem_euclid(1_000_000_000) as u32,
            loc: self.loc.clone(),
            mono: self.mono.map(|m| m.saturating_add(nanos as i64)),
        }
    }

    /// Nanoseconds from `self` to `other`.
    pub fn until(&self, other: &GoTime) -> i128 {
        let a = self.secs as i128 * 1_000_000_000 + self.nanos as i128;
        let b = other.secs as i128 * 1_000_000_000 + other.nanos as i128;
        b - a
    }

    pub fn civil(&self) -> Civil {
        let (offset, abbr) = self.loc.at(self.secs);
        let local = self.secs + offset as i64;
        let days = local.div_euclid(86_400);
        let secs_of_day = local.rem_euclid(86_400);
        let date =
            time::Date::from_julian_day((days + 2_440_588) as i32).unwrap_or(time::Date::MIN);
        Civil {
            year: date.year(),
            month: u8::from(date.month()),
            day: date.day(),
            yday: date.ordinal(),
            weekday: date.weekday().number_days_from_sunday(),
            hour: (secs_of_day / 3600) as u8,
            minute: (secs_of_day / 60 % 60) as u8,
            second: (secs_of_day % 60) as u8,
            nanos: self.nanos,
            offset,
            abbr,
        }
    }

    /// Go's `t.String()`.
    pub fn go_string(&self) -> String {
        let mut s = self.format("2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            let sign = if m < 0 { '-' } else { '+' };
            let m = m.unsigned_abs();
            s.push_str(&format!(
                " m={sign}{}.{:09}",
                m / 1_000_000_000,
                m % 1_000_000_000
            ));
        }
        s
    }

    /// Go's `t.GoString()` (`%#v`).
    pub fn go_syntax(&self) -> String {
        let c = self.civil();
        let loc = match &self.loc {
            Loc::Utc => "time.UTC".to_string(),
            Loc::Fixed(name, _) => format!("time.Location({name:?})"),
            Loc::Zone(z) => format!("time.Location({:?})", z.name),
        };
        format!(
            "time.Date({}, time.{}, {}, {}, {}, {}, {}, {loc})",
            c.year,
            MONTHS[(c.month - 1) as usize],
            c.day,
            c.hour,
            c.minute,
            c.second,
            c.nanos
        )
    }

    /// Go's `t.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        let c = self.civil();
        let mut out = String::new();
        let mut rest = layout;
        while !rest.is_empty() {
            let (prefix, std, suffix) = next_chunk(rest);
            out.push_str(prefix);
            if let Some(std) = std {
                write_std(&mut out, std, &c);
            }
            rest = suffix;
        }
        out
    }

    /// Go's `t.Method()` for the methods templates call without arguments.
    pub fn method(&self, name: &str) -> Option<MethodResult> {
        let c = self.civil();
        Some(match name {
            "Unix" => MethodResult::Int(self.secs),
            "UnixMilli" => MethodResult::Int(self.secs * 1000 + (self.nanos / 1_000_000) as i64),
            "UnixNano" => MethodResult::Int(self.secs * 1_000_000_000 + self.nanos as i64),
            "Year" => MethodResult::Int(c.year as i64),
            "YearDay" => MethodResult::Int(c.yday as i64),
            "Day" => MethodResult::Int(c.day as i64),
            "Hour" => MethodResult::Int(c.hour as i64),
            "Minute" => MethodResult::Int(c.minute as i64),
            "Second" => MethodResult::Int(c.second as i64),
            "Nanosecond" => MethodResult::Int(c.nanos as i64),
            "Month" => MethodResult::Str(MONTHS[(c.month - 1) as usize].into()),
            "Weekday" => MethodResult::Str(DAYS[c.weekday as usize].into()),
            "IsZero" => MethodResult::Bool(self.secs == GoTime::zero().secs && self.nanos == 0),
            "String" => MethodResult::Str(self.go_string()),
            "UTC" | "Local" => MethodResult::Time(self.in_loc(Loc::Utc)),
            _ => return None,
        })
    }
}

/// What a time's method returns.
pub enum MethodResult {
    Int(i64),
    Str(String),
    Bool(bool),
    Time(GoTime),
}

/// One element of Go's layout language.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm(bool),
    Tz,
    /// `Z07:00`-style (`Z` for UTC) when true, `-07:00`-style otherwise: hours, minutes,
    /// seconds shown and whether with colons.
    Offset {
        z: bool,
        minutes: bool,
        seconds: bool,
        colons: bool,
    },
    /// `.000` (true: exactly that many digits) or `.999` (trailing zeros dropped), with its
    /// separator.
    Frac(u8, bool, char),
}

/// Go's `nextStdChunk`: the literal text before the first layout element, the element, and
/// what follows it.
fn next_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let b = layout.as_bytes();
    let has = |i: usize, s: &str| layout[i..].starts_with(s);
    for i in 0..b.len() {
        let found: Option<(Std, usize)> = match b[i] {
            b'J' if has(i, "January") => Some((Std::LongMonth, 7)),
            b'J' if has(i, "Jan") => Some((Std::Month, 3)),
            b'M' if has(i, "Monday") => Some((Std::LongWeekDay, 6)),
            b'M' if has(i, "Mon") => Some((Std::WeekDay, 3)),
            b'M' if has(i, "MST") => Some((Std::Tz, 3)),
            b'0' if has(i, "002") => Some((Std::ZeroYearDay, 3)),
            b'0' => match b.get(i + 1) {
                Some(b'1') => Some((Std::ZeroMonth, 2)),
                Some(b'2') => Some((Std::ZeroDay, 2)),
                Some(b'3') => Some((Std::ZeroHour12, 2)),
                Some(b'4') => Some((Std::ZeroMinute, 2)),
                Some(b'5') => Some((Std::ZeroSecond, 2)),
                Some(b'6') => Some((Std::Year, 2)),
                _ => None,
            },
            b'1' if has(i, "15") => Some((Std::Hour, 2)),
            b'1' => Some((Std::NumMonth, 1)),
            b'2' if has(i, "2006") => Some((Std::LongYear, 4)),
            b'2' => Some((Std::Day, 1)),
            b'_' if has(i, "_2") && !has(i, "_2006") => Some((Std::UnderDay, 2)),
            b'_' if has(i, "__2") => Some((Std::UnderYearDay, 3)),
            b'3' => Some((Std::Hour12, 1)),
            b'4' => Some((Std::Minute, 1)),
            b'5' => Some((Std::Second, 1)),
            b'P' if has(i, "PM") => Some((Std::Pm(true), 2)),
            b'p' if has(i, "pm") => Some((Std::Pm(false), 2)),
            b'-' | b'Z' => offset_chunk(&layout[i..]),
            b'.' | b',' => frac_chunk(&layout[i..]),
            _ => None,
        };
        if let Some((std, len)) = found {
            return (&layout[..i], Some(std), &layout[i + len..]);
        }
    }
    (layout, None, "")
}

fn offset_chunk(s: &str) -> Option<(Std, usize)> {
    let z = s.starts_with('Z');
    let body = &s[1..];
    let forms: [(&str, bool, bool, bool); 5] = [
        ("070000", true, true, false),
        ("07:00:00", true, true, true),
        ("0700", true, false, false),
        ("07:00", true, false, true),
        ("07", false, false, false),
    ];
    forms
        .iter()
        .find(|(f, ..)| body.starts_with(f))
        .map(|(f, minutes, seconds, colons)| {
            (
                Std::Offset {
                    z,
                    minutes: *minutes,
                    seconds: *seconds,
                    colons: *colons,
                },
                f.len() + 1,
            )
        })
}

fn frac_chunk(s: &str) -> Option<(Std, usize)> {
    let b = s.as_bytes();
    let digit = *b.get(1)?;
    if digit != b'0' && digit != b'9' {
        return None;
    }
    let n = b[1..].iter().take_while(|c| **c == digit).count();
    // Only a run of one digit, not followed by another digit, is a fraction.
    if b.get(1 + n).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some((
        Std::Frac(n.min(9) as u8, digit == b'0', b[0] as char),
        1 + n,
    ))
}

fn write_std(out: &mut String, std: Std, c: &Civil) {
    use std::fmt::Write;
    let hour12 = match c.hour % 12 {
        0 => 12,
        h => h,
    };
    let _ = match std {
        Std::LongMonth => write!(out, "{}", MONTHS[(c.month - 1) as usize]),
        Std::Month => write!(out, "{}", &MONTHS[(c.month - 1) as usize][..3]),
        Std::NumMonth => write!(out, "{}", c.month),
        Std::ZeroMonth => write!(out, "{:02}", c.month),
        Std::LongWeekDay => write!(out, "{}", DAYS[c.weekday as usize]),
        Std::WeekDay => write!(out, "{}", &DAYS[c.weekday as usize][..3]),
        Std::Day => write!(out, "{}", c.day),
        Std::UnderDay => write!(out, "{:>2}", c.day),
        Std::ZeroDay => write!(out, "{:02}", c.day),
        Std::UnderYearDay => write!(out, "{:>3}", c.yday),
        Std::ZeroYearDay => write!(out, "{:03}", c.yday),
        Std::Hour => write!(out, "{:02}", c.hour),
        Std::Hour12 => write!(out, "{hour12}"),
        Std::ZeroHour12 => write!(out, "{hour12:02}"),
        Std::Minute => write!(out, "{}", c.minute),
        Std::ZeroMinute => write!(out, "{:02}", c.minute),
        Std::Second => write!(out, "{}", c.second),
        Std::ZeroSecond => write!(out, "{:02}", c.second),
        Std::LongYear => write!(out, "{:04}", c.year),
        Std::Year => write!(out, "{:02}", c.year.rem_euclid(100)),
        Std::Pm(upper) => {
            let pm = if c.hour >= 12 { "PM" } else { "AM" };
            let pm = if upper {
                pm.to_string()
            } else {
                pm.to_lowercase()
            };
            write!(out, "{pm}")
        }
        Std::Tz if !c.abbr.is_empty() => write!(out, "{}", c.abbr),
        Std::Tz => {
            let a = c.offset.abs();
            let sign = if c.offset < 0 { '-' } else { '+' };
            write!(out, "{sign}{:02}{:02}", a / 3600, a / 60 % 60)
        }
        Std::Offset { z: true, .. } if c.offset == 0 => write!(out, "Z"),
        Std::Offset {
            minutes,
            seconds,
            colons,
            ..
        } => {
            let a = c.offset.abs();
            let sep = if colons { ":" } else { "" };
            let sign = if c.offset < 0 { '-' } else { '+' };
            let _ = write!(out, "{sign}{:02}", a / 3600);
            if minutes {
                let _ = write!(out, "{sep}{:02}", a / 60 % 60);
            }
            if seconds {
                let _ = write!(out, "{sep}{:02}", a % 60);
            }
            Ok(())
        }
        Std::Frac(n, exact, sep) => {
            let digits = format!("{:09}", c.nanos);
            let digits = &digits[..n as usize];
            if exact {
                write!(out, "{sep}{digits}")
            } else {
                let trimmed = digits.trim_end_matches('0');
                if trimmed.is_empty() {
                    Ok(())
                } else {
                    write!(out, "{sep}{trimmed}")
                }
            }
        }
    };
}

/// Fields read by `parse`, Go's defaults where a layout leaves one out.
struct Parsed {
    year: i32,
    month: Option<u8>,
    day: Option<u8>,
    yday: Option<u16>,
    hour: u8,
    minute: u8,
    second: u8,
    nanos: u32,
    pm: Option<bool>,
    offset: Option<i32>,
    zone_name: Option<String>,
    utc: bool,
}

/// Go's `time.ParseInLocation(layout, value, Local)` (Local being UTC here); the error names
/// what did not parse.
pub fn parse(layout: &str, value: &str) -> Result<GoTime, String> {
    let bad = |elem: &str, v: &str| {
        format!("parsing time {value:?} as {layout:?}: cannot parse {v:?} as {elem:?}")
    };
    let mut p = Parsed {
        year: 0,
        month: None,
        day: None,
        yday: None,
        hour: 0,
        minute: 0,
        second: 0,
        nanos: 0,
        pm: None,
        offset: None,
        zone_name: None,
        utc: false,
    };
    let mut rest_layout = layout;
    let mut v = value;
    while !rest_layout.is_empty() {
        let (prefix, std, suffix) = next_chunk(rest_layout);
        v = skip(v, prefix).ok_or_else(|| bad(prefix, v))?;
        let Some(std) = std else { break };
        let elem = &rest_layout[prefix.len()..rest_layout.len() - suffix.len()];
        v = parse_std(std, v, &mut p, suffix).ok_or_else(|| bad(elem, v))?;
        rest_layout = suffix;
    }
    if !v.is_empty() {
        return Err(format!(
            "parsing time {value:?}: extra text: {:?}",
            v.to_string()
        ));
    }
    assemble(p).ok_or_else(|| format!("parsing time {value:?}: day out of range"))
}

/// Go's `skip`: the literal `prefix` at the start of `v` (a space matching any run of them).
fn skip<'a>(mut v: &'a str, mut prefix: &str) -> Option<&'a str> {
    while let Some(c) = prefix.chars().next() {
        if c == ' ' {
            if !v.is_empty() && !v.starts_with(' ') {
                return None;
            }
            prefix = prefix.trim_start_matches(' ');
            v = v.trim_start_matches(' ');
            continue;
        }
        v = v.strip_prefix(c)?;
        prefix = &prefix[c.len_utf8()..];
    }
    Some(v)
}

/// Digits at the start of `v`: one or two (exactly two when `fixed`).
fn num(v: &str, fixed: bool, max: usize) -> Option<(u32, &str)> {
    let n = v.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n == 0 || (fixed && n != max) {
        return None;
    }
    Some((v[..n].parse().ok()?, &v[n..]))
}

fn parse_std<'a>(std: Std, v: &'a str, p: &mut Parsed, layout_rest: &str) -> Option<&'a str> {
    let name_of = |v: &'a str, names: &[&str], short: bool| -> Option<(usize, &'a str)> {
        names.iter().enumerate().find_map(|(i, n)| {
            let n = if short { &n[..3] } else { n };
            let head = v.get(..n.len())?;
            head.eq_ignore_ascii_case(n).then(|| (i, &v[n.len()..]))
        })
    };
    Some(match std {
        Std::LongYear => {
            let (y, rest) = num(v, true, 4)?;
            p.year = y as i32;
            rest
        }
        Std::Year => {
            let (y, rest) = num(v, true, 2)?;
            p.year = if y >= 69 { 1900 + y } else { 2000 + y } as i32;
            rest
        }
        Std::LongMonth | Std::Month => {
            let (i, rest) = name_of(v, &MONTHS, std == Std::Month)?;
            p.month = Some(i as u8 + 1);
            rest
        }
        Std::NumMonth | Std::ZeroMonth => {
            let (m, rest) = num(v, std == Std::ZeroMonth, 2)?;
            (1..=12).contains(&m).then_some(())?;
            p.month = Some(m as u8);
            rest
        }
        Std::LongWeekDay | Std::WeekDay => name_of(v, &DAYS, std == Std::WeekDay)?.1,
        Std::Day | Std::UnderDay | Std::ZeroDay => {
            let v = if std == Std::UnderDay {
                v.strip_prefix(' ').unwrap_or(v)
            } else {
                v
            };
            let (d, rest) = num(v, std == Std::ZeroDay, 2)?;
            p.day = Some(d as u8);
            rest
        }
        Std::UnderYearDay | Std::ZeroYearDay => {
            let v = if std == Std::UnderYearDay {
                v.trim_start_matches(' ')
            } else {
                v
            };
            let (d, rest) = num(v, std == Std::ZeroYearDay, 3)?;
            p.yday = Some(d as u16);
            rest
        }
        Std::Hour => {
            let (h, rest) = num(v, false, 2)?;
            (h < 24).then_some(())?;
            p.hour = h as u8;
            rest
        }
        Std::Hour12 | Std::ZeroHour12 => {
            let (h, rest) = num(v, std == Std::ZeroHour12, 2)?;
            (h <= 12).then_some(())?;
            p.hour = h as u8;
            rest
        }
        Std::Minute | Std::ZeroMinute => {
            let (m, rest) = num(v, std == Std::ZeroMinute, 2)?;
            (m < 60).then_some(())?;
            p.minute = m as u8;
            rest
        }
        Std::Second | Std::ZeroSecond => {
            let (s, rest) = num(v, std == Std::ZeroSecond, 2)?;
            (s < 60).then_some(())?;
            p.second = s as u8;
            seconds_fraction(rest, p, layout_rest)
        }
        Std::Pm(upper) => {
            let head = v.get(..2)?;
            let (am, pm) = if upper { ("AM", "PM") } else { ("am", "pm") };
            p.pm = Some(match head {
                h if h == pm => true,
                h if h == am => false,
                _ => return None,
            });
            &v[2..]
        }
        Std::Offset { z: true, .. } if v.starts_with('Z') => {
            p.utc = true;
            &v[1..]
        }
        Std::Offset {
            minutes,
            seconds,
            colons,
            ..
        } => parse_offset(v, p, minutes, seconds, colons)?,
        Std::Tz if v.starts_with("UTC") => {
            p.utc = true;
            &v[3..]
        }
        Std::Tz => {
            let n = v.bytes().take_while(u8::is_ascii_uppercase).count();
            (3..=5).contains(&n).then_some(())?;
            p.zone_name = Some(v[..n].to_string());
            &v[n..]
        }
        Std::Frac(n, true, _) => {
            let n = n as usize + 1;
            let digits = v.get(1..n)?;
            (v.starts_with(['.', ',']) && digits.bytes().all(|c| c.is_ascii_digit()))
                .then_some(())?;
            p.nanos = nanos_of(digits);
            &v[n..]
        }
        Std::Frac(_, false, _) => seconds_fraction(v, p, ""),
    })
}

/// A fraction of a second after the seconds, read even where the layout has none (as Go
/// does), unless the layout's next element is the fraction itself.
fn seconds_fraction<'a>(v: &'a str, p: &mut Parsed, layout_rest: &str) -> &'a str {
    let b = v.as_bytes();
    if b.len() < 2 || !matches!(b[0], b'.' | b',') || !b[1].is_ascii_digit() {
        return v;
    }
    if matches!(next_chunk(layout_rest), ("", Some(Std::Frac(..)), _)) {
        return v;
    }
    let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    p.nanos = nanos_of(&v[1..n]);
    &v[n..]
}

fn nanos_of(digits: &str) -> u32 {
    let d: String = digits.chars().take(9).collect();
    format!("{d:0<9}").parse().unwrap_or(0)
}

fn parse_offset<'a>(
    v: &'a str,
    p: &mut Parsed,
    minutes: bool,
    seconds: bool,
    colons: bool,
) -> Option<&'a str> {
    let sign = match v.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let mut rest = &v[1..];
    let take = |rest: &mut &'a str, sep: bool| -> Option<i32> {
        if sep && colons {
            *rest = rest.strip_prefix(':')?;
        }
        let (n, r) = num(rest, true, 2)?;
        *rest = r;
        Some(n as i32)
    };
    let h = take(&mut rest, false)?;
    let m = if minutes { take(&mut rest, true)? } else { 0 };
    let s = if seconds { take(&mut rest, true)? } else { 0 };
    p.offset = Some(sign * (h * 3600 + m * 60 + s));
    Some(rest)
}

/// The time the parsed fields name (Go's end of `parse`); `None` for a day the month lacks.
fn assemble(p: Parsed) -> Option<GoTime> {
    let mut hour = p.hour;
    match p.pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let date = match (p.yday, p.month, p.day) {
        (Some(yd), _, _) => time::Date::from_ordinal_date(p.year, yd).ok()?,
        (None, m, d) => {
            let month = time::Month::try_from(m.unwrap_or(1)).ok()?;
            time::Date::from_calendar_date(p.year, month, d.unwrap_or(1)).ok()?
        }
    };
    let wall = date
        .with_hms(hour, p.minute, p.second)
        .ok()?
        .assume_utc()
        .unix_timestamp();
    let (secs, loc) = match (p.utc, p.offset, p.zone_name) {
        (true, _, _) => (wall, Loc::Utc),
        // Local is UTC: an offset of zero is read as Local, any other as a fixed zone.
        (false, Some(0), None) => (wall, Loc::Utc),
        (false, Some(off), name) => (wall - off as i64, Loc::Fixed(name.unwrap_or_default(), off)),
        (false, None, Some(name)) => {
            let off = name
                .strip_prefix("GMT")
                .and_then(|h| h.parse::<i32>().ok())
                .map_or(0, |h| h * 3600);
            (wall - off as i64, Loc::Fixed(name, off))
        }
        (false, None, None) => (wall, Loc::Utc),
    };
    Some(GoTime {
        secs,
        nanos: p.nanos,
        loc,
        mono: None,
    })
}

/// Go's `time.Duration.String`: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn duration_string(nanos: i128) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.unsigned_abs();
    if u < 1_000_000_000 {
        // Below a second: the largest unit under it, with a fraction.
        let (unit, scale) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", fraction(u, scale));
    }
    let secs = u / 1_000_000_000;
    let frac = fraction(u % 60_000_000_000, 1_000_000_000);
    let (h, m) = (secs / 3600, secs / 60 % 60);
    match (h, m) {
        (0, 0) => format!("{sign}{frac}s"),
        (0, m) => format!("{sign}{m}m{frac}s"),
        (h, m) => format!("{sign}{h}h{m}m{frac}s"),
    }
}

/// `n / scale` with its fraction's trailing zeros dropped.
fn fraction(n: u128, scale: u128) -> String {
    let whole = n / scale;
    let rem = n % scale;
    if rem == 0 {
        return whole.to_string();
    }
    let width = scale.to_string().len() - 1;
    let digits = format!("{rem:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`: `[-+]` then numbers (with fractions) each with a unit.
pub fn parse_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int: i128 = if int_len > 0 {
            rest[..int_len].parse().ok()?
        } else {
            0
        };
        rest = &rest[int_len..];
        let mut frac = "";
        if let Some(r) = rest.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            frac = &r[..n];
            rest = &r[n..];
        }
        if int_len == 0 && frac.is_empty() {
            return None;
        }
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale: i128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let mut part = int.checked_mul(scale)?;
        if !frac.is_empty() {
            let digits: i128 = frac.parse().ok()?;
            part += digits * scale / 10i128.checked_pow(frac.len() as u32)?;
        }
        total = total.checked_add(part)?;
    }
    (total <= i64::MAX as i128).then_some(if neg { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_and_parse_with_go_layouts() {
        let t = parse("2006-01-02", "2026-11-27").unwrap();
        assert_eq!(t.go_string(), "2026-11-27 00:00:00 +0000 UTC");
        assert_eq!(
            t.format("Jan _2 3:04PM Monday .000"),
            "Nov 27 12:00AM Friday .000"
        );
        assert_eq!(t.secs, 1_795_737_600);
        let t = parse(time_rfc3339(), "2026-11-27T10:00:00.5+02:00").unwrap();
        assert_eq!(t.go_string(), "2026-11-27 10:00:00.5 +0200 +0200");
        assert_eq!(t.format("15:04:05.999 Z07:00"), "10:00:00.5 +02:00");
        assert!(parse("2006-01-02", "2026-02-30").is_err());
        assert!(parse("2006-01-02", "hello").is_err());
        assert_eq!(GoTime::zero().go_string(), "0001-01-01 00:00:00 +0000 UTC");
    }

    fn time_rfc3339() -> &'static str {
        "2006-01-02T15:04:05Z07:00"
    }

    #[test]
    fn durations_print_and_parse_as_go() {
        assert_eq!(duration_string(90 * 1_000_000_000), "1m30s");
        assert_eq!(duration_string(1_500_000), "1.5ms");
        assert_eq!(duration_string(-3_723_500_000_000), "-1h2m3.5s");
        assert_eq!(parse_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_duration("-2ms"), Some(-2_000_000));
        assert_eq!(parse_duration("5"), None);
    }
}
