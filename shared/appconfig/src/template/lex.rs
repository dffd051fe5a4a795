//! Splits a template into text and actions, and an action into tokens.

use super::TemplateError;

/// A piece of the template source.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    /// The inside of `{{ ... }}` without delimiters or trim markers; `offset` is the position of `{{`.
    Action {
        body: String,
        offset: usize,
        body_offset: usize,
    },
}

/// Splits `src` into text and actions, applying `{{-` / `-}}` trimming and dropping comments.
pub fn pieces(src: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut out: Vec<Piece> = Vec::new();
    let mut rest = src;
    let mut base = 0usize;
    let mut trim_next = false;
    loop {
        let Some(open) = rest.find("{{") else {
            push_text(&mut out, rest, trim_next);
            break;
        };
        let text = &rest[..open];
        let offset = base + open;
        let mut inner_start = open + 2;
        let trim_left = rest[inner_start..].starts_with("- ")
            || rest[inner_start..].starts_with("-\t")
            || rest[inner_start..].starts_with("-\n");
        let mut text_part = text.to_string();
        if trim_next {
            text_part = text_part.trim_start().to_string();
        }
        if trim_left {
            text_part = text_part.trim_end().to_string();
            inner_start += 1;
        }
        if !text_part.is_empty() {
            out.push(Piece::Text(text_part));
        }
        let after = &rest[inner_start..];
        // A comment may contain `}}`; it ends at `*/}}` (or `*/ -}}`).
        let trimmed = after.trim_start();
        let (close_rel, body_end_rel, trim_right) = if trimmed.starts_with("/*") {
            let Some(end) = after.find("*/") else {
                return Err(TemplateError::Syntax {
                    offset,
                    message: "unclosed comment".into(),
                });
            };
            let tail = &after[end + 2..];
            let (ws, trim) = if tail.starts_with(" -}}") {
                (4, true)
            } else if tail.starts_with("}}") {
                (2, false)
            } else {
                return Err(TemplateError::Syntax {
                    offset,
                    message: "comment ends before the action does".into(),
                });
            };
            (end + 2 + ws, end + 2, trim)
        } else {
            let Some(close) = find_close(after) else {
                return Err(TemplateError::Syntax {
                    offset,
                    message: "unclosed action: `{{` without `}}`".into(),
                });
            };
            let body = &after[..close];
            let trim = body.ends_with(" -") || body.ends_with("\t-") || body.ends_with("\n-");
            let body_end = if trim { close - 1 } else { close };
            (close + 2, body_end, trim)
        };
        let body = &after[..body_end_rel];
        let is_comment = body.trim_start().starts_with("/*");
        if !is_comment {
            out.push(Piece::Action {
                body: body.to_string(),
                offset,
                body_offset: base + inner_start,
            });
        }
        let consumed = inner_start + close_rel;
        base += consumed;
        rest = &rest[consumed..];
        trim_next = trim_right;
    }
    Ok(out)
}

fn push_text(out: &mut Vec<Piece>, text: &str, trim_start: bool) {
    let t = if trim_start { text.trim_start() } else { text };
    if !t.is_empty() {
        out.push(Piece::Text(t.to_string()));
    }
}

/// The position of the `}}` closing an action, skipping `}}` inside string literals.
fn find_close(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
            }
            b'}' if b.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// `.a.b` on the dot; an empty vec is the dot itself.
    Field(Vec<String>),
    /// `$x.a.b` (name without `$`; `""` is the root variable `$`).
    Var(String, Vec<String>),
    /// `.a.b` directly after a `)`.
    Chain(Vec<String>),
    Ident(String),
    Str(String),
    Num(f64),
    /// An integer constant (Go's untyped int: decimal, `0x`, `0o`, `0b`, old octal, `_`s, a
    /// character `'a'`).
    Int(i64),
    Pipe,
    LParen,
    RParen,
    Declare,
    Assign,
    Comma,
}

/// Tokens of one action body, each with its byte offset in the template source.
// Long: a lexer is one loop over the bytes with a case per token kind (Go's lexer is
// written the same way); split, each case would need the loop's whole state.
pub fn tokens(body: &str, base: usize) -> Result<Vec<(Tok, usize)>, TemplateError> {
    let b = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut parens = 0usize;
    let err = |at: usize, message: String| TemplateError::Syntax {
        offset: base + at,
        message,
    };
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'|' => {
                out.push((Tok::Pipe, base + start));
                i += 1;
            }
            b'(' => {
                parens += 1;
                if parens > super::MAX_NESTING {
                    return Err(err(
                        i,
                        format!("parentheses nested more than {} deep", super::MAX_NESTING),
                    ));
                }
                out.push((Tok::LParen, base + start));
                i += 1;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                out.push((Tok::RParen, base + start));
                i += 1;
                if b.get(i) == Some(&b'.') {
                    let (path, n) = field_chain(&body[i..])
                        .ok_or_else(|| err(i, "bad field after `)`".into()))?;
                    out.push((Tok::Chain(path), base + i));
                    i += n;
                }
            }
            b',' => {
                out.push((Tok::Comma, base + start));
                i += 1;
            }
            b':' if b.get(i + 1) == Some(&b'=') => {
                out.push((Tok::Declare, base + start));
                i += 2;
            }
            b'=' => {
                out.push((Tok::Assign, base + start));
                i += 1;
            }
            b'.' => {
                if b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                    let (n, len) = number(&body[i..]).ok_or_else(|| err(i, "bad number".into()))?;
                    out.push((n, base + start));
                    i += len;
                } else {
                    let (path, n) =
                        field_chain(&body[i..]).ok_or_else(|| err(i, "bad field name".into()))?;
                    out.push((Tok::Field(path), base + start));
                    i += n;
                }
            }
            b'$' => {
                i += 1;
                let name_len = body[i..]
                    .bytes()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    .count();
                let name = body[i..i + name_len].to_string();
                i += name_len;
                let mut path = Vec::new();
                if b.get(i) == Some(&b'.')
                    && b.get(i + 1)
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                {
                    let (p, n) =
                        field_chain(&body[i..]).ok_or_else(|| err(i, "bad field name".into()))?;
                    path = p;
                    i += n;
                }
                out.push((Tok::Var(name, path), base + start));
            }
            b'"' => {
                let (s, n) = quoted(&body[i..])
                    .ok_or_else(|| err(i, "unterminated or invalid string literal".into()))?;
                out.push((Tok::Str(s), base + start));
                i += n;
            }
            b'`' => {
                let end = body[i + 1..]
                    .find('`')
                    .ok_or_else(|| err(i, "unterminated raw string".into()))?;
                out.push((Tok::Str(body[i + 1..i + 1 + end].to_string()), base + start));
                i += end + 2;
            }
            b'\'' => {
                let (ch, n) = char_literal(&body[i..])
                    .ok_or_else(|| err(i, "invalid character literal".into()))?;
                out.push((Tok::Int(i64::from(u32::from(ch))), base + start));
                i += n;
            }
            b'-' | b'+' | b'0'..=b'9' => {
                let (n, len) = number(&body[i..])
                    .ok_or_else(|| err(i, format!("unexpected `{}`", c as char)))?;
                out.push((n, base + start));
                i += len;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let len = body[i..]
                    .bytes()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    .count();
                out.push((Tok::Ident(body[i..i + len].to_string()), base + start));
                i += len;
            }
            _ => {
                let ch = body[i..].chars().next().unwrap_or('?');
                return Err(err(i, format!("unexpected `{ch}` in action")));
            }
        }
    }
    Ok(out)
}

/// `.a.b-c.d` → (["a","b-c","d"], length). Names are letters, digits, `_` and `-` (Nuon's component
/// names use `-`, which Go would not allow; accepting it is what existing configs need).
fn field_chain(s: &str) -> Option<(Vec<String>, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut path = Vec::new();
    while b.get(i) == Some(&b'.') {
        let start = i + 1;
        let len = s[start..]
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
            .count();
        if len == 0 {
            // A lone `.` is the dot itself (only valid as the whole token).
            return if path.is_empty() && i == 0 {
                Some((path, 1))
            } else {
                None
            };
        }
        path.push(s[start..start + len].to_string());
        i = start + len;
    }
    Some((path, i))
}

fn number(s: &str) -> Option<(Tok, usize)> {
    let b = s.as_bytes();
    let sign = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let radix_prefix = b.get(sign) == Some(&b'0')
        && matches!(
            b.get(sign + 1),
            Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B')
        );
    let len = s
        .bytes()
        .enumerate()
        .take_while(|(i, c)| {
            c.is_ascii_alphanumeric()
                || *c == b'.'
                || *c == b'_'
                || ((*c == b'-' || *c == b'+')
                    && (*i == 0 || matches!(b[i - 1], b'e' | b'E') && !radix_prefix))
        })
        .count();
    let text: String = s[..len].chars().filter(|c| *c != '_').collect();
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(&text)),
    };
    let int = if radix_prefix {
        let (radix, digits) = match &body[..2] {
            "0x" | "0X" => (16, &body[2..]),
            "0o" | "0O" => (8, &body[2..]),
            _ => (2, &body[2..]),
        };
        i64::from_str_radix(digits, radix).ok()
    } else if body.len() > 1 && body.starts_with('0') && body.bytes().all(|c| c.is_ascii_digit()) {
        i64::from_str_radix(&body[1..], 8).ok()
    } else if body.bytes().all(|c| c.is_ascii_digit()) {
        body.parse::<i64>().ok()
    } else {
        None
    };
    if let Some(n) = int {
        return Some((Tok::Int(if neg { -n } else { n }), len));
    }
    text.parse::<f64>().ok().map(|n| (Tok::Num(n), len))
}

/// A Go character literal (`'a'`, `'\n'`, `'\x41'`, `'\u00e9'`): the character and the length.
fn char_literal(s: &str) -> Option<(char, usize)> {
    let end = s[1..].find('\'').map(|e| e + 1)?;
    let end = if &s[1..end] == "\\" {
        s[end + 1..].find('\'')? + end + 1
    } else {
        end
    };
    let inner = &s[1..end];
    let c = match inner.strip_prefix('\\') {
        None => {
            let mut cs = inner.chars();
            let c = cs.next()?;
            cs.next().is_none().then_some(c)?
        }
        Some(esc) => match esc {
            "n" => '\n',
            "t" => '\t',
            "r" => '\r',
            "\\" => '\\',
            "'" => '\'',
            "0" => '\0',
            "a" => '\x07',
            "b" => '\x08',
            "f" => '\x0c',
            "v" => '\x0b',
            e => {
                let hex = e.strip_prefix(['x', 'u', 'U'])?;
                char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
            }
        },
    };
    Some((c, end + 1))
}

/// A double-quoted Go string literal: returns the value and the length consumed.
fn quoted(s: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, i + 1)),
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    '\'' => out.push('\''),
                    '0' => out.push('\0'),
                    'u' => {
                        let hex: String = (0..4)
                            .filter_map(|_| chars.next().map(|(_, c)| c))
                            .collect();
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    _ => return None,
                }
            }
            '\n' => return None,
            c => out.push(c),
        }
    }
    None
}
