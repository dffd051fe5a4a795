//! OPA policies compiled at validation, with `regorus`, so a policy that does not compile is an
//! error at its file, line and column: Nuon accepts it at sync, but no deploy it gates survives
//! its evaluation.
//!
//! Both Rego dialects are accepted, as OPA accepts both: v1 (`deny contains msg if { ... }`) and
//! v0 (`deny[msg] { ... }`, with `import future.keywords...` as Nuon's examples write it). The
//! error shown is the dialect the policy is written in: v0 when it imports `future.keywords`.

use super::*;
use crate::check::{Reference, reference, resolve};

impl<'a> Loader<'a> {
    /// Compiles an `opa` policy's Rego (`contents`: inline, or a file of the package resolved
    /// against the folder of `doc`); a failure is an error located in the Rego.
    pub(super) fn compile_policy(&mut self, doc: &Doc, contents_node: &Node, contents: &str) {
        let (file, text, base_offset) = match reference(contents) {
            Reference::Inline => (doc.path.clone(), contents.to_string(), None),
            Reference::Remote => return, // fetched by `apps sync`; checked there
            Reference::Local => {
                let dir = doc.path.rsplit_once('/').map_or("", |(d, _)| d);
                let Some(path) = resolve(dir, contents).filter(|p| self.pkg.files.contains_key(p))
                else {
                    return; // the reference check has said so
                };
                let text = self.text(&path).to_string();
                (path, text, Some(0))
            }
        };
        // Policy contents are templates too (Nuon renders them per install): a policy with
        // templates is checked when it is rendered, not here.
        if text.contains("{{") && (text.contains(".nuon") || text.contains(".ferry")) {
            return;
        }
        let Err((line, col, message)) = compile(&file, &text) else {
            return;
        };
        let msg = format!("policy does not compile: {message}");
        match base_offset {
            Some(_) => {
                let at = offset(&text, line, col);
                let src = self.text(&file);
                self.diags.push(&file, src, at, Severity::Error, msg);
            }
            // Inline Rego: at the `contents` value, with the line inside it said.
            None => self.err(
                &doc.path,
                contents_node.span.start,
                format!("{msg} (line {line} of the policy)"),
            ),
        }
    }
}

/// Compiles `text` as Rego v1, then v0; the error `(line, column, message)` of the dialect it is
/// written in when neither compiles.
fn compile(path: &str, text: &str) -> Result<(), (usize, usize, String)> {
    let attempt = |v0: bool| {
        let mut engine = regorus::Engine::new();
        engine.set_rego_v0(v0);
        engine
            .add_policy(path.to_string(), text.to_string())
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let v1 = match attempt(false) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let v0 = match attempt(true) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let shown = if text.contains("future.keywords") {
        v0
    } else {
        v1
    };
    Err(located(path, &shown))
}

/// regorus reports `--> path:line:col`, the source line, a caret, then `error: message`.
fn located(path: &str, error: &str) -> (usize, usize, String) {
    let at = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("-->"))
        .and_then(|l| l.trim().strip_prefix(path))
        .and_then(|l| l.strip_prefix(':'))
        .and_then(|l| l.split_once(':'))
        .and_then(|(line, col)| Some((line.parse().ok()?, col.trim().parse().ok()?)));
    let message = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("error:"))
        .map_or_else(|| error.trim().to_string(), |m| m.trim().to_string());
    let (line, col) = at.unwrap_or((1, 1));
    (line, col, message)
}

/// The byte offset of 1-based `line` and `col` (characters) in `text`.
fn offset(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let in_line = text[start.min(text.len())..]
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    (start + in_line).min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects_compile_and_a_broken_policy_is_located() {
        let v0 = "package t\nimport future.keywords.in\ndeny[msg] {\n  some r in input.plan.resource_changes\n  msg := sprintf(\"%s\", [r.address])\n}\n";
        let v1 = "package t\ndeny contains msg if {\n  some r in input.plan.resource_changes\n  msg := r.address\n}\n";
        assert_eq!(compile("a.rego", v0), Ok(()));
        assert_eq!(compile("b.rego", v1), Ok(()));
        let broken = "package t\n\ndeny contains msg if {\n  input.a ==\n}\n";
        let (line, col, message) = compile("c.rego", broken).unwrap_err();
        assert_eq!((line, col), (5, 1));
        assert_eq!(message, "expecting expression");
        assert_eq!(offset(broken, 5, 1), broken.rfind('}').unwrap());
    }
}
