//! Actions: the steps of a run (and of the lifecycle hooks a deploy carries), each step
//! dispatched as a job rendered against the install as it is when the step starts (so a step
//! reads the outputs of the steps before it), and what a finished step wrote, kept on the
//! install for templates (`.nuon.actions.workflows.NAME`).

use ferry_appconfig::AppConfig;
use ferry_model::{self as m, StepOutcome, Workflow};
use ferry_protocol::messages::{ActionJob, JobSpec};

use crate::dispatch::Permanent;
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

/// One action step's job, rendered against the install as it is now: its command or script and
/// its environment (the step's `env_vars`, then the run's inputs, defaults for hooks and
/// runbooks), the install's secrets to mask in its log, its cluster, and the live API grant of
/// the break-glass role it needs.
fn action_job(
    wf: &Workflow,
    step: &m::Step,
    cfg: &AppConfig,
    install: &m::Install,
) -> Result<ActionJob, Permanent> {
    let Some(at) = &step.action else {
        return Err(Permanent("an action step without its action".into()));
    };
    let Some(action) = cfg.action(&step.component) else {
        return Err(Permanent(format!(
            "action `{}` is not in app config {}",
            step.component, wf.app_config_id
        )));
    };
    let Some(def) = action.step(&at.step) else {
        return Err(Permanent(format!(
            "action `{}` has no step `{}`",
            action.name, at.step
        )));
    };
    let state = crate::dispatch::install_state(cfg, install);
    let render = |what: &str, text: &str| {
        ferry_appconfig::template::render(text, &state)
            .map_err(|e| Permanent(format!("step `{}`: cannot render {what}: {e}", at.step)))
    };
    let command = def
        .command
        .as_deref()
        .map(|c| render("`command`", c))
        .transpose()?;
    let script = def
        .script
        .as_deref()
        .map(|c| render("`inline_contents`", c))
        .transpose()?;
    let mut env = Vec::new();
    for (k, v) in &def.env_vars {
        env.push((k.clone(), render(&format!("`env_vars.{k}`"), v)?));
    }
    // A run started by hand gives inputs; hooks and runbooks give none: defaults then.
    let given = wf
        .run
        .as_ref()
        .filter(|r| r.action == action.name)
        .map(|r| r.inputs.clone())
        .unwrap_or_default();
    let inputs = action.run_inputs(&given).map_err(Permanent)?;
    env.retain(|(k, _)| !inputs.contains_key(k));
    env.extend(inputs);
    Ok(ActionJob {
        action: action.name.clone(),
        step: at.step.clone(),
        trigger: at.trigger.clone(),
        command,
        script,
        env,
        redact: install.secret_values(&cfg.sensitive_defaults(&install.inputs)),
        cluster: ferry_appconfig::cluster::access(&install.sandbox.outputs)
            .ok()
            .flatten(),
        break_glass_role: action.break_glass_role.clone(),
        api_grant: action
            .break_glass_role
            .as_ref()
            .and_then(|r| install.break_glass.get(r))
            .filter(|g| g.until_ms > m::now_ms())
            .map(|g| ferry_protocol::messages::ApiGrant {
                by: g.by.clone(),
                until_ms: g.until_ms,
            }),
    })
}

impl Scheduler {
    /// Offers one action step's job, rendered now (see [`action_job`]).
    pub(crate) async fn dispatch_action(
        &self,
        wf: &Workflow,
        step: &m::Step,
    ) -> Result<Result<(), Permanent>, SchedulerError> {
        let install = self
            .store
            .repo::<m::Install>()
            .require(&wf.org, &wf.install)
            .await?
            .value;
        let cfg = self.config(&wf.org, &wf.app_config_id).await?;
        let job = match action_job(wf, step, &cfg, &install) {
            Ok(j) => j,
            Err(p) => return Ok(Err(p)),
        };
        if let (Some(role), Some(g)) = (&job.break_glass_role, &job.api_grant) {
            self.audit_break_glass(
                &wf.org,
                &wf.install,
                "break_glass.used",
                role,
                serde_json::json!({
                    "granted_by": g.by, "until": m::format_ms(g.until_ms), "action": job.action,
                    "step": job.step, "workflow": wf.id,
                }),
            )
            .await;
        }
        self.record_action(wf, &step.component, |a| a.status = "running".into())
            .await?;
        self.dispatch(wf, step, m::JobKind::Action, JobSpec::Action(job), None)
            .await
            .map(Ok)
    }

    /// Records a break-glass event of `install` in the audit stream.
    pub(crate) async fn audit_break_glass(
        &self,
        org: &str,
        install: &str,
        action: &str,
        role: &str,
        mut detail: serde_json::Value,
    ) {
        detail["install"] = install.into();
        let _ = self
            .store
            .bus()
            .audit(&m::AuditEvent {
                org: org.into(),
                at: m::now(),
                actor: "scheduler".into(),
                action: action.into(),
                target: format!("{install}/{role}"),
                detail,
            })
            .await;
    }

    /// A finished action step: its outputs kept on the install, and how the step ended.
    pub(crate) async fn action_step_finished(
        &self,
        job: &m::Job,
    ) -> Result<StepOutcome, SchedulerError> {
        let wf = self
            .store
            .repo::<Workflow>()
            .get(&job.org, &job.workflow_id)
            .await?
            .map(|v| v.value);
        let Some(wf) = wf else {
            return Ok(StepOutcome::Succeeded("ran".into()));
        };
        let step = wf
            .step(job.step)
            .and_then(|s| s.action.as_ref())
            .map(|a| a.step.clone())
            .unwrap_or_default();
        let cfg = self.config(&job.org, &wf.app_config_id).await?;
        let last = cfg
            .action(&job.component)
            .and_then(|a| a.steps.last())
            .is_some_and(|s| s.name == step);
        let now = m::now();
        self.record_action(&wf, &job.component, |a| {
            a.step_finished(&wf.id, &step, &job.outputs, &now);
            a.status = if last { "succeeded" } else { "running" }.into();
        })
        .await?;
        Ok(StepOutcome::Succeeded(format!("step `{step}` ran")))
    }

    /// Records a failed action step's run as failed.
    pub(crate) async fn action_step_failed(&self, job: &m::Job) -> Result<(), SchedulerError> {
        if let Some(wf) = self
            .store
            .repo::<Workflow>()
            .get(&job.org, &job.workflow_id)
            .await?
        {
            self.record_action(&wf.value, &job.component, |a| a.status = "failed".into())
                .await?;
        }
        Ok(())
    }

    /// Changes the install's record of `action`'s latest run (this workflow's).
    async fn record_action(
        &self,
        wf: &Workflow,
        action: &str,
        f: impl Fn(&mut m::ActionState),
    ) -> Result<(), SchedulerError> {
        let r = self
            .store
            .repo::<m::Install>()
            .modify(&wf.org, &wf.install, |i| {
                let a = i.actions.entry(action.to_string()).or_default();
                let before = a.clone();
                a.workflow = wf.id.clone();
                f(a);
                if *a == before {
                    return Ok::<bool, ()>(false);
                }
                a.updated_at = m::now();
                Ok(true)
            })
            .await;
        match r {
            Ok(_) | Err(ferry_store::StoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
