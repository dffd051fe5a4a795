//! The template functions: Go's built-ins and the Sprig functions app configs use.

use super::encoding;
use super::value::V;

/// Name, minimum and maximum argument count (`None`: any number), one-line description.
pub const FUNCTIONS: &[(&str, usize, Option<usize>, &str)] = &[
    ("and", 1, None, "the first empty argument, or the last"),
    ("b64dec", 1, Some(1), "base64-decodes a string"),
    ("b64enc", 1, Some(1), "base64-encodes a string"),
    (
        "call",
        1,
        None,
        "`call FUNC ARGS...`: Go's, but no template value is a function, so it always fails",
    ),
    (
        "contains",
        2,
        Some(2),
        "`contains SUBSTR S`: whether S contains SUBSTR",
    ),
    (
        "default",
        1,
        Some(2),
        "`default DEFAULT VALUE`: VALUE, or DEFAULT when VALUE is missing or empty",
    ),
    ("eq", 2, None, "`eq A B...`: whether A equals any of B..."),
    ("ge", 2, Some(2), "A >= B"),
    ("gt", 2, Some(2), "A > B"),
    ("hasPrefix", 2, Some(2), "`hasPrefix PREFIX S`"),
    ("hasSuffix", 2, Some(2), "`hasSuffix SUFFIX S`"),
    (
        "index",
        1,
        None,
        "`index COLLECTION KEY...`: map value or list element",
    ),
    (
        "join",
        2,
        Some(2),
        "`join SEP LIST`: the list's items joined by SEP",
    ),
    ("le", 2, Some(2), "A <= B"),
    ("len", 1, Some(1), "length of a string (bytes), list or map"),
    ("lower", 1, Some(1), "lower-cases a string"),
    ("lt", 2, Some(2), "A < B"),
    ("ne", 2, Some(2), "A != B"),
    (
        "not",
        1,
        Some(1),
        "boolean negation of the argument's truth",
    ),
    ("or", 1, None, "the first non-empty argument, or the last"),
    (
        "print",
        0,
        None,
        "the arguments printed, spaces between non-strings (Go's fmt.Sprint)",
    ),
    (
        "printf",
        1,
        None,
        "`printf FORMAT ARGS...`: Go's fmt.Sprintf, every verb and flag",
    ),
    (
        "println",
        0,
        None,
        "the arguments printed with spaces between them and a newline (Go's fmt.Sprintln)",
    ),
    (
        "quote",
        0,
        None,
        "each argument in double quotes, separated by spaces",
    ),
    ("replace", 3, Some(3), "`replace OLD NEW S`"),
    (
        "splitList",
        2,
        Some(2),
        "`splitList SEP S`: a list of S's parts",
    ),
    (
        "squote",
        0,
        None,
        "each argument in single quotes, separated by spaces",
    ),
    ("toJson", 1, Some(1), "the argument as JSON"),
    (
        "trim",
        1,
        Some(1),
        "removes leading and trailing white space",
    ),
    ("upper", 1, Some(1), "upper-cases a string"),
];

/// Every function: Go's built-ins and the ones above, then Sprig's.
pub fn all() -> impl Iterator<Item = &'static (&'static str, usize, Option<usize>, &'static str)> {
    FUNCTIONS
        .iter()
        .chain(super::sprig::FUNCTIONS.iter())
        .chain(super::sprig_text::FUNCTIONS.iter())
        .chain(super::sprig_lists::FUNCTIONS.iter())
        .chain(super::sprig_dates::FUNCTIONS.iter())
        .chain(super::sprig_crypto::FUNCTIONS.iter())
        .chain(super::sprig_certs::FUNCTIONS.iter())
}

pub fn lookup(name: &str) -> Option<&'static (&'static str, usize, Option<usize>, &'static str)> {
    all().find(|f| f.0 == name)
}

pub fn hint(name: &str) -> String {
    crate::check::did_you_mean(name, all().map(|f| f.0))
}

pub fn check_arity(name: &str, given: usize) -> Result<(), String> {
    let Some(&(_, min, max, _)) = lookup(name) else {
        return Err(format!("unknown function `{name}`"));
    };
    let ok = given >= min && max.is_none_or(|m| given <= m);
    if ok {
        return Ok(());
    }
    let want = match max {
        Some(m) if m == min => format!("{min}"),
        Some(m) => format!("{min} to {m}"),
        None => format!("at least {min}"),
    };
    Err(format!(
        "`{name}` takes {want} argument{}, got {given}",
        if max == Some(1) || (max.is_none() && min == 1) {
            ""
        } else {
            "s"
        }
    ))
}

fn s(v: &V) -> String {
    v.print()
}

/// Calls a function.
pub fn call(name: &str, args: Vec<V>) -> Result<V, String> {
    // Checked here too, not only at parse time: a function named as an argument of another
    // (`{{ print index }}`) is called with no arguments.
    check_arity(name, args.len())?;
    // Unknown values (lenient validation) make every function's result unknown, except the ones
    // that can tell without them.
    let unknown = args.iter().any(|a| matches!(a, V::Unknown));
    if unknown
        && !matches!(
            name,
            "default" | "and" | "or" | "print" | "quote" | "squote" | "list" | "dict" | "coalesce"
        )
    {
        return Ok(V::Unknown);
    }
    if let Some(v) = builtin(name, &args)? {
        return Ok(v);
    }
    if let Some(v) = strings(name, &args)? {
        return Ok(v);
    }
    let found = super::sprig::call(name, &args)
        .or_else(|| super::sprig_text::call(name, &args))
        .or_else(|| super::sprig_lists::call(name, &args))
        .or_else(|| super::sprig_dates::call(name, &args))
        .or_else(|| super::sprig_crypto::call(name, &args))
        .or_else(|| super::sprig_certs::call(name, &args));
    match found {
        Some(r) => r,
        None => Err(format!("unknown function `{name}`")),
    }
}

/// Go's own template functions: logic, comparisons, `len`, `index`, `print`, `printf`.
fn builtin(name: &str, args: &[V]) -> Result<Option<V>, String> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    Ok(Some(match name {
        "and" => args
            .iter()
            .find(|a| !a.truthy())
            .cloned()
            .unwrap_or_else(|| arg(args.len() - 1)),
        "or" => args
            .iter()
            .find(|a| a.truthy())
            .cloned()
            .unwrap_or_else(|| arg(args.len() - 1)),
        "not" => V::Bool(!arg(0).truthy()),
        // Data from JSON holds no function values, and neither do sprig's results.
        "call" => {
            return Err(match arg(0) {
                V::Null => "error calling call: call of nil".into(),
                v => format!(
                    "error calling call: non-function of type {}",
                    super::gofmt::type_name(&v)
                ),
            });
        }
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" => compare(name, args)?,
        "len" => match arg(0) {
            V::Str(x) => V::int(x.len() as i64),
            V::List(l, _) => V::int(l.len() as i64),
            V::Map(m, _) => V::int(m.len() as i64),
            other => {
                return Err(format!(
                    "error calling len: len of type {}",
                    super::gofmt::type_name(&other)
                ));
            }
        },
        "index" => {
            let mut cur = arg(0);
            for key in &args[1..] {
                cur = match (&cur, key) {
                    (V::Map(m, _), k) => m.get(&s(k)).cloned().unwrap_or(V::Null),
                    (V::List(l, _), V::Int(n, _)) => usize::try_from(*n)
                        .ok()
                        .and_then(|n| l.get(n))
                        .cloned()
                        .ok_or_else(|| format!("error calling index: index out of range: {n}"))?,
                    (V::Null, _) => V::Null,
                    (c, k) => {
                        return Err(format!(
                            "`index`: cannot index {} with {}",
                            c.kind(),
                            k.kind()
                        ));
                    }
                };
            }
            cur
        }
        "print" => V::Str(super::gofmt::sprint(args)),
        "println" => V::Str(super::gofmt::sprintln(args)),
        "printf" => match arg(0) {
            V::Str(f) => V::Str(super::gofmt::sprintf(&f, &args[1..])),
            other => {
                return Err(format!(
                    "wrong type for value; expected string; got {}",
                    super::gofmt::type_name(&other)
                ));
            }
        },
        _ => return Ok(None),
    }))
}

/// Go's comparisons: `eq A B...` (A equals any B), `ne`, and the orders, as Go compares.
fn compare(name: &str, args: &[V]) -> Result<V, String> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let failed = |e: String| format!("error calling {name}: {e}");
    Ok(V::Bool(match name {
        "eq" => {
            let mut any = false;
            for b in &args[1..] {
                if args[0].go_eq(b).map_err(failed)? {
                    any = true;
                    break;
                }
            }
            any
        }
        "ne" => !arg(0).go_eq(&arg(1)).map_err(failed)?,
        _ => {
            let ord = arg(0).go_order(&arg(1)).map_err(failed)?;
            match name {
                "lt" => ord.is_lt(),
                "le" => ord.is_le(),
                "gt" => ord.is_gt(),
                _ => ord.is_ge(),
            }
        }
    }))
}

/// `default` and Sprig's string and encoding functions that Ferry evaluates itself (quoting,
/// case, trimming, splitting and joining, base64, JSON).
fn strings(name: &str, args: &[V]) -> Result<Option<V>, String> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    Ok(Some(match name {
        "default" => {
            let value = arg(1);
            if args.len() < 2 || !value.truthy() {
                arg(0)
            } else {
                value
            }
        }
        "join" => match arg(1) {
            // sprig's strslice leaves nil items out.
            V::List(l, _) => V::Str(
                l.iter()
                    .filter(|x| !matches!(x, V::Null))
                    .map(V::print)
                    .collect::<Vec<_>>()
                    .join(&s(&arg(0))),
            ),
            V::Null => V::Str(String::new()),
            other => V::Str(other.print()),
        },
        "splitList" => V::strings(s(&arg(1)).split(&s(&arg(0))).map(str::to_string)),
        "upper" => V::Str(s(&arg(0)).to_uppercase()),
        "lower" => V::Str(s(&arg(0)).to_lowercase()),
        "trim" => V::Str(s(&arg(0)).trim().to_string()),
        // Sprig skips nil arguments.
        "quote" => V::Str(
            args.iter()
                .filter(|a| !matches!(a, V::Null))
                .map(|a| go_quote(&s(a)))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "squote" => V::Str(
            args.iter()
                .filter(|a| !matches!(a, V::Null))
                .map(|a| format!("'{}'", s(a)))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "b64enc" => V::Str(encoding::b64enc(s(&arg(0)).as_bytes())),
        // sprig returns the decoding error's text as the value, as Go words it.
        "b64dec" => V::Str(match encoding::b64dec(&s(&arg(0))) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(at) => format!("illegal base64 data at input byte {at}"),
        }),
        "toJson" => V::Str(super::sprig_text::go_json(&arg(0).to_json())),
        "replace" => V::Str(s(&arg(2)).replace(&s(&arg(0)), &s(&arg(1)))),
        "contains" => V::Bool(s(&arg(1)).contains(&s(&arg(0)))),
        "hasPrefix" => V::Bool(s(&arg(1)).starts_with(&s(&arg(0)))),
        "hasSuffix" => V::Bool(s(&arg(1)).ends_with(&s(&arg(0)))),
        _ => return Ok(None),
    }))
}

/// sprig's `quote` is Go's `%q`.
fn go_quote(x: &str) -> String {
    super::strconv::quote(x)
}
