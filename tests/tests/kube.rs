//! Kubernetes components (examples/k8s): a chart of the package's own, a kustomized manifest and an
//! inline one, planned by the real helm and kubectl on the install's runner as the rendered objects,
//! reviewed and approved like any plan; their applies reach for the cluster the sandbox names.
//!
//! No Kubernetes API server can run on these machines, so the sandbox names one that refuses: the
//! applies must fail there, saying which cluster and what was being applied.

use std::process::Command;

use ferry_tests::{
    NatsServer, Proc, RegistryServer, ferry, ferry_json, free_port, repo_root, step, wait_for,
};

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

/// A public image's registry: a two-platform image (each platform a small artifact) pushed to a
/// real registry as `library/nginx:1.27-alpine`; its index digest.
fn publish_image(source: &RegistryServer) -> String {
    publish_image_as(source, ferry_artifacts::Auth::Anonymous)
}

/// [`publish_image`] to a registry that takes `auth`.
fn publish_image_as(source: &RegistryServer, auth: ferry_artifacts::Auth) -> String {
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
fn example_app(dir: &std::path::Path, source: &RegistryServer) -> std::path::PathBuf {
    let app = dir.join("k8s");
    ferry_tests::copy_dir(&repo_root().join("examples/k8s"), &app);
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

#[test]
fn a_kubernetes_app_plans_its_rendered_objects_and_fails_only_at_the_cluster() {
    assert!(
        helm().is_file(),
        "helm is not in .tools/bin: run scripts/install-helm-kubectl"
    );
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let source = RegistryServer::start();
    let image = publish_image(&source);
    let app = example_app(dir.path(), &source);
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
    let w = wait_for(&api, &wf, 120, "the second stage's plans to wait", |w| {
        ["nginx", "config"]
            .iter()
            .all(|c| step(w, c, "approve")["status"] == "waiting")
            || w["status"] == "failed"
    });
    assert_eq!(w["status"], "running", "{w}");
    let plan = step(&w, "nginx", "plan")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        plan.contains(&format!("/library/nginx:1.27-alpine@{image} into oci:")),
        "{plan}"
    );
    // The image is copied (into the runner's layout: this install has no registry), then the
    // chart plans with the copy's outputs.
    let (code, out, err) = ferry(
        &api,
        &[
            "workflows",
            "approve",
            &wf,
            "--step",
            &step(&w, "nginx", "approve")["index"].to_string(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_for(
        &api,
        &wf,
        120,
        "the chart's and the job's plans to wait",
        |w| {
            ["web", "migrate"]
                .iter()
                .all(|c| step(w, c, "approve")["status"] == "waiting")
                || w["status"] == "failed"
        },
    );
    assert_eq!(w["status"], "running", "{w}");
    let installed = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    let outputs = &installed["components"]["nginx"]["outputs"]["image"];
    assert_eq!(outputs["digest"], image.as_str(), "{installed}");
    assert_eq!(outputs["tag"], "1.27-alpine", "{installed}");
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
        // The install's copy of the image, from the image component's outputs.
        ":nginx:1.27-alpine\"",
        // The kustomization, its overlay's label and the patch laid over it.
        "+ ResourceQuota/prod/app-quota",
        "metadata.labels.app.kubernetes.io/managed-by = \"ferry\"",
        "spec.hard.pods = \"20\"",
        // The job, with the install's copy of the image and its rendered arguments.
        "+ Job/prod/migrate",
        "spec.template.spec.containers[0].args[0] = \"echo migrating prod\"",
        "spec.template.spec.containers[0].env[0].value = \"hello\"",
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
        .args(["--set", "replicaCount=1", "--set", "image=x"])
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
    let migrate = step(&w, "migrate", "apply")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        migrate.contains("failed against the cluster at") && migrate.contains(&server),
        "{migrate}"
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
    let source = RegistryServer::start();
    let image = publish_image(&source);
    let app = example_app(dir.path(), &source);
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
            "--input",
            &format!("cluster_server={server}"),
            "--input",
            "cluster_token=t",
            "--json",
        ],
    );
    let wf = created["workflow_id"].as_str().unwrap().to_string();
    // The sandbox, then the image: approved one by one; the chart then plans from the install's
    // copy of itself, with the install's copy of the image.
    for component in ["sandbox", "nginx"] {
        let w = wait_for(
            &api,
            &wf,
            120,
            &format!("{component}'s plan to wait"),
            |w| step(w, component, "approve")["status"] == "waiting" || w["status"] == "failed",
        );
        let at = step(&w, component, "approve")["index"].to_string();
        let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", &at]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let w = wait_for(&api, &wf, 120, "the chart's plan to wait", |w| {
        step(w, "web", "approve")["status"] == "waiting" || w["status"] == "failed"
    });
    assert_eq!(step(&w, "web", "plan")["status"], "succeeded", "{w}");

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

    // The image: copied by digest, every platform, into the install's registry, and what the
    // chart runs.
    let installed = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    let outputs = &installed["components"]["nginx"]["outputs"]["image"];
    assert_eq!(
        outputs["repository"],
        format!("{}/prod/nginx", installs.host),
        "{installed}"
    );
    assert_eq!(outputs["digest"], image.as_str(), "{installed}");
    let copy = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{}/prod/nginx:1.27-alpine", installs.host))
        .output()
        .unwrap();
    assert!(
        copy.status.success(),
        "{}",
        String::from_utf8_lossy(&copy.stderr)
    );
    assert_eq!(ferry_artifacts::sha256_digest(&copy.stdout), image);
    let (_, diff, _) = ferry(&api, &["workflows", "get", &wf, "--diff"]);
    assert!(
        diff.contains(&format!(
            "image = \"{}/prod/nginx:1.27-alpine\"",
            installs.host
        )),
        "{diff}"
    );
}

/// Charts from a Helm repository (`[helm_repo]`: its index and package served over HTTP by the
/// test) and from an OCI registry (`repo_url = "oci://..."`, pushed there by `helm push`), pulled
/// by the runner with the real helm at plan time and kept whole in the plan.
#[test]
fn a_chart_from_a_helm_repository_is_pulled_and_planned() {
    let dir = tempfile::tempdir().unwrap();
    // The repository: `helm package` and `helm repo index` of the example's chart, served.
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let helm_in = |args: &[&str]| {
        let out = Command::new(helm())
            .args(args)
            .env("HELM_CONFIG_HOME", dir.path().join("helm"))
            .env("HELM_CACHE_HOME", dir.path().join("helm"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let chart = repo_root().join("examples/k8s/components/src/web");
    helm_in(&[
        "package",
        chart.to_str().unwrap(),
        "-d",
        repo.to_str().unwrap(),
    ]);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    helm_in(&["repo", "index", repo.to_str().unwrap(), "--url", &url]);
    // And an OCI registry holding the same chart, pushed there by helm itself.
    let oci = RegistryServer::start();
    let package = repo.join("web-0.1.0.tgz");
    helm_in(&[
        "push",
        package.to_str().unwrap(),
        &format!("oci://{}/charts", oci.host),
        "--plain-http",
    ]);
    let mut server = Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(&repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !ferry_tests::listening(port) {
        assert!(
            std::time::Instant::now() < deadline,
            "the chart repository did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // An app of one chart from that repository, besides the example's sandbox.
    let app = dir.path().join("repo-app");
    ferry_tests::copy_dir(&repo_root().join("examples/k8s"), &app);
    std::fs::remove_dir_all(app.join("components")).unwrap();
    std::fs::create_dir_all(app.join("components")).unwrap();
    std::fs::write(
        app.join("components/site.toml"),
        format!(
            "name = \"site\"\ntype = \"helm_chart\"\nchart_name = \"site\"\n\n[helm_repo]\nrepo_url = \"{url}\"\nchart = \"web\"\nversion = \"0.1.0\"\n\n[values]\ngreeting = \"from a repository\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        app.join("components/oci-site.toml"),
        format!(
            "name = \"oci-site\"\ntype = \"helm_chart\"\nchart_name = \"oci-site\"\n\n[helm_repo]\nrepo_url = \"oci://{}/charts\"\nchart = \"web\"\nversion = \"0.1.0\"\n",
            oci.host
        ),
    )
    .unwrap();

    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let (code, out, err) = ferry(
        &api,
        &["apps", "sync", app.to_str().unwrap(), "--name", "repo-app"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let created = ferry_json(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "repo-app",
            "--name",
            "prod",
            "--approve-all",
            "--input",
            &format!("cluster_server=https://127.0.0.1:{}", free_port()),
            "--input",
            "cluster_token=t",
            "--json",
        ],
    );
    let wf = created["workflow_id"].as_str().unwrap().to_string();
    let w = wait_for(&api, &wf, 120, "the workflow to end", |w| {
        w["status"] == "failed" || w["status"] == "succeeded"
    });
    let _ = server.kill();
    let _ = server.wait();
    let plan = step(&w, "site", "plan")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        plan.starts_with(
            "Plan: 3 to add, 0 to change, 0 to destroy. (release `site` in namespace `prod`)"
        ),
        "{w}"
    );
    let (_, diff, _) = ferry(&api, &["workflows", "get", &wf, "--diff"]);
    assert!(
        diff.contains("data.index.html = \"from a repository\""),
        "{diff}"
    );
    assert!(diff.contains("+ Deployment/prod/site"), "{diff}");
    // The chart from the OCI registry, pulled by reference.
    let oci_plan = step(&w, "oci-site", "plan")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        oci_plan.starts_with("Plan: 3 to add, 0 to change, 0 to destroy. (release `oci-site`"),
        "{w}"
    );
    assert!(diff.contains("+ Deployment/prod/oci-site"), "{diff}");
    // Applied from the plan's copy of the chart (the repository is gone by now): it fails only
    // at the cluster.
    let apply = step(&w, "site", "apply")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        apply.contains("helm upgrade --install of release `site`")
            && apply.contains("connection refused"),
        "{apply}"
    );
}

/// Types Ferry validates but has no plugin for fail their build saying which component and why.
#[test]
fn a_type_without_a_plugin_fails_its_build_naming_the_component_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::create_dir_all(app.join("components/src/img")).unwrap();
    std::fs::write(app.join("components/src/img/Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(
        app.join("components/img.toml"),
        "name = \"img\"\ntype = \"docker_build\"\ndirectory = \"components/src/img\"\n",
    )
    .unwrap();
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let w = wait_for(&api, &wf, 120, "the workflow to end", |w| {
        w["status"] == "failed" || w["status"] == "succeeded"
    });
    assert_eq!(w["status"], "failed");
    assert_eq!(
        step(&w, "img", "build")["message"],
        "component `img` is a `docker_build`, which this version of Ferry validates but does not deploy: the runner host has no image builder (it deploys terraform_module, script, helm_chart, kubernetes_manifest, container_image, external_image, job)",
        "{w}"
    );
}

/// ECR three times: an `[aws_ecr]` image, an install registry and a vendor registry on ECR. The
/// runner and the build service ask ECR (here a stand-in speaking the ECR API, since no AWS
/// account is reachable) for a token with the SDK, signed with the host's AWS credentials; the
/// image is copied from a registry that takes only those credentials into another that does too;
/// the chart is built into a third; each repository is created first.
#[test]
fn ecr_credentials_from_get_authorization_token_serve_images_and_both_registries() {
    let source = RegistryServer::start_with_basic_auth("AWS", "ecr-token-password");
    let ecr = ferry_tests::EcrStandIn::start("AWS", "ecr-token-password", &source.host);
    let installs = RegistryServer::start_with_basic_auth("AWS", "ecr-token-password");
    let install_url = installs.url("prod");
    let vendor = RegistryServer::start_with_basic_auth("AWS", "ecr-token-password");
    let vendor_url = vendor.url("ferry");
    let image = publish_image_as(
        &source,
        ferry_artifacts::Auth::Basic {
            user: "AWS".into(),
            password: "ecr-token-password".into(),
        },
    );
    // Without the token the registry refuses.
    let anonymous = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!(
            "docker://{}/library/nginx:1.27-alpine",
            source.host
        ))
        .output()
        .unwrap();
    assert!(!anonymous.status.success());

    let dir = tempfile::tempdir().unwrap();
    let app = example_app(dir.path(), &source);
    let nginx = app.join("components/nginx.toml");
    let toml = std::fs::read_to_string(&nginx).unwrap();
    std::fs::write(
        &nginx,
        toml.replace("[public]", "[aws_ecr]\nregion = \"eu-west-1\""),
    )
    .unwrap();
    let env: Vec<(String, String)> = [
        ("FERRY_ECR_ENDPOINT", ecr.url.as_str()),
        ("AWS_ACCESS_KEY_ID", "AKIDFERRYTEST"),
        ("AWS_SECRET_ACCESS_KEY", "not-a-real-secret"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let nats = NatsServer::start();
    let (_server, api) = Proc::server_env(
        &nats.url,
        dir.path().join("server.log"),
        &[
            "--vendor-registry",
            &vendor_url,
            "--vendor-registry-ecr-region",
            "eu-west-1",
        ],
        &env,
    );
    let (code, out, err) = ferry(&api, &["apps", "sync", app.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let _runner = Proc::runner_env(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &[
            "--registry",
            &install_url,
            "--registry-ecr-region",
            "eu-west-1",
        ],
        &env,
    );
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
            "cluster_server=https://127.0.0.1:1",
            "--input",
            "cluster_token=t",
            "--json",
        ],
    );
    let wf = created["workflow_id"].as_str().unwrap().to_string();
    for component in ["sandbox", "nginx"] {
        let w = wait_for(
            &api,
            &wf,
            120,
            &format!("{component}'s plan to wait"),
            |w| step(w, component, "approve")["status"] == "waiting" || w["status"] == "failed",
        );
        let at = step(&w, component, "approve")["index"].to_string();
        let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", &at]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let w = wait_for(&api, &wf, 120, "the image's apply", |w| {
        step(w, "nginx", "apply")["status"] == "succeeded" || w["status"] == "failed"
    });
    assert_eq!(step(&w, "nginx", "apply")["status"], "succeeded", "{w}");
    let installed = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(
        installed["components"]["nginx"]["outputs"]["image"]["digest"],
        image.as_str(),
        "{installed}"
    );
    assert_eq!(
        installed["components"]["nginx"]["outputs"]["image"]["repository"],
        format!("{}/prod/nginx", installs.host)
    );
    // The SDK's own requests, signed with the host's key, in the region: tokens, and a repository
    // for each component before anything was pushed to it.
    let calls = ecr.calls.lock().unwrap().clone();
    for c in &calls {
        assert!(
            c.authorization
                .starts_with("AWS4-HMAC-SHA256 Credential=AKIDFERRYTEST/")
                && c.authorization.contains("/eu-west-1/ecr/aws4_request"),
            "{c:?}"
        );
    }
    let tokens = calls
        .iter()
        .filter(|c| c.target == "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken")
        .count();
    assert!(tokens >= 2, "{calls:?}");
    let created: std::collections::BTreeSet<String> = calls
        .iter()
        .filter(|c| c.target == "AmazonEC2ContainerRegistry_V20150921.CreateRepository")
        .filter_map(|c| c.body["repositoryName"].as_str().map(str::to_string))
        .collect();
    for repo in [
        "prod/sandbox",
        "prod/nginx",
        "ferry/default/k8s/web",
        "ferry/default/k8s/sandbox",
    ] {
        assert!(created.contains(repo), "{created:?}");
    }
    // The chart, built into the vendor's ECR, synced through the hub into the install's, plans.
    let w = wait_for(&api, &wf, 120, "the chart's plan", |w| {
        step(w, "web", "approve")["status"] == "waiting" || w["status"] == "failed"
    });
    assert_eq!(step(&w, "web", "plan")["status"], "succeeded", "{w}");
}
