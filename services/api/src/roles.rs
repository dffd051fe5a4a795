//! The role each operation needs, as `ferry_model::ops` declares it. The same declaration routes
//! the operation (`path = ops::X::PATH` in its `#[utoipa::path]`) and documents its role there
//! (`security(("token" = [ops::X::ROLE_NAME]))`); `auth::require_token` looks the role up here by
//! the route that matched, and the dashboard asks `ops::X::ROLE` before it offers an action. The
//! tests below compare the table with the OpenAPI document the API serves: an operation served
//! but not declared, declared but not served, or described with another method, role, body or
//! reply fails them.

use ferry_model::Role;
use ferry_model::ops;

/// The operation that serves `method` on the route template `route` (`/v1/installs/{name}`).
pub fn declared(method: &str, route: &str) -> Option<&'static ops::Declared> {
    ops::ALL
        .iter()
        .find(|op| op.method.name() == method && op.path == route)
}

/// The role a request needs: `method` on the route template `route`, if an operation of the
/// API serves it.
pub fn required(method: &str, route: &str) -> Option<Role> {
    declared(method, route).and_then(|op| op.role)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::*;

    /// The served description's operations, by `METHOD path`.
    fn described() -> BTreeMap<String, Value> {
        let doc = serde_json::to_value(crate::openapi()).unwrap();
        let mut all = BTreeMap::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                all.insert(format!("{} {path}", method.to_uppercase()), op.clone());
            }
        }
        all
    }

    /// The schema a type is described by: its last path segment, as utoipa names it, or an
    /// array of one (`Vec<T>`), or nothing (`()`, the markers of non-JSON bodies).
    fn schema_of(rust: &str) -> Option<String> {
        let last = |t: &str| t.rsplit("::").next().unwrap_or(t).to_string();
        if rust == "()" || rust.ends_with("NoContent") {
            return None;
        }
        if rust.starts_with("alloc::collections::btree::map::BTreeMap<") {
            return Some("object".into());
        }
        if let Some(inner) = rust
            .strip_prefix("alloc::vec::Vec<")
            .and_then(|r| r.strip_suffix('>'))
        {
            return Some(format!("[{}]", last(inner)));
        }
        if let Some(inner) = rust
            .strip_prefix("core::option::Option<")
            .and_then(|r| r.strip_suffix('>'))
        {
            return schema_of(inner);
        }
        Some(last(rust))
    }

    /// The schema an OpenAPI media type names: `Name`, `[Name]` for an array of refs, the
    /// inline type otherwise.
    fn named(content: &Value) -> Option<String> {
        let schema = content.as_object()?.values().next().map(|m| &m["schema"])?;
        let refname = |s: &Value| {
            s["$ref"]
                .as_str()
                .map(|r| r.rsplit('/').next().unwrap_or(r).to_string())
        };
        if let Some(r) = refname(schema) {
            return Some(r);
        }
        // An optional body: one of the type and null.
        if let Some(r) = schema["oneOf"]
            .as_array()
            .and_then(|o| o.iter().find_map(refname))
        {
            return Some(r);
        }
        if schema["type"] == "array" {
            return Some(refname(&schema["items"]).map_or("array".into(), |r| format!("[{r}]")));
        }
        schema["type"].as_str().map(String::from)
    }

    #[test]
    fn the_served_description_is_the_table_of_operations() {
        let mut described = described();
        for op in ops::ALL {
            let key = format!("{} {}", op.method.name(), op.path);
            let d = described
                .remove(&key)
                .unwrap_or_else(|| panic!("{key} ({}) is declared but not served", op.id));
            assert_eq!(d["operationId"], op.id, "{key}");
            let scopes: Vec<&str> = d["security"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["token"].as_array())
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(
                scopes,
                op.role
                    .into_iter()
                    .chain(op.also)
                    .map(Role::name)
                    .collect::<Vec<_>>(),
                "{key}: the roles"
            );
            let raw = d["requestBody"]["content"].clone();
            let body = if raw.is_null() { None } else { named(&raw) };
            let want = schema_of((op.body)()).map(|s| match s.as_str() {
                "Octets" => "array".to_string(),
                _ => s,
            });
            assert_eq!(body, want, "{key}: the request body {raw}");
            let ok = d["responses"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(code, _)| code.starts_with('2'))
                .map(|(_, r)| named(&r["content"]))
                .next_back()
                .flatten();
            let want = schema_of((op.reply)()).map(|s| match s.as_str() {
                "Octets" | "Value" | "EventStream" => "any".to_string(),
                _ => s,
            });
            match want {
                // A plan is JSON its plugin wrote, logs JSON lines of entries, events a stream
                // whose items the description names.
                Some(w) if w == "any" => assert!(ok.is_some(), "{key}: a reply"),
                w => assert_eq!(ok, w, "{key}: the reply"),
            }
        }
        assert!(
            described.is_empty(),
            "served but not in ferry_model::ops: {:?}",
            described.keys().collect::<Vec<_>>()
        );
    }

    #[test]
    fn each_request_needs_the_role_its_operation_declares() {
        let needs = |m, p| required(m, p);
        assert_eq!(needs("GET", "/v1/installs/{name}"), Some(Role::Viewer));
        assert_eq!(
            needs("POST", "/v1/installs/{name}/deploy"),
            Some(Role::Operator)
        );
        assert_eq!(
            needs("POST", "/v1/workflows/{id}/approve"),
            Some(Role::Operator)
        );
        assert_eq!(needs("DELETE", "/v1/installs/{name}"), Some(Role::Admin));
        assert_eq!(
            needs("POST", "/v1/installs/{name}/runner-token"),
            Some(Role::Admin),
            "identities are an admin's to hand out"
        );
        assert_eq!(needs("GET", "/v1/tokens"), Some(Role::Admin));
        assert_eq!(
            needs("POST", "/v1/installs/{name}/break-glass"),
            Some(Role::Customer)
        );
        assert_eq!(needs("POST", "/v1/nothing-here"), None);
        assert_eq!(needs("POST", "/v1/bootstrap"), None, "open");
    }
}
