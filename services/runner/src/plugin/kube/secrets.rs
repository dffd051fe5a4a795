//! The app's secrets synced into the cluster (`kubernetes_sync`), before a component's own
//! objects are applied, so what it deploys finds them.
//!
//! One `Secret` per namespace and name, each of its keys one secret's value, applied
//! server-side under the field manager `ferry-secrets` (keys another manager writes stay
//! theirs), with the namespaces it needs. Values reach this process only: the runner read them
//! in the install's account and masks them in the job's log; the file kubectl reads is the
//! runner's alone and removed once applied.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Value, json};

use super::{Cluster, run_against, tool, write_private};
use crate::plugin::{PluginError, PluginJob, SyncedSecret};

/// The Namespaces and Secrets that hold `secrets`, in the order they are applied.
pub fn objects(secrets: &[SyncedSecret]) -> Vec<Value> {
    let mut by_place: BTreeMap<(&str, &str), BTreeMap<&str, String>> = BTreeMap::new();
    for s in secrets {
        let data = if s.base64 {
            s.value.trim().to_string()
        } else {
            base64::engine::general_purpose::STANDARD.encode(s.value.as_bytes())
        };
        by_place
            .entry((s.namespace.as_str(), s.name.as_str()))
            .or_default()
            .insert(s.key.as_str(), data);
    }
    let namespaces: std::collections::BTreeSet<&str> = by_place.keys().map(|(ns, _)| *ns).collect();
    let mut out: Vec<Value> = namespaces
        .into_iter()
        .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        .collect();
    for ((ns, name), data) in by_place {
        out.push(json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": ns,
                "labels": {"app.kubernetes.io/managed-by": "ferry"}},
            "data": data,
        }));
    }
    out
}

/// Applies the job's secrets to `cluster` (nothing when it has none).
pub fn sync(job: &PluginJob, cluster: &Cluster) -> Result<(), PluginError> {
    if job.secrets.is_empty() {
        return Ok(());
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects(&job.secrets)});
    let file = job.work_dir.join("secrets.json");
    write_private(&file, list.to_string().as_bytes())?;
    let places: Vec<String> = job
        .secrets
        .iter()
        .map(|s| format!("{}/{}[{}]", s.namespace, s.name, s.key))
        .collect();
    let mut cmd = tool(&job.tools.kubectl, "kubectl");
    cmd.current_dir(&job.work_dir)
        .args([
            "apply",
            "--server-side",
            "--field-manager=ferry-secrets",
            "--force-conflicts",
            "-f",
        ])
        .arg(&file)
        .args(cluster.args());
    let doing = format!(
        "syncing {} secret(s) into the cluster ({})",
        job.secrets.len(),
        places.join(", ")
    );
    let done = run_against(&mut cmd, &doing, cluster);
    let _ = std::fs::remove_file(&file);
    done.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(ns: &str, name: &str, key: &str, value: &str, base64: bool) -> SyncedSecret {
        SyncedSecret {
            namespace: ns.into(),
            name: name.into(),
            key: key.into(),
            value: value.into(),
            base64,
        }
    }

    #[test]
    fn secrets_become_one_object_per_place_with_their_namespaces_first() {
        let objs = objects(&[
            secret("app", "creds", "license", "lic-1", false),
            secret("app", "creds", "db", "cGFzcw==", true),
            secret("jobs", "creds", "license", "lic-1", false),
        ]);
        let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Namespace", "Namespace", "Secret", "Secret"]);
        let app = &objs[2];
        assert_eq!(app["metadata"]["namespace"], "app");
        assert_eq!(app["data"]["license"], "bGljLTE=");
        assert_eq!(
            app["data"]["db"], "cGFzcw==",
            "a base64 value goes as it is"
        );
        assert_eq!(objs[3]["metadata"]["namespace"], "jobs");
    }

    /// Up to the cluster, with the real kubectl: the sync is attempted against the cluster the
    /// sandbox names, fails there saying what it synced where, and leaves no file of values.
    #[test]
    fn a_sync_reaches_the_cluster_and_leaves_no_values_behind() {
        use ferry_protocol::messages::{ClusterAccess, ComponentJob, ComponentKind, KindSettings};
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = format!("https://127.0.0.1:{port}");
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        );
        let job = PluginJob {
            phase: crate::plugin::Phase::Apply,
            org: "o".into(),
            install: "prod".into(),
            spec: ComponentJob {
                component: "web".into(),
                kind: ComponentKind::KubernetesManifest,
                artifact_digest: "sha256:00".into(),
                vars: vec![],
                env: vec![],
                applied_digest: None,
                redact: vec![],
                settings: KindSettings::None,
                timeout_secs: None,
                cluster: Some(ClusterAccess {
                    kubeconfig,
                    server: server.clone(),
                    source: "the sandbox's `kubeconfig` output".into(),
                }),
                policies: vec![],
                run_as: None,
                secret_syncs: vec![],
            },
            plan_file: None,
            plan_digest: None,
            src_dir: dir.path().into(),
            state_dir: dir.path().into(),
            work_dir: dir.path().into(),
            tools: crate::plugin::Tools {
                kubectl: Some(repo.join(".tools/bin/kubectl")),
                ..Default::default()
            },
            secrets: vec![secret(
                "prod",
                "app-secrets",
                "api_token",
                "tok-9876",
                false,
            )],
        };
        let cluster = Cluster::of(&job).unwrap();
        let e = sync(&job, &cluster).unwrap_err().0;
        assert!(
            e.contains("syncing 1 secret(s) into the cluster (prod/app-secrets[api_token])")
                && e.contains(&server),
            "{e}"
        );
        assert!(!e.contains("tok-9876"), "{e}");
        assert!(!dir.path().join("secrets.json").exists());
    }
}
