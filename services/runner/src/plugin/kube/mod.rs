//! The Kubernetes plugins: `helm_chart` ([`helm`]), `kubernetes_manifest` ([`manifest`]) and
//! `job` ([`job`]), over the real `helm` and `kubectl` binaries.
//!
//! Both plan without a cluster: the plan is the rendered objects (`helm template`, or the manifest
//! or `kubectl kustomize` build), compared with the objects this runner host last applied for the
//! component (kept in its state directory), so a reviewer sees exactly which objects change and how.
//! Applying and tearing down need the cluster: the sandbox's (a kubeconfig from its outputs), else
//! the runner's own (`--kubeconfig`, or in-cluster when the runner runs in a pod).

pub mod helm;
pub mod job;
pub mod manifest;
pub mod objects;
pub mod secrets;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use super::{PluginError, PluginJob, PluginPlan, PluginResult};
use ferry_protocol::messages::ClusterAccess;

/// The objects last applied for this component, as a YAML stream, in its state directory.
const APPLIED: &str = "applied-manifest.yaml";

/// A Kubernetes plugin whose phases are its module's `plan`, `apply` and `teardown` functions.
macro_rules! phases_are_functions {
    ($plugin:ident) => {
        impl crate::plugin::Plugin for $plugin {
            fn plan(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
                plan(job)
            }

            fn apply(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
                apply(job)
            }

            fn teardown(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
                teardown(job)
            }
        }
    };
}
pub(crate) use phases_are_functions;

pub(crate) fn applied_path(job: &PluginJob) -> PathBuf {
    job.state_dir.join(APPLIED)
}

/// The end of every Kubernetes teardown: runs the delete (`cmd`, described by `doing`) against
/// the cluster, then forgets what was applied, so the next apply starts from nothing.
pub(crate) fn torn_down(
    job: &PluginJob,
    cmd: &mut Command,
    doing: &str,
    cluster: &Cluster,
) -> Result<crate::plugin::PluginResult, PluginError> {
    run_against(cmd, doing, cluster)?;
    let _ = std::fs::remove_file(applied_path(job));
    Ok(crate::plugin::PluginResult::default())
}

/// An approved plan's artifact must be the one this job deploys: a plan approved for another
/// build is not applied.
pub(crate) fn same_artifact(job: &PluginJob, planned: &str) -> Result<(), PluginError> {
    if planned == job.spec.artifact_digest {
        return Ok(());
    }
    Err(PluginError(format!(
        "the approved plan is for artifact {planned}, not {}",
        job.spec.artifact_digest
    )))
}

/// The manifest last applied (empty before the first apply).
pub(crate) fn last_applied(job: &PluginJob) -> Result<String, PluginError> {
    match std::fs::read_to_string(applied_path(job)) {
        Ok(s) => Ok(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(PluginError(format!(
            "reading the last applied manifest: {e}"
        ))),
    }
}

/// Records what was applied (written beside, then renamed: a crash never leaves half of it).
pub(crate) fn record_applied(job: &PluginJob, manifest: &str) -> Result<(), PluginError> {
    let tmp = job.state_dir.join(format!("{APPLIED}.partial"));
    std::fs::write(&tmp, manifest)?;
    std::fs::rename(&tmp, applied_path(job))?;
    Ok(())
}

/// The plan of rendered objects against the last applied ones: the plan document `plan` (what the
/// apply runs with) in its file, its changes file (Terraform's plan shape) and summary. `changes`
/// is whether the plan differs from the applied one by digest.
pub(crate) fn object_plan(
    job: &PluginJob,
    plan: &impl serde::Serialize,
    manifest: &str,
    namespace: &str,
    what: &str,
) -> Result<PluginResult, PluginError> {
    let plan_bytes = serde_json::to_vec_pretty(plan)?;
    let plan_bytes = plan_bytes.as_slice();
    let after = objects::parse(manifest, namespace).map_err(PluginError)?;
    let before = objects::parse(&last_applied(job)?, namespace).unwrap_or_default();
    let changes_json = objects::changes(&before, &after);
    let digest = super::sha256(plan_bytes);
    let changes = job.spec.applied_digest.as_deref() != Some(digest.as_str());
    let counted = super::terraform::summarize(&changes_json);
    let mut summary = if changes {
        format!("{counted} ({what})")
    } else {
        "no changes".to_string()
    };
    // Each rendered object is one policy input, as conftest gives Kubernetes YAML.
    let inputs: Vec<(String, serde_json::Value)> = after
        .iter()
        .map(|o| (o.address.clone(), o.body.clone()))
        .collect();
    super::policy::enforce(&job.spec.policies, &inputs, &mut summary)?;
    for rc in changes_json["resource_changes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let action = rc["change"]["actions"][0].as_str().unwrap_or_default();
        if action != "no-op" {
            println!("  {action} {}", rc["address"].as_str().unwrap_or_default());
        }
    }
    println!("plan: {summary} ({digest})");
    let file = job.work_dir.join("plan.json");
    std::fs::write(&file, plan_bytes)?;
    let diff = job.work_dir.join("changes.json");
    std::fs::write(&diff, serde_json::to_vec(&changes_json)?)?;
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

/// How the plugin reaches the cluster: a `--kubeconfig` for helm and kubectl (the sandbox's,
/// written into the work directory readable by the runner only, or the runner's own), and a
/// description of the cluster for messages.
pub(crate) struct Cluster {
    kubeconfig: Option<PathBuf>,
    pub described: String,
}

impl Cluster {
    pub(crate) fn of(job: &PluginJob) -> Result<Cluster, PluginError> {
        Cluster::given(job.spec.cluster.as_ref(), &job.tools, &job.work_dir)
    }

    /// The cluster `cluster` names (its kubeconfig written into `work_dir`), else the runner's.
    pub(crate) fn given(
        cluster: Option<&ClusterAccess>,
        tools: &crate::plugin::Tools,
        work_dir: &Path,
    ) -> Result<Cluster, PluginError> {
        if let Some(c) = cluster {
            let path = work_dir.join("kubeconfig");
            write_private(&path, c.kubeconfig.as_bytes())?;
            return Ok(Cluster {
                kubeconfig: Some(path),
                described: format!("the cluster at {} (from {})", c.server, c.source),
            });
        }
        if let Some(k) = &tools.kubeconfig {
            return Ok(Cluster {
                kubeconfig: Some(k.clone()),
                described: format!("the cluster of the runner's --kubeconfig {}", k.display()),
            });
        }
        if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
            return Ok(Cluster {
                kubeconfig: None,
                described: "the runner's own cluster (in-cluster service account)".into(),
            });
        }
        Err(PluginError(
            "no cluster to deploy into: the sandbox's outputs name none (a `kubeconfig` output, or \
             Nuon's `cluster` with `account.region`), the runner has no --kubeconfig and does not \
             run in a cluster"
                .into(),
        ))
    }

    /// The kubeconfig file to give a tool (none: in-cluster).
    pub(crate) fn kubeconfig(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    pub(crate) fn args(&self) -> Vec<String> {
        self.kubeconfig
            .iter()
            .map(|k| format!("--kubeconfig={}", k.display()))
            .collect()
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), PluginError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    Ok(())
}

/// A tool: the runner's flag, else its name (found on `PATH`).
pub(crate) fn tool(given: &Option<PathBuf>, name: &str) -> Command {
    Command::new(given.clone().unwrap_or_else(|| PathBuf::from(name)))
}

/// Runs a tool that talks to the cluster, its stdout and stderr in the job's log; on failure, the
/// error names what was being done, the cluster, and the tool's last word.
pub(crate) fn run_against(
    cmd: &mut Command,
    doing: &str,
    cluster: &Cluster,
) -> Result<String, PluginError> {
    let (status, out, err) = run_both(cmd, doing)?;
    if status.success() {
        return Ok(out);
    }
    // kubectl asks for a user name when a kubeconfig gives no credentials, and reads the end of
    // its (empty) input: say what is wrong instead of "error: EOF".
    let last = if err.contains("Please enter Username") {
        "the kubeconfig gives no credentials for the cluster (no token, client certificate or exec plugin)"
    } else {
        err.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("(no message)")
            .trim()
    };
    Err(PluginError(format!(
        "{doing} failed against {} ({status}): {last}",
        cluster.described
    )))
}

/// Runs a tool offline (rendering, packaging): its stdout returned (not logged), its stderr in the
/// log; on failure, the error names what was being done and the tool's last word.
pub(crate) fn run_offline(cmd: &mut Command, doing: &str) -> Result<String, PluginError> {
    let (status, out, err) = run_both_quiet(cmd, doing)?;
    if status.success() {
        return Ok(out);
    }
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)")
        .trim();
    Err(PluginError(format!("{doing} failed ({status}): {last}")))
}

fn spawn(cmd: &mut Command, doing: &str) -> Result<std::process::Child, PluginError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            let program = cmd.get_program().to_string_lossy().into_owned();
            PluginError(format!("{doing}: cannot run `{program}`: {e}"))
        })
}

/// Both streams captured and, line by line, copied to the job's log.
fn run_both(cmd: &mut Command, doing: &str) -> Result<(ExitStatus, String, String), PluginError> {
    let mut child = spawn(cmd, doing)?;
    let err = child
        .stderr
        .take()
        .map(|e| std::thread::spawn(move || copy_lines(e, &mut std::io::stderr())));
    let out = child
        .stdout
        .take()
        .map(|o| copy_lines(o, &mut std::io::stdout()))
        .unwrap_or_default();
    let err = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok((child.wait()?, out, err))
}

/// stdout captured only; stderr captured and copied to the job's log.
fn run_both_quiet(
    cmd: &mut Command,
    doing: &str,
) -> Result<(ExitStatus, String, String), PluginError> {
    let mut child = spawn(cmd, doing)?;
    let err = child
        .stderr
        .take()
        .map(|e| std::thread::spawn(move || copy_lines(e, &mut std::io::stderr())));
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        use std::io::Read;
        let mut bytes = Vec::new();
        o.read_to_end(&mut bytes)?;
        out = String::from_utf8_lossy(&bytes).into_owned();
    }
    let err = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok((child.wait()?, out, err))
}

fn copy_lines(from: impl std::io::Read, to: &mut impl std::io::Write) -> String {
    let mut reader = std::io::BufReader::new(from);
    let mut raw = Vec::new();
    let mut kept = String::new();
    while let Ok(true) = super::read_line_capped(&mut reader, &mut raw, 64 * 1024) {
        let line = String::from_utf8_lossy(&raw);
        let _ = to.write_all(line.as_bytes());
        let _ = to.flush();
        kept.push_str(&line);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        Cluster {
            kubeconfig: None,
            described: "the cluster at https://k".into(),
        }
    }

    #[test]
    fn a_failure_names_the_cluster_what_was_done_and_the_tools_last_word() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo working; echo 'first' >&2; echo 'Error: unreachable' >&2; exit 1",
        ]);
        let e = run_against(&mut cmd, "helm upgrade of `web`", &cluster()).unwrap_err();
        assert_eq!(
            e.0,
            "helm upgrade of `web` failed against the cluster at https://k (exit status: 1): Error: unreachable"
        );
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "printf 'Please enter Username: error: EOF' >&2; exit 1",
        ]);
        let e = run_against(&mut cmd, "kubectl apply", &cluster()).unwrap_err();
        assert!(e.0.ends_with("the kubeconfig gives no credentials for the cluster (no token, client certificate or exec plugin)"), "{}", e.0);
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out"]);
        assert_eq!(run_against(&mut cmd, "x", &cluster()).unwrap(), "out\n");
    }
}
