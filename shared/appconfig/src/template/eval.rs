//! Evaluating a parsed template against a state (`eval/html.rs`: as html/template does).

mod html;

use std::collections::BTreeMap;

use serde_json::Value;

use super::htmlctx::Context as HtmlContext;
use super::htmlesc;
use super::parse::{Arg, Command, Node, Pipeline, Template};
use super::value::V;
use super::{MAX_OUTPUT, MAX_STEPS, TemplateError, funcs, sigs};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A missing key is an error: what deploys use.
    Strict,
    /// A missing key is an unknown value every operation accepts, and every branch is evaluated:
    /// what validation uses, before any install exists.
    Lenient,
}

/// sprig's functions that change the map given as their first argument (and return it).
const MUTATE_FIRST: &[&str] = &[
    "set",
    "unset",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
];

/// Where a `range` body goes after a node: on, or out of it by `break` or `continue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
}

struct Ctx<'a> {
    root: &'a V,
    vars: Vec<(String, V)>,
    mode: Mode,
    /// Steps taken: every node, loop iteration and function call counts one.
    steps: u64,
    /// Set by `break` or `continue` until their `range` takes it: the nodes after it are skipped.
    flow: Flow,
    /// The templates `define` and `block` named.
    defines: &'a BTreeMap<String, Vec<Node>>,
    /// `template` calls in progress: bounded, as recursion through them is.
    calls: usize,
    /// Where in the HTML document the render is, when it renders as html/template does (the app
    /// readme's renderer): what actions print is escaped for that place.
    html: Option<HtmlContext>,
}

impl Template {
    pub fn render(&self, state: &Value, mode: Mode) -> Result<String, TemplateError> {
        self.render_as(state, mode, false)
    }

    /// As Go's `html/template` renders a document: what each action prints is escaped for where
    /// it prints (HTML text, an attribute, a URL, a script, CSS: `htmlesc.rs`), a nil prints
    /// nothing, comments in the text go.
    pub fn render_html(&self, state: &Value, mode: Mode) -> Result<String, TemplateError> {
        self.render_as(state, mode, true)
    }

    fn render_as(&self, state: &Value, mode: Mode, html: bool) -> Result<String, TemplateError> {
        if html {
            // As html/template, refuse before running what Go's escaper refuses.
            super::htmlcheck::check(&self.nodes, &self.defines)
                .map_err(|message| TemplateError::Eval { offset: 0, message })?;
        }
        let root = V::from_json(state);
        let mut ctx = Ctx {
            html: html.then(HtmlContext::default),
            root: &root,
            vars: vec![(String::new(), root.clone())],
            mode,
            steps: 0,
            flow: Flow::Next,
            defines: &self.defines,
            calls: 0,
        };
        let mut out = String::new();
        ctx.nodes(&self.nodes, &root, &mut out)?;
        if let Some(c) = ctx.html {
            htmlesc::check_end(c).map_err(|message| TemplateError::Eval { offset: 0, message })?;
        }
        Ok(out)
    }
}

impl Ctx<'_> {
    /// Counts one step; past the budget, evaluation stops with an error at `offset`.
    fn step(&mut self, offset: usize) -> Result<(), TemplateError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(TemplateError::Eval {
                offset,
                message: format!(
                    "evaluation takes more than {MAX_STEPS} steps (a loop over too many items?)"
                ),
            });
        }
        Ok(())
    }

    fn nodes(&mut self, nodes: &[Node], dot: &V, out: &mut String) -> Result<(), TemplateError> {
        let mark = self.vars.len();
        for n in nodes {
            self.step(n.offset())?;
            self.node(n, dot, out)?;
            if self.flow != Flow::Next {
                break;
            }
            if out.len() > MAX_OUTPUT {
                return Err(TemplateError::Eval {
                    offset: n.offset(),
                    message: format!("the output is larger than {MAX_OUTPUT} bytes"),
                });
            }
        }
        self.vars.truncate(mark);
        Ok(())
    }

    /// What an action prints: Go's printing of the value.
    fn print(&self, v: V, out: &mut String) {
        match v {
            // text/template prints a nil interface (a JSON null) as `<no value>`.
            V::Null => out.push_str("<no value>"),
            v => out.push_str(&v.print()),
        }
    }

    /// An action: its pipeline run, and its value printed unless it declares variables.
    fn action(&mut self, p: &Pipeline, dot: &V, out: &mut String) -> Result<(), TemplateError> {
        match self.html {
            Some(c) if p.vars.is_empty() => self.html_action(c, p, dot, out),
            _ => {
                let v = self.pipeline(p, dot)?;
                if p.vars.is_empty() {
                    self.print(v, out);
                }
                Ok(())
            }
        }
    }

    fn node(&mut self, n: &Node, dot: &V, out: &mut String) -> Result<(), TemplateError> {
        match n {
            Node::Text(t) => match self.html {
                Some(c) => self.html_text(c, t, out)?,
                None => out.push_str(t),
            },
            Node::Action(p) => self.action(p, dot, out)?,
            Node::If {
                branches,
                otherwise,
            } => {
                let mut chosen = false;
                for (p, body) in branches {
                    let cond = self.pipeline(p, dot)?;
                    if self.mode == Mode::Lenient {
                        // Validate every branch; keep the output of the first true one.
                        let mut scratch = String::new();
                        self.nodes(body, dot, &mut scratch)?;
                        if !chosen && cond.truthy() {
                            out.push_str(&scratch);
                            chosen = true;
                        }
                    } else if cond.truthy() {
                        self.nodes(body, dot, out)?;
                        chosen = true;
                        break;
                    }
                }
                if let Some(o) = otherwise {
                    if self.mode == Mode::Lenient {
                        let mut scratch = String::new();
                        self.nodes(o, dot, &mut scratch)?;
                        if !chosen {
                            out.push_str(&scratch);
                        }
                    } else if !chosen {
                        self.nodes(o, dot, out)?;
                    }
                }
            }
            Node::With {
                pipe,
                body,
                otherwise,
            } => {
                let v = self.pipeline(pipe, dot)?;
                if v.truthy() {
                    self.nodes(body, &v, out)?;
                } else if let Some(o) = otherwise {
                    self.nodes(o, dot, out)?;
                }
                if self.mode == Mode::Lenient
                    && v.truthy()
                    && let Some(o) = otherwise
                {
                    self.nodes(o, dot, &mut String::new())?;
                }
            }
            Node::Range {
                pipe,
                body,
                otherwise,
            } => self.range(pipe, body, otherwise.as_deref(), dot, out)?,
            Node::Template { name, pipe, offset } => {
                self.call_template(name, pipe.as_ref(), *offset, dot, out)?
            }
            // Validation goes through every node: the flow changes only in a render.
            Node::Break(_) if self.mode == Mode::Strict => self.flow = Flow::Break,
            Node::Continue(_) if self.mode == Mode::Strict => self.flow = Flow::Continue,
            Node::Break(_) | Node::Continue(_) => {}
        }
        Ok(())
    }

    /// `{{ template "name" pipeline }}`: the named template with the pipeline's value as its dot
    /// and its `$`, none of the caller's variables.
    fn call_template(
        &mut self,
        name: &str,
        pipe: Option<&Pipeline>,
        offset: usize,
        dot: &V,
        out: &mut String,
    ) -> Result<(), TemplateError> {
        let defines = self.defines;
        let Some(body) = defines.get(name) else {
            return Err(TemplateError::Eval {
                offset,
                message: format!(
                    "template: no template {name:?} associated with template \"input\""
                ),
            });
        };
        let data = match pipe {
            Some(p) => self.pipeline_value(p, dot)?,
            None => V::Null,
        };
        if self.calls >= super::MAX_NESTING {
            return Err(TemplateError::Eval {
                offset,
                message: format!(
                    "templates call each other more than {} deep",
                    super::MAX_NESTING
                ),
            });
        }
        self.calls += 1;
        let vars = std::mem::replace(&mut self.vars, vec![(String::new(), data.clone())]);
        let done = self.nodes(body, &data, out);
        self.vars = vars;
        self.calls -= 1;
        done
    }

    fn range(
        &mut self,
        pipe: &Pipeline,
        body: &[Node],
        otherwise: Option<&[Node]>,
        dot: &V,
        out: &mut String,
    ) -> Result<(), TemplateError> {
        let v = self.pipeline_value(pipe, dot)?;
        // Items are produced one at a time: `range 1000000000` costs steps, not memory.
        let count = match &v {
            V::List(l, _) => l.len() as u64,
            V::Map(m, _) => m.len() as u64,
            // Go 1.22's range over an integer (Nuon's Go has it): 0..n.
            V::Int(n, _) => u64::try_from(*n).unwrap_or(0),
            V::Null => 0,
            // Validation: run the body once with unknown values.
            V::Unknown => 1,
            other => {
                return Err(TemplateError::Eval {
                    offset: pipe.offset,
                    message: format!("`range` cannot iterate over {}", other.kind()),
                });
            }
        };
        let mut keys = match &v {
            V::Map(m, _) => Some(m.iter()),
            _ => None,
        };
        for i in 0..count {
            self.step(pipe.offset)?;
            let (k, x) = match &v {
                V::List(l, _) => (V::int(i as i64), l[i as usize].clone()),
                V::Map(_, _) => match keys.as_mut().and_then(Iterator::next) {
                    Some((k, x)) => (V::Str(k.clone()), x.clone()),
                    None => break,
                },
                V::Int(_, _) => (V::int(i as i64), V::int(i as i64)),
                _ => (V::Unknown, V::Unknown),
            };
            let mark = self.vars.len();
            match pipe.vars.as_slice() {
                [v] => self.vars.push((v.clone(), x.clone())),
                [i, v] => {
                    self.vars.push((i.clone(), k));
                    self.vars.push((v.clone(), x.clone()));
                }
                _ => {}
            }
            self.nodes(body, &x, out)?;
            self.vars.truncate(mark);
            let flow = std::mem::replace(&mut self.flow, Flow::Next);
            if flow == Flow::Break {
                break;
            }
        }
        match otherwise {
            Some(o) if count == 0 => self.nodes(o, dot, out)?,
            Some(o) if self.mode == Mode::Lenient => self.nodes(o, dot, &mut String::new())?,
            _ => {}
        }
        Ok(())
    }

    /// Evaluates a pipeline and performs its declaration or assignment.
    fn pipeline(&mut self, p: &Pipeline, dot: &V) -> Result<V, TemplateError> {
        let v = self.pipeline_value(p, dot)?;
        if p.vars.len() == 1 && !matches!(p.cmds.as_slice(), []) {
            let name = &p.vars[0];
            if p.assign {
                match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = v.clone(),
                    None => {
                        return Err(TemplateError::Eval {
                            offset: p.offset,
                            message: format!("undefined variable `${name}`"),
                        });
                    }
                }
            } else {
                self.vars.push((name.clone(), v.clone()));
            }
        }
        Ok(v)
    }

    fn pipeline_value(&mut self, p: &Pipeline, dot: &V) -> Result<V, TemplateError> {
        let mut piped: Option<V> = None;
        for c in &p.cmds {
            piped = Some(self.command(c, dot, piped)?);
        }
        Ok(piped.unwrap_or(V::Null))
    }

    fn command(&mut self, c: &Command, dot: &V, piped: Option<V>) -> Result<V, TemplateError> {
        let Some((first, at)) = c.args.first() else {
            return Ok(V::Null);
        };
        if let Arg::Func(name) = first
            && matches!(name.as_str(), "and" | "or")
            && (c.args.len() > 1 || piped.is_some())
        {
            return self.short_circuit(name == "and", &c.args[1..], dot, piped);
        }
        if let Arg::Func(name) = first {
            return self.call_func(name, c, *at, dot, piped);
        }
        if c.args.len() > 1 || piped.is_some() {
            let mut args = Vec::with_capacity(c.args.len());
            for (a, at) in &c.args[1..] {
                args.push(self.arg(a, *at, dot)?);
            }
            args.extend(piped);
            return self.method_call(first, *at, dot, args);
        }
        self.arg(first, *at, dot)
    }

    /// A function call: arguments evaluated and converted to the function's parameter types.
    fn call_func(
        &mut self,
        name: &str,
        c: &Command,
        at: usize,
        dot: &V,
        piped: Option<V>,
    ) -> Result<V, TemplateError> {
        let mut args = Vec::with_capacity(c.args.len());
        for (a, at) in &c.args[1..] {
            let constant = matches!(
                a,
                Arg::Str(_) | Arg::Num(_) | Arg::Int(_) | Arg::Bool(_) | Arg::Nil
            );
            let value = self.arg(a, *at, dot)?;
            // A field read keeps its static type, interface{}: a nil from it is not Go's
            // untyped nil (which a pipeline's result or a variable becomes).
            let field = match a {
                Arg::Field(p) | Arg::Var(_, p) | Arg::Sub(_, p) => !p.is_empty(),
                _ => false,
            };
            args.push(sigs::Arg {
                value,
                constant,
                field,
            });
        }
        if let Some(value) = piped {
            args.push(sigs::Arg {
                value,
                constant: false,
                field: false,
            });
        }
        self.step(at)?;
        let failed = |message: String| TemplateError::Eval {
            offset: at,
            message,
        };
        let args =
            sigs::convert(name, args).map_err(|e| failed(format!("error calling {name}: {e}")))?;
        let v = funcs::call(name, args).map_err(failed)?;
        if v.weight(MAX_OUTPUT) > MAX_OUTPUT {
            return Err(failed(format!(
                "`{name}` builds a value larger than {MAX_OUTPUT} bytes"
            )));
        }
        if MUTATE_FIRST.contains(&name)
            && let Some((Arg::Var(var, path), _)) = c.args.get(1)
        {
            self.write_var(var, path, &v);
        }
        Ok(v)
    }

    /// Go's maps are references: `set $d "k" 1` changes the map `$d` holds. The functions
    /// that change their first argument write their result back to the variable it was read
    /// from (a copy of the map held elsewhere is not changed, where in Go it would be).
    fn write_var(&mut self, name: &str, path: &[String], v: &V) {
        let Some((_, slot)) = self.vars.iter_mut().rev().find(|(n, _)| n == name) else {
            return;
        };
        let mut cur = slot;
        for key in path {
            match cur {
                V::Map(m, _) => match m.get_mut(key) {
                    Some(next) => cur = next,
                    None => return,
                },
                _ => return,
            }
        }
        *cur = v.clone();
    }

    /// Go's `and` and `or` (since 1.18): arguments evaluated in order only until one decides,
    /// so `and .x (fail "no")` does not fail when `.x` is empty.
    fn short_circuit(
        &mut self,
        and: bool,
        args: &[(Arg, usize)],
        dot: &V,
        piped: Option<V>,
    ) -> Result<V, TemplateError> {
        let mut last = V::Null;
        for (a, at) in args {
            last = self.arg(a, *at, dot)?;
            if last.truthy() != and {
                return Ok(last);
            }
        }
        Ok(piped.unwrap_or(last))
    }

    fn arg(&mut self, a: &Arg, at: usize, dot: &V) -> Result<V, TemplateError> {
        match a {
            Arg::Field(path) => self.field(dot, path, at, ""),
            Arg::Var(name, path) => self.field(self.var(name, at)?, path, at, &format!("${name}")),
            Arg::Func(name) => funcs::call(name, vec![]).map_err(|message| TemplateError::Eval {
                offset: at,
                message,
            }),
            Arg::Str(s) => Ok(V::Str(s.clone())),
            Arg::Num(n) => Ok(V::Num(*n)),
            Arg::Int(n) => Ok(V::int(*n)),
            Arg::Bool(b) => Ok(V::Bool(*b)),
            Arg::Nil => Ok(V::Null),
            Arg::Sub(p, chain) => {
                let v = self.pipeline_value(p, dot)?;
                self.field(&v, chain, at, "(...)")
            }
        }
    }

    /// A variable's value (`$` alone is the data, unless declared anew).
    fn var(&self, name: &str, at: usize) -> Result<&V, TemplateError> {
        match self.vars.iter().rev().find(|(n, _)| n == name) {
            Some((_, v)) => Ok(v),
            None if name.is_empty() => Ok(self.root),
            None => Err(TemplateError::Eval {
                offset: at,
                message: format!("undefined variable `${name}`"),
            }),
        }
    }

    /// A command whose first word is not a function but is given arguments: a method call
    /// (`(now).Format "2006"`), or Go's error for anything else.
    fn method_call(
        &mut self,
        first: &Arg,
        at: usize,
        dot: &V,
        args: Vec<V>,
    ) -> Result<V, TemplateError> {
        let failed = |message: String| TemplateError::Eval {
            offset: at,
            message,
        };
        let (base, path) = match first {
            Arg::Field(path) => (dot.clone(), path),
            Arg::Var(name, path) => (self.var(name, at)?.clone(), path),
            Arg::Sub(p, chain) => (self.pipeline_value(p, dot)?, chain),
            _ => return Err(failed("can't give argument to non-function".into())),
        };
        let Some((method, receiver)) = path.split_last() else {
            return Err(failed("can't give argument to non-function".into()));
        };
        let recv = self.field(&base, receiver, at, "")?;
        match super::methods::call(&recv, method, &args) {
            Some(r) => r.map_err(|e| failed(format!("error calling {method}: {e}"))),
            None if recv == V::Unknown => Ok(V::Unknown),
            None => Err(failed(format!(
                "{method} has arguments but cannot be invoked as function"
            ))),
        }
    }

    /// `.a.b` from `base`: map keys, or a method of a Go value (`.Minor`, `.Year`).
    fn field(
        &self,
        base: &V,
        path: &[String],
        at: usize,
        prefix: &str,
    ) -> Result<V, TemplateError> {
        let mut cur = base;
        for (i, key) in path.iter().enumerate() {
            // `ferry` is an alias of Nuon's `nuon` root.
            let aliased = i == 0
                && key == "ferry"
                && matches!(cur, V::Map(m, _) if m.contains_key("nuon") && !m.contains_key("ferry"));
            let key = if aliased { "nuon" } else { key.as_str() };
            let here = || format!("{prefix}.{}", path[..=i].join("."));
            let missing = || TemplateError::Missing {
                offset: at,
                path: here(),
            };
            let lenient = self.mode == Mode::Lenient;
            cur = match cur {
                V::Map(m, _) => match m.get(key) {
                    Some(v) => v,
                    None if lenient => return Ok(V::Unknown),
                    None => return Err(missing()),
                },
                V::Unknown => return Ok(V::Unknown),
                V::Null if lenient => return Ok(V::Unknown),
                V::Null => return Err(missing()),
                V::Time(_) | V::Version(_) => {
                    let v = match super::methods::call(cur, key, &[]) {
                        Some(Ok(v)) => v,
                        Some(Err(message)) => {
                            return Err(TemplateError::Eval {
                                offset: at,
                                message,
                            });
                        }
                        None => {
                            return Err(TemplateError::Eval {
                                offset: at,
                                message: format!(
                                    "can't evaluate field {key} in type {}",
                                    super::gofmt::type_name(cur)
                                ),
                            });
                        }
                    };
                    return self.field(&v, &path[i + 1..], at, &here());
                }
                other => {
                    return Err(TemplateError::Eval {
                        offset: at,
                        message: format!(
                            "cannot read field `{key}` of {} (at `{}`)",
                            other.kind(),
                            here()
                        ),
                    });
                }
            };
        }
        Ok(cur.clone())
    }
}
