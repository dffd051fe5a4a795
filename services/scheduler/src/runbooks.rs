//! Runbooks: one workflow whose parts — component deploys and teardowns, the sandbox's
//! reprovision or deprovision, actions — run one after another, each laid out as the workflow of
//! its own kind would be (approvals where the install asks for them, hooks not included).

use ferry_appconfig::{AppConfig, RunbookStepKind};
use ferry_model::{self as m, Deployable, Workflow, WorkflowKind};

/// The steps of a runbook run, or why it cannot run.
pub(crate) fn lay_out_runbook(
    wf: &Workflow,
    cfg: &AppConfig,
    all: &[Vec<Deployable>],
) -> Result<Vec<m::Step>, String> {
    let name = wf.runbook.as_deref().unwrap_or_default();
    let Some(runbook) = cfg.runbook(name) else {
        return Err(format!("the app config has no runbook `{name}`"));
    };
    let blank = || Workflow {
        steps: vec![],
        ..wf.clone()
    };
    let deploy = |scope: m::DeployScope| -> Result<Vec<m::Step>, String> {
        let stages = scope.select(all)?;
        Ok(Workflow::deploy_scoped(
            wf.id.clone(),
            wf.org.clone(),
            wf.install.clone(),
            WorkflowKind::DeployComponents,
            wf.app_config_id.clone(),
            &stages,
            scope.plan_only,
        )
        .steps)
    };
    let teardown = |what: &str| {
        Workflow::teardown(
            wf.id.clone(),
            wf.org.clone(),
            wf.install.clone(),
            wf.app_config_id.clone(),
            &[vec![what.to_string()]],
        )
        .steps
    };
    let mut laid = blank();
    for step in &runbook.steps {
        let part = match &step.kind {
            RunbookStepKind::Deploy {
                component,
                dependents,
                plan_only,
            } => deploy(m::DeployScope {
                components: vec![component.clone()],
                with_dependents: *dependents,
                plan_only: *plan_only,
                ..Default::default()
            })?,
            RunbookStepKind::SandboxReprovision { skip_components } => deploy(m::DeployScope {
                components: vec![m::SANDBOX.into()],
                with_dependents: !skip_components,
                ..Default::default()
            })?,
            RunbookStepKind::SandboxDeprovision => teardown(m::SANDBOX),
            RunbookStepKind::ComponentTearDown { component } => teardown(component),
            RunbookStepKind::Action { action } => {
                let Some(a) = cfg.action(action) else {
                    return Err(format!("step `{}`: no action `{action}`", step.name));
                };
                let names: Vec<String> = a.steps.iter().map(|s| s.name.clone()).collect();
                let mut run = blank();
                run.run = Some(m::ActionRun {
                    action: action.clone(),
                    trigger: "runbook".into(),
                    inputs: Default::default(),
                });
                run.action_run(action, &names).steps
            }
        };
        laid = laid.then(part).ok_or_else(|| {
            format!(
                "step `{}` deploys or tears down a component an earlier step did: this version \
                 runs each component's deploy or teardown once per runbook",
                step.name
            )
        })?;
    }
    Ok(laid.steps)
}
