//! The workflow's step state machine: every change of a step's status happens here, as a pure
//! function of the workflow record.
//!
//! The scheduler loads a workflow, calls one of these transitions, saves the record by
//! compare-and-swap and only then performs the [`Effect`]s the transition returned. A crash between
//! the save and the effects is harmless: the record says the step started, and the reconcile pass
//! performs the effect again (effects are idempotent). Keeping every transition here means retry,
//! lost executions, cancel and timeouts are each one function, tested below, instead of a branch in
//! each of the scheduler's handlers.
//!
//! ```text
//!   pending ──start──▶ running ──finish──▶ succeeded | failed | cancelled
//!      │     (approve: waiting)                │
//!      │                                       └─(plan without changes: its approve and apply ▶ skipped)
//!      ├──cancel, or the workflow failed──▶ not_attempted
//!      └──skip──▶ skipped              failed | cancelled | not_attempted ──retry / skip──▶ pending
//! ```
//!
//! A workflow ends (succeeded, failed, cancelled) only in [`Workflow::advance`], which reports it as
//! [`Effect::Finished`]: the scheduler records the install's status before it saves the ended
//! workflow, so whoever sees the workflow ended sees the install's final status too.

use crate::Timestamp;
use crate::{StepKind, StepStatus, Workflow, WorkflowStatus};

mod change;
pub use change::Change;

/// What the scheduler must do once the record that a transition changed is saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// The step has started: request its build, offer its job or request its approval.
    Start { step: u32 },
    /// Ask the runner holding the step's job to stop it; the step ends when the job reports.
    CancelJob { step: u32, job_id: String },
    /// The workflow has ended with this status.
    Finished { status: WorkflowStatus },
}

/// How a started step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    Succeeded(String),
    Failed(String),
    Cancelled(String),
    /// A plan that changes nothing: its approval and apply are skipped.
    NoChanges(String),
    /// A denied plan whose apply is skipped rather than failing the workflow; with `dependents`,
    /// every step that depends on that apply, directly or not, is skipped too.
    Skipped {
        message: String,
        dependents: bool,
    },
}

/// A transition the record's state does not allow. The scheduler leaves the record unchanged: a
/// duplicate or late message is the usual cause, and the record already says what happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Illegal {
    #[error("the workflow's steps are already laid out")]
    AlreadyLaidOut,
    #[error("the workflow has no step {0}")]
    NoSuchStep(u32),
    #[error("step {step} is {status}: it has not started")]
    NotStarted { step: u32, status: StepStatus },
    #[error("step {step} has already ended ({status})")]
    AlreadyEnded { step: u32, status: StepStatus },
    #[error("step {step} is a {kind} step: only plans end without changes")]
    NotAPlan { step: u32, kind: StepKind },
    #[error("step {step} is a {kind} step: only approvals are skipped by a denial")]
    NotAnApproval { step: u32, kind: StepKind },
    #[error("the workflow has already ended ({0})")]
    WorkflowEnded(WorkflowStatus),
    #[error("the workflow is still {0}: only an ended workflow can be retried")]
    StillRunning(WorkflowStatus),
    #[error("step {step} is {status}: only a failed or cancelled step can be retried")]
    NotRetryable { step: u32, status: StepStatus },
    #[error("step {0} is running: cancel it first")]
    Running(u32),
    #[error("step {step} is {status}, and the workflow is still {workflow}: wait for it to end")]
    NotEndedYet {
        step: u32,
        status: StepStatus,
        workflow: WorkflowStatus,
    },
}

impl Workflow {
    /// Starts every step that is ready, then ends the workflow if nothing is left to do. Returns
    /// the effects to perform; calling it again on the saved record returns nothing new.
    pub fn advance(&mut self, now: Timestamp) -> Vec<Effect> {
        if self.steps.is_empty() {
            // Not laid out yet (see `lay_out`): nothing can start, and nothing is finished.
            return vec![];
        }
        let mut effects = Vec::new();
        for i in self.ready_steps() {
            let id = self.job_id(i);
            let Some(step) = self.step_mut(i) else {
                continue;
            };
            step.started_at = Some(now.to_string());
            match step.kind {
                StepKind::Approve => {
                    step.status = StepStatus::Waiting;
                    step.approval_id = Some(id);
                }
                StepKind::Build => step.status = StepStatus::Running,
                StepKind::Sync
                | StepKind::Plan
                | StepKind::Apply
                | StepKind::Teardown
                | StepKind::Action => {
                    step.status = StepStatus::Running;
                    step.job_id = Some(id);
                }
            }
            effects.push(Effect::Start { step: i });
        }
        if self.refresh_status(now) && self.status.is_terminal() {
            // What never started says so, rather than staying `pending` for ever.
            let why = match self.status {
                WorkflowStatus::Failed => "not attempted: the workflow failed",
                _ => "not attempted: the workflow was cancelled",
            };
            for step in self
                .steps
                .iter_mut()
                .filter(|s| s.status == StepStatus::Pending)
            {
                step.status = StepStatus::NotAttempted;
                step.message = Some(why.to_string());
                step.finished_at = Some(now.to_string());
            }
            effects.push(Effect::Finished {
                status: self.status,
            });
        }
        if !effects.is_empty() {
            self.updated_at = now.to_string();
        }
        effects
    }

    /// Records how a started step ended. The workflow itself ends in the next [`Self::advance`].
    pub fn finish_step(
        &mut self,
        index: u32,
        outcome: StepOutcome,
        actor: Option<String>,
        now: Timestamp,
    ) -> Result<(), Illegal> {
        if self.status.is_terminal() {
            return Err(Illegal::WorkflowEnded(self.status));
        }
        let step = self.step(index).ok_or(Illegal::NoSuchStep(index))?;
        match step.status {
            StepStatus::Running | StepStatus::Waiting => {}
            StepStatus::Pending => {
                return Err(Illegal::NotStarted {
                    step: index,
                    status: step.status,
                });
            }
            status => {
                return Err(Illegal::AlreadyEnded {
                    step: index,
                    status,
                });
            }
        }
        if matches!(outcome, StepOutcome::NoChanges(_)) && step.kind != StepKind::Plan {
            return Err(Illegal::NotAPlan {
                step: index,
                kind: step.kind,
            });
        }
        if matches!(outcome, StepOutcome::Skipped { .. }) && step.kind != StepKind::Approve {
            return Err(Illegal::NotAnApproval {
                step: index,
                kind: step.kind,
            });
        }
        let component = step.component.clone();
        let (status, message) = match outcome {
            StepOutcome::Succeeded(m) | StepOutcome::NoChanges(m) if self.cancel_requested => {
                // It ended well, but the user asked to stop: nothing after it starts.
                (StepStatus::Succeeded, m)
            }
            StepOutcome::NoChanges(m) => {
                for kind in [StepKind::Approve, StepKind::Apply] {
                    if let Some(i) = self.find(&component, kind).map(|s| s.index)
                        && let Some(s) = self.step_mut(i)
                        && s.status == StepStatus::Pending
                    {
                        s.status = StepStatus::Skipped;
                        s.message = Some("no changes".into());
                        s.finished_at = Some(now.to_string());
                    }
                }
                (StepStatus::Succeeded, m)
            }
            StepOutcome::Skipped {
                message,
                dependents,
            } => {
                self.skip_apply_of(&component, dependents, &message, now);
                (StepStatus::Skipped, message)
            }
            StepOutcome::Succeeded(m) => (StepStatus::Succeeded, m),
            StepOutcome::Failed(m) => (StepStatus::Failed, m),
            StepOutcome::Cancelled(m) => (StepStatus::Cancelled, m),
        };
        if let Some(step) = self.step_mut(index) {
            step.status = status;
            step.message = Some(message);
            step.finished_at = Some(now.to_string());
            if actor.is_some() {
                step.actor = actor;
            }
        }
        self.updated_at = now.to_string();
        Ok(())
    }

    /// Skips the pending apply of `component` and, with `dependents`, every pending step that waits
    /// on a skipped one, transitively.
    fn skip_apply_of(&mut self, component: &str, dependents: bool, why: &str, now: Timestamp) {
        // What the approval guards: an apply, or a removed component's teardown.
        let Some(apply) = self
            .find(component, StepKind::Apply)
            .or_else(|| self.find(component, StepKind::Teardown))
            .map(|s| s.index)
        else {
            return;
        };
        let mut skipped = vec![apply];
        let mut i = 0;
        while i < skipped.len() {
            let cause = skipped[i];
            i += 1;
            if let Some(s) = self.step_mut(cause)
                && s.status == StepStatus::Pending
            {
                s.status = StepStatus::Skipped;
                s.finished_at = Some(now.to_string());
                s.message = Some(if s.component == component {
                    why.to_string()
                } else {
                    format!("skipped: it depends on {component}, whose plan was denied")
                });
            }
            if dependents {
                let next: Vec<u32> = self
                    .steps
                    .iter()
                    .filter(|s| s.status == StepStatus::Pending && s.after.contains(&cause))
                    .map(|s| s.index)
                    .filter(|n| !skipped.contains(n))
                    .collect();
                skipped.extend(next);
            }
        }
    }

    /// Stops the workflow: steps not started end not attempted, approvals waiting are
    /// withdrawn, builds are abandoned, and each running job is asked to stop; the workflow ends
    /// cancelled once they have.
    pub fn cancel(&mut self, actor: &str, now: Timestamp) -> Result<Vec<Effect>, Illegal> {
        if self.status.is_terminal() {
            return Err(Illegal::WorkflowEnded(self.status));
        }
        self.cancel_requested = true;
        let mut effects = Vec::new();
        for step in &mut self.steps {
            let end = |step: &mut crate::Step, message: &str| {
                step.status = if step.status == StepStatus::Pending {
                    StepStatus::NotAttempted
                } else {
                    StepStatus::Cancelled
                };
                step.message = Some(message.to_string());
                step.actor = Some(actor.to_string());
                step.finished_at = Some(now.to_string());
            };
            match (step.status, step.kind, step.job_id.clone()) {
                (StepStatus::Pending, _, _) => {
                    end(step, "not attempted: the workflow was cancelled")
                }
                (StepStatus::Waiting, _, _) | (StepStatus::Running, StepKind::Build, _) => {
                    end(step, "cancelled")
                }
                (StepStatus::Running, _, Some(job_id)) => effects.push(Effect::CancelJob {
                    step: step.index,
                    job_id,
                }),
                (StepStatus::Running, _, None) => end(step, "cancelled"),
                _ => {}
            }
        }
        self.updated_at = now.to_string();
        effects.extend(self.advance(now));
        Ok(effects)
    }

    /// Runs an ended workflow again from a failed or cancelled step: that step and every step not
    /// attempted become pending (with a new attempt number, so their jobs get new ids), and ready
    /// steps start. A failed apply runs again from its plan: the saved plan may be stale, and a new
    /// plan needs a new approval.
    pub fn retry(
        &mut self,
        index: u32,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Effect>, Illegal> {
        if !matches!(
            self.status,
            WorkflowStatus::Failed | WorkflowStatus::Cancelled
        ) {
            return Err(Illegal::StillRunning(self.status));
        }
        let step = self.step(index).ok_or(Illegal::NoSuchStep(index))?;
        if !matches!(step.status, StepStatus::Failed | StepStatus::Cancelled) {
            return Err(Illegal::NotRetryable {
                step: index,
                status: step.status,
            });
        }
        let replan: Vec<u32> = if step.kind == StepKind::Apply {
            [StepKind::Plan, StepKind::Approve]
                .iter()
                .filter_map(|k| self.find(&step.component, *k).map(|s| s.index))
                .collect()
        } else {
            vec![]
        };
        for step in &mut self.steps {
            if matches!(
                step.status,
                StepStatus::Failed | StepStatus::Cancelled | StepStatus::NotAttempted
            ) || replan.contains(&step.index)
            {
                step.status = StepStatus::Pending;
                step.attempt = step.attempt.max(1) + 1;
                step.job_id = None;
                step.approval_id = None;
                step.message = None;
                step.started_at = None;
                step.finished_at = None;
            }
        }
        self.respond(index, actor, "retry", now);
        self.cancel_requested = false;
        self.status = WorkflowStatus::Running;
        self.finished_at = None;
        Ok(self.advance(now))
    }

    /// Skips a step that has not run (pending, or an approval waiting) or that failed or was
    /// cancelled in an ended workflow, with the later steps of its component (a skipped plan has
    /// nothing to approve or apply). Steps that depend on it run with what the component has
    /// deployed. Skipping in an ended workflow runs it on: steps not attempted become pending.
    pub fn skip(
        &mut self,
        index: u32,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Effect>, Illegal> {
        let step = self.step(index).ok_or(Illegal::NoSuchStep(index))?;
        let reopen = match step.status {
            StepStatus::Pending | StepStatus::Waiting if !self.status.is_terminal() => false,
            StepStatus::Failed | StepStatus::Cancelled | StepStatus::NotAttempted
                if matches!(
                    self.status,
                    WorkflowStatus::Failed | WorkflowStatus::Cancelled
                ) =>
            {
                true
            }
            StepStatus::Running => return Err(Illegal::Running(index)),
            StepStatus::Failed | StepStatus::Cancelled => {
                return Err(Illegal::NotEndedYet {
                    step: index,
                    status: step.status,
                    workflow: self.status,
                });
            }
            StepStatus::Pending | StepStatus::Waiting => {
                return Err(Illegal::WorkflowEnded(self.status));
            }
            status => {
                return Err(Illegal::AlreadyEnded {
                    step: index,
                    status,
                });
            }
        };
        let (component, rank) = (step.component.clone(), step.kind.rank());
        for s in self
            .steps
            .iter_mut()
            .filter(|s| s.component == component && s.kind.rank() >= rank && !s.status.is_done())
        {
            s.status = StepStatus::Skipped;
            s.message = Some(if s.index == index {
                format!("skipped by {actor}")
            } else {
                format!("skipped: step {index} of {component} was skipped")
            });
            s.finished_at = Some(now.to_string());
        }
        self.respond(index, actor, "skip", now);
        if reopen {
            for s in self
                .steps
                .iter_mut()
                .filter(|s| s.status == StepStatus::NotAttempted)
            {
                s.status = StepStatus::Pending;
                s.message = None;
                s.finished_at = None;
            }
            self.cancel_requested = false;
            self.status = WorkflowStatus::Running;
            self.finished_at = None;
        }
        self.updated_at = now.to_string();
        Ok(self.advance(now))
    }

    /// An approval given to a plan too old to trust (`why` says how old): instead of the apply,
    /// the component's plan and approval run again under new attempts, so an apply only ever runs
    /// a fresh plan that was approved.
    pub fn replan(
        &mut self,
        approve: u32,
        why: &str,
        now: Timestamp,
    ) -> Result<Vec<Effect>, Illegal> {
        if self.status.is_terminal() {
            return Err(Illegal::WorkflowEnded(self.status));
        }
        let step = self.step(approve).ok_or(Illegal::NoSuchStep(approve))?;
        if step.kind != StepKind::Approve {
            return Err(Illegal::NotAnApproval {
                step: approve,
                kind: step.kind,
            });
        }
        if step.status != StepStatus::Waiting {
            return Err(Illegal::AlreadyEnded {
                step: approve,
                status: step.status,
            });
        }
        let component = step.component.clone();
        for s in self.steps.iter_mut().filter(|s| s.component == component) {
            match s.kind {
                StepKind::Plan | StepKind::Approve => {
                    s.attempt = s.attempt.max(1) + 1;
                    s.message = Some(format!("planned again: {why}"));
                }
                StepKind::Apply => s.message = None,
                _ => continue,
            }
            s.status = StepStatus::Pending;
            s.job_id = None;
            s.approval_id = None;
            s.started_at = None;
            s.finished_at = None;
        }
        self.updated_at = now.to_string();
        Ok(self.advance(now))
    }

    /// Records a person's response to a step (who, when, what).
    pub fn respond(&mut self, index: u32, actor: &str, action: &str, now: Timestamp) {
        if let Some(s) = self.step_mut(index) {
            s.responses.push(crate::Response {
                actor: actor.to_string(),
                at: now.to_string(),
                action: action.to_string(),
            });
        }
    }

    /// Lays out the steps of a requested workflow (which has none yet), or fails it with the reason
    /// it cannot be laid out. Then advances.
    pub fn lay_out(
        &mut self,
        steps: Result<Vec<crate::Step>, String>,
        now: Timestamp,
    ) -> Result<Vec<Effect>, Illegal> {
        if self.status.is_terminal() {
            return Err(Illegal::WorkflowEnded(self.status));
        }
        if !self.steps.is_empty() {
            return Err(Illegal::AlreadyLaidOut);
        }
        match steps {
            Ok(steps) => {
                self.steps = steps;
                self.updated_at = now.to_string();
                Ok(self.advance(now))
            }
            Err(reason) => {
                self.error = Some(reason);
                self.status = WorkflowStatus::Failed;
                self.finished_at = Some(now.to_string());
                self.updated_at = now.to_string();
                Ok(vec![Effect::Finished {
                    status: WorkflowStatus::Failed,
                }])
            }
        }
    }

    /// The id of the job (or approval) of step `index`: `<workflow>-<step>`, with `-<attempt>` after
    /// a retry, so a retried step never meets its earlier job.
    pub fn job_id(&self, index: u32) -> String {
        match self.step(index).map(|s| s.attempt) {
            Some(a) if a > 1 => format!("{}-{index}-{a}", self.id),
            _ => format!("{}-{index}", self.id),
        }
    }
}

#[cfg(test)]
mod tests;
