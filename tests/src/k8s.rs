//! Helpers of the Kubernetes and registry tests: the example app with its image from a test
//! registry, an image published there, the pinned helm.

use crate::{RegistryServer, repo_root};

/// Whether a workflow has a step waiting for a decision.
pub fn waiting(w: &ferry_model::Workflow) -> bool {
    w.steps.iter().any(|s| {
        s.kind == ferry_model::StepKind::Approve && s.status == ferry_model::StepStatus::Waiting
    })
}

pub fn helm() -> std::path::PathBuf {
    repo_root().join(".tools/bin/helm")
}

/// A public image's registry: a two-platform image (each platform a small artifact) pushed to a
/// real registry as `library/nginx:1.27-alpine`; its index digest.
pub fn publish_image(source: &RegistryServer) -> String {
    publish_image_as(source, ferry_artifacts::Auth::Anonymous)
}

/// [`publish_image`] to a registry that takes `auth`.
pub fn publish_image_as(source: &RegistryServer, auth: ferry_artifacts::Auth) -> String {
    use ferry_artifacts::{ArtifactConfig, BlobStore, Registry, pack, push, sha256_digest};
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let reg = Registry::new(&source.url("library/nginx"), auth).unwrap();
        let mut platforms = Vec::new();
        for arch in ["amd64", "arm64"] {
            let config = ArtifactConfig {
                component: format!("nginx-{arch}"),
                kind: "image".into(),
                content_hash: String::new(),
            };
            let art = pack(&config, vec![("usr/sbin/nginx", arch.as_bytes(), true)]).unwrap();
            push(&reg, &art).await.unwrap();
            platforms.push(serde_json::json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": art.manifest_digest, "size": art.manifest_bytes.len(),
                "platform": {"architecture": arch, "os": "linux"}
            }));
        }
        let index = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": platforms,
        }))
        .unwrap();
        let digest = sha256_digest(&index);
        reg.put_manifest(
            &digest,
            &index,
            "application/vnd.oci.image.index.v1+json",
            Some("1.27-alpine"),
        )
        .await
        .unwrap();
        digest
    })
}

/// examples/k8s with its public image taken from `source` (no other registry is reachable here).
pub fn example_app(dir: &std::path::Path, source: &RegistryServer) -> std::path::PathBuf {
    let app = dir.join("k8s");
    crate::copy_dir(&repo_root().join("examples/k8s"), &app);
    let image = app.join("components/nginx.toml");
    let toml = std::fs::read_to_string(&image).unwrap();
    assert!(toml.contains("docker.io/library/nginx"), "{toml}");
    std::fs::write(
        &image,
        toml.replace(
            "docker.io/library/nginx",
            &format!("{}/library/nginx", source.host),
        ),
    )
    .unwrap();
    app
}

/// The status of the `kind` step of `component`, or "" while the workflow is not laid out yet
/// (for polling: [`crate::step`] insists the step exists).
pub fn status(w: &ferry_model::Workflow, component: &str, kind: &str) -> String {
    w.steps
        .iter()
        .find(|s| s.component == component && s.kind.label() == kind)
        .map(|s| crate::typed::name_of(&s.status))
        .unwrap_or_default()
}

/// Creates install `prod` of the k8s example (prompting for approvals) with its cluster at
/// `cluster_server`; its first workflow's id.
pub fn create_install(api: &str, cluster_server: &str) -> String {
    let created: ferry_model::api::CreatedInstall = crate::typed::cli(
        api,
        &[
            "installs",
            "create",
            "--app",
            "k8s",
            "--name",
            "prod",
            "--input",
            &format!("cluster_server={cluster_server}"),
            "--input",
            "cluster_token=t0ken",
            "--json",
        ],
    );
    created.workflow_id
}

/// Approves each of `components`' plans, in order, as each comes to wait.
pub fn approve_in_order(api: &str, wf: &str, components: &[&str]) {
    for component in components {
        let what = format!("{component}'s plan to wait");
        let w = crate::typed::wait_until(api, wf, 120, &what, |w| {
            status(w, component, "approve") == "waiting"
                || w.status == ferry_model::WorkflowStatus::Failed
        });
        let at = crate::typed::the_step(&w, component, "approve")
            .index
            .to_string();
        let (code, out, err) = crate::ferry(api, &["workflows", "approve", wf, "--step", &at]);
        assert_eq!(code, 0, "{out}{err}");
    }
}
