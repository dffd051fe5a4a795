//! Sprig's text functions beyond the common ones (`sprig.rs`): case and word tools, truncation
//! and wrapping (goutils' algorithms), checksums and base32, the regular-expression family,
//! Go's `path` functions, and Go's escapers (`html`, `js`, `urlquery`). Each behaves as sprig
//! 3.x over Go's standard library does; an argument's Go type is checked before (`sigs.rs`).

use std::fmt::Write;

use super::gofmt;
use super::value::{Elem, V};
use super::{encoding, xstrings};

/// Name, minimum and maximum argument count (`None`: any number), one-line description.
pub const FUNCTIONS: &[(&str, usize, Option<usize>, &str)] = &[
    (
        "untitle",
        1,
        Some(1),
        "lower-cases each word's first letter",
    ),
    ("swapcase", 1, Some(1), "swaps upper and lower case"),
    ("snakecase", 1, Some(1), "`HelloWorld` → `hello_world`"),
    ("camelcase", 1, Some(1), "`hello_world` → `HelloWorld`"),
    ("kebabcase", 1, Some(1), "`HelloWorld` → `hello-world`"),
    ("initials", 1, Some(1), "each word's first letter"),
    (
        "trunc",
        2,
        Some(2),
        "`trunc N S`: S's first N bytes (its last -N for a negative N)",
    ),
    (
        "abbrev",
        2,
        Some(2),
        "`abbrev N S`: S cut to N bytes with `...`",
    ),
    (
        "abbrevboth",
        3,
        Some(3),
        "`abbrevboth LEFT RIGHT S`: `...` on both sides",
    ),
    ("wrap", 2, Some(2), "`wrap N S`: S wrapped at N columns"),
    (
        "wrapWith",
        3,
        Some(3),
        "`wrapWith N SEP S`: wrapped with SEP, long words cut",
    ),
    ("nospace", 1, Some(1), "removes all white space"),
    ("repeat", 2, Some(2), "`repeat N S`: S N times"),
    (
        "cat",
        0,
        None,
        "the arguments printed, joined by spaces (nils skipped)",
    ),
    (
        "plural",
        3,
        Some(3),
        "`plural ONE MANY N`: ONE when N is 1, else MANY",
    ),
    (
        "adler32sum",
        1,
        Some(1),
        "the Adler-32 checksum, in decimal",
    ),
    ("sha1sum", 1, Some(1), "the SHA-1 digest, in hex"),
    ("b32enc", 1, Some(1), "base32-encodes a string"),
    (
        "b32dec",
        1,
        Some(1),
        "base32-decodes a string (the error's text if it is not base32)",
    ),
    (
        "toRawJson",
        1,
        Some(1),
        "the argument as JSON, HTML characters unescaped",
    ),
    ("mustToJson", 1, Some(1), "the argument as JSON"),
    (
        "mustToRawJson",
        1,
        Some(1),
        "the argument as JSON, HTML characters unescaped",
    ),
    (
        "mustToPrettyJson",
        1,
        Some(1),
        "the argument as indented JSON",
    ),
    ("regexFind", 2, Some(2), "`regexFind RE S`: the first match"),
    (
        "mustRegexFind",
        2,
        Some(2),
        "`mustRegexFind RE S`: the first match",
    ),
    (
        "regexFindAll",
        3,
        Some(3),
        "`regexFindAll RE S N`: up to N matches (-1: all)",
    ),
    ("mustRegexFindAll", 3, Some(3), "`mustRegexFindAll RE S N`"),
    (
        "regexSplit",
        3,
        Some(3),
        "`regexSplit RE S N`: S split at matches",
    ),
    ("mustRegexSplit", 3, Some(3), "`mustRegexSplit RE S N`"),
    (
        "regexReplaceAllLiteral",
        3,
        Some(3),
        "`regexReplaceAllLiteral RE S REPL`: REPL as written",
    ),
    (
        "mustRegexReplaceAllLiteral",
        3,
        Some(3),
        "`mustRegexReplaceAllLiteral RE S REPL`",
    ),
    ("mustRegexMatch", 2, Some(2), "`mustRegexMatch RE S`"),
    (
        "mustRegexReplaceAll",
        3,
        Some(3),
        "`mustRegexReplaceAll RE S REPL`",
    ),
    (
        "regexQuoteMeta",
        1,
        Some(1),
        "S with the regular expression's metacharacters escaped",
    ),
    (
        "splitn",
        3,
        Some(3),
        "`splitn SEP N S`: a map `_0`, `_1`... of at most N parts",
    ),
    ("base", 1, Some(1), "a path's last element"),
    ("dir", 1, Some(1), "a path without its last element"),
    ("ext", 1, Some(1), "a path's extension"),
    ("clean", 1, Some(1), "a path, cleaned"),
    ("isAbs", 1, Some(1), "whether a path is absolute"),
    ("osBase", 1, Some(1), "a file path's last element"),
    ("osDir", 1, Some(1), "a file path without its last element"),
    ("osExt", 1, Some(1), "a file path's extension"),
    ("osClean", 1, Some(1), "a file path, cleaned"),
    ("osIsAbs", 1, Some(1), "whether a file path is absolute"),
    (
        "urlParse",
        1,
        Some(1),
        "a URL's parts: scheme, host, hostname, path, query, opaque, fragment, userinfo",
    ),
    ("urlJoin", 1, Some(1), "a URL from those parts"),
    ("html", 0, None, "the arguments printed, HTML-escaped"),
    (
        "js",
        0,
        None,
        "the arguments printed, escaped for JavaScript",
    ),
    (
        "urlquery",
        0,
        None,
        "the arguments printed, escaped for a URL query",
    ),
];

fn s(v: &V) -> String {
    gofmt::value(v)
}

fn int(v: &V) -> i64 {
    match v {
        V::Int(n, _) => *n,
        _ => 0,
    }
}

/// Calls one of this module's functions; `None` when `name` is not one. Words and cases here.
pub fn call(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let text = |i: usize| s(&arg(i));
    Some(Ok(match name {
        "untitle" => V::Str(words_first(&text(0), char::to_lowercase)),
        "swapcase" => V::Str(swapcase(&text(0))),
        "snakecase" => V::Str(xstrings::lower_words(&text(0), '_')),
        "kebabcase" => V::Str(xstrings::lower_words(&text(0), '-')),
        "camelcase" => V::Str(xstrings::camel(&text(0))),
        "initials" => V::Str(
            text(0)
                .split_whitespace()
                .filter_map(|w| w.chars().next())
                .collect(),
        ),
        "trunc" => V::Str(trunc(int(&arg(0)), &text(1))),
        "abbrev" => V::Str(abbreviate(&text(1), 0, int(&arg(0))).unwrap_or_default()),
        "abbrevboth" => {
            V::Str(abbreviate(&text(2), int(&arg(0)), int(&arg(1))).unwrap_or_default())
        }
        "wrap" => V::Str(wrap(&text(1), int(&arg(0)), "\n", false)),
        "wrapWith" => V::Str(wrap(&text(2), int(&arg(0)), &text(1), true)),
        "nospace" => V::Str(text(0).chars().filter(|c| !c.is_whitespace()).collect()),
        "repeat" => match usize::try_from(int(&arg(0))) {
            Ok(n) if n.saturating_mul(text(1).len()) <= super::MAX_OUTPUT => {
                V::Str(text(1).repeat(n))
            }
            Ok(_) => return Some(Err("error calling repeat: the result is too large".into())),
            Err(_) => return Some(Err("error calling repeat: negative Repeat count".into())),
        },
        "cat" => V::Str(
            args.iter()
                .filter(|a| !matches!(a, V::Null))
                .map(s)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "plural" => V::Str(if int(&arg(2)) == 1 { text(0) } else { text(1) }),
        _ => return encodings(name, args),
    }))
}

/// Checksums, base32, JSON, paths, Go's escapers and `splitn`.
fn encodings(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let text = |i: usize| s(&arg(i));
    Some(Ok(match name {
        "adler32sum" => V::Str(adler32(text(0).as_bytes()).to_string()),
        "sha1sum" => {
            use sha1::Digest;
            V::Str(hex::encode(sha1::Sha1::digest(text(0).as_bytes())))
        }
        "b32enc" => V::Str(encoding::b32enc(text(0).as_bytes())),
        "b32dec" => V::Str(match encoding::b32dec(&text(0)) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(at) => format!("illegal base32 data at input byte {at}"),
        }),
        "toRawJson" | "mustToRawJson" => V::Str(arg(0).to_json().to_string()),
        "mustToJson" => V::Str(go_json(&arg(0).to_json())),
        "mustToPrettyJson" => {
            V::Str(serde_json::to_string_pretty(&arg(0).to_json()).unwrap_or_default())
        }
        "base" | "osBase" => V::Str(base(&text(0))),
        "dir" | "osDir" => V::Str(dir(&text(0))),
        "ext" | "osExt" => V::Str(ext(&text(0))),
        "clean" | "osClean" => V::Str(clean(&text(0))),
        "isAbs" | "osIsAbs" => V::Bool(text(0).starts_with('/')),
        "urlParse" => match url_parse(&text(0)) {
            Ok(parts) => V::map(
                parts
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), V::Str(v)))
                    .collect(),
            ),
            Err(e) => {
                return Some(Err(format!(
                    "error calling urlParse: unable to parse url: {e}"
                )));
            }
        },
        "urlJoin" => match arg(0) {
            V::Map(m, _) => V::Str(url_join(&m)),
            _ => V::Str(String::new()),
        },
        "html" => V::Str(html_escape(&escaper_text(args))),
        "js" => V::Str(js_escape(&escaper_text(args))),
        "urlquery" => {
            V::Str(form_urlencoded::byte_serialize(escaper_text(args).as_bytes()).collect())
        }
        "splitn" => {
            let n = int(&arg(1));
            let all: Vec<String> = match usize::try_from(n) {
                Ok(0) => vec![],
                Ok(n) => text(2)
                    .splitn(n, text(0).as_str())
                    .map(str::to_owned)
                    .collect(),
                Err(_) => text(2).split(text(0).as_str()).map(str::to_owned).collect(),
            };
            V::Map(
                all.into_iter()
                    .enumerate()
                    .map(|(i, p)| (format!("_{i}"), V::Str(p)))
                    .collect(),
                Elem::Str,
            )
        }
        _ => return regex_family(name, args),
    }))
}

/// `regexFind`, `regexFindAll`, `regexSplit`, `regexReplaceAllLiteral`, `regexQuoteMeta` and
/// the `must` forms (an invalid expression: the plain forms fail too, as sprig panics).
fn regex_family(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let text = |i: usize| args.get(i).map(s).unwrap_or_default();
    if name == "regexQuoteMeta" {
        return Some(Ok(V::Str(regex::escape(&text(0)))));
    }
    let known = matches!(
        name,
        "regexFind"
            | "mustRegexFind"
            | "regexFindAll"
            | "mustRegexFindAll"
            | "regexSplit"
            | "mustRegexSplit"
            | "regexReplaceAllLiteral"
            | "mustRegexReplaceAllLiteral"
            | "mustRegexMatch"
            | "mustRegexReplaceAll"
    );
    if !known {
        return None;
    }
    let re = match regex::Regex::new(&text(0)) {
        Ok(r) => r,
        Err(e) => return Some(Err(format!("error calling {name}: {e}"))),
    };
    let n = match args.get(2) {
        Some(V::Int(n, _)) => *n,
        _ => -1,
    };
    let limit = usize::try_from(n).ok();
    // Go's regexp returns nil, not an empty slice, when nothing matches or none are asked for.
    let strs = |v: Vec<&str>| match v.is_empty() {
        true => V::nil_list(Elem::Str),
        false => V::strings(v.into_iter().map(str::to_string)),
    };
    let subject = text(1);
    Some(Ok(match name {
        "regexFind" | "mustRegexFind" => V::Str(
            re.find(&subject)
                .map(|m| m.as_str().to_string())
                .unwrap_or_default(),
        ),
        "regexFindAll" | "mustRegexFindAll" => {
            let all = re.find_iter(&subject).map(|m| m.as_str());
            strs(match limit {
                Some(k) => all.take(k).collect(),
                None => all.collect(),
            })
        }
        "regexSplit" | "mustRegexSplit" => match limit {
            Some(0) => V::nil_list(Elem::Str),
            Some(k) => strs(re.splitn(&subject, k).collect()),
            None => strs(re.split(&subject).collect()),
        },
        "mustRegexMatch" => V::Bool(re.is_match(&subject)),
        "mustRegexReplaceAll" => V::Str(re.replace_all(&subject, text(2).as_str()).into_owned()),
        _ => V::Str(
            re.replace_all(&subject, regex::NoExpand(&text(2)))
                .into_owned(),
        ),
    }))
}

/// Go's `json.Marshal` text: `<`, `>` and `&` escaped for HTML.
pub fn go_json(v: &serde_json::Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Each whitespace-separated word's first letter through `f`.
fn words_first<I: Iterator<Item = char>>(text: &str, f: fn(char) -> I) -> String {
    let mut out = String::new();
    let mut start = true;
    for c in text.chars() {
        if start && !c.is_whitespace() {
            out.extend(f(c));
        } else {
            out.push(c);
        }
        start = c.is_whitespace();
    }
    out
}

fn swapcase(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_uppercase() {
                c.to_lowercase().collect::<Vec<_>>()
            } else {
                c.to_uppercase().collect::<Vec<_>>()
            }
        })
        .collect()
}

/// sprig's `trunc`: the first `c` bytes, or the last `-c`.
fn trunc(c: i64, text: &str) -> String {
    let len = text.len() as i64;
    let cut = |from: i64, to: i64| {
        text.get(from as usize..to as usize)
            .map(str::to_string)
            .unwrap_or_else(|| {
                String::from_utf8_lossy(&text.as_bytes()[from as usize..to as usize]).into_owned()
            })
    };
    if c < 0 && len + c > 0 {
        return cut(len + c, len);
    }
    if c >= 0 && len > c {
        return cut(0, c);
    }
    text.to_string()
}

/// goutils' `AbbreviateFull`: `None` where it errs (sprig prints nothing then).
fn abbreviate(text: &str, offset: i64, width: i64) -> Option<String> {
    let len = text.len() as i64;
    if text.is_empty() {
        return Some(String::new());
    }
    if width < 4 {
        return None;
    }
    if len <= width {
        return Some(text.to_string());
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    let bytes = |from: i64, to: i64| {
        String::from_utf8_lossy(&text.as_bytes()[from as usize..to as usize]).into_owned()
    };
    if offset <= 4 {
        return Some(bytes(0, width - 3) + "...");
    }
    if width < 7 {
        return None;
    }
    if offset + width - 3 < len {
        let rest = bytes(offset, len);
        return Some(format!("...{}", abbreviate(&rest, 0, width - 3)?));
    }
    Some(format!("...{}", bytes(len - (width - 3), len)))
}

/// goutils' `WrapCustom` (commons-lang's `WordUtils.wrap`).
fn wrap(text: &str, width: i64, newline: &str, long_words: bool) -> String {
    if text.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = width.max(1) as usize;
    let b = text.as_bytes();
    let len = b.len();
    let mut offset = 0;
    let mut out: Vec<u8> = Vec::new();
    while len - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (width + offset + 1).min(len);
        let space = b[offset..end].iter().rposition(|c| *c == b' ');
        if let Some(at) = space {
            let at = at + offset;
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(newline.as_bytes());
            offset = at + 1;
        } else if long_words {
            out.extend_from_slice(&b[offset..offset + width]);
            out.extend_from_slice(newline.as_bytes());
            offset += width;
        } else {
            let end = width + offset;
            match b[end..].iter().position(|c| *c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(i) => {
                    let at = i + end;
                    out.extend_from_slice(&b[offset..at]);
                    out.extend_from_slice(newline.as_bytes());
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &d in data {
        a = (a + u32::from(d)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// What Go's escapers (`html`, `js`, `urlquery`) escape: their arguments printed as `print`
/// prints them, except that a nil is `<no value>` (text/template's `evalArgs`).
fn escaper_text(args: &[V]) -> String {
    let args: Vec<V> = args
        .iter()
        .map(|a| match a {
            V::Null => V::Str("<no value>".into()),
            a => a.clone(),
        })
        .collect();
    gofmt::sprint(&args)
}

/// Go's `path.Clean`: lexical.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

fn dir(path: &str) -> String {
    let cut = path.rfind('/').map_or(0, |i| i + 1);
    clean(&path[..cut])
}

fn ext(path: &str) -> String {
    for (i, c) in path.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return path[i..].to_string();
        }
    }
    String::new()
}

/// Go's `url.Parse` as sprig's `urlParse` reports it: `#fragment`, a `scheme:`, `?query`, an
/// authority after `//` (`userinfo@host`), the path; a scheme with no `/` after it makes the
/// rest opaque.
fn url_parse(raw: &str) -> Result<Vec<(&'static str, String)>, String> {
    if raw.chars().any(|c| c.is_control()) {
        return Err(format!(
            "parse {raw:?}: net/url: invalid control character in URL"
        ));
    }
    let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let scheme_end = rest.find(':').filter(|&i| {
        i > 0
            && rest[..i].starts_with(|c: char| c.is_ascii_alphabetic())
            && rest[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    let (scheme, rest) = match scheme_end {
        Some(i) => (rest[..i].to_lowercase(), &rest[i + 1..]),
        None => (String::new(), rest),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (mut host, mut userinfo, mut opaque, mut path) = (
        String::new(),
        String::new(),
        String::new(),
        rest.to_string(),
    );
    if !scheme.is_empty() && !rest.starts_with('/') {
        opaque = rest.to_string();
        path.clear();
    } else if let Some(after) = rest.strip_prefix("//") {
        let (authority, p) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        path = p.to_string();
        match authority.rsplit_once('@') {
            Some((u, h)) => {
                userinfo = u.to_string();
                host = h.to_string();
            }
            None => host = authority.to_string(),
        }
    } else if scheme.is_empty() && rest.split('/').next().is_some_and(|s| s.contains(':')) {
        return Err(format!(
            "parse {raw:?}: first path segment in URL cannot contain colon"
        ));
    }
    let hostname = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h.to_string(),
        _ => host.clone(),
    };
    Ok(vec![
        ("scheme", scheme),
        ("host", host),
        (
            "hostname",
            hostname
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
        ),
        ("path", path),
        ("query", query.to_string()),
        ("opaque", opaque),
        ("fragment", fragment.to_string()),
        ("userinfo", userinfo),
    ])
}

/// Go's `url.URL.String` of the parts `urlJoin` takes.
fn url_join(m: &std::collections::BTreeMap<String, V>) -> String {
    let part = |k: &str| match m.get(k) {
        Some(V::Str(s)) => s.clone(),
        _ => String::new(),
    };
    let (scheme, host, path, user) = (part("scheme"), part("host"), part("path"), part("userinfo"));
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    let opaque = part("opaque");
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        if !scheme.is_empty() || !host.is_empty() || !user.is_empty() {
            out.push_str("//");
            if !user.is_empty() {
                out.push_str(&user);
                out.push('@');
            }
            out.push_str(&host);
        }
        if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&escape_path(&path));
    }
    let (query, fragment) = (part("query"), part("fragment"));
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&escape_path(&fragment));
    }
    out
}

/// A path as Go's `url.URL.EscapedPath` writes it: bytes outside the path's own set as `%XX`.
fn escape_path(p: &str) -> String {
    let mut out = String::new();
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Go's `template.HTMLEscapeString`.
fn html_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
fn js_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goutils_wrap_and_abbreviate_as_go() {
        assert_eq!(
            wrap("the quick brown fox", 10, "\n", false),
            "the quick\nbrown fox"
        );
        assert_eq!(
            abbreviate("the quick brown fox", 0, 8).as_deref(),
            Some("the q...")
        );
        assert_eq!(
            abbreviate("1234 5678 9123 4567", 5, 10).as_deref(),
            Some("...5678...")
        );
        assert_eq!(trunc(-3, "the quick brown fox"), "fox");
    }

    #[test]
    fn encodings_and_paths_as_go() {
        assert_eq!(adler32(b"a"), 6422626);
        assert_eq!(clean("/a/../b"), "/b");
        assert_eq!(dir("/a/b/c.txt"), "/a/b");
        assert_eq!(ext("/a/b/c.txt"), ".txt");
        assert_eq!(base("/a/b/c.txt"), "c.txt");
    }

    #[test]
    fn urls_parse_and_join_as_gos_net_url() {
        let parts: std::collections::BTreeMap<_, _> =
            url_parse("https://u:p@h.example.com:8/p/q?x=1#f")
                .unwrap()
                .into_iter()
                .collect();
        assert_eq!(parts["host"], "h.example.com:8");
        assert_eq!(parts["hostname"], "h.example.com");
        assert_eq!(
            (parts["path"].as_str(), parts["query"].as_str()),
            ("/p/q", "x=1")
        );
        assert_eq!(
            (parts["userinfo"].as_str(), parts["fragment"].as_str()),
            ("u:p", "f")
        );
        let opaque: std::collections::BTreeMap<_, _> =
            url_parse("mailto:a@b").unwrap().into_iter().collect();
        assert_eq!(opaque["opaque"], "a@b");
        assert!(url_parse("a:b/c").is_ok(), "a scheme `a`");
        assert!(url_parse("1a:b").is_err(), "a colon in the first segment");
        let m = [("scheme", "https"), ("host", "x.io"), ("path", "a b")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), V::Str(v.into())))
            .collect();
        assert_eq!(url_join(&m), "https://x.io/a%20b");
    }
}
