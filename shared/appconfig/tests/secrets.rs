//! The install's secrets as the control plane knows them (examples/aws-account): their status
//! as the runner reported it renders in `.nuon.secrets.NAME`, and a required secret that is not
//! set stops a deploy, saying where the customer sets it; teardowns and installs whose runner
//! reports no stack are not held.

use std::collections::BTreeMap;
use std::path::Path;

use ferry_appconfig::jobs::{component_job, install_state, unset_secrets};
use ferry_appconfig::operations::Operation;
use ferry_appconfig::{AppConfig, Package, load};
use ferry_model::{Install, SecretState, StackState};
use serde_json::json;

fn app() -> AppConfig {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/aws-account");
    load(&Package::from_dir(&dir).unwrap()).unwrap()
}

fn install(secrets: Option<BTreeMap<String, SecretState>>) -> Install {
    let mut i: Install = serde_json::from_value(json!({
        "org": "o", "name": "acme", "app": "aws-account", "app_config_id": "c1", "inputs": {},
        "approve_all": false, "status": "active",
        "sandbox": { "status": "active", "outputs": { "root": "/srv/acme" } },
        "components": {}, "last_workflow": null,
        "created_at": "2026-11-27T10:00:00.000Z", "updated_at": "2026-11-27T10:00:00.000Z"
    }))
    .unwrap();
    i.install_stack = secrets.map(|secrets| StackState {
        stack_id: "arn:stack".into(),
        status: "CREATE_COMPLETE".into(),
        outputs: serde_json::from_value(json!({
            "maintenance_iam_role_arn": "arn:aws:iam::1:role/acme-maintenance"
        }))
        .unwrap(),
        reported_at: "2026-11-27T10:00:00.000Z".into(),
        secrets,
    });
    i
}

fn license(length: u64) -> BTreeMap<String, SecretState> {
    BTreeMap::from([(
        "license_key".to_string(),
        SecretState {
            arn: "arn:aws:secretsmanager:us-east-1:1:secret:acme/license_key-Ab".into(),
            timestamp: "2026-11-27T09:00:00Z".into(),
            length,
        },
    )])
}

#[test]
fn a_reported_secret_renders_its_status_never_a_value() {
    let cfg = app();
    let state = install_state(&cfg, &install(Some(license(7))));
    let s = &state["nuon"]["secrets"]["license_key"];
    assert_eq!(s["exists"], true);
    assert_eq!(s["length"], 7);
    assert_eq!(
        s["arn"],
        "arn:aws:secretsmanager:us-east-1:1:secret:acme/license_key-Ab"
    );
    assert_eq!(s["timestamp"], "2026-11-27T09:00:00Z");
    let missing = &state["nuon"]["secrets"]["db_password"];
    assert_eq!(
        (missing["exists"].clone(), missing["length"].clone()),
        (json!(false), json!(0))
    );
}

#[test]
fn a_required_secret_not_set_stops_a_deploy_and_says_where_to_set_it() {
    let cfg = app();
    for unset in [install(Some(BTreeMap::new())), install(Some(license(0)))] {
        let e = unset_secrets(&cfg, &unset).unwrap_err();
        assert!(e.contains("`license_key`"), "{e}");
        assert!(e.contains("`acme/license_key`"), "{e}");
        assert!(e.contains("`SecretLicenseKeyValue`"), "{e}");
        let job = component_job(&cfg, &unset, "whoami", "sha256:w".into(), Operation::Deploy);
        assert_eq!(job.unwrap_err(), e);
        // Tearing down is never held by a secret.
        let teardown = component_job(
            &cfg,
            &unset,
            "whoami",
            "sha256:w".into(),
            Operation::Teardown,
        );
        assert!(teardown.is_ok(), "{teardown:?}");
    }
    // Set (the optional, generated one may be missing), or no stack reported: deploys go on.
    assert_eq!(unset_secrets(&cfg, &install(Some(license(7)))), Ok(()));
    assert_eq!(unset_secrets(&cfg, &install(None)), Ok(()));
}

/// examples/k8s copies its API token into the install's namespace: each Kubernetes component's
/// job names the secret's place in the account and in the cluster (never a value); a component
/// outside the cluster names none.
#[test]
fn a_kubernetes_sync_secret_travels_as_where_it_is_and_where_it_goes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/k8s");
    let cfg = load(&Package::from_dir(&dir).unwrap()).unwrap();
    let prod = install(None);
    let state = install_state(
        &cfg,
        &Install {
            name: "prod".into(),
            ..prod
        },
    );
    let syncs = ferry_appconfig::jobs::secret_syncs(&cfg, &state, "prod").unwrap();
    assert_eq!(syncs.len(), 1);
    let s = &syncs[0];
    assert_eq!(
        (
            s.secret.as_str(),
            s.source.as_str(),
            s.namespace.as_str(),
            s.name.as_str(),
            s.key.as_str()
        ),
        (
            "api_token",
            "prod/api_token",
            "prod",
            "app-secrets",
            "api_token"
        )
    );
    assert!(!s.required && !s.base64);
    // aws-account's whoami is a script: nothing to sync.
    let job = component_job(
        &app(),
        &install(Some(license(7))),
        "whoami",
        "sha256:w".into(),
        Operation::Deploy,
    );
    assert!(job.unwrap().secret_syncs.is_empty());
}
