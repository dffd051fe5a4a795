//! Installs declared in the package (`installs/`: name, inputs, approval setting) and policies
//! (`policies/`: engine, contents, the components they apply to).

use super::*;

impl<'a> Loader<'a> {
    pub(super) fn installs(
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
                self.err(&doc.path, at, format!("install `{name}` is declared twice"));
            }
            let accounts: Vec<usize> = ["aws_account", "azure_account", "gcp_account"]
                .iter()
                .filter_map(|k| r.entry(k).map(|e| e.key_span.start))
                .collect();
            if accounts.len() > 1 {
                self.err(&doc.path, accounts[1], "an install has one cloud account: `aws_account`, `azure_account` or `gcp_account`");
            }
            let mut values = BTreeMap::new();
            for table in r.get("inputs").map(Node::items).unwrap_or_default() {
                for e in table.entries() {
                    if !inputs.iter().any(|i| i.name == e.key) {
                        let hint = did_you_mean(&e.key, inputs.iter().map(|i| i.name.as_str()));
                        // Nuon syncs installs on their own (`installs sync`): a warning here.
                        self.warn(
                            &doc.path,
                            e.key_span.start,
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
                    self.warn(
                        &doc.path,
                        doc.at,
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
                        self.warn(&doc.path, n.span.start, format!(
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

    pub(super) fn policies(
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

    /// One policy (a warning when this version does not enforce it). Nuon's rules (R6): `kubernetes_cluster` policies need kyverno, the others opa;
    /// `components = ["*"]` means every component of the type, and names are not checked (Ferry
    /// warns about unknown ones). The engine defaults by the file's extension, else by the type.
    // Long: Nuon's policy rules (R6) one after another, each a located diagnostic, in the order
    // Nuon checks them.
    pub(super) fn policy(
        &mut self,
        doc: &Doc,
        p: &Node,
        components: &BTreeSet<String>,
    ) -> Option<Policy> {
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
            self.err(
                &doc.path,
                engine_at,
                format!("`{kind}` policies are evaluated by {by_type}, not {engine}"),
            );
        }
        if engine == "opa"
            && let Some(node) = p.get("contents")
        {
            self.compile_policy(doc, node, &contents);
        }
        if let Some(want) = ext_engine.filter(|e| *e != engine) {
            self.warn(
                &doc.path,
                engine_at,
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
                    self.err(&doc.path, c.span.start, "`*` stands alone in `components`: it already means every component of the type");
                }
            } else if !components.contains(cn) {
                let hint = did_you_mean(cn, components.iter().map(String::as_str));
                self.warn(
                    &doc.path,
                    c.span.start,
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
        let name = p.str_of("name").map(String::from).unwrap_or_else(|| {
            doc.path
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .trim_end_matches(".toml")
                .to_string()
        });
        let type_at = p.get("type").map_or(p.span.start, |n| n.span.start);
        if engine == "kyverno" {
            self.warn(
                &doc.path,
                type_at,
                format!("policy `{name}` (Kyverno) is kept with the config version but not enforced: this version of Ferry hands no policy to the cluster"),
            );
        } else if !EVALUATED_POLICY_TYPES.contains(&kind.as_str()) {
            self.warn(
                &doc.path,
                type_at,
                format!("policy `{name}` is not evaluated: this version evaluates OPA policies of types {}; the plans of `{kind}` components say so", EVALUATED_POLICY_TYPES.join(", ")),
            );
        }
        Some(Policy {
            file: doc.path.clone(),
            name,
            text: self.contents(doc.path.rsplit_once('/').map_or("", |(d, _)| d), &contents),
            kind,
            engine,
            contents,
            components: names,
        })
    }
}

/// The types of the OPA policies the runner evaluates against plans: Terraform's (`input.plan`)
/// and the Kubernetes plugins' (each rendered object).
pub const EVALUATED_POLICY_TYPES: &[&str] = &[
    "terraform_module",
    "sandbox",
    "helm_chart",
    "kubernetes_manifest",
    "job",
];
