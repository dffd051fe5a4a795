//! What each kind of job's end does to its install and its step, at fixed times.

use super::*;
use crate::time::at;
use crate::{ActionStepEnd, SANDBOX};

const T0: &str = "2026-11-27T10:00:00.000Z";
const NOW: &str = "2026-11-27T10:05:00.000Z";

fn install() -> Install {
    Install {
        org: "o".into(),
        name: "i".into(),
        app: "a".into(),
        app_config_id: "c1".into(),
        inputs: Default::default(),
        sensitive_inputs: vec![],
        approve_all: false,
        status: InstallStatus::Provisioning,
        sandbox: ComponentState::default(),
        components: Default::default(),
        last_workflow: Some("w".into()),
        created_at: T0.into(),
        updated_at: T0.into(),
        actions: Default::default(),
        break_glass: Default::default(),
        labels: Default::default(),
        approvals_by: Default::default(),
        install_stack: None,
        stack_template: None,
    }
}

fn job(kind: JobKind, status: JobStatus) -> Job {
    let mut j = Job::queued(
        "j".into(),
        "o".into(),
        "i".into(),
        "w".into(),
        3,
        kind,
        "db".into(),
        at(T0),
    );
    j.status = status;
    if status.is_terminal() {
        j.finished_at = Some(NOW.into());
    }
    j
}

fn plan(changes: Option<bool>) -> Job {
    let mut j = job(JobKind::Plan, JobStatus::Finished);
    j.plan_changes = changes;
    j.plan_summary = Some("1 to change".into());
    j
}

fn deploy() -> JobContext {
    JobContext::default()
}

fn drift_check() -> JobContext {
    JobContext {
        drift_check: true,
        action_step: None,
    }
}

fn action_step(step: &str, last: bool) -> JobContext {
    JobContext {
        drift_check: false,
        action_step: Some(ActionStepEnd {
            step: step.into(),
            last,
        }),
    }
}

fn outputs(pairs: &[(&str, &str)]) -> crate::Outputs {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect()
}

fn status_of(i: &Install, c: &str) -> Option<ComponentStatus> {
    i.component(c).map(|c| c.status)
}

// --- The step's outcome --------------------------------------------------------------------

#[test]
fn a_plan_with_changes_succeeds_with_its_summary() {
    assert_eq!(
        plan(Some(true)).step_outcome(&deploy()),
        StepOutcome::Succeeded("1 to change".into())
    );
}

#[test]
fn a_plan_without_changes_ends_its_step_as_no_changes() {
    assert_eq!(
        plan(Some(false)).step_outcome(&deploy()),
        StepOutcome::NoChanges("1 to change".into())
    );
}

#[test]
fn a_plan_that_says_nothing_of_changes_is_taken_as_having_some() {
    assert!(matches!(
        plan(None).step_outcome(&deploy()),
        StepOutcome::Succeeded(_)
    ));
}

#[test]
fn a_failed_job_fails_its_step_with_its_error_or_its_status() {
    let mut j = job(JobKind::Apply, JobStatus::Failed);
    assert_eq!(
        j.step_outcome(&deploy()),
        StepOutcome::Failed("job failed".into())
    );
    j.error = Some("exit 1".into());
    assert_eq!(
        j.step_outcome(&deploy()),
        StepOutcome::Failed("exit 1".into())
    );
    let t = job(JobKind::Sync, JobStatus::TimedOut);
    assert_eq!(
        t.step_outcome(&deploy()),
        StepOutcome::Failed("job timed_out".into())
    );
}

#[test]
fn a_cancelled_or_unattempted_job_cancels_its_step() {
    for s in [JobStatus::Cancelled, JobStatus::NotAttempted] {
        assert!(matches!(
            job(JobKind::Plan, s).step_outcome(&deploy()),
            StepOutcome::Cancelled(_)
        ));
    }
}

#[test]
fn each_finished_kind_says_what_it_did() {
    let said = |k| job(k, JobStatus::Finished).step_outcome(&deploy());
    assert_eq!(
        said(JobKind::Sync),
        StepOutcome::Succeeded("artifact synced to the install".into())
    );
    assert_eq!(
        said(JobKind::Teardown),
        StepOutcome::Succeeded("torn down".into())
    );
    assert_eq!(
        said(JobKind::Apply),
        StepOutcome::Succeeded("applied".into())
    );
}

#[test]
fn an_action_step_says_which_step_ran_or_just_ran_when_its_workflow_is_gone() {
    let j = job(JobKind::Action, JobStatus::Finished);
    assert_eq!(
        j.step_outcome(&action_step("migrate", false)),
        StepOutcome::Succeeded("step `migrate` ran".into())
    );
    assert_eq!(
        j.step_outcome(&deploy()),
        StepOutcome::Succeeded("ran".into())
    );
}

#[test]
fn a_drift_checks_plan_succeeds_either_way_and_says_which() {
    assert_eq!(
        plan(Some(true)).step_outcome(&drift_check()),
        StepOutcome::Succeeded("drifted: 1 to change".into())
    );
    assert_eq!(
        plan(Some(false)).step_outcome(&drift_check()),
        StepOutcome::Succeeded("in sync: 1 to change".into())
    );
}

#[test]
fn a_failed_drift_check_says_the_check_failed() {
    let mut j = job(JobKind::Plan, JobStatus::Failed);
    j.error = Some("no credentials".into());
    assert_eq!(
        j.step_outcome(&drift_check()),
        StepOutcome::Failed("check failed: no credentials".into())
    );
    let c = job(JobKind::Plan, JobStatus::Cancelled);
    assert_eq!(
        c.step_outcome(&drift_check()),
        StepOutcome::Cancelled("check failed: cancelled".into())
    );
}

#[test]
fn only_a_plan_of_a_drift_check_is_judged_as_drift() {
    // The check's build and sync end as they would in a deploy.
    let s = job(JobKind::Sync, JobStatus::Finished);
    assert_eq!(s.step_outcome(&drift_check()), s.step_outcome(&deploy()));
}

// --- The install ----------------------------------------------------------------------------

#[test]
fn a_failed_plan_or_apply_fails_its_component_and_remembers_the_job() {
    for k in [JobKind::Plan, JobKind::Apply] {
        let mut i = install();
        let r = i.job_ended(&job(k, JobStatus::Failed), &deploy(), at(NOW));
        assert!(r.changed);
        let c = i.component("db").unwrap();
        assert_eq!(c.status, ComponentStatus::Failed);
        assert_eq!(c.last_job.as_deref(), Some("j"));
        assert_eq!(c.updated_at.as_deref(), Some(NOW));
        assert_eq!(i.updated_at, NOW);
    }
}

#[test]
fn a_plan_without_changes_leaves_its_component_active() {
    let mut i = install();
    i.component_mut("db").status = ComponentStatus::Deploying;
    assert!(i.job_ended(&plan(Some(false)), &deploy(), at(NOW)).changed);
    assert_eq!(status_of(&i, "db"), Some(ComponentStatus::Active));
}

#[test]
fn a_plan_with_changes_leaves_the_component_deploying() {
    let mut i = install();
    i.component_mut("db").status = ComponentStatus::Deploying;
    assert!(!i.job_ended(&plan(Some(true)), &deploy(), at(NOW)).changed);
    assert_eq!(status_of(&i, "db"), Some(ComponentStatus::Deploying));
    assert_eq!(i.updated_at, T0);
}

#[test]
fn an_apply_records_outputs_and_the_applied_plan_and_clears_drift() {
    let mut i = install();
    i.component_mut("db").drift = Some(Drift {
        checked_at: T0.into(),
        workflow: "check".into(),
        drifted: true,
        summary: "1 to change".into(),
    });
    let mut j = job(JobKind::Apply, JobStatus::Finished);
    j.outputs = outputs(&[("host", "db.internal"), ("password", "hunter22")]);
    j.sensitive_outputs = vec!["password".into()];
    j.plan_digest = Some("sha256:p".into());
    assert!(i.job_ended(&j, &deploy(), at(NOW)).changed);
    let c = i.component("db").unwrap();
    assert_eq!(c.status, ComponentStatus::Active);
    assert_eq!(c.drift, None);
    assert_eq!(c.outputs, j.outputs);
    assert_eq!(c.sensitive_outputs, ["password"]);
    assert_eq!(c.applied_digest.as_deref(), Some("sha256:p"));
    assert!(i.drifted().is_empty());
}

#[test]
fn an_apply_without_a_plan_keeps_the_digest_applied_before() {
    let mut i = install();
    i.component_mut("db").applied_digest = Some("sha256:old".into());
    i.job_ended(
        &job(JobKind::Apply, JobStatus::Finished),
        &deploy(),
        at(NOW),
    );
    assert_eq!(
        i.component("db").unwrap().applied_digest.as_deref(),
        Some("sha256:old")
    );
}

#[test]
fn the_same_result_twice_changes_the_install_once() {
    let mut i = install();
    let j = job(JobKind::Apply, JobStatus::Finished);
    assert!(i.job_ended(&j, &deploy(), at(NOW)).changed);
    let after = i.clone();
    assert!(
        !i.job_ended(&j, &deploy(), at("2026-11-27T11:00:00.000Z"))
            .changed
    );
    assert_eq!(i, after);
}

#[test]
fn a_teardown_removes_its_component() {
    let mut i = install();
    i.component_mut("db").artifact_digest = Some("sha256:a".into());
    i.component_mut("web").artifact_digest = Some("sha256:b".into());
    assert!(
        i.job_ended(
            &job(JobKind::Teardown, JobStatus::Finished),
            &deploy(),
            at(NOW)
        )
        .changed
    );
    assert!(i.component("db").is_none());
    assert!(i.component("web").is_some());
    // Again: nothing left to remove.
    assert!(
        !i.job_ended(
            &job(JobKind::Teardown, JobStatus::Finished),
            &deploy(),
            at(NOW)
        )
        .changed
    );
}

#[test]
fn a_teardown_of_the_sandbox_empties_it() {
    let mut i = install();
    i.sandbox.outputs = outputs(&[("cluster", "c")]);
    i.sandbox.artifact_digest = Some("sha256:s".into());
    let mut j = job(JobKind::Teardown, JobStatus::Finished);
    j.component = SANDBOX.into();
    assert!(i.job_ended(&j, &deploy(), at(NOW)).changed);
    assert_eq!(i.sandbox, ComponentState::default());
}

#[test]
fn a_failed_teardown_or_sync_leaves_the_install_as_it_is() {
    for k in [JobKind::Teardown, JobKind::Sync] {
        let mut i = install();
        i.component_mut("db").status = ComponentStatus::Active;
        let before = i.clone();
        assert!(
            !i.job_ended(&job(k, JobStatus::Failed), &deploy(), at(NOW))
                .changed
        );
        assert_eq!(i, before);
    }
}

#[test]
fn an_action_step_records_its_outputs_and_the_run_ends_with_the_last_step() {
    let mut i = install();
    let mut j = job(JobKind::Action, JobStatus::Finished);
    j.component = "backup".into();
    j.outputs = outputs(&[("path", "s3://b/1")]);
    assert!(
        i.job_ended(&j, &action_step("dump", false), at(NOW))
            .changed
    );
    let run = &i.actions["backup"];
    assert_eq!(run.status, "running");
    assert_eq!(run.workflow, "w");
    assert_eq!(run.outputs["path"], "s3://b/1");
    assert_eq!(run.outputs["steps"]["dump"]["path"], "s3://b/1");
    assert!(
        i.job_ended(&j, &action_step("upload", true), at(NOW))
            .changed
    );
    assert_eq!(i.actions["backup"].status, "succeeded");
}

#[test]
fn a_failed_action_step_fails_the_run() {
    let mut i = install();
    let mut j = job(JobKind::Action, JobStatus::Failed);
    j.component = "backup".into();
    assert!(
        i.job_ended(&j, &action_step("dump", false), at(NOW))
            .changed
    );
    assert_eq!(i.actions["backup"].status, "failed");
    assert_eq!(i.actions["backup"].updated_at, NOW);
}

#[test]
fn an_action_job_whose_workflow_is_gone_changes_nothing() {
    let mut i = install();
    let before = i.clone();
    let r = i.job_ended(
        &job(JobKind::Action, JobStatus::Finished),
        &deploy(),
        at(NOW),
    );
    assert!(!r.changed);
    assert_eq!(i, before);
}

// --- Drift ----------------------------------------------------------------------------------

#[test]
fn a_check_with_changes_marks_the_component_drifted_once() {
    let mut i = install();
    i.component_mut("db").status = ComponentStatus::Active;
    let r = i.job_ended(&plan(Some(true)), &drift_check(), at(NOW));
    assert_eq!(
        r,
        InstallChanged {
            changed: true,
            newly_drifted: true
        }
    );
    let d = i.component("db").unwrap().drift.clone().unwrap();
    assert!(d.drifted);
    assert_eq!((d.workflow.as_str(), d.checked_at.as_str()), ("w", NOW));
    assert_eq!(d.summary, "1 to change");
    // A check deploys nothing: the status stays.
    assert_eq!(status_of(&i, "db"), Some(ComponentStatus::Active));
    assert_eq!(i.drifted(), ["db"]);
}

#[test]
fn a_later_check_finding_the_same_drift_is_not_news() {
    let mut i = install();
    i.job_ended(&plan(Some(true)), &drift_check(), at(T0));
    let mut again = plan(Some(true));
    again.workflow_id = "w2".into();
    let r = i.job_ended(&again, &drift_check(), at(NOW));
    assert!(r.changed);
    assert!(!r.newly_drifted);
}

#[test]
fn the_same_checks_result_repeated_says_it_again() {
    // The audit record it leads to is the same one: the bus keeps it once.
    let mut i = install();
    i.job_ended(&plan(Some(true)), &drift_check(), at(NOW));
    assert!(
        i.job_ended(&plan(Some(true)), &drift_check(), at(NOW))
            .newly_drifted
    );
}

#[test]
fn a_check_without_changes_clears_the_drift() {
    let mut i = install();
    i.job_ended(&plan(Some(true)), &drift_check(), at(T0));
    let mut clean = plan(Some(false));
    clean.workflow_id = "w2".into();
    let r = i.job_ended(&clean, &drift_check(), at(NOW));
    assert!(!r.newly_drifted);
    assert!(i.drifted().is_empty());
    assert_eq!(
        i.component("db").unwrap().drift.as_ref().unwrap().workflow,
        "w2"
    );
}

#[test]
fn a_failed_check_is_recorded_as_failed_not_as_drift() {
    let mut i = install();
    let mut j = job(JobKind::Plan, JobStatus::Failed);
    j.error = Some("no credentials".into());
    let r = i.job_ended(&j, &drift_check(), at(NOW));
    assert!(!r.newly_drifted);
    let d = i.component("db").unwrap().drift.clone().unwrap();
    assert!(!d.drifted);
    assert_eq!(d.summary, "check failed: no credentials");
    // Unlike a deploy's failed plan, the component is not failed.
    assert_ne!(status_of(&i, "db"), Some(ComponentStatus::Failed));
}

#[test]
fn a_skipped_check_says_why_and_keeps_what_was_found() {
    let mut i = install();
    i.job_ended(&plan(Some(true)), &drift_check(), at(T0));
    i.drift_skipped("db", "deploy-1", at(NOW));
    let d = i.component("db").unwrap().drift.clone().unwrap();
    assert!(d.drifted);
    assert_eq!(d.workflow, "deploy-1");
    assert_eq!(d.summary, "check skipped: workflow deploy-1 is in progress");
    assert_eq!(d.checked_at, NOW);
}

// --- Workflows ends and step starts -----------------------------------------------------------

fn ended(kind: WorkflowKind, status: WorkflowStatus) -> Workflow {
    let mut w = Workflow::requested("w".into(), "o", "i", kind, "c1", Default::default(), at(T0));
    w.status = status;
    w
}

#[test]
fn a_deploy_leaves_the_install_active_failed_or_cancelled() {
    let mut i = install();
    assert!(i.workflow_ended(
        &ended(WorkflowKind::Provision, WorkflowStatus::Succeeded),
        at(NOW)
    ));
    assert_eq!(i.status, InstallStatus::Active);
    assert_eq!(i.updated_at, NOW);
    for (s, want) in [
        (WorkflowStatus::Failed, InstallStatus::Failed),
        (WorkflowStatus::Cancelled, InstallStatus::Cancelled),
    ] {
        let mut i = install();
        i.workflow_ended(&ended(WorkflowKind::DeployComponents, s), at(NOW));
        assert_eq!(i.status, want);
    }
}

#[test]
fn an_install_says_what_its_running_workflow_does() {
    for (kind, want) in [
        (WorkflowKind::Provision, Some(InstallStatus::Provisioning)),
        (
            WorkflowKind::DeployComponents,
            Some(InstallStatus::Deploying),
        ),
        (WorkflowKind::Runbook, Some(InstallStatus::Deploying)),
        (WorkflowKind::Teardown, Some(InstallStatus::TearingDown)),
        (WorkflowKind::Action, None),
        (WorkflowKind::DriftCheck, None),
    ] {
        assert_eq!(kind.install_status_while_running(), want, "{kind:?}");
        assert_eq!(kind.sets_install_status(), want.is_some(), "{kind:?}");
    }
    let names = InstallStatus::labels();
    for s in InstallStatus::ALL {
        let json = serde_json::to_value(s).unwrap();
        assert_eq!(json.as_str(), Some(s.label()), "one name for {s:?}");
    }
    assert_eq!(names.len(), InstallStatus::ALL.len());
}

#[test]
fn a_teardown_leaves_the_install_torn_down() {
    let mut i = install();
    i.workflow_ended(
        &ended(WorkflowKind::Teardown, WorkflowStatus::Succeeded),
        at(NOW),
    );
    assert_eq!(i.status, InstallStatus::TornDown);
}

#[test]
fn only_the_workflow_holding_the_install_sets_its_status() {
    let mut i = install();
    i.last_workflow = Some("other".into());
    assert!(!i.workflow_ended(
        &ended(WorkflowKind::Provision, WorkflowStatus::Failed),
        at(NOW)
    ));
    assert_eq!(i.status, InstallStatus::Provisioning);
}

#[test]
fn actions_and_drift_checks_leave_the_install_status_alone() {
    for k in [WorkflowKind::Action, WorkflowKind::DriftCheck] {
        let w = ended(k, WorkflowStatus::Failed);
        assert_eq!(w.install_status(), None);
        let mut i = install();
        assert!(!i.workflow_ended(&w, at(NOW)));
    }
}

#[test]
fn a_running_workflow_has_no_install_status_yet() {
    assert_eq!(
        ended(WorkflowKind::Provision, WorkflowStatus::Running).install_status(),
        None
    );
}

#[test]
fn a_plan_marks_its_component_deploying_once() {
    let mut i = install();
    assert!(i.deploying("db", at(NOW)));
    assert!(!i.deploying("db", at("2026-11-27T11:00:00.000Z")));
    let c = i.component("db").unwrap();
    assert_eq!(c.status, ComponentStatus::Deploying);
    assert_eq!(c.updated_at.as_deref(), Some(NOW));
}

#[test]
fn an_apply_records_the_artifact_and_config_a_teardown_will_use() {
    let mut i = install();
    assert!(i.applying("db", "sha256:a", "c2"));
    assert!(!i.applying("db", "sha256:a", "c2"));
    assert!(i.applying("db", "sha256:a", "c3"));
    let c = i.component("db").unwrap();
    assert_eq!(c.artifact_digest.as_deref(), Some("sha256:a"));
    assert_eq!(c.config_id.as_deref(), Some("c3"));
    assert!(i.has_deployed("db"));
}

#[test]
fn an_action_step_starting_marks_the_run_running() {
    let mut i = install();
    assert!(i.action_started("backup", "w", at(NOW)));
    assert!(!i.action_started("backup", "w", at("2026-11-27T11:00:00.000Z")));
    assert_eq!(i.actions["backup"].status, "running");
    assert_eq!(i.actions["backup"].updated_at, NOW);
}

#[test]
fn a_reservation_holds_only_if_nobody_took_the_install_meanwhile() {
    let mut i = install();
    assert!(!i.reserve(Some("someone-else"), "r1", "c2", at(NOW)));
    assert_eq!(i.last_workflow.as_deref(), Some("w"));
    assert!(i.reserve(Some("w"), "r1", "c2", at(NOW)));
    assert_eq!(i.last_workflow.as_deref(), Some("r1"));
    assert_eq!(i.app_config_id, "c2");
    assert_eq!(i.status, InstallStatus::Deploying, "a release deploys");
}

#[test]
fn scheduled_runs_wait_for_the_sandbox_and_stop_at_teardown() {
    let mut i = install();
    assert!(!i.runs_scheduled(), "provisioning, nothing deployed");
    i.sandbox.artifact_digest = Some("sha256:s".into());
    assert!(i.runs_scheduled(), "the sandbox is deployed");
    i.sandbox = ComponentState::default();
    i.status = InstallStatus::Active;
    assert!(i.runs_scheduled());
    i.status = InstallStatus::TornDown;
    assert!(!i.runs_scheduled());
}

#[test]
fn a_new_install_is_provisioning_and_reserved_for_its_first_workflow() {
    let req: crate::api::CreateInstall = serde_json::from_value(serde_json::json!({
        "name": "prod", "app": "shop", "inputs": { "db_password": "pw-123" },
        "approve_all": true, "labels": { "tier": "gold" }
    }))
    .unwrap();
    let i = Install::created("o", req, "c1", vec!["db_password".into()], "w1", at(NOW));
    assert_eq!(
        (i.org.as_str(), i.name.as_str(), i.app.as_str()),
        ("o", "prod", "shop")
    );
    assert_eq!(i.status, InstallStatus::Provisioning);
    assert_eq!(i.last_workflow.as_deref(), Some("w1"));
    assert_eq!((i.created_at.as_str(), i.updated_at.as_str()), (NOW, NOW));
    assert!(i.approve_all);
    assert_eq!(i.labels["tier"], "gold");
    assert_eq!(i.redacted().inputs["db_password"], crate::REDACTED);
}
