//! Least privilege per operation: which role of the customer's account each job runs as, decided
//! from the app's declarations (examples/aws-account, and that app with `operation_roles`).

use crate::common;

use std::path::Path;

use ferry_appconfig::operations::{Operation, principal, role_for, run_as};
use ferry_appconfig::state::Facts;
use ferry_appconfig::{AppConfig, Package, load};
use ferry_model::{Step, StepKind, WorkflowKind};
use serde_json::Value;

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/aws-account")
}

fn load_dir(dir: &Path) -> AppConfig {
    load(&Package::from_dir(dir).unwrap()).unwrap()
}

/// examples/aws-account with `extra` files added (path, contents).
fn with(extra: &[(&str, &str)]) -> AppConfig {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&example(), dir.path());
    for (path, text) in extra {
        let at = dir.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    load_dir(dir.path())
}

fn state(cfg: &AppConfig) -> Value {
    cfg.template_state(&Facts {
        org: "o",
        app: "aws-account",
        install: "acme",
        ..Default::default()
    })
}

fn step(kind: StepKind, component: &str) -> Step {
    serde_json::from_value(serde_json::json!({
        "index": 0, "group": 0, "component": component, "kind": kind, "status": "pending",
        "after": [], "job_id": null, "build_id": null, "approval_id": null, "actor": null,
        "started_at": null, "finished_at": null, "message": null
    }))
    .unwrap()
}

fn role_of(cfg: &AppConfig, principal: &str, op: Operation) -> Option<String> {
    role_for(cfg, principal, op).map(|r| r.name.clone())
}

#[test]
fn each_step_serves_its_operation() {
    use Operation::*;
    let cases = [
        (
            WorkflowKind::Provision,
            StepKind::Apply,
            "sandbox",
            Some(Provision),
        ),
        (
            WorkflowKind::Provision,
            StepKind::Plan,
            "sandbox",
            Some(Provision),
        ),
        (
            WorkflowKind::Runbook,
            StepKind::Apply,
            "sandbox",
            Some(Reprovision),
        ),
        (
            WorkflowKind::Provision,
            StepKind::Apply,
            "web",
            Some(Deploy),
        ),
        (
            WorkflowKind::DeployComponents,
            StepKind::Plan,
            "web",
            Some(Deploy),
        ),
        (
            WorkflowKind::DriftCheck,
            StepKind::Plan,
            "web",
            Some(Deploy),
        ),
        (
            WorkflowKind::Teardown,
            StepKind::Teardown,
            "web",
            Some(Teardown),
        ),
        (
            WorkflowKind::Teardown,
            StepKind::Teardown,
            "sandbox",
            Some(Deprovision),
        ),
        (
            WorkflowKind::Action,
            StepKind::Action,
            "migrate",
            Some(Trigger),
        ),
        (WorkflowKind::DeployComponents, StepKind::Build, "web", None),
        (WorkflowKind::DeployComponents, StepKind::Sync, "web", None),
        (
            WorkflowKind::DeployComponents,
            StepKind::Approve,
            "web",
            None,
        ),
    ];
    for (wf, kind, component, want) in cases {
        assert_eq!(
            Operation::of_step(wf, &step(kind, component)),
            want,
            "{wf:?} {kind:?} {component}"
        );
    }
}

#[test]
fn each_operation_defaults_to_the_role_of_its_use() {
    let cfg = load_dir(&example());
    let web = principal(StepKind::Plan, "whoami");
    let sandbox = principal(StepKind::Plan, "sandbox");
    assert_eq!(sandbox, "nuon::sandbox");
    let name = |p: &str, op| role_of(&cfg, p, op).unwrap();
    let id = "{{.nuon.install.id}}";
    assert_eq!(
        name(&sandbox, Operation::Provision),
        format!("{id}-provision")
    );
    assert_eq!(
        name(&sandbox, Operation::Reprovision),
        format!("{id}-provision")
    );
    assert_eq!(name(&web, Operation::Deploy), format!("{id}-maintenance"));
    assert_eq!(
        name("nuon::action:x", Operation::Trigger),
        format!("{id}-maintenance")
    );
    assert_eq!(name(&web, Operation::Teardown), format!("{id}-deprovision"));
    assert_eq!(
        name(&sandbox, Operation::Deprovision),
        format!("{id}-deprovision")
    );
}

#[test]
fn an_app_without_roles_runs_its_jobs_with_none() {
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello");
    let cfg = load_dir(&hello);
    let s = state(&cfg);
    let r = run_as(&cfg, &s, "nuon::sandbox", Operation::Provision, None).unwrap();
    assert_eq!(r, None);
}

#[test]
fn the_job_carries_the_rendered_role_and_its_stack_output() {
    let cfg = load_dir(&example());
    let s = state(&cfg);
    let r = run_as(&cfg, &s, "nuon::component:whoami", Operation::Deploy, None)
        .unwrap()
        .unwrap();
    assert_eq!(r.role, "acme-maintenance");
    assert_eq!(r.output.as_deref(), Some("maintenance_iam_role_arn"));
    assert_eq!(r.operation, "deploy");
    assert!(!r.break_glass);
    let bg = run_as(
        &cfg,
        &s,
        "nuon::action:fix",
        Operation::Trigger,
        Some("{{.nuon.install.id}}-break-glass"),
    )
    .unwrap()
    .unwrap();
    assert_eq!(bg.role, "acme-break-glass");
    assert_eq!(
        bg.output.as_deref(),
        Some("break_glass_role_arns.acme-break-glass")
    );
    assert!(bg.break_glass);
    // Named but not declared: the job names it, with no stack output to find it by.
    let ghost = run_as(
        &cfg,
        &s,
        "nuon::action:fix",
        Operation::Trigger,
        Some("ghost-{{.nuon.install.id}}"),
    )
    .unwrap()
    .unwrap();
    assert_eq!((ghost.role.as_str(), ghost.output), ("ghost-acme", None));
}

#[test]
fn rules_name_roles_the_component_first_then_the_matrix_by_name_then_by_star() {
    let custom = r#"type = "custom"
name = "{{.nuon.install.id}}-reader"
[[policies]]
managed_policy_name = "ReadOnlyAccess"
"#;
    let rules = r#"type = "matrix"
[[rules]]
principal = "nuon::component:*"
operation = "deploy"
role = "{{.nuon.install.id}}-deprovision"

[[rules]]
principal = "nuon::component:whoami"
operation = "deploy"
role = "{{.nuon.install.id}}-reader"

[[rules]]
principal = "nuon::action:*"
operation = "trigger"
role = "{{.nuon.install.id}}-reader"
"#;
    let cfg = with(&[
        ("permissions/reader.toml", custom),
        ("operation_roles.toml", rules),
    ]);
    let id = "{{.nuon.install.id}}";
    let name = |p: &str, op| role_of(&cfg, p, op).unwrap();
    assert_eq!(
        name("nuon::component:whoami", Operation::Deploy),
        format!("{id}-reader")
    );
    assert_eq!(
        name("nuon::component:other", Operation::Deploy),
        format!("{id}-deprovision")
    );
    assert_eq!(
        name("nuon::action:any", Operation::Trigger),
        format!("{id}-reader")
    );
    // No rule for teardown: the default.
    assert_eq!(
        name("nuon::component:whoami", Operation::Teardown),
        format!("{id}-deprovision")
    );
    let r = run_as(
        &cfg,
        &state(&cfg),
        "nuon::component:whoami",
        Operation::Deploy,
        None,
    )
    .unwrap()
    .unwrap();
    assert_eq!(r.output.as_deref(), Some("custom_role_arns.acme-reader"));

    // The component's own operation_roles come before the matrix.
    let own = std::fs::read_to_string(example().join("components/whoami.toml")).unwrap()
        + "\n[[operation_roles]]\noperation = \"deploy\"\nrole = \"{{.nuon.install.id}}-provision\"\n";
    let cfg = with(&[
        ("permissions/reader.toml", custom),
        ("operation_roles.toml", rules),
        ("components/whoami.toml", &own),
    ]);
    assert_eq!(
        role_of(&cfg, "nuon::component:whoami", Operation::Deploy).unwrap(),
        format!("{id}-provision")
    );
}
