//! The `helm_chart` plugin, over the real `helm`.
//!
//! Plan: the chart (the package's directory, unpacked from the artifact; or, for `helm_repo` — a
//! chart repository, or an OCI registry as `oci://host/path` — pulled install-side and kept whole
//! in the plan) rendered with `helm template` and the install's values:
//! each values file in the order declared, then `[values]` as `--set` (Helm's precedence, as Nuon
//! applies them). The plan document holds everything the apply runs with, so its digest binds the
//! approval to the chart, the values and the rendered objects.
//!
//! Apply: `helm upgrade --install` of exactly the planned chart and values, `--wait` within the
//! component's timeout, so the customer's `helm list` and `helm history` show Ferry's releases.
//! Teardown: `helm uninstall`.

use std::process::Command;

use base64::Engine;
use ferry_protocol::messages::{HelmSettings, KindSettings};
use serde::{Deserialize, Serialize};

use super::{Cluster, object_plan, record_applied, run_against, run_offline, tool};
use crate::plugin::{PluginError, PluginJob, PluginResult, approved_plan};

/// Helm's own default when a component gives none (Nuon's default is 5 minutes too).
const DEFAULT_TIMEOUT_SECS: u64 = 300;

#[derive(Debug, Serialize, Deserialize)]
struct HelmPlan {
    component: String,
    artifact_digest: String,
    release: String,
    namespace: String,
    storage_driver: String,
    take_ownership: bool,
    values_files: Vec<String>,
    set: Vec<(String, String)>,
    /// A chart pulled from a Helm repository, as the packaged bytes (base64): the apply installs
    /// these, not whatever the repository serves later.
    chart_package: Option<String>,
    /// What `helm template` rendered.
    manifest: String,
}

fn settings(job: &PluginJob) -> Result<&HelmSettings, PluginError> {
    match &job.spec.settings {
        KindSettings::Helm(h) if !h.release.is_empty() => Ok(h),
        KindSettings::Helm(_) => Err(PluginError(
            "the chart has no `chart_name` (release)".into(),
        )),
        _ => Err(PluginError(
            "a helm_chart job without its chart's settings".into(),
        )),
    }
}

/// Where Helm keeps a release's records: `storage_driver`, else `configmap` (Nuon's default;
/// Helm's own would be `secret`).
fn driver(storage_driver: &str) -> &str {
    if storage_driver.is_empty() {
        "configmap"
    } else {
        storage_driver
    }
}

fn namespace(job: &PluginJob, h: &HelmSettings) -> String {
    if h.namespace.is_empty() {
        job.install.clone()
    } else {
        h.namespace.clone()
    }
}

fn helm(job: &PluginJob) -> Command {
    let mut cmd = tool(&job.tools.helm, "helm");
    cmd.current_dir(&job.work_dir)
        .envs(job.spec.env.iter().cloned())
        // Helm's caches and repository list stay in the job's scratch directory.
        .env("HELM_CACHE_HOME", job.work_dir.join("helm/cache"))
        .env("HELM_CONFIG_HOME", job.work_dir.join("helm/config"))
        .env("HELM_DATA_HOME", job.work_dir.join("helm/data"));
    cmd
}

/// The values arguments: `-f` per values file (written into the work directory), then `--set`.
fn values_args(
    job: &PluginJob,
    files: &[String],
    set: &[(String, String)],
) -> Result<Vec<String>, PluginError> {
    let mut args = Vec::new();
    for (i, contents) in files.iter().enumerate() {
        let path = job.work_dir.join(format!("values-{i}.yaml"));
        std::fs::write(&path, contents)?;
        args.push("-f".to_string());
        args.push(path.display().to_string());
    }
    for (k, v) in set {
        args.push("--set".to_string());
        args.push(format!("{k}={v}"));
    }
    Ok(args)
}

/// The chart to render or install: the pulled package (written into the work directory), else
/// the component's unpacked directory.
fn chart_path(job: &PluginJob, package: Option<&str>) -> Result<String, PluginError> {
    match package {
        Some(b64) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| PluginError(format!("the plan's chart package: {e}")))?;
            let path = job.work_dir.join("chart.tgz");
            std::fs::write(&path, bytes)?;
            Ok(path.display().to_string())
        }
        // A chart built as Helm's OCI chart unpacks under `<name>/`; older artifacts hold the
        // chart's files at the top.
        None => std::iter::once(job.src_dir.clone())
            .chain(
                std::fs::read_dir(&job.src_dir)?
                    .filter_map(Result::ok)
                    .map(|e| e.path()),
            )
            .find(|d| d.join("Chart.yaml").is_file())
            .map(|d| d.display().to_string())
            .ok_or_else(|| PluginError("the component's artifact holds no Chart.yaml".into())),
    }
}

/// Pulls a `helm_repo` chart into the work directory; its packaged bytes, base64.
fn pull(job: &PluginJob, h: &HelmSettings) -> Result<Option<String>, PluginError> {
    let Some(repo) = &h.repo else { return Ok(None) };
    let dest = job.work_dir.join("pulled");
    std::fs::create_dir_all(&dest)?;
    let mut cmd = helm(job);
    match repo.url.strip_prefix("oci://") {
        // An OCI registry: the chart is a repository under the URL's path.
        Some(rest) => {
            let reference = format!("oci://{}/{}", rest.trim_end_matches('/'), repo.chart);
            cmd.args(["pull", &reference]);
            let host = rest.split('/').next().unwrap_or_default();
            let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
            // Plain HTTP on the loopback address only, as for images.
            if matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
                cmd.arg("--plain-http");
            }
        }
        None => {
            cmd.args(["pull", &repo.chart, "--repo", &repo.url]);
        }
    }
    cmd.arg("--destination").arg(&dest);
    if let Some(v) = &repo.version {
        cmd.args(["--version", v]);
    }
    let doing = format!("helm pull of chart `{}` from {}", repo.chart, repo.url);
    run_offline(&mut cmd, &doing)?;
    let file = std::fs::read_dir(&dest)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .ok_or_else(|| PluginError(format!("{doing}: no chart package came")))?;
    let bytes = std::fs::read(file)?;
    println!(
        "pulled chart `{}` ({})",
        repo.chart,
        crate::plugin::sha256(&bytes)
    );
    Ok(Some(
        base64::engine::general_purpose::STANDARD.encode(bytes),
    ))
}

fn plan(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let h = settings(job)?;
    let ns = namespace(job, h);
    let chart_package = pull(job, h)?;
    let chart = chart_path(job, chart_package.as_deref())?;
    let mut cmd = helm(job);
    cmd.args(["template", &h.release, &chart, "--namespace", &ns])
        .args(values_args(job, &h.values_files, &h.set)?);
    let manifest = run_offline(
        &mut cmd,
        &format!("helm template of release `{}`", h.release),
    )?;
    let plan = HelmPlan {
        component: job.spec.component.clone(),
        artifact_digest: job.spec.artifact_digest.clone(),
        release: h.release.clone(),
        namespace: ns.clone(),
        storage_driver: h.storage_driver.clone(),
        take_ownership: h.take_ownership,
        values_files: h.values_files.clone(),
        set: h.set.clone(),
        chart_package,
        manifest,
    };
    let what = format!("release `{}` in namespace `{ns}`", h.release);
    object_plan(job, &plan, &plan.manifest, &ns, &what)
}

fn apply(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let plan: HelmPlan = serde_json::from_slice(&approved_plan(job)?)?;
    super::same_artifact(job, &plan.artifact_digest)?;
    let cluster = Cluster::of(job)?;
    super::secrets::sync(job, &cluster)?;
    let chart = chart_path(job, plan.chart_package.as_deref())?;
    let timeout = job.spec.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    let mut cmd = helm(job);
    cmd.args(["upgrade", "--install", &plan.release, &chart])
        .args([
            "--namespace",
            &plan.namespace,
            "--create-namespace",
            "--wait",
        ])
        .arg(format!("--timeout={timeout}s"))
        .args(values_args(job, &plan.values_files, &plan.set)?)
        .args(cluster.args());
    if plan.take_ownership {
        cmd.arg("--take-ownership");
    }
    cmd.env("HELM_DRIVER", driver(&plan.storage_driver));
    let doing = format!(
        "helm upgrade --install of release `{}` into namespace `{}`",
        plan.release, plan.namespace
    );
    run_against(&mut cmd, &doing, &cluster)?;
    record_applied(job, &plan.manifest)?;
    let mut status = helm(job);
    status
        .args([
            "status",
            &plan.release,
            "--namespace",
            &plan.namespace,
            "-o",
            "json",
        ])
        .args(cluster.args());
    status.env("HELM_DRIVER", driver(&plan.storage_driver));
    let shown = run_against(&mut status, "helm status", &cluster)?;
    let s: serde_json::Value = serde_json::from_str(&shown).unwrap_or_default();
    let mut outputs = serde_json::Map::new();
    outputs.insert("release".into(), plan.release.clone().into());
    outputs.insert("namespace".into(), plan.namespace.clone().into());
    outputs.insert("revision".into(), s["version"].clone());
    outputs.insert("status".into(), s["info"]["status"].clone());
    Ok(PluginResult {
        outputs,
        ..Default::default()
    })
}

fn teardown(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let h = settings(job)?;
    let ns = namespace(job, h);
    let cluster = Cluster::of(job)?;
    let timeout = job.spec.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    let mut cmd = helm(job);
    cmd.args([
        "uninstall",
        &h.release,
        "--namespace",
        &ns,
        "--wait",
        "--ignore-not-found",
    ])
    .arg(format!("--timeout={timeout}s"))
    .args(cluster.args());
    cmd.env("HELM_DRIVER", driver(&h.storage_driver));
    let doing = format!(
        "helm uninstall of release `{}` from namespace `{ns}`",
        h.release
    );
    super::torn_down(job, &mut cmd, &doing, &cluster)
}

/// A Helm chart: `helm template` to plan, `helm upgrade --install` to apply, `helm uninstall` to tear down.
pub(crate) struct Helm;

super::phases_are_functions!(Helm);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::{Phase, Tools};
    use ferry_protocol::messages::ComponentKind;

    fn repo() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn job(dir: &std::path::Path, set: &[(&str, &str)], values: &str) -> PluginJob {
        let work = dir.join(format!("work-{}", set.len()));
        std::fs::create_dir_all(&work).unwrap();
        PluginJob {
            phase: Phase::Plan,
            org: "o".into(),
            install: "prod".into(),
            plan_file: None,
            plan_digest: None,
            src_dir: repo().join("examples/k8s/components/src/web"),
            state_dir: dir.join("state"),
            work_dir: work,
            tools: Tools {
                helm: Some(repo().join(".tools/bin/helm")),
                ..Default::default()
            },
            secrets: vec![],
            spec: ferry_protocol::messages::ComponentJob {
                component: "web".into(),
                kind: ComponentKind::Helm,
                artifact_digest: "sha256:00".into(),
                vars: vec![],
                env: vec![],
                applied_digest: None,
                settings: KindSettings::Helm(HelmSettings {
                    release: "web".into(),
                    values_files: vec![values.into()],
                    set: set
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                    ..Default::default()
                }),
                timeout_secs: None,
                cluster: None,
                policies: vec![],
                run_as: None,
                secret_syncs: vec![],
                redact: vec![],
            },
        }
    }

    /// A second config version's plan, against what the first one's apply recorded, shows exactly
    /// the objects and values that differ. (The record is what `apply` writes once helm has
    /// succeeded: no cluster can run here.)
    #[test]
    fn a_second_version_plans_exactly_the_changed_objects() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("state")).unwrap();
        let first = job(dir.path(), &[("replicaCount", "1")], "greeting: hi\n");
        let p1 = plan(&first).unwrap().plan.unwrap();
        assert!(
            p1.summary
                .starts_with("Plan: 3 to add, 0 to change, 0 to destroy."),
            "{}",
            p1.summary
        );
        let planned: HelmPlan = serde_json::from_slice(&std::fs::read(&p1.file).unwrap()).unwrap();
        record_applied(&first, &planned.manifest).unwrap();

        let second = job(
            dir.path(),
            &[("replicaCount", "3"), ("service.port", "80")],
            "greeting: bonjour\n",
        );
        let p2 = plan(&second).unwrap().plan.unwrap();
        assert!(
            p2.summary
                .starts_with("Plan: 0 to add, 2 to change, 0 to destroy."),
            "{}",
            p2.summary
        );
        let changes: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p2.diff.unwrap()).unwrap()).unwrap();
        let changed: Vec<(String, Vec<String>)> = changes["resource_changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["change"]["actions"][0] == "update")
            .map(|r| {
                let (b, a) = (&r["change"]["before"], &r["change"]["after"]);
                let keys = a
                    .as_object()
                    .unwrap()
                    .keys()
                    .filter(|k| b.get(k.as_str()) != a.get(k.as_str()))
                    .cloned()
                    .collect();
                (r["address"].as_str().unwrap().to_string(), keys)
            })
            .collect();
        assert_eq!(
            changed,
            [
                (
                    "ConfigMap/prod/web-page".to_string(),
                    vec!["data.index.html".to_string()]
                ),
                (
                    "Deployment/prod/web".to_string(),
                    vec!["spec.replicas".to_string()]
                ),
            ]
        );
    }
}
