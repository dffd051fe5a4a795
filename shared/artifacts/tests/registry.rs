//! Artifacts in real OCI registries (two `docker-registry` processes: the vendor's and an
//! install's) and in an install's OCI layout directory, read back by a standard tool (skopeo).

use ferry_artifacts::{
    ArtifactConfig, ArtifactError, Auth, BlobStore, LocalLayout, Registry, copy_tagged, pack, push,
    sha256_digest,
};
use ferry_tests::RegistryServer;
use serde_json::json;

/// A two-platform image index (each platform a small artifact of its own), pushed to `reg`
/// under `tag`; its digest and its platforms' manifest digests.
async fn push_index(reg: &Registry, tag: &str) -> (String, Vec<String>) {
    let mut children = Vec::new();
    for arch in ["amd64", "arm64"] {
        let art = pack(
            &ArtifactConfig {
                component: format!("app-{arch}"),
                kind: "image".into(),
                content_hash: String::new(),
            },
            vec![("bin/app", format!("binary for {arch}").as_bytes(), true)],
        )
        .unwrap();
        push(reg, &art).await.unwrap();
        children.push((arch, art.manifest_digest.clone(), art.manifest_bytes.len()));
    }
    let index = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": children.iter().map(|(arch, d, size)| json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": d, "size": size,
            "platform": {"architecture": arch, "os": "linux"}
        })).collect::<Vec<_>>()
    });
    let bytes = serde_json::to_vec(&index).unwrap();
    let digest = sha256_digest(&bytes);
    reg.put_manifest(
        &digest,
        &bytes,
        "application/vnd.oci.image.index.v1+json",
        Some(tag),
    )
    .await
    .unwrap();
    (digest, children.into_iter().map(|(_, d, _)| d).collect())
}

#[tokio::test]
async fn a_multi_platform_index_copies_by_digest_between_registries() {
    let (vendor, install) = (RegistryServer::start(), RegistryServer::start());
    let src = Registry::new(&vendor.url("acme/api"), Auth::Anonymous).unwrap();
    let dst = Registry::new(&install.url("mirror/api"), Auth::Anonymous).unwrap();
    let (index, platforms) = push_index(&src, "1.0").await;
    assert_eq!(src.resolve("1.0").await.unwrap(), index);

    let first = copy_tagged(&src, &dst, &index, Some("1.0")).await.unwrap();
    // Per platform a config, a layer and a manifest; then the index.
    assert_eq!(
        (first.blobs_copied, first.blobs_skipped),
        (7, 0),
        "{first:?}"
    );
    assert_eq!(dst.resolve("1.0").await.unwrap(), index);
    for p in &platforms {
        assert!(dst.has_manifest(p).await.unwrap(), "platform {p} copied");
    }
    // Again: every blob and platform manifest is already there; only the tag is written again.
    // (A copy cut short resumes the same way: see `a_copy_cut_short_resumes_where_it_stopped`.)
    let again = copy_tagged(&src, &dst, &index, Some("1.0")).await.unwrap();
    assert_eq!(
        (again.blobs_copied, again.blobs_skipped),
        (1, 6),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_corrupted_blob_in_the_source_fails_the_copy_naming_its_digest() {
    let (vendor, install) = (RegistryServer::start(), RegistryServer::start());
    let src = Registry::new(&vendor.url("acme/api"), Auth::Anonymous).unwrap();
    let dst = Registry::new(&install.url("mirror/api"), Auth::Anonymous).unwrap();
    let art = pack(
        &ArtifactConfig {
            component: "web".into(),
            kind: "helm_chart".into(),
            content_hash: String::new(),
        },
        vec![("Chart.yaml", &b"name: web\n"[..], false)],
    )
    .unwrap();
    push(&src, &art).await.unwrap();
    // Rewrite the layer's bytes where the registry keeps them.
    let layer = &art.blobs[1].0;
    let hex = layer.strip_prefix("sha256:").unwrap();
    let data = vendor.storage.join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ));
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[10] ^= 0xff;
    let actual = sha256_digest(&bytes);
    std::fs::write(&data, bytes).unwrap();

    let err = copy_tagged(&src, &dst, &art.manifest_digest, None)
        .await
        .unwrap_err();
    let shown = err.to_string();
    // Both digests named: the one expected and the one the bytes have.
    assert!(shown.contains(layer) && shown.contains(&actual), "{shown}");
    assert!(
        matches!(
            err,
            ArtifactError::DigestMismatch { .. } | ArtifactError::Registry { .. }
        ),
        "{err:?}"
    );
    assert!(
        !dst.has_manifest(&art.manifest_digest).await.unwrap(),
        "no manifest without its blobs"
    );
}

#[tokio::test]
async fn an_install_layout_opens_with_a_standard_tool() {
    let vendor = RegistryServer::start();
    let src = Registry::new(&vendor.url("acme/api"), Auth::Anonymous).unwrap();
    let (index, _) = push_index(&src, "1.0").await;
    let dir = tempfile::tempdir().unwrap();
    let layout = LocalLayout::open(dir.path()).unwrap();
    copy_tagged(&src, &layout, &index, Some("api"))
        .await
        .unwrap();
    let index_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("index.json")).unwrap()).unwrap();
    assert_eq!(index_json["manifests"][0]["digest"], index.as_str());

    let out = std::process::Command::new("skopeo")
        .args(["inspect", "--raw"])
        .arg(format!("oci:{}:api", dir.path().display()))
        .output()
        .expect("skopeo is not installed: run scripts/install-registry");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sha256_digest(&out.stdout), index);
}

/// A chart packed by the build service is Helm's own OCI chart: `helm pull oci://` takes it, and
/// renders the same as the chart's directory.
#[tokio::test]
async fn a_packed_chart_is_pulled_by_helm_from_a_registry() {
    let vendor = RegistryServer::start();
    let chart_dir = ferry_tests::repo_root().join("examples/k8s/components/src/web");
    let mut files = Vec::new();
    for entry in walk(&chart_dir) {
        let rel = entry
            .strip_prefix(&chart_dir)
            .unwrap()
            .display()
            .to_string();
        files.push((rel, std::fs::read(&entry).unwrap()));
    }
    let art = ferry_artifacts::pack_helm_chart(
        files.iter().map(|(p, b)| (p.as_str(), b.as_slice(), false)),
    )
    .unwrap();
    assert_eq!(art.tag.as_deref(), Some("0.1.0"));
    let reg = Registry::new(&vendor.url("acme/charts/web"), Auth::Anonymous).unwrap();
    push(&reg, &art).await.unwrap();
    // Reproducible: the same files pack to the same digest.
    let again = ferry_artifacts::pack_helm_chart(
        files
            .iter()
            .rev()
            .map(|(p, b)| (p.as_str(), b.as_slice(), false)),
    )
    .unwrap();
    assert_eq!(again.manifest_digest, art.manifest_digest);

    let helm = ferry_tests::repo_root().join(".tools/bin/helm");
    let out = tempfile::tempdir().unwrap();
    let pulled = std::process::Command::new(&helm)
        .args(["pull", &format!("oci://{}/acme/charts/web", vendor.host)])
        .args(["--version", "0.1.0", "--plain-http", "--destination"])
        .arg(out.path())
        .env("HELM_CONFIG_HOME", out.path().join("config"))
        .env("HELM_CACHE_HOME", out.path().join("cache"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&pulled.stderr).to_string()
        + &String::from_utf8_lossy(&pulled.stdout);
    assert!(pulled.status.success(), "{said}");
    assert!(said.contains(&art.manifest_digest), "{said}");
    let render = |chart: &std::path::Path| {
        let o = std::process::Command::new(&helm)
            .args(["template", "web"])
            .arg(chart)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    assert_eq!(
        render(&out.path().join("web-0.1.0.tgz")),
        render(&chart_dir)
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A copy cut short after one platform resumes: a second run copies only what is missing, and
/// the index (written last) appears only once everything it names is there.
#[tokio::test]
async fn a_copy_cut_short_resumes_where_it_stopped() {
    let (vendor, install) = (RegistryServer::start(), RegistryServer::start());
    let src = Registry::new(&vendor.url("acme/api"), Auth::Anonymous).unwrap();
    let dst = Registry::new(&install.url("mirror/api"), Auth::Anonymous).unwrap();
    let (index, platforms) = push_index(&src, "1.0").await;
    // The first run got as far as the first platform.
    let partial = copy_tagged(&src, &dst, &platforms[0], None).await.unwrap();
    assert_eq!(partial.blobs_copied, 3, "{partial:?}");
    assert!(!dst.has_manifest(&index).await.unwrap());
    let resumed = copy_tagged(&src, &dst, &index, Some("1.0")).await.unwrap();
    // The first platform's config, layer and manifest are skipped; the second's and the index copied.
    assert_eq!(
        (resumed.blobs_copied, resumed.blobs_skipped),
        (4, 3),
        "{resumed:?}"
    );
    assert_eq!(dst.resolve("1.0").await.unwrap(), index);
}
