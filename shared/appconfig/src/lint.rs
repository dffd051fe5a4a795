//! `ferry apps lint`: the rules of Nuon's config linter (the ones a `lint.toml` names, as in
//! nuonco/byoc), over a package, each finding at a file, line and column. What `apps validate`
//! checks (parsing, templates, references, policies that compile) is not repeated here.
//!
//! A `lint.toml` at the package's root configures them as Nuon's does: `[settings] min_severity`
//! (`info`, `warning` by default, `error`), and per rule `[rules.ID]` with `enabled`, `severity`
//! (replacing the rule's own), `required_labels` (`require-labels`) and `extra_blocked_policies`
//! (`no-admin-permissions`).
//!
//! Long (about 550 lines of rules, the rest tests) because it is the linter whole: one short
//! function per rule over the package's files, and the reading of `lint.toml` that configures them.

use serde::Serialize;
use serde_json::Value;

use crate::Package;
use crate::tree::{self, Node};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl Level {
    fn parse(s: &str) -> Option<Level> {
        match s {
            "info" => Some(Level::Info),
            "warning" | "warn" => Some(Level::Warning),
            "error" => Some(Level::Error),
            _ => None,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// One finding of one rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub rule: String,
    pub severity: Level,
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}: {} [{}]",
            self.file,
            self.line,
            self.column,
            self.severity.word(),
            self.message,
            self.rule
        )
    }
}

/// The rules, with what each checks.
pub const RULES: &[(&str, &str)] = &[
    (
        "require-labels",
        "components, actions and runbooks have labels (and the required ones)",
    ),
    (
        "no-admin-permissions",
        "no role uses an admin managed policy, or an inline Allow of Action * on Resource *",
    ),
    (
        "component-nuon-toml",
        "a component's local source directory holds a nuon.toml",
    ),
    (
        "expected-directories",
        "the directories the config implies exist",
    ),
    (
        "sandbox-use-tag",
        "the sandbox's repository is pinned to a tag, not a branch",
    ),
    (
        "runner-init-script",
        "the runner's init script matches its platform",
    ),
    (
        "permissions-boundary-scope",
        "no permissions boundary grants Action * on Resource *",
    ),
    (
        "no-wildcard-actions",
        "policy and boundary JSON hold no service-wide wildcard actions (`s3:*`)",
    ),
    (
        "require-permissions-boundary",
        "every permission role has a permissions_boundary",
    ),
    (
        "require-policy-tests",
        "every Rego policy has its NAME_test.rego",
    ),
];

struct Config {
    min: Level,
    rules: std::collections::BTreeMap<String, RuleConfig>,
}

#[derive(Default)]
struct RuleConfig {
    enabled: bool,
    severity: Option<Level>,
    required_labels: Vec<String>,
    extra_blocked: Vec<String>,
}

/// What a run of the linter found, and the problems of its `lint.toml`.
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Level::Error)
    }
}

/// Lints `pkg` with its `lint.toml` (if any): the findings at or above its minimum severity.
pub fn lint(pkg: &Package) -> Report {
    let mut l = Linter {
        pkg,
        out: Vec::new(),
    };
    let cfg = l.config();
    l.require_labels(cfg.rule("require-labels"));
    l.no_admin_permissions(cfg.rule("no-admin-permissions"));
    l.component_nuon_toml();
    l.expected_directories();
    l.sandbox_use_tag();
    l.runner_init_script();
    l.json_statements();
    l.require_permissions_boundary();
    l.require_policy_tests();
    let mut findings: Vec<Finding> = l
        .out
        .into_iter()
        .filter_map(|mut f| {
            let rc = cfg.rules.get(&f.rule);
            if rc.is_some_and(|r| !r.enabled) {
                return None;
            }
            if let Some(s) = rc.and_then(|r| r.severity) {
                f.severity = s;
            }
            (f.severity >= cfg.min || f.rule == "lint.toml").then_some(f)
        })
        .collect();
    findings.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    Report { findings }
}

impl Config {
    fn rule(&self, id: &str) -> RuleConfig {
        self.rules
            .get(id)
            .map(|r| RuleConfig {
                enabled: r.enabled,
                severity: r.severity,
                required_labels: r.required_labels.clone(),
                extra_blocked: r.extra_blocked.clone(),
            })
            .unwrap_or(RuleConfig {
                enabled: true,
                ..Default::default()
            })
    }
}

struct Linter<'a> {
    pkg: &'a Package,
    out: Vec<Finding>,
}

fn strs(n: Option<&Node>) -> Vec<String> {
    n.map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|i| i.as_str().map(String::from))
        .collect()
}

impl<'a> Linter<'a> {
    fn push(&mut self, rule: &str, severity: Level, file: &str, at: usize, message: String) {
        let src = self.pkg.text(file).unwrap_or_default();
        let mut at = at.min(src.len());
        while !src.is_char_boundary(at) {
            at -= 1;
        }
        let line = src[..at].matches('\n').count() + 1;
        let line_start = src[..at].rfind('\n').map_or(0, |i| i + 1);
        let column = src[line_start..at].chars().count() + 1;
        self.out.push(Finding {
            rule: rule.into(),
            severity,
            file: file.into(),
            line,
            column,
            message,
        });
    }

    fn doc(&self, path: &str) -> Option<Node> {
        tree::parse(self.pkg.text(path)?).ok()
    }

    /// The TOML files of a block, in file or folder form (folders read recursively).
    fn block(&self, file: &str, dir: &str) -> Vec<(String, Node)> {
        let mut out = Vec::new();
        if let Some(d) = self.doc(file) {
            out.push((file.to_string(), d));
        }
        for (path, _) in self.pkg.under(dir) {
            if path.ends_with(".toml")
                && let Some(d) = self.doc(path)
            {
                out.push((path.clone(), d));
            }
        }
        out
    }

    /// The tables of a block's files: each file's root, or the `[[key]]` tables of its one-file
    /// form.
    fn tables(&self, file: &str, dir: &str, key: &str) -> Vec<(String, Node)> {
        self.block(file, dir)
            .into_iter()
            .flat_map(|(path, doc)| match doc.get(key) {
                Some(list) if path == file => list
                    .items()
                    .iter()
                    .map(|t| (path.clone(), t.clone()))
                    .collect::<Vec<_>>(),
                _ => vec![(path, doc)],
            })
            .collect()
    }

    fn config(&mut self) -> Config {
        let mut cfg = Config {
            min: Level::Warning,
            rules: Default::default(),
        };
        let Some(doc) = self.doc("lint.toml") else {
            return cfg;
        };
        if let Some(n) = doc.get("settings").and_then(|s| s.get("min_severity")) {
            match n.as_str().and_then(Level::parse) {
                Some(l) => cfg.min = l,
                None => self.push(
                    "lint.toml",
                    Level::Error,
                    "lint.toml",
                    n.span.start,
                    "`min_severity` is `info`, `warning` or `error`".into(),
                ),
            }
        }
        for e in doc.get("rules").map(Node::entries).unwrap_or_default() {
            if !RULES.iter().any(|(id, _)| *id == e.key) {
                let hint = crate::did_you_mean(&e.key, RULES.iter().map(|(id, _)| *id));
                self.push(
                    "lint.toml",
                    Level::Warning,
                    "lint.toml",
                    e.key_span.start,
                    format!("unknown rule `{}`{hint}", e.key),
                );
                continue;
            }
            let severity = e.value.get("severity").and_then(|n| {
                let l = n.as_str().and_then(Level::parse);
                if l.is_none() {
                    self.push(
                        "lint.toml",
                        Level::Error,
                        "lint.toml",
                        n.span.start,
                        "`severity` is `info`, `warning` or `error`".into(),
                    );
                }
                l
            });
            cfg.rules.insert(
                e.key.clone(),
                RuleConfig {
                    enabled: e.value.bool_of("enabled").unwrap_or(true),
                    severity,
                    required_labels: strs(e.value.get("required_labels")),
                    extra_blocked: strs(e.value.get("extra_blocked_policies")),
                },
            );
        }
        cfg
    }

    fn require_labels(&mut self, rc: RuleConfig) {
        for (what, file, dir, key) in [
            ("component", "components.toml", "components", "components"),
            ("action", "actions.toml", "actions", "actions"),
            ("runbook", "runbooks.toml", "runbooks", "runbooks"),
        ] {
            for (path, t) in self.tables(file, dir, key) {
                let Some(name) = t.str_of("name").map(String::from) else {
                    continue;
                };
                let at = t.get("name").map_or(0, |n| n.span.start);
                let labels = t.get("labels").map(Node::entries).unwrap_or_default();
                if labels.is_empty() {
                    let msg = format!("{what} `{name}` has no labels");
                    self.push("require-labels", Level::Warning, &path, at, msg);
                    continue;
                }
                for k in &rc.required_labels {
                    if !labels.iter().any(|e| &e.key == k) {
                        let msg = format!("{what} `{name}` is missing required label `{k}`");
                        self.push("require-labels", Level::Warning, &path, at, msg);
                    }
                }
            }
        }
    }

    /// Every role of the permission and break-glass files, with its file.
    fn roles(&self) -> Vec<(String, Node)> {
        let mut out = Vec::new();
        for (path, doc) in self.block("permissions.toml", "permissions") {
            for k in ["provision_role", "deprovision_role", "maintenance_role"] {
                if let Some(r) = doc.get(k) {
                    out.push((path.clone(), r.clone()));
                }
            }
            for r in doc.get("role").map(Node::items).unwrap_or_default() {
                out.push((path.clone(), r.clone()));
            }
            // The folder form: one role per file.
            if path != "permissions.toml" && doc.get("name").is_some() {
                out.push((path.clone(), doc.clone()));
            }
        }
        if let Some(doc) = self.doc("break_glass.toml") {
            for r in doc.get("role").map(Node::items).unwrap_or_default() {
                out.push(("break_glass.toml".into(), r.clone()));
            }
        }
        out
    }

    fn no_admin_permissions(&mut self, rc: RuleConfig) {
        let blocked: Vec<String> = [
            "AdministratorAccess",
            "PowerUserAccess",
            "roles/owner",
            "roles/editor",
            "Owner",
            "Contributor",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(rc.extra_blocked)
        .collect();
        for (path, role) in self.roles() {
            let name = role.str_of("name").unwrap_or("(unnamed)").to_string();
            for p in role.get("policies").map(Node::items).unwrap_or_default() {
                if let Some(n) = p.get("managed_policy_name")
                    && let Some(m) = n.as_str()
                    && blocked.iter().any(|b| b.eq_ignore_ascii_case(m))
                {
                    let msg = format!("role `{name}` uses the blocked managed policy `{m}`");
                    self.push(
                        "no-admin-permissions",
                        Level::Error,
                        &path,
                        n.span.start,
                        msg,
                    );
                }
                if let Some(n) = p.get("contents")
                    && let Some(text) = n.as_str()
                {
                    let json = self.referenced(&path, text);
                    if statements(&json).any(|s| allows(s) && full_wildcard(s)) {
                        let policy = p.str_of("name").unwrap_or("(inline)");
                        let msg = format!(
                            "role `{name}` has policy `{policy}` allowing Action * on Resource * (full admin)"
                        );
                        self.push(
                            "no-admin-permissions",
                            Level::Error,
                            &path,
                            n.span.start,
                            msg,
                        );
                    }
                }
            }
        }
    }

    /// A `contents` value as JSON: inline, or the file it names (relative to the file, then the
    /// package root).
    fn referenced(&self, from: &str, text: &str) -> Value {
        if let Ok(v) = serde_json::from_str(text) {
            return v;
        }
        let rel = text.trim_start_matches("./");
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        [format!("{dir}/{rel}"), rel.to_string()]
            .iter()
            .find_map(|p| self.pkg.text(p.trim_start_matches('/')))
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null)
    }

    fn component_nuon_toml(&mut self) {
        for (path, t) in self.tables("components.toml", "components", "components") {
            let Some(name) = t.str_of("name") else {
                continue;
            };
            let dir = ["source", "directory"]
                .iter()
                .find_map(|k| t.str_of(k))
                .or_else(|| {
                    ["public_repo", "connected_repo"]
                        .iter()
                        .find_map(|k| t.get(k).and_then(|r| r.str_of("directory")))
                });
            let Some(dir) = dir.filter(|d| d.starts_with('.') || d.starts_with('/')) else {
                continue;
            };
            let clean = dir.trim_start_matches("./").trim_matches('/');
            if !self.pkg.files.contains_key(&format!("{clean}/nuon.toml")) {
                let msg =
                    format!("component `{name}`: its source directory `{dir}` holds no nuon.toml");
                let at = t.get("name").map_or(0, |n| n.span.start);
                self.push("component-nuon-toml", Level::Warning, &path, at, msg);
            }
        }
    }

    /// Directories the config implies, each reported at the file that implies it.
    fn expected_directories(&mut self) {
        let mut wanted: Vec<(String, &str, Level, &str)> = Vec::new();
        if let Some((f, _)) = self
            .tables("components.toml", "components", "components")
            .first()
        {
            wanted.push((
                f.clone(),
                "components",
                Level::Error,
                "the app has components",
            ));
        }
        if let Some((f, _)) = self.tables("actions.toml", "actions", "actions").first() {
            wanted.push((f.clone(), "actions", Level::Error, "the app has actions"));
        }
        let boundary = self.roles().into_iter().find(|(_, r)| {
            r.str_of("permissions_boundary")
                .is_some_and(|b| b.starts_with('.') || b.starts_with('/'))
        });
        if let Some((f, _)) = boundary {
            wanted.push((f, "permissions", Level::Error, "roles name boundary files"));
        }
        if self
            .doc("inputs.toml")
            .is_some_and(|d| d.get("group").is_some_and(|g| !g.items().is_empty()))
        {
            wanted.push((
                "inputs.toml".into(),
                "input_groups",
                Level::Warning,
                "inputs have groups",
            ));
        }
        for (file, dir, level, why) in wanted {
            if !self.pkg.has_dir(dir) {
                let msg = format!("directory `{dir}/` is expected ({why}) but does not exist");
                self.push("expected-directories", level, &file, 0, msg);
            }
        }
    }

    fn sandbox_use_tag(&mut self) {
        let Some(doc) = self.doc("sandbox.toml") else {
            return;
        };
        for k in ["public_repo", "connected_repo"] {
            let Some(r) = doc.get(k) else { continue };
            if r.get("tag").is_none()
                && let Some(b) = r.get("branch")
            {
                let msg = format!(
                    "the sandbox's {k} follows branch `{}`: pin it to a tag",
                    b.as_str().unwrap_or_default()
                );
                self.push(
                    "sandbox-use-tag",
                    Level::Warning,
                    "sandbox.toml",
                    b.span.start,
                    msg,
                );
            }
        }
    }

    fn runner_init_script(&mut self) {
        let Some(doc) = self.doc("runner.toml") else {
            return;
        };
        let kind = doc.str_of("runner_type").unwrap_or_default().to_lowercase();
        let platform = ["aws", "azure", "gcp", "google"]
            .into_iter()
            .find(|p| kind.starts_with(p));
        let Some(platform) = platform else { return };
        let at = doc.get("runner_type").map_or(0, |n| n.span.start);
        let Some(url) = doc.get("init_script_url") else {
            let msg = format!("runner_type is `{kind}` but no init_script_url is set");
            self.push("runner-init-script", Level::Info, "runner.toml", at, msg);
            return;
        };
        let lower = url.as_str().unwrap_or_default().to_lowercase();
        let wrong: &[&str] = match platform {
            "aws" => &["azure", "gcp", "google"],
            "azure" => &["aws", "s3", "gcp", "google"],
            _ => &["aws", "s3", "azure"],
        };
        if let Some(w) = wrong.iter().find(|w| lower.contains(*w)) {
            let msg =
                format!("runner_type is `{kind}` but init_script_url appears to reference `{w}`");
            self.push(
                "runner-init-script",
                Level::Warning,
                "runner.toml",
                url.span.start,
                msg,
            );
        }
    }

    /// `permissions-boundary-scope` and `no-wildcard-actions`, over the JSON documents of
    /// `permissions/boundaries/` and `permissions/policies/`.
    fn json_statements(&mut self) {
        let files: Vec<(String, bool)> = ["permissions/boundaries", "permissions/policies"]
            .iter()
            .flat_map(|d| {
                self.pkg
                    .under(d)
                    .filter(|(p, _)| p.ends_with(".json"))
                    .map(move |(p, _)| (p.clone(), d.ends_with("boundaries")))
            })
            .collect();
        for (path, boundary) in files {
            let text = self.pkg.text(&path).unwrap_or_default().to_string();
            let Ok(json) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let base = path.rsplit('/').next().unwrap_or_default().to_string();
            for s in statements(&json) {
                let offset = text.find(&s["Action"].to_string()).unwrap_or(0);
                if boundary && full_wildcard(s) {
                    let msg = format!(
                        "boundary `{base}` grants Action * on Resource *: it constrains nothing"
                    );
                    self.push(
                        "permissions-boundary-scope",
                        Level::Error,
                        &path,
                        offset,
                        msg,
                    );
                }
                for w in service_wildcards(&s["Action"]) {
                    let offset = text.find(&format!("\"{w}\"")).unwrap_or(0);
                    let msg = format!(
                        "`{base}` allows the service-wide wildcard `{w}`: name the actions"
                    );
                    self.push("no-wildcard-actions", Level::Warning, &path, offset, msg);
                }
            }
        }
    }

    fn require_permissions_boundary(&mut self) {
        for (path, role) in self.roles() {
            if path == "break_glass.toml" || role.get("permissions_boundary").is_some() {
                continue;
            }
            let name = role.str_of("name").unwrap_or("(unnamed)");
            let at = role.get("name").map_or(role.span.start, |n| n.span.start);
            let msg = format!("role `{name}` has no permissions_boundary: it is unconstrained");
            self.push(
                "require-permissions-boundary",
                Level::Warning,
                &path,
                at,
                msg,
            );
        }
    }

    fn require_policy_tests(&mut self) {
        let policies: Vec<String> = self
            .pkg
            .under("policies")
            .map(|(p, _)| p.clone())
            .filter(|p| p.ends_with(".rego") && !p.ends_with("_test.rego"))
            .collect();
        for p in policies {
            let test = format!("{}_test.rego", p.trim_end_matches(".rego"));
            if !self.pkg.files.contains_key(&test) {
                let name = p
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(".rego");
                let msg = format!("policy `{name}` has no test file (`{name}_test.rego`)");
                self.push("require-policy-tests", Level::Warning, &p, 0, msg);
            }
        }
    }
}

fn statements(json: &Value) -> impl Iterator<Item = &Value> {
    match &json["Statement"] {
        Value::Array(a) => a.iter().collect::<Vec<_>>(),
        Value::Object(_) => vec![&json["Statement"]],
        _ => vec![],
    }
    .into_iter()
}

fn allows(s: &Value) -> bool {
    s["Effect"]
        .as_str()
        .is_some_and(|e| e.eq_ignore_ascii_case("allow"))
}

fn wildcard(v: &Value) -> bool {
    match v {
        Value::String(s) => s == "*",
        Value::Array(a) => a.iter().any(|i| i == "*"),
        _ => false,
    }
}

fn full_wildcard(s: &Value) -> bool {
    wildcard(&s["Action"]) && wildcard(&s["Resource"])
}

/// `service:*` actions.
fn service_wildcards(action: &Value) -> Vec<String> {
    let is = |s: &str| {
        s.strip_suffix(":*").is_some_and(|svc| {
            !svc.is_empty() && svc.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    match action {
        Value::String(s) if is(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .filter(|s| is(s))
            .map(String::from)
            .collect(),
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(files: &[(&str, &str)]) -> Package {
        Package {
            files: files
                .iter()
                .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
                .collect(),
        }
    }

    fn rules_of(r: &Report) -> Vec<String> {
        r.findings.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn each_rule_finds_its_problem_at_its_place() {
        let p = pkg(&[
            (
                "components/web.toml",
                "name = \"web\"\ntype = \"helm_chart\"\nsource = \"./src/web\"\n",
            ),
            (
                "sandbox.toml",
                "[public_repo]\nrepo = \"nuonco/sandboxes\"\nbranch = \"main\"\n",
            ),
            (
                "runner.toml",
                "runner_type = \"aws\"\ninit_script_url = \"https://x/azure/init.sh\"\n",
            ),
            (
                "permissions.toml",
                "[provision_role]\nname = \"provision\"\n[[provision_role.policies]]\nmanaged_policy_name = \"AdministratorAccess\"\n",
            ),
            (
                "permissions/boundaries/open.json",
                "{\"Statement\": [{\"Effect\": \"Allow\", \"Action\": \"*\", \"Resource\": \"*\"}]}",
            ),
            (
                "permissions/policies/s3.json",
                "{\"Statement\": [{\"Effect\": \"Allow\", \"Action\": [\"s3:*\", \"ec2:Describe*\"], \"Resource\": \"*\"}]}",
            ),
            ("policies/no-data.rego", "package x\n"),
        ]);
        let r = lint(&p);
        let shown = rules_of(&r);
        for want in [
            "components/web.toml:1:8: warning: component `web` has no labels [require-labels]",
            "components/web.toml:1:8: warning: component `web`: its source directory `./src/web` holds no nuon.toml [component-nuon-toml]",
            "sandbox.toml:3:10: warning: the sandbox's public_repo follows branch `main`: pin it to a tag [sandbox-use-tag]",
            "runner.toml:2:19: warning: runner_type is `aws` but init_script_url appears to reference `azure` [runner-init-script]",
            "permissions.toml:4:23: error: role `provision` uses the blocked managed policy `AdministratorAccess` [no-admin-permissions]",
            "permissions.toml:2:8: warning: role `provision` has no permissions_boundary: it is unconstrained [require-permissions-boundary]",
            "permissions/boundaries/open.json:1:46: error: boundary `open.json` grants Action * on Resource *: it constrains nothing [permissions-boundary-scope]",
            "permissions/policies/s3.json:1:47: warning: `s3.json` allows the service-wide wildcard `s3:*`: name the actions [no-wildcard-actions]",
            "policies/no-data.rego:1:1: warning: policy `no-data` has no test file (`no-data_test.rego`) [require-policy-tests]",
        ] {
            assert!(
                shown.iter().any(|s| s == want),
                "missing {want}\nin {shown:#?}"
            );
        }
        assert!(r.has_errors());
    }

    #[test]
    fn lint_toml_disables_rules_changes_severities_and_filters_below_its_minimum() {
        let p = pkg(&[
            (
                "lint.toml",
                "[settings]\nmin_severity = \"error\"\n[rules.require-labels]\nseverity = \"error\"\nrequired_labels = [\"team\"]\n[rules.require-policy-tests]\nenabled = false\n[rules.no-such-rule]\nenabled = true\n",
            ),
            (
                "components/web.toml",
                "name = \"web\"\ntype = \"helm_chart\"\n[labels]\nowner = \"x\"\n",
            ),
            ("policies/no-data.rego", "package x\n"),
        ]);
        let shown = rules_of(&lint(&p));
        assert_eq!(
            shown,
            [
                "components/web.toml:1:8: error: component `web` is missing required label `team` [require-labels]",
                "lint.toml:8:8: warning: unknown rule `no-such-rule` [lint.toml]",
            ],
        );
    }
}
