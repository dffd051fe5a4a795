//! Templates in values: each is parsed once, its references checked against the state of a
//! stand-in install (built as deploys build it), and the components it reads become implicit
//! dependencies.

use super::*;

impl<'a> Loader<'a> {
    pub(super) fn template(
        &mut self,
        site: &Site,
        ctx: &RefCtx,
        implicit: &mut BTreeMap<String, BTreeSet<String>>,
    ) {
        let src = self.text(&site.file);
        let at = |off: usize| {
            if site.exact {
                site.start + off
            } else {
                site.start
            }
        };
        if !crate::template::is_template(&site.text) {
            self.diags.push(
                &site.file,
                src,
                site.start,
                Severity::Warning,
                "not a template: a string without `.nuon` is never rendered (Nuon passes it through), so its `{{ }}` appear literally",
            );
            return;
        }
        let deploy_fails = "Nuon accepts it, but rendering it at deploy fails";
        let t = match Template::parse(&site.text) {
            Ok(t) => t,
            Err(e) => {
                self.diags.push(
                    &site.file,
                    src,
                    at(e.offset()),
                    Severity::Warning,
                    format!("template: {e} ({deploy_fails})"),
                );
                return;
            }
        };
        for (f, off) in t.functions() {
            if let Some(why) = crate::template::differs_from_nuon(&f) {
                self.diags.push(
                    &site.file,
                    src,
                    at(off),
                    Severity::Warning,
                    format!("template: {why}"),
                );
            }
        }
        let mut failed = false;
        for r in t.references() {
            let (dep, finding) = ctx.check(&r.path, &site.owner);
            if let Some(dep) = dep {
                implicit.entry(site.owner.clone()).or_default().insert(dep);
            }
            if let Some((severity, msg)) = finding {
                failed = true;
                self.diags
                    .push(&site.file, src, at(r.offset), severity, msg);
            }
            if let Some(seg) = r.path.iter().find(|s| s.contains('-')) {
                self.diags.push(&site.file, src, at(r.offset), Severity::Warning, format!(
                    "`{seg}` in a field path is not valid Go template syntax ({deploy_fails}): write `index .nuon.components \"{seg}\"`"
                ));
            }
        }
        if !failed && let Err(e) = t.render(ctx.state, Mode::Lenient) {
            self.diags.push(
                &site.file,
                src,
                at(e.offset()),
                Severity::Warning,
                format!("template: {e} ({deploy_fails})"),
            );
        }
    }
}

pub(super) struct RefCtx<'a> {
    /// The state of a stand-in install, from the same builder deploys use.
    pub(super) state: &'a Value,
    pub(super) has_sandbox: bool,
}

impl RefCtx<'_> {
    /// Checks one reference from the root. Returns the component it reads (an implicit dependency)
    /// and what is wrong with it, if anything. Errors are only what Nuon itself refuses at sync
    /// (docs/app-config.md, "Templates"): references to components or actions that do not exist, and references
    /// the owner may not make. Everything else fails only when rendered, so it is a warning.
    pub(super) fn check(
        &self,
        path: &[String],
        owner: &str,
    ) -> (Option<String>, Option<(Severity, String)>) {
        let p: Vec<&str> = path.iter().map(String::as_str).collect();
        let shown = format!(".{}", p.join("."));
        let warn = |m: String| Some((Severity::Warning, m));
        let rest = match p.split_first() {
            Some((&"nuon" | &"ferry", rest)) => rest,
            _ => {
                return (
                    None,
                    warn(format!(
                        "template path `{shown}` does not start with `.nuon`: it fails when rendered at deploy"
                    )),
                );
            }
        };
        // Nuon checks references in these blocks when the app is synced: there, what it refuses is
        // an error; elsewhere a warning.
        let checked = owner.starts_with("component:")
            || owner.starts_with("action:")
            || owner == "sandbox"
            || owner == "stack";
        let severity = if checked {
            Severity::Error
        } else {
            Severity::Warning
        };
        let refuse = |m: &str| Some((severity, m.to_string()));
        match rest {
            ["components", name, ..] => match self.component_ref(name, owner) {
                Err(m) => (None, Some((severity, m))),
                Ok(()) => (Some(name.to_string()), self.walk(rest, &shown)),
            },
            ["actions", "workflows", name, ..] | ["actions", name, ..] if *name != "workflows" => {
                match self.action_ref(name, owner) {
                    Err(m) => (None, Some((severity, m))),
                    Ok(()) if rest[1] != "workflows" => (
                        None,
                        warn(format!(
                            "`{shown}` fails when rendered at deploy: action state is read as `.nuon.actions.workflows.{name}`"
                        )),
                    ),
                    Ok(()) => (None, self.walk(rest, &shown)),
                }
            }
            ["sandbox", ..] | ["install", "sandbox", ..] if owner == "stack" => (
                None,
                refuse("stack fields cannot read the sandbox: the stack is created before it"),
            ),
            ["sandbox", "outputs", ..] | ["install", "sandbox", "outputs", ..]
                if !self.has_sandbox =>
            {
                (
                    None,
                    warn("the app has no sandbox.toml, so it has no sandbox outputs".into()),
                )
            }
            ["inputs", name, ..] if *name != "inputs" => (
                None,
                warn(format!(
                    "inputs are read as `.nuon.inputs.inputs.{name}`, not `{shown}` (it fails when rendered at deploy)"
                )),
            ),
            _ => (None, self.walk(rest, &shown)),
        }
    }

    /// Whether `owner` may read component `name`'s outputs (Nuon refuses it at sync otherwise).
    fn component_ref(&self, name: &str, owner: &str) -> Result<(), String> {
        let names = self.known(&["components"]);
        if owner == "stack" {
            Err("stack fields cannot read components: the stack is created before them".into())
        } else if owner == format!("component:{name}") {
            Err(format!("component `{name}` cannot read its own outputs"))
        } else if !names.iter().any(|n| n == name) {
            let hint = did_you_mean(name, names.iter().map(String::as_str));
            Err(format!("unknown component `{name}`{hint}"))
        } else {
            Ok(())
        }
    }

    /// Whether `owner` may read action `name`'s outputs (Nuon refuses it at sync otherwise).
    fn action_ref(&self, name: &str, owner: &str) -> Result<(), String> {
        let names = self.known(&["actions", "workflows"]);
        if owner == "stack" || owner == "sandbox" {
            Err(format!("{owner} fields cannot read action outputs"))
        } else if !names.iter().any(|n| n == name) {
            let hint = did_you_mean(name, names.iter().map(String::as_str));
            Err(format!("unknown action `{name}`{hint}"))
        } else {
            Ok(())
        }
    }

    /// The keys of the stand-in state under `.nuon.<at>` (the components, or the actions).
    fn known(&self, at: &[&str]) -> Vec<String> {
        at.iter()
            .fold(&self.state["nuon"], |v, k| &v[*k])
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The path against the stand-in state: a missing key fails at deploy.
    fn walk(&self, rest: &[&str], shown: &str) -> Option<(Severity, String)> {
        use crate::state::{Lookup, lookup};
        let msg = match lookup(self.state, rest) {
            Lookup::Found => return None,
            Lookup::Missing { at, known } => {
                let key = rest[at];
                let hint = did_you_mean(key, known.iter().map(String::as_str));
                match rest {
                    ["inputs", "inputs", ..] | ["install", "inputs", ..] if at == 2 => {
                        format!("unknown input `{key}`{hint}")
                    }
                    ["secrets", ..] if at == 1 => format!("unknown secret `{key}`{hint}"),
                    [..] if at == 0 => format!("unknown template root `.nuon.{key}`{hint}"),
                    _ => format!(
                        "`{shown}`: `.nuon.{}` has no field `{key}`{hint}",
                        rest[..at].join(".")
                    ),
                }
            }
            Lookup::NotAMap { at } => format!(
                "`{shown}`: `.nuon.{}` is a value, not a map",
                rest[..at].join(".")
            ),
        };
        Some((
            Severity::Warning,
            format!("{msg}: it fails when rendered at deploy"),
        ))
    }
}
