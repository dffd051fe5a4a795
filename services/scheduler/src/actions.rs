//! Actions: the steps of a run (and of the lifecycle hooks a deploy carries), each step
//! dispatched as a job rendered against the install as it is when the step starts (so a step
//! reads the outputs of the steps before it), and what a finished step wrote, kept on the
//! install for templates (`.nuon.actions.workflows.NAME`).

use ferry_appconfig::{AppConfig, jobs};
use ferry_model::{self as m, Workflow};
use ferry_protocol::messages::JobSpec;

use crate::work::Work;
use crate::{Scheduler, SchedulerError};

/// The app's actions on lifecycle triggers, as workflows place them.
pub(crate) fn hooks(cfg: &AppConfig) -> Vec<m::Hook> {
    cfg.actions
        .iter()
        .flat_map(|a| {
            a.triggers
                .iter()
                .filter(|t| m::fires(&t.kind))
                .map(|t| m::Hook {
                    trigger: t.kind.clone(),
                    component: t.component.clone(),
                    action: a.name.clone(),
                    steps: a.steps.iter().map(|s| s.name.clone()).collect(),
                })
        })
        .collect()
}

/// The steps of an action run, or why it cannot run: the action is not in the install's config,
/// or a component it depends on is not deployed.
pub(crate) fn lay_out_run(
    wf: &Workflow,
    cfg: &AppConfig,
    install: Option<&m::Install>,
) -> Result<Vec<m::Step>, String> {
    let Some(run) = &wf.run else {
        return Err("an action workflow without its action".into());
    };
    let Some(action) = cfg.action(&run.action) else {
        return Err(format!(
            "the install's app config has no action `{}`",
            run.action
        ));
    };
    let missing: Vec<&str> = action
        .dependencies
        .iter()
        .filter(|d| {
            install
                .and_then(|i| i.components.get(*d))
                .is_none_or(|c| c.status != m::ComponentStatus::Active)
        })
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "action `{}` needs {} deployed first",
            action.name,
            missing.join(", ")
        ));
    }
    let names: Vec<String> = action.steps.iter().map(|s| s.name.clone()).collect();
    let empty = Workflow {
        steps: vec![],
        ..wf.clone()
    };
    Ok(empty.action_run(&action.name, &names).steps)
}

impl Scheduler {
    /// Offers one action step's job, rendered now (`ferry_appconfig::jobs::action_job`). A
    /// step that runs under an API grant of a break-glass role is audited before it is offered.
    pub(crate) async fn dispatch_action(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Vec<Work>, SchedulerError> {
        let install = self
            .store
            .repo::<m::Install>()
            .require(&wf.org, &wf.install)
            .await?
            .value;
        let cfg = self.config(&wf.org, &wf.app_config_id).await?;
        let (i, w, st, now) = (install.clone(), wf.clone(), step.clone(), m::now_ms());
        let job = crate::rendered(move || jobs::action_job(&cfg, &i, &w, &st, now)).await?;
        if let Some(role) = &job.break_glass_role
            && let Some(grant) = install
                .break_glass
                .get(role)
                .filter(|_| job.api_grant.is_some())
        {
            let at = step.started_at.clone().unwrap_or_else(m::now);
            let used =
                m::AuditEvent::break_glass_used(wf, role, grant, &job.action, &job.step, &at);
            self.audit(&used).await?;
        }
        let now = m::Timestamp::now();
        self.change_install(wf, |i| i.action_started(&step.component, &wf.id, now))
            .await?;
        self.dispatch(wf, step, m::JobKind::Action, JobSpec::Action(job), None)
            .await
    }
}
