//! Artifacts and images through real OCI registries (`docker-registry` processes), as the runner
//! and the build service use them: a vendor registry and an install registry, charts from a Helm
//! repository and from an OCI registry, and Amazon ECR's credentials (its API answered by a
//! stand-in speaking it, since no AWS account is reachable). No Kubernetes API server can run
//! here: the applies stop at a cluster that refuses.

use std::path::Path;
use std::process::Command;

use ferry_tests::k8s::{
    approve_in_order, create_install, example_app, helm, publish_image, publish_image_as, status,
};
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, RegistryServer, ferry, free_port, repo_root};

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
    let wf = create_install(&api, &server);
    // The sandbox, then the image: approved one by one; the chart then plans from the install's
    // copy of itself, with the install's copy of the image.
    approve_in_order(&api, &wf, &["sandbox", "nginx"]);
    let w = wait_until(&api, &wf, 120, "the chart's plan to wait", |w| {
        status(w, "web", "approve") == "waiting" || name_of(&w.status) == "failed"
    });
    assert_eq!(
        name_of(&the_step(&w, "web", "plan").status),
        "succeeded",
        "{w:?}"
    );

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
    let installed = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    let outputs = &installed.components["nginx"].outputs["image"];
    assert_eq!(
        outputs["repository"],
        format!("{}/prod/nginx", installs.host),
        "{installed:?}"
    );
    assert_eq!(outputs["digest"], image.as_str(), "{installed:?}");
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

    // An app of one chart from that repository, besides the example's sandbox; the chart from
    // the OCI registry is an app of its own, so that one's apply failing at the cluster never
    // ends the other's workflow before its apply is tried.
    let app_of = |name: &str| {
        let app = dir.path().join(name);
        ferry_tests::copy_dir(&repo_root().join("examples/k8s"), &app);
        std::fs::remove_dir_all(app.join("components")).unwrap();
        std::fs::create_dir_all(app.join("components")).unwrap();
        app
    };
    let (app, oci_app) = (app_of("repo-app"), app_of("oci-app"));
    std::fs::write(
        app.join("components/site.toml"),
        format!(
            "name = \"site\"\ntype = \"helm_chart\"\nchart_name = \"site\"\n\n[helm_repo]\nrepo_url = \"{url}\"\nchart = \"web\"\nversion = \"0.1.0\"\n\n[values]\ngreeting = \"from a repository\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        oci_app.join("components/oci-site.toml"),
        format!(
            "name = \"oci-site\"\ntype = \"helm_chart\"\nchart_name = \"oci-site\"\n\n[helm_repo]\nrepo_url = \"oci://{}/charts\"\nchart = \"web\"\nversion = \"0.1.0\"\n",
            oci.host
        ),
    )
    .unwrap();

    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let cluster = format!("cluster_server=https://127.0.0.1:{}", free_port());
    let mut runners = Vec::new();
    let mut deploy = |app: &Path, install: &str| {
        let name = app.file_name().unwrap().to_str().unwrap();
        let (code, out, err) = ferry(
            &api,
            &["apps", "sync", app.to_str().unwrap(), "--name", name],
        );
        assert_eq!(code, 0, "{out}{err}");
        runners.push(Proc::runner(
            &nats.url,
            install,
            &dir.path().join(format!("runner-{install}")),
            dir.path().join(format!("runner-{install}.log")),
        ));
        let created = cli::<CreatedInstall>(
            &api,
            &[
                "installs",
                "create",
                "--app",
                name,
                "--name",
                install,
                "--approve-all",
                "--input",
                &cluster,
                "--input",
                "cluster_token=t",
                "--json",
            ],
        );
        created.workflow_id.as_str().to_string()
    };
    let (wf, oci_wf) = (deploy(&app, "prod"), deploy(&oci_app, "oci"));
    let ended = |wf: &str| {
        wait_until(&api, wf, 120, "the workflow to end", |w| {
            name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
        })
    };
    let (w, oci_w) = (ended(&wf), ended(&oci_wf));
    let _ = server.kill();
    let _ = server.wait();
    let plan = the_step(&w, "site", "plan")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        plan.starts_with(
            "Plan: 3 to add, 0 to change, 0 to destroy. (release `site` in namespace `prod`)"
        ),
        "{w:?}"
    );
    let (_, diff, _) = ferry(&api, &["workflows", "get", &wf, "--diff"]);
    assert!(
        diff.contains("data.index.html = \"from a repository\""),
        "{diff}"
    );
    assert!(diff.contains("+ Deployment/prod/site"), "{diff}");
    // The chart from the OCI registry, pulled by reference.
    let oci_plan = the_step(&oci_w, "oci-site", "plan")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        oci_plan.starts_with("Plan: 3 to add, 0 to change, 0 to destroy. (release `oci-site`"),
        "{oci_w:?}"
    );
    let (_, oci_diff, _) = ferry(&api, &["workflows", "get", &oci_wf, "--diff"]);
    assert!(oci_diff.contains("+ Deployment/oci/oci-site"), "{oci_diff}");
    // Applied from the plan's copy of the chart (the repository is gone by now): it fails only
    // at the cluster.
    let apply = the_step(&w, "site", "apply")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        apply.contains("helm upgrade --install of release `site`")
            && apply.contains("connection refused"),
        "{apply}"
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
    let wf = create_install(&api, "https://127.0.0.1:1");
    approve_in_order(&api, &wf, &["sandbox", "nginx"]);
    let w = wait_until(&api, &wf, 120, "the image's apply", |w| {
        status(w, "nginx", "apply") == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(
        name_of(&the_step(&w, "nginx", "apply").status),
        "succeeded",
        "{w:?}"
    );
    let installed = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(
        installed.components["nginx"].outputs["image"]["digest"],
        image.as_str(),
        "{installed:?}"
    );
    assert_eq!(
        installed.components["nginx"].outputs["image"]["repository"],
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
    let w = wait_until(&api, &wf, 120, "the chart's plan", |w| {
        status(w, "web", "approve") == "waiting" || name_of(&w.status) == "failed"
    });
    assert_eq!(
        name_of(&the_step(&w, "web", "plan").status),
        "succeeded",
        "{w:?}"
    );
}
