//! The `job` plugin: a container run to completion in the install's cluster, as a Kubernetes Job
//! named after the component, in the install's namespace.
//!
//! Plan: the Job object (image, command, arguments, the component's `env_vars` as its environment)
//! compared with the one last run. Apply: the previous Job is deleted (a Job's pod template cannot
//! change), the new one applied server-side, its pod's log followed into the job's log, and its end
//! waited for within the component's timeout: a failed Job fails the step. Teardown deletes it.

use std::process::Command;
use std::time::{Duration, Instant};

use ferry_protocol::messages::{JobSettings, KindSettings};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Cluster, object_plan, record_applied, run_against, tool};
use crate::plugin::{PluginError, PluginJob, PluginResult, approved_plan};

const DEFAULT_TIMEOUT_SECS: u64 = 300;

#[derive(Debug, Serialize, Deserialize)]
struct JobPlan {
    component: String,
    artifact_digest: String,
    namespace: String,
    /// The Job object, as JSON.
    manifest: String,
}

fn settings(job: &PluginJob) -> Result<&JobSettings, PluginError> {
    match &job.spec.settings {
        KindSettings::Job(j) if !j.image_url.is_empty() => Ok(j),
        KindSettings::Job(_) => Err(PluginError("the job has no `image_url`".into())),
        _ => Err(PluginError("a job component without its settings".into())),
    }
}

/// The Job object: one container, never restarted, no retry (a failure is the step's to retry).
fn object(job: &PluginJob, j: &JobSettings, namespace: &str) -> serde_json::Value {
    let image = if j.tag.is_empty() {
        j.image_url.clone()
    } else {
        format!("{}:{}", j.image_url, j.tag)
    };
    let mut container = json!({ "name": job.spec.component, "image": image });
    if !j.cmd.is_empty() {
        container["command"] = json!(j.cmd);
    }
    if !j.args.is_empty() {
        container["args"] = json!(j.args);
    }
    if !job.spec.env.is_empty() {
        container["env"] = job
            .spec
            .env
            .iter()
            .map(|(k, v)| json!({ "name": k, "value": v }))
            .collect();
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.spec.component,
            "namespace": namespace,
            "labels": { "app.kubernetes.io/managed-by": "ferry" },
        },
        "spec": {
            "backoffLimit": 0,
            "template": { "spec": { "restartPolicy": "Never", "containers": [container] } },
        },
    })
}

fn kubectl(job: &PluginJob, cluster: &Cluster) -> Command {
    let mut cmd = tool(&job.tools.kubectl, "kubectl");
    cmd.current_dir(&job.work_dir).args(cluster.args());
    cmd
}

fn plan(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let j = settings(job)?;
    let ns = job.install.clone();
    let plan = JobPlan {
        component: job.spec.component.clone(),
        artifact_digest: job.spec.artifact_digest.clone(),
        namespace: ns.clone(),
        manifest: object(job, j, &ns).to_string(),
    };
    let what = format!("job `{}` in namespace `{ns}`", job.spec.component);
    object_plan(job, &plan, &plan.manifest, &ns, &what)
}

fn apply(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let plan: JobPlan = serde_json::from_slice(&approved_plan(job)?)?;
    let cluster = Cluster::of(job)?;
    super::secrets::sync(job, &cluster)?;
    let (name, ns) = (job.spec.component.as_str(), plan.namespace.as_str());
    let timeout = Duration::from_secs(job.spec.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS));
    // Not `job.json`: that is the runner's job file, which the job's user may not write.
    let file = job.work_dir.join("k8s-job.json");
    std::fs::write(&file, &plan.manifest)?;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let ns_file = job.work_dir.join("namespace.json");
    std::fs::write(&ns_file, namespace.to_string())?;
    let mut cmd = kubectl(job, &cluster);
    cmd.args(["apply", "--server-side", "--field-manager=ferry", "-f"])
        .arg(&ns_file);
    run_against(&mut cmd, &format!("creating namespace `{ns}`"), &cluster)?;
    let mut cmd = kubectl(job, &cluster);
    cmd.args([
        "delete",
        "job",
        name,
        "--namespace",
        ns,
        "--ignore-not-found",
        "--wait",
    ]);
    run_against(
        &mut cmd,
        &format!("deleting the previous job `{name}`"),
        &cluster,
    )?;
    let mut cmd = kubectl(job, &cluster);
    cmd.args(["apply", "--server-side", "--field-manager=ferry", "-f"])
        .arg(&file);
    run_against(
        &mut cmd,
        &format!("kubectl apply of job `{name}` into namespace `{ns}`"),
        &cluster,
    )?;
    record_applied(job, &plan.manifest)?;
    // Its log as it runs (a pod that never starts ends this when the timeout does).
    let mut logs = kubectl(job, &cluster);
    logs.args([
        "logs",
        "--follow",
        &format!("job/{name}"),
        "--namespace",
        ns,
    ])
    .arg(format!("--pod-running-timeout={}s", timeout.as_secs()));
    if let Err(e) = run_against(
        &mut logs,
        &format!("following job `{name}`'s log"),
        &cluster,
    ) {
        println!("{}", e.0);
    }
    wait_for_job(job, &cluster, name, ns, timeout)
}

/// Waits for job `name` to succeed (or fail), at most `timeout`.
fn wait_for_job(
    job: &PluginJob,
    cluster: &Cluster,
    name: &str,
    ns: &str,
    timeout: Duration,
) -> Result<PluginResult, PluginError> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut get = kubectl(job, cluster);
        get.args(["get", "job", name, "--namespace", ns, "-o", "json"]);
        let status: serde_json::Value = serde_json::from_str(&run_against(
            &mut get,
            &format!("reading job `{name}`"),
            cluster,
        )?)
        .unwrap_or_default();
        if status["status"]["succeeded"].as_u64().unwrap_or(0) > 0 {
            println!("job `{name}` succeeded");
            return Ok(PluginResult::default());
        }
        if status["status"]["failed"].as_u64().unwrap_or(0) > 0 {
            return Err(PluginError(format!(
                "job `{name}` failed: its log is above"
            )));
        }
        if Instant::now() >= deadline {
            return Err(PluginError(format!(
                "job `{name}` did not finish within {} s",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn teardown(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let cluster = Cluster::of(job)?;
    let mut cmd = kubectl(job, &cluster);
    cmd.args([
        "delete",
        "job",
        &job.spec.component,
        "--namespace",
        &job.install,
    ])
    .args(["--ignore-not-found", "--wait"]);
    let doing = format!("deleting job `{}`", job.spec.component);
    super::torn_down(job, &mut cmd, &doing, &cluster)
}

/// A Kubernetes job: run to completion on apply, its log followed.
pub(crate) struct Job;

super::phases_are_functions!(Job);
