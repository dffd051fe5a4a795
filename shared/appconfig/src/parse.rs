//! Reading a package into an [`AppConfig`] and validating it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Value, json};
use toml::Spanned;

use crate::diagnostics::Diagnostics;
use crate::package::{Package, hash_files};
use crate::template::Template;

#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    pub metadata: Metadata,
    pub inputs: Vec<Input>,
    /// The sandbox, deployed first, like a component named `sandbox`.
    pub sandbox: Option<Component>,
    pub components: Vec<Component>,
    /// Deploy stages of the components (not the sandbox), from explicit and implicit dependencies.
    pub deploy_order: Vec<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    pub version: String,
    pub description: Option<String>,
    pub display_name: Option<String>,
    pub readme: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    pub default: Option<String>,
    pub required: bool,
    pub sensitive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentType {
    /// Ferry's own: `plan.sh` / `apply.sh` / `teardown.sh` from the component's directory.
    Script,
    TerraformModule,
}

impl ComponentType {
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentType::Script => "script",
            ComponentType::TerraformModule => "terraform_module",
        }
    }
}

/// A deployable: a component, or the sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub name: String,
    pub kind: ComponentType,
    /// The file that declares it.
    pub file: String,
    /// Directory of the package holding its source.
    pub directory: String,
    /// Explicit dependencies and the implicit ones from template references, sorted.
    pub dependencies: Vec<String>,
    /// Template sources of Terraform variables.
    pub vars: BTreeMap<String, String>,
    /// Template sources of environment variables for the component's tools.
    pub env_vars: BTreeMap<String, String>,
    /// Hash of its declaration and every file of its directory: equal hashes, equal builds.
    pub content_hash: String,
}

/// A rendered component: its variables with every template replaced by the install's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub vars: Vec<(String, String)>,
    pub env_vars: Vec<(String, String)>,
}

impl Component {
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
    pub fn component(&self, name: &str) -> Option<&Component> {
        if name == "sandbox" {
            self.sandbox.as_ref()
        } else {
            self.components.iter().find(|c| c.name == name)
        }
    }

    /// The template state of an install, in Nuon's shape, so `{{.nuon.*}}` paths resolve.
    pub fn template_state(
        &self,
        install_id: &str,
        inputs: &BTreeMap<String, String>,
        sandbox_outputs: &serde_json::Map<String, Value>,
        component_outputs: &BTreeMap<String, serde_json::Map<String, Value>>,
    ) -> Value {
        let mut ins = serde_json::Map::new();
        for i in &self.inputs {
            if let Some(v) = inputs.get(&i.name).or(i.default.as_ref()) {
                ins.insert(i.name.clone(), Value::String(v.clone()));
            }
        }
        let comps: serde_json::Map<String, Value> = component_outputs
            .iter()
            .map(|(k, v)| (k.clone(), json!({ "outputs": v })))
            .collect();
        json!({
            "nuon": {
                "install": { "id": install_id, "name": install_id, "sandbox": { "outputs": sandbox_outputs } },
                "inputs": { "inputs": ins },
                "components": comps,
                "install_stack": { "outputs": {} },
            }
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetadataFile {
    version: String,
    description: Option<String>,
    display_name: Option<String>,
    readme: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputsFile {
    #[serde(default)]
    input: Vec<InputDef>,
    #[serde(default)]
    group: Vec<GroupDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputDef {
    name: Spanned<String>,
    display_name: Option<String>,
    description: Option<String>,
    group: Option<String>,
    default: Option<String>,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    sensitive: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // groups are presentation only; kept to accept Nuon's files
struct GroupDef {
    name: String,
    display_name: Option<String>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SandboxFile {
    #[serde(rename = "type")]
    kind: Option<Spanned<String>>,
    terraform_version: Option<String>,
    directory: Spanned<String>,
    #[serde(default)]
    vars: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    env_vars: BTreeMap<String, Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentFile {
    name: Spanned<String>,
    #[serde(rename = "type")]
    kind: Spanned<String>,
    #[serde(default)]
    dependencies: Vec<Spanned<String>>,
    var_name: Option<String>,
    terraform_version: Option<String>,
    directory: Spanned<String>,
    #[serde(default)]
    vars: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    env_vars: BTreeMap<String, Spanned<String>>,
}

/// A component as read, with the positions validation needs.
struct Draft {
    name: String,
    name_offset: usize,
    kind: ComponentType,
    file: String,
    directory: String,
    explicit: Vec<Spanned<String>>,
    vars: BTreeMap<String, Spanned<String>>,
    env_vars: BTreeMap<String, Spanned<String>>,
}

/// Parses and validates a package. Errors come back as diagnostics with file, line and column.
pub fn load(pkg: &Package) -> Result<AppConfig, Diagnostics> {
    let mut diags = Diagnostics::default();

    let metadata = match read::<MetadataFile>(pkg, "metadata.toml", &mut diags, true) {
        Some(m) => Metadata {
            version: m.version,
            description: m.description,
            display_name: m.display_name,
            readme: m.readme,
        },
        None => Metadata {
            version: String::new(),
            description: None,
            display_name: None,
            readme: None,
        },
    };

    let mut inputs = Vec::new();
    if let Some(f) = read::<InputsFile>(pkg, "inputs.toml", &mut diags, false) {
        let src = pkg.text("inputs.toml").unwrap_or_default();
        let mut seen = BTreeSet::new();
        for i in f.input {
            if !seen.insert(i.name.get_ref().clone()) {
                diags.error_at(
                    "inputs.toml",
                    src,
                    i.name.span().start,
                    format!("input `{}` is declared twice", i.name.get_ref()),
                );
            }
            let _ = i.group;
            inputs.push(Input {
                name: i.name.into_inner(),
                display_name: i.display_name,
                description: i.description,
                default: i.default,
                required: i.required,
                sensitive: i.sensitive,
            });
        }
        let _ = f.group;
    }

    let mut drafts: Vec<Draft> = Vec::new();
    let mut sandbox_draft = None;
    if let Some(s) = read::<SandboxFile>(pkg, "sandbox.toml", &mut diags, false) {
        let src = pkg.text("sandbox.toml").unwrap_or_default();
        let kind = match s
            .kind
            .as_ref()
            .map(|k| (k.get_ref().as_str(), k.span().start))
        {
            None | Some(("terraform", _)) => Some(ComponentType::TerraformModule),
            Some(("script", _)) => Some(ComponentType::Script),
            Some((other, at)) => {
                diags.error_at(
                    "sandbox.toml",
                    src,
                    at,
                    format!("unknown sandbox type `{other}` (expected `terraform` or `script`)"),
                );
                None
            }
        };
        let _ = s.terraform_version;
        if let Some(kind) = kind {
            check_directory(pkg, "sandbox.toml", src, &s.directory, kind, &mut diags);
            sandbox_draft = Some(Draft {
                name: "sandbox".into(),
                name_offset: 0,
                kind,
                file: "sandbox.toml".into(),
                directory: s.directory.into_inner(),
                explicit: vec![],
                vars: s.vars,
                env_vars: s.env_vars,
            });
        }
    }

    let component_files: Vec<String> = pkg
        .under("components")
        .map(|(p, _)| p.clone())
        .filter(|p| p.ends_with(".toml") && p.matches('/').count() == 1)
        .collect();
    // Names of components whose file did not parse: still known, so references to them do not
    // cascade into a second, misleading "unknown component" error.
    let mut unparsed: Vec<String> = Vec::new();
    for file in component_files {
        let Some(c) = read::<ComponentFile>(pkg, &file, &mut diags, true) else {
            if let Some(name) = pkg
                .text(&file)
                .and_then(|s| toml::from_str::<toml::Table>(s).ok())
                .and_then(|t| t.get("name")?.as_str().map(str::to_string))
            {
                unparsed.push(name);
            }
            continue;
        };
        let src = pkg.text(&file).unwrap_or_default();
        let name = c.name.get_ref().clone();
        if !is_name(&name) || name == "sandbox" {
            diags.error_at(&file, src, c.name.span().start, format!("invalid component name `{name}`: use lowercase letters, digits and `-` or `_` (and not `sandbox`)"));
            continue;
        }
        if let Some(prev) = drafts.iter().find(|d| d.name == name) {
            diags.error_at(
                &file,
                src,
                c.name.span().start,
                format!("component `{name}` is already declared in {}", prev.file),
            );
            continue;
        }
        let kind = match c.kind.get_ref().as_str() {
            "script" => ComponentType::Script,
            "terraform_module" => ComponentType::TerraformModule,
            other => {
                diags.error_at(&file, src, c.kind.span().start, format!("component type `{other}` is not supported yet (supported: script, terraform_module)"));
                continue;
            }
        };
        let _ = (c.var_name, c.terraform_version);
        check_directory(pkg, &file, src, &c.directory, kind, &mut diags);
        drafts.push(Draft {
            name,
            name_offset: c.name.span().start,
            kind,
            file,
            directory: c.directory.into_inner(),
            explicit: c.dependencies,
            vars: c.vars,
            env_vars: c.env_vars,
        });
    }

    let input_names: BTreeSet<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    let component_names: BTreeSet<&str> = drafts
        .iter()
        .map(|d| d.name.as_str())
        .chain(unparsed.iter().map(String::as_str))
        .collect();
    let mut deps: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut built: Vec<(Component, usize)> = Vec::new();
    for d in drafts.iter().chain(sandbox_draft.iter()) {
        let src = pkg.text(&d.file).unwrap_or_default();
        let mut dset: BTreeSet<String> = BTreeSet::new();
        for dep in &d.explicit {
            let dn = dep.get_ref();
            if dn == &d.name {
                diags.error_at(
                    &d.file,
                    src,
                    dep.span().start,
                    format!("component `{dn}` depends on itself"),
                );
            } else if component_names.contains(dn.as_str()) {
                dset.insert(dn.clone());
            } else {
                diags.error_at(
                    &d.file,
                    src,
                    dep.span().start,
                    format!(
                        "unknown component `{dn}` in dependencies{}",
                        hint(dn, &component_names)
                    ),
                );
            }
        }
        let ctx = RefCheck {
            file: &d.file,
            src,
            this: &d.name,
            inputs: &input_names,
            components: &component_names,
            has_sandbox: sandbox_draft.is_some(),
        };
        for v in d.vars.values().chain(d.env_vars.values()) {
            ctx.check(v, &mut dset, &mut diags);
        }
        if d.name == "sandbox" && !dset.is_empty() {
            diags.error_at(
                &d.file,
                src,
                0,
                "the sandbox cannot depend on components: it is deployed before them",
            );
        }
        let mut files: Vec<(&String, &Vec<u8>)> = pkg.under(&d.directory).collect();
        let decl = (
            d.file.clone(),
            pkg.files.get(&d.file).cloned().unwrap_or_default(),
        );
        files.push((&decl.0, &decl.1));
        let content_hash = hash_files(files.into_iter());
        if d.name != "sandbox" {
            deps.insert(d.name.clone(), dset.iter().cloned().collect());
        }
        built.push((
            Component {
                name: d.name.clone(),
                kind: d.kind,
                file: d.file.clone(),
                directory: d.directory.clone(),
                dependencies: dset.into_iter().collect(),
                vars: d
                    .vars
                    .iter()
                    .map(|(k, v)| (k.clone(), v.get_ref().clone()))
                    .collect(),
                env_vars: d
                    .env_vars
                    .iter()
                    .map(|(k, v)| (k.clone(), v.get_ref().clone()))
                    .collect(),
                content_hash,
            },
            d.name_offset,
        ));
    }

    let deploy_order = match crate::graph::deploy_stages(&deps) {
        Ok(s) => s,
        Err(cycle) => {
            if let Some((c, off)) = cycle
                .first()
                .and_then(|n| built.iter().find(|(c, _)| &c.name == n))
            {
                let src = pkg.text(&c.file).unwrap_or_default();
                diags.error_at(
                    &c.file,
                    src,
                    *off,
                    format!("dependency cycle: {}", cycle.join(" -> ")),
                );
            }
            vec![]
        }
    };

    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    let mut sandbox = None;
    let mut components = Vec::new();
    for (c, _) in built {
        if c.name == "sandbox" {
            sandbox = Some(c)
        } else {
            components.push(c)
        }
    }
    components.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(AppConfig {
        metadata,
        inputs,
        sandbox,
        components,
        deploy_order,
    })
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && s.as_bytes()[0].is_ascii_lowercase()
}

fn hint(name: &str, known: &BTreeSet<&str>) -> String {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

fn read<T: serde::de::DeserializeOwned>(
    pkg: &Package,
    file: &str,
    diags: &mut Diagnostics,
    required: bool,
) -> Option<T> {
    let Some(bytes) = pkg.files.get(file) else {
        if required {
            diags.error_at(file, "", 0, format!("missing {file}"));
        }
        return None;
    };
    let Ok(src) = std::str::from_utf8(bytes) else {
        diags.error_at(file, "", 0, "file is not valid UTF-8");
        return None;
    };
    match toml::from_str::<T>(src) {
        Ok(v) => Some(v),
        Err(e) => {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            diags.error_at(file, src, at, e.message().trim().to_string());
            None
        }
    }
}

fn check_directory(
    pkg: &Package,
    file: &str,
    src: &str,
    dir: &Spanned<String>,
    kind: ComponentType,
    diags: &mut Diagnostics,
) {
    let d = dir.get_ref().trim_end_matches('/');
    if d.starts_with('/') || d.split('/').any(|p| p == "..") {
        diags.error_at(
            file,
            src,
            dir.span().start,
            format!("directory `{d}` must be a relative path inside the package"),
        );
        return;
    }
    if !pkg.has_dir(d) {
        diags.error_at(
            file,
            src,
            dir.span().start,
            format!("directory `{d}` not found in the package"),
        );
        return;
    }
    let ok = match kind {
        ComponentType::Script => pkg.files.contains_key(&format!("{d}/apply.sh")),
        ComponentType::TerraformModule => pkg.under(d).any(|(p, _)| p.ends_with(".tf")),
    };
    if !ok {
        let need = match kind {
            ComponentType::Script => "an apply.sh",
            ComponentType::TerraformModule => "at least one .tf file",
        };
        diags.error_at(
            file,
            src,
            dir.span().start,
            format!("directory `{d}` has no {need}"),
        );
    }
}

struct RefCheck<'a> {
    file: &'a str,
    src: &'a str,
    this: &'a str,
    inputs: &'a BTreeSet<&'a str>,
    components: &'a BTreeSet<&'a str>,
    has_sandbox: bool,
}

impl RefCheck<'_> {
    /// Checks every template reference in one value, collecting component dependencies.
    fn check(&self, value: &Spanned<String>, deps: &mut BTreeSet<String>, diags: &mut Diagnostics) {
        // +1 skips the opening quote; exact for basic strings without escapes, which templates are.
        let base = value.span().start + 1;
        let t = match Template::parse(value.get_ref()) {
            Ok(t) => t,
            Err(e) => {
                diags.error_at(self.file, self.src, base + e.offset(), e.to_string());
                return;
            }
        };
        for r in t.references() {
            let (path, at) = (&r.path, base + r.offset);
            let p: Vec<&str> = path.iter().map(String::as_str).collect();
            let p = match p.split_first() {
                Some((&"nuon" | &"ferry", rest)) => rest,
                _ => {
                    diags.error_at(
                        self.file,
                        self.src,
                        at,
                        format!(
                            "template path `.{}` must start with `.nuon`",
                            path.join(".")
                        ),
                    );
                    continue;
                }
            };
            match p {
                ["install", "id" | "name"] => {}
                ["install", "sandbox", "outputs", _, ..] if self.has_sandbox => {}
                ["install", "sandbox", "outputs", _, ..] => {
                    diags.error_at(
                        self.file,
                        self.src,
                        at,
                        "the app has no sandbox.toml, so it has no sandbox outputs",
                    );
                }
                ["install_stack", "outputs", _, ..] => {}
                ["inputs", "inputs", name] => {
                    if !self.inputs.contains(name) {
                        diags.error_at(
                            self.file,
                            self.src,
                            at,
                            format!("unknown input `{name}`{}", hint(name, self.inputs)),
                        );
                    }
                }
                ["components", name, "outputs", _, ..] => {
                    if *name == self.this {
                        diags.error_at(
                            self.file,
                            self.src,
                            at,
                            format!("component `{name}` cannot read its own outputs"),
                        );
                    } else if self.components.contains(name) {
                        deps.insert(name.to_string());
                    } else {
                        diags.error_at(
                            self.file,
                            self.src,
                            at,
                            format!("unknown component `{name}`{}", hint(name, self.components)),
                        );
                    }
                }
                _ => diags.error_at(
                    self.file,
                    self.src,
                    at,
                    format!("unknown template path `.{}`", path.join(".")),
                ),
            }
        }
    }
}
