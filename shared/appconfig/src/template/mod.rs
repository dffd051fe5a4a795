//! Templates in Go `text/template` syntax, as Nuon's configs use them.
//!
//! Written by hand because no maintained Rust crate speaks Go's template language: minijinja and tera
//! speak Jinja, where `{{ .nuon.install.id }}` is a syntax error. This is the subset app configs use:
//!
//! * actions `{{ pipeline }}` with `{{-` / `-}}` trim markers and `{{/* comments */}}`;
//! * field paths on the dot (`.nuon.install.id`), on variables (`$x.a`, `$.nuon`) and on
//!   parenthesized pipelines (`(index .a 0).b`);
//! * pipelines `a | f b` (the piped value is the last argument), string/raw/number/bool/nil literals;
//! * `if` / `else if` / `else`, `range` (with `$i, $v :=`), `with`, all with `end`;
//!   variables `$x := pipeline` and `$x = pipeline`;
//! * functions: `index`, `join`, `default`, `quote`, `squote`, `upper`, `lower`, `trim`, `b64enc`,
//!   `b64dec`, `toJson`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `not`, `and`, `or`, `len`, `printf`,
//!   `print`, `replace`, `contains`, `hasPrefix`, `hasSuffix`, `split`.
//!
//! Anything else (`define`, `template`, unknown functions) is an error with its position — never
//! passed through. For validation, [`Mode::Lenient`] renders against a partial state: a missing key
//! yields an unknown value that every operation accepts, so a template can be checked before any
//! install exists.

mod eval;
mod funcs;
mod gofmt;
mod lex;
mod parse;
mod sigs;
mod sprig;
mod sprig_text;

use serde_json::Value;

pub use eval::Mode;
pub use funcs::{FUNCTIONS, all as functions};
pub use parse::{Node, Template};

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

/// A field path referenced from the root of the state (`.nuon.x` with the dot at the root, or
/// `$.nuon.x`), with the byte offset of the action it appears in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub path: Vec<String>,
    pub offset: usize,
}

#[cfg(test)]
mod tests;
