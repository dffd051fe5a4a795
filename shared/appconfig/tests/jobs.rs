//! Job specs made from the example app and an install's records, as the scheduler sends them:
//! templates rendered against the install, the plugin each type maps to, what a teardown
//! destroys, an action step's environment and its break-glass grant at a fixed time.

use std::path::Path;

use ferry_appconfig::jobs::{
    action_job, component_job, component_kind, config_of_step, execution_timeout, needs_cluster,
    teardown_artifact,
};
use ferry_appconfig::operations::Operation;
use ferry_appconfig::{AppConfig, ComponentType, Package, load};
use ferry_model::{self as m, Install, StepKind, Workflow, WorkflowKind};
use ferry_protocol::messages::ComponentKind;
use serde_json::json;

const T0: &str = "2026-11-27T10:00:00.000Z";
const NOW_MS: u64 = 1_795_000_000_000;

fn hello() -> AppConfig {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello");
    load(&Package::from_dir(&dir).unwrap()).unwrap()
}

/// Install `prod` of hello with greeter deployed (its outputs), a sensitive input and a
/// sensitive output.
fn install() -> Install {
    let mut i: Install = serde_json::from_value(json!({
        "org": "o", "name": "prod", "app": "hello", "app_config_id": "c1",
        "inputs": { "greeting": "bonjour-secret" }, "sensitive_inputs": ["greeting"],
        "approve_all": false, "status": "active",
        "sandbox": { "status": "active", "outputs": { "root": "/srv/prod" } },
        "components": {
            "greeter": { "status": "active", "outputs": { "message": "bonjour", "file": "/srv/prod/g",
                "token": "tok-123456" }, "sensitive_outputs": ["token"],
                "artifact_digest": "sha256:g1", "config_id": "c0", "applied_digest": "sha256:p0" }
        },
        "last_workflow": null, "created_at": T0, "updated_at": T0
    }))
    .unwrap();
    i.components.get_mut("greeter").unwrap().last_job = None;
    i
}

#[test]
fn a_component_job_renders_its_templates_against_the_install() {
    let job = component_job(
        &hello(),
        &install(),
        "counter",
        "sha256:c".into(),
        Operation::Deploy,
    )
    .unwrap();
    assert_eq!(job.kind, ComponentKind::Terraform);
    assert_eq!(job.artifact_digest, "sha256:c");
    assert_eq!(
        job.vars,
        vec![("message".to_string(), "bonjour".to_string())]
    );
    assert_eq!(job.applied_digest, None);
    assert!(job.cluster.is_none());
}

#[test]
fn a_component_job_carries_what_its_log_must_mask_and_what_was_applied() {
    let job = component_job(
        &hello(),
        &install(),
        "greeter",
        "sha256:g2".into(),
        Operation::Deploy,
    )
    .unwrap();
    assert_eq!(job.kind, ComponentKind::Script);
    assert!(
        job.redact.contains(&"bonjour-secret".to_string()),
        "{:?}",
        job.redact
    );
    assert!(job.redact.contains(&"tok-123456".to_string()));
    assert!(
        job.env
            .contains(&("GREETING".to_string(), "bonjour-secret".to_string())),
        "{:?}",
        job.env
    );
    assert_eq!(job.applied_digest.as_deref(), Some("sha256:p0"));
}

#[test]
fn a_component_not_in_the_config_cannot_be_a_job() {
    let e = component_job(
        &hello(),
        &install(),
        "ghost",
        "sha256:x".into(),
        Operation::Deploy,
    )
    .unwrap_err();
    assert_eq!(e, "component `ghost` is not in the app config");
}

#[test]
fn each_deployable_type_maps_to_its_plugin_and_the_cluster_kinds_are_known() {
    use ComponentType as T;
    let table = [
        (T::Script, ComponentKind::Script, false),
        (T::TerraformModule, ComponentKind::Terraform, false),
        (T::HelmChart, ComponentKind::Helm, true),
        (
            T::KubernetesManifest,
            ComponentKind::KubernetesManifest,
            true,
        ),
        (T::ContainerImage, ComponentKind::ContainerImage, false),
        (T::Job, ComponentKind::Job, true),
    ];
    for (t, kind, cluster) in table {
        assert_eq!(component_kind(t), Some(kind), "{t:?}");
        assert_eq!(needs_cluster(t), cluster, "{t:?}");
    }
    assert_eq!(ComponentKind::ALL.len(), table.len());
}

fn workflow(kind: WorkflowKind) -> Workflow {
    Workflow::requested(
        "w".into(),
        "o",
        "prod",
        kind,
        "c1",
        Default::default(),
        m::Timestamp::parse(T0).unwrap_or_default(),
    )
}

fn step(kind: StepKind, component: &str) -> m::Step {
    let w = Workflow::deploy(
        "w".into(),
        "o".into(),
        "prod".into(),
        WorkflowKind::DeployComponents,
        "c1".into(),
        &[vec![m::Deployable::named(component, &[])]],
    );
    let mut s = w.steps.into_iter().next().unwrap();
    s.kind = kind;
    s
}

#[test]
fn a_teardown_runs_with_the_config_and_artifact_its_component_was_deployed_with() {
    let i = install();
    let wf = workflow(WorkflowKind::Teardown);
    assert_eq!(
        config_of_step(&i, &wf, &step(StepKind::Teardown, "greeter")),
        "c0"
    );
    assert_eq!(
        config_of_step(&i, &wf, &step(StepKind::Plan, "greeter")),
        "c1"
    );
    // Never deployed: the workflow's config, and nothing to destroy.
    assert_eq!(
        config_of_step(&i, &wf, &step(StepKind::Teardown, "counter")),
        "c1"
    );
    assert_eq!(teardown_artifact(&i, "greeter").unwrap(), "sha256:g1");
    assert_eq!(
        teardown_artifact(&i, "counter").unwrap_err(),
        "`counter` has no deployed artifact to tear down"
    );
}

/// The first step of a manual run of hello's `greeting_check` with `inputs`.
fn action_step(inputs: &[(&str, &str)]) -> (Workflow, m::Step) {
    let mut wf = workflow(WorkflowKind::Action);
    wf.run = Some(m::ActionRun {
        action: "greeting_check".into(),
        trigger: "manual".into(),
        inputs: inputs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    });
    let wf = wf.action_run("greeting_check", &["read".into(), "report".into()]);
    let s = wf.steps[0].clone();
    (wf, s)
}

#[test]
fn an_action_step_renders_its_env_and_takes_the_runs_inputs_or_their_defaults() {
    let (wf, s) = action_step(&[]);
    let job = action_job(&hello(), &install(), &wf, &s, NOW_MS).unwrap();
    assert_eq!(
        (job.action.as_str(), job.step.as_str()),
        ("greeting_check", "read")
    );
    assert_eq!(job.trigger, "manual");
    assert!(job.command.is_some() && job.script.is_none());
    assert!(
        job.env.contains(&("FILE".into(), "/srv/prod/g".into())),
        "{:?}",
        job.env
    );
    assert!(
        job.env.contains(&("TIMES".into(), "1".into())),
        "{:?}",
        job.env
    );
    let (wf, s) = action_step(&[("TIMES", "3")]);
    let job = action_job(&hello(), &install(), &wf, &s, NOW_MS).unwrap();
    assert!(
        job.env.contains(&("TIMES".into(), "3".into())),
        "{:?}",
        job.env
    );
    assert_eq!(
        execution_timeout(&hello(), m::JobKind::Action, "greeting_check"),
        Some(60)
    );
}

#[test]
fn an_action_not_in_the_config_cannot_be_a_job() {
    let (wf, mut s) = action_step(&[]);
    s.component = "ghost".into();
    let e = action_job(&hello(), &install(), &wf, &s, NOW_MS).unwrap_err();
    assert_eq!(e, "action `ghost` is not in app config c1");
}

#[test]
fn a_break_glass_grant_travels_only_while_it_holds() {
    let mut cfg = hello();
    cfg.actions[0].break_glass_role = Some("admin".into());
    let mut i = install();
    i.break_glass.insert(
        "admin".into(),
        m::BreakGlassGrant {
            by: "token:ops".into(),
            granted_at: T0.into(),
            until_ms: NOW_MS + 1,
        },
    );
    let (wf, s) = action_step(&[]);
    let held = action_job(&cfg, &i, &wf, &s, NOW_MS).unwrap();
    assert_eq!(held.break_glass_role.as_deref(), Some("admin"));
    assert_eq!(held.api_grant.map(|g| g.by), Some("token:ops".to_string()));
    let ended = action_job(&cfg, &i, &wf, &s, NOW_MS + 1).unwrap();
    assert!(ended.api_grant.is_none());
}
