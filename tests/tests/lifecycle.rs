//! An install's life after its first deploy: teardown.

use ferry_tests::{NatsServer, copy_dir, ferry, ferry_json, repo_root, server_and_runner};

/// Syncs `app` and deploys it to install `prod` (approve-all), waiting until it is deployed.
fn deploy_prod(api: &str, app: &std::path::Path) {
    ferry_tests::sync_hello(api, app);
    let (code, out, err) = ferry(
        api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "prod",
            "--approve-all",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn teardown_destroys_in_reverse_deploy_order_then_the_sandbox() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    // Every component's teardown records its name, in order.
    let order = dir.path().join("torn-down");
    for c in ["greeter", "reporter"] {
        std::fs::write(
            app.join(format!("components/src/{c}/teardown.sh")),
            format!("#!/bin/sh\necho {c} >> {}\n", order.display()),
        )
        .unwrap();
    }
    deploy_prod(&api, &app);

    let (code, out, err) = ferry(&api, &["installs", "teardown", "prod", "--wait", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let wf: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(wf["kind"], "teardown");
    let steps: Vec<(&str, &str)> = wf["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["component"].as_str().unwrap(),
                s["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("reporter", "succeeded"),
            ("counter", "succeeded"),
            ("greeter", "succeeded"),
            ("sandbox", "succeeded")
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&order).unwrap(),
        "reporter\ngreeter\n"
    );
    let install = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(install["status"], "torn_down", "{install}");
    assert!(
        install["components"].as_object().unwrap().is_empty(),
        "{install}"
    );

    // Nothing left to tear down: the workflow fails and says why.
    let (code, _, err) = ferry(&api, &["installs", "teardown", "prod", "--wait"]);
    assert_eq!(code, 1);
    assert!(err.contains("nothing of this install is deployed"), "{err}");

    // Torn down, it can be deleted.
    let (code, out, err) = ferry(&api, &["installs", "delete", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = ferry(&api, &["installs", "get", "prod"]);
    assert_eq!(code, 1);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn inputs_are_updated_and_an_install_with_deployed_components_is_not_deleted_without_force() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = repo_root().join("examples/hello");
    deploy_prod(&api, &app);
    // New input values are checked, stored and deployed.
    let (code, _, err) = ferry(
        &api,
        &["installs", "update-inputs", "prod", "--input", "greting=hi"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("unknown input `greting`"), "{err}");
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "update-inputs",
            "prod",
            "--input",
            "greeting=hi",
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let install = ferry_json(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(install["inputs"]["greeting"], "hi");
    assert_eq!(
        install["components"]["greeter"]["outputs"]["message"],
        "hi, prod!"
    );

    let (code, _, err) = ferry(&api, &["installs", "delete", "prod"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("still has sandbox, counter, greeter, reporter deployed"),
        "{err}"
    );
    assert_eq!(
        ferry_json(&api, &["installs", "get", "prod", "--json"])["status"],
        "active"
    );
    let (code, out, err) = ferry(&api, &["installs", "delete", "prod", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
}
