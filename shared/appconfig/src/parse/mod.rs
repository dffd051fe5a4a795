//! Reading a package into an [`AppConfig`]: find the blocks, check each file against its schema,
//! extract what Ferry uses, check cross-references and templates, order the components.
//!
//! One [`Loader`] walks the package and collects every diagnostic (never stopping at the first).
//! This module finds each block's documents and runs the phases in order (`Loader::run`); each
//! block's reading is a module of its own: `roles`, `inputs` (and secrets), `components` (and the
//! sandbox), `actions` (and runbooks), `installs` (and policies); `refs` checks templates and
//! `dependencies` turns what they read into the deploy order. `model` holds the result's types.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::check::{Checker, Site, did_you_mean, normalize, parse_duration};
use crate::diagnostics::{Diagnostics, Severity};
use crate::package::{Package, hash_files};
use crate::schema::{self, BLOCKS, Block, Dir, Schema};
use crate::template::{Mode, Template};
use crate::tree::{self, Node, V};

mod account;
mod actions;
mod components;
mod dependencies;
mod inputs;
mod installs;
mod model;
mod refs;
mod rego;
mod roles;
mod settings;

pub use account::{
    CloudRole, InstallStack, KubeTarget, NestedStack, OperationRule, RolePolicy, RoleUse, Secret,
};
pub use model::{
    Action, ActionInput, ActionStep, AppConfig, Component, ComponentType, Input, InstallDecl,
    Metadata, Policy, Rendered, Runbook, RunbookStep, RunbookStepKind, Trigger,
};

use components::stand_in_component;
use dependencies::owner_refs;

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
        role_names: BTreeSet::new(),
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
    /// The roles `permissions` and `break_glass` declare (names as written): what `role` and
    /// `operation_roles` may name.
    role_names: BTreeSet<String>,
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

    /// A warning at `node` unless it names a declared role: the install stack creates none for
    /// it, so a runner in one refuses the job (one in no stack runs it as itself).
    fn known_role(&mut self, file: &str, node: Option<&Node>) {
        let Some((name, at)) = node.and_then(|n| Some((n.as_str()?, n.span.start))) else {
            return;
        };
        if !self.role_names.contains(name) {
            let hint = did_you_mean(name, self.role_names.iter().map(String::as_str));
            self.warn(
                file,
                at,
                format!("role `{name}` is not declared in permissions or break_glass.toml{hint}: the install stack creates no such role, so a runner in one refuses this job"),
            );
        }
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
                (true, _) => self.err(
                    &doc.path,
                    e.key_span.start,
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

    /// Reads the whole package: every block's documents, then each block in the order later ones
    /// need (roles before operation roles, components before what references them), then templates,
    /// dependencies, the deploy order and content hashes.
    fn run(&mut self) -> Option<AppConfig> {
        self.unknown_files();
        let mut docs: Blocks = BLOCKS
            .iter()
            .map(|b| (b.name, self.block_docs(b)))
            .collect();
        self.named_policies();
        let mut take = |name: &str| docs.remove(name).unwrap_or_default();
        let metadata = self.metadata(take("metadata"));
        let (roles, stack, operation_roles) = self.roles(&mut take);
        let (inputs, groups) = self.inputs(take("inputs"), take("input_groups"));
        let secrets = self.secrets(take("secrets"));
        let sandbox = take("sandbox")
            .into_iter()
            .next()
            .and_then(|(doc, _)| self.sandbox(doc));
        let mut drafts = self.components(take("components"));
        let component_names: BTreeSet<String> = drafts
            .iter()
            .map(|d| d.c.name.clone())
            .chain(self.broken.iter().cloned())
            .collect();
        let mut actions = self.actions(take("actions"), &component_names);
        let action_names: BTreeSet<String> = actions.iter().map(|a| a.name.clone()).collect();
        let runbooks = self.runbooks(take("runbooks"), &component_names, &action_names);
        let installs = self.installs(take("installs"), &inputs);
        let policies = self.policies(take("policies"), &component_names);
        self.input_groups_known(&inputs, &groups);

        let shape = AppConfig {
            metadata,
            inputs,
            secrets,
            roles,
            operation_roles,
            stack,
            sandbox,
            components: component_names
                .iter()
                .map(|n| stand_in_component(n))
                .collect(),
            actions: vec![],
            runbooks,
            installs,
            policies,
            deploy_order: vec![],
        };
        let implicit = self.implicit_dependencies(&shape, &actions);
        let mut config = shape;
        if let Some(s) = &config.sandbox
            && let Some(deps) = implicit.get("sandbox").filter(|d| !d.is_empty())
        {
            let list: Vec<&str> = deps.iter().map(String::as_str).collect();
            let file = s.file.clone();
            self.err(&file, 0, format!("the sandbox cannot depend on components (it reads outputs of {}): it is deployed before them", list.join(", ")));
        }
        let graph = self.dependencies(&mut drafts, &component_names, &implicit);
        for a in &mut actions {
            let mut deps: BTreeSet<String> = a.dependencies.iter().cloned().collect();
            deps.extend(owner_refs(&implicit, &format!("action:{}", a.name)));
            a.dependencies = deps.into_iter().collect();
        }
        config.actions = actions;
        config.deploy_order = self.deploy_order(&graph, &drafts);
        config.components = drafts.into_iter().map(|d| d.c).collect();
        self.hash_contents(&mut config);
        Some(config)
    }

    /// One block's documents with the schema each is checked against: `NAME.toml` (itself, or its
    /// `[[NAME]]` tables) and the files of `NAME/`, refusing a package that has both.
    fn block_docs(&mut self, b: &Block) -> Vec<(Doc, &'static Schema)> {
        let file = format!("{}.toml", b.name);
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
                // Components pick their schema by type, later.
                (Some(doc), _) => list.push((doc, &schema::SCRIPT)),
                (None, Dir::Components) => {
                    if let Some(name) = name_line(self.text(&f)) {
                        self.broken.insert(name);
                    }
                }
                (None, _) => {}
            }
        }
        list
    }

    /// `metadata.toml`, which every package has.
    fn metadata(&mut self, docs: Vec<(Doc, &'static Schema)>) -> Metadata {
        let Some((doc, schema)) = docs.first() else {
            if !self.pkg.files.contains_key("metadata.toml") {
                self.err("metadata.toml", 0, "missing metadata.toml");
            }
            return Metadata {
                version: String::new(),
                description: None,
                display_name: None,
                readme: None,
                readme_text: None,
                extra: Default::default(),
            };
        };
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
            readme_text: r.str_of("readme").map(|v| self.contents("", v)),
            extra,
        }
    }

    /// An input's `group` must name a declared group, when the package declares any.
    fn input_groups_known(&mut self, inputs: &[Input], groups: &BTreeSet<String>) {
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
}

/// Every block's documents, by block name.
type Blocks = BTreeMap<&'static str, Vec<(Doc, &'static Schema)>>;

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

/// The directory relative file references of a block are resolved against (docs/app-config.md, "File references").
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
