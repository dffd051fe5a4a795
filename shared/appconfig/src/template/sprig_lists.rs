//! Sprig's list, dict, type and math functions beyond the common ones (`sprig.rs`), as sprig
//! 3.x computes them over Go's values: a function that sprig lets panic on a value it cannot
//! take (`first` of a number, `dig` through a string) is an error here, as text/template turns
//! the panic into one.

use std::collections::BTreeMap;

use super::decimal::Decimal;
use super::gofmt;
use super::value::{Elem, IntTy, V};

/// Name, minimum and maximum argument count (`None`: any number), one-line description.
pub const FUNCTIONS: &[(&str, usize, Option<usize>, &str)] = &[
    ("rest", 1, Some(1), "a list without its first item"),
    ("initial", 1, Some(1), "a list without its last item"),
    ("reverse", 1, Some(1), "a list reversed"),
    ("compact", 1, Some(1), "a list without its empty items"),
    (
        "append",
        2,
        Some(2),
        "`append LIST V`: the list with V added",
    ),
    ("push", 2, Some(2), "`push LIST V`: the list with V added"),
    (
        "prepend",
        2,
        Some(2),
        "`prepend LIST V`: the list with V first",
    ),
    ("concat", 0, None, "lists joined into one"),
    (
        "without",
        1,
        None,
        "`without LIST V...`: the list without the Vs",
    ),
    (
        "chunk",
        2,
        Some(2),
        "`chunk N LIST`: the list in lists of N",
    ),
    (
        "slice",
        1,
        Some(3),
        "`slice LIST [FROM [TO]]`: part of a list",
    ),
    ("tuple", 0, None, "its arguments as a list"),
    ("until", 1, Some(1), "`until N`: 0 to N-1"),
    (
        "untilStep",
        3,
        Some(3),
        "`untilStep FROM TO STEP`: FROM to TO by STEP",
    ),
    (
        "seq",
        0,
        None,
        "`seq [FROM [STEP]] TO`: numbers, as GNU seq prints them",
    ),
    (
        "dig",
        3,
        None,
        "`dig K1 K2... DEFAULT MAP`: a nested value, or DEFAULT",
    ),
    (
        "pick",
        1,
        None,
        "`pick MAP K...`: the map with only those keys",
    ),
    (
        "omit",
        1,
        None,
        "`omit MAP K...`: the map without those keys",
    ),
    ("pluck", 1, None, "`pluck K MAP...`: each map's value of K"),
    ("unset", 2, Some(2), "`unset MAP K`: the map without K"),
    (
        "merge",
        1,
        None,
        "`merge DST SRC...`: DST with the keys it lacks from each SRC",
    ),
    (
        "mergeOverwrite",
        1,
        None,
        "`mergeOverwrite DST SRC...`: DST with each SRC's keys",
    ),
    ("mustMerge", 1, None, "`merge`"),
    ("mustMergeOverwrite", 1, None, "`mergeOverwrite`"),
    ("deepCopy", 1, Some(1), "a copy of the value"),
    (
        "deepEqual",
        2,
        Some(2),
        "whether two values are deeply equal",
    ),
    (
        "kindOf",
        1,
        Some(1),
        "Go's kind of the value (`string`, `slice`, `map`, `float64`)",
    ),
    (
        "typeOf",
        1,
        Some(1),
        "Go's type of the value (`[]string`, `int64`)",
    ),
    ("kindIs", 2, Some(2), "`kindIs KIND V`"),
    ("typeIs", 2, Some(2), "`typeIs TYPE V`"),
    (
        "typeIsLike",
        2,
        Some(2),
        "`typeIsLike TYPE V`: TYPE or a pointer to it",
    ),
    ("toStrings", 1, Some(1), "a list of the items as strings"),
    (
        "int64",
        1,
        Some(1),
        "the value as an integer (0 if it is not one)",
    ),
    ("add1", 1, Some(1), "the value plus one"),
    ("ceil", 1, Some(1), "the least integer not below it"),
    ("floor", 1, Some(1), "the greatest integer not above it"),
    ("round", 2, Some(3), "`round X PLACES [HALF]`"),
    ("addf", 0, None, "sum of floats"),
    ("add1f", 1, Some(1), "the value plus one, as a float"),
    ("subf", 1, None, "`subf A B...`: A minus the Bs"),
    ("mulf", 1, None, "`mulf A B...`: the product"),
    ("divf", 1, None, "`divf A B...`: A divided by the Bs"),
    ("maxf", 1, None, "largest float"),
    ("minf", 1, None, "smallest float"),
    ("biggest", 1, None, "largest integer"),
    ("toDecimal", 1, Some(1), "an octal string's value"),
    ("all", 0, None, "whether no argument is empty"),
    ("any", 0, None, "whether some argument is not empty"),
    ("mustFirst", 1, Some(1), "first item of a list"),
    ("mustLast", 1, Some(1), "last item of a list"),
    ("mustRest", 1, Some(1), "a list without its first item"),
    ("mustInitial", 1, Some(1), "a list without its last item"),
    ("mustReverse", 1, Some(1), "a list reversed"),
    ("mustUniq", 1, Some(1), "a list without repeated items"),
    ("mustCompact", 1, Some(1), "a list without its empty items"),
    ("mustAppend", 2, Some(2), "`mustAppend LIST V`"),
    ("mustPush", 2, Some(2), "`mustPush LIST V`"),
    ("mustPrepend", 2, Some(2), "`mustPrepend LIST V`"),
    ("mustWithout", 1, None, "`mustWithout LIST V...`"),
    ("mustHas", 2, Some(2), "`mustHas V LIST`"),
    ("mustSlice", 1, Some(3), "`mustSlice LIST [FROM [TO]]`"),
    ("mustChunk", 2, Some(2), "`mustChunk N LIST`"),
    ("mustDeepCopy", 1, Some(1), "a copy of the value"),
];

/// The list a list function takes; Go's complaint for anything else.
fn items(name: &str, v: &V) -> Result<Vec<V>, String> {
    match v {
        V::List(l, _) => Ok(l.clone()),
        other => Err(format!(
            "error calling {name}: Cannot find {} on type {}",
            name.trim_start_matches("must").to_lowercase(),
            gofmt::type_name(other)
        )),
    }
}

/// spf13/cast's `ToFloat64`: strings parse, bools are 0/1, else 0.
pub fn float(v: &V) -> f64 {
    match v {
        V::Int(n, _) => *n as f64,
        V::Num(f) => *f,
        V::Bool(b) => f64::from(u8::from(*b)),
        V::Str(s) => s.trim().parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// spf13/cast's `ToInt64`: floats truncate, strings parse (base prefixes too), bools are 0/1.
pub fn int64(v: &V) -> i64 {
    match v {
        V::Int(n, _) => *n,
        V::Num(f) => f.trunc() as i64,
        V::Bool(b) => i64::from(*b),
        V::Str(s) => parse_int(s.trim()).unwrap_or(0),
        _ => 0,
    }
}

fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n = if let Some(h) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        i64::from_str_radix(b, 2).ok()?
    } else if let Some(o) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        i64::from_str_radix(o, 8).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    Some(if neg { -n } else { n })
}

/// Calls one of this module's functions; `None` when `name` is not one.
pub fn call(name: &str, args: &[V]) -> Option<Result<V, String>> {
    lists(name, args)
        .or_else(|| dicts(name, args))
        .or_else(|| types(name, args))
        .or_else(|| math(name, args))
}

fn lists(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let l = |i: usize| items(name, &arg(i));
    let r = (|| -> Result<V, String> {
        Ok(match name {
            "first" | "mustFirst" => l(0)?.first().cloned().unwrap_or(V::Null),
            "last" | "mustLast" => l(0)?.last().cloned().unwrap_or(V::Null),
            // Of an empty list, sprig returns nil (typed: `[]interface {}(nil)`).
            "rest" | "mustRest" => match l(0)? {
                v if v.is_empty() => V::nil_list(Elem::Any),
                v => V::list(v[1..].to_vec()),
            },
            "initial" | "mustInitial" => match l(0)? {
                v if v.is_empty() => V::nil_list(Elem::Any),
                v => V::list(v[..v.len() - 1].to_vec()),
            },
            "reverse" | "mustReverse" => V::list(l(0)?.into_iter().rev().collect()),
            "uniq" | "mustUniq" => {
                let mut out: Vec<V> = Vec::new();
                for x in l(0)? {
                    if !out.contains(&x) {
                        out.push(x);
                    }
                }
                V::list(out)
            }
            "compact" | "mustCompact" => V::list(l(0)?.into_iter().filter(V::truthy).collect()),
            "append" | "push" | "mustAppend" | "mustPush" => {
                let mut v = l(0)?;
                v.push(arg(1));
                V::list(v)
            }
            "prepend" | "mustPrepend" => {
                let mut v = vec![arg(1)];
                v.extend(l(0)?);
                V::list(v)
            }
            "concat" => {
                let mut out = Vec::new();
                for a in args {
                    match a {
                        V::List(x, _) => out.extend(x.iter().cloned()),
                        other => {
                            return Err(format!(
                                "error calling concat: Cannot concat type {} as list",
                                gofmt::type_name(other)
                            ));
                        }
                    }
                }
                V::list(out)
            }
            "without" | "mustWithout" => V::list(
                l(0)?
                    .into_iter()
                    .filter(|x| !args[1..].contains(x))
                    .collect(),
            ),
            "has" | "mustHas" => match arg(1) {
                V::Null => V::Bool(false),
                h => V::Bool(items(name, &h)?.contains(&arg(0))),
            },
            "chunk" | "mustChunk" => {
                let size = usize::try_from(int64(&arg(0))).unwrap_or(0).max(1);
                V::typed_list(
                    l(1)?.chunks(size).map(|c| V::list(c.to_vec())).collect(),
                    Elem::AnyList,
                )
            }
            "slice" | "mustSlice" => slice(name, args)?,
            "tuple" => V::list(args.to_vec()),
            _ => return Err(String::new()),
        })
    })();
    match r {
        Err(e) if e.is_empty() => sequences(name, args),
        r => Some(r),
    }
}

fn slice(name: &str, args: &[V]) -> Result<V, String> {
    let list = items(name, args.first().unwrap_or(&V::Null))?;
    let len = list.len() as i64;
    // sprig's `slice` (which replaces Go's built-in) returns nil for an empty list.
    if len == 0 {
        return Ok(V::Null);
    }
    let idx = |i: usize, default: i64| args.get(i).map(int64).unwrap_or(default);
    let (from, to) = (idx(1, 0), idx(2, len));
    if from < 0 || to > len || from > to {
        return Err(format!(
            "error calling {name}: runtime error: slice bounds out of range [{from}:{to}]"
        ));
    }
    // Go's reflect slicing keeps the slice's type: a `[]string` stays one.
    let elem = match args.first() {
        Some(V::List(_, slice)) => slice.elem,
        _ => Elem::Any,
    };
    Ok(V::typed_list(
        list[from as usize..to as usize].to_vec(),
        elem,
    ))
}

/// `until`, `untilStep` and `seq`: at most `MAX_ITEMS` numbers.
fn sequences(name: &str, args: &[V]) -> Option<Result<V, String>> {
    const MAX_ITEMS: i64 = 100_000;
    let n = |i: usize| args.get(i).map(int64).unwrap_or(0);
    let step_list = |from: i64, to: i64, step: i64| -> Result<Vec<i64>, String> {
        if step == 0 || (to - from) / step > MAX_ITEMS {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        let mut i = from;
        while (step > 0 && i < to) || (step < 0 && i > to) {
            out.push(i);
            i += step;
        }
        Ok(out)
    };
    let ints = |v: Vec<i64>| V::typed_list(v.into_iter().map(V::int).collect(), Elem::Int);
    Some(match name {
        "until" => {
            let to = n(0);
            step_list(0, to, if to < 0 { -1 } else { 1 }).map(ints)
        }
        "untilStep" => step_list(n(0), n(1), n(2)).map(ints),
        "seq" => {
            let (from, step, to) = match args.len() {
                0 => return Some(Ok(V::Str(String::new()))),
                1 => (1, if n(0) < 1 { -1 } else { 1 }, n(0)),
                2 => (n(0), if n(1) >= n(0) { 1 } else { -1 }, n(1)),
                _ => (n(0), n(1), n(2)),
            };
            let end = if step > 0 { to + 1 } else { to - 1 };
            step_list(from, end, step)
                .map(|v| V::Str(v.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")))
        }
        _ => return None,
    })
}

fn dicts(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let map = |v: V| match v {
        V::Map(m, _) => Ok(m),
        other => Err(format!(
            "error calling {name}: wrong type for value; expected map[string]interface {{}}; got {}",
            gofmt::type_name(&other)
        )),
    };
    let keys: Vec<String> = args.iter().skip(1).map(gofmt::value).collect();
    Some((|| -> Result<V, String> {
        Ok(match name {
            "dig" => dig(args)?,
            "pick" => V::map(
                map(arg(0))?
                    .into_iter()
                    .filter(|(k, _)| keys.contains(k))
                    .collect(),
            ),
            "omit" => V::map(
                map(arg(0))?
                    .into_iter()
                    .filter(|(k, _)| !keys.contains(k))
                    .collect(),
            ),
            "pluck" => {
                let key = gofmt::value(&arg(0));
                let mut out = Vec::new();
                // A nil argument is a nil map: it has no key.
                for d in args[1..].iter().filter(|d| !matches!(d, V::Null)) {
                    if let Some(v) = map(d.clone())?.remove(&key) {
                        out.push(v);
                    }
                }
                V::list(out)
            }
            "unset" => {
                let mut m = map(arg(0))?;
                m.remove(&gofmt::value(&arg(1)));
                V::map(m)
            }
            "merge" | "mergeOverwrite" | "mustMerge" | "mustMergeOverwrite" => {
                let mut dst = map(arg(0))?;
                for src in &args[1..] {
                    merge(&mut dst, map(src.clone())?, name.ends_with("Overwrite"));
                }
                V::map(dst)
            }
            "deepCopy" | "mustDeepCopy" if arg(0) == V::Null => {
                return Err(format!(
                    "error calling {name}: reflect: call of reflect.Value.Type on zero Value"
                ));
            }
            "deepCopy" | "mustDeepCopy" => arg(0),
            _ => return Err(String::new()),
        })
    })())
    .filter(|r| !matches!(r, Err(e) if e.is_empty()))
}

/// sprig's `dig`: keys, then the default, then the map; a step through a non-map fails.
fn dig(args: &[V]) -> Result<V, String> {
    let (dict, rest) = args
        .split_last()
        .ok_or("dig needs at least three arguments")?;
    let (default, keys) = rest
        .split_last()
        .ok_or("dig needs at least three arguments")?;
    let mut cur = match dict {
        V::Map(m, Elem::Any) => m.clone(),
        other => {
            return Err(format!(
                "error calling dig: interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                gofmt::type_name(other)
            ));
        }
    };
    for (i, k) in keys.iter().enumerate() {
        let V::Str(k) = k else {
            return Err(format!(
                "error calling dig: interface conversion: interface {{}} is {}, not string",
                gofmt::type_name(k)
            ));
        };
        let Some(step) = cur.remove(k) else {
            return Ok(default.clone());
        };
        if i + 1 == keys.len() {
            return Ok(step);
        }
        cur = match step {
            V::Map(m, Elem::Any) => m,
            other => {
                return Err(format!(
                    "error calling dig: interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    gofmt::type_name(&other)
                ));
            }
        };
    }
    Ok(default.clone())
}

/// mergo's merge: `dst` keeps its keys (or takes `src`'s with `overwrite`), nested maps merge.
fn merge(dst: &mut BTreeMap<String, V>, src: BTreeMap<String, V>, overwrite: bool) {
    for (k, v) in src {
        match (dst.get_mut(&k), v) {
            (Some(V::Map(d, _)), V::Map(s, _)) => merge(d, s, overwrite),
            (Some(existing), v) => {
                if overwrite || !existing.truthy() {
                    *existing = v;
                }
            }
            (None, v) => {
                dst.insert(k, v);
            }
        }
    }
}

/// Go's reflect kind of a value.
fn kind_of(v: &V) -> &'static str {
    match v {
        V::Null => "invalid",
        V::Bool(_) => "bool",
        V::Int(_, IntTy::Int64) => "int64",
        V::Int(_, IntTy::Uint64) => "uint64",
        V::Int(_, _) => "int",
        V::Num(_) => "float64",
        V::Str(_) => "string",
        V::List(_, _) => "slice",
        V::Map(_, _) => "map",
        V::Time(_) => "struct",
        V::Version(_) => "ptr",
        V::Unknown => "invalid",
    }
}

fn types(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let target = || gofmt::value(&arg(0));
    Some(Ok(match name {
        "kindOf" => V::Str(kind_of(&arg(0)).into()),
        "typeOf" => V::Str(gofmt::type_name(&arg(0)).into()),
        "kindIs" => V::Bool(target() == kind_of(&arg(1))),
        "typeIs" => V::Bool(target() == gofmt::type_name(&arg(1))),
        "typeIsLike" => {
            let t = gofmt::type_name(&arg(1));
            V::Bool(target() == t || format!("*{}", target()) == t)
        }
        "deepEqual" => V::Bool(arg(0) == arg(1)),
        "toStrings" => V::strings(match arg(0) {
            V::List(l, _) => l
                .iter()
                .filter(|x| !matches!(x, V::Null))
                .map(gofmt::value)
                .collect(),
            V::Null => vec![],
            v => vec![gofmt::value(&v)],
        }),
        "all" => V::Bool(args.iter().all(V::truthy)),
        "any" => V::Bool(args.iter().any(V::truthy)),
        _ => return None,
    }))
}

fn math(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let fold = |init: f64, f: fn(f64, f64) -> f64| args.iter().skip(1).map(float).fold(init, f);
    Some(Ok(match name {
        "int64" => V::int64(int64(&arg(0))),
        "add1" => V::int64(int64(&arg(0)).wrapping_add(1)),
        "add1f" => V::Num(float(&arg(0)) + 1.0),
        "ceil" => V::Num(float(&arg(0)).ceil()),
        "floor" => V::Num(float(&arg(0)).floor()),
        "round" => {
            let half = args.get(2).map(float).unwrap_or(0.5);
            let pow = 10f64.powi(int64(&arg(1)) as i32);
            let digit = pow * float(&arg(0));
            let r = if digit.fract() >= half {
                digit.ceil()
            } else {
                digit.floor()
            };
            V::Num(r / pow)
        }
        "addf" | "subf" | "mulf" | "divf" => return Some(decimal_fold(name, args)),
        "maxf" => V::Num(fold(float(&arg(0)), f64::max)),
        "minf" => V::Num(fold(float(&arg(0)), f64::min)),
        "biggest" => V::int64(args.iter().map(int64).max().unwrap_or(0)),
        "toDecimal" => V::int64(i64::from_str_radix(&gofmt::value(&arg(0)), 8).unwrap_or(0)),
        _ => return None,
    }))
}

/// sprig's float arithmetic: decimal, left to right (`divf A B C` is `(A / B) / C`).
fn decimal_fold(name: &str, args: &[V]) -> Result<V, String> {
    let operand = |v: &V| {
        Decimal::from_f64(float(v))
            .ok_or_else(|| format!("error calling {name}: cannot create a decimal from {v:?}"))
    };
    let (first, rest) = match args.split_first() {
        Some((first, rest)) => (operand(first)?, rest),
        None => return Ok(V::Num(0.0)),
    };
    let mut acc = first;
    for b in rest {
        let b = operand(b)?;
        acc = match name {
            "addf" => acc.add(&b),
            "subf" => acc.sub(&b),
            "mulf" => acc.mul(&b),
            // shopspring's decimal division by zero panics: an error here.
            _ => acc
                .div(&b)
                .ok_or_else(|| format!("error calling {name}: decimal division by 0"))?,
        };
    }
    Ok(V::Num(acc.to_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> V {
        V::Str(x.into())
    }

    fn map(pairs: &[(&str, V)]) -> V {
        V::map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn dig_walks_maps_and_falls_back_to_its_default() {
        let m = map(&[("a", map(&[("b", V::int(7))]))]);
        assert_eq!(dig(&[s("a"), s("b"), s("d"), m.clone()]), Ok(V::int(7)));
        assert_eq!(dig(&[s("a"), s("x"), s("d"), m.clone()]), Ok(s("d")));
        assert!(
            dig(&[s("a"), s("b"), s("c"), s("d"), m]).is_err(),
            "through an int"
        );
        assert!(dig(&[s("a"), s("d"), s("not a map")]).is_err());
    }

    #[test]
    fn merge_keeps_and_overwrite_replaces() {
        let dst = || {
            let V::Map(m, _) = map(&[("a", V::int(1)), ("n", map(&[("x", V::int(1))]))]) else {
                unreachable!()
            };
            m
        };
        let V::Map(src, _) = map(&[
            ("a", V::int(2)),
            ("b", V::int(3)),
            ("n", map(&[("y", V::int(2))])),
        ]) else {
            unreachable!()
        };
        let mut kept = dst();
        merge(&mut kept, src.clone(), false);
        assert_eq!(kept["a"], V::int(1));
        assert_eq!(kept["b"], V::int(3));
        let mut over = dst();
        merge(&mut over, src, true);
        assert_eq!(over["a"], V::int(2));
        assert_eq!(over["n"], map(&[("x", V::int(1)), ("y", V::int(2))]));
    }

    #[test]
    fn sequences_and_numbers_as_sprig() {
        let call1 = |n: &str, a: &[V]| call(n, a).unwrap().unwrap();
        assert_eq!(call1("seq", &[V::int(3)]), s("1 2 3"));
        assert_eq!(call1("seq", &[V::int(5), V::int(2)]), s("5 4 3 2"));
        assert_eq!(
            call1("untilStep", &[V::int(0), V::int(10), V::int(3)]),
            V::typed_list(vec![V::int(0), V::int(3), V::int(6), V::int(9)], Elem::Int)
        );
        assert_eq!(call1("round", &[V::Num(1.23456), V::int(2)]), V::Num(1.23));
        assert_eq!(call1("int64", &[s("0x10")]), V::int64(16));
        assert_eq!(call1("toDecimal", &[s("0777")]), V::int64(511));
        assert!(call("divf", &[V::int(1), V::int(0)]).unwrap().is_err());
    }

    #[test]
    fn types_are_gos() {
        let call1 = |n: &str, a: &[V]| call(n, a).unwrap().unwrap();
        assert_eq!(call1("typeOf", &[V::list(vec![])]), s("[]interface {}"));
        assert_eq!(call1("kindOf", &[V::Num(1.0)]), s("float64"));
        assert_eq!(call1("kindOf", &[V::Null]), s("invalid"));
        assert_eq!(call1("kindIs", &[s("map"), map(&[])]), V::Bool(true));
        assert!(
            call("first", &[V::int(1)]).unwrap().is_err(),
            "first of a number"
        );
        assert_eq!(call1("has", &[s("a"), V::Null]), V::Bool(false));
    }
}
