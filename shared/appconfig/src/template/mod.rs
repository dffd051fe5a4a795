//! Templates in Go `text/template` syntax, rendered as Nuon renders a config field: Go's
//! `text/template` with sprig's functions over the install's state, whose numbers are float64
//! (it went through JSON).
//!
//! Written by hand because no maintained Rust crate speaks Go's template language: minijinja and
//! tera speak Jinja, where `{{ .nuon.install.id }}` is a syntax error. The parts, by concern:
//!
//! * `lex.rs`, `parse.rs`: actions with trim markers and comments, pipelines, Go's literals
//!   (ints in every base, floats, characters, strings, raw strings), `if`/`else if`, `with`,
//!   `range` (over lists, maps and integers) with `break` and `continue`, variables,
//!   `define`/`template`/`block`;
//! * `value.rs`: values typed as Go's (int, int64, uint64, float64, string, bool, nil,
//!   `[]interface {}`, `[]string`, `[]int`, `map[string]interface {}`, `map[string]string`,
//!   `time.Time`, `time.Month`, `*semver.Version`) and Go's comparisons;
//!   `eval.rs`: running a tree over them (missing keys as errors, short-circuit `and`/`or`,
//!   maps changed in place); `methods.rs`: the methods of times and versions;
//! * `gofmt.rs`: Go's `fmt` (how values print, `print`, `println`, `printf`); `strconv.rs`:
//!   float64 in `fmt`'s forms, and Go's quoting;
//! * `gotime.rs`, `golayout.rs`, `tzif.rs`: Go's times, its layouts, zones from the IANA files;
//! * `sigs.rs`: each function's Go parameter types, and the conversion of arguments to them;
//! * the readme as `html/template` renders it: `htmlctx.rs` (where in the document the text
//!   is), `htmlesc.rs` (each action's escapers for its context), `htmlcheck.rs` (what Go refuses
//!   before running), `eval/html.rs` (the render);
//! * `funcs.rs`: Go's built-ins; sprig's functions by its own grouping: `sprig.rs` (common),
//!   `sprig_text.rs`, `sprig_lists.rs`, `sprig_dates.rs`, `sprig_crypto.rs` (random, hashes,
//!   keys, and the host functions Ferry will not run); under them `xstrings.rs` (case
//!   conversions), `encoding.rs` (base64 and base32 as Go decodes them), `decimal.rs` (sprig's
//!   decimal float arithmetic).
//!
//! `shared/appconfig/tests/gotemplate.rs` renders thousands of cases through this engine and
//! through real Go with sprig and requires the same result from each, except where Ferry
//! differs on purpose ([`differs_from_nuon`]: validation warns) or a known gap is tagged. For
//! validation, [`Mode::Lenient`] renders against a partial state: a missing key yields an
//! unknown value that every operation accepts, so a template can be checked before any install
//! exists.

mod decimal;
mod encoding;
mod eval;
mod funcs;
mod gofmt;
mod golayout;
mod gotime;
mod goversion;
mod htmlcheck;
mod htmlctx;
mod htmlesc;
mod lex;
mod methods;
mod parse;
mod sigs;
mod sprig;
mod sprig_certs;
mod sprig_crypto;
mod sprig_dates;
mod sprig_lists;
mod sprig_text;
mod strconv;
mod tzif;
mod value;
mod xstrings;

use serde_json::Value;

pub use eval::Mode;
pub use funcs::{FUNCTIONS, all as functions};
pub use parse::{Node, Template};

/// Functions Ferry renders that Nuon's renderer (Go's text/template with sprig) does not have:
/// validation warns where a template calls one.
pub const NOT_IN_NUON: &[&str] = &["toYaml", "required"];

/// Functions Nuon's renderer has that Ferry refuses to run while rendering, each with why.
pub use sprig_crypto::REFUSED;

/// Functions that read the renderer's own host, which Ferry renders as if nothing were set.
pub const HOST_BLIND: &[&str] = &["env", "expandenv"];

/// Where a call to `name` renders differently from Nuon on purpose: the warning validation
/// gives for it.
pub fn differs_from_nuon(name: &str) -> Option<String> {
    if NOT_IN_NUON.contains(&name) {
        return Some(format!(
            "`{name}` is Helm's, not sprig's: Nuon would refuse this at deploy (Ferry renders it)"
        ));
    }
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
        return Some(format!("`{name}` fails in Ferry: {why}"));
    }
    HOST_BLIND.contains(&name).then(|| {
        format!(
            "`{name}` reads the renderer's environment in Nuon (the control plane's, credentials \
             included); Ferry renders every variable as unset"
        )
    })
}

/// Deepest nesting of blocks (`if`, `with`, `range`, `else if`) or parentheses a template may have.
pub const MAX_NESTING: usize = 100;
/// Evaluation steps (nodes, loop iterations, function calls) one render may take: a config value
/// needs hundreds; three nested `range`s over large numbers would take for ever.
pub const MAX_STEPS: u64 = 200_000;
/// Largest output (and largest value a function may build) of one render, in bytes.
pub const MAX_OUTPUT: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("{message}")]
    Syntax { offset: usize, message: String },
    #[error("`{path}` is not set")]
    Missing { offset: usize, path: String },
    #[error("{message}")]
    Eval { offset: usize, message: String },
}

impl TemplateError {
    /// Byte offset in the template source where the problem is.
    pub fn offset(&self) -> usize {
        match self {
            TemplateError::Syntax { offset, .. }
            | TemplateError::Missing { offset, .. }
            | TemplateError::Eval { offset, .. } => *offset,
        }
    }
}

/// Whether a string is a template at all. Nuon renders only strings that contain `.nuon` and passes
/// every other one through verbatim (docs/app-config.md, "Templates"); Ferry also renders its `.ferry` alias.
pub fn is_template(src: &str) -> bool {
    src.contains(".nuon") || src.contains(".ferry")
}

/// Renders strictly (a missing key is an error); a string that is not a template comes back as it is.
pub fn render(src: &str, state: &Value) -> Result<String, TemplateError> {
    if !is_template(src) {
        return Ok(src.to_string());
    }
    Template::parse(src)?.render(state, Mode::Strict)
}

/// Renders an app's readme as Nuon does: every string (not only those naming `.nuon`), through
/// html/template's escaping of what actions print ([`Template::render_html`]), strictly.
pub fn render_readme(src: &str, state: &Value) -> Result<String, TemplateError> {
    Template::parse(src)?.render_html(state, Mode::Strict)
}

/// A field path referenced from the root of the state (`.nuon.x` with the dot at the root, or
/// `$.nuon.x`), with the byte offset of the action it appears in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub path: Vec<String>,
    pub offset: usize,
}

#[cfg(test)]
mod html_tests;
#[cfg(test)]
mod tests;
