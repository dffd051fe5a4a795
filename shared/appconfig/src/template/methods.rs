//! Methods of the Go values sprig returns, as templates call them: `.Minor` of a
//! `*semver.Version`, `.Year` or `.Format "2006"` of a `time.Time`.
//!
//! text/template reaches a method through field syntax (`(now).Unix`) and passes the words after
//! it as arguments (`(now).Format "Jan 2"`); only the methods a config plausibly calls are here,
//! each with Go's parameter types.

use super::gotime::MethodResult;
use super::goversion::{Field, GoVersion};
use super::value::{IntTy, V};

/// `recv.name(args...)`; `None` when the value has no such method.
pub fn call(recv: &V, name: &str, args: &[V]) -> Option<Result<V, String>> {
    match recv {
        V::Time(t) if args.is_empty() => t.method(name).map(|r| Ok(time_result(r))),
        V::Time(t) => {
            let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
            let other = |v: V| match v {
                V::Time(u) => Ok(*u),
                v => Err(wrong("time.Time", &v)),
            };
            Some(match (name, args.len()) {
                ("Format", 1) => match arg(0) {
                    V::Str(layout) => Ok(V::Str(t.format(&layout))),
                    v => Err(wrong("string", &v)),
                },
                ("Add", 1) => match arg(0) {
                    V::Int(n, _) => Ok(V::Time(Box::new(t.add(n as i128)))),
                    v => Err(wrong("time.Duration", &v)),
                },
                ("Before" | "After" | "Equal", 1) => other(arg(0)).map(|u| {
                    let d = t.until(&u);
                    V::Bool(match name {
                        "Before" => d > 0,
                        "After" => d < 0,
                        _ => d == 0,
                    })
                }),
                _ => return arity(t.method(name).is_some(), name, args.len()),
            })
        }
        V::Version(v) if args.is_empty() => v.method(name).map(|f| {
            Ok(match f {
                Field::Int(n) => V::Int(n as i64, IntTy::Uint64),
                Field::Str(s) => V::Str(s),
            })
        }),
        V::Version(v) => {
            let other = match args.first() {
                Some(V::Version(o)) => Ok(o),
                Some(o) => Err(wrong("*semver.Version", o)),
                None => Err(wrong("*semver.Version", &V::Null)),
            };
            Some(match (name, args.len()) {
                ("Compare", 1) => other.map(|o| V::int(compare(v, o) as i64)),
                ("LessThan", 1) => other.map(|o| V::Bool(compare(v, o) < 0)),
                ("GreaterThan", 1) => other.map(|o| V::Bool(compare(v, o) > 0)),
                ("Equal", 1) => other.map(|o| V::Bool(compare(v, o) == 0)),
                _ => return arity(v.method(name).is_some(), name, args.len()),
            })
        }
        _ => None,
    }
}

fn time_result(r: MethodResult) -> V {
    match r {
        MethodResult::Int(n, ty) => V::Int(n, ty),
        MethodResult::Str(s) => V::Str(s),
        MethodResult::Bool(b) => V::Bool(b),
        MethodResult::Time(t) => V::Time(Box::new(t)),
    }
}

/// A known method given arguments it does not take; `None` for an unknown one.
fn arity(known: bool, name: &str, n: usize) -> Option<Result<V, String>> {
    known.then(|| Err(format!("wrong number of args for {name}: want 0 got {n}")))
}

fn wrong(want: &str, v: &V) -> String {
    format!(
        "wrong type for value; expected {want}; got {}",
        super::gofmt::type_name(v)
    )
}

/// Masterminds' `Compare`: major, minor, patch, then a release above its prereleases.
fn compare(a: &GoVersion, b: &GoVersion) -> i32 {
    let parse = |v: &GoVersion| semver::Version::parse(&v.go_string()).ok();
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => {
            let a = semver::Version {
                build: semver::BuildMetadata::EMPTY,
                ..a
            };
            let b = semver::Version {
                build: semver::BuildMetadata::EMPTY,
                ..b
            };
            a.cmp(&b) as i32
        }
        _ => 0,
    }
}
