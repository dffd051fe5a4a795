//! The app's OPA policies, evaluated with `regorus` against a plan inside the install, where the
//! whole plan is (Terraform's `show -json` holds values the control plane never sees).
//!
//! As OPA users write policies for Terraform, the input is `{"plan": <show -json>}`; for Helm
//! charts and Kubernetes manifests, as conftest gives them, each rendered object in turn (`input.kind`,
//! `input.metadata`, `input.spec`). Each policy's `deny` rule (a set of messages) blocks the
//! apply, its `warn` rule annotates the plan. Rego v1 and v0 (with `import future.keywords...`,
//! as Nuon's examples write it) are both read.

use ferry_protocol::messages::PolicyDoc;

use super::PluginError;

/// What the policies said of one plan.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// `policy: message` of every deny.
    pub denies: Vec<String>,
    /// `policy: message` of every warning.
    pub warnings: Vec<String>,
}

/// Evaluates each policy with `input` (`{"plan": ...}`).
pub fn evaluate(
    policies: &[PolicyDoc],
    input: &serde_json::Value,
) -> Result<Verdicts, PluginError> {
    let mut out = Verdicts::default();
    let input = regorus::Value::from_json_str(&input.to_string())
        .map_err(|e| PluginError(format!("the policies' input: {e}")))?;
    for p in policies {
        let (mut engine, package) = load(p)?;
        engine.set_input(input.clone());
        for (rule, into) in [("deny", &mut out.denies), ("warn", &mut out.warnings)] {
            for message in messages(&mut engine, &format!("{package}.{rule}"), &p.name)? {
                into.push(format!("{}: {message}", p.name));
            }
        }
    }
    Ok(out)
}

/// Evaluates the policies against each `(label, input)`: a deny fails the plan, saying which
/// policy, why, and of which input (its label, when it has one); warnings are printed and
/// appended to `summary`.
pub fn enforce(
    policies: &[PolicyDoc],
    inputs: &[(String, serde_json::Value)],
    summary: &mut String,
) -> Result<(), PluginError> {
    if policies.is_empty() {
        return Ok(());
    }
    let mut all = Verdicts::default();
    for (label, input) in inputs {
        let v = evaluate(policies, input)?;
        let of = |m: String| {
            if label.is_empty() {
                m
            } else {
                format!("{m} ({label})")
            }
        };
        all.denies.extend(v.denies.into_iter().map(of));
        all.warnings.extend(v.warnings.into_iter().map(of));
    }
    for w in &all.warnings {
        println!("policy warning: {w}");
    }
    // A deny blocks the apply: the plan fails, saying which policy and why.
    if !all.denies.is_empty() {
        return Err(PluginError(format!(
            "denied by policy: {}",
            all.denies.join("; ")
        )));
    }
    println!("policies passed: {}", policies.len());
    if !all.warnings.is_empty() {
        summary.push_str(&format!(" Policy warnings: {}.", all.warnings.join("; ")));
    }
    Ok(())
}

/// An engine holding the policy (read as v1, else v0), and its package's path (`data.x.y`).
fn load(p: &PolicyDoc) -> Result<(regorus::Engine, String), PluginError> {
    let mut last = String::new();
    for v0 in [false, true] {
        let mut engine = regorus::Engine::new();
        engine.set_rego_v0(v0);
        match engine.add_policy(format!("{}.rego", p.name), p.rego.clone()) {
            Ok(package) => return Ok((engine, package)),
            Err(e) => last = e.to_string(),
        }
    }
    Err(PluginError(format!(
        "policy `{}` does not compile: {last}",
        p.name
    )))
}

/// The messages a rule holds: a set or array of strings (others shown as JSON); none when the
/// policy has no such rule.
fn messages(
    engine: &mut regorus::Engine,
    rule: &str,
    policy: &str,
) -> Result<Vec<String>, PluginError> {
    let results = engine
        .eval_query(rule.to_string(), false)
        .map_err(|e| PluginError(format!("evaluating policy `{policy}`: {e}")))?;
    let mut out = Vec::new();
    for r in results.result {
        for e in r.expressions {
            let json: serde_json::Value = serde_json::from_str(
                &e.value
                    .to_json_str()
                    .map_err(|e| PluginError(format!("policy `{policy}`: {e}")))?,
            )
            .unwrap_or_default();
            let items = match json {
                serde_json::Value::Array(a) => a,
                serde_json::Value::Null => vec![],
                other => vec![other],
            };
            out.extend(items.into_iter().map(|m| match m {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            }));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, rego: &str) -> PolicyDoc {
        PolicyDoc {
            name: name.into(),
            rego: rego.into(),
        }
    }

    #[test]
    fn denies_and_warnings_of_both_dialects_are_collected() {
        let plan = serde_json::json!({"plan": {"resource_changes": [
            {"address": "terraform_data.forbidden", "type": "terraform_data"},
            {"address": "terraform_data.ok", "type": "terraform_data"}
        ]}});
        let v0 = doc(
            "no-forbidden",
            "package ferry.forbidden\nimport future.keywords.in\ndeny[msg] {\n  some rc in input.plan.resource_changes\n  endswith(rc.address, \".forbidden\")\n  msg := sprintf(\"%s is forbidden\", [rc.address])\n}\n",
        );
        let v1 = doc(
            "count",
            "package ferry.count\nwarn contains msg if {\n  count(input.plan.resource_changes) > 1\n  msg := \"more than one change\"\n}\n",
        );
        let v = evaluate(&[v0, v1], &plan).unwrap();
        assert_eq!(
            v.denies,
            ["no-forbidden: terraform_data.forbidden is forbidden"]
        );
        assert_eq!(v.warnings, ["count: more than one change"]);
        let clean = serde_json::json!({"plan": {"resource_changes": []}});
        let v = evaluate(
            &[doc(
                "count",
                "package c\nwarn contains \"x\" if { false }\n",
            )],
            &clean,
        )
        .unwrap();
        assert_eq!(v, Verdicts::default());
        assert!(evaluate(&[doc("bad", "package b\ndeny contains if {")], &clean).is_err());
    }
}
