//! Go's `fmt` over template values: how `{{ . }}`, `print`, `println` and `printf` write them.
//!
//! Written by hand for the same reason as the engine (no crate prints Rust values the way Go's
//! `fmt` prints Go's): a float64 prints in its shortest form, as `%e` once its exponent is below
//! -4 or at least 6 (`1.2345678901e+10`); a list `[a b]`, a map `map[a:x b:1]` with sorted keys,
//! nil `<nil>`. `printf` takes every verb, flag, width, precision, `*` and `[n]` index Go's
//! does, and writes Go's marks where Go does instead of failing: `%!d(string=a)` for a verb
//! that does not fit its value, `%!d(MISSING)`, `%!(EXTRA int=2)`, `%!(NOVERB)`.

use std::fmt::Write;

use super::gotime::{DAYS, MONTHS};
use super::strconv;
use super::value::{Elem, IntTy, Slice, V};

/// Go's type name of a value, as `%T` and the `%!verb(type=value)` marks print it.
pub fn type_name(v: &V) -> &'static str {
    match v {
        V::Null => "<nil>",
        V::Bool(_) => "bool",
        V::Int(_, IntTy::Int) => "int",
        V::Int(_, IntTy::Int64) => "int64",
        V::Int(_, IntTy::Uint64) => "uint64",
        V::Int(_, IntTy::Month) => "time.Month",
        V::Int(_, IntTy::Weekday) => "time.Weekday",
        V::Num(_) => "float64",
        V::Str(_) => "string",
        V::List(_, slice) => slice_type(slice.elem),
        V::Map(_, Elem::Str) => "map[string]string",
        V::Map(_, _) => "map[string]interface {}",
        V::Time(_) => "time.Time",
        V::Version(_) => "*semver.Version",
        V::Unknown => "<unknown>",
    }
}

fn slice_type(elem: Elem) -> &'static str {
    match elem {
        Elem::Any => "[]interface {}",
        Elem::Str => "[]string",
        Elem::Int => "[]int",
        Elem::AnyList => "[][]interface {}",
    }
}

/// The name a `time.Month` or `time.Weekday` prints as (its `String()`, with Go's mark for one
/// out of range); `None` for the other integers, which print as numbers.
fn int_name(n: i64, ty: IntTy) -> Option<String> {
    let (names, first, ty): (&[&str], i64, &str) = match ty {
        IntTy::Month => (&MONTHS, 1, "Month"),
        IntTy::Weekday => (&DAYS, 0, "Weekday"),
        _ => return None,
    };
    Some(
        match usize::try_from(n - first).ok().and_then(|i| names.get(i)) {
            Some(name) => (*name).to_string(),
            None => format!("%!{ty}({n})"),
        },
    )
}

/// `%v` of a float64 (strconv's shortest `'g'`).
pub fn float_v(f: f64) -> String {
    strconv::shortest(f)
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
        // `%#v` of an unsigned integer is hexadecimal; a named int is a Stringer (but not a
        // GoStringer: `%#v` prints its number).
        V::Int(i, IntTy::Uint64) if sharp => {
            let _ = write!(out, "{i:#x}");
        }
        V::Int(i, ty) => match int_name(*i, *ty) {
            Some(name) if !sharp => out.push_str(&name),
            _ => {
                let _ = write!(out, "{i}");
            }
        },
        V::Num(f) => out.push_str(&float_v(*f)),
        V::Str(s) if sharp => out.push_str(&quote(s)),
        V::Str(s) => out.push_str(s),
        V::Time(t) if sharp => out.push_str(&t.go_syntax()),
        V::Version(v) if sharp => out.push_str(&v.go_syntax()),
        // Both are Stringers: fmt prints their String().
        V::Time(t) => out.push_str(&t.go_string()),
        V::Version(v) => out.push_str(&v.go_string()),
        V::List(_, Slice { elem, nil: true }) if sharp => {
            let _ = write!(out, "{}(nil)", slice_type(*elem));
        }
        V::List(l, slice) => {
            if sharp {
                out.push_str(slice_type(slice.elem));
                out.push('{');
            } else {
                out.push('[');
            }
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(if sharp { ", " } else { " " });
                }
                write_v(out, x, sharp);
            }
            out.push(if sharp { '}' } else { ']' });
        }
        V::Map(m, _) => {
            if sharp {
                out.push_str(type_name(v));
                out.push('{');
            } else {
                out.push_str("map[");
            }
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

/// Go's `%q` of a string (`strconv.Quote`).
pub fn quote(s: &str) -> String {
    strconv::quote(s)
}

/// One verb's flags, width and precision.
#[derive(Default, Clone, Copy)]
struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    /// `%#v`: Go syntax (Go takes `#` off the flags for `v` and keeps it here).
    sharp_v: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// What fills a value up to the width when the `0` flag is given.
#[derive(Clone, Copy, PartialEq)]
enum Fill {
    /// Zeros on the left (Go pads strings and bools with zeros too).
    Zeros,
    /// Zeros after the sign.
    Number,
    /// Spaces whatever the flag (an integer with a precision).
    Spaces,
}

impl Spec {
    /// `s` padded to the width.
    fn pad(&self, s: String, fill: Fill) -> String {
        let Some(w) = self.width else { return s };
        let len = s.chars().count();
        if len >= w {
            return s;
        }
        let n = w - len;
        if self.minus {
            return s + &" ".repeat(n);
        }
        match fill {
            _ if !self.zero => " ".repeat(n) + &s,
            Fill::Spaces => " ".repeat(n) + &s,
            Fill::Zeros => "0".repeat(n) + &s,
            Fill::Number => {
                let (sign, digits) = match s.strip_prefix(['-', '+', ' ']) {
                    Some(rest) => (&s[..1], rest),
                    None => ("", s.as_str()),
                };
                format!("{sign}{}{digits}", "0".repeat(n))
            }
        }
    }

    /// Go's rule for `v`: `#` asks for Go syntax and `+` for field names (which these values
    /// lack), so neither stays a flag.
    fn for_verb(mut self, verb: char) -> Self {
        if verb == 'v' {
            self.sharp_v = self.sharp;
            self.sharp = false;
            self.plus = false;
        }
        self
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
        out.push_str(&one(verb, &spec.for_verb(verb), arg, 0));
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
            '-' => {
                spec.minus = true;
                spec.zero = false;
            }
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
            Some(V::Int(n, _)) if *n >= 0 => Some(*n as usize),
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

/// The mark Go writes for a verb its value does not take: the value printed with `%v` and the
/// verb's own flags, width and precision.
fn bad(verb: char, spec: &Spec, v: &V) -> String {
    match v {
        V::Null => format!("%!{verb}(<nil>)"),
        // Go's mark calls no String(): a named int shows its number.
        V::Int(n, _) => format!(
            "%!{verb}({}={})",
            type_name(v),
            one('v', spec, &V::int(*n), 0)
        ),
        v => format!("%!{verb}({}={})", type_name(v), one('v', spec, v, 0)),
    }
}

/// One verb applied to one value at a depth (each item of a list or map for the verbs that
/// take items; a nil item prints bare, as Go prints a nil interface inside a value).
fn one(verb: char, spec: &Spec, v: &V, depth: usize) -> String {
    match (verb, v) {
        ('T', v) => string('s', spec, type_name(v)).unwrap_or_default(),
        (_, V::Null) if depth > 0 && spec.sharp_v => "interface {}(nil)".into(),
        (_, V::Null) if depth > 0 => "<nil>".into(),
        ('v', V::Null) => spec.pad("<nil>".into(), Fill::Zeros),
        (_, V::Null) => bad(verb, spec, v),
        ('v', v) if spec.sharp_v && depth == 0 => spec.pad(sharp_v(v), Fill::Zeros),
        // A Stringer prints as its String() under the verbs that print strings; under the others
        // fmt prints the struct's fields (a version is a pointer to one: `&{...}`).
        (
            'd' | 'o' | 'O' | 'b' | 'c' | 'U' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | 't',
            V::Time(t),
        ) if !spec.sharp_v => time_fields(verb, spec, t),
        (
            'd' | 'o' | 'O' | 'b' | 'c' | 'U' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | 't',
            V::Version(ver),
        ) if !spec.sharp_v => {
            let (major, minor, patch, strs) = ver.fields();
            let mut parts: Vec<String> = [major, minor, patch]
                .iter()
                .map(|n| one(verb, spec, &V::Int(*n as i64, IntTy::Uint64), depth + 1))
                .collect();
            parts.extend(
                strs.iter()
                    .map(|s| one(verb, spec, &V::Str((*s).into()), depth + 1)),
            );
            format!("&{{{}}}", parts.join(" "))
        }
        (_, V::Time(_) | V::Version(_)) if !spec.sharp_v => {
            string(verb, spec, &value(v)).unwrap_or_else(|| bad(verb, spec, v))
        }
        (_, V::Time(_) | V::Version(_)) => sharp_v(v),
        // A named int is a Stringer under the verbs that print strings, a number under the rest.
        ('v' | 's' | 'x' | 'X' | 'q', V::Int(n, ty))
            if !spec.sharp_v && int_name(*n, *ty).is_some() =>
        {
            let name = int_name(*n, *ty).unwrap_or_default();
            string(verb, spec, &name).unwrap_or_else(|| bad(verb, spec, v))
        }
        (_, V::List(l, _)) => {
            let items: Vec<String> = l.iter().map(|x| one(verb, spec, x, depth + 1)).collect();
            format!("[{}]", items.join(" "))
        }
        (_, V::Map(m, _)) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, x)| {
                    let key = one(verb, spec, &V::Str(k.clone()), depth + 1);
                    format!("{key}:{}", one(verb, spec, x, depth + 1))
                })
                .collect();
            format!("map[{}]", items.join(" "))
        }
        (_, V::Bool(b)) => match verb {
            'v' | 't' => spec.pad(b.to_string(), Fill::Zeros),
            _ => bad(verb, spec, v),
        },
        (_, V::Int(n, _)) => int(verb, spec, *n).unwrap_or_else(|| bad(verb, spec, v)),
        (_, V::Num(f)) => float(verb, spec, *f).unwrap_or_else(|| bad(verb, spec, v)),
        (_, V::Str(s)) => string(verb, spec, s).unwrap_or_else(|| bad(verb, spec, v)),
        (_, V::Unknown) => "<unknown>".into(),
    }
}

/// A `time.Time` as fmt prints its struct: `{wall ext loc}`, each under the verb. `loc` is a
/// pointer: nil for UTC; any other location's address is the process's own (Ferry writes a fixed
/// one), and under a verb no pointer takes, Go dumps the location's tables where Ferry names it.
fn time_fields(verb: char, spec: &Spec, t: &super::gotime::GoTime) -> String {
    const LOCATION_ADDRESS: i64 = 0x00c0_0001_0000;
    let (wall, ext, nil_loc) = t.fields();
    let wall = match i64::try_from(wall) {
        Ok(w) => one(verb, spec, &V::Int(w, IntTy::Uint64), 1),
        // With a monotonic reading the top bit is set: too large for the integer printer.
        Err(_) if verb == 'd' => wall.to_string(),
        Err(_) => format!("%!{verb}(uint64={wall})"),
    };
    let ext = one(verb, spec, &V::Int(ext, IntTy::Int64), 1);
    let loc = match (verb, nil_loc) {
        ('b' | 'o' | 'd' | 'x' | 'X', true) => int(verb, spec, 0).unwrap_or_default(),
        ('b' | 'o' | 'd' | 'x' | 'X', false) => {
            int(verb, spec, LOCATION_ADDRESS).unwrap_or_default()
        }
        (_, true) => format!("%!{verb}(*time.Location=<nil>)"),
        (_, false) => format!(
            "%!{verb}(*time.Location=&{{{}}})",
            t.go_string().rsplit(' ').next().unwrap_or("Local")
        ),
    };
    format!("{{{wall} {ext} {loc}}}")
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
        'c' => return Some(spec.pad(char_of(n).to_string(), Fill::Zeros)),
        'q' => {
            let quoted = strconv::quote_rune(char_of(n), spec.plus);
            return Some(spec.pad(quoted, Fill::Zeros));
        }
        'U' => return Some(spec.pad(format!("U+{:04X}", n), Fill::Zeros)),
        _ => return None,
    };
    // Go prints nothing for a zero value at precision 0, but still pads.
    let digits = match spec.prec {
        Some(0) if abs == 0 => String::new(),
        Some(p) if digits.len() < p => "0".repeat(p - digits.len()) + &digits,
        _ => digits,
    };
    let fill = if spec.prec.is_some() {
        Fill::Spaces
    } else {
        Fill::Number
    };
    Some(spec.pad(format!("{sign}{digits}"), fill))
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
            None => strconv::shortest(f),
            Some(p) => strconv::g_form(f, p.max(1)),
        },
        'e' | 'E' => strconv::e_form(f, spec.prec.unwrap_or(6)),
        'f' | 'F' if f.is_finite() => format!("{:.*}", spec.prec.unwrap_or(6), f),
        'f' | 'F' => strconv::shortest(f),
        'b' => strconv::b_form(f),
        'x' | 'X' => strconv::x_form(f, spec.prec, verb == 'X'),
        _ => return None,
    };
    let body = if matches!(verb, 'E' | 'G') {
        body.to_uppercase()
    } else {
        body
    };
    let signed = if !body.starts_with('-') && !body.starts_with('+') {
        if spec.plus {
            format!("+{body}")
        } else if spec.space {
            format!(" {body}")
        } else {
            body
        }
    } else if body.starts_with('+') && !spec.plus {
        // `+Inf` keeps its sign only when asked for.
        body[1..].to_string()
    } else {
        body
    };
    let fill = if f.is_finite() {
        Fill::Number
    } else {
        Fill::Spaces
    };
    Some(spec.pad(signed, fill))
}

fn string(verb: char, spec: &Spec, s: &str) -> Option<String> {
    let cut: String = match spec.prec {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    };
    Some(match verb {
        'v' if spec.sharp_v => spec.pad(strconv::quote(&cut), Fill::Zeros),
        'v' | 's' => spec.pad(cut, Fill::Zeros),
        'q' if spec.sharp && !cut.contains('`') => spec.pad(format!("`{cut}`"), Fill::Zeros),
        'q' if spec.plus => spec.pad(strconv::quote_ascii(&cut), Fill::Zeros),
        'q' => spec.pad(strconv::quote(&cut), Fill::Zeros),
        'x' => spec.pad(hex_string(&cut, spec, false), Fill::Zeros),
        'X' => spec.pad(hex_string(&cut, spec, true), Fill::Zeros),
        _ => return None,
    })
}

/// `%x` of a string: two hex digits a byte; `#` prefixes `0x`, a space separates the bytes.
fn hex_string(s: &str, spec: &Spec, upper: bool) -> String {
    let bytes = s.as_bytes();
    let prefix = if upper { "0X" } else { "0x" };
    let mut out = String::new();
    for (i, b) in bytes.iter().enumerate() {
        if spec.space && i > 0 {
            out.push(' ');
        }
        if spec.sharp && (spec.space || i == 0) {
            out.push_str(prefix);
        }
        if upper {
            let _ = write!(out, "{b:02X}");
        } else {
            let _ = write!(out, "{b:02x}");
        }
    }
    out
}
