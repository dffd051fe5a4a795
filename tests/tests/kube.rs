//! Kubernetes components (examples/k8s): a chart of the package's own, a kustomized manifest and an
//! inline one, planned by the real helm and kubectl on the install's runner as the rendered objects,
//! reviewed and approved like any plan; their applies reach for the cluster the sandbox names.
//!
//! No Kubernetes API server can run on these machines, so the sandbox names one that refuses: the
//! applies must fail there, saying which cluster and what was being applied.

use std::process::Command;

use ferry_tests::{NatsServer, Proc, ferry, ferry_json, free_port, repo_root, step, wait_for};

fn waiting(w: &serde_json::Value) -> bool {
    w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["kind"] == "approve" && s["status"] == "waiting")
}

fn helm() -> std::path::PathBuf {
    repo_root().join(".tools/bin/helm")
}

#[test]
fn a_kubernetes_app_plans_its_rendered_objects_and_fails_only_at_the_cluster() {
    assert!(
        helm().is_file(),
        "helm is not in .tools/bin: run scripts/install-helm-kubectl"
    );
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let app = repo_root().join("examples/k8s");
    let (code, out, err) = ferry(&api, &["apps", "sync", app.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    // A port nothing listens on: the cluster refuses.
    let server = format!("https://127.0.0.1:{}", free_port());
    let created = ferry_json(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "k8s",
            "--name",
            "prod",
            "--input",
            &format!("cluster_server={server}"),
            "--input",
            "cluster_token=t0ken",
            "--json",
        ],
    );
    let wf = created["workflow_id"].as_str().unwrap().to_string();

    // The sandbox's plan, then its apply: it names the cluster.
    wait_for(&api, &wf, 90, "the sandbox plan to wait", waiting);
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_for(&api, &wf, 120, "both first-stage plans to wait", |w| {
        ["web", "config"]
            .iter()
            .all(|c| step(w, c, "approve")["status"] == "waiting")
            || w["status"] == "failed"
    });
    assert_eq!(w["status"], "running", "{w}");
    assert!(
        step(&w, "web", "plan")["message"]
            .as_str()
            .unwrap_or_default()
            .contains(
                "Plan: 3 to add, 0 to change, 0 to destroy. (release `web` in namespace `prod`)"
            ),
        "{w}"
    );
    assert!(
        step(&w, "config", "plan")["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Plan: 1 to add"),
        "{w}"
    );

    // The reviewer reads the objects with their values.
    let (code, diff, err) = ferry(&api, &["workflows", "get", &wf, "--diff"]);
    assert_eq!(code, 0, "{diff}{err}");
    for line in [
        "+ ConfigMap/prod/web-page",
        "+ Deployment/prod/web",
        "+ Service/prod/web",
        // The values file over the chart's defaults, and `[values]` over the values file.
        "data.index.html = \"hello from prod\"",
        "spec.ports[0].port = 8080",
        "spec.replicas = 1",
        // The kustomization, its overlay's label and the patch laid over it.
        "+ ResourceQuota/prod/app-quota",
        "metadata.labels.app.kubernetes.io/managed-by = \"ferry\"",
        "spec.hard.pods = \"20\"",
    ] {
        assert!(diff.contains(line), "`{line}` not in:\n{diff}");
    }

    // What helm itself renders from the same chart and values is what was planned.
    let values = dir.path().join("values.yaml");
    std::fs::write(
        &values,
        "greeting: \"hello from prod\"\nservice:\n  port: 8080\nreplicaCount: 2\n",
    )
    .unwrap();
    let rendered = Command::new(helm())
        .args(["template", "web"])
        .arg(app.join("components/src/web"))
        .args(["--namespace", "prod", "-f"])
        .arg(&values)
        .args(["--set", "replicaCount=1"])
        .output()
        .unwrap();
    let rendered = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.contains("replicas: 1") && rendered.contains("port: 8080"),
        "{rendered}"
    );
    assert!(
        rendered.contains("index.html: \"hello from prod\""),
        "{rendered}"
    );

    // Approved, each apply reaches for the cluster and fails there, saying so.
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_for(&api, &wf, 180, "the workflow to end", |w| {
        w["status"] == "failed" || w["status"] == "succeeded"
    });
    assert_eq!(w["status"], "failed", "{w}");
    let web = step(&w, "web", "apply")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        web.contains("helm upgrade --install of release `web` into namespace `prod` failed against the cluster at")
            && web.contains(&server)
            && web.contains("the sandbox's `kubeconfig` output")
            && web.contains("connection refused"),
        "{web}"
    );
    let config = step(&w, "config", "apply")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        config.contains(
            "kubectl apply of 1 object(s) into namespace `prod` failed against the cluster at"
        ) && config.contains(&server),
        "{config}"
    );
    // The inline manifest reads web's outputs: it was never planned.
    assert_ne!(step(&w, "banner", "apply")["status"], "succeeded", "{w}");
}

/// With a vendor registry (ferry-server --vendor-registry) and an install registry (ferry-runner
/// --registry), both real `docker-registry` processes: the chart is built as Helm's OCI chart into
/// the vendor's, copied into the install's, and `helm pull oci://` takes either, identical; the
/// plan is made from the install's copy.
#[test]
fn charts_build_into_the_vendor_registry_and_sync_into_the_installs() {
    let (vendor, installs) = (
        ferry_tests::RegistryServer::start(),
        ferry_tests::RegistryServer::start(),
    );
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let vendor_url = vendor.url("ferry");
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--vendor-registry", &vendor_url],
    );
    let app = repo_root().join("examples/k8s");
    let (code, out, err) = ferry(&api, &["apps", "sync", app.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let install_url = installs.url("prod");
    let _runner = Proc::runner_with(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--registry", &install_url],
    );
    let server = format!("https://127.0.0.1:{}", free_port());
    let created = ferry_json(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "k8s",
            "--name",
            "prod",
            "--approve-all",
            "--input",
            &format!("cluster_server={server}"),
            "--input",
            "cluster_token=t",
            "--json",
        ],
    );
    let wf = created["workflow_id"].as_str().unwrap().to_string();
    let w = wait_for(&api, &wf, 180, "the workflow to end", |w| {
        w["status"] == "failed" || w["status"] == "succeeded"
    });
    // Planned from the install's copy; stopped only at the cluster.
    assert_eq!(step(&w, "web", "plan")["status"], "succeeded", "{w}");
    assert_eq!(step(&w, "web", "apply")["status"], "failed", "{w}");

    let pull = |reference: &str, into: &std::path::Path| {
        std::fs::create_dir_all(into).unwrap();
        let out = Command::new(helm())
            .args([
                "pull",
                reference,
                "--version",
                "0.1.0",
                "--plain-http",
                "--destination",
            ])
            .arg(into)
            .env("HELM_CONFIG_HOME", into.join("config"))
            .env("HELM_CACHE_HOME", into.join("cache"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{reference}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read(into.join("web-0.1.0.tgz")).unwrap()
    };
    let (a, b) = (
        dir.path().join("from-vendor"),
        dir.path().join("from-install"),
    );
    let from_vendor = pull(&format!("oci://{}/ferry/default/k8s/web", vendor.host), &a);
    let from_install = pull(&format!("oci://{}/prod/web", installs.host), &b);
    assert_eq!(from_vendor, from_install);
}
