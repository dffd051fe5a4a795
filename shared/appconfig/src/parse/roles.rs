//! Roles and their rules: `permissions/` and `break_glass` roles, the named IAM policies they refer
//! to, and `operation_roles` (which may only name roles declared before them).

use super::*;

impl<'a> Loader<'a> {
    /// Roles (`permissions`, `break_glass`, read as `CloudRole`s), the runner, the stack (read
    /// as the `InstallStack`), installer and Kubernetes contexts, and `operation_roles`, whose
    /// rules may only name roles declared before them.
    pub(super) fn roles(
        &mut self,
        take: &mut impl FnMut(&str) -> Vec<(Doc, &'static Schema)>,
    ) -> (Vec<CloudRole>, Option<InstallStack>, Vec<OperationRule>) {
        let mut roles = BTreeSet::new();
        let mut declared = Vec::new();
        let mut stack = None;
        let mut rules = Vec::new();
        for name in [
            "permissions",
            "break_glass",
            "runner",
            "stack",
            "installer",
            "kubernetes_contexts",
            "operation_roles",
        ] {
            for (doc, schema) in take(name) {
                self.check(&doc, &doc.root, schema, name, true);
                if std::ptr::eq(schema, &schema::ROLE) && name == "permissions" {
                    self.permission_role(&doc);
                }
                if name == "permissions" || name == "break_glass" {
                    roles.extend(role_names(&doc.root, schema));
                    declared.extend(self.cloud_roles(&doc, schema, name));
                }
                if name == "stack" {
                    stack = Some(Self::install_stack(&doc));
                }
                if name == "operation_roles" {
                    rules.extend(self.operation_rules(&doc, &roles));
                }
            }
        }
        self.role_names = roles;
        (declared, stack, rules)
    }

    /// `permissions/policies/**/*.toml`: named IAM policies roles refer to.
    pub(super) fn named_policies(&mut self) {
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

    pub(super) fn permission_role(&mut self, doc: &Doc) {
        if doc.root.get("type").is_none() {
            self.err(&doc.path, 0, "missing required key `type` in a permissions/ role (provision, maintenance, deprovision or custom)");
        }
    }

    /// `operation_roles.toml` (R6): principals name a component, the sandbox or an action; each
    /// (principal, operation) once; roles are declared in permissions or break glass.
    pub(super) fn operation_rules(
        &mut self,
        doc: &Doc,
        roles: &BTreeSet<String>,
    ) -> Vec<OperationRule> {
        let mut seen = BTreeSet::new();
        let mut rules = Vec::new();
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
            let Some((role, name)) = rule.get("role").and_then(|r| Some((r, r.as_str()?))) else {
                continue;
            };
            rules.push(OperationRule {
                principal: p.to_string(),
                operation: op.to_string(),
                role: name.to_string(),
            });
            if !roles.contains(name) {
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
        rules
    }
}

/// Names of the roles a permissions or break-glass document declares.
pub(super) fn role_names(root: &Node, schema: &Schema) -> Vec<String> {
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
