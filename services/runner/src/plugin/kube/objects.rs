//! Kubernetes objects as a plan sees them: a YAML stream read into objects, and two sets of them
//! compared into the changes a reviewer reads.
//!
//! The changes take the shape of Terraform's `show -json` (`resource_changes` with `actions`,
//! `before`, `after` and sensitivity marks), so the control plane stores, and `ferry workflows get
//! --diff` shows, a chart's or a manifest's plan exactly as it does a module's. Each object's
//! attributes are flattened to paths (`spec.replicas`, `spec.template.spec.containers[0].image`), so
//! a changed value shows as one line. A Secret's `data` and `stringData` never leave the install:
//! they are replaced by a mark that says only whether they changed.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Kinds that live outside namespaces (the common ones): their address has no namespace.
const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "IngressClass",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "APIService",
    "RuntimeClass",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// `Kind/namespace/name`, or `Kind/name` for a cluster-scoped kind: what a plan calls it.
    pub address: String,
    pub kind: String,
    pub body: Value,
}

/// The objects of a YAML stream (`---`-separated documents; a `List`'s items count one by one;
/// empty documents are skipped). Objects without a namespace are placed in `namespace`, as
/// `kubectl apply -n` and `helm install -n` place them.
pub fn parse(yaml: &str, namespace: &str) -> Result<Vec<Object>, String> {
    let mut out = Vec::new();
    for (i, doc) in serde_norway::Deserializer::from_str(yaml).enumerate() {
        let value = Value::deserialize(doc)
            .map_err(|e| format!("document {} of the manifest is not valid YAML: {e}", i + 1))?;
        match value {
            Value::Null => {}
            Value::Object(ref m)
                if m.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"))
                    && m.get("items").is_some_and(Value::is_array) =>
            {
                for item in m["items"].as_array().into_iter().flatten() {
                    out.push(object(item.clone(), namespace, i)?);
                }
            }
            v => out.push(object(v, namespace, i)?),
        }
    }
    Ok(out)
}

fn object(mut body: Value, namespace: &str, i: usize) -> Result<Object, String> {
    let field = |b: &Value, path: &[&str]| {
        path.iter()
            .try_fold(b, |v, k| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (Some(kind), Some(_), Some(name)) = (
        field(&body, &["kind"]),
        field(&body, &["apiVersion"]),
        field(&body, &["metadata", "name"]),
    ) else {
        return Err(format!(
            "document {} of the manifest is not a Kubernetes object (it needs apiVersion, kind and metadata.name)",
            i + 1
        ));
    };
    let address = if CLUSTER_SCOPED.contains(&kind.as_str()) {
        format!("{kind}/{name}")
    } else {
        let ns = field(&body, &["metadata", "namespace"]).unwrap_or_else(|| namespace.to_string());
        if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("namespace".into(), Value::String(ns.clone()));
        }
        format!("{kind}/{ns}/{name}")
    };
    Ok(Object {
        address,
        kind,
        body,
    })
}

/// The changes from `before` (what was last applied) to `after` (what the plan would apply), in
/// Terraform's plan shape, in address order.
pub fn changes(before: &[Object], after: &[Object]) -> Value {
    let by_address = |set: &[Object]| -> BTreeMap<String, Object> {
        set.iter().map(|o| (o.address.clone(), o.clone())).collect()
    };
    let (old, new) = (by_address(before), by_address(after));
    let mut addresses: Vec<&String> = old.keys().chain(new.keys()).collect();
    addresses.sort();
    addresses.dedup();
    let mut rcs = Vec::new();
    for address in addresses {
        let (b, a) = (old.get(address), new.get(address));
        let action = match (b, a) {
            (None, Some(_)) => "create",
            (Some(_), None) => "delete",
            (Some(b), Some(a)) if b.body == a.body => "no-op",
            _ => "update",
        };
        let (before_attrs, before_marks) = b.map(|o| attributes(o, a)).unwrap_or_default();
        let (after_attrs, after_marks) = a.map(|o| attributes(o, b)).unwrap_or_default();
        let side = |attrs: Map<String, Value>, present: bool| {
            if present {
                Value::Object(attrs)
            } else {
                Value::Null
            }
        };
        rcs.push(json!({
            "address": address,
            "type": a.or(b).map(|o| o.kind.clone()).unwrap_or_default(),
            "change": {
                "actions": [action],
                "before": side(before_attrs, b.is_some()),
                "after": side(after_attrs, a.is_some()),
                "before_sensitive": before_marks,
                "after_sensitive": after_marks,
            }
        }));
    }
    json!({ "resource_changes": rcs })
}

/// An object's attributes by path, with a Secret's data masked (and marked sensitive): the mask
/// says `(changed)` when `other`, the same object on the other side, holds different data.
fn attributes(o: &Object, other: Option<&Object>) -> (Map<String, Value>, Map<String, Value>) {
    let mut attrs = Map::new();
    flatten("", &o.body, &mut attrs);
    let mut marks = Map::new();
    if o.kind == "Secret" {
        for field in ["data", "stringData"] {
            let here = o.body.get(field);
            let there = other.and_then(|x| x.body.get(field));
            let prefix = format!("{field}.");
            attrs.retain(|k, _| !k.starts_with(&prefix));
            if here.is_some() {
                let mask = if here == there {
                    "(sensitive)"
                } else {
                    "(sensitive, changed)"
                };
                attrs.insert(field.into(), Value::String(mask.into()));
                marks.insert(field.into(), Value::Bool(true));
            }
        }
    }
    (attrs, marks)
}

fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        leaf => {
            out.insert(prefix.to_string(), leaf.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  text: hi\n---\n# a comment only\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: other\nspec:\n  replicas: 1\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n";

    #[test]
    fn a_stream_reads_into_addressed_objects() {
        let objs = parse(V1, "app").unwrap();
        let addrs: Vec<&str> = objs.iter().map(|o| o.address.as_str()).collect();
        assert_eq!(
            addrs,
            [
                "ConfigMap/app/greeting",
                "Deployment/other/web",
                "Namespace/app"
            ]
        );
        let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n";
        assert_eq!(parse(list, "n").unwrap()[0].address, "ConfigMap/n/a");
        let err = parse("apiVersion: v1\nkind: ConfigMap\n", "n").unwrap_err();
        assert!(
            err.contains("document 1") && err.contains("metadata.name"),
            "{err}"
        );
        assert!(parse("a: [", "n").unwrap_err().contains("not valid YAML"));
    }

    #[test]
    fn changes_name_each_object_that_differs_and_each_value() {
        let v2 = V1.replace("text: hi", "text: bonjour").replace(
            "kind: Namespace\nmetadata:\n  name: app\n",
            "kind: Service\nmetadata:\n  name: web\n",
        );
        let c = changes(&parse(V1, "app").unwrap(), &parse(&v2, "app").unwrap());
        let rcs = c["resource_changes"].as_array().unwrap();
        let summary: Vec<(String, String)> = rcs
            .iter()
            .map(|r| {
                (
                    r["address"].as_str().unwrap().to_string(),
                    r["change"]["actions"][0].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("ConfigMap/app/greeting".into(), "update".into()),
                ("Deployment/other/web".into(), "no-op".into()),
                ("Namespace/app".into(), "delete".into()),
                ("Service/app/web".into(), "create".into()),
            ]
        );
        assert_eq!(rcs[0]["change"]["before"]["data.text"], "hi");
        assert_eq!(rcs[0]["change"]["after"]["data.text"], "bonjour");
        assert_eq!(rcs[2]["change"]["after"], Value::Null);
        assert_eq!(
            crate::plugin::terraform::summarize(&c),
            "Plan: 1 to add, 1 to change, 1 to destroy."
        );
    }

    #[test]
    fn secret_data_never_leaves_the_install() {
        let s = |v: &str| {
            format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {v}\n")
        };
        let c = changes(
            &parse(&s("b2xk"), "n").unwrap(),
            &parse(&s("bmV3"), "n").unwrap(),
        );
        let text = c.to_string();
        assert!(!text.contains("b2xk") && !text.contains("bmV3"), "{text}");
        let ch = &c["resource_changes"][0]["change"];
        assert_eq!(ch["actions"][0], "update");
        assert_eq!(ch["after"]["data"], "(sensitive, changed)");
        assert_eq!(ch["after_sensitive"]["data"], true);
        let same = changes(
            &parse(&s("b2xk"), "n").unwrap(),
            &parse(&s("b2xk"), "n").unwrap(),
        );
        assert_eq!(same["resource_changes"][0]["change"]["actions"][0], "no-op");
    }
}
