//! A transition asked of a workflow, as data: the scheduler's handlers decide *which* change a
//! message means and hand it to the executor's queue; applying it to the record is
//! [`Workflow::apply`], one pure function. Being data (not a closure), a change can wait in the
//! executor's queue behind the effects of an earlier one, so performing an effect never recurses
//! into another transition.

use super::{Effect, Illegal, StepOutcome};
use crate::Timestamp;
use crate::Workflow;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Lay the workflow out (once) and start what is ready: nothing else.
    Advance,
    /// A started step ended.
    Finish {
        step: u32,
        outcome: StepOutcome,
        actor: Option<String>,
    },
    /// A person decided an approve step: the response is recorded with the outcome.
    Decide {
        step: u32,
        outcome: StepOutcome,
        actor: Option<String>,
        /// Who responded and what they did (`approve`, `deny (skip-current)`).
        who: String,
        action: String,
    },
    /// An approval came for a plan too old to trust (`why`): plan and approve again.
    Replan {
        step: u32,
        who: String,
        why: String,
    },
    Cancel {
        actor: String,
    },
    Retry {
        step: u32,
        actor: String,
    },
    Skip {
        step: u32,
        actor: String,
    },
}

impl Change {
    pub fn finish(step: u32, outcome: StepOutcome, actor: &str) -> Change {
        Change::Finish {
            step,
            outcome,
            actor: Some(actor.to_string()),
        }
    }
}

impl Workflow {
    /// Applies `change` at `now`; the effects are those of the change itself (starting what a
    /// finished step makes ready is [`Workflow::advance`], which the executor runs after every
    /// change).
    pub fn apply(&mut self, change: &Change, now: Timestamp) -> Result<Vec<Effect>, Illegal> {
        match change {
            Change::Advance => Ok(vec![]),
            Change::Finish {
                step,
                outcome,
                actor,
            } => self
                .finish_step(*step, outcome.clone(), actor.clone(), now)
                .map(|()| vec![]),
            Change::Decide {
                step,
                outcome,
                actor,
                who,
                action,
            } => {
                self.finish_step(*step, outcome.clone(), actor.clone(), now)?;
                self.respond(*step, who, action, now);
                Ok(vec![])
            }
            Change::Replan { step, who, why } => {
                // The response is kept even if the replan is refused: the person did approve.
                self.respond(*step, who, "approve", now);
                self.replan(*step, why, now)
            }
            Change::Cancel { actor } => self.cancel(actor, now),
            Change::Retry { step, actor } => self.retry(*step, actor, now),
            Change::Skip { step, actor } => self.skip(*step, actor, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::at;
    use crate::{Deployable, StepStatus, WorkflowKind};

    const NOW: &str = "2026-11-27T10:00:00.000Z";

    /// `a` alone: build 0, sync 1, plan 2, approve 3, apply 4; build started.
    fn started() -> Workflow {
        let mut w = Workflow::deploy(
            "w".into(),
            "o".into(),
            "i".into(),
            WorkflowKind::DeployComponents,
            "c".into(),
            &[vec![Deployable::named("a", &[])]],
        );
        w.advance(at(NOW));
        w
    }

    /// Runs the workflow through plan and leaves the approve step waiting.
    fn waiting() -> Workflow {
        let mut w = started();
        for i in 0..3 {
            w.apply(
                &Change::finish(i, StepOutcome::Succeeded("ok".into()), "t"),
                at(NOW),
            )
            .unwrap();
            w.advance(at(NOW));
        }
        assert_eq!(w.steps[3].status, StepStatus::Waiting);
        w
    }

    #[test]
    fn advance_alone_changes_nothing() {
        let mut w = started();
        let before = w.clone();
        assert_eq!(w.apply(&Change::Advance, at(NOW)), Ok(vec![]));
        assert_eq!(w, before);
    }

    #[test]
    fn finish_is_finish_step_with_its_actor() {
        let mut w = started();
        let c = Change::finish(0, StepOutcome::Succeeded("built".into()), "build");
        w.apply(&c, at(NOW)).unwrap();
        assert_eq!(w.steps[0].status, StepStatus::Succeeded);
        // A repeat is refused and leaves the record as it is.
        let after = w.clone();
        assert!(matches!(
            w.apply(&c, at(NOW)),
            Err(Illegal::AlreadyEnded { step: 0, .. })
        ));
        assert_eq!(w, after);
    }

    #[test]
    fn a_decision_ends_the_approval_and_records_who_responded() {
        let mut w = waiting();
        let c = Change::Decide {
            step: 3,
            outcome: StepOutcome::Succeeded("plan approved".into()),
            actor: Some("token:alice".into()),
            who: "token:alice".into(),
            action: "approve".into(),
        };
        w.apply(&c, at(NOW)).unwrap();
        assert_eq!(w.steps[3].status, StepStatus::Succeeded);
        assert_eq!(w.steps[3].responses.len(), 1);
        assert_eq!(w.steps[3].responses[0].action, "approve");
    }

    #[test]
    fn a_replan_records_the_approval_and_plans_again() {
        let mut w = waiting();
        let c = Change::Replan {
            step: 3,
            who: "token:alice".into(),
            why: "the approved plan was 4days old".into(),
        };
        let effects = w.apply(&c, at(NOW)).unwrap();
        assert_eq!(w.steps[3].responses[0].actor, "token:alice");
        assert_eq!(w.steps[2].status, StepStatus::Running);
        assert_eq!(effects, vec![Effect::Start { step: 2 }]);
    }

    #[test]
    fn cancel_retry_and_skip_are_the_state_machines_own() {
        let mut w = started();
        let c = Change::Cancel {
            actor: "token:bob".into(),
        };
        assert_eq!(w.clone().apply(&c, at(NOW)), w.cancel("token:bob", at(NOW)));
        let mut r = started();
        assert!(matches!(
            r.apply(
                &Change::Retry {
                    step: 0,
                    actor: "t".into()
                },
                at(NOW)
            ),
            Err(Illegal::StillRunning(_))
        ));
    }
}
