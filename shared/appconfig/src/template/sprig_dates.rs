//! sprig's date functions (its `date.go`) over Go times (`gotime.rs`).
//!
//! sprig's rules, kept: `date` and its kin take a `time.Time` or an int (Unix seconds) and
//! anything else (a float64 from the state, a string) as *now*; `toDate` of text that does not
//! parse is the zero time (`mustToDate` fails); `dateModify` of a bad duration returns the time
//! unchanged; a zone that does not load is UTC.

use super::gotime::{self, GoTime, Loc};
use super::value::{IntTy, V};

/// Name, minimum and maximum argument count, one-line description.
pub const FUNCTIONS: &[(&str, usize, Option<usize>, &str)] = &[
    ("now", 0, Some(0), "the current time"),
    (
        "date",
        2,
        Some(2),
        "`date LAYOUT TIME`: a time in Go's layout (`2006-01-02`)",
    ),
    (
        "dateInZone",
        3,
        Some(3),
        "`dateInZone LAYOUT TIME ZONE`: as `date`, in an IANA zone",
    ),
    ("date_in_zone", 3, Some(3), "`dateInZone`'s old name"),
    ("htmlDate", 1, Some(1), "`date \"2006-01-02\" TIME`"),
    (
        "htmlDateInZone",
        2,
        Some(2),
        "`htmlDateInZone TIME ZONE`: `2006-01-02` in ZONE",
    ),
    (
        "dateModify",
        2,
        Some(2),
        "`dateModify DURATION TIME`: TIME moved by a Go duration (`-1h30m`)",
    ),
    ("date_modify", 2, Some(2), "`dateModify`'s old name"),
    (
        "mustDateModify",
        2,
        Some(2),
        "`dateModify`, failing on a bad duration",
    ),
    (
        "must_date_modify",
        2,
        Some(2),
        "`mustDateModify`'s old name",
    ),
    ("ago", 1, Some(1), "the time since TIME, as a Go duration"),
    (
        "toDate",
        2,
        Some(2),
        "`toDate LAYOUT TEXT`: a time (the zero time when TEXT does not parse)",
    ),
    (
        "mustToDate",
        2,
        Some(2),
        "`toDate`, failing when TEXT does not parse",
    ),
    ("unixEpoch", 1, Some(1), "a time's Unix seconds, as text"),
    ("duration", 1, Some(1), "seconds as a Go duration (`1m30s`)"),
    (
        "durationRound",
        1,
        Some(1),
        "a duration (or the time since a time) in its largest unit (`2h`)",
    ),
];

pub fn call(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let text = |i: usize| match arg(i) {
        V::Str(s) => s,
        other => other.print(),
    };
    let time = |v: V| match v {
        V::Time(t) => Ok(*t),
        other => Err(format!(
            "error calling {name}: wrong type for value; expected time.Time; got {}",
            super::gofmt::type_name(&other)
        )),
    };
    Some((|| {
        Ok(match name {
            "now" => V::Time(Box::new(GoTime::now())),
            "date" => V::Str(in_zone(&arg(1), "Local").format(&text(0))),
            "dateInZone" | "date_in_zone" => V::Str(in_zone(&arg(1), &text(2)).format(&text(0))),
            "htmlDate" => V::Str(in_zone(&arg(0), "Local").format("2006-01-02")),
            "htmlDateInZone" => V::Str(in_zone(&arg(0), &text(1)).format("2006-01-02")),
            "dateModify" | "date_modify" | "mustDateModify" | "must_date_modify" => {
                let t = time(arg(1))?;
                match gotime::parse_duration(&text(0)) {
                    Some(d) => V::Time(Box::new(t.add(d))),
                    None if name.starts_with("must") => {
                        return Err(format!(
                            "error calling {name}: time: invalid duration {:?}",
                            text(0)
                        ));
                    }
                    None => V::Time(Box::new(t)),
                }
            }
            "ago" => {
                let since = coerce(&arg(0)).until(&GoTime::now());
                V::Str(gotime::duration_string(round_to_second(since)))
            }
            "toDate" => V::Time(Box::new(
                gotime::parse(&text(0), &text(1)).unwrap_or_else(|_| GoTime::zero()),
            )),
            "mustToDate" => V::Time(Box::new(
                gotime::parse(&text(0), &text(1))
                    .map_err(|e| format!("error calling {name}: {e}"))?,
            )),
            "unixEpoch" => V::Str(time(arg(0))?.secs.to_string()),
            // sprig reads a string or an int64 as seconds; Go's int constants are neither.
            "duration" => V::Str(gotime::duration_string(match arg(0) {
                V::Str(s) => s.parse::<i64>().unwrap_or(0) as i128 * 1_000_000_000,
                V::Int(n, IntTy::Int64) => n as i128 * 1_000_000_000,
                _ => 0,
            })),
            "durationRound" => V::Str(duration_round(&arg(0))),
            _ => return Err(String::new()),
        })
    })())
    .filter(|r| !matches!(r, Err(e) if e.is_empty()))
}

/// sprig's reading of a date argument: a time, or Unix seconds from an int; anything else is
/// now.
fn coerce(v: &V) -> GoTime {
    match v {
        V::Time(t) => (**t).clone(),
        V::Int(n, _) => GoTime::unix(*n),
        _ => GoTime::now(),
    }
}

/// sprig's `dateInZone`: the date argument read on the zone's clock (UTC when the zone does not
/// load).
fn in_zone(v: &V, zone: &str) -> GoTime {
    coerce(v).in_loc(Loc::load(zone).unwrap_or(Loc::Utc))
}

/// Go's `Duration.Round(time.Second)`: halves away from zero.
fn round_to_second(nanos: i128) -> i128 {
    let s = 1_000_000_000;
    let r = nanos.rem_euclid(s);
    let down = nanos - r;
    if r + r < s { down } else { down + s }
}

/// sprig's `durationRound`: a duration (text, or the time since a time) in the largest unit it
/// exceeds, rounded down, without its sign (`2h10m5s` is `2h`, `-36h` is `1d`, exactly `1h` is
/// `60m`; years are 365 days, months 30).
fn duration_round(v: &V) -> String {
    let nanos: i128 = match v {
        V::Str(s) => gotime::parse_duration(s).unwrap_or(0),
        V::Time(t) => t.until(&GoTime::now()),
        _ => 0,
    };
    let u = nanos.unsigned_abs();
    let second = 1_000_000_000u128;
    let units = [
        (second * 3600 * 24 * 365, "y"),
        (second * 3600 * 24 * 30, "mo"),
        (second * 3600 * 24, "d"),
        (second * 3600, "h"),
        (second * 60, "m"),
        (second, "s"),
    ];
    for (size, unit) in units {
        if u > size {
            return format!("{}{unit}", u / size);
        }
    }
    "0s".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call1(name: &str, args: &[V]) -> V {
        call(name, args).unwrap().unwrap()
    }

    fn s(x: &str) -> V {
        V::Str(x.into())
    }

    #[test]
    fn dates_follow_sprig() {
        let day = call1("toDate", &[s("2006-01-02"), s("2026-11-27")]);
        assert_eq!(
            call1("unixEpoch", std::slice::from_ref(&day)),
            s("1795737600")
        );
        assert_eq!(call1("date", &[s("Jan 2"), day.clone()]), s("Nov 27"));
        assert_eq!(
            call1("dateModify", &[s("1h"), day.clone()]).print(),
            "2026-11-27 01:00:00 +0000 UTC"
        );
        assert_eq!(
            call1("toDate", &[s("2006-01-02"), s("x")]).print(),
            "0001-01-01 00:00:00 +0000 UTC"
        );
        assert!(
            call("mustToDate", &[s("2006-01-02"), s("x")])
                .unwrap()
                .is_err()
        );
        assert_eq!(call1("date", &[s("2006"), V::int(0)]), s("1970"));
        assert_eq!(call1("duration", &[s("95")]), s("1m35s"));
        assert_eq!(call1("durationRound", &[s("2h10m5s")]), s("2h"));
        assert_eq!(call1("durationRound", &[s("-36h")]), s("1d"));
        assert!(call("unixEpoch", &[s("x")]).unwrap().is_err());
    }
}
