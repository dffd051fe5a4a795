//! The action plugin: one step of an action, a `command` (run by `sh -c`) or a script (run by
//! its `#!` line, by `sh` without one), in the job's work directory.
//!
//! Environment, as Nuon's runner gives it (so Nuon's action scripts run unchanged): the step's
//! `env_vars` and the run's inputs; `NUON_ACTIONS_OUTPUT_FILEPATH` (also `FERRY_OUTPUTS`), a file
//! the step writes its outputs to; `NUON_ACTIONS_ROOT`, `NUON_TRIGGER_TYPE`, `NUON_INSTALL_ID`;
//! and `KUBECONFIG` when the install has a cluster (the sandbox's, or the runner's own).
//!
//! The outputs file is read as Nuon reads it: one JSON object, or lines that are each a JSON
//! object (merged, later keys winning) or `KEY=VALUE`.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::{Map, Value};

use super::{ActionStep, PluginError, PluginResult};

pub fn execute(job: &ActionStep) -> Result<PluginResult, PluginError> {
    let a = &job.step;
    let outputs = job.work_dir.join("outputs");
    std::fs::write(&outputs, b"")?;
    let mut cmd = match (&a.command, &a.script) {
        (Some(line), _) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(line);
            c
        }
        (None, Some(text)) => {
            let path = job.src_dir.join("step");
            std::fs::write(&path, text)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
            if text.starts_with("#!") {
                Command::new(&path)
            } else {
                let mut c = Command::new("sh");
                c.arg(&path);
                c
            }
        }
        (None, None) => {
            return Err(PluginError(format!(
                "step `{}` has nothing to run (no `command`, no `inline_contents`)",
                a.step
            )));
        }
    };
    cmd.current_dir(&job.src_dir)
        .envs(a.env.iter().map(|(k, v)| (k, v)))
        .env("NUON_ACTIONS_OUTPUT_FILEPATH", &outputs)
        .env("FERRY_OUTPUTS", &outputs)
        .env("NUON_ACTIONS_ROOT", &job.src_dir)
        .env("NUON_TRIGGER_TYPE", &a.trigger)
        .env("NUON_INSTALL_ID", &job.install)
        .env("FERRY_INSTALL", &job.install)
        .env("FERRY_ORG", &job.org)
        .env("FERRY_ACTION", &a.action)
        .env("FERRY_STEP", &a.step)
        .env("FERRY_TRIGGER", &a.trigger);
    if let Ok(cluster) = super::kube::Cluster::given(a.cluster.as_ref(), &job.tools, &job.work_dir)
    {
        cmd.env("NUON_KUBECONFIG_ENABLED", "true");
        if let Some(k) = cluster.kubeconfig() {
            cmd.env("KUBECONFIG", k);
        }
    }
    if let Some(path) = tools_path(job) {
        cmd.env("PATH", path);
    }
    let status = cmd
        .status()
        .map_err(|e| PluginError(format!("starting step `{}`: {e}", a.step)))?;
    if !status.success() {
        return Err(PluginError(format!("step `{}` failed ({status})", a.step)));
    }
    let text = std::fs::read_to_string(&outputs)?;
    let outputs = parse_outputs(&text)
        .map_err(|e| PluginError(format!("step `{}`: its outputs file: {e}", a.step)))?;
    println!("step `{}` succeeded ({} outputs)", a.step, outputs.len());
    Ok(PluginResult {
        outputs,
        ..Default::default()
    })
}

/// `PATH` with the directories of the runner's helm and kubectl first, so a step finds the
/// tools the runner was given.
fn tools_path(job: &ActionStep) -> Option<std::ffi::OsString> {
    let dirs: Vec<std::path::PathBuf> = [&job.tools.helm, &job.tools.kubectl]
        .into_iter()
        .flatten()
        .filter_map(|p| p.parent().map(|d| d.to_path_buf()))
        .collect();
    if dirs.is_empty() {
        return None;
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(dirs.into_iter().chain(std::env::split_paths(&rest))).ok()
}

/// A step's outputs: the whole file one JSON object, or each line a JSON object or `KEY=VALUE`.
pub(crate) fn parse_outputs(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) {
        return Ok(m);
    }
    let mut out = Map::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('{') {
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(m)) => out.extend(m),
                _ => return Err(format!("line {} is not a JSON object", n + 1)),
            }
        } else if let Some((k, v)) = line.split_once('=').filter(|(k, _)| !k.trim().is_empty()) {
            out.insert(k.trim().to_string(), Value::String(v.to_string()));
        } else {
            return Err(format!(
                "line {} is neither a JSON object nor KEY=VALUE: {line:?}",
                n + 1
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse_outputs;

    #[test]
    fn outputs_are_one_object_or_lines_of_objects_and_key_values() {
        let m = parse_outputs("{\"a\": {\"b\": 1}}\n").unwrap();
        assert_eq!(m["a"]["b"], 1);
        let m = parse_outputs("status=ok\n{\"n\": 2}\n\nurl=http://x/?a=b\n{\"n\": 3}").unwrap();
        assert_eq!(m["status"], "ok");
        assert_eq!(m["url"], "http://x/?a=b");
        assert_eq!(m["n"], 3);
        let e = parse_outputs("ok=1\nhello world\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(parse_outputs("").unwrap().is_empty());
    }
}
