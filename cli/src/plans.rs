//! `ferry workflows get W --diff`: a workflow with its plans, as Terraform's `show -json`
//! describes them (the API keeps the plugin's JSON as it was given; this reads it for people).

use anyhow::{Context, Result};
use ferry_model::{StepKind, ops};
use serde_json::{Value, json};

use crate::render;
use ferry_client::Client as Api;

/// Prints the workflow, then each plan step's changes; with `json_out`, one document
/// `{"workflow": …, "plans": {"<step>": <show -json>}}`. Exit code as `workflows get`.
pub async fn workflow_with_plans(api: &Api, id: &str, json_out: bool) -> Result<i32> {
    let w = api.run::<ops::GetWorkflow>(&[id]).await?;
    let mut plans = serde_json::Map::new();
    for s in w.steps.iter().filter(|s| s.kind == StepKind::Plan) {
        let Some(job) = &s.job_id else { continue };
        if let Some(bytes) = api.octets::<ops::JobPlan>(&[job]).await? {
            let p: Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("the plan of job {job} is not JSON"))?;
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
                Some(p) => print!("{}", ferry_model::plan_changes(p)),
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
