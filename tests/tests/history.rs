//! An install's history and rollback through the real system: each deploy with the config
//! version it ran, who asked and how it ended; a rollback deploys the config before (planned,
//! approved, applied like any deploy); `deploy --config` names one.

use ferry_model::api::HistoryEntry;
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, ferry};

#[test]
fn history_lists_each_deploy_and_rollback_deploys_the_config_before() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api, app) = ferry_tests::provisioned_hello(&nats, dir.path());
    let first = cli::<Install>(&api, &["installs", "get", "prod", "--json"]).app_config_id;

    // A second config version, deployed.
    let apply = app.join("components/src/greeter/apply.sh");
    let text = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(&apply, text.replacen("set -eu\n", "set -eu\necho v2\n", 1)).unwrap();
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry(&api, &["installs", "deploy", "prod", "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    let second = cli::<Install>(&api, &["installs", "get", "prod", "--json"]).app_config_id;
    assert_ne!(first, second);

    let history = cli::<Vec<HistoryEntry>>(&api, &["installs", "history", "prod", "--json"]);
    let configs: Vec<&str> = history.iter().map(|h| h.app_config_id.as_str()).collect();
    assert_eq!(
        configs,
        [second.as_str(), first.as_str()],
        "newest first: {history:?}"
    );
    assert!(history.iter().all(|h| h.by == "token:admin"), "{history:?}");
    assert!(history.iter().all(|h| name_of(&h.status) == "succeeded"));
    let (code, table, err) = ferry(&api, &["installs", "history", "prod"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("deploy-components") && table.contains("provision"),
        "{table}"
    );

    // Rolling back deploys the config before, as a deploy (its plans approved by approve-all).
    let (code, out, err) = ferry(&api, &["installs", "rollback", "prod", "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(&format!("back from config {second} to {first}")),
        "{err}"
    );
    let now = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    assert_eq!(now.app_config_id, first);
    assert_eq!(name_of(&now.status), "active");
    let history = cli::<Vec<HistoryEntry>>(&api, &["installs", "history", "prod", "--json"]);
    assert_eq!(history.len(), 3);
    assert_eq!(history[0].app_config_id, first);

    // A config that is not the app's is refused, and nothing starts.
    let (code, _, err) = ferry(&api, &["installs", "deploy", "prod", "--config", "01nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("has no config version `01nope`"), "{err}");
    assert_eq!(
        cli::<Vec<HistoryEntry>>(&api, &["installs", "history", "prod", "--json"]).len(),
        3
    );
    // Forward again by naming the config.
    let (code, out, err) = ferry(
        &api,
        &["installs", "deploy", "prod", "--config", &second, "--wait"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        cli::<Install>(&api, &["installs", "get", "prod", "--json"]).app_config_id,
        second
    );
    // A config version by its number, as `apps sync` prints it, wherever one is taken.
    let (code, out, err) = ferry(
        &api,
        &["installs", "deploy", "prod", "--config", "1", "--wait"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        cli::<Install>(&api, &["installs", "get", "prod", "--json"]).app_config_id,
        first
    );
    let (code, out, err) = ferry(
        &api,
        &["installs", "rollback", "prod", "--to", "v2", "--wait"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        cli::<Install>(&api, &["installs", "get", "prod", "--json"]).app_config_id,
        second
    );
    let (code, _, err) = ferry(&api, &["installs", "deploy", "prod", "--config", "v9"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("app `hello` has no config version `v9`"),
        "{err}"
    );
    let release: ferry_model::Release = cli(
        &api,
        &[
            "releases", "create", "--app", "hello", "--config", "v1", "--json",
        ],
    );
    assert_eq!(release.config_id, first);
}
