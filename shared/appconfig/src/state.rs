//! The install state templates render against (`{{.nuon.*}}`), in Nuon's shape (docs/app-config.md, "Templates").
//!
//! One definition serves both sides. A deploy builds it from the install's facts and renders
//! strictly; validation builds it from stand-in facts (an install that does not exist yet) and
//! checks every template path against it, then renders leniently. A path validation accepts is
//! therefore a path the deploy can render — they cannot drift apart, because there is only this
//! builder. The one difference is the *open* maps ([`is_open`]): outputs and variables whose keys
//! are only known once something has been applied; validation accepts any key below them.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::AppConfig;

/// What is known of an install when its templates are rendered.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    pub org: &'a str,
    pub app: &'a str,
    pub install: &'a str,
    /// Input values set on the install (declared inputs without a value take their default).
    pub inputs: Option<&'a BTreeMap<String, String>>,
    pub sandbox_outputs: Option<&'a Map<String, Value>>,
    /// Outputs of the components applied so far.
    pub component_outputs: Option<&'a BTreeMap<String, Map<String, Value>>>,
    /// Each action's latest run.
    pub actions: Option<&'a BTreeMap<String, ferry_model::ActionState>>,
    /// The install stack as the runner last reported it.
    pub install_stack: Option<&'a ferry_model::StackState>,
    /// The install stack's template as last published for the customer.
    pub stack_template: Option<&'a ferry_model::StackTemplate>,
}

/// The state for `facts`: `{"nuon": {...}}` with every root of Nuon's state present.
pub fn build(cfg: &AppConfig, facts: &Facts) -> Value {
    let empty = Map::new();
    let inputs: Map<String, Value> = cfg
        .inputs
        .iter()
        .map(|i| {
            let v = facts
                .inputs
                .and_then(|given| given.get(&i.name))
                .or(i.default.as_ref())
                .cloned()
                .unwrap_or_default();
            (i.name.clone(), Value::String(v))
        })
        .collect();
    let sandbox_outputs = Value::Object(facts.sandbox_outputs.unwrap_or(&empty).clone());
    let components = components(cfg, facts);
    let workflows = action_runs(cfg, facts);
    // `.nuon.secrets.NAME` is the secret's status as the install's runner saw it in the account,
    // never its value: values stay in the install.
    let secrets: Map<String, Value> = cfg
        .secrets
        .iter()
        .map(|s| {
            let seen = facts.install_stack.and_then(|st| st.secrets.get(&s.name));
            let status = json!({
                "name": s.name,
                "arn": seen.map_or("", |x| x.arn.as_str()),
                "kubernetes_namespace": "", "kubernetes_name": "", "kubernetes_key": "",
                "timestamp": seen.map_or("", |x| x.timestamp.as_str()),
                "length": seen.map_or(0, |x| x.length),
                "exists": seen.is_some(),
            });
            (s.name.clone(), status)
        })
        .collect();
    let sandbox_type = cfg.sandbox.as_ref().map_or("", |s| s.kind.as_str());
    json!({
        "nuon": {
            "id": facts.install,
            "name": facts.install,
            "org": { "id": facts.org, "name": facts.org, "status": "active" },
            "app": { "id": facts.app, "name": facts.app, "status": "active", "variables": {} },
            "inputs": { "inputs": inputs.clone() },
            "sandbox": {
                "status": "", "type": sandbox_type, "version": "",
                "outputs": sandbox_outputs.clone(), "recent_runs": [],
            },
            "runner": { "id": "", "runner_group_id": "", "status": "" },
            "components": components,
            "actions": { "workflows": workflows },
            "domain": { "public_domain": "", "internal_domain": "" },
            "cloud_account": { "aws": { "region": "" }, "azure": { "location": "" } },
            "install_stack": {
                "outputs": facts.install_stack.map(|s| s.outputs.clone()).unwrap_or_default(),
                "status": facts.install_stack.map_or("", |s| s.status.as_str()),
                "quick_link_url": facts.stack_template.map_or("", |t| t.quick_link_url.as_str()),
                "template_url": facts.stack_template.map_or("", |t| t.template_url.as_str()),
                "template_json": "",
                "checksum": facts.stack_template.map_or("", |t| t.checksum.as_str()),
            },
            "secrets": secrets,
            "labels": {},
            "install": {
                "id": facts.install,
                "name": facts.install,
                "public_domain": "",
                "internal_domain": "",
                "sandbox": { "outputs": sandbox_outputs },
                "inputs": inputs,
            },
        }
    })
}

/// `.nuon.components.NAME`: each component's outputs so far (the rest of Nuon's fields empty).
fn components(cfg: &AppConfig, facts: &Facts) -> Map<String, Value> {
    cfg.components
        .iter()
        .map(|c| {
            let outputs = facts
                .component_outputs
                .and_then(|o| o.get(&c.name))
                .cloned()
                .unwrap_or_default();
            let state = json!({
                "outputs": outputs,
                "status": "",
                "build_id": "",
                "component_id": c.name,
                "install_component_id": "",
                "name": c.name,
            });
            (c.name.clone(), state)
        })
        .collect()
}

/// `.nuon.actions.workflows.NAME`: each action's latest run.
fn action_runs(cfg: &AppConfig, facts: &Facts) -> Map<String, Value> {
    cfg.actions
        .iter()
        .map(|a| {
            let state = match facts.actions.and_then(|runs| runs.get(&a.name)) {
                Some(run) => json!({
                    "id": run.workflow, "status": run.status, "outputs": run.outputs,
                }),
                None => json!({ "id": "", "status": "", "outputs": {} }),
            };
            (a.name.clone(), state)
        })
        .collect()
}

/// Maps below `.nuon` whose keys are known only after something ran: any key is accepted there at
/// validation (a missing one fails at deploy, with the path in the message).
pub fn is_open(path: &[&str]) -> bool {
    matches!(
        path,
        ["sandbox", "outputs" | "recent_runs"]
            | ["install", "sandbox", "outputs"]
            | ["components", _, "outputs"]
            | ["actions", "workflows", _, "outputs"]
            | ["install_stack", "outputs"]
            | ["app", "variables"]
            | ["labels"]
    )
}

/// How a path below `.nuon` fares against a state from [`build`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The path exists (or goes below an open map).
    Found,
    /// `path[..=at]` does not exist; `known` are the keys that do at that level.
    Missing { at: usize, known: Vec<String> },
    /// `path[..at]` is a value that has no fields.
    NotAMap { at: usize },
}

/// Walks `path` (below `.nuon`) in `state` (a value from [`build`]).
pub fn lookup(state: &Value, path: &[&str]) -> Lookup {
    let mut cur = &state["nuon"];
    for (i, key) in path.iter().enumerate() {
        if is_open(&path[..i]) {
            return Lookup::Found;
        }
        match cur {
            Value::Object(m) => match m.get(*key) {
                Some(v) => cur = v,
                None => {
                    return Lookup::Missing {
                        at: i,
                        known: m.keys().cloned().collect(),
                    };
                }
            },
            _ => return Lookup::NotAMap { at: i },
        }
    }
    Lookup::Found
}

/// Every path of a state from [`build`] down to its leaves and open maps (for tests and docs).
pub fn paths(state: &Value) -> Vec<Vec<String>> {
    fn walk(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        let as_str: Vec<&str> = prefix.iter().map(String::as_str).collect();
        match v {
            Value::Object(m) if !is_open(&as_str) && !m.is_empty() => {
                for (k, x) in m {
                    prefix.push(k.clone());
                    walk(x, prefix, out);
                    prefix.pop();
                }
            }
            _ => out.push(prefix.clone()),
        }
    }
    let mut out = Vec::new();
    walk(&state["nuon"], &mut Vec::new(), &mut out);
    out
}
