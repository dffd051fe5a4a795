//! Go's `html/template` escaping, for the app readme: each action's output escaped for its
//! context (`htmlctx.rs` finds the context), and the template's own text cleaned as Go cleans it
//! (comments dropped, a `<` that starts no tag written `&lt;`).
//!
//! What an action prints, by context:
//! * HTML text: `<`, `>`, `&`, quotes and `+` as entities (a nil prints nothing);
//! * an attribute value: the same, and in an unquoted value spaces, `=` and backquotes too;
//! * a URL (`href`, `src`, `action`, ...): only `http`, `https`, `mailto` or relative URLs pass
//!   (any other scheme becomes `#ZgotmplZ`), then percent-encoding (all of it in a query);
//! * a script or an `on*` attribute: the value as JSON (`"a\u003cb"`, ` 5432 `), in a JS string
//!   or template literal the string's escapes, in a regexp its escapes;
//! * CSS (`<style>`, `style=`): a value that could break out becomes `ZgotmplZ`; in a CSS string
//!   CSS escapes;
//! * a `<textarea>` or `<title>`: entities; a comment: nothing.
//!
//! Written by hand after Go 1.23's `html/template` (`escape.go`, `html.go`, `js.go`, `css.go`,
//! `url.go`): no crate does contextual escaping as Go does, and the readme must render as Nuon's.
//! Go works the contexts out before it runs the template, over every branch, and refuses a
//! template whose branches end in different contexts; Ferry follows the context along the path
//! the render takes, which gives the same output for every template Go accepts.

use super::htmlctx::{
    self, Attr, Content, Context, Delim, Element, JsCtx, State, UrlPart, attr_start, is_css_nmchar,
    is_js_ident_part,
};
use super::sprig_text::go_json;
use super::value::{IntTy, V};

/// What html/template writes for a value no filter lets through.
const FAILSAFE: &str = "ZgotmplZ";

/// One of html/template's escapers, or Go's own `html` or `urlquery` where the template called
/// one at the end of its pipeline and it stands in for its equivalent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Esc {
    Attr,
    Comment,
    Css,
    CssValue,
    HtmlName,
    Html,
    JsRegexp,
    JsStr,
    JsTmplLit,
    JsVal,
    NoSpace,
    Rcdata,
    Srcset,
    UrlEscape,
    UrlFilter,
    UrlNormalize,
    /// Go's `html` built-in.
    BuiltinHtml,
    /// Go's `urlquery` built-in.
    BuiltinUrlquery,
}

impl Esc {
    /// The built-in the escaper is equivalent to (and which, ending a pipeline, replaces it).
    pub fn equivalent(self) -> Option<&'static str> {
        match self {
            Esc::Attr | Esc::Html | Esc::Rcdata => Some("html"),
            Esc::UrlEscape | Esc::UrlNormalize => Some("urlquery"),
            _ => None,
        }
    }

    /// Whether `next` adds nothing after `self` (Go's `redundantFuncs`).
    fn makes_redundant(self, next: Esc) -> bool {
        matches!(
            (self, next),
            (Esc::Comment, Esc::Attr | Esc::Html)
                | (
                    Esc::Css | Esc::JsRegexp | Esc::JsStr | Esc::JsTmplLit,
                    Esc::Attr
                )
                | (Esc::UrlEscape, Esc::UrlNormalize)
        )
    }
}

/// Go's `nudge`: an action right after a tag's name or an attribute's `=` is in what comes next.
pub fn nudged(mut c: Context) -> Context {
    match c.state {
        State::Tag => c.state = State::AttrName,
        State::BeforeValue => {
            c.state = attr_start(c.attr);
            c.delim = Delim::SpaceOrTagEnd;
            c.attr = Attr::None;
        }
        State::AfterName => {
            c.state = State::AttrName;
            c.attr = Attr::None;
        }
        _ => {}
    }
    c
}

/// The escapers an action printing in `c` goes through, and the context after it.
pub fn action(c: Context) -> Result<(Context, Vec<Esc>), String> {
    let mut c = nudged(c);
    let mut s = Vec::with_capacity(3);
    match c.state {
        State::Url
        | State::CssDqStr
        | State::CssSqStr
        | State::CssDqUrl
        | State::CssSqUrl
        | State::CssUrl => {
            let css_str = matches!(c.state, State::CssDqStr | State::CssSqStr);
            match c.url_part {
                UrlPart::None | UrlPart::PreQuery => {
                    if c.url_part == UrlPart::None {
                        s.push(Esc::UrlFilter);
                    }
                    s.push(if css_str { Esc::Css } else { Esc::UrlNormalize });
                }
                UrlPart::QueryOrFrag => s.push(Esc::UrlEscape),
                UrlPart::Unknown => {
                    return Err("an action appears in an ambiguous context within a URL".into());
                }
            }
        }
        State::Js => {
            s.push(Esc::JsVal);
            c.js_ctx = JsCtx::DivOp;
        }
        State::JsDqStr | State::JsSqStr => s.push(Esc::JsStr),
        State::JsTmplLit => s.push(Esc::JsTmplLit),
        State::JsRegexp => s.push(Esc::JsRegexp),
        State::Css => s.push(Esc::CssValue),
        State::Text => s.push(Esc::Html),
        State::Rcdata => s.push(Esc::Rcdata),
        State::Attr => {}
        State::AttrName | State::Tag => {
            c.state = State::AttrName;
            s.push(Esc::HtmlName);
        }
        State::Srcset => s.push(Esc::Srcset),
        st if st.is_comment() => s.push(Esc::Comment),
        st => return Err(format!("an action in an unexpected context ({st:?})")),
    }
    match c.delim {
        Delim::None => {}
        Delim::SpaceOrTagEnd => s.push(Esc::NoSpace),
        _ => s.push(Esc::Attr),
    }
    Ok((c, s))
}

/// The escapers without those the one before makes redundant (Go's `appendCmd`).
pub fn dedup(escs: Vec<Esc>) -> Vec<Esc> {
    let mut out: Vec<Esc> = Vec::with_capacity(escs.len());
    for e in escs {
        if !out.last().is_some_and(|last| last.makes_redundant(e)) {
            out.push(e);
        }
    }
    out
}

/// Applies the escapers in turn: the first to the value, each next to the text before it.
pub fn apply(escs: &[Esc], v: &V) -> String {
    let mut text: Option<String> = None;
    for e in escs {
        text = Some(match &text {
            None => escape(*e, v),
            Some(t) => escape(*e, &V::Str(t.clone())),
        });
    }
    text.unwrap_or_else(|| stringify(v))
}

/// html/template's `stringify`: a string as it is, nil as nothing, anything else as `%v` prints.
fn stringify(v: &V) -> String {
    match v {
        V::Null => String::new(),
        V::Str(s) => s.clone(),
        v => v.print(),
    }
}

fn escape(e: Esc, v: &V) -> String {
    match e {
        Esc::JsVal => js_val(v),
        Esc::BuiltinHtml => builtin("html", v),
        Esc::BuiltinUrlquery => builtin("urlquery", v),
        e => escape_str(e, &stringify(v)),
    }
}

fn escape_str(e: Esc, s: &str) -> String {
    match e {
        Esc::Html | Esc::Attr | Esc::Rcdata => html_replace(s, html_entity, true),
        // An empty unquoted value would let the next attribute's name run into it.
        Esc::NoSpace if s.is_empty() => FAILSAFE.into(),
        Esc::NoSpace => html_replace(s, nospace_entity, false),
        Esc::Comment => String::new(),
        Esc::HtmlName => html_name(s),
        Esc::JsStr => js_replace(s, js_str_escape),
        Esc::JsTmplLit => js_replace(s, js_tmpl_escape),
        Esc::JsRegexp => match js_replace(s, js_regexp_escape) {
            r if r.is_empty() => "(?:)".into(),
            r => r,
        },
        Esc::Css => css_escape(s),
        Esc::CssValue => css_value(s),
        Esc::UrlFilter if !is_safe_url(s) => format!("#{FAILSAFE}"),
        Esc::UrlFilter => s.to_string(),
        Esc::UrlEscape => url_process(s, false),
        Esc::UrlNormalize => url_process(s, true),
        Esc::Srcset => srcset(s),
        Esc::JsVal | Esc::BuiltinHtml | Esc::BuiltinUrlquery => escape(e, &V::Str(s.into())),
    }
}

/// Go's `html` or `urlquery` built-in over one value.
fn builtin(name: &str, v: &V) -> String {
    match super::funcs::call(name, vec![v.clone()]) {
        Ok(V::Str(s)) => s,
        Ok(other) => other.print(),
        Err(_) => String::new(),
    }
}

fn html_entity(c: char) -> Option<&'static str> {
    Some(match c {
        '\0' => "\u{fffd}",
        '"' => "&#34;",
        '&' => "&amp;",
        '\'' => "&#39;",
        '+' => "&#43;",
        '<' => "&lt;",
        '>' => "&gt;",
        _ => return None,
    })
}

fn nospace_entity(c: char) -> Option<&'static str> {
    Some(match c {
        '\0' => "&#xfffd;",
        '\t' => "&#9;",
        '\n' => "&#10;",
        '\x0b' => "&#11;",
        '\x0c' => "&#12;",
        '\r' => "&#13;",
        ' ' => "&#32;",
        '=' => "&#61;",
        '`' => "&#96;",
        c => return html_entity(c).filter(|_| c != '\0'),
    })
}

/// Go's `htmlReplacer`; where `bad_runes` is false, Unicode's non-characters are written as
/// numeric references too.
fn html_replace(s: &str, table: fn(char) -> Option<&'static str>, bad_runes: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match table(c) {
            Some(r) => out.push_str(r),
            None if !bad_runes
                && (('\u{fdd0}'..='\u{fdef}').contains(&c)
                    || ('\u{fff0}'..='\u{ffff}').contains(&c)) =>
            {
                out.push_str(&format!("&#x{:x};", c as u32));
            }
            None => out.push(c),
        }
    }
    out
}

/// An attribute name printed by an action: lower-case letters and digits of a plain attribute,
/// or the failsafe.
fn html_name(s: &str) -> String {
    let s = s.to_lowercase();
    if s.is_empty()
        || htmlctx::attr_type(&s) != Content::Plain
        || !s
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    {
        return FAILSAFE.into();
    }
    s
}

/// html/template's `jsValEscaper`: the value as JSON (a Stringer as its string), padded with
/// spaces where it could run into a neighbouring identifier.
fn js_val(v: &V) -> String {
    let json = match v {
        V::Null => "null".to_string(),
        V::Int(n, ty @ (IntTy::Month | IntTy::Weekday)) => {
            go_json(&serde_json::Value::String(V::Int(*n, *ty).print()))
        }
        v => go_json(&v.to_json()),
    };
    let pad = json.chars().next().is_some_and(is_js_ident_part)
        || json.chars().next_back().is_some_and(is_js_ident_part);
    if pad { format!(" {json} ") } else { json }
}

fn low_unicode(c: char) -> Option<String> {
    Some(match c {
        '\t' => "\\t".into(),
        '\n' => "\\n".into(),
        '\x0c' => "\\f".into(),
        '\r' => "\\r".into(),
        c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
        '\u{2028}' => "\\u2028".into(),
        '\u{2029}' => "\\u2029".into(),
        _ => return None,
    })
}

fn js_str_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '"' => "\\u0022",
        '`' => "\\u0060",
        '&' => "\\u0026",
        '\'' => "\\u0027",
        '+' => "\\u002b",
        '/' => "\\/",
        '<' => "\\u003c",
        '>' => "\\u003e",
        '\\' => "\\\\",
        _ => return None,
    })
}

/// In a template literal, also what would start a `${...}`.
fn js_tmpl_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '$' => "\\u0024",
        '{' => "\\u007b",
        '}' => "\\u007d",
        c => return js_str_escape(c),
    })
}

fn js_regexp_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '$' => "\\$",
        '(' => "\\(",
        ')' => "\\)",
        '*' => "\\*",
        '-' => "\\-",
        '.' => "\\.",
        '?' => "\\?",
        '[' => "\\[",
        ']' => "\\]",
        '^' => "\\^",
        '{' => "\\{",
        '|' => "\\|",
        '}' => "\\}",
        c => return js_str_escape(c).filter(|_| c != '`'),
    })
}

/// Go's `replace` in js.go: control characters, then the table, then the line separators.
fn js_replace(s: &str, table: fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if (c as u32) < 0x20 {
            out.push_str(&low_unicode(c).unwrap_or_default());
        } else if let Some(r) = table(c) {
            out.push_str(r);
        } else if let Some(r) = low_unicode(c) {
            out.push_str(&r);
        } else {
            out.push(c);
        }
    }
    out
}

fn css_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        let repl = match c {
            '\0' => "\\0",
            '\t' => "\\9",
            '\n' => "\\a",
            '\x0c' => "\\c",
            '\r' => "\\d",
            '"' => "\\22",
            '&' => "\\26",
            '\'' => "\\27",
            '(' => "\\28",
            ')' => "\\29",
            '+' => "\\2b",
            '/' => "\\2f",
            ':' => "\\3a",
            ';' => "\\3b",
            '<' => "\\3c",
            '>' => "\\3e",
            '\\' => "\\\\",
            '{' => "\\7b",
            '}' => "\\7d",
            c => {
                out.push(c);
                continue;
            }
        };
        out.push_str(repl);
        // A hex escape runs on into a following hex digit or space: end it with a space.
        let next = chars.peek().map(|(_, n)| *n);
        if repl != "\\\\"
            && next.is_none_or(|n| {
                n.is_ascii_hexdigit() || matches!(n, '\t' | '\n' | '\x0c' | '\r' | ' ')
            })
        {
            out.push(' ');
        }
    }
    out
}

/// A CSS value from an action: anything that could end the value or smuggle in an expression is
/// the failsafe.
fn css_value(s: &str) -> String {
    let decoded = htmlctx::decode_css(s);
    let b = decoded.as_bytes();
    let mut id = String::new();
    for (i, &c) in b.iter().enumerate() {
        match c {
            0 | b'"' | b'\'' | b'(' | b')' | b'/' | b';' | b'@' | b'[' | b'\\' | b']' | b'`'
            | b'{' | b'}' | b'<' | b'>' => return FAILSAFE.into(),
            b'-' if i != 0 && b[i - 1] == b'-' => return FAILSAFE.into(),
            c if c < 0x80 && is_css_nmchar(c as char) => id.push(c.to_ascii_lowercase() as char),
            _ => {}
        }
    }
    if id.contains("expression") || id.contains("mozbinding") {
        return FAILSAFE.into();
    }
    decoded
}

/// Whether a URL's scheme (if it has one) is `http`, `https` or `mailto`.
fn is_safe_url(s: &str) -> bool {
    match s.split_once(':') {
        Some((scheme, _)) if !scheme.contains('/') => ["http", "https", "mailto"]
            .iter()
            .any(|ok| scheme.eq_ignore_ascii_case(ok)),
        _ => true,
    }
}

/// Percent-encodes what a URL may not hold; `norm` keeps reserved characters and escapes.
fn url_process(s: &str, norm: bool) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len() + 16);
    for (i, &c) in b.iter().enumerate() {
        let keep = match c {
            b'!' | b'#' | b'$' | b'&' | b'*' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?'
            | b'@' | b'[' | b']' => norm,
            b'-' | b'.' | b'_' | b'~' => true,
            b'%' => {
                norm && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
                    && i + 2 < b.len()
            }
            c => c.is_ascii_alphanumeric(),
        };
        if keep {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02x}"));
        }
    }
    out
}

/// A `srcset` value: each URL filtered and normalised, its metadata kept if plain.
fn srcset(s: &str) -> String {
    let mut out = String::new();
    let mut left = 0;
    for (i, c) in s.bytes().enumerate() {
        if c == b',' {
            srcset_element(&s[left..i], &mut out);
            out.push(',');
            left = i + 1;
        }
    }
    srcset_element(&s[left..], &mut out);
    out
}

fn srcset_element(s: &str, out: &mut String) {
    let space = |c: u8| matches!(c, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ');
    let b = s.as_bytes();
    let start = b.iter().position(|&c| !space(c)).unwrap_or(b.len());
    let end = b[start..]
        .iter()
        .position(|&c| space(c))
        .map_or(b.len(), |j| start + j);
    let url = &s[start..end];
    let metadata_ok = b[end..]
        .iter()
        .all(|&c| space(c) || c.is_ascii_alphanumeric());
    if is_safe_url(url) && metadata_ok {
        out.push_str(&s[..start]);
        out.push_str(&url_process(url, true));
        out.push_str(&s[end..]);
    } else {
        out.push('#');
        out.push_str(FAILSAFE);
    }
}

/// The template text `s` in context `c`: the text to write (comments dropped, a `<` in text that
/// starts no tag as `&lt;`) and the context after it.
pub fn text(mut c: Context, s: &str) -> Result<(Context, String), String> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut written, mut i) = (0, 0);
    while i != s.len() {
        let (c1, read) = after_text(c, &s[i..])?;
        let i1 = i + read;
        if c.state == State::Text || c.state == State::Rcdata {
            let mut end = i1;
            if c1.state != c.state {
                end = s[i..i1].rfind('<').map_or(i1, |j| i + j);
            }
            for j in i..end {
                let doctype = s[j..]
                    .get(..9)
                    .is_some_and(|p| p.eq_ignore_ascii_case("<!DOCTYPE"));
                if b[j] == b'<' && !doctype {
                    out.push_str(&s[written..j]);
                    out.push_str("&lt;");
                    written = j + 1;
                }
            }
        } else if c.state.is_comment() && c.delim == Delim::None {
            match c.state {
                State::JsBlockCmt
                    if s[written..i1].contains(['\n', '\r', '\u{2028}', '\u{2029}']) =>
                {
                    out.push('\n')
                }
                State::JsBlockCmt | State::CssBlockCmt => out.push(' '),
                _ => {}
            }
            written = i1;
        }
        if c.state != c1.state && c1.state.is_comment() && c1.delim == Delim::None {
            let opener = match c1.state {
                State::HtmlCmt | State::JsHtmlOpenCmt => 4,
                State::JsHtmlCloseCmt => 3,
                _ => 2,
            };
            out.push_str(&s[written..i1 - opener]);
            written = i1;
        }
        // In a script's string, `<script`, `</script` and `<!--` would end or confuse it.
        if c.state.is_script_literal() && has_script_tag(&s[i..i1]) {
            out.push_str(&s[written..i]);
            out.push_str(&escape_script_tags(&s[i..i1]));
            written = i1;
        }
        if i == i1 && c.state == c1.state {
            return Err(format!(
                "the template's text cannot be read as HTML at {:?}",
                &s[i..]
            ));
        }
        (c, i) = (c1, i1);
    }
    if !c.state.is_comment() || c.delim != Delim::None {
        out.push_str(&s[written..]);
    }
    Ok((c, out))
}

const SCRIPT_TAGS: [&str; 3] = ["<script", "</script", "<!--"];

fn has_script_tag(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    SCRIPT_TAGS.iter().any(|t| lower.contains(t))
}

/// `<script`, `</script` and `<!--` (any case) with their `<` as `\x3C`.
fn escape_script_tags(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < s.len() {
        if SCRIPT_TAGS.iter().any(|t| lower[i..].starts_with(t)) {
            out.push_str("\\x3C");
            i += 1;
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or('\0');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
}

/// Go's `contextAfterText`: in an attribute value, up to the quote (or space) that ends it, read
/// with its entities decoded.
fn after_text(c: Context, s: &str) -> Result<(Context, usize), String> {
    if c.delim == Delim::None {
        let (c1, i) = htmlctx::special_tag_end(c, s);
        if i == 0 {
            return Ok((c1, 0));
        }
        return htmlctx::transition(c, &s[..i]);
    }
    let ends: &[char] = match c.delim {
        Delim::DoubleQuote => &['"'],
        Delim::SingleQuote => &['\''],
        _ => &[' ', '\t', '\n', '\x0c', '\r', '>'],
    };
    let i = s.find(ends).unwrap_or(s.len());
    if c.delim == Delim::SpaceOrTagEnd
        && let Some(j) = s[..i].find(['"', '\'', '<', '=', '`'])
    {
        return Err(format!(
            "{:?} in unquoted attr: {:?}",
            &s[j..j + 1],
            &s[..i]
        ));
    }
    if i == s.len() {
        let u = unescape_entities(s);
        let (mut c, mut rest) = (c, u.as_str());
        while !rest.is_empty() {
            let (c1, read) = htmlctx::transition(c, rest)?;
            if read == 0 && c1 == c {
                break;
            }
            (c, rest) = (c1, &rest[read..]);
        }
        return Ok((c, s.len()));
    }
    let mut element = c.element;
    if c.state == State::Attr
        && c.element == Element::Script
        && c.attr == Attr::ScriptType
        && !htmlctx::is_js_type(&s[..i])
    {
        element = Element::None;
    }
    let end = if c.delim == Delim::SpaceOrTagEnd {
        i
    } else {
        i + 1
    };
    Ok((
        Context {
            state: State::Tag,
            element,
            ..Context::default()
        },
        end,
    ))
}

/// HTML's character references in an attribute value: numeric ones and the named ones a
/// template plausibly writes (Go decodes all of HTML's; the others stay as written here).
fn unescape_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(semi) = rest[1..].find(';').map(|j| j + 1).filter(|&j| j <= 32) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let name = &rest[1..semi];
        let decoded = match name.strip_prefix('#') {
            Some(num) => match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => num.parse::<u32>().ok(),
            }
            .map(|n| char::from_u32(n).unwrap_or('\u{fffd}')),
            None => match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some('\u{a0}'),
                _ => None,
            },
        };
        match decoded {
            Some(ch) => {
                out.push(ch);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The error Go gives for a template that ends inside a tag, a script, a comment, ...
pub fn check_end(c: Context) -> Result<(), String> {
    if c.state == State::Text {
        return Ok(());
    }
    Err(format!(
        "the readme ends in a non-text context ({:?})",
        c.state
    ))
}
