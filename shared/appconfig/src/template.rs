//! Templates in Go text/template syntax, as Nuon's configs use them: `{{.nuon.install.id}}`,
//! `{{ .nuon.components.db.outputs.endpoint }}`, with `{{-`/`-}}` trim markers.
//!
//! Written by hand because no maintained Rust crate speaks Go's template syntax (minijinja and tera
//! speak Jinja, where a leading `.` is a syntax error). This version understands field paths, which is
//! what component values use; constructs it does not understand yet are reported as errors with their
//! position, never passed through silently.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    /// A field path such as `.nuon.install.id`, as its dot-separated names; `offset` is the byte
    /// position of the `{{` in the source.
    Field {
        path: Vec<String>,
        offset: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unclosed action: `{{{{` without `}}}}`")]
    Unclosed { offset: usize },
    #[error(
        "unsupported template expression `{text}` (only field paths like `.nuon.install.id` are supported)"
    )]
    Unsupported { offset: usize, text: String },
    #[error("`{path}` is not set")]
    Missing { offset: usize, path: String },
}

impl TemplateError {
    pub fn offset(&self) -> usize {
        match self {
            TemplateError::Unclosed { offset }
            | TemplateError::Unsupported { offset, .. }
            | TemplateError::Missing { offset, .. } => *offset,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub segments: Vec<Segment>,
}

impl Template {
    pub fn parse(src: &str) -> Result<Template, TemplateError> {
        let mut segments = Vec::new();
        let mut rest = src;
        let mut base = 0usize;
        let mut text = String::new();
        while let Some(open) = rest.find("{{") {
            text.push_str(&rest[..open]);
            let offset = base + open;
            let after_open = &rest[open + 2..];
            let Some(close) = after_open.find("}}") else {
                return Err(TemplateError::Unclosed { offset });
            };
            let mut inner = &after_open[..close];
            if let Some(s) = inner.strip_prefix('-')
                && s.starts_with(char::is_whitespace)
            {
                text.truncate(text.trim_end().len());
                inner = s;
            }
            let trim_right =
                inner.ends_with('-') && inner[..inner.len() - 1].ends_with(char::is_whitespace);
            if trim_right {
                inner = &inner[..inner.len() - 1];
            }
            let expr = inner.trim();
            let path = parse_field_path(expr).ok_or_else(|| TemplateError::Unsupported {
                offset,
                text: expr.to_string(),
            })?;
            if !text.is_empty() {
                segments.push(Segment::Text(std::mem::take(&mut text)));
            }
            segments.push(Segment::Field { path, offset });
            let consumed = open + 2 + close + 2;
            base += consumed;
            rest = &rest[consumed..];
            if trim_right {
                let trimmed = rest.trim_start();
                base += rest.len() - trimmed.len();
                rest = trimmed;
            }
        }
        text.push_str(rest);
        if !text.is_empty() {
            segments.push(Segment::Text(text));
        }
        Ok(Template { segments })
    }

    /// Field paths referenced, with their offsets.
    pub fn fields(&self) -> impl Iterator<Item = (&[String], usize)> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Field { path, offset } => Some((path.as_slice(), *offset)),
            Segment::Text(_) => None,
        })
    }

    /// Renders against `state` (a JSON object whose root has a `nuon` key). `ferry` is accepted as an
    /// alias of the `nuon` root.
    pub fn render(&self, state: &Value) -> Result<String, TemplateError> {
        let mut out = String::new();
        for seg in &self.segments {
            match seg {
                Segment::Text(t) => out.push_str(t),
                Segment::Field { path, offset } => {
                    let v = lookup(state, path).ok_or_else(|| TemplateError::Missing {
                        offset: *offset,
                        path: format!(".{}", path.join(".")),
                    })?;
                    match v {
                        Value::String(s) => out.push_str(s),
                        Value::Null => {}
                        Value::Number(n) => out.push_str(&n.to_string()),
                        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                        other => out.push_str(&other.to_string()),
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Parses and renders in one go.
pub fn render(src: &str, state: &Value) -> Result<String, TemplateError> {
    Template::parse(src)?.render(state)
}

fn parse_field_path(expr: &str) -> Option<Vec<String>> {
    let rest = expr.strip_prefix('.')?;
    let parts: Vec<String> = rest.split('.').map(str::to_string).collect();
    let ok = parts.iter().all(|p| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    });
    ok.then_some(parts)
}

fn lookup<'a>(state: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = state;
    for (i, key) in path.iter().enumerate() {
        let key = if i == 0 && key == "ferry" {
            "nuon"
        } else {
            key.as_str()
        };
        cur = cur.as_object()?.get(key)?;
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> Value {
        json!({"nuon": {"install": {"id": "inst1"}, "components": {"db": {"outputs": {"port": 5432, "ok": true}}}}})
    }

    #[test]
    fn renders_field_paths() {
        assert_eq!(
            render("id={{.nuon.install.id}}", &state()).unwrap(),
            "id=inst1"
        );
        assert_eq!(
            render("{{ .nuon.components.db.outputs.port }}", &state()).unwrap(),
            "5432"
        );
        assert_eq!(
            render("{{.ferry.components.db.outputs.ok}}", &state()).unwrap(),
            "true"
        );
        assert_eq!(render("no templates", &state()).unwrap(), "no templates");
        assert_eq!(
            render("a  {{- .nuon.install.id -}}  b", &state()).unwrap(),
            "ainst1b"
        );
        assert_eq!(render("", &state()).unwrap(), "");
    }

    #[test]
    fn errors_carry_offsets() {
        assert_eq!(
            render("ab{{.nuon.nope}}", &state()),
            Err(TemplateError::Missing {
                offset: 2,
                path: ".nuon.nope".into()
            })
        );
        assert_eq!(
            render("x {{ .nuon.install.id", &state()),
            Err(TemplateError::Unclosed { offset: 2 })
        );
        assert!(matches!(
            render("{{ range .x }}", &state()),
            Err(TemplateError::Unsupported { offset: 0, .. })
        ));
        assert!(matches!(
            render("{{.}}", &state()),
            Err(TemplateError::Unsupported { .. })
        ));
        assert!(matches!(
            render("{{.a..b}}", &state()),
            Err(TemplateError::Unsupported { .. })
        ));
    }

    #[test]
    fn fields_are_listed() {
        let t = Template::parse("{{.a.b}}-{{.c}}").unwrap();
        let f: Vec<_> = t.fields().map(|(p, o)| (p.join("."), o)).collect();
        assert_eq!(f, vec![("a.b".to_string(), 0), ("c".to_string(), 9)]);
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "{{",
            "}}",
            "{{}}",
            "{{-}}",
            "{{- -}}",
            "{{ - }}",
            "é{{.é}}",
            "{{{{.a}}}}",
            "{{.a-}}",
            "{{-.a}}",
        ] {
            let _ = render(s, &state());
        }
    }
}
