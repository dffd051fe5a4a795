//! `inputs` (with `input_groups`) and `secrets`: names, types, defaults, and the Kubernetes
//! secret rules Nuon enforces at sync.

use super::*;

impl<'a> Loader<'a> {
    pub(super) fn inputs(
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
                    self.err(
                        &doc.path,
                        at,
                        format!("invalid input name `{name}`: use letters, digits and `_`"),
                    );
                }
                let kind = i.str_of("type").unwrap_or("string").to_string();
                let default = i.get("default").map(|d| match &d.v {
                    V::Str(s) => s.clone(),
                    _ => d.to_json().to_string(),
                });
                self.check_default(&doc, i, name, &kind, default.as_deref());
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

    /// Warns of a default that is not a value of the input's type: Nuon accepts it (its own
    /// byoc app has a bool input defaulting to a placeholder), and an install created without a
    /// value is what fails.
    fn check_default(
        &mut self,
        doc: &Doc,
        i: &Node,
        name: &str,
        kind: &str,
        default: Option<&str>,
    ) {
        let (Some(d), Some(node)) = (default, i.get("default")) else {
            return;
        };
        let bad = match kind {
            "number" => !matches!(node.v, V::Int(_) | V::Float(_)) && d.parse::<f64>().is_err(),
            "bool" => !matches!(node.v, V::Bool(_)) && !matches!(d, "true" | "false"),
            "json" | "list" => {
                serde_json::from_str::<Value>(d).is_err() && matches!(node.v, V::Str(_))
            }
            _ => false,
        };
        if bad {
            self.warn(
                    &doc.path,
                    node.span.start,
                    format!("the default of input `{name}` is not a valid {kind}: an install must give it a value"),
                );
        }
    }

    pub(super) fn secrets(&mut self, docs: Vec<(Doc, &'static Schema)>) -> Vec<Secret> {
        let mut names: Vec<String> = Vec::new();
        let mut secrets = Vec::new();
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
                    self.err(&doc.path, at, format!("secret `{name}` is declared twice"));
                }
                names.push(name.to_string());
                secrets.extend(Self::secret(s));
            }
        }
        secrets
    }

    /// A secret's exclusive keys and its Kubernetes sync targets (R6).
    pub(super) fn secret_rules(
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
}

/// A Kubernetes name: lowercase letters, digits, `-` and `.`, starting and ending alphanumeric.
pub(super) fn is_rfc1123(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric()
}
