//! Where in an HTML document a template is, as Go's `html/template` reads it: the contexts and the
//! transitions between them that the template's own text makes.
//!
//! The app readme renders with `html/template` in Nuon, which escapes what each action prints for
//! the place it prints into: HTML text, an attribute value, a URL, a script, a JS string, CSS, a
//! `<textarea>`, a comment. To know the place it reads the template's text as a browser would,
//! through a small state machine: `<a href="` is a URL inside a double-quoted attribute,
//! `<script>var x = ` is JavaScript where a value may start. This module is that state machine;
//! `htmlesc.rs` chooses and applies the escapers.
//!
//! Written by hand: no crate models html/template's contexts. It follows Go 1.23's
//! `html/template` (`context.go`, `transition.go`, the attribute table of `attr.go`), which the
//! differential test in `tests/gotemplate.rs` runs against (Nuon builds with Go 1.25; 1.23 is
//! the newest Debian packages).
//!
//! Long (about 780 lines) because it is one state machine: its 25 states and the transitions
//! between them read together, as Go's `context.go` and `transition.go` do.

/// One context: the state, and what qualifies it (which quote ends the attribute, which part of a
/// URL, whether a `/` in JavaScript starts a regexp, the attribute's kind, the element).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Context {
    pub state: State,
    pub delim: Delim,
    pub url_part: UrlPart,
    pub js_ctx: JsCtx,
    pub attr: Attr,
    pub element: Element,
    /// Inside `${...}` of JS template literals: the brace depth of each.
    pub braces: Braces,
}

/// The open `${` of JS template literals, each with the depth of `{` inside it. Go does not
/// compare it when it compares contexts (nor does this type: every two are equal).
#[derive(Debug, Clone, Copy, Default)]
pub struct Braces {
    depth: [i32; 16],
    open: usize,
}

impl PartialEq for Braces {
    fn eq(&self, _: &Braces) -> bool {
        true
    }
}

impl Eq for Braces {}

impl std::hash::Hash for Braces {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl Braces {
    /// The depth inside the innermost open `${`, if any.
    fn innermost(&mut self) -> Option<&mut i32> {
        self.open.checked_sub(1).map(|i| &mut self.depth[i])
    }

    fn push(&mut self) -> Result<(), String> {
        let slot = self
            .depth
            .get_mut(self.open)
            .ok_or("JS template literals nested too deeply")?;
        *slot = 0;
        self.open += 1;
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum State {
    /// HTML text, outside any tag.
    #[default]
    Text,
    /// Inside a tag, before an attribute name.
    Tag,
    AttrName,
    AfterName,
    BeforeValue,
    HtmlCmt,
    /// The text of a `<textarea>` or `<title>`: no tags, but entities.
    Rcdata,
    /// An attribute value of no special kind.
    Attr,
    Url,
    Srcset,
    Js,
    JsDqStr,
    JsSqStr,
    /// A JS template literal (backquoted), outside its `${...}`.
    JsTmplLit,
    JsRegexp,
    JsBlockCmt,
    JsLineCmt,
    /// `<!--` and `-->` in a script: comments to the end of the line.
    JsHtmlOpenCmt,
    JsHtmlCloseCmt,
    Css,
    CssDqStr,
    CssSqStr,
    CssDqUrl,
    CssSqUrl,
    CssUrl,
    CssBlockCmt,
    CssLineCmt,
}

impl State {
    pub fn is_comment(self) -> bool {
        matches!(
            self,
            State::HtmlCmt
                | State::JsBlockCmt
                | State::JsLineCmt
                | State::JsHtmlOpenCmt
                | State::JsHtmlCloseCmt
                | State::CssBlockCmt
                | State::CssLineCmt
        )
    }

    /// Inside a JS string, template literal or regexp: where `</script` does not end the script.
    pub fn is_script_literal(self) -> bool {
        matches!(
            self,
            State::JsDqStr | State::JsSqStr | State::JsTmplLit | State::JsRegexp
        )
    }
}

/// What ends the attribute value the context is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Delim {
    #[default]
    None,
    DoubleQuote,
    SingleQuote,
    SpaceOrTagEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UrlPart {
    #[default]
    None,
    PreQuery,
    QueryOrFrag,
    Unknown,
}

/// Whether a `/` in JavaScript would start a regular expression or divide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JsCtx {
    #[default]
    Regexp,
    DivOp,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Attr {
    #[default]
    None,
    Script,
    ScriptType,
    Style,
    Url,
    Srcset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Element {
    #[default]
    None,
    Script,
    Style,
    Textarea,
    Title,
}

/// The kind of content an attribute's value holds (Go's `contentType` as `attrType` gives it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Plain,
    Css,
    Html,
    Js,
    Url,
    Srcset,
    Unsafe,
}

/// A transition's result: the context after the bytes it read, and how many it read.
pub type Step = Result<(Context, usize), String>;

fn at(state: State) -> Context {
    Context {
        state,
        ..Context::default()
    }
}

/// The context after some of `s` (at least one byte unless a special element ends at once).
pub fn transition(c: Context, s: &str) -> Step {
    match c.state {
        State::Text => t_text(c, s),
        State::Tag => t_tag(c, s),
        State::AttrName => t_attr_name(c, s),
        State::AfterName => Ok(t_after_name(c, s)),
        State::BeforeValue => Ok(t_before_value(c, s)),
        State::HtmlCmt => Ok(match s.find("-->") {
            Some(i) => (Context::default(), i + 3),
            None => (c, s.len()),
        }),
        State::Rcdata => Ok(special_tag_end(c, s)),
        State::Attr => Ok((c, s.len())),
        State::Url | State::Srcset => Ok(t_url(c, s)),
        State::Js => t_js(c, s),
        State::JsDqStr | State::JsSqStr | State::JsRegexp => t_js_delimited(c, s),
        State::JsTmplLit => t_js_tmpl(c, s),
        State::JsBlockCmt | State::CssBlockCmt => Ok(t_block_cmt(c, s)),
        State::JsLineCmt | State::JsHtmlOpenCmt | State::JsHtmlCloseCmt | State::CssLineCmt => {
            Ok(t_line_cmt(c, s))
        }
        State::Css => Ok(t_css(c, s)),
        State::CssDqStr | State::CssSqStr | State::CssDqUrl | State::CssSqUrl | State::CssUrl => {
            t_css_str(c, s)
        }
    }
}

fn t_text(c: Context, s: &str) -> Step {
    let b = s.as_bytes();
    let mut k = 0;
    loop {
        let Some(rel) = s[k..].find('<') else {
            return Ok((c, s.len()));
        };
        let mut i = k + rel;
        if i + 1 == b.len() {
            return Ok((c, s.len()));
        }
        if s[i..].starts_with("<!--") {
            return Ok((at(State::HtmlCmt), i + 4));
        }
        i += 1;
        let mut end = false;
        if b[i] == b'/' {
            if i + 1 == b.len() {
                return Ok((c, s.len()));
            }
            end = true;
            i += 1;
        }
        let (j, element) = eat_tag_name(s, i);
        if j != i {
            let element = if end { Element::None } else { element };
            return Ok((
                Context {
                    state: State::Tag,
                    element,
                    ..Context::default()
                },
                j,
            ));
        }
        k = j;
    }
}

fn element_content(e: Element) -> State {
    match e {
        Element::None => State::Text,
        Element::Script => State::Js,
        Element::Style => State::Css,
        Element::Textarea | Element::Title => State::Rcdata,
    }
}

fn t_tag(c: Context, s: &str) -> Step {
    let b = s.as_bytes();
    let i = eat_white_space(s, 0);
    if i == b.len() {
        return Ok((c, s.len()));
    }
    if b[i] == b'>' {
        return Ok((
            Context {
                state: element_content(c.element),
                element: c.element,
                ..Context::default()
            },
            i + 1,
        ));
    }
    let j = eat_attr_name(s, i)?;
    if i == j {
        return Err(format!(
            "expected space, attr name, or end of tag, but got {:?}",
            &s[i..]
        ));
    }
    let name = s[i..j].to_ascii_lowercase();
    let attr = if c.element == Element::Script && name == "type" {
        Attr::ScriptType
    } else {
        match attr_type(&name) {
            Content::Url => Attr::Url,
            Content::Css => Attr::Style,
            Content::Js => Attr::Script,
            Content::Srcset => Attr::Srcset,
            _ => Attr::None,
        }
    };
    let state = if j == b.len() {
        State::AttrName
    } else {
        State::AfterName
    };
    Ok((
        Context {
            state,
            element: c.element,
            attr,
            ..Context::default()
        },
        j,
    ))
}

fn t_attr_name(mut c: Context, s: &str) -> Step {
    let i = eat_attr_name(s, 0)?;
    if i != s.len() {
        c.state = State::AfterName;
    }
    Ok((c, i))
}

fn t_after_name(mut c: Context, s: &str) -> (Context, usize) {
    let i = eat_white_space(s, 0);
    if i == s.len() {
        return (c, s.len());
    }
    if s.as_bytes()[i] != b'=' {
        c.state = State::Tag;
        return (c, i);
    }
    c.state = State::BeforeValue;
    (c, i + 1)
}

/// The state a value of the attribute's kind starts in.
pub fn attr_start(a: Attr) -> State {
    match a {
        Attr::None | Attr::ScriptType => State::Attr,
        Attr::Script => State::Js,
        Attr::Style => State::Css,
        Attr::Url => State::Url,
        Attr::Srcset => State::Srcset,
    }
}

fn t_before_value(mut c: Context, s: &str) -> (Context, usize) {
    let mut i = eat_white_space(s, 0);
    if i == s.len() {
        return (c, s.len());
    }
    let mut delim = Delim::SpaceOrTagEnd;
    match s.as_bytes()[i] {
        b'\'' => {
            delim = Delim::SingleQuote;
            i += 1;
        }
        b'"' => {
            delim = Delim::DoubleQuote;
            i += 1;
        }
        _ => {}
    }
    c.state = attr_start(c.attr);
    c.delim = delim;
    (c, i)
}

/// The end of a special element's content (`</script` and a separator, any case): the text
/// context there; the whole of `s` when it does not end in it.
pub fn special_tag_end(c: Context, s: &str) -> (Context, usize) {
    // Inside a script's string or comment, `</script` is text (escaped as `\x3C/script`).
    if c.element == Element::Script && (c.state.is_script_literal() || c.state.is_comment()) {
        return (c, s.len());
    }
    let marker = match c.element {
        Element::None => return (c, s.len()),
        Element::Script => "script",
        Element::Style => "style",
        Element::Textarea => "textarea",
        Element::Title => "title",
    };
    match index_tag_end(s, marker) {
        Some(i) => (Context::default(), i),
        None => (c, s.len()),
    }
}

fn index_tag_end(s: &str, tag: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(rel) = s[from..].find("</") {
        let i = from + rel;
        let name = i + 2;
        let ends = b.len() > name + tag.len()
            && b[name..name + tag.len()].eq_ignore_ascii_case(tag.as_bytes())
            && b"> \t\n\x0c/".contains(&b[name + tag.len()]);
        if ends {
            return Some(i);
        }
        from = name;
    }
    None
}

fn t_url(mut c: Context, s: &str) -> (Context, usize) {
    if s.contains(['#', '?']) {
        c.url_part = UrlPart::QueryOrFrag;
    } else if s.len() != eat_white_space(s, 0) && c.url_part == UrlPart::None {
        c.url_part = UrlPart::PreQuery;
    }
    (c, s.len())
}

fn t_js(mut c: Context, s: &str) -> Step {
    let Some(i) = s.find(['"', '`', '\'', '/', '{', '}', '<', '-', '#']) else {
        c.js_ctx = next_js_ctx(s, c.js_ctx);
        return Ok((c, s.len()));
    };
    c.js_ctx = next_js_ctx(&s[..i], c.js_ctx);
    let b = s.as_bytes();
    let mut i = i;
    match b[i] {
        b'"' => (c.state, c.js_ctx) = (State::JsDqStr, JsCtx::Regexp),
        b'\'' => (c.state, c.js_ctx) = (State::JsSqStr, JsCtx::Regexp),
        b'`' => (c.state, c.js_ctx) = (State::JsTmplLit, JsCtx::Regexp),
        b'<' if s[i..].starts_with("<!--") => (c.state, i) = (State::JsHtmlOpenCmt, i + 3),
        b'-' if s[i..].starts_with("-->") => (c.state, i) = (State::JsHtmlCloseCmt, i + 2),
        b'#' if s[i..].starts_with("#!") => (c.state, i) = (State::JsLineCmt, i + 1),
        b'<' | b'-' | b'#' => {}
        b'{' => {
            if let Some(d) = c.braces.innermost() {
                *d += 1;
            }
        }
        b'}' => {
            if let Some(d) = c.braces.innermost() {
                *d -= 1;
                if *d < 0 {
                    c.braces.open -= 1;
                    c.state = State::JsTmplLit;
                }
            }
        }
        _ => match b.get(i + 1) {
            Some(b'/') => (c.state, i) = (State::JsLineCmt, i + 1),
            Some(b'*') => (c.state, i) = (State::JsBlockCmt, i + 1),
            _ => match c.js_ctx {
                JsCtx::Regexp => c.state = State::JsRegexp,
                JsCtx::DivOp => c.js_ctx = JsCtx::Regexp,
                JsCtx::Unknown => {
                    return Err(format!(
                        "'/' could start a division or regexp: {:?}",
                        s[i..].chars().take(32).collect::<String>()
                    ));
                }
            },
        },
    }
    Ok((c, i + 1))
}

/// A JS template literal: its end, an escape, or a `${` back into JavaScript.
fn t_js_tmpl(mut c: Context, s: &str) -> Step {
    let b = s.as_bytes();
    let mut k = 0;
    while let Some(rel) = b[k..].iter().position(|x| b"`\\$".contains(x)) {
        let mut i = k + rel;
        match b[i] {
            b'\\' => {
                i += 1;
                if i == b.len() {
                    return Err(format!("unfinished escape sequence in JS string: {s:?}"));
                }
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                c.braces.push()?;
                c.state = State::Js;
                return Ok((c, i + 2));
            }
            b'`' => {
                c.state = State::Js;
                return Ok((c, i + 1));
            }
            _ => {}
        }
        k = i + 1;
    }
    Ok((c, s.len()))
}

fn t_js_delimited(mut c: Context, s: &str) -> Step {
    let specials: &[u8] = match c.state {
        State::JsSqStr => b"\\'",
        State::JsRegexp => b"\\/[]",
        _ => b"\\\"",
    };
    let b = s.as_bytes();
    let (mut k, mut in_charset) = (0, false);
    while let Some(rel) = b[k..].iter().position(|x| specials.contains(x)) {
        let mut i = k + rel;
        match b[i] {
            b'\\' => {
                i += 1;
                if i == b.len() {
                    return Err(format!("unfinished escape sequence in JS string: {s:?}"));
                }
            }
            b'[' => in_charset = true,
            b']' => in_charset = false,
            // `</script` in a regexp does not end it (it is escaped instead).
            b'/' if i > 0
                && s.get(i - 1..i + 7)
                    .is_some_and(|w| w.eq_ignore_ascii_case("</script")) =>
            {
                i += 1;
            }
            _ if !in_charset => {
                c.state = State::Js;
                c.js_ctx = JsCtx::DivOp;
                return Ok((c, i + 1));
            }
            _ => {}
        }
        k = i + 1;
    }
    if in_charset {
        return Err(format!("unfinished JS regexp charset: {s:?}"));
    }
    Ok((c, s.len()))
}

fn t_block_cmt(mut c: Context, s: &str) -> (Context, usize) {
    match s.find("*/") {
        None => (c, s.len()),
        Some(i) => {
            c.state = if c.state == State::JsBlockCmt {
                State::Js
            } else {
                State::Css
            };
            (c, i + 2)
        }
    }
}

fn t_line_cmt(mut c: Context, s: &str) -> (Context, usize) {
    let (ends, after): (&[char], State) = if c.state != State::CssLineCmt {
        (&['\n', '\r', '\u{2028}', '\u{2029}'], State::Js)
    } else {
        (&['\n', '\x0c', '\r'], State::Css)
    };
    match s.find(ends) {
        None => (c, s.len()),
        Some(i) => {
            c.state = after;
            (c, i)
        }
    }
}

fn t_css(mut c: Context, s: &str) -> (Context, usize) {
    let b = s.as_bytes();
    let mut k = 0;
    while let Some(rel) = s[k..].find(['(', '"', '\'', '/']) {
        let i = k + rel;
        match b[i] {
            b'(' => {
                let before = s[..i].trim_end_matches(['\t', '\n', '\x0c', '\r', ' ']);
                if ends_with_css_keyword(before, "url") {
                    let rest = s[i + 1..].trim_start_matches(['\t', '\n', '\x0c', '\r', ' ']);
                    let mut j = s.len() - rest.len();
                    match rest.as_bytes().first() {
                        Some(b'"') => (c.state, j) = (State::CssDqUrl, j + 1),
                        Some(b'\'') => (c.state, j) = (State::CssSqUrl, j + 1),
                        _ => c.state = State::CssUrl,
                    }
                    return (c, j);
                }
            }
            b'/' => match b.get(i + 1) {
                Some(b'/') => {
                    c.state = State::CssLineCmt;
                    return (c, i + 2);
                }
                Some(b'*') => {
                    c.state = State::CssBlockCmt;
                    return (c, i + 2);
                }
                _ => {}
            },
            b'"' => {
                c.state = State::CssDqStr;
                return (c, i + 1);
            }
            _ => {
                c.state = State::CssSqStr;
                return (c, i + 1);
            }
        }
        k = i + 1;
    }
    (c, s.len())
}

fn t_css_str(mut c: Context, s: &str) -> Step {
    let ends: &[u8] = match c.state {
        State::CssDqStr | State::CssDqUrl => b"\\\"",
        State::CssSqStr | State::CssSqUrl => b"\\'",
        _ => b"\\\t\n\x0c\r )",
    };
    let b = s.as_bytes();
    let mut k = 0;
    loop {
        let Some(rel) = b[k..].iter().position(|x| ends.contains(x)) else {
            // Go counts what it read in the decoded text, as it does.
            let (c, read) = t_url(c, &decode_css(&s[k..]));
            let mut end = (k + read).min(s.len());
            while !s.is_char_boundary(end) {
                end += 1;
            }
            return Ok((c, end));
        };
        let mut i = k + rel;
        if b[i] == b'\\' {
            i += 1;
            if i == b.len() {
                return Err(format!("unfinished escape sequence in CSS string: {s:?}"));
            }
        } else {
            c.state = State::Css;
            return Ok((c, i + 1));
        }
        // Past the escaped character (whole, not a byte of it).
        let next = s[i..].chars().next().map_or(i, |ch| i + ch.len_utf8());
        c = t_url(c, &decode_css(&s[..next])).0;
        k = next;
    }
}

/// CSS's escapes decoded: `\26` and `\&` are both `&`.
pub fn decode_css(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if rest.len() < 2 {
            return out;
        }
        let hex = rest[1..]
            .bytes()
            .take(6)
            .take_while(u8::is_ascii_hexdigit)
            .count();
        if hex > 0 {
            let mut digits = &rest[1..1 + hex];
            let mut r = u32::from_str_radix(digits, 16).unwrap_or(0);
            if r > 0x10ffff {
                digits = &digits[..digits.len() - 1];
                r /= 16;
            }
            out.push(char::from_u32(r).unwrap_or('\u{fffd}'));
            rest = skip_css_space(&rest[1 + digits.len()..]);
        } else {
            let ch = rest[1..].chars().next().unwrap_or('\\');
            out.push(ch);
            rest = &rest[1 + ch.len_utf8()..];
        }
    }
    out.push_str(rest);
    out
}

fn skip_css_space(s: &str) -> &str {
    if let Some(rest) = s.strip_prefix("\r\n") {
        return rest;
    }
    match s.as_bytes().first() {
        Some(b'\t' | b'\n' | b'\x0c' | b' ' | b'\r') => &s[1..],
        _ => s,
    }
}

pub fn is_css_nmchar(r: char) -> bool {
    r.is_ascii_alphanumeric()
        || r == '-'
        || r == '_'
        || ('\u{80}'..='\u{d7ff}').contains(&r)
        || ('\u{e000}'..='\u{fffd}').contains(&r)
        || ('\u{10000}'..='\u{10ffff}').contains(&r)
}

fn ends_with_css_keyword(s: &str, kw: &str) -> bool {
    let Some(i) = s.len().checked_sub(kw.len()) else {
        return false;
    };
    if !s.is_char_boundary(i) {
        return false;
    }
    if i != 0 && s[..i].chars().next_back().is_some_and(is_css_nmchar) {
        return false;
    }
    s[i..].eq_ignore_ascii_case(kw)
}

/// Whether a `/` after `s` starts a regexp (after an operator, a bracket or a keyword like
/// `return`) or divides (after a value).
fn next_js_ctx(s: &str, preceding: JsCtx) -> JsCtx {
    const JS_WHITESPACE: &[char] = &[
        '\x0c', '\n', '\r', '\t', '\x0b', ' ', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2001}',
        '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}',
        '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
        '\u{feff}',
    ];
    let s = s.trim_end_matches(JS_WHITESPACE);
    let b = s.as_bytes();
    let Some(&last) = b.last() else {
        return preceding;
    };
    let n = b.len();
    match last {
        b'+' | b'-' => {
            let run = b.iter().rev().take_while(|&&x| x == last).count();
            if run % 2 == 1 {
                JsCtx::Regexp
            } else {
                JsCtx::DivOp
            }
        }
        b'.' => {
            if n != 1 && b[n - 2].is_ascii_digit() {
                JsCtx::DivOp
            } else {
                JsCtx::Regexp
            }
        }
        b',' | b'<' | b'>' | b'=' | b'*' | b'%' | b'&' | b'|' | b'^' | b'?' | b'!' | b'~'
        | b'(' | b'[' | b':' | b';' | b'{' | b'}' => JsCtx::Regexp,
        _ => {
            let word = b
                .iter()
                .rev()
                .take_while(|&&x| is_js_ident_part(x as char))
                .count();
            match &s[n - word..] {
                "break" | "case" | "continue" | "delete" | "do" | "else" | "finally" | "in"
                | "instanceof" | "return" | "throw" | "try" | "typeof" | "void" => JsCtx::Regexp,
                _ => JsCtx::DivOp,
            }
        }
    }
}

pub fn is_js_ident_part(r: char) -> bool {
    r == '$' || r == '_' || r.is_ascii_alphanumeric()
}

/// Whether a `<script type=...>` holds JavaScript (or JSON), whose content is then escaped as
/// such; any other type's content is text.
pub fn is_js_type(mime: &str) -> bool {
    let mime = mime.split(';').next().unwrap_or_default();
    matches!(
        mime.to_ascii_lowercase().trim(),
        "application/ecmascript"
            | "application/javascript"
            | "application/json"
            | "application/ld+json"
            | "application/x-ecmascript"
            | "application/x-javascript"
            | "module"
            | "text/ecmascript"
            | "text/javascript"
            | "text/javascript1.0"
            | "text/javascript1.1"
            | "text/javascript1.2"
            | "text/javascript1.3"
            | "text/javascript1.4"
            | "text/javascript1.5"
            | "text/jscript"
            | "text/livescript"
            | "text/x-ecmascript"
            | "text/x-javascript"
    )
}

fn eat_attr_name(s: &str, from: usize) -> Result<usize, String> {
    for (j, ch) in s.bytes().enumerate().skip(from) {
        match ch {
            b' ' | b'\t' | b'\n' | b'\x0c' | b'\r' | b'=' | b'>' => return Ok(j),
            b'\'' | b'"' | b'<' => {
                return Err(format!(
                    "{:?} in attribute name: {:?}",
                    ch as char,
                    s.chars().take(32).collect::<String>()
                ));
            }
            _ => {}
        }
    }
    Ok(s.len())
}

fn eat_tag_name(s: &str, i: usize) -> (usize, Element) {
    let b = s.as_bytes();
    if i == b.len() || !b[i].is_ascii_alphabetic() {
        return (i, Element::None);
    }
    let mut j = i + 1;
    while j < b.len() {
        if b[j].is_ascii_alphanumeric() {
            j += 1;
        } else if matches!(b[j], b':' | b'-') && b.get(j + 1).is_some_and(u8::is_ascii_alphanumeric)
        {
            j += 2;
        } else {
            break;
        }
    }
    let element = match s[i..j].to_ascii_lowercase().as_str() {
        "script" => Element::Script,
        "style" => Element::Style,
        "textarea" => Element::Textarea,
        "title" => Element::Title,
        _ => Element::None,
    };
    (j, element)
}

pub fn eat_white_space(s: &str, from: usize) -> usize {
    s.bytes()
        .enumerate()
        .skip(from)
        .find(|(_, b)| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r'))
        .map_or(s.len(), |(j, _)| j)
}

/// The kind of content an attribute holds, by its (lower-case) name.
pub fn attr_type(name: &str) -> Content {
    let name = if let Some(rest) = name.strip_prefix("data-") {
        rest
    } else if let Some((prefix, short)) = name.split_once(':') {
        if prefix == "xmlns" {
            return Content::Url;
        }
        short
    } else {
        name
    };
    if let Some(t) = known_attr(name) {
        return t;
    }
    if name.starts_with("on") {
        return Content::Js;
    }
    if name.contains("src") || name.contains("uri") || name.contains("url") {
        return Content::Url;
    }
    Content::Plain
}

/// Go's table of HTML attributes (`attrTypeMap`), by the kind of content each holds.
const URL_ATTRS: &str = "action archive background cite classid codebase data formaction href icon \
    longdesc manifest poster profile src usemap xmlns";
const UNSAFE_ATTRS: &str = "accept-charset async challenge charset content crossorigin defer \
    enctype form formenctype formmethod formnovalidate http-equiv keytype language method \
    novalidate pattern rel sandbox type value";
const PLAIN_ATTRS: &str = "accept alt autocomplete autofocus autoplay border checked class cols \
    colspan contenteditable contextmenu controls coords datetime default dir dirname disabled \
    draggable dropzone for formtarget headers height hidden high hreflang id ismap kind label \
    lang list loop low max maxlength media mediagroup min multiple name open optimum \
    placeholder preload pubdate radiogroup readonly required reversed rows rowspan spellcheck \
    scope scoped seamless selected shape size sizes span srclang start step tabindex target \
    title width wrap";

fn known_attr(name: &str) -> Option<Content> {
    let listed = |list: &str| list.split_whitespace().any(|a| a == name);
    Some(match name {
        "srcdoc" => Content::Html,
        "srcset" => Content::Srcset,
        "style" => Content::Css,
        _ if listed(URL_ATTRS) => Content::Url,
        _ if listed(UNSAFE_ATTRS) => Content::Unsafe,
        _ if listed(PLAIN_ATTRS) => Content::Plain,
        _ => return None,
    })
}
