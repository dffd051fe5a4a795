//! Reading a package into an [`AppConfig`]: find the blocks, check each file against its schema,
//! extract what Ferry uses, check cross-references and templates, order the components.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::check::{Checker, Site, did_you_mean, normalize, parse_duration};
use crate::diagnostics::{Diagnostics, Severity};
use crate::package::{Package, hash_files};
use crate::schema::{self, BLOCKS, Dir, Schema};
use crate::template::{Mode, Template};
use crate::tree::{self, Node, V};

#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    pub metadata: Metadata,
    pub inputs: Vec<Input>,
    pub secrets: Vec<String>,
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

    fn from_name(s: &str) -> Option<ComponentType> {
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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub name: String,
    pub file: String,
    pub triggers: Vec<Trigger>,
    pub steps: Vec<String>,
    pub timeout_secs: Option<f64>,
    /// Components it reads outputs of, or names in `dependencies`.
    pub dependencies: Vec<String>,
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
    /// `(step name, "deploy" | "action", target)`: `component_deploy` is read as `deploy`; an inline
    /// action has an empty target.
    pub steps: Vec<(String, String, String)>,
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
    /// The components it applies to; empty: every component of its type (also `["*"]`).
    pub components: Vec<String>,
}

/// A rendered component: its variables with every template replaced by the install's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub vars: Vec<(String, String)>,
    pub env_vars: Vec<(String, String)>,
}

impl Input {
    /// Checks a value given for this input against its declared type.
    pub fn check(&self, value: &str) -> Result<(), String> {
        let bad = |what: &str| {
            Err(format!(
                "input `{}` must be {what}, got `{value}`",
                self.name
            ))
        };
        match self.kind.as_str() {
            "number" if value.trim().parse::<f64>().map_or(true, |n| !n.is_finite()) => {
                bad("a number")
            }
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
}

impl AppConfig {
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
        match self
            .inputs
            .iter()
            .find(|i| i.required && i.default.is_none() && !values.contains_key(&i.name))
        {
            Some(i) => Err(format!("input `{}` is required", i.name)),
            None => Ok(()),
        }
    }
}

impl Component {
    /// Whether its templates read any of `inputs` (`.nuon.inputs.inputs.X`, `.nuon.install.inputs.X`);
    /// a template that reads the whole inputs map, or does not parse, counts as reading them all.
    pub fn reads_inputs(&self, inputs: &BTreeSet<String>) -> bool {
        self.vars.values().chain(self.env_vars.values()).any(|src| {
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
        Ok(Rendered {
            vars: r(&self.vars)?,
            env_vars: r(&self.env_vars)?,
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

    pub fn component(&self, name: &str) -> Option<&Component> {
        if name == "sandbox" {
            self.sandbox.as_ref()
        } else {
            self.components.iter().find(|c| c.name == name)
        }
    }

    /// The template state of an install, in Nuon's shape, so `{{.nuon.*}}` paths resolve. Built by
    /// [`crate::state::build`], the same definition validation checks templates against.
    pub fn template_state(&self, facts: &crate::state::Facts) -> Value {
        crate::state::build(self, facts)
    }
}

/// What validation found: the config when there is no error, and every error and warning.
#[derive(Debug, Clone)]
pub struct Report {
    pub config: Option<AppConfig>,
    pub diagnostics: Diagnostics,
    /// Remote references whose content is not in the package yet (each URL once).
    pub remote: Vec<crate::check::Remote>,
}

/// Parses and validates a package. `Err` carries every diagnostic (errors and warnings) when there is
/// at least one error.
pub fn load(pkg: &Package) -> Result<AppConfig, Diagnostics> {
    let r = validate(pkg);
    match r.config {
        Some(c) => Ok(c),
        None => Err(r.diagnostics),
    }
}

/// Parses and validates a package, keeping warnings next to the config.
pub fn validate(pkg: &Package) -> Report {
    let mut l = Loader {
        pkg,
        texts: pkg
            .files
            .iter()
            .filter_map(|(p, b)| Some((p.as_str(), std::str::from_utf8(b).ok()?)))
            .collect(),
        diags: Diagnostics::default(),
        sites: Vec::new(),
        remote: Vec::new(),
        refs: BTreeMap::new(),
        broken: BTreeSet::new(),
    };
    let config = l.run();
    l.diags.sort();
    let config = if l.diags.has_errors() { None } else { config };
    let mut remote = std::mem::take(&mut l.remote);
    let mut seen = BTreeSet::new();
    remote.retain(|r| seen.insert(r.url.clone()));
    Report {
        config,
        diagnostics: l.diags,
        remote,
    }
}

struct Doc {
    path: String,
    /// Shared by the items of a single-file block (`components.toml`): one copy per file.
    src: std::rc::Rc<str>,
    root: Node,
    /// Where a missing required key of `root` is reported: the file's start, or the start of the
    /// `[[table]]` when `root` is one item of a single-file block (`components.toml`).
    at: usize,
}

struct Loader<'a> {
    pkg: &'a Package,
    /// The package's UTF-8 files, each checked once: every diagnostic reads its file's text, and
    /// checking it again each time made a file with many findings quadratic.
    texts: HashMap<&'a str, &'a str>,
    diags: Diagnostics,
    sites: Vec<Site>,
    /// Remote references (URLs) not fetched into the package yet.
    remote: Vec<crate::check::Remote>,
    /// Files referenced from each owner's values (`component:db` → files).
    refs: BTreeMap<String, Vec<String>>,
    /// Names of components whose file could not be read: still known to references, so one broken
    /// file gives one error, not a cascade of "unknown component".
    broken: BTreeSet<String>,
}

/// A component as read, with what later checks need.
struct Draft {
    c: Component,
    name_at: usize,
    src: std::rc::Rc<str>,
    explicit: Vec<(String, usize)>,
}

impl<'a> Loader<'a> {
    fn text(&self, path: &str) -> &'a str {
        self.texts.get(path).copied().unwrap_or_default()
    }

    fn err(&mut self, file: &str, at: usize, msg: impl Into<String>) {
        let src = self.text(file);
        self.diags.push(file, src, at, Severity::Error, msg);
    }

    fn warn(&mut self, file: &str, at: usize, msg: impl Into<String>) {
        let src = self.text(file);
        self.diags.push(file, src, at, Severity::Warning, msg);
    }

    fn parse(&mut self, path: &str) -> Option<Doc> {
        let bytes = self.pkg.files.get(path)?;
        let Ok(src) = std::str::from_utf8(bytes) else {
            self.err(path, 0, "file is not valid UTF-8");
            return None;
        };
        match tree::parse(src) {
            Ok(root) => Some(Doc {
                path: path.to_string(),
                src: src.into(),
                root,
                at: 0,
            }),
            Err((at, msg)) => {
                self.diags.push(path, src, at, Severity::Error, msg);
                None
            }
        }
    }

    /// The items of a single-file form of a directory block: `NAME.toml` holding `[[NAME]]` tables.
    fn items_of(&mut self, doc: Doc, name: &str) -> Vec<Doc> {
        let mut out = Vec::new();
        for e in doc.root.entries() {
            match (e.key == name, &e.value.v) {
                (true, V::Array(items)) if items.iter().all(|i| matches!(i.v, V::Table(_))) => {
                    out.extend(items.iter().map(|i| Doc {
                        path: doc.path.clone(),
                        src: doc.src.clone(),
                        root: i.clone(),
                        at: i.span.start,
                    }));
                }
                (true, _) => self.diags.push(
                    &doc.path,
                    &doc.src,
                    e.key_span.start,
                    Severity::Error,
                    format!("`{name}` must be an array of tables: write `[[{name}]]`"),
                ),
                (false, _) => {
                    let msg = format!(
                        "unknown key `{}` in {name}.toml: it holds `[[{name}]]` tables{}",
                        e.key,
                        did_you_mean(&e.key, [name])
                    );
                    self.diags
                        .push(&doc.path, &doc.src, e.key_span.start, Severity::Error, msg);
                }
            }
        }
        out
    }

    fn check(
        &mut self,
        doc: &Doc,
        node: &Node,
        schema: &'static Schema,
        owner: &str,
        warn_ignored: bool,
    ) {
        let mut files = Vec::new();
        let base = base_dir(owner, &doc.path);
        let mut c = Checker {
            file: &doc.path,
            src: &doc.src,
            pkg: self.pkg,
            base: &base,
            remote: &mut self.remote,
            diags: &mut self.diags,
            sites: &mut self.sites,
            files: &mut files,
            owner: owner.to_string(),
            warn_ignored,
        };
        let at = if std::ptr::eq(node, &doc.root) {
            doc.at
        } else {
            node.span.start
        };
        c.table(node, schema, at);
        self.refs
            .entry(owner.to_string())
            .or_default()
            .extend(files);
    }

    /// The `.toml` files of a block's directory form, in every subfolder (Nuon reads them
    /// recursively). `permissions/policies/` holds named IAM policies, not roles.
    fn dir_files(&self, name: &str) -> Vec<String> {
        self.pkg
            .under(name)
            .map(|(p, _)| p.clone())
            .filter(|p| p.ends_with(".toml"))
            .filter(|p| !(name == "permissions" && p.starts_with("permissions/policies/")))
            .collect()
    }

    fn run(&mut self) -> Option<AppConfig> {
        self.unknown_files();
        let block_file = |name: &str| format!("{name}.toml");
        // Each block's documents: (doc, schema of the document, owner).
        let mut docs: BTreeMap<&'static str, Vec<(Doc, &'static Schema)>> = BTreeMap::new();
        for b in BLOCKS {
            let file = block_file(b.name);
            let mut list = Vec::new();
            let mut has_file = self.pkg.files.contains_key(&file);
            if has_file && let Some(doc) = self.parse(&file) {
                match b.file {
                    Some(schema) => list.push((doc, schema)),
                    // Nuon's `installs.toml` says where installs are kept: no install in it.
                    None if b.name == "installs" && doc.root.get("installs").is_none() => {
                        self.check(&doc, &doc.root, &schema::INSTALLS_CONFIG, "installs", true);
                        has_file = false;
                    }
                    // `components.toml` and friends: `[[components]]` tables, each one item.
                    None => list.extend(
                        self.items_of(doc, b.name)
                            .into_iter()
                            .map(|d| (d, items_schema(b.dir))),
                    ),
                }
            }
            let dir_files: Vec<String> = match b.dir {
                Dir::None => vec![],
                Dir::Items(_) | Dir::Components => self.dir_files(b.name),
            };
            if has_file && !dir_files.is_empty() {
                self.err(
                    &file,
                    0,
                    format!("both `{file}` and `{}/` exist: use one of them", b.name),
                );
            }
            for f in dir_files {
                match (self.parse(&f), b.dir) {
                    (Some(doc), Dir::Items(item)) => {
                        let schema = match b.file {
                            Some(file_schema) if holds_file_keys(&doc.root, file_schema, item) => {
                                file_schema
                            }
                            _ => item,
                        };
                        list.push((doc, schema));
                    }
                    // Components pick their schema by type, below.
                    (Some(doc), _) => list.push((doc, &schema::SCRIPT)),
                    (None, Dir::Components) => {
                        if let Some(name) = name_line(self.text(&f)) {
                            self.broken.insert(name);
                        }
                    }
                    (None, _) => {}
                }
            }
            docs.insert(b.name, list);
        }
        self.named_policies();
        let take = |docs: &mut BTreeMap<&'static str, Vec<(Doc, &'static Schema)>>, name: &str| {
            docs.remove(name).unwrap_or_default()
        };

        // metadata.toml (required)
        let meta_docs = take(&mut docs, "metadata");
        let metadata = match meta_docs.first() {
            Some((doc, schema)) => {
                self.check(doc, &doc.root, schema, "metadata", true);
                let r = &doc.root;
                let extra = r
                    .entries()
                    .iter()
                    .filter(|e| schema.field(&e.key).is_none())
                    .map(|e| (e.key.clone(), e.value.to_json()))
                    .collect();
                Metadata {
                    version: r.str_of("version").unwrap_or_default().into(),
                    description: r.str_of("description").map(String::from),
                    display_name: r.str_of("display_name").map(String::from),
                    readme: r.str_of("readme").map(String::from),
                    extra,
                }
            }
            None => {
                if !self.pkg.files.contains_key("metadata.toml") {
                    self.err("metadata.toml", 0, "missing metadata.toml");
                }
                Metadata {
                    version: String::new(),
                    description: None,
                    display_name: None,
                    readme: None,
                    extra: Default::default(),
                }
            }
        };

        let mut roles = BTreeSet::new();
        for name in [
            "permissions",
            "break_glass",
            "runner",
            "stack",
            "installer",
            "kubernetes_contexts",
            "operation_roles",
        ] {
            for (doc, schema) in take(&mut docs, name) {
                self.check(&doc, &doc.root, schema, name, true);
                if std::ptr::eq(schema, &schema::ROLE) && name == "permissions" {
                    self.permission_role(&doc);
                }
                if name == "permissions" || name == "break_glass" {
                    roles.extend(role_names(&doc.root, schema));
                }
                if name == "operation_roles" {
                    self.operation_rules(&doc, &roles);
                }
            }
        }

        let (inputs, groups) =
            self.inputs(take(&mut docs, "inputs"), take(&mut docs, "input_groups"));
        let secrets = self.secrets(take(&mut docs, "secrets"));
        let sandbox = take(&mut docs, "sandbox")
            .into_iter()
            .next()
            .and_then(|(doc, _)| self.sandbox(doc));
        let mut drafts = self.components(take(&mut docs, "components"));
        let actions_docs = take(&mut docs, "actions");
        let runbook_docs = take(&mut docs, "runbooks");
        let install_docs = take(&mut docs, "installs");
        let policy_docs = take(&mut docs, "policies");

        let component_names: BTreeSet<String> = drafts
            .iter()
            .map(|d| d.c.name.clone())
            .chain(self.broken.iter().cloned())
            .collect();
        let mut actions = self.actions(actions_docs, &component_names);
        let action_names: BTreeSet<String> = actions.iter().map(|a| a.name.clone()).collect();
        let runbooks = self.runbooks(runbook_docs, &component_names, &action_names);
        let installs = self.installs(install_docs, &inputs);
        let policies = self.policies(policy_docs, &component_names);
        for g in inputs.iter().filter_map(|i| i.group.as_ref()) {
            if !groups.is_empty() && !groups.contains(g) {
                let (file, at) = self.find_value("inputs", g);
                self.err(
                    &file,
                    at,
                    format!(
                        "unknown input group `{g}`{}",
                        did_you_mean(g, groups.iter().map(String::as_str))
                    ),
                );
            }
        }

        // Templates: references (implicit dependencies), checked against the state a deploy renders
        // with (built for a stand-in install), and rendered leniently against it.
        let shape = AppConfig {
            metadata: metadata.clone(),
            inputs: inputs.clone(),
            secrets: secrets.clone(),
            sandbox: sandbox.clone(),
            components: component_names
                .iter()
                .map(|n| stand_in_component(n))
                .collect(),
            actions: actions.clone(),
            runbooks: vec![],
            installs: vec![],
            policies: vec![],
            deploy_order: vec![],
        };
        let stand_in = crate::state::build(
            &shape,
            &crate::state::Facts {
                org: "validate",
                app: "validate",
                install: "validate",
                ..Default::default()
            },
        );
        let ctx = RefCtx {
            state: &stand_in,
            has_sandbox: sandbox.is_some(),
        };
        let mut implicit: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for site in std::mem::take(&mut self.sites) {
            self.template(&site, &ctx, &mut implicit);
        }

        // Dependencies and the deploy order.
        let mut sandbox = sandbox;
        if let Some(s) = sandbox.as_mut()
            && let Some(deps) = implicit.get("sandbox").filter(|d| !d.is_empty())
        {
            let list: Vec<&str> = deps.iter().map(String::as_str).collect();
            self.err(&s.file, 0, format!("the sandbox cannot depend on components (it reads outputs of {}): it is deployed before them", list.join(", ")));
        }
        let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for d in &mut drafts {
            let mut deps: BTreeSet<String> = BTreeSet::new();
            for (dep, at) in &d.explicit {
                if dep == &d.c.name {
                    self.diags.push(
                        &d.c.file,
                        &d.src,
                        *at,
                        Severity::Error,
                        format!("component `{dep}` depends on itself"),
                    );
                } else if component_names.contains(dep) {
                    deps.insert(dep.clone());
                } else {
                    let hint = did_you_mean(dep, component_names.iter().map(String::as_str));
                    self.diags.push(
                        &d.c.file,
                        &d.src,
                        *at,
                        Severity::Error,
                        format!("unknown component `{dep}` in dependencies{hint}"),
                    );
                }
            }
            deps.extend(
                implicit
                    .get(&format!("component:{}", d.c.name))
                    .cloned()
                    .unwrap_or_default(),
            );
            d.c.dependencies = deps.iter().cloned().collect();
            graph.insert(d.c.name.clone(), d.c.dependencies.clone());
        }
        for a in &mut actions {
            let mut deps: BTreeSet<String> = a.dependencies.iter().cloned().collect();
            deps.extend(
                implicit
                    .get(&format!("action:{}", a.name))
                    .cloned()
                    .unwrap_or_default(),
            );
            a.dependencies = deps.into_iter().collect();
        }
        let deploy_order = match crate::graph::deploy_stages(&graph) {
            Ok(s) => s,
            Err(cycle) => {
                if let Some(d) = cycle
                    .first()
                    .and_then(|n| drafts.iter().find(|d| &d.c.name == n))
                {
                    self.diags.push(
                        &d.c.file,
                        &d.src,
                        d.name_at,
                        Severity::Error,
                        format!("dependency cycle: {}", cycle.join(" -> ")),
                    );
                }
                vec![]
            }
        };

        // Content hashes: declaration + directory + referenced files.
        let mut components: Vec<Component> = drafts.into_iter().map(|d| d.c).collect();
        for c in components.iter_mut().chain(sandbox.iter_mut()) {
            let owner = if c.name == "sandbox" && c.file == "sandbox.toml" {
                "sandbox".to_string()
            } else {
                format!("component:{}", c.name)
            };
            c.content_hash =
                self.content_hash(c, self.refs.get(&owner).cloned().unwrap_or_default());
        }
        components.sort_by(|a, b| a.name.cmp(&b.name));
        Some(AppConfig {
            metadata,
            inputs,
            secrets,
            sandbox,
            components,
            actions,
            runbooks,
            installs,
            policies,
            deploy_order,
        })
    }

    fn content_hash(&self, c: &Component, referenced: Vec<String>) -> String {
        let mut files: BTreeMap<&String, &Vec<u8>> = BTreeMap::new();
        if let Some((k, v)) = self.pkg.files.get_key_value(&c.file) {
            files.insert(k, v);
        }
        if let Some(d) = &c.directory {
            files.extend(self.pkg.under(d));
        }
        for r in &referenced {
            if let Some((k, v)) = self.pkg.files.get_key_value(r) {
                files.insert(k, v);
            }
        }
        hash_files(files.into_iter())
    }

    /// Top-level `.toml` files that are no block: almost always a typo.
    fn unknown_files(&mut self) {
        let tops: Vec<String> = self
            .pkg
            .files
            .keys()
            .filter(|p| !p.contains('/') && p.ends_with(".toml"))
            .cloned()
            .collect();
        let known: Vec<String> = BLOCKS.iter().map(|b| format!("{}.toml", b.name)).collect();
        let nuon_only = |name: &str| {
            schema::IGNORED_NUON_FILES
                .iter()
                .find(|(f, _)| name == *f || name.starts_with(&format!("{f}/")))
        };
        for t in tops {
            if let Some((_, what)) = nuon_only(&t) {
                self.warn(
                    &t,
                    0,
                    format!("`{t}` holds {what}, which Ferry does not use"),
                );
            } else if !known.contains(&t) {
                let hint = did_you_mean(&t, known.iter().map(String::as_str));
                self.warn(&t, 0, format!("unknown file `{t}`{hint} is ignored: app packages use metadata.toml, sandbox.toml, components/*.toml, ..."));
            }
        }
        let known_dirs: Vec<&str> = BLOCKS
            .iter()
            .filter(|b| !matches!(b.dir, Dir::None))
            .map(|b| b.name)
            .collect();
        let mut warned = BTreeSet::new();
        for p in self
            .pkg
            .files
            .keys()
            .filter(|p| p.ends_with(".toml") && p.matches('/').count() == 1)
        {
            let dir = p.split('/').next().unwrap_or_default().to_string();
            let hint = did_you_mean(&dir, known_dirs.iter().copied());
            if !known_dirs.contains(&dir.as_str()) && !hint.is_empty() && warned.insert(dir.clone())
            {
                let p = p.clone();
                self.warn(
                    &p,
                    0,
                    format!("`{dir}/` is not a block of the package and is ignored{hint}"),
                );
            }
        }
    }

    /// The file and offset where a string value first appears in a block (for cross-file errors).
    fn find_value(&self, block: &str, value: &str) -> (String, usize) {
        let quoted = format!("\"{value}\"");
        for (p, _) in self.pkg.files.iter().filter(|(p, _)| p.starts_with(block)) {
            if let Some(i) = self.text(p).find(&quoted) {
                return (p.clone(), i);
            }
        }
        (format!("{block}.toml"), 0)
    }

    /// `permissions/policies/**/*.toml`: named IAM policies roles refer to.
    fn named_policies(&mut self) {
        let files: Vec<String> = self
            .pkg
            .under("permissions/policies")
            .map(|(p, _)| p.clone())
            .filter(|p| p.ends_with(".toml"))
            .collect();
        for f in files {
            if let Some(doc) = self.parse(&f) {
                self.check(&doc, &doc.root, &schema::IAM_POLICY, "permissions", true);
            }
        }
    }

    fn permission_role(&mut self, doc: &Doc) {
        if doc.root.get("type").is_none() {
            self.err(&doc.path, 0, "missing required key `type` in a permissions/ role (provision, maintenance, deprovision or custom)");
        }
    }

    fn inputs(
        &mut self,
        docs: Vec<(Doc, &'static Schema)>,
        group_docs: Vec<(Doc, &'static Schema)>,
    ) -> (Vec<Input>, BTreeSet<String>) {
        let mut inputs: Vec<Input> = Vec::new();
        let mut groups = BTreeSet::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (doc, schema) in docs {
            self.check(&doc, &doc.root, schema, "inputs", true);
            for g in doc.root.get("group").map(Node::items).unwrap_or_default() {
                if let Some(n) = g.str_of("name") {
                    groups.insert(n.to_string());
                }
            }
            for i in doc_items(&doc, schema, &schema::INPUT, "input") {
                let Some(name) = i.str_of("name") else {
                    continue;
                };
                let at = i.get("name").map(|n| n.span.start).unwrap_or(0);
                if let Some(prev) = seen.get(name) {
                    let msg = format!("input `{name}` is already declared in {prev}");
                    self.diags
                        .push(&doc.path, &doc.src, at, Severity::Error, msg);
                    continue;
                }
                seen.insert(name.to_string(), doc.path.clone());
                if !is_name(name) {
                    self.diags.push(
                        &doc.path,
                        &doc.src,
                        at,
                        Severity::Error,
                        format!("invalid input name `{name}`: use letters, digits and `_`"),
                    );
                }
                let kind = i.str_of("type").unwrap_or("string").to_string();
                let default = i.get("default").map(|d| match &d.v {
                    V::Str(s) => s.clone(),
                    _ => d.to_json().to_string(),
                });
                if let (Some(d), Some(node)) = (&default, i.get("default")) {
                    let bad = match kind.as_str() {
                        "number" => {
                            !matches!(node.v, V::Int(_) | V::Float(_)) && d.parse::<f64>().is_err()
                        }
                        "bool" => {
                            !matches!(node.v, V::Bool(_)) && !matches!(d.as_str(), "true" | "false")
                        }
                        "json" | "list" => {
                            serde_json::from_str::<Value>(d).is_err() && matches!(node.v, V::Str(_))
                        }
                        _ => false,
                    };
                    if bad {
                        self.diags.push(
                            &doc.path,
                            &doc.src,
                            node.span.start,
                            Severity::Error,
                            format!("the default of input `{name}` is not a valid {kind}"),
                        );
                    }
                }
                inputs.push(Input {
                    name: name.to_string(),
                    display_name: i.str_of("display_name").map(String::from),
                    description: i.str_of("description").map(String::from),
                    group: i.str_of("group").map(String::from),
                    default,
                    required: i.bool_of("required").unwrap_or(false),
                    sensitive: i.bool_of("sensitive").unwrap_or(false),
                    kind,
                });
            }
        }
        for (doc, schema) in group_docs {
            self.check(&doc, &doc.root, schema, "inputs", true);
            for g in doc_items(&doc, schema, &schema::INPUT_GROUP, "group") {
                if let Some(n) = g.str_of("name") {
                    groups.insert(n.to_string());
                }
            }
        }
        (inputs, groups)
    }

    /// `operation_roles.toml` (R6): principals name a component, the sandbox or an action; each
    /// (principal, operation) once; roles are declared in permissions or break glass.
    fn operation_rules(&mut self, doc: &Doc, roles: &BTreeSet<String>) {
        let mut seen = BTreeSet::new();
        for rule in doc.root.get("rules").map(Node::items).unwrap_or_default() {
            let (Some(principal), Some(op)) = (rule.get("principal"), rule.str_of("operation"))
            else {
                continue;
            };
            let p = principal.as_str().unwrap_or_default();
            let ok = p == "nuon::sandbox"
                || ["nuon::component:", "nuon::action:"]
                    .iter()
                    .any(|pre| p.strip_prefix(pre).is_some_and(|n| !n.is_empty()));
            let mut push =
                |at, sev, msg: String| self.diags.push(&doc.path, &doc.src, at, sev, msg);
            if !ok {
                push(
                    principal.span.start,
                    Severity::Error,
                    format!(
                        "unknown principal `{p}`: write `nuon::component:NAME`, `nuon::sandbox` or `nuon::action:NAME` (NAME may be `*`)"
                    ),
                );
            }
            if !seen.insert((p.to_string(), op.to_string())) {
                push(
                    principal.span.start,
                    Severity::Error,
                    format!("`{p}` has two rules for `{op}`"),
                );
            }
            if let Some(role) = rule.get("role")
                && let Some(name) = role.as_str()
                && !roles.contains(name)
            {
                let hint = did_you_mean(name, roles.iter().map(String::as_str));
                push(
                    role.span.start,
                    Severity::Error,
                    format!(
                        "unknown role `{name}`{hint}: roles are declared in permissions or break_glass.toml"
                    ),
                );
            }
        }
    }

    fn secrets(&mut self, docs: Vec<(Doc, &'static Schema)>) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let mut targets: BTreeSet<(String, String, String)> = BTreeSet::new();
        for (doc, schema) in docs {
            self.check(&doc, &doc.root, schema, "secrets", true);
            for s in doc_items(&doc, schema, &schema::SECRET, "secret") {
                let Some(name) = s.str_of("name") else {
                    continue;
                };
                self.secret_rules(&doc, s, &mut targets);
                if names.iter().any(|n| n == name) {
                    let at = s.get("name").map(|n| n.span.start).unwrap_or(0);
                    self.diags.push(
                        &doc.path,
                        &doc.src,
                        at,
                        Severity::Error,
                        format!("secret `{name}` is declared twice"),
                    );
                }
                names.push(name.to_string());
            }
        }
        names
    }

    /// A secret's exclusive keys and its Kubernetes sync targets (R6).
    fn secret_rules(
        &mut self,
        doc: &Doc,
        s: &Node,
        targets: &mut BTreeSet<(String, String, String)>,
    ) {
        let mut push = |at, msg: String| {
            self.diags
                .push(&doc.path, &doc.src, at, Severity::Error, msg)
        };
        let on = |k: &str| s.bool_of(k).unwrap_or(false);
        for (a, b, set) in [
            (
                "auto_generate",
                "required",
                on("auto_generate") && on("required"),
            ),
            (
                "default",
                "required",
                s.get("default").is_some() && on("required"),
            ),
            (
                "default",
                "auto_generate",
                s.get("default").is_some() && on("auto_generate"),
            ),
        ] {
            if set {
                let at = s.entry(b).map_or(s.span.start, |e| e.key_span.start);
                push(at, format!("`{a}` and `{b}` are mutually exclusive"));
            }
        }
        for t in s
            .get("kubernetes_sync_targets")
            .map(Node::items)
            .unwrap_or_default()
        {
            let (Some(ns), Some(name), Some(key)) =
                (t.get("namespaces"), t.str_of("name"), t.str_of("key"))
            else {
                continue;
            };
            if matches!(&ns.v, V::Array(a) if a.is_empty()) {
                push(
                    ns.span.start,
                    "`namespaces` needs at least one namespace".into(),
                );
            }
            let templated = |v: &str| v.contains("{{");
            for n in ns.items().iter().filter_map(|n| n.as_str().map(|v| (n, v))) {
                if !templated(n.1) && !is_rfc1123(n.1) {
                    push(
                        n.0.span.start,
                        format!(
                            "namespace `{}` is not a valid Kubernetes name (RFC 1123)",
                            n.1
                        ),
                    );
                }
                if !targets.insert((n.1.to_string(), name.to_string(), key.to_string())) {
                    push(
                        n.0.span.start,
                        format!("two secrets are synced to `{}/{name}` key `{key}`", n.1),
                    );
                }
            }
            if !templated(name) && !is_rfc1123(name) {
                let at = t.get("name").map_or(t.span.start, |n| n.span.start);
                push(
                    at,
                    format!("`{name}` is not a valid Kubernetes secret name (RFC 1123)"),
                );
            }
        }
    }

    fn sandbox(&mut self, doc: Doc) -> Option<Component> {
        self.check(&doc, &doc.root, &schema::SANDBOX, "sandbox", true);
        let r = &doc.root;
        let kind = match r.str_of("type").unwrap_or("terraform") {
            "script" => ComponentType::Script,
            "pulumi" => ComponentType::Pulumi,
            _ => ComponentType::TerraformModule,
        };
        if kind == ComponentType::Pulumi {
            let at = r.get("type").map(|n| n.span.start).unwrap_or(0);
            self.warn(
                &doc.path,
                at,
                "pulumi sandboxes are checked, but this version of Ferry cannot deploy them yet",
            );
        }
        let directory = self.source(&doc, r, kind);
        Some(Component {
            name: "sandbox".into(),
            kind,
            file: doc.path.clone(),
            directory,
            dependencies: vec![],
            vars: string_map(r.get("vars")),
            env_vars: string_map(r.get("env_vars")),
            content_hash: String::new(),
            timeout_secs: deploy_timeout(r),
        })
    }

    /// Checks a deployable's source (exactly one of `directory`, `public_repo`, `connected_repo`,
    /// plus type-specific ones) and returns its local directory, if any.
    fn source(&mut self, doc: &Doc, r: &Node, kind: ComponentType) -> Option<String> {
        let mut present: Vec<(&str, usize)> = [
            "directory",
            "source",
            "public_repo",
            "connected_repo",
            "helm_repo",
        ]
        .into_iter()
        .filter_map(|k| r.entry(k).map(|e| (k, e.key_span.start)))
        .collect();
        if kind == ComponentType::KubernetesManifest && r.get("kustomize").is_none() {
            // An inline or file manifest needs no source; one with a source is a mistake.
            if r.get("manifest").is_none() {
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    doc.at,
                    Severity::Error,
                    "a kubernetes_manifest needs `manifest` or `kustomize`".to_string(),
                );
            } else if let Some((k, at)) = present.first() {
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    *at,
                    Severity::Error,
                    format!("`{k}` is only used with `kustomize`, not with an inline `manifest`"),
                );
            }
            return None;
        }
        if kind == ComponentType::KubernetesManifest
            && let (Some(_), Some(e)) = (r.get("manifest"), r.entry("kustomize"))
        {
            self.diags.push(
                &doc.path,
                &doc.src,
                e.key_span.start,
                Severity::Error,
                "`manifest` and `kustomize` are mutually exclusive".to_string(),
            );
        }
        if matches!(kind, ComponentType::ContainerImage | ComponentType::Job) {
            if kind == ComponentType::ContainerImage {
                let sources: Vec<(&str, usize)> = ["public", "aws_ecr", "gcp_gar", "azure_acr"]
                    .into_iter()
                    .filter_map(|k| r.entry(k).map(|e| (k, e.key_span.start)))
                    .collect();
                match sources.as_slice() {
                    [] => self.diags.push(&doc.path, &doc.src, doc.at, Severity::Error, "a container_image needs one of `public`, `aws_ecr`, `gcp_gar` or `azure_acr`".to_string()),
                    [_] => {}
                    [(a, _), (b, at), ..] => {
                        self.diags.push(&doc.path, &doc.src, *at, Severity::Error, format!("`{a}` and `{b}` are mutually exclusive: an image has one source"))
                    }
                }
            }
            return None;
        }
        if kind != ComponentType::HelmChart {
            present.retain(|(k, _)| *k != "helm_repo");
        }
        if kind != ComponentType::Pulumi {
            present.retain(|(k, _)| *k != "source");
        }
        match present.as_slice() {
            // A script's `directory` is a required key: the schema check has said so already.
            [] if kind == ComponentType::Script => None,
            [] => {
                let want = if kind == ComponentType::HelmChart {
                    "`directory`, `helm_repo`, `public_repo` or `connected_repo`"
                } else {
                    "`directory`, `public_repo` or `connected_repo`"
                };
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    doc.at,
                    Severity::Error,
                    format!("no source: set one of {want}"),
                );
                None
            }
            [(k, _)] if *k == "directory" || *k == "source" => {
                let node = r.get(k)?;
                let dir = node.as_str()?;
                match normalize(dir) {
                    Some(d) if self.pkg.has_dir(&d) => {
                        let missing = match kind {
                            ComponentType::Script
                                if !self.pkg.files.contains_key(&format!("{d}/apply.sh")) =>
                            {
                                Some("apply.sh")
                            }
                            ComponentType::TerraformModule
                                if !self.pkg.under(&d).any(|(p, _)| p.ends_with(".tf")) =>
                            {
                                Some(".tf file")
                            }
                            ComponentType::HelmChart
                                if !self.pkg.files.contains_key(&format!("{d}/Chart.yaml")) =>
                            {
                                Some("Chart.yaml")
                            }
                            ComponentType::DockerBuild => {
                                let df = r.str_of("dockerfile").unwrap_or("Dockerfile");
                                (!self.pkg.files.contains_key(&format!("{d}/{df}")))
                                    .then_some("Dockerfile")
                            }
                            _ => None,
                        };
                        if let Some(m) = missing {
                            self.diags.push(
                                &doc.path,
                                &doc.src,
                                node.span.start,
                                Severity::Error,
                                format!("directory `{dir}` has no {m}"),
                            );
                        }
                        if let Some(k) = r.get("kustomize").and_then(|k| k.get("path")) {
                            let p = k.as_str().unwrap_or_default();
                            if normalize(&format!("{d}/{p}")).is_none_or(|full| {
                                !self.pkg.has_dir(&full) && !self.pkg.files.contains_key(&full)
                            }) {
                                self.diags.push(
                                    &doc.path,
                                    &doc.src,
                                    k.span.start,
                                    Severity::Error,
                                    format!("kustomize path `{p}` not found in `{dir}`"),
                                );
                            }
                        }
                        Some(d)
                    }
                    Some(_) => {
                        self.diags.push(
                            &doc.path,
                            &doc.src,
                            node.span.start,
                            Severity::Error,
                            format!("directory `{dir}` not found in the package"),
                        );
                        None
                    }
                    None => {
                        self.diags.push(
                            &doc.path,
                            &doc.src,
                            node.span.start,
                            Severity::Error,
                            format!("directory `{dir}` must be a relative path inside the package"),
                        );
                        None
                    }
                }
            }
            [_] => None,
            [(a, _), (b, at), ..] => {
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    *at,
                    Severity::Error,
                    format!("`{a}` and `{b}` are mutually exclusive: a component has one source"),
                );
                None
            }
        }
    }

    fn components(&mut self, docs: Vec<(Doc, &'static Schema)>) -> Vec<Draft> {
        let mut drafts: Vec<Draft> = Vec::new();
        for (doc, _) in docs {
            let r = &doc.root;
            let name = r.str_of("name").unwrap_or_default().to_string();
            let kind_node = r.get("type");
            let kind_name = kind_node.and_then(Node::as_str).unwrap_or_default();
            let Some((schema, deployable)) = schema::component_schema(kind_name) else {
                if !name.is_empty() {
                    self.broken.insert(name.clone());
                }
                match kind_node {
                    None => self.diags.push(
                        &doc.path,
                        &doc.src,
                        doc.at,
                        Severity::Error,
                        "missing required key `type` in component".to_string(),
                    ),
                    Some(n) => {
                        let hint =
                            did_you_mean(kind_name, schema::COMPONENT_TYPE_NAMES.iter().copied());
                        let msg = format!(
                            "unknown component type `{kind_name}`{hint} (expected one of: {})",
                            schema::COMPONENT_TYPE_NAMES.join(", ")
                        );
                        self.diags
                            .push(&doc.path, &doc.src, n.span.start, Severity::Error, msg);
                    }
                }
                continue;
            };
            self.check(&doc, r, schema, &format!("component:{name}"), deployable);
            if !deployable && let Some(n) = kind_node {
                self.diags.push(&doc.path, &doc.src, n.span.start, Severity::Warning, format!("`{kind_name}` components are checked, but this version of Ferry cannot deploy them yet"));
            }
            let name_at = r.get("name").map(|n| n.span.start).unwrap_or(0);
            if name.is_empty() {
                continue;
            }
            if !is_name(&name) || name == "sandbox" {
                self.diags.push(&doc.path, &doc.src, name_at, Severity::Error, format!("invalid component name `{name}`: use lowercase letters, digits, `-` and `_`, starting with a letter (and not `sandbox`)"));
                continue;
            }
            if let Some(prev) = drafts.iter().find(|d| d.c.name == name) {
                let msg = format!("component `{name}` is already declared in {}", prev.c.file);
                self.diags
                    .push(&doc.path, &doc.src, name_at, Severity::Error, msg);
                continue;
            }
            let Some(kind) = ComponentType::from_name(kind_name) else {
                continue;
            };
            let directory = self.source(&doc, r, kind);
            let explicit = r
                .get("dependencies")
                .map(Node::items)
                .unwrap_or_default()
                .iter()
                .filter_map(|d| d.as_str().map(|s| (s.to_string(), d.span.start)))
                .collect();
            drafts.push(Draft {
                c: Component {
                    name,
                    kind,
                    file: doc.path.clone(),
                    directory,
                    dependencies: vec![],
                    vars: string_map(r.get("vars")),
                    env_vars: string_map(r.get("env_vars")),
                    content_hash: String::new(),
                    timeout_secs: deploy_timeout(r),
                },
                name_at,
                src: doc.src.clone(),
                explicit,
            });
        }
        drafts
    }

    fn actions(
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
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    name_at,
                    Severity::Error,
                    format!("action `{name}` is declared twice"),
                );
                continue;
            }
            let mut triggers = Vec::new();
            let mut crons = 0;
            for t in r.get("triggers").map(Node::items).unwrap_or_default() {
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
                    crons += 1;
                    if crons == 2 {
                        self.diags.push(
                            &doc.path,
                            &doc.src,
                            at,
                            Severity::Error,
                            "an action has at most one `cron` trigger".to_string(),
                        );
                    }
                    if t.str_of("cron_schedule").is_none_or(str::is_empty) {
                        self.diags.push(
                            &doc.path,
                            &doc.src,
                            at,
                            Severity::Warning,
                            "this `cron` trigger has no `cron_schedule`: it never fires"
                                .to_string(),
                        );
                    }
                }
                if kind != "cron"
                    && let Some(n) = t.get("cron_schedule")
                {
                    self.diags.push(
                        &doc.path,
                        &doc.src,
                        n.span.start,
                        Severity::Error,
                        format!("`cron_schedule` is only used by `cron` triggers, not `{kind}`"),
                    );
                }
                let component = t.str_of("component_name").map(String::from);
                if schema::COMPONENT_TRIGGERS.contains(&kind.as_str()) {
                    match (&component, t.get("component_name")) {
                        (None, _) => self.diags.push(
                            &doc.path,
                            &doc.src,
                            at,
                            Severity::Error,
                            format!("a `{kind}` trigger needs `component_name`"),
                        ),
                        (Some(c), Some(n)) if !components.contains(c) => {
                            let hint = did_you_mean(c, components.iter().map(String::as_str));
                            self.diags.push(
                                &doc.path,
                                &doc.src,
                                n.span.start,
                                Severity::Error,
                                format!("unknown component `{c}` in trigger{hint}"),
                            );
                        }
                        _ => {}
                    }
                } else if let Some(n) = t.get("component_name") {
                    self.diags.push(
                        &doc.path,
                        &doc.src,
                        n.span.start,
                        Severity::Error,
                        format!(
                            "`component_name` is only used by component triggers, not `{kind}`"
                        ),
                    );
                }
                triggers.push(Trigger {
                    kind,
                    cron_schedule: t
                        .str_of("cron_schedule")
                        .filter(|c| !c.is_empty())
                        .map(String::from),
                    component,
                });
            }
            let mut steps = Vec::new();
            for s in r.get("steps").map(Node::items).unwrap_or_default() {
                let step_name = s.str_of("name").unwrap_or_default().to_string();
                match (s.entry("command"), s.entry("inline_contents")) {
                    (None, None) if s.get("public_repo").is_none() && s.get("connected_repo").is_none() => {
                        self.diags.push(&doc.path, &doc.src, s.span.start, Severity::Error, format!("step `{step_name}` needs `command` or `inline_contents`"))
                    }
                    (Some(_), Some(e)) => self.diags.push(&doc.path, &doc.src, e.key_span.start, Severity::Error, format!("step `{step_name}`: `command` and `inline_contents` are mutually exclusive")),
                    _ => {}
                }
                steps.push(step_name);
            }
            let mut deps = Vec::new();
            for d in r.get("dependencies").map(Node::items).unwrap_or_default() {
                let Some(dep) = d.as_str() else { continue };
                if components.contains(dep) {
                    deps.push(dep.to_string());
                } else {
                    let hint = did_you_mean(dep, components.iter().map(String::as_str));
                    self.diags.push(
                        &doc.path,
                        &doc.src,
                        d.span.start,
                        Severity::Error,
                        format!("unknown component `{dep}` in dependencies{hint}"),
                    );
                }
            }
            let timeout_secs = r.str_of("timeout").and_then(parse_duration);
            if let (Some(t), Some(n)) = (timeout_secs, r.get("timeout"))
                && t > MAX_ACTION_TIMEOUT_SECS
            {
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    n.span.start,
                    Severity::Error,
                    "an action's `timeout` is at most `1h`".to_string(),
                );
            }
            out.push(Action {
                name,
                file: doc.path.clone(),
                triggers,
                steps,
                timeout_secs,
                dependencies: deps,
            });
        }
        out
    }

    fn runbooks(
        &mut self,
        docs: Vec<(Doc, &'static Schema)>,
        components: &BTreeSet<String>,
        actions: &BTreeSet<String>,
    ) -> Vec<Runbook> {
        let mut out = Vec::new();
        for (doc, schema) in docs {
            let r = &doc.root;
            self.check(&doc, r, schema, "runbook", true);
            let mut steps = Vec::new();
            for s in r.get("steps").map(Node::items).unwrap_or_default() {
                if let Some(step) = self.runbook_step(&doc, s, components, actions) {
                    steps.push(step);
                }
            }
            out.push(Runbook {
                name: r.str_of("name").unwrap_or_default().into(),
                file: doc.path.clone(),
                steps,
            });
        }
        out
    }

    /// One runbook step: `deploy` (or `component_deploy`) a component, or run an `action` — a
    /// declared one (`action_name`) or one given inline (`command` / `inline_contents`).
    fn runbook_step(
        &mut self,
        doc: &Doc,
        s: &Node,
        components: &BTreeSet<String>,
        actions: &BTreeSet<String>,
    ) -> Option<(String, String, String)> {
        let name = s.str_of("name").unwrap_or_default().to_string();
        let kind = match s.str_of("type")? {
            "component_deploy" | "deploy" => "deploy",
            "action" => "action",
            _ => return None,
        };
        let mut push = |at: usize, severity, msg: String| {
            self.diags.push(&doc.path, &doc.src, at, severity, msg)
        };
        let inline = s.entry("command").or(s.entry("inline_contents"));
        let (key, known, what) = match kind {
            "action" => ("action_name", actions, "action"),
            _ => ("component_name", components, "component"),
        };
        if kind == "deploy" {
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
                        Severity::Error,
                        format!("`{k}` belongs to `action` steps, not `deploy`"),
                    );
                }
            }
        } else if let (Some(_), Some(i)) = (s.entry("action_name"), inline) {
            push(
                i.key_span.start,
                Severity::Error,
                format!(
                    "step `{name}`: an `action` step runs `action_name` or an inline action (`{}`), not both",
                    i.key
                ),
            );
            return None;
        } else if inline.is_some() {
            if let (Some(_), Some(e)) = (s.entry("command"), s.entry("inline_contents")) {
                push(
                    e.key_span.start,
                    Severity::Error,
                    format!(
                        "step `{name}`: `command` and `inline_contents` are mutually exclusive"
                    ),
                );
            }
            return Some((name, kind.into(), String::new()));
        }
        let Some(n) = s.get(key) else {
            let want = if kind == "action" {
                "`action_name`, or an inline `command` or `inline_contents`"
            } else {
                "`component_name`"
            };
            push(
                s.span.start,
                Severity::Error,
                format!("a `{kind}` step needs {want}"),
            );
            return None;
        };
        let target = n.as_str().unwrap_or_default().to_string();
        if !known.contains(&target) {
            let hint = did_you_mean(&target, known.iter().map(String::as_str));
            push(
                n.span.start,
                Severity::Error,
                format!("unknown {what} `{target}`{hint}"),
            );
        }
        Some((name, kind.into(), target))
    }

    fn installs(
        &mut self,
        docs: Vec<(Doc, &'static Schema)>,
        inputs: &[Input],
    ) -> Vec<InstallDecl> {
        let mut out: Vec<InstallDecl> = Vec::new();
        for (doc, schema) in docs {
            let r = &doc.root;
            self.check(&doc, r, schema, "install", true);
            let name = r.str_of("name").unwrap_or_default().to_string();
            if out.iter().any(|i| i.name == name) {
                let at = r.get("name").map(|n| n.span.start).unwrap_or(0);
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    at,
                    Severity::Error,
                    format!("install `{name}` is declared twice"),
                );
            }
            let accounts: Vec<usize> = ["aws_account", "azure_account", "gcp_account"]
                .iter()
                .filter_map(|k| r.entry(k).map(|e| e.key_span.start))
                .collect();
            if accounts.len() > 1 {
                self.diags.push(&doc.path, &doc.src, accounts[1], Severity::Error, "an install has one cloud account: `aws_account`, `azure_account` or `gcp_account`".to_string());
            }
            let mut values = BTreeMap::new();
            for table in r.get("inputs").map(Node::items).unwrap_or_default() {
                for e in table.entries() {
                    if !inputs.iter().any(|i| i.name == e.key) {
                        let hint = did_you_mean(&e.key, inputs.iter().map(|i| i.name.as_str()));
                        // Nuon syncs installs on their own (`installs sync`): a warning here.
                        self.diags.push(
                            &doc.path,
                            &doc.src,
                            e.key_span.start,
                            Severity::Warning,
                            format!("unknown input `{}`{hint}: the install cannot set it", e.key),
                        );
                    }
                    let v = match &e.value.v {
                        V::Str(s) => s.clone(),
                        _ => e.value.to_json().to_string(),
                    };
                    values.insert(e.key.clone(), v);
                }
            }
            for i in inputs.iter().filter(|i| i.required && i.default.is_none()) {
                if !values.contains_key(&i.name) {
                    self.diags.push(
                        &doc.path,
                        &doc.src,
                        doc.at,
                        Severity::Warning,
                        format!(
                            "install `{name}` does not set the required input `{}`",
                            i.name
                        ),
                    );
                }
            }
            let approve_all = match r.get("approval_option") {
                Some(n) => match n.as_str() {
                    Some("approve-all") => true,
                    Some("prompt") => false,
                    other => {
                        // Nuon reads anything else as `prompt`.
                        self.diags.push(&doc.path, &doc.src, n.span.start, Severity::Warning, format!(
                            "`approval_option` {} means `prompt`: write `approve-all` or `prompt`",
                            other.map_or("that is not a string".to_string(), |o| format!("`{o}`"))
                        ));
                        false
                    }
                },
                None => r.bool_of("approve_all").unwrap_or(false),
            };
            out.push(InstallDecl {
                name,
                file: doc.path.clone(),
                inputs: values,
                approve_all,
            });
        }
        out
    }

    fn policies(
        &mut self,
        docs: Vec<(Doc, &'static Schema)>,
        components: &BTreeSet<String>,
    ) -> Vec<Policy> {
        let mut out = Vec::new();
        for (doc, schema) in docs {
            self.check(&doc, &doc.root, schema, "policies", true);
            for p in doc_items(&doc, schema, &schema::POLICY, "policy") {
                if let Some(policy) = self.policy(&doc, p, components) {
                    out.push(policy);
                }
            }
        }
        out
    }

    /// One policy. Nuon's rules (R6): `kubernetes_cluster` policies need kyverno, the others opa;
    /// `components = ["*"]` means every component of the type, and names are not checked (Ferry
    /// warns about unknown ones). The engine defaults by the file's extension, else by the type.
    fn policy(&mut self, doc: &Doc, p: &Node, components: &BTreeSet<String>) -> Option<Policy> {
        let kind = p.str_of("type")?.to_string();
        let contents = p.str_of("contents").unwrap_or_default().to_string();
        let local = crate::check::reference(&contents) == crate::check::Reference::Local;
        let ext_engine = if !local {
            None
        } else if contents.ends_with(".rego") {
            Some("opa")
        } else if contents.ends_with(".yaml") || contents.ends_with(".yml") {
            Some("kyverno")
        } else {
            None
        };
        let by_type = if kind == "kubernetes_cluster" {
            "kyverno"
        } else {
            "opa"
        };
        let engine = p
            .str_of("engine")
            .or(ext_engine)
            .unwrap_or(by_type)
            .to_string();
        let engine_at = p
            .get("engine")
            .or(p.get("contents"))
            .map_or(p.span.start, |n| n.span.start);
        if engine != by_type
            && kind != "action"
            && kind != "script"
            && kind != "job"
            && kind != "pulumi"
        {
            self.diags.push(
                &doc.path,
                &doc.src,
                engine_at,
                Severity::Error,
                format!("`{kind}` policies are evaluated by {by_type}, not {engine}"),
            );
        }
        if let Some(want) = ext_engine.filter(|e| *e != engine) {
            self.diags.push(
                &doc.path,
                &doc.src,
                engine_at,
                Severity::Warning,
                format!(
                    "`{contents}` looks like a {want} policy, but the policy's engine is {engine}"
                ),
            );
        }
        let mut names = Vec::new();
        let list = p.get("components").map(Node::items).unwrap_or_default();
        for c in list {
            let Some(cn) = c.as_str() else { continue };
            if cn == "*" {
                if list.len() > 1 {
                    self.diags.push(&doc.path, &doc.src, c.span.start, Severity::Error,
                        "`*` stands alone in `components`: it already means every component of the type".to_string());
                }
            } else if !components.contains(cn) {
                let hint = did_you_mean(cn, components.iter().map(String::as_str));
                self.diags.push(
                    &doc.path,
                    &doc.src,
                    c.span.start,
                    Severity::Warning,
                    format!(
                        "unknown component `{cn}` in policy{hint}: the policy never applies to it"
                    ),
                );
            }
            names.push(cn.to_string());
        }
        if names.iter().any(|n| n == "*") {
            names.clear();
        }
        Some(Policy {
            file: doc.path.clone(),
            name: p.str_of("name").map(String::from).unwrap_or_else(|| {
                doc.path
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(".toml")
                    .to_string()
            }),
            kind,
            engine,
            contents,
            components: names,
        })
    }

    fn template(
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

/// A component known only by name, for the stand-in state (its outputs are open there anyway).
fn stand_in_component(name: &str) -> Component {
    Component {
        name: name.to_string(),
        kind: ComponentType::Script,
        file: String::new(),
        directory: None,
        dependencies: vec![],
        vars: BTreeMap::new(),
        env_vars: BTreeMap::new(),
        content_hash: String::new(),
        timeout_secs: None,
    }
}

/// A deployable's `deploy_timeout` (or `timeout`), whole seconds, at least 1. The schema has
/// already checked that it is a duration.
fn deploy_timeout(r: &Node) -> Option<u64> {
    r.str_of("deploy_timeout")
        .or_else(|| r.str_of("timeout"))
        .and_then(parse_duration)
        .map(|s| s.ceil().max(1.0) as u64)
}

/// Longest action timeout Nuon accepts.
const MAX_ACTION_TIMEOUT_SECS: f64 = 3600.0;

/// The schema of one item of a directory block (components pick theirs by type later).
fn items_schema(dir: Dir) -> &'static Schema {
    match dir {
        Dir::Items(item) => item,
        _ => &schema::SCRIPT,
    }
}

/// Whether a file of a block's folder has the block file's shape (`[[input]]` tables in
/// `inputs/a.toml`, Ferry's older form) rather than one item's keys (Nuon's form).
fn holds_file_keys(root: &Node, file: &Schema, item: &Schema) -> bool {
    root.entries()
        .iter()
        .any(|e| file.field(&e.key).is_some() && item.field(&e.key).is_none())
}

/// The items a document holds: itself when read as one item, else its `[[key]]` tables.
fn doc_items<'d>(doc: &'d Doc, schema: &Schema, item: &Schema, key: &str) -> Vec<&'d Node> {
    if std::ptr::eq(schema, item) {
        vec![&doc.root]
    } else {
        doc.root
            .get(key)
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .collect()
    }
}

/// The directory relative file references of a block are resolved against (nuon-format.md R2).
fn base_dir(owner: &str, doc_path: &str) -> String {
    let block = owner.split(':').next().unwrap_or_default();
    match block {
        "component" => "components".into(),
        "action" => "actions".into(),
        "permissions" | "break_glass" => "permissions".into(),
        "install" | "installs" => "installs".into(),
        // A policy's files sit beside the file that defines it.
        "policies" => doc_path
            .rsplit_once('/')
            .map(|(dir, _)| dir.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The `name = "..."` of a file TOML could not parse (best effort, for error recovery only).
fn name_line(src: &str) -> Option<String> {
    src.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "name")
            .then(|| v.trim().trim_matches('"').to_string())
            .filter(|n| !n.is_empty() && !n.contains('"'))
    })
}

/// A Kubernetes name: lowercase letters, digits, `-` and `.`, starting and ending alphanumeric.
fn is_rfc1123(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric()
}

/// Names of the roles a permissions or break-glass document declares.
fn role_names(root: &Node, schema: &Schema) -> Vec<String> {
    if std::ptr::eq(schema, &schema::ROLE) {
        return root.str_of("name").map(String::from).into_iter().collect();
    }
    let mut out = Vec::new();
    for e in root.entries() {
        let items: Vec<&Node> = match &e.value.v {
            V::Table(_) => vec![&e.value],
            V::Array(a) => a.iter().collect(),
            _ => vec![],
        };
        out.extend(
            items
                .iter()
                .filter_map(|i| i.str_of("name").map(String::from)),
        );
    }
    out
}

/// A component, input or input group name.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && s.as_bytes()[0].is_ascii_lowercase()
}

fn string_map(node: Option<&Node>) -> BTreeMap<String, String> {
    node.map(|n| {
        n.entries()
            .iter()
            .filter_map(|e| e.value.as_str().map(|v| (e.key.clone(), v.to_string())))
            .collect()
    })
    .unwrap_or_default()
}

struct RefCtx<'a> {
    /// The state of a stand-in install, from the same builder deploys use.
    state: &'a Value,
    has_sandbox: bool,
}

impl RefCtx<'_> {
    /// Checks one reference from the root. Returns the component it reads (an implicit dependency)
    /// and what is wrong with it, if anything. Errors are only what Nuon itself refuses at sync
    /// (nuon-format.md R3): references to components or actions that do not exist, and references
    /// the owner may not make. Everything else fails only when rendered, so it is a warning.
    fn check(&self, path: &[String], owner: &str) -> (Option<String>, Option<(Severity, String)>) {
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
        // Nuon checks references in these blocks when the app is synced.
        let checked = owner.starts_with("component:")
            || owner.starts_with("action:")
            || owner == "sandbox"
            || owner == "stack";
        let refuse = |m: String| {
            Some((
                if checked {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                m,
            ))
        };
        let known = |at: &[&str]| -> Vec<String> {
            at.iter()
                .fold(&self.state["nuon"], |v, k| &v[*k])
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        let hint =
            |name: &str, known: &[String]| did_you_mean(name, known.iter().map(String::as_str));
        match rest {
            ["components", name, ..] => {
                let names = known(&["components"]);
                if owner == "stack" {
                    return (
                        None,
                        refuse(
                            "stack fields cannot read components: the stack is created before them"
                                .into(),
                        ),
                    );
                }
                if owner == format!("component:{name}") {
                    return (
                        None,
                        refuse(format!("component `{name}` cannot read its own outputs")),
                    );
                }
                if !names.iter().any(|n| n == name) {
                    return (
                        None,
                        refuse(format!("unknown component `{name}`{}", hint(name, &names))),
                    );
                }
                let found = self.walk(rest, &shown);
                return (Some(name.to_string()), found);
            }
            ["actions", "workflows", name, ..] | ["actions", name, ..] if *name != "workflows" => {
                let names = known(&["actions", "workflows"]);
                if owner == "stack" || owner == "sandbox" {
                    return (
                        None,
                        refuse(format!("{owner} fields cannot read action outputs")),
                    );
                }
                if !names.iter().any(|n| n == name) {
                    return (
                        None,
                        refuse(format!("unknown action `{name}`{}", hint(name, &names))),
                    );
                }
                if rest[1] != "workflows" {
                    return (
                        None,
                        warn(format!(
                            "`{shown}` fails when rendered at deploy: action state is read as `.nuon.actions.workflows.{name}`"
                        )),
                    );
                }
            }
            ["sandbox", ..] | ["install", "sandbox", ..] if owner == "stack" => {
                return (
                    None,
                    refuse(
                        "stack fields cannot read the sandbox: the stack is created before it"
                            .into(),
                    ),
                );
            }
            ["sandbox", "outputs", ..] | ["install", "sandbox", "outputs", ..]
                if !self.has_sandbox =>
            {
                return (
                    None,
                    warn("the app has no sandbox.toml, so it has no sandbox outputs".into()),
                );
            }
            ["inputs", name, ..] if *name != "inputs" => {
                return (
                    None,
                    warn(format!(
                        "inputs are read as `.nuon.inputs.inputs.{name}`, not `{shown}` (it fails when rendered at deploy)"
                    )),
                );
            }
            _ => {}
        }
        (None, self.walk(rest, &shown))
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
