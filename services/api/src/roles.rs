//! The role each operation needs, as the operation's own description declares it:
//! `security(("token" = ["ROLE"]))` in its `#[utoipa::path]`. That one declaration routes the
//! operation (`routes!`), documents the role in the OpenAPI description, and — read back from the
//! description once, here — is what `auth::require_token` checks and what the dashboard asks
//! before it offers an action. A route that declares no role fails the test below.

use std::sync::OnceLock;

use ferry_model::Role;

/// One operation: its method, its path's segments (`{name}` matches any one), its role.
struct Operation {
    method: String,
    segments: Vec<String>,
    role: Role,
}

fn operations() -> &'static [Operation] {
    static OPS: OnceLock<Vec<Operation>> = OnceLock::new();
    OPS.get_or_init(|| {
        let doc = serde_json::to_value(crate::openapi()).unwrap_or_default();
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                let Some(role) = declared_role(op) else {
                    continue;
                };
                ops.push(Operation {
                    method: method.to_uppercase(),
                    segments: path.split('/').map(String::from).collect(),
                    role,
                });
            }
        }
        ops
    })
}

/// The role an operation's description declares (its `token` scope), if it declares one.
fn declared_role(op: &serde_json::Value) -> Option<Role> {
    let scopes = op["security"]
        .as_array()?
        .iter()
        .find_map(|s| s["token"].as_array())?;
    match scopes.as_slice() {
        [one] => serde_json::from_value(one.clone()).ok(),
        _ => None,
    }
}

/// The role a request `method path` needs (a concrete path, or a route's template), if an
/// operation of the API serves it. Of templates that match, the one with the most literal
/// segments wins (`/v1/installs/labels` over `/v1/installs/{name}`).
pub fn required(method: &str, path: &str) -> Option<Role> {
    let asked: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    operations()
        .iter()
        .filter(|op| op.method == method && op.segments.len() == asked.len())
        .filter(|op| {
            op.segments
                .iter()
                .zip(&asked)
                .all(|(t, a)| t.starts_with('{') || t == a)
        })
        .max_by_key(|op| op.segments.iter().filter(|t| !t.starts_with('{')).count())
        .map(|op| op.role)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation behind a token declares exactly one role: one that declares none (or
    /// two) fails here, before it can be served with no check.
    #[test]
    fn every_operation_behind_a_token_declares_its_role() {
        let doc = serde_json::to_value(crate::openapi()).unwrap();
        let mut undeclared = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let open = op["security"].as_array().is_some_and(|s| {
                    s.iter()
                        .all(|r| r.as_object().is_some_and(|o| o.is_empty()))
                });
                if !open && declared_role(op).is_none() {
                    undeclared.push(format!("{method} {path}"));
                }
            }
        }
        assert!(undeclared.is_empty(), "{undeclared:#?}");
        assert!(operations().len() > 40);
    }

    #[test]
    fn each_request_needs_the_role_its_operation_declares() {
        let needs = |m, p| required(m, p);
        assert_eq!(needs("GET", "/v1/installs/prod"), Some(Role::Viewer));
        assert_eq!(needs("GET", "/v1/jobs/j/logs"), Some(Role::Viewer));
        assert_eq!(
            needs("POST", "/v1/installs/prod/deploy"),
            Some(Role::Operator)
        );
        assert_eq!(
            needs("POST", "/v1/workflows/w/approve"),
            Some(Role::Operator)
        );
        assert_eq!(needs("POST", "/v1/jobs/j/cancel"), Some(Role::Operator));
        assert_eq!(needs("POST", "/v1/installs"), Some(Role::Admin));
        assert_eq!(needs("DELETE", "/v1/installs/prod"), Some(Role::Admin));
        assert_eq!(
            needs("POST", "/v1/installs/prod/runner-token"),
            Some(Role::Admin),
            "identities are an admin's to hand out"
        );
        assert_eq!(needs("POST", "/v1/apps/hello/configs"), Some(Role::Admin));
        assert_eq!(
            needs("GET", "/v1/tokens"),
            Some(Role::Admin),
            "tokens are an admin's"
        );
        assert_eq!(
            needs("POST", "/v1/installs/prod/break-glass"),
            Some(Role::Customer)
        );
        // A route's template asks the same as a concrete path.
        assert_eq!(
            needs("POST", "/v1/installs/{name}/deploy"),
            Some(Role::Operator)
        );
        assert_eq!(needs("POST", "/v1/nothing-here"), None);
    }
}
