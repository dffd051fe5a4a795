//! A template's values: Go's types as JSON data and sprig's functions give them (int, float64,
//! string, bool, nil, `[]interface {}`, `map[string]interface {}`, `time.Time`,
//! `*semver.Version`), with Go's truth and comparisons.
//!
//! Integers, lists and maps carry their Go type, not only their contents, because Go's templates
//! see it: sprig's arithmetic returns `int64`, and an `int64` passed where a function takes an
//! `int` is an error (`trunc (sub 10 2) .s` fails in Nuon); `splitList` returns `[]string`,
//! which `typeOf`, `kindIs` and `%#v` name, and `split`'s `map[string]string` is refused where a
//! function takes a `map[string]interface {}`. A time's `Month` is a `time.Month`: it compares
//! as a number and prints as a name.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;

use super::gotime::GoTime;
use super::goversion::GoVersion;

/// A template value.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Null,
    Bool(bool),
    /// One of Go's integer types.
    Int(i64, IntTy),
    /// Go's float64: every number of the state (it went through JSON, as in Nuon).
    Num(f64),
    Str(String),
    /// A slice: `[]interface {}` (JSON arrays, `list`), `[]string` or `[]int`.
    List(Vec<V>, Slice),
    /// A map with string keys: `map[string]interface {}` or `map[string]string`.
    Map(BTreeMap<String, V>, Elem),
    /// Go's `time.Time`, from sprig's date functions.
    Time(Box<GoTime>),
    /// Masterminds' `*semver.Version`, from sprig's `semver`.
    Version(Box<GoVersion>),
    Unknown,
}

/// Which of Go's integer types an integer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntTy {
    /// `int`: literals, `len`, `atoi`, `int`, `randInt`, a time's `Year`.
    Int,
    /// `int64`: sprig's arithmetic, `int64`, `toDecimal`, a time's `Unix`.
    Int64,
    /// `uint64`: a version's `Major`, `Minor` and `Patch`.
    Uint64,
    /// `time.Month` and `time.Weekday`: integers that print as their names.
    Month,
    Weekday,
}

/// A slice's Go type: its elements', and whether it is nil (a nil slice prints `[]string(nil)`
/// under `%#v` and `null` as JSON, an empty one `[]string{}` and `[]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    pub elem: Elem,
    pub nil: bool,
}

/// The element type of a slice or a map's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// `interface{}`: anything.
    Any,
    Str,
    Int,
    /// `[]interface {}`: `chunk`'s lists of lists.
    AnyList,
}

impl V {
    /// A Go `int`.
    pub fn int(n: i64) -> V {
        V::Int(n, IntTy::Int)
    }

    /// A Go `int64`.
    pub fn int64(n: i64) -> V {
        V::Int(n, IntTy::Int64)
    }

    /// A `[]interface {}`.
    pub fn list(items: Vec<V>) -> V {
        V::typed_list(items, Elem::Any)
    }

    /// A slice of `elem`.
    pub fn typed_list(items: Vec<V>, elem: Elem) -> V {
        V::List(items, Slice { elem, nil: false })
    }

    /// A nil slice of `elem`.
    pub fn nil_list(elem: Elem) -> V {
        V::List(Vec::new(), Slice { elem, nil: true })
    }

    /// A `[]string`.
    pub fn strings(items: impl IntoIterator<Item = String>) -> V {
        V::typed_list(items.into_iter().map(V::Str).collect(), Elem::Str)
    }

    /// A `map[string]interface {}`.
    pub fn map(entries: BTreeMap<String, V>) -> V {
        V::Map(entries, Elem::Any)
    }

    pub fn from_json(v: &Value) -> V {
        match v {
            Value::Null => V::Null,
            Value::Bool(b) => V::Bool(*b),
            Value::Number(n) => V::Num(n.as_f64().unwrap_or(0.0)),
            Value::String(s) => V::Str(s.clone()),
            Value::Array(a) => V::list(a.iter().map(V::from_json).collect()),
            Value::Object(o) => V::map(
                o.iter()
                    .map(|(k, v)| (k.clone(), V::from_json(v)))
                    .collect(),
            ),
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            V::Null | V::Unknown => Value::Null,
            V::Bool(b) => Value::Bool(*b),
            V::Int(n, _) => Value::from(*n),
            V::Num(n) => num_json(*n),
            V::Str(s) => Value::String(s.clone()),
            V::List(_, Slice { nil: true, .. }) => Value::Null,
            V::List(l, _) => Value::Array(l.iter().map(V::to_json).collect()),
            V::Map(m, _) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            // Both marshal as Go's JSON does: RFC 3339 with nanoseconds, the canonical version.
            V::Time(t) => Value::String(t.format("2006-01-02T15:04:05.999999999Z07:00")),
            V::Version(v) => Value::String(v.go_string()),
        }
    }

    /// Go's truth: false, 0, nil and empty strings, lists and maps are false.
    pub fn truthy(&self) -> bool {
        match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Int(n, _) => *n != 0,
            V::Num(n) => *n != 0.0,
            V::Str(s) => !s.is_empty(),
            V::List(l, _) => !l.is_empty(),
            V::Map(m, _) => !m.is_empty(),
            // A struct is always true in Go; a non-nil pointer too.
            V::Time(_) | V::Version(_) | V::Unknown => true,
        }
    }

    /// How the value prints: Go's `%v` (`[a b]`, `map[a:x b:1]`, `1.2345678901e+10`, `<nil>`).
    pub fn print(&self) -> String {
        super::gofmt::value(self)
    }

    /// Approximate size in bytes (strings' lengths, 8 per item), counted only up to `cap`: checking
    /// a value never costs more than the cap.
    pub fn weight(&self, cap: usize) -> usize {
        match self {
            V::Str(s) => s.len(),
            V::List(l, _) => {
                let mut w = 0;
                for x in l {
                    w += 8 + x.weight(cap);
                    if w > cap {
                        break;
                    }
                }
                w
            }
            V::Map(m, _) => {
                let mut w = 0;
                for (k, x) in m {
                    w += 8 + k.len() + x.weight(cap);
                    if w > cap {
                        break;
                    }
                }
                w
            }
            _ => 8,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            V::Null => "nil",
            V::Bool(_) => "a bool",
            V::Int(_, _) => "an int",
            V::Num(_) => "a number",
            V::Str(_) => "a string",
            V::List(_, _) => "a list",
            V::Map(_, _) => "a map",
            V::Time(_) => "a time",
            V::Version(_) => "a version",
            V::Unknown => "an unknown value",
        }
    }

    /// Go's `eq` of two values: basic kinds of the same kind compare; an int and a float64, or
    /// a string and a number, are an error (`incompatible types for comparison`), as are lists
    /// and maps; nil equals only nil.
    pub fn go_eq(&self, other: &V) -> Result<bool, String> {
        match (self, other) {
            (V::Unknown, _) | (_, V::Unknown) => Ok(true),
            (V::Null, V::Null) => Ok(true),
            (V::Null, _) | (_, V::Null) => Ok(false),
            (V::Bool(a), V::Bool(b)) => Ok(a == b),
            (V::Int(a, _), V::Int(b, _)) => Ok(a == b),
            (V::Num(a), V::Num(b)) => Ok(a == b),
            (V::Str(a), V::Str(b)) => Ok(a == b),
            (V::List(_, _) | V::Map(_, _), _) | (_, V::List(_, _) | V::Map(_, _)) => Err(format!(
                "non-comparable type {}: {}",
                self.print(),
                super::gofmt::type_name(self)
            )),
            _ => Err("incompatible types for comparison".into()),
        }
    }

    /// Go's order (`lt`, `le`, `gt`, `ge`) of two values of one basic kind.
    pub fn go_order(&self, other: &V) -> Result<Ordering, String> {
        match (self, other) {
            (V::Unknown, _) | (_, V::Unknown) => Ok(Ordering::Equal),
            (V::Int(a, _), V::Int(b, _)) => Ok(a.cmp(b)),
            (V::Num(a), V::Num(b)) => a
                .partial_cmp(b)
                .ok_or_else(|| "incompatible types for comparison".to_string()),
            (V::Str(a), V::Str(b)) => Ok(a.cmp(b)),
            (V::Int(_, _) | V::Num(_) | V::Str(_), V::Int(_, _) | V::Num(_) | V::Str(_)) => {
                Err("incompatible types for comparison".into())
            }
            _ => Err("invalid type for comparison".into()),
        }
    }
}

fn num_json(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}
