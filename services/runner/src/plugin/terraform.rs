//! The `terraform_module` plugin: `terraform init`, `plan -out`, `apply PLAN`, `output -json`.
//!
//! State is local to the install, in the component's state directory (a backend override file points
//! the `local` backend there), so the control plane never holds it. The plan is Terraform's own saved
//! plan file: approving it approves exactly what `apply` will do.

use std::process::Command;

use super::{
    Plugin, PluginError, PluginJob, PluginPlan, PluginResult, approved_plan, run, run_tee_shown,
};

fn terraform(job: &PluginJob) -> Command {
    let bin = std::env::var("FERRY_TERRAFORM").unwrap_or_else(|_| "terraform".into());
    let mut cmd = Command::new(bin);
    // A drift check's plan and a deploy's may meet on one state: wait for its lock, as
    // Terraform does when told to, rather than fail at once. The component's env may say
    // otherwise.
    for sub in ["plan", "apply", "destroy"] {
        cmd.env(format!("TF_CLI_ARGS_{sub}"), "-lock-timeout=120s");
    }
    cmd.current_dir(&job.src_dir)
        .envs(job.spec.env.iter().cloned())
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
        .spec
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

/// "Plan: 1 to add, 0 to change, 0 to destroy." from `show -json`'s resource changes (a replace
/// counts as an add and a destroy, as Terraform counts it), and the outputs that change.
pub fn summarize(plan: &serde_json::Value) -> String {
    let (mut add, mut change, mut destroy) = (0, 0, 0);
    let empty = vec![];
    for rc in plan["resource_changes"].as_array().unwrap_or(&empty) {
        let actions: Vec<&str> = rc["change"]["actions"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter_map(|a| a.as_str())
            .collect();
        match actions.as_slice() {
            ["create"] => add += 1,
            ["update"] => change += 1,
            ["delete"] => destroy += 1,
            ["delete", "create"] | ["create", "delete"] => {
                add += 1;
                destroy += 1;
            }
            _ => {}
        }
    }
    let outputs = plan["output_changes"]
        .as_object()
        .map(|o| {
            o.values()
                .filter(|c| {
                    c["actions"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|x| x != "no-op"))
                })
                .count()
        })
        .unwrap_or(0);
    let mut s = format!("Plan: {add} to add, {change} to change, {destroy} to destroy.");
    if outputs > 0 {
        s.push_str(&format!(" {outputs} output(s) change."));
    }
    s
}

/// What a line of Terraform's `-json` stream says to a person: its `@message`, with a
/// diagnostic's detail. A line that is not JSON (a crash's output) is shown as it is.
fn human(line: &str) -> Option<String> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return Some(line.to_string());
    };
    let message = v["@message"].as_str()?;
    match v["diagnostic"]["detail"].as_str().filter(|d| !d.is_empty()) {
        Some(detail) => Some(format!("{message}\n{detail}")),
        None => Some(message.to_string()),
    }
}

/// What leaves the install of a plan's JSON: its resource and output changes, with every value
/// Terraform marks sensitive replaced (`show -json` prints them in clear, flagging them in
/// `before_sensitive` / `after_sensitive`). The rest (variables, state, configuration) stays.
pub fn changes_only(plan: &serde_json::Value) -> serde_json::Value {
    let masked = |change: &serde_json::Value| {
        let mut c = change.clone();
        for side in ["before", "after"] {
            let mask = &change[format!("{side}_sensitive")];
            c[side] = hide(&change[side], mask);
        }
        c
    };
    let resources: Vec<serde_json::Value> = plan["resource_changes"]
        .as_array()
        .map(|rcs| {
            rcs.iter()
                .map(|rc| {
                    let mut rc = rc.clone();
                    rc["change"] = masked(&rc["change"]);
                    rc
                })
                .collect()
        })
        .unwrap_or_default();
    let outputs: serde_json::Map<String, serde_json::Value> = plan["output_changes"]
        .as_object()
        .map(|o| o.iter().map(|(k, c)| (k.clone(), masked(c))).collect())
        .unwrap_or_default();
    serde_json::json!({
        "format_version": plan["format_version"],
        "terraform_version": plan["terraform_version"],
        "resource_changes": resources,
        "output_changes": outputs,
    })
}

/// `value` with what `mask` marks `true` replaced by `(sensitive)`, recursively.
fn hide(value: &serde_json::Value, mask: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (value, mask) {
        (_, Value::Bool(true)) => Value::String("(sensitive)".into()),
        (Value::Object(v), Value::Object(m)) => Value::Object(
            v.iter()
                .map(|(k, x)| (k.clone(), hide(x, m.get(k).unwrap_or(&Value::Null))))
                .collect(),
        ),
        (Value::Array(v), Value::Array(m)) => Value::Array(
            v.iter()
                .enumerate()
                .map(|(i, x)| hide(x, m.get(i).unwrap_or(&Value::Null)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// The first error diagnostic of Terraform's `-json` stream, as one line (the step's message for
/// a failed plan): its summary, and where it is when Terraform says.
fn first_error(out: &str) -> Option<String> {
    out.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["@level"] == "error")
        .map(|v| {
            let d = &v["diagnostic"];
            let summary = d["summary"]
                .as_str()
                .or(v["@message"].as_str())
                .unwrap_or("error");
            match (
                d["range"]["filename"].as_str(),
                d["range"]["start"]["line"].as_u64(),
            ) {
                (Some(f), Some(l)) => format!("terraform plan failed: {summary} ({f}:{l})"),
                _ => format!("terraform plan failed: {summary}"),
            }
        })
}

/// A Terraform module: `init` first, then `plan -out` (with the app's policies evaluated on the
/// plan), `apply` of exactly that plan, or `destroy`.
pub(crate) struct Terraform;

impl Plugin for Terraform {
    fn prepare(&self, job: &PluginJob) -> Result<(), PluginError> {
        init(job)
    }

    fn plan(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        plan(job)
    }

    fn apply(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        apply(job)
    }

    fn teardown(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        write_vars(job)?;
        check(
            run(terraform(job).args(["destroy", "-input=false", "-no-color", "-auto-approve"]))?,
            "destroy",
        )?;
        Ok(PluginResult::default())
    }
}

/// `terraform plan -out`, then `show -json`: the plan file stays in the install, its changes
/// (sensitive values masked) and summary go to review.
fn plan(job: &PluginJob) -> Result<PluginResult, PluginError> {
    write_vars(job)?;
    let file = job.work_dir.join("plan.tfplan");
    // `-json`: Terraform's machine-readable stream; its human messages go to the log, and a
    // failure's first diagnostic becomes the step's message.
    let (status, out) = run_tee_shown(
        terraform(job)
            .args([
                "plan",
                "-input=false",
                "-no-color",
                "-json",
                "-detailed-exitcode",
                "-out",
            ])
            .arg(&file),
        human,
    )?;
    let changes = match status.code() {
        Some(0) => false,
        Some(2) => true,
        _ => {
            return Err(PluginError(
                first_error(&out).unwrap_or_else(|| format!("terraform plan failed ({status})")),
            ));
        }
    };
    // The plan as Terraform describes it to programs: the summary is counted from it, and
    // `ferry workflows get --diff` shows it.
    let shown = terraform(job)
        .args(["show", "-json", "-no-color"])
        .arg(&file)
        .output()?;
    if !shown.status.success() {
        return Err(PluginError(format!(
            "terraform show -json failed: {}",
            String::from_utf8_lossy(&shown.stderr).trim()
        )));
    }
    let json: serde_json::Value = serde_json::from_slice(&shown.stdout)?;
    let diff = job.work_dir.join("plan.json");
    std::fs::write(&diff, serde_json::to_vec(&changes_only(&json))?)?;
    let mut summary = summarize(&json);
    super::policy::enforce(
        &job.spec.policies,
        &[(String::new(), serde_json::json!({ "plan": json }))],
        &mut summary,
    )?;
    Ok(PluginResult {
        plan: Some(PluginPlan {
            file,
            changes,
            summary,
            diff: Some(diff),
        }),
        ..Default::default()
    })
}

/// `terraform apply` of the approved plan (this install's own copy), then its outputs.
fn apply(job: &PluginJob) -> Result<PluginResult, PluginError> {
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
    let raw: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&out.stdout)?;
    // `output -json` gives {name: {value, type, sensitive}}; components expose the values, and
    // the API hides the sensitive ones.
    let sensitive_outputs = raw
        .iter()
        .filter(|(_, v)| v["sensitive"] == true)
        .map(|(k, _)| k.clone())
        .collect();
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
        sensitive_outputs,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sensitive_values_never_leave_the_install_in_a_plans_json() {
        let plan = json!({
            "format_version": "1.2",
            "variables": {"password": {"value": "hunter2"}},
            "resource_changes": [{
                "address": "x.y",
                "change": {
                    "actions": ["update"],
                    "before": {"a": "old", "tags": ["p", "hunter2"]},
                    "after": {"a": "new", "tags": ["p", "hunter2"]},
                    "before_sensitive": {"tags": [false, true]},
                    "after_sensitive": {"tags": [false, true]}
                }
            }],
            "output_changes": {"secret": {
                "actions": ["create"], "before": null, "after": "hunter2",
                "before_sensitive": false, "after_sensitive": true
            }}
        });
        let kept = changes_only(&plan);
        let text = kept.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(kept["resource_changes"][0]["change"]["after"]["a"], "new");
        assert_eq!(
            kept["resource_changes"][0]["change"]["after"]["tags"][1],
            "(sensitive)"
        );
        assert_eq!(kept["output_changes"]["secret"]["after"], "(sensitive)");
        assert_eq!(
            summarize(&plan),
            "Plan: 0 to add, 1 to change, 0 to destroy. 1 output(s) change."
        );
    }
}
