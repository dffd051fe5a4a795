//! sprig's `snakecase`, `kebabcase` and `camelcase` are huandu/xstrings' case conversions; this is
//! their algorithm (xstrings 1.3, which the differential test's sprig links), word by word, so
//! the quirks come out as Go's do: leading and trailing separators kept (`"  padded  "` →
//! `"__padded__"`), punctuation left alone (`"a,b,c"`), a number kept with the word before it
//! (`"Bld4Floor3rd"` → `"bld4_floor_3rd"`).

/// The kind of a run of characters, as xstrings splits a string into words.
#[derive(Clone, Copy, PartialEq)]
enum Word {
    /// The end of the string (xstrings' zero value).
    End,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || c.is_whitespace()
}

/// A letter outside the CJK blocks (xstrings' `isAlphabet`).
fn is_alphabet(c: char) -> bool {
    c.is_alphabetic() && (c as u32) < 0x3400
}

/// Unicode's punctuation category (Go's `unicode.IsPunct`), not the ASCII symbols `$+<=>^`|~`.
fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation() && !"$+<=>^`|~".contains(c)
}

/// The first word of `s`, and the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut chars = s.chars().peekable();
    let Some(first) = chars.next() else {
        return (Word::End, "", "");
    };
    let mut offset = first.len_utf8();
    let mut take_while = |offset: &mut usize, keep: &dyn Fn(char) -> bool| {
        while let Some(&c) = chars.peek() {
            if !keep(c) {
                break;
            }
            *offset += c.len_utf8();
            chars.next();
        }
    };
    let kind = if is_connector(first) {
        take_while(&mut offset, &is_connector);
        Word::Connector
    } else if is_punct(first) {
        take_while(&mut offset, &is_punct);
        Word::Punct
    } else if first.is_uppercase() {
        offset = upper_word_end(s, first);
        Word::Upper
    } else if is_alphabet(first) {
        take_while(&mut offset, &|c| is_alphabet(c) && !c.is_uppercase());
        Word::Alphabet
    } else if first.is_numeric() {
        take_while(&mut offset, &char::is_numeric);
        Word::Number
    } else {
        take_while(&mut offset, &|c| {
            !(is_connector(c) || is_alphabet(c) || c.is_numeric() || is_punct(c))
        });
        Word::Other
    };
    (kind, &s[..offset], &s[offset..])
}

/// Where a word starting with an upper-case letter ends: `Hello` (one capital, then lower
/// case), or a run of capitals less the last when a lower-case letter follows it (`HTTPServer`
/// splits into `HTTP` and `Server`).
fn upper_word_end(s: &str, first: char) -> usize {
    let mut offset = first.len_utf8();
    let rest: Vec<char> = s[offset..].chars().collect();
    let Some(&second) = rest.first() else {
        return offset;
    };
    if second.is_uppercase() {
        let mut prev = second.len_utf8();
        offset += prev;
        let mut i = 1;
        while let Some(&c) = rest.get(i) {
            if !c.is_uppercase() {
                if is_alphabet(c) {
                    offset -= prev;
                }
                break;
            }
            prev = c.len_utf8();
            offset += prev;
            i += 1;
        }
    } else if is_alphabet(second) {
        offset += second.len_utf8();
        for &c in &rest[1..] {
            if !is_alphabet(c) || c.is_uppercase() {
                break;
            }
            offset += c.len_utf8();
        }
    }
    offset
}

/// A word written lower case, its separators as `connector`.
fn write_lower(out: &mut String, kind: Word, word: &str, connector: char) {
    if kind != Word::Upper && kind != Word::Connector {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        if is_connector(c) {
            out.push(connector);
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

/// xstrings' `ToSnakeCase` (`connector` `_`) and `ToKebabCase` (`-`).
pub fn lower_words(s: &str, connector: char) -> String {
    let mut out = String::new();
    let (mut kind, mut word, mut rest) = next_word(s);
    while !rest.is_empty() {
        if kind != Word::Connector {
            write_lower(&mut out, kind, word, connector);
        }
        let (prev, last) = (kind, word);
        (kind, word, rest) = next_word(rest);
        let gap = |kind: Word, out: &mut String| {
            if !matches!(kind, Word::End | Word::Punct | Word::Connector) {
                out.push(connector);
            }
        };
        match prev {
            Word::Number => {
                while matches!(kind, Word::Alphabet | Word::Number) {
                    write_lower(&mut out, kind, word, connector);
                    (kind, word, rest) = next_word(rest);
                }
                gap(kind, &mut out);
            }
            Word::Connector => write_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ if kind != Word::Number => {
                if kind != Word::Connector && kind != Word::Punct {
                    out.push(connector);
                }
            }
            _ if rest.is_empty() => {}
            _ => {
                // A number after a word: part of it (`Bld4Floor` → `bld4_floor`) unless lower
                // case letters follow the number (`HTTP2xx` → `http_2xx`).
                let number = word;
                (kind, word, rest) = next_word(rest);
                if kind != Word::Alphabet {
                    write_lower(&mut out, Word::Number, number, connector);
                    if kind != Word::Connector && kind != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                write_lower(&mut out, Word::Number, number, connector);
                while matches!(kind, Word::Alphabet | Word::Number) {
                    write_lower(&mut out, kind, word, connector);
                    (kind, word, rest) = next_word(rest);
                }
                gap(kind, &mut out);
            }
        }
    }
    write_lower(&mut out, kind, word, connector);
    out
}

/// xstrings' `ToCamelCase`: words separated by spaces, `_` or `-` capitalized and joined;
/// separators at the start, and all but one of a run, stay.
pub fn camel(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            r0 = Some(c.to_uppercase().next().unwrap_or(c));
            break;
        }
        out.push(c);
        r0 = Some(c);
    }
    let Some(mut r0) = r0 else {
        return out;
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            r0 = r0.to_uppercase().next().unwrap_or(r0);
        } else {
            r0 = r0.to_lowercase().next().unwrap_or(r0);
            out.push(r1);
        }
    }
    // Go writes the last character read even when it was a leading separator already written.
    out.push(r0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_convert_as_xstrings_does() {
        for (s, snake) in [
            ("FirstName", "first_name"),
            ("HTTPServer", "http_server"),
            ("NoHTTPS", "no_https"),
            ("GO_PATH", "go_path"),
            ("GO PATH", "go_path"),
            ("http2xx", "http_2xx"),
            ("HTTP20xOK", "http_20x_ok"),
            ("Duration2m3s", "duration_2m3s"),
            ("Bld4Floor3rd", "bld4_floor_3rd"),
            ("  padded  ", "__padded__"),
            ("a,b,c", "a,b,c"),
        ] {
            assert_eq!(lower_words(s, '_'), snake, "{s}");
        }
        assert_eq!(lower_words("HelloWorld", '-'), "hello-world");
        for (s, camel_case) in [
            ("some_words", "SomeWords"),
            ("_complex__case_", "_Complex_Case_"),
            ("some words", "SomeWords"),
            ("  padded  ", "  Padded  "),
            ("a", "A"),
        ] {
            assert_eq!(camel(s), camel_case, "{s}");
        }
    }
}
