//! What a package says, as Ferry uses it: the [`AppConfig`] and its parts, with what the control
//! plane asks of them (input checks, rendering, which components read which inputs).

use std::collections::{BTreeMap, BTreeSet};

use ferry_protocol::messages::KindSettings;
use serde_json::Value;

use crate::schema;
use crate::template::Template;

#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    pub metadata: Metadata,
    pub inputs: Vec<Input>,
    pub secrets: Vec<super::Secret>,
    /// The roles the install stack creates (`permissions/`, `break_glass`).
    pub roles: Vec<super::CloudRole>,
    /// `operation_roles`: which role a principal uses for an operation, where not its default.
    pub operation_roles: Vec<super::OperationRule>,
    /// `stack.toml`.
    pub stack: Option<super::InstallStack>,
    /// The sandbox, deployed first, like a component named `sandbox`.
    pub sandbox: Option<Component>,
    pub components: Vec<Component>,
    pub actions: Vec<Action>,
    pub runbooks: Vec<Runbook>,
    pub installs: Vec<InstallDecl>,
    pub policies: Vec<Policy>,
    /// Deploy stages of the components (not the sandbox), from explicit and implicit dependencies.
    pub deploy_order: Vec<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    pub version: String,
    pub description: Option<String>,
    pub display_name: Option<String>,
    pub readme: Option<String>,
    /// The readme's text: the file `readme` names, or `readme` itself when inline. Rendered per
    /// install as Nuon renders it ([`crate::template::render_readme`]).
    pub readme_text: Option<String>,
    /// Free-form tables (`[onboarding]`, ...), kept as they are.
    pub extra: serde_json::Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    pub group: Option<String>,
    pub default: Option<String>,
    pub required: bool,
    pub sensitive: bool,
    pub kind: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentType {
    /// Ferry's own: `plan.sh` / `apply.sh` / `teardown.sh` from the component's directory.
    Script,
    TerraformModule,
    HelmChart,
    KubernetesManifest,
    ContainerImage,
    DockerBuild,
    Job,
    Pulumi,
}

impl ComponentType {
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentType::Script => "script",
            ComponentType::TerraformModule => "terraform_module",
            ComponentType::HelmChart => "helm_chart",
            ComponentType::KubernetesManifest => "kubernetes_manifest",
            ComponentType::ContainerImage => "container_image",
            ComponentType::DockerBuild => "docker_build",
            ComponentType::Job => "job",
            ComponentType::Pulumi => "pulumi",
        }
    }

    pub(super) fn from_name(s: &str) -> Option<ComponentType> {
        Some(match s {
            "script" => ComponentType::Script,
            "terraform_module" | "terraform" => ComponentType::TerraformModule,
            "helm_chart" => ComponentType::HelmChart,
            "kubernetes_manifest" => ComponentType::KubernetesManifest,
            "container_image" | "external_image" => ComponentType::ContainerImage,
            "docker_build" => ComponentType::DockerBuild,
            "job" => ComponentType::Job,
            "pulumi" => ComponentType::Pulumi,
            _ => return None,
        })
    }

    /// Whether this version of Ferry has a plugin that deploys it (the schema's component table
    /// says which).
    pub fn deployable(self) -> bool {
        schema::component_schema(self.as_str()).is_some_and(|(_, deployable)| deployable)
    }

    /// Why this version does not deploy a type it validates, for messages.
    pub fn why_not_deployed(self) -> &'static str {
        match self {
            ComponentType::DockerBuild => "the runner host has no image builder",
            ComponentType::Pulumi => "the runner host has no Pulumi engine",
            _ => "it has no plugin",
        }
    }

    /// The type names this version deploys, for messages.
    pub fn deployable_names() -> Vec<&'static str> {
        schema::COMPONENT_TYPES
            .iter()
            .filter(|(_, _, d)| *d)
            .map(|(n, _, _)| *n)
            .collect()
    }
}

/// A deployable: a component, or the sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub name: String,
    pub kind: ComponentType,
    /// The file that declares it.
    pub file: String,
    /// Directory of the package holding its source, if it has a local one.
    pub directory: Option<String>,
    /// Explicit dependencies and the implicit ones from template references, sorted.
    pub dependencies: Vec<String>,
    /// Template sources of variables (Terraform vars; scripts get them as environment too).
    pub vars: BTreeMap<String, String>,
    /// Template sources of environment variables for the component's tools.
    pub env_vars: BTreeMap<String, String>,
    /// Hash of its declaration, its directory and every file it references: equal hashes, equal builds.
    pub content_hash: String,
    /// Longest a plan or an apply of it may run (`deploy_timeout`, or `timeout`), in seconds.
    pub timeout_secs: Option<u64>,
    /// What its type says beyond variables (a chart's release and values, a manifest), as template
    /// sources.
    pub settings: KindSettings,
    /// When its drift is checked (a cron schedule, UTC), if it is.
    pub drift_schedule: Option<String>,
    /// Its own `operation_roles`: (operation, role name), before `operation_roles.toml`'s rules.
    pub operation_roles: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub name: String,
    pub file: String,
    pub triggers: Vec<Trigger>,
    pub steps: Vec<ActionStep>,
    pub timeout_secs: Option<f64>,
    /// Components it reads outputs of, or names in `dependencies`.
    pub dependencies: Vec<String>,
    /// Values given when it runs (the action's and its steps'), each an environment variable of
    /// its steps.
    pub inputs: Vec<ActionInput>,
    /// A break-glass role that must be granted on the install for it to run.
    pub break_glass_role: Option<String>,
    /// The role of the install's account its steps run as where a step names none (`role`).
    pub role: Option<String>,
}

/// One step of an action, its texts as template sources.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionStep {
    pub name: String,
    /// A command line, run by `sh -c`.
    pub command: Option<String>,
    /// A script (`inline_contents`, its file read when it names one): run by its `#!` line, or
    /// by `sh`.
    pub script: Option<String>,
    pub env_vars: BTreeMap<String, String>,
    /// The role of the install's account it runs as (`role`), instead of the maintenance role.
    pub role: Option<String>,
}

/// A value asked for when an action runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionInput {
    pub name: String,
    pub default: Option<String>,
    pub required: bool,
    /// `string`, `number` or `bool`.
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    pub kind: String,
    pub cron_schedule: Option<String>,
    pub component: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Runbook {
    pub name: String,
    pub file: String,
    pub steps: Vec<RunbookStep>,
    /// Its steps' inline actions.
    pub inline_actions: Vec<Action>,
}

/// One step of a runbook, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct RunbookStep {
    pub name: String,
    pub kind: RunbookStepKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunbookStepKind {
    /// `deploy` (also written `component_deploy`): a component, with what depends on it, or only
    /// its plan.
    Deploy {
        component: String,
        dependents: bool,
        plan_only: bool,
    },
    /// Run an action: a declared one, or one given inline (an [`Action`] of its own, named
    /// `RUNBOOK.STEP`, that [`AppConfig::action`] finds).
    Action { action: String },
    /// Plan and apply the sandbox again (and every component after it, unless skipped).
    SandboxReprovision { skip_components: bool },
    /// Destroy the sandbox.
    SandboxDeprovision,
    /// Destroy a component.
    ComponentTearDown { component: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct InstallDecl {
    pub name: String,
    pub file: String,
    pub inputs: BTreeMap<String, String>,
    pub approve_all: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub file: String,
    /// `name`, or the defining file's name.
    pub name: String,
    pub kind: String,
    pub engine: String,
    pub contents: String,
    /// The Rego or YAML itself (`contents` read when it names a file), a template source.
    pub text: String,
    /// The components it applies to; empty: every component of its type (also `["*"]`).
    pub components: Vec<String>,
}

/// A rendered component: its variables with every template replaced by the install's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub vars: Vec<(String, String)>,
    pub env_vars: Vec<(String, String)>,
    pub settings: KindSettings,
}

impl Input {
    /// Checks a value given for this input against its declared type.
    pub fn check(&self, value: &str) -> Result<(), String> {
        check_typed("input", &self.name, &self.kind, value)
    }
}

/// Checks a value against a declared type (`number`, `bool`, `json`, `list`; anything else takes
/// any text); `what` and `name` name it in the message.
fn check_typed(what: &str, name: &str, kind: &str, value: &str) -> Result<(), String> {
    let bad = |expected: &str| Err(format!("{what} `{name}` must be {expected}, got `{value}`"));
    match kind {
        "number" if value.trim().parse::<f64>().map_or(true, |n| !n.is_finite()) => bad("a number"),
        "bool" if !matches!(value, "true" | "false") => bad("`true` or `false`"),
        "json" if serde_json::from_str::<Value>(value).is_err() => bad("JSON"),
        "list"
            if value.trim_start().starts_with('[')
                && serde_json::from_str::<Vec<Value>>(value).is_err() =>
        {
            bad("a list (a JSON array, or comma-separated values)")
        }
        _ => Ok(()),
    }
}

impl Action {
    /// The values its steps run with: those `given` (each declared, of its type), defaults for
    /// the rest; an error names the first input that is unknown, mistyped or missing.
    pub fn run_inputs(
        &self,
        given: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        for name in given.keys() {
            if !self.inputs.iter().any(|i| &i.name == name) {
                let known: Vec<&str> = self.inputs.iter().map(|i| i.name.as_str()).collect();
                return Err(format!(
                    "action `{}` has no input `{name}` (its inputs: {})",
                    self.name,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ));
            }
        }
        let mut out = BTreeMap::new();
        for i in &self.inputs {
            match given.get(&i.name).or(i.default.as_ref()) {
                Some(v) => {
                    check_typed("action input", &i.name, &i.kind, v)?;
                    out.insert(i.name.clone(), v.clone());
                }
                None if i.required => {
                    return Err(format!(
                        "action `{}` needs input `{}`: --input {}=VALUE",
                        self.name, i.name, i.name
                    ));
                }
                None => {}
            }
        }
        Ok(out)
    }

    pub fn step(&self, name: &str) -> Option<&ActionStep> {
        self.steps.iter().find(|s| s.name == name)
    }

    /// Its `cron` trigger's schedule (none when it has none, or an empty one: it never fires).
    pub fn cron_schedule(&self) -> Option<&str> {
        self.triggers
            .iter()
            .find(|t| t.kind == "cron")
            .and_then(|t| t.cron_schedule.as_deref())
    }
}

impl AppConfig {
    /// The defaults of the sensitive inputs an install with input `values` does not set: they
    /// are as secret as a value given, and job logs must mask them too.
    pub fn sensitive_defaults(&self, values: &BTreeMap<String, String>) -> Vec<String> {
        self.inputs
            .iter()
            .filter(|i| i.sensitive && !values.contains_key(&i.name))
            .filter_map(|i| i.default.clone())
            .collect()
    }

    /// Checks an install's input values: every one declared and of its type, every required one
    /// given (or defaulted). The first problem, as a sentence naming the input.
    pub fn check_inputs(&self, values: &BTreeMap<String, String>) -> Result<(), String> {
        for (name, value) in values {
            let Some(input) = self.inputs.iter().find(|i| &i.name == name) else {
                let hint = crate::did_you_mean(name, self.inputs.iter().map(|i| i.name.as_str()));
                return Err(format!("unknown input `{name}`{hint}"));
            };
            input.check(value)?;
        }
        for i in self.inputs.iter().filter(|i| !values.contains_key(&i.name)) {
            match &i.default {
                None if i.required => return Err(format!("input `{}` is required", i.name)),
                // A default of the wrong type (validation warned) stands in for no value.
                Some(d) if i.check(d).is_err() => {
                    return Err(format!(
                        "input `{}` needs a value: its default `{d}` is not a valid {}",
                        i.name, i.kind
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Component {
    /// Whether it deploys from files of the package (its `directory`): an inline manifest, a
    /// chart from a Helm repository and a container image do not, and build an artifact without
    /// files; a job, whose image is its source, neither.
    pub fn builds_from_directory(&self) -> bool {
        crate::jobs::component_kind(self.kind).is_none_or(|k| k.facts().artifact_from_directory)
            && !matches!(
                &self.settings,
                KindSettings::Manifest(ferry_protocol::messages::ManifestSettings {
                    manifest: Some(_),
                    ..
                }) | KindSettings::Helm(ferry_protocol::messages::HelmSettings {
                    repo: Some(_),
                    ..
                })
            )
    }

    /// Whether its templates read any of `inputs` (`.nuon.inputs.inputs.X`, `.nuon.install.inputs.X`);
    /// a template that reads the whole inputs map, or does not parse, counts as reading them all.
    pub fn reads_inputs(&self, inputs: &BTreeSet<String>) -> bool {
        let settings = super::settings::templates(&self.settings);
        let mut sources = self
            .vars
            .values()
            .chain(self.env_vars.values())
            .chain(settings);
        sources.any(|src| {
            let Ok(t) = Template::parse(src) else {
                return true;
            };
            t.references().iter().any(|r| {
                let p: Vec<&str> = r.path.iter().map(String::as_str).collect();
                match p.as_slice() {
                    [_, "inputs", "inputs", name, ..] | [_, "install", "inputs", name, ..] => {
                        inputs.contains(*name)
                    }
                    [_, "inputs"] | [_, "inputs", "inputs"] | [_, "install", "inputs"] => true,
                    _ => false,
                }
            })
        })
    }

    /// Renders vars and env vars against an install state built by [`AppConfig::template_state`].
    pub fn render(&self, state: &Value) -> Result<Rendered, String> {
        let r = |m: &BTreeMap<String, String>| -> Result<Vec<(String, String)>, String> {
            m.iter()
                .map(|(k, src)| {
                    crate::template::render(src, state)
                        .map(|v| (k.clone(), v))
                        .map_err(|e| format!("{}: `{k}`: {e}", self.file))
                })
                .collect()
        };
        let one = |key: &str, src: &str| {
            crate::template::render(src, state).map_err(|e| format!("{}: `{key}`: {e}", self.file))
        };
        Ok(Rendered {
            vars: r(&self.vars)?,
            env_vars: r(&self.env_vars)?,
            settings: super::settings::render(&self.settings, one)?,
        })
    }
}

impl AppConfig {
    /// The sandbox and components whose templates read any of `inputs` (what an input change
    /// must redeploy, with what depends on them).
    pub fn readers_of(&self, inputs: &BTreeSet<String>) -> Vec<String> {
        self.sandbox
            .iter()
            .chain(&self.components)
            .filter(|c| c.reads_inputs(inputs))
            .map(|c| c.name.clone())
            .collect()
    }

    /// A declared action, or a runbook's inline one (`RUNBOOK.STEP`).
    pub fn action(&self, name: &str) -> Option<&Action> {
        self.actions
            .iter()
            .chain(self.runbooks.iter().flat_map(|r| &r.inline_actions))
            .find(|a| a.name == name)
    }

    pub fn runbook(&self, name: &str) -> Option<&Runbook> {
        self.runbooks.iter().find(|r| r.name == name)
    }

    pub fn component(&self, name: &str) -> Option<&Component> {
        if name == "sandbox" {
            self.sandbox.as_ref()
        } else {
            self.components.iter().find(|c| c.name == name)
        }
    }

    /// The OPA policies over `component`'s plans: of its type (`sandbox` for the sandbox), naming
    /// it or every component of the type.
    pub fn policies_for(&self, component: &Component) -> Vec<&Policy> {
        let kind = if component.name == "sandbox" {
            "sandbox"
        } else {
            component.kind.as_str()
        };
        self.policies
            .iter()
            .filter(|p| p.engine == "opa" && p.kind == kind)
            .filter(|p| p.components.is_empty() || p.components.contains(&component.name))
            .collect()
    }

    /// The template state of an install, in Nuon's shape, so `{{.nuon.*}}` paths resolve. Built by
    /// [`crate::state::build`], the same definition validation checks templates against.
    pub fn template_state(&self, facts: &crate::state::Facts) -> Value {
        crate::state::build(self, facts)
    }
}
