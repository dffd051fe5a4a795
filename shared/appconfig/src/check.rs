//! Checks a parsed TOML file against its schema: unknown keys (with "did you mean"), types, required
//! keys, enum values, durations, cron schedules, referenced files; warns about keys Ferry accepts but
//! does not act on yet. Collects every templated string and every referenced file on the way.
//!
//! Unknown keys are warnings, not errors: Nuon drops them silently (docs/app-config.md, "Where Ferry is stricter than Nuon"), and Ferry
//! accepts every package Nuon accepts. `--strict` turns every warning into an error.
//!
//! File references follow Nuon's rule (R2): a value starting with `./` or `../` is a path relative to
//! the block's base directory (`components/` for components, `permissions/` for permissions and
//! break glass, ...), and must stay inside the package; one starting with `http`, `git` or `file` is a
//! remote reference: `ferry apps sync` fetches it into the package at [`remote_path`], and the
//! control plane reads it from there, never from the network; anything else is inline text.

use crate::diagnostics::{Diagnostics, Severity};
use crate::package::Package;
use crate::schema::{Schema, Ty};
use crate::tree::{Node, V};

/// A string value holding a template, and where its text starts in the file.
#[derive(Debug, Clone)]
pub struct Site {
    pub file: String,
    /// Byte offset in the file of the string's first character (exact for strings without escapes;
    /// otherwise the position of the value).
    pub start: usize,
    /// False when offsets inside the string cannot be mapped exactly (escapes, line continuations).
    pub exact: bool,
    pub text: String,
    /// The component, action or block that owns it (`component:db`, `action:migrate`, `sandbox`, ...).
    pub owner: String,
}

pub struct Checker<'a> {
    pub file: &'a str,
    pub src: &'a str,
    pub pkg: &'a Package,
    /// Directory relative references of this block are resolved against (`""`: the package root).
    pub base: &'a str,
    /// Remote references met and not fetched into the package yet, for `ferry apps sync` to fetch.
    pub remote: &'a mut Vec<Remote>,
    pub diags: &'a mut Diagnostics,
    pub sites: &'a mut Vec<Site>,
    /// Files of the package the checked values point at (for content hashes).
    pub files: &'a mut Vec<String>,
    pub owner: String,
    /// Warn about keys Ferry does not act on (off for component types it cannot deploy at all, which
    /// get one warning for the whole component instead).
    pub warn_ignored: bool,
}

pub fn did_you_mean<'k>(name: &str, known: impl IntoIterator<Item = &'k str>) -> String {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

impl Checker<'_> {
    pub fn error(&mut self, at: usize, msg: impl Into<String>) {
        self.diags
            .push(self.file, self.src, at, Severity::Error, msg);
    }

    pub fn warning(&mut self, at: usize, msg: impl Into<String>) {
        self.diags
            .push(self.file, self.src, at, Severity::Warning, msg);
    }

    /// Checks a table against a schema. `at` is where to report a missing required key.
    pub fn table(&mut self, node: &Node, schema: &'static Schema, at: usize) {
        let V::Table(entries) = &node.v else {
            self.error(
                node.span.start,
                format!("expected a table ({}), found {}", schema.name, node.kind()),
            );
            return;
        };
        for e in entries {
            match schema.field(&e.key) {
                Some(field) => {
                    if !field.acted && self.warn_ignored {
                        self.warning(
                            e.key_span.start,
                            format!(
                                "`{}` is accepted but not acted on by this version of Ferry",
                                e.key
                            ),
                        );
                    }
                    self.value(&e.value, field.ty, &e.key);
                }
                None if schema.free_tables && matches!(e.value.v, V::Table(_)) => {
                    self.any(&e.value)
                }
                None if self.diags.full(self.file) => {
                    self.warning(e.key_span.start, String::new());
                }
                None => {
                    let hint = did_you_mean(&e.key, schema.fields().map(|f| f.name));
                    self.warning(
                        e.key_span.start,
                        format!(
                            "unknown key `{}` in {}{hint}: it is ignored",
                            e.key, schema.name
                        ),
                    );
                }
            }
        }
        for field in schema.fields().filter(|f| f.required) {
            if !entries.iter().any(|e| e.key == field.name) {
                self.error(
                    at,
                    format!("missing required key `{}` in {}", field.name, schema.name),
                );
            }
        }
    }

    fn type_error(&mut self, node: &Node, key: &str, want: &str) {
        self.error(
            node.span.start,
            format!("`{key}` must be {want}, found {}", node.kind()),
        );
    }

    // Long: one case per schema type (string, integer, float, bool, duration, enum, list, map,
    // table...), each a few lines: the type checker's whole dispatch.
    pub fn value(&mut self, node: &Node, ty: Ty, key: &str) {
        match ty {
            Ty::Str => match &node.v {
                V::Str(s) => self.site(node, s),
                _ => self.type_error(node, key, "a string"),
            },
            Ty::Int => {
                if !matches!(node.v, V::Int(_)) {
                    self.type_error(node, key, "an integer");
                }
            }
            Ty::Bool => {
                if !matches!(node.v, V::Bool(_)) {
                    self.type_error(node, key, "a boolean (true or false)");
                }
            }
            Ty::Scalar => match &node.v {
                V::Str(s) => self.site(node, s),
                V::Int(_) | V::Float(_) | V::Bool(_) => {}
                _ => self.type_error(node, key, "a string, number or boolean"),
            },
            Ty::Duration => match &node.v {
                V::Str(s) if parse_duration(s).is_some() => {}
                V::Str(s) => self.error(
                    node.span.start,
                    format!(
                        "invalid duration `{s}` for `{key}` (expected e.g. `30s`, `5m`, `1h30m`)"
                    ),
                ),
                _ => self.type_error(node, key, "a duration string"),
            },
            Ty::Cron => match &node.v {
                // Nuon checks a schedule only when it is set; an empty one never fires.
                V::Str(s) if s.is_empty() => {}
                V::Str(s) => {
                    if let Err(why) = check_cron(s) {
                        self.error(
                            node.span.start,
                            format!("invalid cron schedule `{s}` for `{key}`: {why}"),
                        );
                    }
                }
                _ => self.type_error(node, key, "a cron schedule string"),
            },
            Ty::File => match &node.v {
                V::Str(s) if reference(s) == Reference::Inline => {
                    // Ferry's own path keys (`values_file.path`): a bare path is a local one.
                    self.file_ref(node, &format!("./{s}"), key)
                }
                V::Str(s) => self.file_ref(node, s, key),
                _ => self.type_error(node, key, "a file path"),
            },
            Ty::Contents => match &node.v {
                V::Str(s) if reference(s) == Reference::Inline => {
                    // `README.md` is text to Nuon, not a file: only `./README.md` is one.
                    if !s.contains('\n')
                        && let Some(p) = resolve(self.base, &format!("./{s}"))
                        && self.pkg.files.contains_key(&p)
                    {
                        self.warning(
                            node.span.start,
                            format!(
                                "`{key} = \"{s}\"` is the text `{s}` itself, not the file: \
                                 Nuon (and Ferry) read a file only from a `./` path; write `./{s}`"
                            ),
                        );
                    }
                    self.site(node, s)
                }
                V::Str(s) => self.file_ref(node, s, key),
                _ => self.type_error(node, key, "a `./path`, a URL or inline text"),
            },
            Ty::Enum(values) => match &node.v {
                V::Str(s) if values.contains(&s.as_str()) => {}
                V::Str(s) => {
                    let hint = did_you_mean(s, values.iter().copied());
                    let expected = if values.len() <= 12 {
                        format!(" (expected one of: {})", values.join(", "))
                    } else {
                        String::new()
                    };
                    self.error(
                        node.span.start,
                        format!("unknown value `{s}` for `{key}`{hint}{expected}"),
                    );
                }
                _ => self.type_error(node, key, "a string"),
            },
            Ty::List(item) => match &node.v {
                V::Array(items) => {
                    for i in items {
                        self.value(i, *item, key);
                    }
                }
                _ => self.type_error(node, key, "an array"),
            },
            Ty::Map(item) => match &node.v {
                V::Table(entries) => {
                    for e in entries {
                        self.value(&e.value, *item, &e.key);
                    }
                }
                _ => self.type_error(node, key, "a table"),
            },
            Ty::Any => self.any(node),
            Ty::Table(schema) => match &node.v {
                V::Table(_) => self.table(node, schema, node.span.start),
                V::Array(_) => self.error(
                    node.span.start,
                    format!("`{key}` must be a single table: write `[{key}]`, not `[[{key}]]`"),
                ),
                _ => self.type_error(node, key, "a table"),
            },
            Ty::Tables(schema) => match &node.v {
                V::Array(items) => {
                    for i in items {
                        self.table(i, schema, i.span.start);
                    }
                }
                V::Table(_) => self.error(
                    node.span.start,
                    format!("`{key}` must be an array of tables: write `[[{key}]]`"),
                ),
                _ => self.type_error(node, key, "an array of tables"),
            },
        }
    }

    /// Free-form values: every string in them may still be a template.
    fn any(&mut self, node: &Node) {
        match &node.v {
            V::Str(s) => self.site(node, s),
            V::Array(items) => items.iter().for_each(|i| self.any(i)),
            V::Table(entries) => entries.iter().for_each(|e| self.any(&e.value)),
            _ => {}
        }
    }

    fn file_ref(&mut self, node: &Node, value: &str, key: &str) {
        let at = node.span.start;
        if reference(value) == Reference::Remote {
            let fetched = remote_path(value);
            if self.pkg.files.contains_key(&fetched) {
                self.files.push(fetched);
            } else {
                self.remote.push(Remote {
                    url: value.to_string(),
                    file: self.file.to_string(),
                });
                self.warning(
                    at,
                    format!("`{key}`: `{value}` is a remote reference, fetched by `ferry apps sync`; not checked here"),
                );
            }
            return;
        }
        let base_shown = if self.base.is_empty() {
            "the package root".to_string()
        } else {
            format!("`{}/`", self.base)
        };
        let Some(path) = resolve(self.base, value) else {
            self.error(
                at,
                format!("`{key}`: `{value}` leaves the package (resolved against {base_shown})"),
            );
            return;
        };
        if self.pkg.files.contains_key(&path) {
            self.files.push(path);
            return;
        }
        if self.pkg.has_dir(&path) {
            self.error(
                at,
                format!("`{key}` names the directory `{value}`; it must name a file"),
            );
            return;
        }
        // Ferry once resolved every path against the package root: keep such packages working, and
        // say how to write the path so Nuon finds it too.
        if let Some(root) = resolve("", value).filter(|p| self.pkg.files.contains_key(p)) {
            let nuon = relative_to(self.base, &root);
            self.warning(
                at,
                format!(
                    "`{value}` (from `{key}`) is resolved against {base_shown}, where it does not exist; \
                     it was found at the package root: write `{nuon}`"
                ),
            );
            self.files.push(root);
            return;
        }
        self.error(
            at,
            format!("file `{value}` (from `{key}`, resolved against {base_shown}) not found in the package"),
        );
    }

    fn site(&mut self, node: &Node, s: &str) {
        if !s.contains("{{") {
            return;
        }
        let (start, exact) = string_start(self.src, node, s);
        self.sites.push(Site {
            file: self.file.to_string(),
            start,
            exact,
            text: s.to_string(),
            owner: self.owner.clone(),
        });
    }
}

/// A remote reference not fetched into the package yet, and the file that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub url: String,
    pub file: String,
}

/// What a file-reference value is, by Nuon's rule: `./`, `../` → local; `http`, `git`, `file` →
/// remote; anything else → the content itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    Local,
    Remote,
    Inline,
}

pub fn reference(value: &str) -> Reference {
    if value.starts_with("./") || value.starts_with("../") {
        Reference::Local
    } else if value.starts_with("http") || value.starts_with("git") || value.starts_with("file") {
        Reference::Remote
    } else {
        Reference::Inline
    }
}

/// Where the fetched content of a remote reference sits inside the package (`ferry apps sync` fills it), so
/// the control plane validates and deploys the fetched bytes, never the URL as text.
pub fn remote_path(url: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(url.as_bytes()));
    format!(".ferry/fetched/{}", &digest[..32])
}

/// `path` relative to `base` (a directory of the package, `""` for the root) → a package path;
/// `None` for absolute paths, empty ones, or ones that leave the package.
pub fn resolve(base: &str, path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The root-relative `path` written relative to `base`, as a Nuon reference (`./x`, `../x`).
fn relative_to(base: &str, path: &str) -> String {
    let depth = base.split('/').filter(|p| !p.is_empty()).count();
    if depth == 0 {
        format!("./{path}")
    } else {
        format!("{}{path}", "../".repeat(depth))
    }
}

/// `./a/b` or `a/b` → `a/b`; `None` for absolute paths or paths leaving the package.
pub fn normalize(path: &str) -> Option<String> {
    resolve("", path)
}

/// Where a string value's text starts in the source, and whether offsets inside it map exactly
/// (they do when the source between the quotes is the value itself: no escapes).
fn string_start(src: &str, node: &Node, value: &str) -> (usize, bool) {
    let raw = src.get(node.span.clone()).unwrap_or("");
    let (q, skip_newline) = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        (3, true)
    } else {
        (1, false)
    };
    let mut start = node.span.start + q;
    let mut body = raw.get(q..raw.len().saturating_sub(q)).unwrap_or("");
    if skip_newline && body.starts_with('\n') {
        body = &body[1..];
        start += 1;
    }
    (start, body == value)
}

/// Go's duration syntax: one or more `<number><unit>` with units ns, us, µs, ms, s, m, h.
pub fn parse_duration(s: &str) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    let mut rest = s;
    let mut total = 0.0;
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        if n == 0 {
            return None;
        }
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let unit_len = rest
            .char_indices()
            .take_while(|(_, c)| c.is_alphabetic())
            .map(|(i, c)| i + c.len_utf8())
            .last()
            .unwrap_or(0);
        let unit = &rest[..unit_len];
        let secs = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * secs;
        rest = &rest[unit_len..];
    }
    Some(total)
}

/// A five-field cron expression (or a `@daily`-style macro, or `@every DURATION`): the one parser
/// the scheduler fires them with (`ferry_model::parse_schedule`).
pub fn check_cron(s: &str) -> Result<(), String> {
    ferry_model::parse_schedule(s).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Some(30.0));
        assert_eq!(parse_duration("1h30m"), Some(5400.0));
        assert_eq!(parse_duration("1.5m"), Some(90.0));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("5 minutes"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn crons() {
        assert!(check_cron("*/5 * * * *").is_ok());
        assert!(check_cron("0 2 * * MON-FRI").is_ok());
        assert!(check_cron("0 0 1,15 * *").is_ok());
        assert!(check_cron("@daily").is_ok());
        assert!(check_cron("* * * *").is_err());
        assert!(check_cron("61 * * * *").is_err());
        assert!(check_cron("*/0 * * * *").is_err());
    }

    #[test]
    fn paths() {
        assert_eq!(normalize("./a/b.rego").as_deref(), Some("a/b.rego"));
        assert_eq!(normalize("a//b").as_deref(), Some("a/b"));
        assert_eq!(normalize("../x"), None);
        assert_eq!(normalize("/etc/passwd"), None);
        assert_eq!(normalize("."), None);
        assert_eq!(
            resolve("components", "./v.yaml").as_deref(),
            Some("components/v.yaml")
        );
        assert_eq!(
            resolve("components", "../values/v.yaml").as_deref(),
            Some("values/v.yaml")
        );
        assert_eq!(resolve("components/a", "../../x").as_deref(), Some("x"));
        assert_eq!(resolve("components", "../../x"), None, "leaves the package");
        assert_eq!(
            relative_to("components", "values/v.yaml"),
            "../values/v.yaml"
        );
        assert_eq!(relative_to("", "README.md"), "./README.md");
    }

    #[test]
    fn references_by_nuons_rule() {
        assert_eq!(reference("./x.yaml"), Reference::Local);
        assert_eq!(reference("../x.yaml"), Reference::Local);
        assert_eq!(reference("https://example.com/p.json"), Reference::Remote);
        assert_eq!(
            reference("git::https://github.com/o/r//p.json"),
            Reference::Remote
        );
        assert_eq!(reference("file:///tmp/p.json"), Reference::Remote);
        assert_eq!(reference("apiVersion: v1"), Reference::Inline);
        assert!(remote_path("https://x").starts_with(".ferry/fetched/"));
    }
}
