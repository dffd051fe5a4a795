//! `ferry workflows get W --diff`: a workflow with its plans, as Terraform's `show -json`
//! describes them (the API keeps the plugin's JSON as it was given; this reads it for people).

use anyhow::Result;
use ferry_model::{StepKind, Workflow};
use serde_json::{Value, json};

use crate::client::Api;
use crate::render;

/// Prints the workflow, then each plan step's changes; with `json_out`, one document
/// `{"workflow": …, "plans": {"<step>": <show -json>}}`. Exit code as `workflows get`.
pub async fn workflow_with_plans(api: &Api, id: &str, json_out: bool) -> Result<i32> {
    let w: Workflow = api.get(&format!("/v1/workflows/{id}")).await?;
    let mut plans = serde_json::Map::new();
    for s in w.steps.iter().filter(|s| s.kind == StepKind::Plan) {
        let Some(job) = &s.job_id else { continue };
        if let Some(p) = api
            .get_opt::<Value>(&format!("/v1/jobs/{job}/plan"))
            .await?
        {
            plans.insert(s.index.to_string(), p);
        }
    }
    if json_out {
        crate::commands::print_json(&json!({ "workflow": w, "plans": plans }))?;
    } else {
        println!("{}", render::workflow(&w));
        for s in w.steps.iter().filter(|s| s.kind == StepKind::Plan) {
            println!("\nplan of {} (step {}):", s.component, s.index);
            match plans.get(&s.index.to_string()) {
                Some(p) => print!("{}", changes(p)),
                None if s.job_id.is_some() => println!(
                    "  no structured plan: see `ferry logs --job {}`",
                    s.job_id.as_deref().unwrap_or_default()
                ),
                None => println!("  not planned yet"),
            }
        }
    }
    Ok(0)
}

/// One line per resource that changes (`+` create, `~` update with the attributes that change,
/// `-/+` replace, `-` delete) and per output that changes.
pub fn changes(plan: &Value) -> String {
    let mut out = String::new();
    let none = vec![];
    for rc in plan["resource_changes"].as_array().unwrap_or(&none) {
        let actions: Vec<&str> = rc["change"]["actions"]
            .as_array()
            .unwrap_or(&none)
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mark = match actions.as_slice() {
            ["create"] => "+",
            ["update"] => "~",
            ["delete"] => "-",
            ["delete", "create"] | ["create", "delete"] => "-/+",
            _ => continue,
        };
        let address = rc["address"].as_str().unwrap_or("?");
        out.push_str(&format!("  {mark} {address}"));
        if mark == "~" {
            let changed = changed_keys(&rc["change"]["before"], &rc["change"]["after"]);
            out.push_str(&format!(" ({})", changed.join(", ")));
        }
        out.push('\n');
    }
    if let Some(outputs) = plan["output_changes"].as_object() {
        for (name, c) in outputs {
            let actions = c["actions"].as_array().unwrap_or(&none);
            if actions.iter().any(|a| a != "no-op") {
                out.push_str(&format!("  output {name}: {}\n", join(actions)));
            }
        }
    }
    if out.is_empty() {
        out.push_str("  no changes\n");
    }
    out
}

fn changed_keys(before: &Value, after: &Value) -> Vec<String> {
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return vec![];
    };
    a.iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect()
}

fn join(actions: &[Value]) -> String {
    actions
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_change_has_its_mark() {
        let plan = json!({
            "resource_changes": [
                {"address": "a.new", "change": {"actions": ["create"]}},
                {"address": "a.same", "change": {"actions": ["no-op"]}},
                {"address": "a.edit", "change": {"actions": ["update"],
                    "before": {"x": 1, "y": 2}, "after": {"x": 1, "y": 3}}},
                {"address": "a.swap", "change": {"actions": ["delete", "create"]}},
                {"address": "a.gone", "change": {"actions": ["delete"]}}
            ],
            "output_changes": {"o": {"actions": ["update"]}, "p": {"actions": ["no-op"]}}
        });
        assert_eq!(
            changes(&plan),
            "  + a.new\n  ~ a.edit (y)\n  -/+ a.swap\n  - a.gone\n  output o: update\n"
        );
        assert_eq!(changes(&json!({})), "  no changes\n");
    }
}
