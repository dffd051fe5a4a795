//! Workflows and their steps, and the pure logic that decides which steps may start.
//!
//! The scheduler keeps a workflow as one KV record and changes it only by compare-and-swap; everything
//! here is a pure function of that record, so the same record always gives the same next steps, whoever
//! computes them and however often.
//!
//! Long (about 430 lines, the rest tests) because it holds the workflow and step records with
//! every layout built from them (deploy, teardown, removals, a runbook's parts): one place to read
//! what a workflow's steps can be.

use crate::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkflowKind {
    Provision,
    DeployComponents,
    /// Every deployed component in reverse deploy order, then the sandbox.
    Teardown,
    /// One run of an action: a step per action step, in order.
    Action,
    /// A runbook: its steps in order, each a deploy, a teardown or an action.
    Runbook,
    /// Plans that apply nothing: a component whose plan has changes has drifted.
    DriftCheck,
}

impl WorkflowKind {
    pub fn label(self) -> &'static str {
        match self {
            WorkflowKind::Provision => "provision",
            WorkflowKind::DeployComponents => "deploy-components",
            WorkflowKind::Teardown => "teardown",
            WorkflowKind::Action => "action",
            WorkflowKind::Runbook => "runbook",
            WorkflowKind::DriftCheck => "drift-check",
        }
    }

    /// Whether it gives way to a deploy: a deploy started while it runs cancels it and takes the
    /// install.
    pub fn yields_install(self) -> bool {
        self == WorkflowKind::DriftCheck
    }

    /// Whether finishing it changes the install's status (it deploys or destroys something).
    pub fn sets_install_status(self) -> bool {
        self.install_status_while_running().is_some()
    }

    /// Whether it holds the install while it runs (one such workflow at a time): everything that
    /// changes what is deployed does; an action run does not, it runs beside them.
    pub fn reserves_install(self) -> bool {
        self != WorkflowKind::Action
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowStatus {
    Pending,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl WorkflowStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            WorkflowStatus::Succeeded | WorkflowStatus::Failed | WorkflowStatus::Cancelled
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Build,
    Sync,
    Plan,
    Approve,
    Apply,
    /// Destroys what a component's applies made (its plugin's teardown).
    Teardown,
    /// Runs one step of an action (its `component` is the action's name).
    Action,
}

impl StepKind {
    pub fn label(self) -> &'static str {
        match self {
            StepKind::Build => "build",
            StepKind::Sync => "sync",
            StepKind::Plan => "plan",
            StepKind::Approve => "approve",
            StepKind::Apply => "apply",
            StepKind::Teardown => "teardown",
            StepKind::Action => "action",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    Running,
    /// Waiting for a decision (approval) rather than for a process.
    Waiting,
    Succeeded,
    Failed,
    Skipped,
    /// Stopped by a cancel.
    Cancelled,
    /// Never started: the workflow failed or was cancelled first. A retry or a skip runs it.
    NotAttempted,
}

/// Statuses and kinds read as users see them (`succeeded`, `approve`): in messages, as in JSON.
macro_rules! display_as_json {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match serde_json::to_value(self) {
                    Ok(serde_json::Value::String(s)) => f.write_str(&s),
                    _ => write!(f, "{self:?}"),
                }
            }
        }
    )*};
}
display_as_json!(StepStatus, StepKind, WorkflowStatus);

impl StepStatus {
    pub fn is_done(self) -> bool {
        matches!(self, StepStatus::Succeeded | StepStatus::Skipped)
    }
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            StepStatus::Succeeded
                | StepStatus::Skipped
                | StepStatus::Failed
                | StepStatus::Cancelled
                | StepStatus::NotAttempted
        )
    }
}

fn first_attempt() -> u32 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Step {
    pub index: u32,
    /// Deploy stage; steps of one group belong to components that may deploy in parallel.
    pub group: u32,
    pub component: String,
    pub kind: StepKind,
    pub status: StepStatus,
    /// 1, then one more each time the step is retried (see [`Workflow::job_id`]).
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    /// Indices of the steps that must be done (succeeded or skipped) before this one starts.
    pub after: Vec<u32>,
    pub job_id: Option<String>,
    pub build_id: Option<String>,
    pub approval_id: Option<String>,
    /// Who acted on the step (a user, `approve-all`, `scheduler`).
    pub actor: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub message: Option<String>,
    /// What people did to this step (approve, deny, retry, skip), oldest first.
    #[serde(default)]
    pub responses: Vec<Response>,
    /// An action step: which step of the action, and what made it run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionStepRef>,
}

impl Step {
    /// What the step is about, as people read it: its component, or `ACTION/STEP` for an
    /// action's step.
    pub fn subject(&self) -> String {
        match &self.action {
            Some(a) => format!("{}/{}", self.component, a.step),
            None => self.component.clone(),
        }
    }
}

/// Which step of an action a workflow step runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ActionStepRef {
    /// The action step's name.
    pub step: String,
    /// What ran it: `manual`, `cron`, or the lifecycle trigger (`pre-deploy-component`, ...).
    pub trigger: String,
}

/// What an action run was started with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ActionRun {
    pub action: String,
    /// `manual` or `cron`.
    pub trigger: String,
    /// Its inputs, checked against the action's declarations (defaults filled in).
    #[serde(default)]
    pub inputs: std::collections::BTreeMap<String, String>,
}

/// One person's response to a step: who, when, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Response {
    pub actor: String,
    pub at: String,
    /// `approve`, `deny`, `deny (skip-current)`, `deny (skip-dependents)`, `retry`, `skip`.
    pub action: String,
}

impl StepKind {
    /// Where a component's step comes in its sequence (build → sync → plan → approve → apply).
    pub fn rank(self) -> u8 {
        match self {
            StepKind::Build => 0,
            StepKind::Sync => 1,
            StepKind::Plan => 2,
            StepKind::Approve => 3,
            StepKind::Apply | StepKind::Teardown | StepKind::Action => 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Workflow {
    pub id: String,
    pub org: String,
    pub install: String,
    pub kind: WorkflowKind,
    pub app_config_id: String,
    pub status: WorkflowStatus,
    /// A cancel was asked for: nothing new starts, and the workflow ends cancelled once no step runs.
    #[serde(default)]
    pub cancel_requested: bool,
    pub steps: Vec<Step>,
    /// What a deploy covers (all of it, by default).
    #[serde(default)]
    pub scope: crate::DeployScope,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    /// Why the workflow failed before any step could start (its app config cannot be laid out).
    #[serde(default)]
    pub error: Option<String>,
    /// An action run: which action, with what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<ActionRun>,
    /// What started it, when that decides its lifecycle hooks (`update-inputs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// A runbook: its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runbook: Option<String>,
    /// Its plans are approved without review, whatever the install's setting (a release made
    /// with `--approve-all`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approve_all: bool,
    /// Who asked for it through the API (`token:ci`); none for what the control plane starts
    /// itself (its `cause` says what: a release, a schedule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

/// The mark of a workflow that has not finished: written with the workflow, removed once it has
/// finished. The scheduler's reconcile pass lists these, never the whole history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OpenWorkflow {
    pub org: String,
    pub id: String,
    pub install: String,
}

impl Workflow {
    /// A requested workflow: recorded, not laid out yet (the scheduler lays it out).
    pub fn requested(
        id: String,
        org: &str,
        install: &str,
        kind: WorkflowKind,
        app_config_id: &str,
        scope: crate::DeployScope,
        now: Timestamp,
    ) -> Workflow {
        Workflow {
            id,
            org: org.into(),
            install: install.into(),
            kind,
            app_config_id: app_config_id.into(),
            status: WorkflowStatus::Pending,
            cancel_requested: false,
            steps: vec![],
            scope,
            created_at: now.to_string(),
            updated_at: now.to_string(),
            finished_at: None,
            error: None,
            run: None,
            cause: None,
            runbook: None,
            approve_all: false,
            requested_by: None,
        }
    }

    pub fn open_mark(&self) -> OpenWorkflow {
        OpenWorkflow {
            org: self.org.clone(),
            id: self.id.clone(),
            install: self.install.clone(),
        }
    }
}

/// One thing to deploy (the sandbox or a component) and what it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployable {
    pub name: String,
    pub dependencies: Vec<String>,
}

impl Deployable {
    pub fn named(name: &str, dependencies: &[&str]) -> Deployable {
        Deployable {
            name: name.into(),
            dependencies: dependencies.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Workflow {
    /// Lays out the steps of a deploy: per deployable build → sync → plan → approve → apply. Builds and
    /// syncs start at once; a plan waits for the applies of everything the deployable depends on (its
    /// templates read their outputs), and every component's plan waits for the sandbox.
    ///
    /// `stages` is the deploy order: the sandbox (if any) first, then groups of independent components.
    pub fn deploy(
        id: String,
        org: String,
        install: String,
        kind: WorkflowKind,
        app_config_id: String,
        stages: &[Vec<Deployable>],
    ) -> Workflow {
        Workflow::deploy_scoped(id, org, install, kind, app_config_id, stages, false)
    }

    /// [`Workflow::deploy`], or with `plan_only` only build, sync and plan (nothing waits for
    /// another component's apply then, so every plan may run at once).
    pub fn deploy_scoped(
        id: String,
        org: String,
        install: String,
        kind: WorkflowKind,
        app_config_id: String,
        stages: &[Vec<Deployable>],
        plan_only: bool,
    ) -> Workflow {
        // A layout: `lay_out` takes its steps into the recorded workflow, which keeps its own
        // times; this one has none.
        let now = String::new();
        let mut w = Workflow {
            id,
            org,
            install,
            kind,
            app_config_id,
            status: WorkflowStatus::Pending,
            cancel_requested: false,
            steps: vec![],
            scope: Default::default(),
            created_at: now.clone(),
            updated_at: now,
            finished_at: None,
            error: None,
            run: None,
            cause: None,
            runbook: None,
            approve_all: false,
            requested_by: None,
        };
        let mut apply_of: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        for (group, stage) in stages.iter().enumerate() {
            let group = group as u32;
            for d in stage {
                let build = w.push_step(&d.name, group, StepKind::Build, vec![]);
                let sync = w.push_step(&d.name, group, StepKind::Sync, vec![build]);
                let mut plan_after = vec![sync];
                if d.name != crate::SANDBOX
                    && let Some(&sandbox_apply) = apply_of.get(crate::SANDBOX)
                {
                    plan_after.push(sandbox_apply);
                }
                for dep in &d.dependencies {
                    if let Some(&a) = apply_of.get(dep) {
                        plan_after.push(a);
                    }
                }
                let plan = w.push_step(&d.name, group, StepKind::Plan, plan_after);
                if plan_only {
                    continue;
                }
                let approve = w.push_step(&d.name, group, StepKind::Approve, vec![plan]);
                let apply = w.push_step(&d.name, group, StepKind::Apply, vec![approve]);
                apply_of.insert(d.name.clone(), apply);
            }
        }
        w
    }

    /// Lays out a teardown: per deployable, an approval then its teardown, in reverse deploy
    /// order; each stage waits for every teardown of the stages deployed after it (their
    /// dependents), so the sandbox goes last. A destroy is a change like any other: it waits for
    /// a person's decision unless the install approves everything. `stages` is the deploy order,
    /// the sandbox (if any) first.
    /// Adds, after every apply of a deploy, the teardown of each component that was removed from
    /// the app but is still deployed, each behind its own approval (which says so).
    pub fn with_removals(mut self, removed: &[String]) -> Workflow {
        let applies: Vec<u32> = self
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::Apply)
            .map(|s| s.index)
            .collect();
        let group = self.steps.iter().map(|s| s.group + 1).max().unwrap_or(0);
        for name in removed {
            let approve = self.push_step(name, group, StepKind::Approve, applies.clone());
            self.push_step(name, group, StepKind::Teardown, vec![approve]);
        }
        self
    }

    /// Appends `part` (steps laid out as a workflow of their own, indexed from 0) after every
    /// step already here: a runbook is its parts one after another. Returns `None` when the
    /// result would have two deploy steps of one kind for one component (a step finds its
    /// component's other steps by component and kind).
    pub fn then(mut self, part: Vec<Step>) -> Option<Workflow> {
        let offset = self.steps.len() as u32;
        let everything: Vec<u32> = (0..offset).collect();
        let group = self.steps.iter().map(|s| s.group + 1).max().unwrap_or(0);
        for mut s in part {
            if s.action.is_none() && self.find(&s.component, s.kind).is_some() {
                return None;
            }
            s.index += offset;
            s.group += group;
            s.after = if s.after.is_empty() {
                everything.clone()
            } else {
                s.after.iter().map(|a| a + offset).collect()
            };
            self.steps.push(s);
        }
        Some(self)
    }

    pub(crate) fn push_step(
        &mut self,
        component: &str,
        group: u32,
        kind: StepKind,
        after: Vec<u32>,
    ) -> u32 {
        let index = self.steps.len() as u32;
        self.steps.push(Step {
            index,
            group,
            component: component.to_string(),
            kind,
            status: StepStatus::Pending,
            attempt: 1,
            after,
            job_id: None,
            build_id: None,
            approval_id: None,
            actor: None,
            started_at: None,
            finished_at: None,
            message: None,
            responses: vec![],
            action: None,
        });
        index
    }

    pub fn teardown(
        id: String,
        org: String,
        install: String,
        app_config_id: String,
        stages: &[Vec<String>],
    ) -> Workflow {
        let mut w = Workflow::deploy(id, org, install, WorkflowKind::Teardown, app_config_id, &[]);
        let mut previous: Vec<u32> = Vec::new();
        for (group, stage) in stages.iter().rev().enumerate() {
            let mut this = Vec::new();
            for name in stage {
                let approve = w.push_step(name, group as u32, StepKind::Approve, previous.clone());
                let index = w.push_step(name, group as u32, StepKind::Teardown, vec![approve]);
                this.push(index);
            }
            previous = this;
        }
        w
    }

    /// Steps that may start now. None while any step has failed or was cancelled (its job was
    /// cancelled alone, or the whole workflow is being cancelled): such a workflow starts nothing
    /// new.
    pub fn ready_steps(&self) -> Vec<u32> {
        if self.status.is_terminal()
            || self.cancel_requested
            || self
                .steps
                .iter()
                .any(|s| matches!(s.status, StepStatus::Failed | StepStatus::Cancelled))
        {
            return vec![];
        }
        self.steps
            .iter()
            .filter(|s| s.status == StepStatus::Pending)
            .filter(|s| {
                s.after.iter().all(|&i| {
                    self.steps
                        .get(i as usize)
                        .is_some_and(|p| p.status.is_done())
                })
            })
            .map(|s| s.index)
            .collect()
    }

    /// Derives the workflow's status from its steps. Returns true when it changed. Called by the
    /// transitions in `steps.rs`; nothing else sets a status.
    pub(crate) fn refresh_status(&mut self, now: Timestamp) -> bool {
        let before = self.status;
        let busy = self
            .steps
            .iter()
            .any(|s| matches!(s.status, StepStatus::Running | StepStatus::Waiting));
        let failed = self.steps.iter().any(|s| s.status == StepStatus::Failed);
        self.status = if failed && !busy {
            WorkflowStatus::Failed
        } else if self.steps.iter().all(|s| s.status.is_done()) {
            WorkflowStatus::Succeeded
        } else if (self.cancel_requested
            || self.steps.iter().any(|s| s.status == StepStatus::Cancelled))
            && !busy
        {
            WorkflowStatus::Cancelled
        } else if self.steps.iter().any(|s| s.status != StepStatus::Pending) {
            WorkflowStatus::Running
        } else {
            WorkflowStatus::Pending
        };
        if self.status != before && self.status.is_terminal() {
            self.finished_at = Some(now.to_string());
        }
        self.status != before
    }

    pub fn step(&self, index: u32) -> Option<&Step> {
        self.steps.get(index as usize)
    }

    /// The step a person names: its index, or its component's first step not done yet.
    pub fn step_named(&self, name: &str) -> Option<u32> {
        self.steps
            .iter()
            .find(|s| s.index.to_string() == name)
            .or_else(|| {
                self.steps
                    .iter()
                    .find(|s| s.component == name && !s.status.is_done())
            })
            .map(|s| s.index)
    }

    /// The components whose steps not done yet wait, directly or through others, on a step of
    /// `component`: what skipping it leaves to run with whatever it deployed before.
    pub fn dependents_of(&self, component: &str) -> Vec<String> {
        let mut reached: Vec<u32> = self
            .steps
            .iter()
            .filter(|s| s.component == component)
            .map(|s| s.index)
            .collect();
        let mut out: Vec<String> = Vec::new();
        let mut grew = true;
        while grew {
            grew = false;
            for s in &self.steps {
                if !reached.contains(&s.index) && s.after.iter().any(|a| reached.contains(a)) {
                    reached.push(s.index);
                    grew = true;
                    if !s.status.is_done()
                        && s.component != component
                        && !out.contains(&s.component)
                    {
                        out.push(s.component.clone());
                    }
                }
            }
        }
        out
    }

    pub fn step_mut(&mut self, index: u32) -> Option<&mut Step> {
        self.steps.get_mut(index as usize)
    }

    /// The step of `component` of the given kind (not an action's).
    pub fn find(&self, component: &str, kind: StepKind) -> Option<&Step> {
        self.steps
            .iter()
            .find(|s| s.component == component && s.kind == kind && s.action.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::at;

    use crate::Deployable as D;

    fn d(name: &str, deps: &[&str]) -> D {
        D::named(name, deps)
    }

    fn wf() -> Workflow {
        Workflow::deploy(
            "w".into(),
            "o".into(),
            "i".into(),
            WorkflowKind::Provision,
            "c".into(),
            &[
                vec![d("sandbox", &[])],
                vec![d("a", &[]), d("b", &[])],
                vec![d("c", &["a", "b"])],
            ],
        )
    }

    fn finish(w: &mut Workflow, component: &str, kind: StepKind, status: StepStatus) {
        let i = w.find(component, kind).unwrap().index;
        w.step_mut(i).unwrap().status = status;
    }

    #[test]
    fn a_plan_only_deploy_stops_after_the_plans_which_wait_for_no_apply() {
        let w = Workflow::deploy_scoped(
            "w".into(),
            "o".into(),
            "i".into(),
            WorkflowKind::DeployComponents,
            "c".into(),
            &[
                vec![d("sandbox", &[])],
                vec![d("a", &[])],
                vec![d("c", &["a"])],
            ],
            true,
        );
        assert!(
            w.steps
                .iter()
                .all(|s| matches!(s.kind, StepKind::Build | StepKind::Sync | StepKind::Plan))
        );
        let plan_c = w.find("c", StepKind::Plan).unwrap();
        assert_eq!(
            plan_c.after,
            vec![w.find("c", StepKind::Sync).unwrap().index]
        );
    }

    #[test]
    fn history_keeps_deploys_says_who_and_finds_the_config_to_roll_back_to() {
        use crate::api::HistoryEntry;
        let mut deploy = wf();
        deploy.kind = WorkflowKind::DeployComponents;
        deploy.requested_by = Some("token:ci".into());
        let h = HistoryEntry::of(&deploy).unwrap();
        assert_eq!((h.by.as_str(), h.app_config_id.as_str()), ("token:ci", "c"));
        let mut released = wf();
        released.cause = Some("release r1".into());
        assert_eq!(HistoryEntry::of(&released).unwrap().by, "release r1");
        let mut check = wf();
        check.kind = WorkflowKind::DriftCheck;
        assert!(HistoryEntry::of(&check).is_none());

        let entry = |config: &str, status, kind| HistoryEntry {
            app_config_id: config.into(),
            status,
            kind,
            ..h.clone()
        };
        let (ok, failed) = (WorkflowStatus::Succeeded, WorkflowStatus::Failed);
        let deploys = WorkflowKind::DeployComponents;
        let history = [
            entry("c3", ok, deploys),
            entry("c2", failed, deploys),
            entry("c3", ok, WorkflowKind::Teardown),
            entry("c1", ok, WorkflowKind::Provision),
        ];
        assert_eq!(HistoryEntry::rollback_target(&history, "c3"), Some("c1"));
        assert_eq!(HistoryEntry::rollback_target(&history[3..], "c1"), None);
    }

    #[test]
    fn a_step_is_named_by_index_or_component_and_its_dependents_are_found() {
        let mut w = wf();
        let a_build = w.find("a", StepKind::Build).unwrap().index;
        assert_eq!(w.step_named("a"), Some(a_build));
        assert_eq!(w.step_named(&a_build.to_string()), Some(a_build));
        assert_eq!(w.step_named("nope"), None);
        assert_eq!(w.dependents_of("a"), vec!["c".to_string()]);
        assert_eq!(
            w.dependents_of("sandbox"),
            vec!["a".to_string(), "b".to_string(), "c".to_string()]
        );
        assert!(w.dependents_of("c").is_empty());
        // Done steps are no longer at stake.
        for k in [
            StepKind::Build,
            StepKind::Sync,
            StepKind::Plan,
            StepKind::Approve,
            StepKind::Apply,
        ] {
            finish(&mut w, "c", k, StepStatus::Succeeded);
        }
        assert!(w.dependents_of("a").is_empty());
    }

    #[test]
    fn builds_start_at_once_and_plans_wait_for_dependencies() {
        let mut w = wf();
        let ready: Vec<_> = w
            .ready_steps()
            .iter()
            .map(|&i| {
                (
                    w.steps[i as usize].component.clone(),
                    w.steps[i as usize].kind,
                )
            })
            .collect();
        assert_eq!(ready.len(), 4);
        assert!(ready.iter().all(|(_, k)| *k == StepKind::Build));

        for c in ["sandbox", "a", "b", "c"] {
            finish(&mut w, c, StepKind::Build, StepStatus::Succeeded);
            finish(&mut w, c, StepKind::Sync, StepStatus::Succeeded);
        }
        // Only the sandbox may plan: every component's plan waits for the sandbox apply.
        let ready = w.ready_steps();
        assert_eq!(
            ready,
            vec![w.find("sandbox", StepKind::Plan).unwrap().index]
        );

        for k in [StepKind::Plan, StepKind::Approve, StepKind::Apply] {
            finish(&mut w, "sandbox", k, StepStatus::Succeeded);
        }
        // a and b are independent: both plan in parallel; c waits for both applies.
        let mut ready: Vec<_> = w
            .ready_steps()
            .iter()
            .map(|&i| w.steps[i as usize].component.clone())
            .collect();
        ready.sort();
        assert_eq!(ready, vec!["a", "b"]);

        for k in [StepKind::Plan, StepKind::Approve, StepKind::Apply] {
            finish(&mut w, "a", k, StepStatus::Succeeded);
        }
        assert_eq!(
            w.ready_steps(),
            vec![w.find("b", StepKind::Plan).unwrap().index]
        );
        finish(&mut w, "b", StepKind::Plan, StepStatus::Succeeded);
        finish(&mut w, "b", StepKind::Approve, StepStatus::Skipped);
        finish(&mut w, "b", StepKind::Apply, StepStatus::Skipped);
        assert_eq!(
            w.ready_steps(),
            vec![w.find("c", StepKind::Plan).unwrap().index]
        );
    }

    #[test]
    fn a_runbooks_parts_run_one_after_another() {
        let deploy = |c: &str| {
            Workflow::deploy(
                "w".into(),
                "o".into(),
                "i".into(),
                WorkflowKind::Runbook,
                "c".into(),
                &[vec![d(c, &[])]],
            )
            .steps
        };
        let w = Workflow::deploy(
            "w".into(),
            "o".into(),
            "i".into(),
            WorkflowKind::Runbook,
            "c".into(),
            &[],
        )
        .then(deploy("a"))
        .unwrap()
        .then(deploy("b"))
        .unwrap();
        let build_b = w.find("b", StepKind::Build).unwrap();
        assert_eq!(
            build_b.after,
            (0..5).collect::<Vec<u32>>(),
            "b starts after all of a"
        );
        let plan_b = w.find("b", StepKind::Plan).unwrap();
        assert_eq!(
            plan_b.after,
            vec![w.find("b", StepKind::Sync).unwrap().index]
        );
        assert!(w.then(deploy("a")).is_none(), "a twice is refused");
    }

    #[test]
    fn status_follows_steps() {
        let mut w = wf();
        assert!(!w.refresh_status(at("2026-01-01T00:00:00.000Z")));
        assert_eq!(w.status, WorkflowStatus::Pending);
        w.steps[0].status = StepStatus::Running;
        w.steps[5].status = StepStatus::Failed;
        w.refresh_status(at("2026-01-01T00:00:00.000Z"));
        assert_eq!(
            w.status,
            WorkflowStatus::Running,
            "a running step keeps a failing workflow running"
        );
        assert!(
            w.ready_steps().is_empty(),
            "nothing new starts after a failure"
        );
        w.steps[0].status = StepStatus::Succeeded;
        w.refresh_status(at("2026-01-01T00:00:00.000Z"));
        assert_eq!(w.status, WorkflowStatus::Failed);
        assert!(w.finished_at.is_some());

        let mut w = wf();
        for s in &mut w.steps {
            s.status = StepStatus::Succeeded;
        }
        w.refresh_status(at("2026-01-01T00:00:00.000Z"));
        assert_eq!(w.status, WorkflowStatus::Succeeded);
    }
}
