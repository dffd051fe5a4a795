//! The `script` plugin: `plan.sh`, `apply.sh`, `teardown.sh` from the component's directory, run with
//! `sh` in the unpacked artifact.
//!
//! The plan is a JSON document of everything the apply will run with — artifact digest, rendered
//! environment, and what `plan.sh` printed — so approving a plan approves exactly those values, and a
//! plan equal to the last applied one (same digest) has no changes.
//!
//! Environment: the component's `env_vars`, plus `FERRY_COMPONENT`, `FERRY_INSTALL`, `FERRY_ORG`,
//! `FERRY_PHASE`, `FERRY_STATE_DIR` (the component's own, kept between jobs), `FERRY_INSTALL_DIR`
//! (the install's environment on the runner host, shared by its jobs: what a local sandbox
//! provisions), `FERRY_WORK_DIR`, and for apply `FERRY_OUTPUTS`:
//! a file the script writes its outputs to, as a JSON object, and `FERRY_SENSITIVE_OUTPUTS`: a
//! file it writes the names of its sensitive outputs to, one a line (a kubeconfig with a token:
//! stored and used, shown nowhere).

use std::collections::BTreeMap;
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::{
    Phase, Plugin, PluginError, PluginJob, PluginPlan, PluginResult, approved_plan, run, run_tee,
    sha256,
};

#[derive(Debug, Serialize, Deserialize)]
struct ScriptPlan {
    component: String,
    artifact_digest: String,
    env: BTreeMap<String, String>,
    plan_output: String,
}

fn command(job: &PluginJob, script: &str, env: &BTreeMap<String, String>) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg(job.src_dir.join(script))
        .current_dir(&job.src_dir)
        .envs(env)
        .env("FERRY_COMPONENT", &job.spec.component)
        .env("FERRY_INSTALL", &job.install)
        .env("FERRY_ORG", &job.org)
        .env("FERRY_STATE_DIR", &job.state_dir)
        .env("FERRY_WORK_DIR", &job.work_dir)
        .env(
            "FERRY_PHASE",
            match job.phase {
                Phase::Plan => "plan",
                Phase::Apply => "apply",
                Phase::Teardown => "teardown",
            },
        );
    cmd
}

/// A script component: `plan.sh`, `apply.sh` and `teardown.sh` from its directory, each optional
/// but the apply.
pub(crate) struct Script;

/// `vars` reach scripts as environment too; `env_vars` win where both name the same variable.
fn environment(job: &PluginJob) -> BTreeMap<String, String> {
    job.spec
        .vars
        .iter()
        .chain(job.spec.env.iter())
        .cloned()
        .collect()
}

impl Plugin for Script {
    fn plan(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        plan(job, environment(job))
    }

    fn apply(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        apply(job)
    }

    fn teardown(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        if job.src_dir.join("teardown.sh").is_file() {
            let status = run(&mut command(job, "teardown.sh", &environment(job)))?;
            if !status.success() {
                return Err(PluginError(format!("teardown.sh failed ({status})")));
            }
        }
        Ok(PluginResult::default())
    }
}

/// Runs `plan.sh` (if there is one) and records what the apply would run with: the plan is that
/// record, and its digest against the one last applied says whether anything changes.
fn plan(job: &PluginJob, env: BTreeMap<String, String>) -> Result<PluginResult, PluginError> {
    let mut plan_output = String::new();
    if job.src_dir.join("plan.sh").is_file() {
        let (status, out) = run_tee(&mut command(job, "plan.sh", &env))?;
        if !status.success() {
            return Err(PluginError(format!("plan.sh failed ({status})")));
        }
        plan_output = out;
    }
    let plan = ScriptPlan {
        component: job.spec.component.clone(),
        artifact_digest: job.spec.artifact_digest.clone(),
        env,
        plan_output,
    };
    let bytes = serde_json::to_vec_pretty(&plan)?;
    let digest = sha256(&bytes);
    let changes = job.spec.applied_digest.as_deref() != Some(digest.as_str());
    let file = job.work_dir.join("plan.json");
    std::fs::write(&file, &bytes)?;
    let summary = if changes {
        "apply.sh will run".to_string()
    } else {
        "no changes".to_string()
    };
    println!("plan: {summary} ({digest})");
    Ok(PluginResult {
        plan: Some(PluginPlan {
            diff: None,
            file,
            changes,
            summary,
        }),
        ..Default::default()
    })
}

/// Runs `apply.sh` with the approved plan's environment; its outputs are what it wrote to
/// `$FERRY_OUTPUTS` (a JSON object).
fn apply(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let plan: ScriptPlan = serde_json::from_slice(&approved_plan(job)?)?;
    if plan.artifact_digest != job.spec.artifact_digest {
        return Err(PluginError(format!(
            "the approved plan is for artifact {}, not {}",
            plan.artifact_digest, job.spec.artifact_digest
        )));
    }
    let outputs_file = job.work_dir.join("outputs.json");
    let sensitive_file = job.work_dir.join("sensitive-outputs");
    let status = run(command(job, "apply.sh", &plan.env)
        .env("FERRY_OUTPUTS", &outputs_file)
        .env("FERRY_SENSITIVE_OUTPUTS", &sensitive_file))?;
    if !status.success() {
        return Err(PluginError(format!("apply.sh failed ({status})")));
    }
    let outputs = match std::fs::read(&outputs_file) {
        Ok(bytes) => match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(_) => {
                return Err(PluginError(
                    "apply.sh wrote outputs that are not a JSON object".into(),
                ));
            }
            Err(e) => {
                return Err(PluginError(format!(
                    "apply.sh wrote invalid JSON outputs: {e}"
                )));
            }
        },
        Err(_) => Default::default(),
    };
    let sensitive_outputs = std::fs::read_to_string(&sensitive_file)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    Ok(PluginResult {
        outputs,
        sensitive_outputs,
        ..Default::default()
    })
}
