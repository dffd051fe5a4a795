//! Deployables: the sandbox and the components, each with the schema of its type, its source
//! (a local directory, a repository, or an image) and its content hash.

use ferry_protocol::messages::KindSettings;

use super::*;

impl<'a> Loader<'a> {
    pub(super) fn sandbox(&mut self, doc: Doc) -> Option<Component> {
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
        self.own_operation_roles(&doc.path, r);
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
            settings: KindSettings::None,
            drift_schedule: drift_schedule(r),
            operation_roles: operation_roles(r),
        })
    }

    /// Checks a deployable's source (exactly one of `directory`, `public_repo`, `connected_repo`,
    /// plus type-specific ones) and returns its local directory, if any.
    pub(super) fn source(&mut self, doc: &Doc, r: &Node, kind: ComponentType) -> Option<String> {
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
        if kind == ComponentType::KubernetesManifest
            && !self.manifest_needs_source(doc, r, &present)
        {
            return None;
        }
        if matches!(kind, ComponentType::ContainerImage | ComponentType::Job) {
            if kind == ComponentType::ContainerImage {
                self.image_source(doc, r);
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
                self.err(&doc.path, doc.at, format!("no source: set one of {want}"));
                None
            }
            [(k, _)] if *k == "directory" || *k == "source" => {
                self.local_directory(doc, r, r.get(k)?, kind)
            }
            [_] => None,
            [(a, _), (b, at), ..] => {
                self.err(
                    &doc.path,
                    *at,
                    format!("`{a}` and `{b}` are mutually exclusive: a component has one source"),
                );
                None
            }
        }
    }

    /// A kubernetes_manifest: an inline or file `manifest` needs no source (one with a source is a
    /// mistake); `kustomize` does. Returns whether to go on checking the source.
    fn manifest_needs_source(&mut self, doc: &Doc, r: &Node, present: &[(&str, usize)]) -> bool {
        match (r.get("manifest"), r.entry("kustomize")) {
            (None, None) => {
                self.err(
                    &doc.path,
                    doc.at,
                    "a kubernetes_manifest needs `manifest` or `kustomize`",
                );
                false
            }
            (Some(_), None) => {
                if let Some((k, at)) = present.first() {
                    self.err(
                        &doc.path,
                        *at,
                        format!(
                            "`{k}` is only used with `kustomize`, not with an inline `manifest`"
                        ),
                    );
                }
                false
            }
            (Some(_), Some(e)) => {
                self.err(
                    &doc.path,
                    e.key_span.start,
                    "`manifest` and `kustomize` are mutually exclusive",
                );
                true
            }
            (None, Some(_)) => true,
        }
    }

    /// A container_image has exactly one registry source.
    fn image_source(&mut self, doc: &Doc, r: &Node) {
        let sources: Vec<(&str, usize)> = ["public", "aws_ecr", "gcp_gar", "azure_acr"]
            .into_iter()
            .filter_map(|k| r.entry(k).map(|e| (k, e.key_span.start)))
            .collect();
        match sources.as_slice() {
            [] => self.err(
                &doc.path,
                doc.at,
                "a container_image needs one of `public`, `aws_ecr`, `gcp_gar` or `azure_acr`",
            ),
            [_] => {}
            [(a, _), (b, at), ..] => self.err(
                &doc.path,
                *at,
                format!("`{a}` and `{b}` are mutually exclusive: an image has one source"),
            ),
        }
    }

    /// A source directory in the package (`directory`, or a Pulumi `source`): inside it, present,
    /// holding what its type needs, and holding its `kustomize.path`.
    fn local_directory(
        &mut self,
        doc: &Doc,
        r: &Node,
        node: &Node,
        kind: ComponentType,
    ) -> Option<String> {
        let dir = node.as_str()?;
        let at = node.span.start;
        let d = match normalize(dir) {
            Some(d) if self.pkg.has_dir(&d) => d,
            Some(_) => {
                self.err(
                    &doc.path,
                    at,
                    format!("directory `{dir}` not found in the package"),
                );
                return None;
            }
            None => {
                let msg = format!("directory `{dir}` must be a relative path inside the package");
                self.err(&doc.path, at, msg);
                return None;
            }
        };
        let has = |f: &str| self.pkg.files.contains_key(&format!("{d}/{f}"));
        let missing = match kind {
            ComponentType::Script if !has("apply.sh") => Some("apply.sh"),
            ComponentType::TerraformModule
                if !self.pkg.under(&d).any(|(p, _)| p.ends_with(".tf")) =>
            {
                Some(".tf file")
            }
            ComponentType::HelmChart if !has("Chart.yaml") => Some("Chart.yaml"),
            ComponentType::DockerBuild => {
                (!has(r.str_of("dockerfile").unwrap_or("Dockerfile"))).then_some("Dockerfile")
            }
            _ => None,
        };
        if let Some(m) = missing {
            self.err(&doc.path, at, format!("directory `{dir}` has no {m}"));
        }
        if let Some(k) = r.get("kustomize").and_then(|k| k.get("path")) {
            let p = k.as_str().unwrap_or_default();
            if normalize(&format!("{d}/{p}"))
                .is_none_or(|full| !self.pkg.has_dir(&full) && !self.pkg.files.contains_key(&full))
            {
                self.err(
                    &doc.path,
                    k.span.start,
                    format!("kustomize path `{p}` not found in `{dir}`"),
                );
            }
        }
        Some(d)
    }

    pub(super) fn components(&mut self, docs: Vec<(Doc, &'static Schema)>) -> Vec<Draft> {
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
                self.unknown_type(&doc, kind_node, kind_name);
                continue;
            };
            self.check(&doc, r, schema, &format!("component:{name}"), deployable);
            if !deployable && let Some(n) = kind_node {
                self.warn(&doc.path, n.span.start, format!("`{kind_name}` components are checked, but this version of Ferry cannot deploy them yet"));
            }
            let name_at = r.get("name").map(|n| n.span.start).unwrap_or(0);
            if name.is_empty() {
                continue;
            }
            if !is_name(&name) || name == "sandbox" {
                self.err(&doc.path, name_at, format!("invalid component name `{name}`: use lowercase letters, digits, `-` and `_`, starting with a letter (and not `sandbox`)"));
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
            self.own_operation_roles(&doc.path, r);
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
                    settings: self.settings(r, kind, "components"),
                    drift_schedule: drift_schedule(r),
                    operation_roles: operation_roles(r),
                },
                name_at,
                src: doc.src.clone(),
                explicit,
            });
        }
        drafts
    }

    /// A component whose `type` is missing or not a component type.
    fn unknown_type(&mut self, doc: &Doc, kind_node: Option<&Node>, kind_name: &str) {
        match kind_node {
            None => self.err(
                &doc.path,
                doc.at,
                "missing required key `type` in component",
            ),
            Some(n) => {
                let hint = did_you_mean(kind_name, schema::COMPONENT_TYPE_NAMES.iter().copied());
                let msg = format!(
                    "unknown component type `{kind_name}`{hint} (expected one of: {})",
                    schema::COMPONENT_TYPE_NAMES.join(", ")
                );
                self.diags
                    .push(&doc.path, &doc.src, n.span.start, Severity::Error, msg);
            }
        }
    }

    /// Each role a deployable's own `operation_roles` names is declared.
    fn own_operation_roles(&mut self, file: &str, r: &Node) {
        for rule in r
            .get("operation_roles")
            .map(Node::items)
            .unwrap_or_default()
        {
            self.known_role(file, rule.get("role"));
        }
    }

    pub(super) fn content_hash(&self, c: &Component, referenced: Vec<String>) -> String {
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
}

/// A component known only by name, for the stand-in state (its outputs are open there anyway).
pub(super) fn stand_in_component(name: &str) -> Component {
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
        settings: KindSettings::None,
        drift_schedule: None,
        operation_roles: vec![],
    }
}

/// A deployable's `drift_schedule`, unless empty (the schema has checked it is a schedule).
fn drift_schedule(r: &Node) -> Option<String> {
    r.str_of("drift_schedule")
        .filter(|s| !s.trim().is_empty())
        .map(String::from)
}

/// A deployable's `deploy_timeout` (or `timeout`), whole seconds, at least 1. The schema has
/// already checked that it is a duration.
pub(super) fn deploy_timeout(r: &Node) -> Option<u64> {
    r.str_of("deploy_timeout")
        .or_else(|| r.str_of("timeout"))
        .and_then(parse_duration)
        .map(|s| s.ceil().max(1.0) as u64)
}

/// A deployable's own `operation_roles = [{operation, role}, ...]`.
fn operation_roles(r: &Node) -> Vec<(String, String)> {
    r.get("operation_roles")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|i| Some((i.str_of("operation")?.into(), i.str_of("role")?.into())))
        .collect()
}
