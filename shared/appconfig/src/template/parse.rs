//! The template's syntax tree.

use super::lex::{Piece, Tok, pieces, tokens};
use super::{Reference, TemplateError, funcs};

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// `.a.b` on the dot (empty: the dot itself).
    Field(Vec<String>),
    /// `$x.a.b`; `""` is `$`, the root.
    Var(String, Vec<String>),
    Func(String),
    Str(String),
    Num(f64),
    Int(i64),
    Bool(bool),
    Nil,
    /// `( pipeline ).a.b`
    Sub(Box<Pipeline>, Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub args: Vec<(Arg, usize)>,
    pub offset: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    /// Variables declared (`:=`) or assigned (`=`) by this pipeline.
    pub vars: Vec<String>,
    pub assign: bool,
    pub cmds: Vec<Command>,
    pub offset: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Text(String),
    Action(Pipeline),
    If {
        branches: Vec<(Pipeline, Vec<Node>)>,
        otherwise: Option<Vec<Node>>,
    },
    Range {
        pipe: Pipeline,
        body: Vec<Node>,
        otherwise: Option<Vec<Node>>,
    },
    With {
        pipe: Pipeline,
        body: Vec<Node>,
        otherwise: Option<Vec<Node>>,
    },
    /// `{{ break }}` and `{{ continue }}` (at the offset of their action), inside a `range`.
    Break(usize),
    Continue(usize),
    /// `{{ template "name" pipeline }}` (and a `block`'s place): the named template, run with
    /// the pipeline's value as its dot and its `$`.
    Template {
        name: String,
        pipe: Option<Pipeline>,
        offset: usize,
    },
}

impl Node {
    /// Where the node's action starts in the source (text: 0, errors there are rare and global).
    pub fn offset(&self) -> usize {
        match self {
            Node::Text(_) => 0,
            Node::Action(p) => p.offset,
            Node::If { branches, .. } => branches.first().map_or(0, |(p, _)| p.offset),
            Node::Range { pipe, .. } | Node::With { pipe, .. } => pipe.offset,
            Node::Break(at) | Node::Continue(at) => *at,
            Node::Template { offset, .. } => *offset,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub nodes: Vec<Node>,
    /// The templates `define` and `block` name, by name.
    pub defines: std::collections::BTreeMap<String, Vec<Node>>,
}

enum Terminator {
    Eof,
    Close(usize),
    Else(usize, Option<(String, Pipeline)>),
}

struct Parser {
    pieces: Vec<Piece>,
    pos: usize,
    /// Open `if` / `with` / `range` blocks (and `else if` links): bounded, so a hostile template
    /// cannot overflow the stack of the parser, the evaluator or the tree's drop.
    depth: usize,
    /// `range` blocks open around the current position: `break` and `continue` need one.
    ranges: usize,
    /// Templates named by `define` and `block` so far.
    defines: std::collections::BTreeMap<String, Vec<Node>>,
}

impl Template {
    pub fn parse(src: &str) -> Result<Template, TemplateError> {
        let mut p = Parser {
            pieces: pieces(src)?,
            pos: 0,
            ranges: 0,
            depth: 0,
            defines: Default::default(),
        };
        let (nodes, end) = p.list()?;
        match end {
            Terminator::Eof => Ok(Template {
                nodes,
                defines: p.defines,
            }),
            Terminator::Close(at) => Err(TemplateError::Syntax {
                offset: at,
                message: "`end` without a matching `if`, `range` or `with`".into(),
            }),
            Terminator::Else(at, _) => Err(TemplateError::Syntax {
                offset: at,
                message: "`else` outside `if`, `range` or `with`".into(),
            }),
        }
    }

    /// Field paths read from the root of the state, in source order.
    pub fn references(&self) -> Vec<Reference> {
        self.found().refs
    }

    /// The functions the template calls, each with the offset of its call.
    pub fn functions(&self) -> Vec<(String, usize)> {
        self.found().funcs
    }

    fn found(&self) -> Found {
        let mut out = Found::default();
        walk(&self.nodes, true, &mut out);
        for body in self.defines.values() {
            walk(body, false, &mut out);
        }
        out
    }

    /// True if the template has no actions: rendering gives the source text back.
    pub fn is_plain(&self) -> bool {
        self.nodes.iter().all(|n| matches!(n, Node::Text(_)))
    }
}

impl Parser {
    // Long: one case per action keyword (if, range, with, define, block, template, break,
    // continue, end, else), each small; together they are the template grammar's statement list.
    fn list(&mut self) -> Result<(Vec<Node>, Terminator), TemplateError> {
        let mut nodes = Vec::new();
        while self.pos < self.pieces.len() {
            let piece = self.pieces[self.pos].clone();
            self.pos += 1;
            let (body, offset, body_offset) = match piece {
                Piece::Text(t) => {
                    nodes.push(Node::Text(t));
                    continue;
                }
                Piece::Action {
                    body,
                    offset,
                    body_offset,
                } => (body, offset, body_offset),
            };
            let toks = tokens(&body, body_offset)?;
            let keyword = match toks.first() {
                Some((Tok::Ident(k), _)) => k.as_str(),
                None => {
                    return Err(TemplateError::Syntax {
                        offset,
                        message: "empty action".into(),
                    });
                }
                _ => "",
            };
            match keyword {
                "end" => {
                    if toks.len() > 1 {
                        return Err(TemplateError::Syntax {
                            offset,
                            message: "unexpected text after `end`".into(),
                        });
                    }
                    return Ok((nodes, Terminator::Close(offset)));
                }
                "else" => {
                    let chained = match toks.get(1) {
                        None => None,
                        Some((Tok::Ident(k), _)) if k == "if" || k == "with" => {
                            Some((k.clone(), pipeline(&toks[2..], offset, false)?))
                        }
                        Some(_) => {
                            return Err(TemplateError::Syntax {
                                offset,
                                message: "expected `else`, `else if` or `else with`".into(),
                            });
                        }
                    };
                    return Ok((nodes, Terminator::Else(offset, chained)));
                }
                "if" | "with" => {
                    let pipe = pipeline(&toks[1..], offset, false)?;
                    nodes.push(self.conditional(keyword, pipe, offset)?);
                }
                "range" => {
                    let pipe = pipeline(&toks[1..], offset, true)?;
                    self.enter(offset)?;
                    self.ranges += 1;
                    let body = self.list();
                    self.ranges -= 1;
                    let (body, end) = body?;
                    self.depth -= 1;
                    let otherwise = match end {
                        Terminator::Close(_) => None,
                        Terminator::Else(at, None) => {
                            let (o, end) = self.list()?;
                            if !matches!(end, Terminator::Close(_)) {
                                return Err(TemplateError::Syntax {
                                    offset: at,
                                    message: "`range ... else` needs an `end`".into(),
                                });
                            }
                            Some(o)
                        }
                        Terminator::Else(at, Some(_)) => {
                            return Err(TemplateError::Syntax {
                                offset: at,
                                message: "`else if` cannot follow `range`".into(),
                            });
                        }
                        Terminator::Eof => {
                            return Err(TemplateError::Syntax {
                                offset,
                                message: "`range` without `end`".into(),
                            });
                        }
                    };
                    nodes.push(Node::Range {
                        pipe,
                        body,
                        otherwise,
                    });
                }
                "break" | "continue" => {
                    let message = if toks.len() > 1 {
                        format!("unexpected text in {{{{{keyword}}}}}")
                    } else if self.ranges == 0 {
                        format!("{{{{{keyword}}}}} outside {{{{range}}}}")
                    } else {
                        String::new()
                    };
                    if !message.is_empty() {
                        return Err(TemplateError::Syntax { offset, message });
                    }
                    nodes.push(if keyword == "break" {
                        Node::Break(offset)
                    } else {
                        Node::Continue(offset)
                    });
                }
                "define" | "template" | "block" => {
                    if let Some(node) = self.named(keyword, &toks, offset)? {
                        nodes.push(node);
                    }
                }
                _ => nodes.push(Node::Action(pipeline(&toks, offset, false)?)),
            }
        }
        Ok((nodes, Terminator::Eof))
    }

    /// `define "name"` (a body up to its `end`, kept by name), `template "name" [pipeline]`, and
    /// `block "name" pipeline` (both at once).
    fn named(
        &mut self,
        keyword: &str,
        toks: &[(Tok, usize)],
        offset: usize,
    ) -> Result<Option<Node>, TemplateError> {
        let syntax = |message: String| TemplateError::Syntax { offset, message };
        let Some((Tok::Str(name), _)) = toks.get(1) else {
            return Err(syntax(format!(
                "`{keyword}` needs a template name in quotes"
            )));
        };
        let pipe = match &toks[2..] {
            [] => None,
            rest => Some(pipeline(rest, offset, false)?),
        };
        if keyword == "template" {
            return Ok(Some(Node::Template {
                name: name.clone(),
                pipe,
                offset,
            }));
        }
        if keyword == "define" && pipe.is_some() {
            return Err(syntax("unexpected text after the name in `define`".into()));
        }
        self.enter(offset)?;
        let body = self.list();
        self.depth -= 1;
        let (body, end) = body?;
        if !matches!(end, Terminator::Close(_)) {
            return Err(syntax(format!("`{keyword}` without `end`")));
        }
        if self.defines.insert(name.clone(), body).is_some() {
            return Err(syntax(format!(
                "template: multiple definition of template {name:?}"
            )));
        }
        Ok((keyword == "block").then(|| Node::Template {
            name: name.clone(),
            pipe,
            offset,
        }))
    }

    /// `if` / `with` with their `else if` / `else with` / `else` chains, up to the shared `end`.
    fn conditional(
        &mut self,
        keyword: &str,
        pipe: Pipeline,
        offset: usize,
    ) -> Result<Node, TemplateError> {
        self.enter(offset)?;
        let node = self.conditional_body(keyword, pipe, offset);
        self.depth -= 1;
        node
    }

    fn enter(&mut self, offset: usize) -> Result<(), TemplateError> {
        self.depth += 1;
        if self.depth > super::MAX_NESTING {
            return Err(syntax(
                offset,
                format!(
                    "blocks nested more than {} deep (`if`, `with`, `range`, `else if`)",
                    super::MAX_NESTING
                ),
            ));
        }
        Ok(())
    }

    fn conditional_body(
        &mut self,
        keyword: &str,
        pipe: Pipeline,
        offset: usize,
    ) -> Result<Node, TemplateError> {
        let (body, end) = self.list()?;
        let otherwise = match end {
            Terminator::Close(_) => None,
            Terminator::Eof => {
                return Err(TemplateError::Syntax {
                    offset,
                    message: format!("`{keyword}` without `end`"),
                });
            }
            Terminator::Else(_, None) => {
                let (o, end) = self.list()?;
                match end {
                    Terminator::Close(_) => Some(o),
                    _ => {
                        return Err(TemplateError::Syntax {
                            offset,
                            message: format!("`{keyword} ... else` without `end`"),
                        });
                    }
                }
            }
            Terminator::Else(at, Some((k, p))) => Some(vec![self.conditional(&k, p, at)?]),
        };
        Ok(if keyword == "if" {
            match otherwise {
                // Flatten `else if` chains into one node so they print like Go's.
                Some(mut o) if o.len() == 1 && matches!(o[0], Node::If { .. }) => match o.remove(0)
                {
                    Node::If {
                        branches,
                        otherwise,
                    } => {
                        let mut all = vec![(pipe, body)];
                        all.extend(branches);
                        Node::If {
                            branches: all,
                            otherwise,
                        }
                    }
                    _ => unreachable!(),
                },
                o => Node::If {
                    branches: vec![(pipe, body)],
                    otherwise: o,
                },
            }
        } else {
            Node::With {
                pipe,
                body,
                otherwise,
            }
        })
    }
}

fn syntax(offset: usize, message: impl Into<String>) -> TemplateError {
    TemplateError::Syntax {
        offset,
        message: message.into(),
    }
}

/// Parses `[$a[, $b] (:= | =)] cmd | cmd ...`.
// Long: Go's pipeline grammar (declarations, commands, arguments, parenthesised pipelines) in
// one place, its cases in the order Go's parser takes them; split, that order is lost.
fn pipeline(toks: &[(Tok, usize)], offset: usize, range: bool) -> Result<Pipeline, TemplateError> {
    let mut vars = Vec::new();
    let mut assign = false;
    let mut rest = toks;
    // Declarations: `$x :=`, `$i, $v :=` (range only), `$x =`.
    let decl_end = toks
        .iter()
        .position(|(t, _)| matches!(t, Tok::Declare | Tok::Assign));
    if let Some(end) = decl_end
        && toks[..end]
            .iter()
            .all(|(t, _)| matches!(t, Tok::Var(_, p) if p.is_empty()) || matches!(t, Tok::Comma))
        && end > 0
    {
        for (t, _) in &toks[..end] {
            // Go lets `$` itself be declared anew (it shadows the data from there on).
            if let Tok::Var(name, _) = t {
                vars.push(name.clone());
            }
        }
        if vars.len() > 2 || (vars.len() == 2 && !range) {
            return Err(syntax(toks[0].1, "too many variables in declaration"));
        }
        assign = matches!(toks[end].0, Tok::Assign);
        rest = &toks[end + 1..];
    }
    let mut cmds = Vec::new();
    let mut i = 0;
    let mut current: Vec<(Arg, usize)> = Vec::new();
    let mut cmd_offset = rest.first().map(|t| t.1).unwrap_or(offset);
    while i < rest.len() {
        let (tok, at) = &rest[i];
        match tok {
            Tok::Pipe => {
                if current.is_empty() {
                    return Err(syntax(*at, "missing command before `|`"));
                }
                cmds.push(Command {
                    args: std::mem::take(&mut current),
                    offset: cmd_offset,
                });
                cmd_offset = rest.get(i + 1).map(|t| t.1).unwrap_or(*at);
                i += 1;
            }
            Tok::LParen => {
                let close = matching_paren(rest, i).ok_or_else(|| syntax(*at, "unclosed `(`"))?;
                let inner = pipeline(&rest[i + 1..close], *at, false)?;
                if !inner.vars.is_empty() {
                    return Err(syntax(
                        *at,
                        "declarations are not allowed inside parentheses",
                    ));
                }
                let mut chain = Vec::new();
                let mut next = close + 1;
                if let Some((Tok::Chain(p), _)) = rest.get(next) {
                    chain = p.clone();
                    next += 1;
                }
                current.push((Arg::Sub(Box::new(inner), chain), *at));
                i = next;
            }
            Tok::RParen => return Err(syntax(*at, "unexpected `)`")),
            Tok::Declare | Tok::Assign | Tok::Comma => {
                return Err(syntax(*at, "unexpected declaration"));
            }
            Tok::Chain(_) => return Err(syntax(*at, "unexpected field")),
            Tok::Field(p) => {
                current.push((Arg::Field(p.clone()), *at));
                i += 1;
            }
            Tok::Var(n, p) => {
                current.push((Arg::Var(n.clone(), p.clone()), *at));
                i += 1;
            }
            Tok::Str(s) => {
                current.push((Arg::Str(s.clone()), *at));
                i += 1;
            }
            Tok::Int(n) => {
                current.push((Arg::Int(*n), *at));
                i += 1;
            }
            Tok::Num(n) => {
                current.push((Arg::Num(*n), *at));
                i += 1;
            }
            Tok::Ident(name) => {
                let arg = match name.as_str() {
                    "true" => Arg::Bool(true),
                    "false" => Arg::Bool(false),
                    "nil" => Arg::Nil,
                    f => {
                        if funcs::lookup(f).is_none() {
                            return Err(syntax(
                                *at,
                                format!("unknown function `{f}`{}", funcs::hint(f)),
                            ));
                        }
                        Arg::Func(f.to_string())
                    }
                };
                current.push((arg, *at));
                i += 1;
            }
        }
    }
    if current.is_empty() {
        return Err(syntax(
            cmd_offset,
            if cmds.is_empty() {
                "missing value"
            } else {
                "missing command after `|`"
            },
        ));
    }
    cmds.push(Command {
        args: current,
        offset: cmd_offset,
    });
    for (n, c) in cmds.iter().enumerate() {
        // A field path may name a method (`(now).Format "2006"`): evaluation decides.
        let method = matches!(
            c.args.first(),
            Some((Arg::Field(p) | Arg::Var(_, p) | Arg::Sub(_, p), _)) if !p.is_empty()
        );
        if let Some((Arg::Func(f), at)) = c.args.first() {
            let given = c.args.len() - 1 + usize::from(n > 0);
            funcs::check_arity(f, given).map_err(|m| syntax(*at, m))?;
        } else if method {
        } else if c.args.len() > 1 {
            return Err(syntax(c.args[1].1, "only a function can take arguments"));
        } else if n > 0 {
            return Err(syntax(
                c.offset,
                "a pipeline can only pass its value to a function",
            ));
        }
        if let Some((Arg::Nil, at)) = c.args.first()
            && c.args.len() == 1
        {
            return Err(syntax(*at, "nil is not a command"));
        }
    }
    Ok(Pipeline {
        vars,
        assign,
        cmds,
        offset,
    })
}

fn matching_paren(toks: &[(Tok, usize)], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, (t, _)) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::LParen => depth += 1,
            Tok::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// What a walk of the tree finds: references from the root, and function calls.
#[derive(Default)]
struct Found {
    refs: Vec<Reference>,
    funcs: Vec<(String, usize)>,
}

fn walk(nodes: &[Node], dot_is_root: bool, out: &mut Found) {
    for n in nodes {
        match n {
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
            Node::Template { pipe, .. } => {
                if let Some(p) = pipe {
                    pipe_refs(p, dot_is_root, out);
                }
            }
            Node::Action(p) => pipe_refs(p, dot_is_root, out),
            Node::If {
                branches,
                otherwise,
            } => {
                for (p, body) in branches {
                    pipe_refs(p, dot_is_root, out);
                    walk(body, dot_is_root, out);
                }
                if let Some(o) = otherwise {
                    walk(o, dot_is_root, out);
                }
            }
            Node::Range {
                pipe,
                body,
                otherwise,
            }
            | Node::With {
                pipe,
                body,
                otherwise,
            } => {
                pipe_refs(pipe, dot_is_root, out);
                walk(body, false, out);
                if let Some(o) = otherwise {
                    walk(o, dot_is_root, out);
                }
            }
        }
    }
}

fn pipe_refs(p: &Pipeline, dot_is_root: bool, out: &mut Found) {
    for c in &p.cmds {
        for (a, at) in &c.args {
            match a {
                Arg::Field(path) if dot_is_root && !path.is_empty() => out.refs.push(Reference {
                    path: path.clone(),
                    offset: *at,
                }),
                Arg::Var(name, path) if name.is_empty() && !path.is_empty() => {
                    out.refs.push(Reference {
                        path: path.clone(),
                        offset: *at,
                    })
                }
                Arg::Func(name) => out.funcs.push((name.clone(), *at)),
                Arg::Sub(inner, _) => pipe_refs(inner, dot_is_root, out),
                _ => {}
            }
        }
    }
}
