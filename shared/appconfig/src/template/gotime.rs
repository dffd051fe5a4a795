//! Go's `time.Time` and `time.Duration` as sprig's date functions hand them to templates: a
//! time prints as Go prints it (`2026-11-27 10:00:00 +0000 UTC`, with ` m=+0.000012345` when it
//! came from `now`), formats and parses with Go's reference layout (`2006-01-02 15:04:05`), and
//! moves through zones loaded as Go loads them (`tzif.rs`).
//!
//! Go's `Local` is the renderer's own zone; Ferry takes it to be UTC, which is what Nuon's
//! control plane runs in, so a config renders the same wherever Ferry runs.
//!
//! The layout language (`Jan _2 15:04`) is in `golayout.rs`.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::golayout;
use super::tzif::{self, Zone};
use super::value::IntTy;

pub use super::golayout::parse;

/// Where a time's wall clock is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Loc {
    Utc,
    /// Go's `time.Local`, the renderer's own zone: UTC (as Nuon's control plane runs), printed
    /// as UTC, but a location of its own (`%#v` prints `time.Local`, and it is not nil).
    Local,
    /// A fixed offset (east of UTC) with the name it prints (empty: the offset prints).
    Fixed(String, i32),
    Zone(Arc<Zone>),
}

impl Loc {
    /// Go's `LoadLocation` (`""` and `UTC` are UTC, `Local` is taken to be UTC); `None` for a
    /// zone Go would not find either.
    pub fn load(name: &str) -> Option<Loc> {
        match name {
            "" | "UTC" => Some(Loc::Utc),
            "Local" => Some(Loc::Local),
            name => tzif::load(name).map(Loc::Zone),
        }
    }

    /// The offset (seconds east of UTC) and abbreviation in effect at `secs`.
    fn at(&self, secs: i64) -> (i32, String) {
        match self {
            Loc::Utc | Loc::Local => (0, "UTC".into()),
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

pub const MONTHS: [&str; 12] = [
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
pub const DAYS: [&str; 7] = [
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
            loc: Loc::Local,
            mono: Some(start.elapsed().as_nanos() as i64 + 1),
        }
    }

    /// Go's `time.Unix(secs, 0)` in `Local`.
    pub fn unix(secs: i64) -> GoTime {
        GoTime {
            secs,
            nanos: 0,
            loc: Loc::Local,
            mono: None,
        }
    }

    /// Go's `time.Time` fields as fmt prints the struct under a verb that is not a string's
    /// (`printf "%d"`): `wall` and `ext` as Go encodes them (with a monotonic reading, `wall` holds
    /// the seconds since 1885 and `ext` the reading), and whether `loc` is nil (UTC).
    pub fn fields(&self) -> (u64, i64, bool) {
        // Seconds from January 1 of year 1 to 1970, and to 1885.
        const UNIX_TO_INTERNAL: i64 = 62_135_596_800;
        const WALL_TO_INTERNAL: i64 = 59_453_308_800;
        let internal = self.secs + UNIX_TO_INTERNAL;
        let nil_loc = self.loc == Loc::Utc;
        match self.mono {
            Some(mono) => {
                let secs = (internal - WALL_TO_INTERNAL) as u64;
                (
                    (1 << 63) | (secs << 30) | u64::from(self.nanos),
                    mono,
                    nil_loc,
                )
            }
            None => (u64::from(self.nanos), internal, nil_loc),
        }
    }

    /// Go's zero `time.Time`: January 1, year 1, UTC.
    pub fn zero() -> GoTime {
        GoTime {
            loc: Loc::Utc,
            ..GoTime::unix(-62_135_596_800)
        }
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
            Loc::Local => "time.Local".to_string(),
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
        golayout::format(&self.civil(), layout)
    }

    /// Go's `t.Method()` for the methods templates call without arguments.
    pub fn method(&self, name: &str) -> Option<MethodResult> {
        let c = self.civil();
        Some(match name {
            "Unix" => MethodResult::Int(self.secs, IntTy::Int64),
            "UnixMilli" => MethodResult::Int(
                self.secs * 1000 + (self.nanos / 1_000_000) as i64,
                IntTy::Int64,
            ),
            "UnixNano" => {
                MethodResult::Int(self.secs * 1_000_000_000 + self.nanos as i64, IntTy::Int64)
            }
            "Year" => MethodResult::Int(c.year as i64, IntTy::Int),
            "YearDay" => MethodResult::Int(c.yday as i64, IntTy::Int),
            "Day" => MethodResult::Int(c.day as i64, IntTy::Int),
            "Hour" => MethodResult::Int(c.hour as i64, IntTy::Int),
            "Minute" => MethodResult::Int(c.minute as i64, IntTy::Int),
            "Second" => MethodResult::Int(c.second as i64, IntTy::Int),
            "Nanosecond" => MethodResult::Int(c.nanos as i64, IntTy::Int),
            "Month" => MethodResult::Int(c.month as i64, IntTy::Month),
            "Weekday" => MethodResult::Int(c.weekday as i64, IntTy::Weekday),
            "IsZero" => MethodResult::Bool(self.secs == GoTime::zero().secs && self.nanos == 0),
            "String" => MethodResult::Str(self.go_string()),
            "UTC" => MethodResult::Time(self.in_loc(Loc::Utc)),
            "Local" => MethodResult::Time(self.in_loc(Loc::Local)),
            _ => return None,
        })
    }
}

/// What a time's method returns.
pub enum MethodResult {
    Int(i64, IntTy),
    Str(String),
    Bool(bool),
    Time(GoTime),
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
