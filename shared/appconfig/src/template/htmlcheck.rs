//! The check html/template makes before it runs a template: the context at every action, worked
//! out over every branch, must be one context whatever branch ran.
//!
//! Go escapes a template once, before running it, so a branch that may leave the document in a
//! different place than its alternative (`{{ if .x }}<script>{{ end }}`), a URL whose query may or
//! may not have begun before an action, or a `/` in a script that may divide or start a regexp,
//! makes the whole template fail, whatever the data. Ferry escapes along the path the render
//! takes (`htmlesc.rs`), which gives the same output wherever Go accepts the template; this pass
//! refuses the templates Go refuses, so that a readme fails in Ferry where it fails in Nuon.
//!
//! After Go 1.23's `escape.go` (`join`, `escapeBranch`, the range re-entry and `break`'s
//! contexts); written by hand for the reason the escaper is.

use std::collections::{BTreeMap, HashMap};

use super::MAX_STEPS;
use super::htmlctx::{Context, JsCtx, State, UrlPart};
use super::htmlesc;
use super::parse::{Arg, Node, Pipeline};

/// The walk's context: a place in the document, or none after `break` or `continue` (Go's
/// `stateDead`: what follows is not reached).
type Ctx = Option<Context>;

struct Walk<'a> {
    defines: &'a BTreeMap<String, Vec<Node>>,
    /// The contexts at each `break` and `continue` of the ranges being walked, innermost last.
    ranges: Vec<Vec<Context>>,
    /// Each named template's context after it, by the context it is called in; `None` while it
    /// is being walked (a recursive call is assumed to end where it started, as Go assumes).
    called: HashMap<(String, Context), Option<Ctx>>,
    /// Nodes visited: a range's body is walked twice, so nested ranges double the walk each, and
    /// a hostile readme could nest dozens; the walk stops at the render's own step budget.
    steps: u64,
}

/// Refuses a template html/template would refuse before running it: its contexts do not join, an
/// action stands where no escaping can serve, or it ends outside HTML text.
pub fn check(nodes: &[Node], defines: &BTreeMap<String, Vec<Node>>) -> Result<(), String> {
    let mut walk = Walk {
        defines,
        ranges: Vec::new(),
        called: HashMap::new(),
        steps: 0,
    };
    match walk.list(Some(Context::default()), nodes)? {
        Some(c) => htmlesc::check_end(c),
        None => Ok(()),
    }
}

impl Walk<'_> {
    fn list(&mut self, mut c: Ctx, nodes: &[Node]) -> Result<Ctx, String> {
        for n in nodes {
            let Some(at) = c else { break };
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return Err(format!(
                    "checking the readme's HTML takes more than {MAX_STEPS} steps (ranges nested too deep?)"
                ));
            }
            c = self.node(at, n)?;
        }
        Ok(c)
    }

    fn node(&mut self, c: Context, n: &Node) -> Result<Ctx, String> {
        Ok(match n {
            Node::Text(t) => Some(htmlesc::text(c, t)?.0),
            Node::Action(p) if p.vars.is_empty() => {
                predefined_at_end(p)?;
                Some(htmlesc::action(c)?.0)
            }
            Node::Action(_) => Some(c),
            Node::If {
                branches,
                otherwise,
            } => {
                // `else if` is an `if` inside the `else`: join from the innermost out.
                let mut acc = match otherwise {
                    Some(nodes) => self.list(Some(c), nodes)?,
                    None => Some(c),
                };
                for (_, body) in branches.iter().rev() {
                    let after = self.list(Some(c), body)?;
                    acc = join(after, acc, "if")?;
                }
                acc
            }
            Node::With {
                body, otherwise, ..
            } => {
                let after = self.list(Some(c), body)?;
                let other = match otherwise {
                    Some(nodes) => self.list(Some(c), nodes)?,
                    None => Some(c),
                };
                join(after, other, "with")?
            }
            Node::Range {
                body, otherwise, ..
            } => {
                let after = self.range(c, body)?;
                let other = match otherwise {
                    Some(nodes) => self.list(Some(c), nodes)?,
                    None => Some(c),
                };
                join(after, other, "range")?
            }
            Node::Break(_) | Node::Continue(_) => {
                if let Some(top) = self.ranges.last_mut() {
                    top.push(c);
                }
                None
            }
            Node::Template { name, .. } => self.template(c, name)?,
        })
    }

    /// A range's body, walked once and again from where the first pass ends (the loop's next
    /// turn), joined with every `break` and `continue`.
    fn range(&mut self, c: Context, body: &[Node]) -> Result<Ctx, String> {
        self.ranges.push(Vec::new());
        let first = self.list(Some(c), body)?;
        let mut after = self.join_exits(first)?;
        self.ranges.push(Vec::new());
        let again = self.list(after, body)?;
        after = join(after, again, "range")?;
        after = self.join_exits(after)?;
        Ok(after)
    }

    fn join_exits(&mut self, mut c: Ctx) -> Result<Ctx, String> {
        for exit in self.ranges.pop().unwrap_or_default() {
            c = join(c, Some(exit), "range")?;
        }
        Ok(c)
    }

    fn template(&mut self, c: Context, name: &str) -> Result<Ctx, String> {
        let key = (name.to_string(), c);
        if let Some(done) = self.called.get(&key) {
            return Ok(done.unwrap_or(Some(c)));
        }
        let Some(body) = self.defines.get(name) else {
            // Running it fails with Go's own error.
            return Ok(Some(c));
        };
        self.called.insert(key.clone(), None);
        let saved = std::mem::take(&mut self.ranges);
        let after = self.list(Some(c), body);
        self.ranges = saved;
        let after = after?;
        self.called.insert(key, Some(after));
        Ok(after)
    }
}

/// Go's own `html` and `urlquery` may only end a pipeline.
fn predefined_at_end(p: &Pipeline) -> Result<(), String> {
    let last = p.cmds.len().saturating_sub(1);
    for (i, cmd) in p.cmds.iter().enumerate() {
        if let Some((Arg::Func(name), _)) = cmd.args.first()
            && (name == "html" || name == "urlquery")
            && i < last
        {
            return Err(format!(
                "predefined escaper {name:?} disallowed in template"
            ));
        }
    }
    Ok(())
}

/// Go's `join`: two branches' contexts as one, where they differ only in what the next text can
/// still settle (the URL's part, whether `/` divides), or once nudged.
fn join(a: Ctx, b: Ctx, what: &str) -> Result<Ctx, String> {
    let (a, b) = match (a, b) {
        (None, b) => return Ok(b),
        (a, None) => return Ok(a),
        (Some(a), Some(b)) => (a, b),
    };
    if a == b {
        return Ok(Some(a));
    }
    let same_but = |c: Context| c == b;
    if same_but(Context {
        url_part: b.url_part,
        ..a
    }) {
        return Ok(Some(Context {
            url_part: UrlPart::Unknown,
            ..a
        }));
    }
    if same_but(Context {
        js_ctx: b.js_ctx,
        ..a
    }) {
        return Ok(Some(Context {
            js_ctx: JsCtx::Unknown,
            ..a
        }));
    }
    let (na, nb) = (htmlesc::nudged(a), htmlesc::nudged(b));
    if (na != a || nb != b)
        && let Ok(joined) = join(Some(na), Some(nb), what)
    {
        return Ok(joined);
    }
    Err(format!(
        "{{{{{what}}}}} branches end in different contexts: {} and {}",
        describe(a),
        describe(b)
    ))
}

fn describe(c: Context) -> String {
    match c.state {
        State::Text => "HTML text".into(),
        s => format!("{s:?} ({:?} attribute, {:?} element)", c.attr, c.element),
    }
}
