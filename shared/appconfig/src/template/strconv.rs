//! Go's `strconv` where templates print through it: float64 in each of `fmt`'s forms, and quoting.
//!
//! Rust's own float formatting gives the right digits (both print the shortest digits that read
//! back the same, and round exactly at a fixed precision); what differs is the form around them
//! (Go's two-digit exponent, `%g`'s switch to exponent form) and the binary forms Rust lacks
//! (`%b`: `4503599627370496p-52`, `%x`: `0x1.8p+00`), which are built here from the float's bits
//! as Go's `strconv.FormatFloat` builds them.

use std::fmt::Write;

/// `%v` and `%g` of a float64: the shortest digits that read back the same, in exponent form
/// outside 1e-4 <= |f| < 1e6 (strconv's `'g'` with precision -1).
pub fn shortest(f: f64) -> String {
    if let Some(special) = special(f) {
        return special.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        with_exponent(mantissa, exp)
    } else {
        format!("{f}")
    }
}

/// `NaN` and the infinities as Go prints them.
fn special(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" })
    } else {
        None
    }
}

fn with_exponent(mantissa: &str, exp: i32) -> String {
    format!(
        "{mantissa}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

/// `%.Ne`: N digits after the point, a two-digit exponent at least.
pub fn e_form(f: f64, prec: usize) -> String {
    if let Some(special) = special(f) {
        return special.into();
    }
    let s = format!("{f:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    with_exponent(m, e.parse().unwrap_or(0))
}

/// `%.Ng`: N significant digits, exponent form when the exponent is below -4 or at least N.
pub fn g_form(f: f64, p: usize) -> String {
    if let Some(special) = special(f) {
        return special.into();
    }
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
        with_exponent(&trim(m), e)
    } else {
        let decimals = (p as i32 - 1 - e).max(0) as usize;
        trim(&format!("{f:.decimals$}"))
    }
}

/// A float64's sign, integer mantissa (with the implicit bit) and binary exponent.
fn parts(f: f64) -> (bool, u64, i32) {
    const MANT_BITS: u32 = 52;
    let bits = f.to_bits();
    let neg = bits >> 63 == 1;
    let mut exp = ((bits >> MANT_BITS) & 0x7ff) as i32;
    let mut mant = bits & ((1 << MANT_BITS) - 1);
    if exp == 0 {
        exp += 1; // denormal
    } else {
        mant |= 1 << MANT_BITS;
    }
    (neg, mant, exp - 1023)
}

/// `%b`: the mantissa as a decimal integer and a power of two (`4503599627370496p-52`).
pub fn b_form(f: f64) -> String {
    if let Some(special) = special(f) {
        return special.into();
    }
    let (neg, mant, exp) = parts(f);
    let exp = exp - 52;
    format!(
        "{}{mant}p{}{exp}",
        if neg { "-" } else { "" },
        if exp >= 0 { "+" } else { "" }
    )
}

/// `%x`/`%X`: hexadecimal mantissa with a leading 1, a power of two (`0x1.8p+00`); with a
/// precision, the fraction is rounded (half to even) to that many hex digits.
pub fn x_form(f: f64, prec: Option<usize>, upper: bool) -> String {
    if let Some(special) = special(f) {
        return special.into();
    }
    let (neg, mut mant, mut exp) = parts(f);
    if mant == 0 {
        exp = 0;
    }
    // The leading 1 (if any) goes to bit 60, leaving 15 hex digits under it.
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if let Some(p) = prec.filter(|p| *p < 15) {
        let shift = (p * 4) as u32;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(if upper { "0X" } else { "0x" });
    out.push(if (mant >> 60) & 1 == 1 { '1' } else { '0' });
    mant <<= 4;
    let fraction_digits = match prec {
        None if mant != 0 => Some(usize::MAX),
        Some(p) if p > 0 => Some(p),
        _ => None,
    };
    if let Some(n) = fraction_digits {
        out.push('.');
        let mut i = 0;
        while i < n && (n != usize::MAX || mant != 0) {
            out.push(digits[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
            i += 1;
        }
    }
    out.push(if upper { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(out, "{:02}", exp.abs());
    out
}

/// Go's `strconv.Quote`: printable characters as they are, the rest escaped.
pub fn quote(s: &str) -> String {
    quoted(s, false)
}

/// Go's `strconv.QuoteToASCII` (`%+q`): everything outside ASCII escaped as well.
pub fn quote_ascii(s: &str) -> String {
    quoted(s, true)
}

fn quoted(s: &str, ascii: bool) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        escape_into(&mut out, c, '"', ascii);
    }
    out.push('"');
    out
}

/// Go's `strconv.QuoteRune` (`%q` of an integer): `'a'`, `'\x03'`.
pub fn quote_rune(c: char, ascii: bool) -> String {
    let mut out = String::from('\'');
    escape_into(&mut out, c, '\'', ascii);
    out.push('\'');
    out
}

/// One character as Go writes it between `quote`s.
fn escape_into(out: &mut String, c: char, quote: char, ascii: bool) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    let printable = !c.is_control() && (c == ' ' || !c.is_whitespace());
    if printable && (!ascii || c.is_ascii()) {
        out.push(c);
        return;
    }
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x0b' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_in_go_forms() {
        assert_eq!(shortest(1.2345678901e10), "1.2345678901e+10");
        assert_eq!(shortest(0.5), "0.5");
        assert_eq!(shortest(1e-5), "1e-05");
        assert_eq!(e_form(1.5, 2), "1.50e+00");
        assert_eq!(g_form(1234.5, 2), "1.2e+03");
        assert_eq!(b_form(1.5), "6755399441055744p-52");
        assert_eq!(b_form(0.0), "0p-1074");
        assert_eq!(x_form(5432.0, None, false), "0x1.538p+12");
        assert_eq!(x_form(-3.0, None, true), "-0X1.8P+01");
        assert_eq!(x_form(0.0, None, false), "0x0p+00");
        assert_eq!(x_form(1.0, Some(2), false), "0x1.00p+00");
    }

    #[test]
    fn quotes_as_strconv_does() {
        assert_eq!(quote("a\"b\u{1}"), "\"a\\\"b\\x01\"");
        assert_eq!(quote_rune('\u{3}', false), "'\\x03'");
        assert_eq!(quote_rune('\'', false), "'\\''");
        assert_eq!(quote_ascii("é"), "\"\\u00e9\"");
    }
}
