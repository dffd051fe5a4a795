//! The Sprig v3 functions app configs use (Nuon renders with all of Sprig plus `now`).
//!
//! Each follows Sprig's documented behaviour (masterminds.github.io/sprig): argument order (the
//! piped value comes last), Sprig's lenient conversions (`int "x"` is 0, `fromJson` of bad JSON is
//! nil), and Go's output. The integer functions (`int`, `add`, `div`, ...) truncate toward
//! zero as Sprig's int64 conversions do. Differences from Go: `keys` comes back
//! sorted; `toYaml` (Helm's, which Nuon lacks: validation warns) quotes with yaml.v2's rules for
//! common scalars.

use sha2::{Digest, Sha256};

use super::value::{Elem, V};
// Sprig's `toInt64` and `toFloat64` (spf13/cast): one definition, in `sprig_lists.rs`.
use super::sprig_lists::{float, int64 as int};

/// Name, minimum and maximum argument count (`None`: any number), one-line description.
pub const FUNCTIONS: &[(&str, usize, Option<usize>, &str)] = &[
    ("add", 1, None, "sum of integers"),
    (
        "atoi",
        1,
        Some(1),
        "a string as an integer (0 if it is not one)",
    ),
    ("coalesce", 1, None, "the first non-empty argument"),
    ("dict", 0, None, "`dict K1 V1 K2 V2...`: a map"),
    ("div", 2, Some(2), "integer division"),
    (
        "empty",
        1,
        Some(1),
        "whether the value is empty (nil, \"\", 0, false, [], {})",
    ),
    ("first", 1, Some(1), "first item of a list"),
    ("float64", 1, Some(1), "the value as a number"),
    ("fromJson", 1, Some(1), "parses JSON (nil when invalid)"),
    ("get", 2, Some(2), "`get MAP KEY`: the value, or \"\""),
    (
        "has",
        2,
        Some(2),
        "`has NEEDLE LIST`: whether LIST holds NEEDLE",
    ),
    ("hasKey", 2, Some(2), "`hasKey MAP KEY`"),
    (
        "indent",
        2,
        Some(2),
        "`indent N S`: every line of S indented by N spaces",
    ),
    (
        "int",
        1,
        Some(1),
        "the value as an integer (0 if it is not one)",
    ),
    ("keys", 1, None, "the keys of maps, as a list"),
    ("last", 1, Some(1), "last item of a list"),
    ("list", 0, None, "its arguments as a list"),
    ("max", 1, None, "largest integer"),
    ("min", 1, None, "smallest integer"),
    ("mod", 2, Some(2), "integer remainder"),
    ("mul", 1, None, "product of integers"),
    (
        "nindent",
        2,
        Some(2),
        "`nindent N S`: a newline, then S indented",
    ),
    (
        "regexMatch",
        2,
        Some(2),
        "`regexMatch REGEX S`: whether S matches",
    ),
    (
        "regexReplaceAll",
        3,
        Some(3),
        "`regexReplaceAll REGEX S REPL`: `$1` expands groups",
    ),
    ("fail", 1, Some(1), "`fail MSG`: stops rendering with MSG"),
    (
        "required",
        2,
        Some(2),
        "`required MSG V`: V, or an error with MSG when V is empty",
    ),
    (
        "semver",
        1,
        Some(1),
        "a version (`.Major`, `.Minor`, `.Patch`, `.Prerelease`)",
    ),
    (
        "semverCompare",
        2,
        Some(2),
        "`semverCompare CONSTRAINT VERSION`",
    ),
    (
        "set",
        3,
        Some(3),
        "`set MAP KEY VALUE`: the map with KEY set",
    ),
    ("sha256sum", 1, Some(1), "hex SHA-256 of a string"),
    (
        "sha512sum",
        1,
        Some(1),
        "hex SHA-512 of a string (sprig 3.3, Nuon's)",
    ),
    ("sortAlpha", 1, Some(1), "a list's items as strings, sorted"),
    (
        "split",
        2,
        Some(2),
        "`split SEP S`: a map `_0`, `_1`, ... of S's parts",
    ),
    ("sub", 2, Some(2), "difference of integers"),
    ("substr", 3, Some(3), "`substr START END S`"),
    (
        "ternary",
        3,
        Some(3),
        "`ternary A B COND`: A when COND is true, else B",
    ),
    ("title", 1, Some(1), "Title Cases Words"),
    ("toPrettyJson", 1, Some(1), "the value as indented JSON"),
    ("toString", 1, Some(1), "the value as a string"),
    ("toYaml", 1, Some(1), "the value as YAML"),
    (
        "trimAll",
        2,
        Some(2),
        "`trimAll CHARS S`: S without leading and trailing CHARS",
    ),
    ("trimall", 2, Some(2), "`trimAll`'s old name"),
    (
        "mustFromJson",
        1,
        Some(1),
        "parses JSON, failing when invalid",
    ),
    ("hello", 0, Some(0), "`Hello!`"),
    ("trimPrefix", 2, Some(2), "`trimPrefix PREFIX S`"),
    ("trimSuffix", 2, Some(2), "`trimSuffix SUFFIX S`"),
    ("uniq", 1, Some(1), "a list without repeated items"),
    ("values", 1, Some(1), "the values of a map, as a list"),
];

fn s(v: &V) -> String {
    v.print()
}

/// Calls a Sprig function; `None` when `name` is not one. Grouped as Sprig's documentation
/// groups them.
pub fn call(name: &str, args: &[V]) -> Option<Result<V, String>> {
    values(name, args)
        .or_else(|| strings(name, args))
        .or_else(|| collections(name, args))
        .or_else(|| numbers(name, args))
}

/// Tests, defaults and conversions: `required`, `empty`, `coalesce`, `ternary`, `toString`,
/// `fromJson`, `toPrettyJson`, `toYaml`.
fn values(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    Some(Ok(match name {
        "fail" => return Some(Err(s(&arg(0)))),
        "required" => {
            if matches!(arg(1), V::Null) || arg(1) == V::Str(String::new()) {
                return Some(Err(s(&arg(0))));
            }
            arg(1)
        }
        "empty" => V::Bool(!arg(0).truthy()),
        "coalesce" => args.iter().find(|a| a.truthy()).cloned().unwrap_or(V::Null),
        "ternary" => {
            if arg(2).truthy() {
                arg(0)
            } else {
                arg(1)
            }
        }
        "toString" => V::Str(match arg(0) {
            V::Null => "<nil>".into(),
            v => s(&v),
        }),
        "fromJson" => serde_json::from_str(&s(&arg(0)))
            .map(|v| V::from_json(&v))
            .unwrap_or(V::Null),
        "mustFromJson" => match serde_json::from_str(&s(&arg(0))) {
            Ok(v) => V::from_json(&v),
            Err(e) => return Some(Err(format!("error calling mustFromJson: {e}"))),
        },
        "toPrettyJson" => {
            V::Str(serde_json::to_string_pretty(&arg(0).to_json()).unwrap_or_default())
        }
        "toYaml" => V::Str(
            yaml(&arg(0).to_json(), 0)
                .trim_end_matches('\n')
                .to_string(),
        ),
        _ => return None,
    }))
}

/// String functions: indentation, trimming, splitting, `substr`, `title`, regular expressions,
/// `sha256sum`.
fn strings(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    Some(Ok(match name {
        "indent" | "nindent" => {
            let pad = " ".repeat(int(&arg(0)).clamp(0, 1024) as usize);
            let body = format!("{pad}{}", s(&arg(1)).replace('\n', &format!("\n{pad}")));
            V::Str(if name == "nindent" {
                format!("\n{body}")
            } else {
                body
            })
        }
        "hello" => V::Str("Hello!".into()),
        "trimAll" | "trimall" => {
            let cut = s(&arg(0));
            V::Str(s(&arg(1)).trim_matches(|c| cut.contains(c)).to_string())
        }
        "trimPrefix" => {
            let (p, x) = (s(&arg(0)), s(&arg(1)));
            V::Str(x.strip_prefix(p.as_str()).unwrap_or(&x).to_string())
        }
        "trimSuffix" => {
            let (p, x) = (s(&arg(0)), s(&arg(1)));
            V::Str(x.strip_suffix(p.as_str()).unwrap_or(&x).to_string())
        }
        "split" => V::Map(
            s(&arg(1))
                .split(s(&arg(0)).as_str())
                .enumerate()
                .map(|(i, p)| (format!("_{i}"), V::Str(p.to_string())))
                .collect(),
            Elem::Str,
        ),
        "substr" => match substr(int(&arg(0)), int(&arg(1)), &s(&arg(2))) {
            Ok(x) => V::Str(x),
            Err(e) => return Some(Err(format!("error calling substr: {e}"))),
        },
        "title" => V::Str(title(&s(&arg(0)))),
        "regexMatch" => {
            V::Bool(regex::Regex::new(&s(&arg(0))).is_ok_and(|r| r.is_match(&s(&arg(1)))))
        }
        "regexReplaceAll" => match regex::Regex::new(&s(&arg(0))) {
            Ok(r) => V::Str(r.replace_all(&s(&arg(1)), s(&arg(2)).as_str()).into_owned()),
            Err(e) => return Some(Err(format!("`regexReplaceAll`: {e}"))),
        },
        "sha256sum" => V::Str(hex::encode(Sha256::digest(s(&arg(0)).as_bytes()))),
        "sha512sum" => V::Str(hex::encode(sha2::Sha512::digest(s(&arg(0)).as_bytes()))),
        _ => return None,
    }))
}

/// Lists and maps: `list`, `dict`, `get`, `set`, `hasKey`, `keys`, `values`, `first`, `last`,
/// `has`, `uniq`, `sortAlpha`.
fn collections(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    Some(Ok(match name {
        "list" => V::list(args.to_vec()),
        "dict" => V::map(
            args.chunks(2)
                .map(|kv| {
                    (
                        s(&kv[0]),
                        kv.get(1).cloned().unwrap_or(V::Str(String::new())),
                    )
                })
                .collect(),
        ),
        "get" => match arg(0) {
            V::Map(m, _) => m.get(&s(&arg(1))).cloned().unwrap_or(V::Str(String::new())),
            _ => V::Str(String::new()),
        },
        "set" => match arg(0) {
            V::Map(mut m, _) => {
                m.insert(s(&arg(1)), arg(2));
                V::map(m)
            }
            other => return Some(Err(format!("`set` needs a map, got {}", other.kind()))),
        },
        "hasKey" => V::Bool(matches!(arg(0), V::Map(m, _) if m.contains_key(&s(&arg(1))))),
        "keys" => V::strings(args.iter().flat_map(|a| match a {
            V::Map(m, _) => m.keys().cloned().collect(),
            _ => vec![],
        })),
        "values" => match arg(0) {
            V::Map(m, _) => V::list(m.into_values().collect()),
            _ => V::list(vec![]),
        },
        "sortAlpha" => {
            let mut items: Vec<String> = match arg(0) {
                // sprig's strslice leaves nil items out.
                V::List(l, _) => l.iter().filter(|x| !matches!(x, V::Null)).map(s).collect(),
                other => vec![s(&other)],
            };
            items.sort();
            V::strings(items)
        }
        _ => return None,
    }))
}

/// Numbers and versions: conversions, arithmetic, `max`/`min`, `semverCompare`.
fn numbers(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    Some(Ok(match name {
        "int" | "atoi" => V::int(if name == "atoi" {
            s(&arg(0)).parse::<i64>().unwrap_or(0)
        } else {
            int(&arg(0))
        }),
        "float64" => V::Num(float(&arg(0))),
        "add" => V::int64(args.iter().map(int).fold(0i64, i64::wrapping_add)),
        "mul" => V::int64(args.iter().map(int).fold(1i64, i64::wrapping_mul)),
        "sub" => V::int64(int(&arg(0)).wrapping_sub(int(&arg(1)))),
        "div" | "mod" => {
            let (a, b) = (int(&arg(0)), int(&arg(1)));
            if b == 0 {
                return Some(Err(format!("`{name}`: integer divide by zero")));
            }
            V::int64(if name == "div" {
                a.wrapping_div(b)
            } else {
                a.wrapping_rem(b)
            })
        }
        "max" => V::int64(args.iter().map(int).max().unwrap_or(0)),
        "min" => V::int64(args.iter().map(int).min().unwrap_or(0)),
        "semver" => match super::goversion::GoVersion::parse(&s(&arg(0))) {
            Ok(v) => V::Version(Box::new(v)),
            Err(e) => return Some(Err(format!("error calling semver: {e}"))),
        },
        "semverCompare" => match semver_compare(&s(&arg(0)), &s(&arg(1))) {
            Ok(b) => V::Bool(b),
            Err(e) => return Some(Err(format!("`semverCompare`: {e}"))),
        },
        _ => return None,
    }))
}

/// Sprig's `substr`: byte offsets; a negative start means from 0, a negative or too large end
/// to the end, and any other range outside the string is Go's slice panic, as sprig has it.
fn substr(start: i64, end: i64, x: &str) -> Result<String, String> {
    let len = x.len() as i64;
    let (from, to) = if start < 0 {
        (0, end)
    } else if end < 0 || end > len {
        (start, len)
    } else {
        (start, end)
    };
    if from > to || to > len || to < 0 {
        let range = if start < 0 {
            format!("[:{to}] with length {len}")
        } else {
            format!("[{from}:{to}]")
        };
        return Err(format!("runtime error: slice bounds out of range {range}"));
    }
    let bytes = &x.as_bytes()[from as usize..to as usize];
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Go's `strings.Title`: the first letter of every word upper-cased.
fn title(x: &str) -> String {
    let mut out = String::with_capacity(x.len());
    let mut prev_letter = false;
    for c in x.chars() {
        if !prev_letter && c.is_alphabetic() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_letter = c.is_alphanumeric() || c == '_' || c == '\'';
    }
    out
}

/// Masterminds' constraints (`>= 1.2, < 2`, `^1.2`, `~1.2.3`, `1.2.x`, `a || b`) against a version
/// (`v` prefix and missing minor or patch allowed).
fn semver_compare(constraint: &str, version: &str) -> Result<bool, String> {
    let v = version.trim().trim_start_matches('v');
    // `1.2` and `1` are versions to Masterminds: pad the missing parts.
    let (core, tail) = v.split_at(v.find(['-', '+']).unwrap_or(v.len()));
    let padded = format!(
        "{core}{}{tail}",
        ".0".repeat(2usize.saturating_sub(core.matches('.').count()))
    );
    let version =
        semver::Version::parse(&padded).map_err(|e| format!("version `{version}`: {e}"))?;
    for alt in constraint.split("||") {
        // Masterminds separates comparators by commas or spaces; the semver crate by commas.
        let mut comparators: Vec<String> = Vec::new();
        for tok in alt.replace(',', " ").split_whitespace() {
            match comparators.last_mut() {
                Some(prev) if prev.chars().all(|c| "<>=~^!".contains(c)) => prev.push_str(tok),
                _ => comparators.push(tok.trim_start_matches('v').to_string()),
            }
        }
        let req = semver::VersionReq::parse(&comparators.join(", "))
            .map_err(|e| format!("constraint `{constraint}`: {e}"))?;
        if req.matches(&version) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// YAML as sigs.k8s.io/yaml (yaml.v2) writes it: block style, list items at the parent's indent,
/// strings single-quoted when they would read as something else.
fn yaml(v: &serde_json::Value, indent: usize) -> String {
    use serde_json::Value;
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if m.is_empty() => "{}\n".into(),
        Value::Array(a) if a.is_empty() => "[]\n".into(),
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| match x {
                Value::Object(o) if !o.is_empty() => {
                    format!("{pad}{}:\n{}", scalar(k), yaml(x, indent + 2))
                }
                Value::Array(a) if !a.is_empty() => {
                    format!("{pad}{}:\n{}", scalar(k), yaml(x, indent))
                }
                _ => format!("{pad}{}: {}", scalar(k), yaml(x, indent + 2)),
            })
            .collect(),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::Object(o) if !o.is_empty() => {
                    let body = yaml(x, indent + 2);
                    format!("{pad}- {}", &body[indent + 2..])
                }
                _ => format!("{pad}- {}", yaml(x, indent + 2)),
            })
            .collect(),
        Value::String(x) if x.contains('\n') => {
            let inner = " ".repeat(indent);
            let chomp = if x.ends_with('\n') { "" } else { "-" };
            let body: String = x
                .trim_end_matches('\n')
                .lines()
                .map(|l| format!("{inner}{l}\n"))
                .collect();
            format!("|{chomp}\n{body}")
        }
        other => format!("{}\n", scalar_value(other)),
    }
}

fn scalar_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(x) => scalar(x),
        serde_json::Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// A string scalar, quoted (yaml.v2's single quotes) when plain would read differently.
fn scalar(x: &str) -> String {
    let special = x.is_empty()
        || x.parse::<f64>().is_ok()
        || matches!(
            x.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "~"
        )
        || x.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` ".contains(c))
        || x.ends_with(' ')
        || x.contains(": ")
        || x.contains(" #");
    if special {
        format!("'{}'", x.replace('\'', "''"))
    } else {
        x.to_string()
    }
}
