//! Go's `fmt` over template values: how `{{ . }}`, `print`, `println` and `printf` write them.
//!
//! Written by hand for the same reason as the engine (no crate prints Rust values the way Go's
//! `fmt` prints Go's): a float64 prints in its shortest form, as `%e` once its exponent is below
//! -4 or at least 6 (`1.2345678901e+10`); a list `[a b]`, a map `map[a:x b:1]` with sorted keys,
//! nil `<nil>`. `printf` takes every verb, flag, width, precision, `*` and `[n]` index Go's
//! does, and writes Go's marks where Go does instead of failing: `%!d(string=a)` for a verb
//! that does not fit its value, `%!d(MISSING)`, `%!(EXTRA int=2)`, `%!(NOVERB)`.

use std::fmt::Write;

use super::eval::V;

/// Go's type name of a value, as `%T` and the `%!verb(type=value)` marks print it.
pub fn type_name(v: &V) -> &'static str {
    match v {
        V::Null => "<nil>",
        V::Bool(_) => "bool",
        V::Int(_) => "int",
        V::Num(_) => "float64",
        V::Str(_) => "string",
        V::List(_) => "[]interface {}",
        V::Map(_) => "map[string]interface {}",
        V::Unknown => "<unknown>",
    }
}

/// `%v` of a float64: the shortest digits that read back the same, exponent form outside
/// 1e-4 <= |f| < 1e6 (strconv's `'g'` with precision -1).
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        format!(
            "{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    } else {
        format!("{f}")
    }
}

/// `%v` (and `print`'s form) of any value.
pub fn value(v: &V) -> String {
    let mut out = String::new();
    write_v(&mut out, v, false);
    out
}

fn write_v(out: &mut String, v: &V, sharp: bool) {
    match v {
        V::Null if sharp => out.push_str("interface {}(nil)"),
        V::Null => out.push_str("<nil>"),
        V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        V::Int(i) => {
            let _ = write!(out, "{i}");
        }
        V::Num(f) => out.push_str(&float_v(*f)),
        V::Str(s) if sharp => out.push_str(&quote(s)),
        V::Str(s) => out.push_str(s),
        V::List(l) => {
            out.push_str(if sharp { "[]interface {}{" } else { "[" });
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(if sharp { ", " } else { " " });
                }
                write_v(out, x, sharp);
            }
            out.push(if sharp { '}' } else { ']' });
        }
        V::Map(m) => {
            out.push_str(if sharp {
                "map[string]interface {}{"
            } else {
                "map["
            });
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(if sharp { ", " } else { " " });
                }
                if sharp {
                    out.push_str(&quote(k));
                } else {
                    out.push_str(k);
                }
                out.push(':');
                write_v(out, x, sharp);
            }
            out.push(if sharp { '}' } else { ']' });
        }
        V::Unknown => out.push_str("<unknown>"),
    }
}

/// Go's `fmt.Sprint`: a space between operands when neither side is a string.
pub fn sprint(args: &[V]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, V::Str(_)) && !matches!(args[i - 1], V::Str(_)) {
            out.push(' ');
        }
        write_v(&mut out, a, false);
    }
    out
}

/// Go's `fmt.Sprintln`: spaces between all operands, a newline at the end.
pub fn sprintln(args: &[V]) -> String {
    let parts: Vec<String> = args.iter().map(value).collect();
    format!("{}\n", parts.join(" "))
}

/// Go's `%q` of a string (`strconv.Quote`): printable characters as they are.
pub fn quote(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One verb's flags, width and precision.
#[derive(Default, Clone, Copy)]
struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

impl Spec {
    /// `s` padded to the width (with zeros after the sign when asked, for numbers).
    fn pad(&self, s: String, numeric: bool) -> String {
        let Some(w) = self.width else { return s };
        let len = s.chars().count();
        if len >= w {
            return s;
        }
        let fill = w - len;
        if self.minus {
            return s + &" ".repeat(fill);
        }
        if self.zero && numeric {
            let (sign, digits) = match s.strip_prefix(['-', '+', ' ']) {
                Some(rest) => (&s[..1], rest),
                None => ("", s.as_str()),
            };
            return format!("{sign}{}{digits}", "0".repeat(fill));
        }
        " ".repeat(fill) + &s
    }
}

/// Go's `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[V]) -> String {
    let mut out = String::new();
    let mut next = 0usize;
    let mut reordered = false;
    let chars: Vec<char> = format.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        let spec = parse_spec(&chars, &mut i, args, &mut next, &mut reordered, &mut out);
        let Some(&verb) = chars.get(i) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        i += 1;
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(next) else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        next += 1;
        out.push_str(&one(verb, &spec, arg));
    }
    if !reordered && next < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[next..]
            .iter()
            .map(|a| match a {
                V::Null => "<nil>".to_string(),
                a => format!("{}={}", type_name(a), value(a)),
            })
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

/// The flags, `[n]` index, width and precision after a `%`, up to the verb.
fn parse_spec(
    chars: &[char],
    i: &mut usize,
    args: &[V],
    next: &mut usize,
    reordered: &mut bool,
    out: &mut String,
) -> Spec {
    let mut spec = Spec::default();
    while let Some(&f) = chars.get(*i) {
        match f {
            '-' => spec.minus = true,
            '+' => spec.plus = true,
            '#' => spec.sharp = true,
            ' ' => spec.space = true,
            '0' => spec.zero = !spec.minus,
            _ => break,
        }
        *i += 1;
    }
    // `[n]` before a width, a precision or the verb picks the argument.
    let index = |i: &mut usize, next: &mut usize, reordered: &mut bool| {
        if chars.get(*i) != Some(&'[') {
            return;
        }
        if let Some(end) = chars[*i..].iter().position(|c| *c == ']') {
            let n: String = chars[*i + 1..*i + end].iter().collect();
            if let Ok(n) = n.parse::<usize>()
                && n >= 1
            {
                *next = n - 1;
                *reordered = true;
            }
            *i += end + 1;
        }
    };
    index(i, next, reordered);
    spec.width = number_or_star(chars, i, args, next, out, "WIDTH");
    if chars.get(*i) == Some(&'.') {
        *i += 1;
        index(i, next, reordered);
        spec.prec = Some(number_or_star(chars, i, args, next, out, "PREC").unwrap_or(0));
    }
    index(i, next, reordered);
    spec
}

/// A width or precision: digits, or `*` taking an int argument.
fn number_or_star(
    chars: &[char],
    i: &mut usize,
    args: &[V],
    next: &mut usize,
    out: &mut String,
    what: &str,
) -> Option<usize> {
    if chars.get(*i) == Some(&'*') {
        *i += 1;
        let n = match args.get(*next) {
            Some(V::Int(n)) if *n >= 0 => Some(*n as usize),
            _ => {
                let _ = write!(out, "%!(BAD{what})");
                None
            }
        };
        *next += 1;
        return n;
    }
    let start = *i;
    while chars.get(*i).is_some_and(char::is_ascii_digit) {
        *i += 1;
    }
    (*i > start).then(|| {
        chars[start..*i]
            .iter()
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    })
}

/// The mark Go writes for a verb its value does not take.
fn bad(verb: char, v: &V) -> String {
    match v {
        V::Null => format!("%!{verb}(<nil>)"),
        v => format!("%!{verb}({}={})", type_name(v), value(v)),
    }
}

/// One verb applied to one value (each item of a list or map for the verbs that take items).
fn one(verb: char, spec: &Spec, v: &V) -> String {
    match (verb, v) {
        ('T', v) => spec.pad(type_name(v).to_string(), false),
        ('v', V::Null) => spec.pad(
            if spec.sharp {
                "interface {}(nil)".into()
            } else {
                "<nil>".into()
            },
            false,
        ),
        ('v', v) if spec.sharp => spec.pad(sharp_v(v), false),
        (_, V::List(l)) if verb != 'T' => {
            let items: Vec<String> = l.iter().map(|x| one(verb, spec, x)).collect();
            format!("[{}]", items.join(" "))
        }
        (_, V::Map(m)) if verb != 'T' => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, x)| {
                    format!(
                        "{}:{}",
                        one(verb, spec, &V::Str(k.clone())),
                        one(verb, spec, x)
                    )
                })
                .collect();
            format!("map[{}]", items.join(" "))
        }
        (_, V::Bool(b)) => match verb {
            'v' | 't' => spec.pad(b.to_string(), false),
            _ => bad(verb, v),
        },
        (_, V::Int(n)) => int(verb, spec, *n).unwrap_or_else(|| bad(verb, v)),
        (_, V::Num(f)) => float(verb, spec, *f).unwrap_or_else(|| bad(verb, v)),
        (_, V::Str(s)) => string(verb, spec, s).unwrap_or_else(|| bad(verb, v)),
        (_, V::Null) => bad(verb, v),
        (_, V::Unknown) => "<unknown>".into(),
        _ => bad(verb, v),
    }
}

/// `%#v`: Go syntax.
fn sharp_v(v: &V) -> String {
    let mut out = String::new();
    write_v(&mut out, v, true);
    out
}

fn int(verb: char, spec: &Spec, n: i64) -> Option<String> {
    let sign = if n < 0 {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    let abs = n.unsigned_abs();
    let digits = match verb {
        'v' | 'd' => abs.to_string(),
        'b' => format!("{abs:b}"),
        'o' => format!("{}{abs:o}", if spec.sharp { "0" } else { "" }),
        'O' => format!("0o{abs:o}"),
        'x' => format!("{}{abs:x}", if spec.sharp { "0x" } else { "" }),
        'X' => format!("{}{abs:X}", if spec.sharp { "0X" } else { "" }),
        'c' => return Some(spec.pad(char_of(n).to_string(), false)),
        'q' => return Some(spec.pad(format!("'{}'", char_of(n)), false)),
        'U' => return Some(spec.pad(format!("U+{:04X}", n), false)),
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' | 's' | 't' => return None,
        _ => return None,
    };
    let digits = match spec.prec {
        Some(p) if digits.len() < p => "0".repeat(p - digits.len()) + &digits,
        _ => digits,
    };
    Some(spec.pad(format!("{sign}{digits}"), spec.prec.is_none()))
}

fn char_of(n: i64) -> char {
    u32::try_from(n)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{fffd}')
}

fn float(verb: char, spec: &Spec, f: f64) -> Option<String> {
    let body = match verb {
        'v' | 'g' | 'G' => match spec.prec {
            None => float_v(f),
            Some(p) => g_with_precision(f, p.max(1)),
        },
        'e' | 'E' => e_form(f, spec.prec.unwrap_or(6)),
        'f' | 'F' => format!("{:.*}", spec.prec.unwrap_or(6), f),
        _ => return None,
    };
    let body = if matches!(verb, 'E' | 'G') {
        body.to_uppercase()
    } else {
        body
    };
    let signed = if f >= 0.0 && !body.starts_with('-') && !body.starts_with('+') {
        if spec.plus {
            format!("+{body}")
        } else if spec.space {
            format!(" {body}")
        } else {
            body
        }
    } else {
        body
    };
    Some(spec.pad(signed, true))
}

/// `%.Ne`: N digits after the point, a two-digit exponent at least.
fn e_form(f: f64, prec: usize) -> String {
    let s = format!("{f:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// `%.Ng`: N significant digits, exponent form when the exponent is below -4 or at least N.
fn g_with_precision(f: f64, p: usize) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let s = format!("{:.*e}", p - 1, f);
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let trim = |m: &str| {
        if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            m.to_string()
        }
    };
    if e < -4 || e >= p as i32 {
        format!(
            "{}e{}{:02}",
            trim(m),
            if e < 0 { '-' } else { '+' },
            e.abs()
        )
    } else {
        let decimals = (p as i32 - 1 - e).max(0) as usize;
        trim(&format!("{f:.decimals$}"))
    }
}

fn string(verb: char, spec: &Spec, s: &str) -> Option<String> {
    let cut: String = match spec.prec {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    };
    Some(match verb {
        'v' | 's' => spec.pad(cut, false),
        'q' if spec.sharp && !cut.contains('`') => spec.pad(format!("`{cut}`"), false),
        'q' => spec.pad(quote(&cut), false),
        'x' => spec.pad(hex::encode(cut.as_bytes()), false),
        'X' => spec.pad(hex::encode_upper(cut.as_bytes()), false),
        _ => return None,
    })
}
