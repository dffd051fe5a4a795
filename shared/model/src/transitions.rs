//! How an install's record follows its jobs and workflows: what a job's end does to the install
//! (a component's status, outputs and drift, an action's run) and to the job's step, what a
//! workflow's end does to the install's status, and the marks a step leaves when it starts.
//!
//! Each is a pure function of records and the time it is given. The scheduler calls them inside
//! its compare-and-swap of the install (`Repo::modify`), so a conflict simply runs them again on
//! the newer record, and a repeat of the same message changes nothing the second time.

use crate::{
    ActionState, ComponentState, ComponentStatus, Drift, Install, InstallStatus, Job, JobKind,
    JobStatus, StepOutcome, Timestamp, Workflow, WorkflowKind, WorkflowStatus,
};

/// What the job's workflow knows of it that the job record does not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobContext {
    /// Its workflow is a drift check: a plan finds drift and deploys nothing.
    pub drift_check: bool,
    /// For an action job: the step it ran. `None` when its workflow is gone.
    pub action_step: Option<ActionStepEnd>,
}

/// The action step an action job ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionStepEnd {
    pub step: String,
    /// It is the action's last step: the run ends with it.
    pub last: bool,
}

/// What a job's end did to its install, beyond the record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstallChanged {
    /// The record changed: save it.
    pub changed: bool,
    /// A drift check found the component drifted that no earlier check had found drifted: worth
    /// an audit record. A repeat of the same check's result says so again (the audit record is
    /// the same one, and the bus keeps it once).
    pub newly_drifted: bool,
}

impl Job {
    /// How the job's step ends.
    pub fn step_outcome(&self, ctx: &JobContext) -> StepOutcome {
        if self.kind == JobKind::Plan && ctx.drift_check {
            return self.drift_outcome();
        }
        if self.status != JobStatus::Finished {
            let msg = self
                .error
                .clone()
                .unwrap_or_else(|| format!("job {}", self.status.name()));
            return match self.status {
                JobStatus::Cancelled | JobStatus::NotAttempted => StepOutcome::Cancelled(msg),
                _ => StepOutcome::Failed(msg),
            };
        }
        match self.kind {
            JobKind::Sync => StepOutcome::Succeeded("artifact synced to the install".into()),
            JobKind::Action => StepOutcome::Succeeded(match &ctx.action_step {
                Some(a) => format!("step `{}` ran", a.step),
                None => "ran".into(),
            }),
            JobKind::Plan if self.plan_changes.unwrap_or(true) => {
                StepOutcome::Succeeded(self.summary())
            }
            JobKind::Plan => StepOutcome::NoChanges(self.summary()),
            JobKind::Teardown => StepOutcome::Succeeded("torn down".into()),
            JobKind::Apply => StepOutcome::Succeeded("applied".into()),
        }
    }

    fn summary(&self) -> String {
        self.plan_summary.clone().unwrap_or_default()
    }

    /// A drift check's plan found changes: what is deployed is not what the last apply left. A
    /// plan that says nothing of changes is taken as having some.
    pub fn found_drift(&self) -> bool {
        self.status == JobStatus::Finished && self.plan_changes.unwrap_or(true)
    }

    /// What a drift check's plan says on the component: its summary, or why the check failed.
    fn drift_said(&self) -> String {
        match self.status {
            JobStatus::Finished => self.summary(),
            _ => format!(
                "check failed: {}",
                self.error
                    .clone()
                    .unwrap_or_else(|| self.status.name().into())
            ),
        }
    }

    fn drift_outcome(&self) -> StepOutcome {
        let said = self.drift_said();
        match self.status {
            JobStatus::Finished if self.found_drift() => {
                StepOutcome::Succeeded(format!("drifted: {said}"))
            }
            JobStatus::Finished => StepOutcome::Succeeded(format!("in sync: {said}")),
            JobStatus::Cancelled | JobStatus::NotAttempted => StepOutcome::Cancelled(said),
            _ => StepOutcome::Failed(said),
        }
    }
}

impl Install {
    /// A new install of org `org` as `req` asks, with config `config_id` (the inputs named in
    /// `sensitive_inputs` never shown), created already reserved for its provision `workflow`.
    pub fn created(
        org: &str,
        req: crate::api::CreateInstall,
        config_id: &str,
        sensitive_inputs: Vec<String>,
        workflow: &str,
        now: Timestamp,
    ) -> Install {
        Install {
            org: org.into(),
            name: req.name,
            app: req.app,
            app_config_id: config_id.into(),
            inputs: req.inputs,
            sensitive_inputs,
            approve_all: req.approve_all,
            status: InstallStatus::Provisioning,
            sandbox: Default::default(),
            components: Default::default(),
            last_workflow: Some(workflow.into()),
            created_at: now.to_string(),
            updated_at: now.to_string(),
            actions: Default::default(),
            break_glass: Default::default(),
            labels: req.labels,
            approvals_by: req.approvals_by,
            install_stack: None,
            stack_template: None,
        }
    }

    /// Carries a job's end into the install: a failed plan or apply fails its component, a plan
    /// without changes leaves it active, an apply records its outputs and clears its drift, a
    /// teardown removes it, an action step records its run; a drift check records what it found.
    pub fn job_ended(&mut self, job: &Job, ctx: &JobContext, now: Timestamp) -> InstallChanged {
        if job.kind == JobKind::Plan && ctx.drift_check {
            return self.drift_checked(job, now);
        }
        let ok = job.status == JobStatus::Finished;
        let changed = match (job.kind, ok) {
            (JobKind::Plan | JobKind::Apply, false) => {
                self.component_changed(job, now, |c| c.status = ComponentStatus::Failed)
            }
            (JobKind::Plan, true) if !job.plan_changes.unwrap_or(true) => {
                self.component_changed(job, now, |c| c.status = ComponentStatus::Active)
            }
            (JobKind::Apply, true) => self.component_changed(job, now, |c| {
                c.status = ComponentStatus::Active;
                // Applied: whatever drifted is as the config says again.
                c.drift = None;
                c.outputs = job.outputs.clone();
                c.sensitive_outputs = job.sensitive_outputs.clone();
                if job.plan_digest.is_some() {
                    c.applied_digest = job.plan_digest.clone();
                }
            }),
            (JobKind::Teardown, true) => self.torn_down(&job.component, now),
            (JobKind::Action, _) => match &ctx.action_step {
                Some(a) if ok => self.action_changed(job, now, |r| {
                    r.step_finished(&job.workflow_id, &a.step, &job.outputs, now);
                    r.status = if a.last { "succeeded" } else { "running" }.into();
                }),
                Some(_) => self.action_changed(job, now, |r| r.status = "failed".into()),
                None => false,
            },
            _ => false,
        };
        InstallChanged {
            changed,
            newly_drifted: false,
        }
    }

    /// Changes the job's component; it remembers the job that changed it last.
    fn component_changed(
        &mut self,
        job: &Job,
        now: Timestamp,
        f: impl FnOnce(&mut ComponentState),
    ) -> bool {
        let c = self.component_mut(&job.component);
        let before = c.clone();
        f(c);
        c.last_job = Some(job.id.clone());
        if *c == before {
            return false;
        }
        c.updated_at = Some(now.to_string());
        self.updated_at = now.to_string();
        true
    }

    /// Changes the install's record of the job's action's latest run (the job's workflow's).
    fn action_changed(
        &mut self,
        job: &Job,
        now: Timestamp,
        f: impl FnOnce(&mut ActionState),
    ) -> bool {
        let a = self.actions.entry(job.component.clone()).or_default();
        let before = a.clone();
        a.workflow = job.workflow_id.clone();
        f(a);
        if *a == before {
            return false;
        }
        a.updated_at = now.to_string();
        true
    }

    fn torn_down(&mut self, component: &str, now: Timestamp) -> bool {
        let removed = if component == crate::SANDBOX {
            std::mem::take(&mut self.sandbox) != ComponentState::default()
        } else {
            self.components.remove(component).is_some()
        };
        if removed {
            self.updated_at = now.to_string();
        }
        removed
    }

    fn drift_checked(&mut self, job: &Job, now: Timestamp) -> InstallChanged {
        let drifted = job.found_drift();
        let c = self.component_mut(&job.component);
        // Found drifted before by another check: not news. By this one: this is a repeat of
        // the same result, which says it again.
        let known = c
            .drift
            .as_ref()
            .is_some_and(|d| d.drifted && d.workflow != job.workflow_id);
        c.drift = Some(Drift {
            checked_at: now.to_string(),
            workflow: job.workflow_id.clone(),
            drifted,
            summary: job.drift_said(),
        });
        InstallChanged {
            changed: true,
            newly_drifted: drifted && !known,
        }
    }

    /// A scheduled drift check of `component` was skipped because workflow `busy` holds the
    /// install: the component says so, and keeps what earlier checks found.
    pub fn drift_skipped(&mut self, component: &str, busy: &str, now: Timestamp) {
        let c = self.component_mut(component);
        let d = c.drift.get_or_insert_with(|| Drift {
            checked_at: String::new(),
            workflow: String::new(),
            drifted: false,
            summary: String::new(),
        });
        d.workflow = busy.to_string();
        d.summary = format!("check skipped: workflow {busy} is in progress");
        d.checked_at = now.to_string();
    }

    /// Records the install's status as the ended workflow `wf` leaves it, if `wf` is the one
    /// that holds it and is of a kind that sets it. Returns whether it changed.
    pub fn workflow_ended(&mut self, wf: &Workflow, now: Timestamp) -> bool {
        let Some(status) = wf.install_status() else {
            return false;
        };
        if self.last_workflow.as_deref() != Some(wf.id.as_str()) || self.status == status {
            return false;
        }
        self.status = status;
        self.updated_at = now.to_string();
        true
    }

    /// A plan of `component` was offered (not by a drift check): it is being deployed.
    pub fn deploying(&mut self, component: &str, now: Timestamp) -> bool {
        let c = self.component_mut(component);
        if c.status == ComponentStatus::Deploying {
            return false;
        }
        c.status = ComponentStatus::Deploying;
        c.updated_at = Some(now.to_string());
        true
    }

    /// An apply of `component` with `artifact` from config `config_id` is about to be offered:
    /// from here the install may hold what the artifact creates, and a teardown destroys it with
    /// that artifact and that config.
    pub fn applying(&mut self, component: &str, artifact: &str, config_id: &str) -> bool {
        let c = self.component_mut(component);
        if c.artifact_digest.as_deref() == Some(artifact)
            && c.config_id.as_deref() == Some(config_id)
        {
            return false;
        }
        c.artifact_digest = Some(artifact.to_string());
        c.config_id = Some(config_id.to_string());
        true
    }

    /// An action step of `workflow`'s run of `action` was offered: the run is running.
    pub fn action_started(&mut self, action: &str, workflow: &str, now: Timestamp) -> bool {
        let a = self.actions.entry(action.to_string()).or_default();
        let before = a.clone();
        a.workflow = workflow.to_string();
        a.status = "running".into();
        if *a == before {
            return false;
        }
        a.updated_at = now.to_string();
        true
    }

    /// Whether its scheduled actions and drift checks run now: once its sandbox is deployed (or
    /// it is active), and not once it is torn down. A tick that comes otherwise passes without
    /// a run.
    pub fn runs_scheduled(&self) -> bool {
        let provisioned =
            self.sandbox.artifact_digest.is_some() || self.status == InstallStatus::Active;
        provisioned && self.status != InstallStatus::TornDown
    }

    /// Reserves the install for `workflow`, deploying config `config_id`, unless another
    /// workflow took it since `seen` was its holder. Returns whether it is reserved.
    pub fn reserve(
        &mut self,
        seen: Option<&str>,
        workflow: &str,
        config_id: &str,
        now: Timestamp,
    ) -> bool {
        if self.last_workflow.as_deref() != seen {
            return false;
        }
        self.last_workflow = Some(workflow.to_string());
        self.app_config_id = config_id.to_string();
        self.status = WorkflowKind::DeployComponents
            .install_status_while_running()
            .unwrap_or(self.status);
        self.updated_at = now.to_string();
        true
    }
}

impl WorkflowKind {
    /// The install's status while a workflow of this kind runs, for kinds that set it.
    pub fn install_status_while_running(self) -> Option<InstallStatus> {
        match self {
            WorkflowKind::Provision => Some(InstallStatus::Provisioning),
            WorkflowKind::Teardown => Some(InstallStatus::TearingDown),
            WorkflowKind::DeployComponents | WorkflowKind::Runbook => {
                Some(InstallStatus::Deploying)
            }
            WorkflowKind::Action | WorkflowKind::DriftCheck => None,
        }
    }
}

impl Workflow {
    /// The install's status once this workflow has ended, for kinds that set it: active after
    /// a success (torn down after a teardown), cancelled when cancelled, else failed.
    pub fn install_status(&self) -> Option<InstallStatus> {
        if !self.kind.sets_install_status() || !self.status.is_terminal() {
            return None;
        }
        Some(match (self.status, self.kind) {
            (WorkflowStatus::Succeeded, WorkflowKind::Teardown) => InstallStatus::TornDown,
            (WorkflowStatus::Succeeded, _) => InstallStatus::Active,
            (WorkflowStatus::Cancelled, _) => InstallStatus::Cancelled,
            _ => InstallStatus::Failed,
        })
    }
}

#[cfg(test)]
mod tests;
