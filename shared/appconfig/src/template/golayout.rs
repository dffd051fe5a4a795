//! Go's reference-time layouts (`2006-01-02 15:04:05 MST`): `time.Format` and `time.Parse`
//! followed chunk by chunk, since the layout language is Go's alone (no Rust crate reads
//! `Jan _2 15:04`). Elements are found as Go's `nextStdChunk` finds them, so a literal that
//! looks like an element is one (`"1"` is the month), as in Go.

use super::gotime::{Civil, DAYS, GoTime, Loc, MONTHS};

/// Go's `t.Format(layout)` of a time's civil fields.
pub fn format(c: &Civil, layout: &str) -> String {
    let mut out = String::new();
    let mut rest = layout;
    while !rest.is_empty() {
        let (prefix, std, suffix) = next_chunk(rest);
        out.push_str(prefix);
        if let Some(std) = std {
            write_std(&mut out, std, c);
        }
        rest = suffix;
    }
    out
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

/// One layout element read from the start of `v` into `p`; what follows it.
fn parse_std<'a>(std: Std, v: &'a str, p: &mut Parsed, layout_rest: &str) -> Option<&'a str> {
    match std {
        Std::LongYear
        | Std::Year
        | Std::LongMonth
        | Std::Month
        | Std::NumMonth
        | Std::ZeroMonth
        | Std::LongWeekDay
        | Std::WeekDay
        | Std::Day
        | Std::UnderDay
        | Std::ZeroDay
        | Std::UnderYearDay
        | Std::ZeroYearDay => parse_date(std, v, p),
        _ => parse_clock(std, v, p, layout_rest),
    }
}

fn parse_date<'a>(std: Std, v: &'a str, p: &mut Parsed) -> Option<&'a str> {
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
        _ => return None,
    })
}

fn parse_clock<'a>(std: Std, v: &'a str, p: &mut Parsed, layout_rest: &str) -> Option<&'a str> {
    Some(match std {
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
        _ => return None,
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
        // Local is UTC: an offset of zero (or the name UTC) is read as Local, any other as a
        // fixed zone; no zone at all is Local, sprig's `toDate` parsing in it.
        (false, Some(0), None) | (false, None, None) => (wall, Loc::Local),
        (false, None, Some(name)) if name == "UTC" => (wall, Loc::Local),
        (false, Some(off), name) => (wall - off as i64, Loc::Fixed(name.unwrap_or_default(), off)),
        (false, None, Some(name)) => {
            let off = name
                .strip_prefix("GMT")
                .and_then(|h| h.parse::<i32>().ok())
                .map_or(0, |h| h * 3600);
            (wall - off as i64, Loc::Fixed(name, off))
        }
    };
    Some(GoTime {
        secs,
        nanos: p.nanos,
        loc,
        mono: None,
    })
}
