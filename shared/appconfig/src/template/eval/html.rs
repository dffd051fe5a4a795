//! Rendering as html/template does: the template's text and each action's output escaped for
//! where they stand in the document (`htmlesc.rs`).

use super::super::htmlctx::{Context as HtmlContext, Delim, State};
use super::super::htmlesc::{self, Esc};
use super::super::parse::{Arg, Command, Pipeline};
use super::super::value::V;
use super::{Ctx, TemplateError};

impl Ctx<'_> {
    /// Template text, as html/template writes it, and the context after it.
    pub(super) fn html_text(
        &mut self,
        c: HtmlContext,
        t: &str,
        out: &mut String,
    ) -> Result<(), TemplateError> {
        let (c, text) =
            htmlesc::text(c, t).map_err(|message| TemplateError::Eval { offset: 0, message })?;
        self.html = Some(c);
        out.push_str(&text);
        Ok(())
    }

    /// An action printing into an HTML document: its value through the escapers of its context.
    /// Go's own `html` and `urlquery` may only end a pipeline, where they stand in for their
    /// equivalent escaper.
    pub(super) fn html_action(
        &mut self,
        c: HtmlContext,
        p: &Pipeline,
        dot: &V,
        out: &mut String,
    ) -> Result<(), TemplateError> {
        let fail = |message: String| TemplateError::Eval {
            offset: p.offset,
            message,
        };
        let (after, mut escs) = htmlesc::action(c).map_err(fail)?;
        let predefined = |cmd: &Command| match cmd.args.first() {
            Some((Arg::Func(n), _)) if n == "html" || n == "urlquery" => Some(n.clone()),
            _ => None,
        };
        let last = p.cmds.len().saturating_sub(1);
        if let Some((pos, name)) = p
            .cmds
            .iter()
            .enumerate()
            .find_map(|(i, cmd)| predefined(cmd).map(|n| (i, n)))
        {
            let unquoted = after.state == State::Attr && after.delim == Delim::SpaceOrTagEnd;
            if pos < last || (unquoted && name == "html") {
                return Err(fail(format!(
                    "predefined escaper {name:?} disallowed in template"
                )));
            }
        }
        let stand_in = p
            .cmds
            .last()
            .and_then(predefined)
            .filter(|name| escs.iter().any(|e| e.equivalent() == Some(name.as_str())));
        let value = match stand_in {
            Some(name) => {
                let builtin = if name == "html" {
                    Esc::BuiltinHtml
                } else {
                    Esc::BuiltinUrlquery
                };
                for e in escs
                    .iter_mut()
                    .filter(|e| e.equivalent() == Some(name.as_str()))
                {
                    *e = builtin;
                }
                match &p.cmds[last] {
                    // `{{ html .a .b }}`: its arguments printed as one, then the escapers.
                    cmd if p.cmds.len() == 1 && cmd.args.len() > 1 => {
                        let mut print = cmd.clone();
                        print.args[0].0 = Arg::Func("print".into());
                        self.command(&print, dot, None)?
                    }
                    _ => {
                        let mut rest = p.clone();
                        rest.cmds.pop();
                        self.pipeline_value(&rest, dot)?
                    }
                }
            }
            None => self.pipeline_value(p, dot)?,
        };
        out.push_str(&htmlesc::apply(&htmlesc::dedup(escs), &value));
        self.html = Some(after);
        Ok(())
    }
}
