//! The `terraform_module` plugin: `terraform init`, `plan -out`, `apply PLAN`, `output -json`.
//!
//! State is local to the install, in the component's state directory (a backend override file points
//! the `local` backend there), so the control plane never holds it. The plan is Terraform's own saved
//! plan file: approving it approves exactly what `apply` will do.

use std::process::Command;

use super::{Phase, PluginError, PluginJob, PluginPlan, PluginResult, approved_plan, run, run_tee};

fn terraform(job: &PluginJob) -> Command {
    let bin = std::env::var("FERRY_TERRAFORM").unwrap_or_else(|_| "terraform".into());
    let mut cmd = Command::new(bin);
    cmd.current_dir(&job.src_dir)
        .envs(job.env.iter().cloned())
        .env("TF_IN_AUTOMATION", "1")
        .env("TF_INPUT", "0")
        // No calls home: installs may have no internet access.
        .env("CHECKPOINT_DISABLE", "1");
    cmd
}

fn check(status: std::process::ExitStatus, what: &str) -> Result<(), PluginError> {
    if status.success() {
        Ok(())
    } else {
        Err(PluginError(format!("terraform {what} failed ({status})")))
    }
}

fn init(job: &PluginJob) -> Result<(), PluginError> {
    let state = job.state_dir.join("terraform.tfstate");
    let path = serde_json::to_string(&state.to_string_lossy())?;
    std::fs::write(
        job.src_dir.join("ferry_backend_override.tf"),
        format!("terraform {{\n  backend \"local\" {{\n    path = {path}\n  }}\n}}\n"),
    )?;
    let status = run(terraform(job).args(["init", "-input=false", "-no-color"]))
        .map_err(|e| PluginError(format!("cannot run terraform: {}", e.0)))?;
    check(status, "init")
}

fn write_vars(job: &PluginJob) -> Result<(), PluginError> {
    let vars: serde_json::Map<String, serde_json::Value> = job
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    std::fs::write(
        job.src_dir.join("ferry.auto.tfvars.json"),
        serde_json::to_vec_pretty(&vars)?,
    )?;
    Ok(())
}

pub fn execute(job: &PluginJob) -> Result<PluginResult, PluginError> {
    init(job)?;
    match job.phase {
        Phase::Plan => {
            write_vars(job)?;
            let file = job.work_dir.join("plan.tfplan");
            let (status, out) = run_tee(
                terraform(job)
                    .args([
                        "plan",
                        "-input=false",
                        "-no-color",
                        "-detailed-exitcode",
                        "-out",
                    ])
                    .arg(&file),
            )?;
            let changes = match status.code() {
                Some(0) => false,
                Some(2) => true,
                _ => return Err(PluginError(format!("terraform plan failed ({status})"))),
            };
            let summary = out
                .lines()
                .find(|l| {
                    l.starts_with("Plan:")
                        || l.starts_with("No changes.")
                        || l.starts_with("Changes to Outputs")
                })
                .unwrap_or(if changes { "changes" } else { "no changes" })
                .trim()
                .to_string();
            Ok(PluginResult {
                plan: Some(PluginPlan {
                    file,
                    changes,
                    summary,
                }),
                ..Default::default()
            })
        }
        Phase::Apply => {
            approved_plan(job)?;
            let plan = job
                .plan_file
                .clone()
                .ok_or_else(|| PluginError("no plan".into()))?;
            check(
                run(terraform(job)
                    .args(["apply", "-input=false", "-no-color", "-auto-approve"])
                    .arg(&plan))?,
                "apply",
            )?;
            let out = terraform(job)
                .args(["output", "-json", "-no-color"])
                .output()?;
            if !out.status.success() {
                return Err(PluginError(format!(
                    "terraform output failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            let raw: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(&out.stdout)?;
            // `output -json` gives {name: {value, type, sensitive}}; components expose the values.
            let outputs = raw
                .into_iter()
                .map(|(k, v)| {
                    (
                        k,
                        v.get("value").cloned().unwrap_or(serde_json::Value::Null),
                    )
                })
                .collect();
            Ok(PluginResult {
                outputs,
                ..Default::default()
            })
        }
        Phase::Teardown => {
            write_vars(job)?;
            check(
                run(terraform(job).args([
                    "destroy",
                    "-input=false",
                    "-no-color",
                    "-auto-approve",
                ]))?,
                "destroy",
            )?;
            Ok(PluginResult::default())
        }
    }
}
