//! What the executor (`effects.rs`) is handed: a change to a workflow, or an effect of one
//! already saved. Data only, so handlers and effects can yield it without calling each other.

use std::sync::Arc;

use ferry_model::{Change, Effect, StepOutcome, Workflow};

/// One thing for the executor to do.
#[derive(Debug)]
pub(crate) enum Work {
    /// Apply a change to a workflow's record, then perform its effects.
    Change {
        org: String,
        workflow: String,
        change: Change,
    },
    /// Perform one effect of a saved transition of `wf`.
    Effect { wf: Arc<Workflow>, effect: Effect },
    /// A workflow of a release ended: move the release on.
    ReleaseWorkflowEnded {
        org: String,
        release: String,
        workflow: String,
    },
}

impl Work {
    /// Lay the workflow out (once) and start what is ready.
    pub(crate) fn advance(org: &str, workflow: &str) -> Work {
        Work::Change {
            org: org.into(),
            workflow: workflow.into(),
            change: Change::Advance,
        }
    }

    /// A started step of `wf` ended, as `actor` reports.
    pub(crate) fn finish(wf: &Workflow, step: u32, outcome: StepOutcome, actor: &str) -> Work {
        Work::on(&wf.org, &wf.id, Change::finish(step, outcome, actor))
    }

    pub(crate) fn on(org: &str, workflow: &str, change: Change) -> Work {
        Work::Change {
            org: org.into(),
            workflow: workflow.into(),
            change,
        }
    }
}
