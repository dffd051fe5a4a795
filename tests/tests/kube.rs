//! Kubernetes components (examples/k8s): a chart of the package's own, a kustomized manifest and an
//! inline one, planned by the real helm and kubectl on the install's runner as the rendered objects,
//! reviewed and approved like any plan; their applies reach for the cluster the sandbox names.
//!
//! No Kubernetes API server can run on these machines, so the sandbox names one that refuses: the
//! applies must fail there, saying which cluster and what was being applied.

use std::process::Command;

use ferry_tests::k8s::{
    approve_in_order, create_install, example_app, helm, publish_image, status, waiting,
};
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, RegistryServer, ferry, free_port, repo_root};

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
    let wf = create_install(&api, &server);

    // The sandbox's plan, then its apply: it names the cluster.
    wait_until(&api, &wf, 90, "the sandbox plan to wait", waiting);
    let (code, out, err) = ferry(&api, &["workflows", "approve", &wf, "--step", "sandbox"]);
    assert_eq!(code, 0, "{out}{err}");
    let w = wait_until(&api, &wf, 120, "the second stage's plans to wait", |w| {
        ["nginx", "config"]
            .iter()
            .all(|c| status(w, c, "approve") == "waiting")
            || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&w.status), "running", "{w:?}");
    let plan = the_step(&w, "nginx", "plan")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        plan.contains(&format!("/library/nginx:1.27-alpine@{image} into oci:")),
        "{plan}"
    );
    // The image is copied (into the runner's layout: this install has no registry), then the
    // chart plans with the copy's outputs.
    approve_in_order(&api, &wf, &["nginx"]);
    let w = wait_until(
        &api,
        &wf,
        120,
        "the chart's and the job's plans to wait",
        |w| {
            ["web", "migrate"]
                .iter()
                .all(|c| status(w, c, "approve") == "waiting")
                || name_of(&w.status) == "failed"
        },
    );
    assert_eq!(name_of(&w.status), "running", "{w:?}");
    let installed = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    // The sandbox's kubeconfig holds the cluster token: shown nowhere, used by the components.
    assert_eq!(
        installed.sandbox.outputs["kubeconfig"],
        ferry_model::REDACTED,
        "{installed:?}"
    );
    let outputs = &installed.components["nginx"].outputs["image"];
    assert_eq!(outputs["digest"], image.as_str(), "{installed:?}");
    assert_eq!(outputs["tag"], "1.27-alpine", "{installed:?}");
    assert!(
        the_step(&w, "web", "plan")
            .message
            .as_deref()
            .unwrap_or_default()
            .contains(
                "Plan: 3 to add, 0 to change, 0 to destroy. (release `web` in namespace `prod`)"
            ),
        "{w:?}"
    );
    assert!(
        the_step(&w, "config", "plan")
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("Plan: 1 to add"),
        "{w:?}"
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
    let w = wait_until(&api, &wf, 180, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&w.status), "failed", "{w:?}");
    let web = the_step(&w, "web", "apply")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        web.contains("helm upgrade --install of release `web` into namespace `prod` failed against the cluster at")
            && web.contains(&server)
            && web.contains("the sandbox's `kubeconfig` output")
            && web.contains("connection refused"),
        "{web}"
    );
    let config = the_step(&w, "config", "apply")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        config.contains(
            "kubectl apply of 1 object(s) into namespace `prod` failed against the cluster at"
        ) && config.contains(&server),
        "{config}"
    );
    let migrate = the_step(&w, "migrate", "apply")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        migrate.contains("failed against the cluster at") && migrate.contains(&server),
        "{migrate}"
    );
    // The inline manifest reads web's outputs: it was never planned.
    assert_ne!(
        name_of(&the_step(&w, "banner", "apply").status),
        "succeeded",
        "{w:?}"
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
    let w = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&w.status), "failed");
    assert_eq!(
        the_step(&w, "img", "build").message.as_deref(),
        Some(
            "component `img` is a `docker_build`, which this version of Ferry validates but does not deploy: the runner host has no image builder (it deploys terraform_module, script, helm_chart, kubernetes_manifest, container_image, external_image, job)"
        ),
        "{w:?}"
    );
}
