//! The `kubernetes_manifest` plugin, over the real `kubectl` (and the kustomize built into it).
//!
//! Plan: the manifest (inline or from a package file, rendered by the control plane with the
//! install's values) or `kubectl kustomize` of the component's kustomization (with its `patches`
//! laid over it, `enable_helm` and `load_restrictor` as given), read into objects and compared with
//! the set last applied.
//!
//! Apply: server-side apply with field manager `ferry` of exactly the planned objects, then the
//! objects of the previous set that are gone are deleted (the last applied set is the inventory),
//! then Deployments, StatefulSets and DaemonSets are waited for within the component's timeout.
//! Teardown deletes the set.

use std::path::Path;
use std::process::Command;

use ferry_protocol::messages::{KindSettings, Kustomize, ManifestSettings};
use serde::{Deserialize, Serialize};

use super::{
    Cluster, last_applied, object_plan, objects, record_applied, run_against, run_offline, tool,
};
use crate::plugin::{PluginError, PluginJob, PluginResult, approved_plan};

const DEFAULT_TIMEOUT_SECS: u64 = 300;

#[derive(Debug, Serialize, Deserialize)]
struct ManifestPlan {
    component: String,
    artifact_digest: String,
    namespace: String,
    manifest: String,
}

fn settings(job: &PluginJob) -> Result<&ManifestSettings, PluginError> {
    match &job.spec.settings {
        KindSettings::Manifest(m) => Ok(m),
        _ => Err(PluginError(
            "a kubernetes_manifest job without its manifest's settings".into(),
        )),
    }
}

fn kubectl(job: &PluginJob) -> Command {
    let mut cmd = tool(&job.tools.kubectl, "kubectl");
    cmd.current_dir(&job.work_dir)
        .envs(job.spec.env.iter().cloned());
    cmd
}

/// `kubectl kustomize` of the kustomization; with patches, of a kustomization in the work
/// directory that takes it as its resource and lays the patches over it.
fn kustomize(job: &PluginJob, k: &Kustomize) -> Result<String, PluginError> {
    let base = job.src_dir.join(&k.path);
    let target = if k.patches.is_empty() {
        base
    } else {
        let dir = job.work_dir.join("kustomize");
        std::fs::create_dir_all(&dir)?;
        // kustomize takes no absolute paths: each is written relative to the wrapper.
        let patches: Vec<serde_json::Value> = k
            .patches
            .iter()
            .map(|p| serde_json::json!({ "path": relative(&dir, &job.src_dir.join(p)) }))
            .collect();
        let wrapper = serde_json::json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [relative(&dir, &base)],
            "patches": patches,
        });
        // JSON is YAML: kustomize reads it as its kustomization.yaml.
        std::fs::write(
            dir.join("kustomization.yaml"),
            serde_json::to_vec_pretty(&wrapper)?,
        )?;
        dir
    };
    let mut cmd = kubectl(job);
    cmd.arg("kustomize").arg(&target);
    if k.enable_helm {
        cmd.arg("--enable-helm");
    }
    // The wrapper names files outside its own directory, which only `none` allows.
    match (k.load_restrictor.as_str(), k.patches.is_empty()) {
        ("none", _) | (_, false) => {
            cmd.arg("--load-restrictor=LoadRestrictionsNone");
        }
        ("rootOnly", true) => {
            cmd.arg("--load-restrictor=LoadRestrictionsRootOnly");
        }
        _ => {}
    }
    run_offline(&mut cmd, &format!("kustomize build of `{}`", k.path))
}

/// `to` as a path relative to the directory `from` (both absolute).
fn relative(from: &Path, to: &Path) -> String {
    let (f, t): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); f.len() - common];
    parts.extend(
        t[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

fn plan(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let m = settings(job)?;
    let ns = if m.namespace.is_empty() {
        job.install.clone()
    } else {
        m.namespace.clone()
    };
    let manifest = match (&m.manifest, &m.kustomize) {
        (Some(text), _) => text.clone(),
        (None, Some(k)) => kustomize(job, k)?,
        (None, None) => {
            return Err(PluginError(
                "neither `manifest` nor `kustomize` is set".into(),
            ));
        }
    };
    let plan = ManifestPlan {
        component: job.spec.component.clone(),
        artifact_digest: job.spec.artifact_digest.clone(),
        namespace: ns.clone(),
        manifest,
    };
    object_plan(
        job,
        &plan,
        &plan.manifest,
        &ns,
        &format!("namespace `{ns}`"),
    )
}

/// The objects as one JSON `List`, for kubectl's `-f` (every object already has its namespace).
fn list_file(
    job: &PluginJob,
    name: &str,
    objs: &[objects::Object],
) -> Result<std::path::PathBuf, PluginError> {
    let list = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": objs.iter().map(|o| o.body.clone()).collect::<Vec<_>>(),
    });
    let path = job.work_dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&list)?)?;
    Ok(path)
}

fn apply(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let plan: ManifestPlan = serde_json::from_slice(&approved_plan(job)?)?;
    super::same_artifact(job, &plan.artifact_digest)?;
    let cluster = Cluster::of(job)?;
    super::secrets::sync(job, &cluster)?;
    let ns = &plan.namespace;
    let new = objects::parse(&plan.manifest, ns).map_err(PluginError)?;
    let old = objects::parse(&last_applied(job)?, ns).unwrap_or_default();
    let timeout = job.spec.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);

    let namespace =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let with_ns = std::iter::once(objects::Object {
        address: format!("Namespace/{ns}"),
        kind: "Namespace".into(),
        body: namespace,
    })
    .chain(
        new.iter()
            .filter(|o| o.address != format!("Namespace/{ns}"))
            .cloned(),
    )
    .collect::<Vec<_>>();
    let file = list_file(job, "apply.json", &with_ns)?;
    let mut cmd = kubectl(job);
    cmd.args([
        "apply",
        "--server-side",
        "--field-manager=ferry",
        "--force-conflicts",
        "-f",
    ])
    .arg(&file)
    .args(cluster.args());
    let doing = format!(
        "kubectl apply of {} object(s) into namespace `{ns}`",
        new.len()
    );
    run_against(&mut cmd, &doing, &cluster)?;

    let gone: Vec<objects::Object> = old
        .into_iter()
        .filter(|o| !new.iter().any(|n| n.address == o.address))
        .collect();
    if !gone.is_empty() {
        let file = list_file(job, "prune.json", &gone)?;
        let mut cmd = kubectl(job);
        cmd.args(["delete", "--ignore-not-found", "--wait", "-f"])
            .arg(&file)
            .args(cluster.args());
        let doing = format!(
            "kubectl delete of {} object(s) no longer in the manifest",
            gone.len()
        );
        run_against(&mut cmd, &doing, &cluster)?;
    }
    record_applied(job, &plan.manifest)?;
    wait_for_rollouts(job, &new, ns, timeout, &cluster)?;
    Ok(PluginResult::default())
}

/// Waits until each workload applied (Deployment, StatefulSet, DaemonSet) has rolled out, at most
/// `timeout` seconds each.
fn wait_for_rollouts(
    job: &PluginJob,
    new: &[objects::Object],
    ns: &str,
    timeout: u64,
    cluster: &Cluster,
) -> Result<(), PluginError> {
    for o in new
        .iter()
        .filter(|o| matches!(o.kind.as_str(), "Deployment" | "StatefulSet" | "DaemonSet"))
    {
        let name = o.body["metadata"]["name"].as_str().unwrap_or_default();
        let obj_ns = o.body["metadata"]["namespace"].as_str().unwrap_or(ns);
        let mut cmd = kubectl(job);
        cmd.args([
            "rollout",
            "status",
            &format!("{}/{name}", o.kind.to_lowercase()),
        ])
        .args(["--namespace", obj_ns])
        .arg(format!("--timeout={timeout}s"))
        .args(cluster.args());
        run_against(
            &mut cmd,
            &format!("waiting for {} to be ready", o.address),
            cluster,
        )?;
    }
    Ok(())
}

fn teardown(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let m = settings(job)?;
    let ns = if m.namespace.is_empty() {
        job.install.clone()
    } else {
        m.namespace.clone()
    };
    let applied = objects::parse(&last_applied(job)?, &ns).map_err(PluginError)?;
    if applied.is_empty() {
        println!("nothing applied from this runner host: nothing to delete");
        return Ok(PluginResult::default());
    }
    let cluster = Cluster::of(job)?;
    let file = list_file(job, "teardown.json", &applied)?;
    let mut cmd = kubectl(job);
    cmd.args(["delete", "--ignore-not-found", "--wait", "-f"])
        .arg(&file)
        .args(cluster.args());
    let doing = format!(
        "kubectl delete of {} object(s) from namespace `{ns}`",
        applied.len()
    );
    super::torn_down(job, &mut cmd, &doing, &cluster)
}

/// Kubernetes manifests (kustomized or inline): planned against what the host last applied, applied server-side, pruned.
pub(crate) struct Manifest;

super::phases_are_functions!(Manifest);

#[cfg(test)]
mod tests {
    #[test]
    fn relative_paths_climb_to_the_common_directory() {
        use std::path::Path;
        let r = |a: &str, b: &str| super::relative(Path::new(a), Path::new(b));
        assert_eq!(
            r("/d/work/1/kustomize", "/d/src/c/overlay"),
            "../../../src/c/overlay"
        );
        assert_eq!(r("/d/x", "/d/x/y"), "y");
        assert_eq!(r("/d/x", "/d/x"), ".");
    }
}

#[cfg(test)]
mod policy_tests {
    use ferry_protocol::messages::{ComponentKind, KindSettings, ManifestSettings, PolicyDoc};

    use crate::plugin::{Phase, PluginJob};

    const MANIFEST: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: nginx:latest\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    team: web\ndata:\n  a: b\n";

    /// As conftest users write them: v0 with `future.keywords`, `some ... in`, `endswith`.
    const NO_LATEST: &str = "package k8s.images\nimport future.keywords.in\ndeny[msg] {\n  input.kind == \"Deployment\"\n  some c in input.spec.template.spec.containers\n  endswith(c.image, \":latest\")\n  msg := sprintf(\"%s uses a :latest image\", [c.name])\n}\n";
    const LABELS: &str = "package k8s.labels\nwarn contains msg if {\n  not input.metadata.labels.team\n  msg := sprintf(\"%s %s has no team label\", [input.kind, input.metadata.name])\n}\n";

    fn job(dir: &std::path::Path, policies: &[(&str, &str)]) -> PluginJob {
        let work = dir.join(format!("work-{}", policies.len()));
        std::fs::create_dir_all(&work).unwrap();
        PluginJob {
            phase: Phase::Plan,
            org: "o".into(),
            install: "prod".into(),
            plan_file: None,
            plan_digest: None,
            src_dir: dir.to_path_buf(),
            state_dir: dir.join("state"),
            work_dir: work,
            tools: Default::default(),
            secrets: vec![],
            spec: ferry_protocol::messages::ComponentJob {
                component: "app".into(),
                kind: ComponentKind::KubernetesManifest,
                artifact_digest: "sha256:00".into(),
                vars: vec![],
                env: vec![],
                applied_digest: None,
                settings: KindSettings::Manifest(ManifestSettings {
                    manifest: Some(MANIFEST.into()),
                    kustomize: None,
                    namespace: String::new(),
                }),
                timeout_secs: None,
                cluster: None,
                policies: policies
                    .iter()
                    .map(|(name, rego)| PolicyDoc {
                        name: name.to_string(),
                        rego: rego.to_string(),
                    })
                    .collect(),
                redact: vec![],
                run_as: None,
                secret_syncs: vec![],
            },
        }
    }

    #[test]
    fn each_rendered_object_is_a_policy_input_a_deny_fails_the_plan_and_a_warning_shows() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("state")).unwrap();
        let e = super::plan(&job(
            dir.path(),
            &[("no-latest", NO_LATEST), ("labels", LABELS)],
        ))
        .unwrap_err();
        assert_eq!(
            e.0,
            "denied by policy: no-latest: web uses a :latest image (Deployment/prod/web)"
        );
        let ok = super::plan(&job(dir.path(), &[("labels", LABELS)])).unwrap();
        let summary = ok.plan.unwrap().summary;
        assert!(
            summary.ends_with(
                "Policy warnings: labels: Deployment web has no team label (Deployment/prod/web)."
            ),
            "{summary}"
        );
    }
}
