//! Actions (triggers, steps, timeouts) and runbooks (steps that deploy components or run
//! actions).

use super::*;

impl<'a> Loader<'a> {
    /// The actions, each with its triggers, steps, dependencies and timeout.
    pub(super) fn actions(
        &mut self,
        docs: Vec<(Doc, &'static Schema)>,
        components: &BTreeSet<String>,
    ) -> Vec<Action> {
        let mut out: Vec<Action> = Vec::new();
        for (doc, schema) in docs {
            let r = &doc.root;
            let name = r.str_of("name").unwrap_or_default().to_string();
            self.check(&doc, r, schema, &format!("action:{name}"), true);
            let name_at = r.get("name").map(|n| n.span.start).unwrap_or(0);
            if out.iter().any(|a| a.name == name) && !name.is_empty() {
                self.err(
                    &doc.path,
                    name_at,
                    format!("action `{name}` is declared twice"),
                );
                continue;
            }
            let triggers = self.triggers(&doc, r, components);
            let steps = self.action_steps(&doc, r);
            let inputs = action_inputs(r);
            let deps = self.action_dependencies(&doc, r, components);
            let timeout_secs = r.str_of("timeout").and_then(parse_duration);
            if let (Some(t), Some(n)) = (timeout_secs, r.get("timeout"))
                && t > MAX_ACTION_TIMEOUT_SECS
            {
                self.err(
                    &doc.path,
                    n.span.start,
                    "an action's `timeout` is at most `1h`",
                );
            }
            self.known_role(&doc.path, r.get("role"));
            out.push(Action {
                name,
                file: doc.path.clone(),
                triggers,
                steps,
                timeout_secs,
                dependencies: deps,
                inputs,
                break_glass_role: r.str_of("break_glass_role").map(String::from),
                role: r.str_of("role").map(String::from),
            });
        }
        out
    }

    /// An action's triggers: Nuon's legacy spellings rewritten, at most one `cron`, and
    /// `component_name` exactly on the component triggers.
    fn triggers(&mut self, doc: &Doc, r: &Node, components: &BTreeSet<String>) -> Vec<Trigger> {
        let mut crons = 0;
        r.get("triggers")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .map(|t| self.trigger(doc, t, components, &mut crons))
            .collect()
    }

    fn trigger(
        &mut self,
        doc: &Doc,
        t: &Node,
        components: &BTreeSet<String>,
        crons: &mut usize,
    ) -> Trigger {
        let written = t.str_of("type").unwrap_or_default();
        // Nuon rewrites its legacy spellings.
        let kind = match written {
            "pre-component-deploy" => "pre-deploy-component",
            "post-component-deploy" => "post-deploy-component",
            k => k,
        }
        .to_string();
        let at = t.get("type").map(|n| n.span.start).unwrap_or(t.span.start);
        if kind == "cron" {
            *crons += 1;
            if *crons == 2 {
                self.err(&doc.path, at, "an action has at most one `cron` trigger");
            }
            if t.str_of("cron_schedule").is_none_or(str::is_empty) {
                self.warn(
                    &doc.path,
                    at,
                    "this `cron` trigger has no `cron_schedule`: it never fires".to_string(),
                );
            }
        }
        if kind != "cron"
            && let Some(n) = t.get("cron_schedule")
        {
            self.err(
                &doc.path,
                n.span.start,
                format!("`cron_schedule` is only used by `cron` triggers, not `{kind}`"),
            );
        }
        if !matches!(kind.as_str(), "manual" | "cron" | "")
            && !ferry_model::fires(&kind)
            && schema::TRIGGER_TYPES.contains(&kind.as_str())
        {
            self.warn(
                &doc.path,
                at,
                format!("Ferry has no operation that fires `{kind}`: this trigger never fires"),
            );
        }
        let component = self.trigger_component(doc, t, &kind, at, components);
        Trigger {
            kind,
            cron_schedule: t
                .str_of("cron_schedule")
                .filter(|c| !c.is_empty())
                .map(String::from),
            component,
        }
    }

    /// The component a trigger names: required by component triggers (and known), refused on
    /// the others.
    fn trigger_component(
        &mut self,
        doc: &Doc,
        t: &Node,
        kind: &str,
        at: usize,
        components: &BTreeSet<String>,
    ) -> Option<String> {
        let component = t.str_of("component_name").map(String::from);
        if schema::COMPONENT_TRIGGERS.contains(&kind) {
            match (&component, t.get("component_name")) {
                (None, _) => self.err(
                    &doc.path,
                    at,
                    format!("a `{kind}` trigger needs `component_name`"),
                ),
                (Some(c), Some(n)) if !components.contains(c) => {
                    let hint = did_you_mean(c, components.iter().map(String::as_str));
                    self.err(
                        &doc.path,
                        n.span.start,
                        format!("unknown component `{c}` in trigger{hint}"),
                    );
                }
                _ => {}
            }
        } else if let Some(n) = t.get("component_name") {
            self.err(
                &doc.path,
                n.span.start,
                format!("`component_name` is only used by component triggers, not `{kind}`"),
            );
        }
        component
    }

    /// An action's steps; each runs `command` or `inline_contents` (or a repository's), and
    /// step names are unique (later steps read earlier ones' outputs by name).
    fn action_steps(&mut self, doc: &Doc, r: &Node) -> Vec<ActionStep> {
        let mut steps = Vec::new();
        for s in r.get("steps").map(Node::items).unwrap_or_default() {
            let step_name = s.str_of("name").unwrap_or_default().to_string();
            match (s.entry("command"), s.entry("inline_contents")) {
                (None, None)
                    if s.get("public_repo").is_none() && s.get("connected_repo").is_none() =>
                {
                    self.err(
                        &doc.path,
                        s.span.start,
                        format!("step `{step_name}` needs `command` or `inline_contents`"),
                    )
                }
                (Some(_), Some(e)) => self.err(
                    &doc.path,
                    e.key_span.start,
                    format!(
                        "step `{step_name}`: `command` and `inline_contents` are mutually exclusive"
                    ),
                ),
                _ => {}
            }
            if steps.iter().any(|x: &ActionStep| x.name == step_name) {
                let at = s.get("name").map_or(s.span.start, |n| n.span.start);
                self.err(
                    &doc.path,
                    at,
                    format!("step `{step_name}` is declared twice in this action"),
                );
            }
            self.known_role(&doc.path, s.get("role"));
            steps.push(ActionStep {
                name: step_name,
                command: s.str_of("command").map(String::from),
                script: s
                    .str_of("inline_contents")
                    .map(|v| self.contents("actions", v)),
                env_vars: string_map(s.get("env_vars")),
                role: s.str_of("role").map(String::from),
            });
        }
        steps
    }

    /// An action's explicit dependencies, each a known component.
    fn action_dependencies(
        &mut self,
        doc: &Doc,
        r: &Node,
        components: &BTreeSet<String>,
    ) -> Vec<String> {
        let mut deps = Vec::new();
        for d in r.get("dependencies").map(Node::items).unwrap_or_default() {
            let Some(dep) = d.as_str() else { continue };
            if components.contains(dep) {
                deps.push(dep.to_string());
            } else {
                let hint = did_you_mean(dep, components.iter().map(String::as_str));
                self.err(
                    &doc.path,
                    d.span.start,
                    format!("unknown component `{dep}` in dependencies{hint}"),
                );
            }
        }
        deps
    }

    pub(super) fn runbooks(
        &mut self,
        docs: Vec<(Doc, &'static Schema)>,
        components: &BTreeSet<String>,
        actions: &BTreeSet<String>,
    ) -> Vec<Runbook> {
        let mut out = Vec::new();
        for (doc, schema) in docs {
            let r = &doc.root;
            self.check(&doc, r, schema, "runbook", true);
            let name = r.str_of("name").unwrap_or_default().to_string();
            let mut steps = Vec::new();
            let mut inline_actions = Vec::new();
            for s in r.get("steps").map(Node::items).unwrap_or_default() {
                let Some(kind) = self.runbook_step(&doc, s, components, actions) else {
                    continue;
                };
                let step = s.str_of("name").unwrap_or_default().to_string();
                let kind = match kind {
                    // An inline action becomes an action of its own, `RUNBOOK.STEP`.
                    RunbookStepKind::Action { action } if action.is_empty() => {
                        let action = format!("{name}.{step}");
                        self.known_role(&doc.path, s.get("role"));
                        inline_actions.push(Action {
                            name: action.clone(),
                            file: doc.path.clone(),
                            triggers: vec![],
                            steps: vec![ActionStep {
                                name: "run".into(),
                                command: s.str_of("command").map(String::from),
                                script: s.str_of("inline_contents").map(|v| self.contents("", v)),
                                env_vars: string_map(s.get("env_vars")),
                                role: s.str_of("role").map(String::from),
                            }],
                            timeout_secs: s.str_of("timeout").and_then(parse_duration),
                            dependencies: vec![],
                            inputs: vec![],
                            break_glass_role: None,
                            role: None,
                        });
                        RunbookStepKind::Action { action }
                    }
                    k => k,
                };
                steps.push(RunbookStep { name: step, kind });
            }
            out.push(Runbook {
                name,
                file: doc.path.clone(),
                steps,
                inline_actions,
            });
        }
        out
    }

    /// Keys only `action` steps take, refused on a `written` step.
    fn no_action_keys(&mut self, doc: &Doc, s: &Node, written: &str) {
        let mut push = |at: usize, msg: String| {
            self.diags
                .push(&doc.path, &doc.src, at, Severity::Error, msg)
        };
        for k in [
            "command",
            "inline_contents",
            "env_vars",
            "timeout",
            "action_name",
        ] {
            if let Some(e) = s.entry(k) {
                push(
                    e.key_span.start,
                    format!("`{k}` belongs to `action` steps, not `{written}`"),
                );
            }
        }
    }

    /// An `action` step given inline (`command` or `inline_contents`): its kind, or `Err` when
    /// it also names `action_name`; `Ok(None)` when it is not inline.
    fn inline_action(
        &mut self,
        doc: &Doc,
        s: &Node,
        name: &str,
    ) -> Result<Option<RunbookStepKind>, ()> {
        let inline = s.entry("command").or(s.entry("inline_contents"));
        let mut push = |at: usize, msg: String| {
            self.diags
                .push(&doc.path, &doc.src, at, Severity::Error, msg)
        };
        if let (Some(_), Some(i)) = (s.entry("action_name"), inline) {
            push(
                i.key_span.start,
                format!(
                    "step `{name}`: an `action` step runs `action_name` or an inline action (`{}`), not both",
                    i.key
                ),
            );
            return Err(());
        }
        if inline.is_some() {
            if let (Some(_), Some(e)) = (s.entry("command"), s.entry("inline_contents")) {
                push(
                    e.key_span.start,
                    format!(
                        "step `{name}`: `command` and `inline_contents` are mutually exclusive"
                    ),
                );
            }
            return Ok(Some(RunbookStepKind::Action {
                action: String::new(),
            }));
        }
        Ok(None)
    }

    /// One runbook step: a component's deploy or teardown, the sandbox's reprovision or
    /// deprovision, or an action — a declared one (`action_name`) or one given inline
    /// (`command` / `inline_contents`; its action's name is empty here).
    pub(super) fn runbook_step(
        &mut self,
        doc: &Doc,
        s: &Node,
        components: &BTreeSet<String>,
        actions: &BTreeSet<String>,
    ) -> Option<RunbookStepKind> {
        let name = s.str_of("name").unwrap_or_default().to_string();
        let written = s.str_of("type")?;
        if written != "action" {
            self.no_action_keys(doc, s, written);
        }
        let (key, known, what) = match written {
            "action" => ("action_name", actions, "action"),
            "sandbox_reprovision" => {
                return Some(RunbookStepKind::SandboxReprovision {
                    skip_components: s.bool_of("skip_component_deploys").unwrap_or(false),
                });
            }
            "sandbox_deprovision" => return Some(RunbookStepKind::SandboxDeprovision),
            "component_deploy" | "deploy" | "component_tear_down" => {
                ("component_name", components, "component")
            }
            _ => return None,
        };
        if written == "action" {
            match self.inline_action(doc, s, &name) {
                Ok(Some(kind)) => return Some(kind),
                Err(()) => return None,
                Ok(None) => {}
            }
        }
        let mut push = |at: usize, msg: String| {
            self.diags
                .push(&doc.path, &doc.src, at, Severity::Error, msg)
        };
        let Some(n) = s.get(key) else {
            let want = if written == "action" {
                "`action_name`, or an inline `command` or `inline_contents`"
            } else {
                "`component_name`"
            };
            push(s.span.start, format!("a `{written}` step needs {want}"));
            return None;
        };
        let target = n.as_str().unwrap_or_default().to_string();
        if !known.contains(&target) {
            let hint = did_you_mean(&target, known.iter().map(String::as_str));
            push(n.span.start, format!("unknown {what} `{target}`{hint}"));
        }
        Some(match written {
            "action" => RunbookStepKind::Action { action: target },
            "component_tear_down" => RunbookStepKind::ComponentTearDown { component: target },
            _ => RunbookStepKind::Deploy {
                component: target,
                dependents: s
                    .bool_of("deploy_dependents")
                    .or(s.bool_of("deploy_dependencies"))
                    .unwrap_or(false),
                plan_only: s.bool_of("plan_only").unwrap_or(false),
            },
        })
    }
}

/// The inputs of an action and of its steps (Nuon declares them on either), in that order.
fn action_inputs(r: &Node) -> Vec<ActionInput> {
    let steps = r.get("steps").map(Node::items).unwrap_or_default();
    std::iter::once(r)
        .chain(steps)
        .flat_map(|n| n.get("inputs").map(Node::items).unwrap_or_default())
        .filter_map(|i| {
            Some(ActionInput {
                name: i.str_of("name")?.to_string(),
                default: i.get("default").and_then(Node::scalar_text),
                required: i.bool_of("required").unwrap_or(false),
                kind: i.str_of("type").unwrap_or("string").to_string(),
            })
        })
        .collect()
}

/// Longest action timeout Nuon accepts.
const MAX_ACTION_TIMEOUT_SECS: f64 = 3600.0;
