//! The executor: the one place where the model's decisions about a workflow are carried out.
//!
//! Every handler of the scheduler (a control message, a runner's result, the reconcile pass, a
//! scheduled tick, a release sweep) turns what it heard into [`Work`] and hands it to
//! [`Scheduler::execute`]. A [`Work::Change`] loads the workflow, applies the change and
//! advances it (`ferry_model::Workflow::apply` and `advance`, pure), saves the record by
//! compare-and-swap, and yields the effects the model returned; a [`Work::Effect`] performs one
//! of them (start a step, stop a job, close an ended workflow) and may yield more work — a step
//! that ends at once (a reused build, a step that cannot start) yields the change that ends it.
//!
//! Work yielded is queued, never run inside the work that yielded it: nothing here recurses, a
//! deep workflow cannot grow the stack, and each transition is saved before anything it causes
//! runs. A crash between a save and its effects is what the reconcile pass repairs (effects are
//! idempotent). The first error stops the queue and goes back to the handler, whose message is
//! then retried or whose pass runs again.

use std::collections::VecDeque;
use std::sync::Arc;

use ferry_model::{self as m, Change, Effect, Workflow};
use ferry_store::{StoreError, Versioned};
use futures_util::StreamExt;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::work::Work;
use crate::{Scheduler, SchedulerError};

/// How long a release's writer waits for more of its workflows to end before it writes: a
/// wave of 900 deploys ends over seconds, and a write per end rewrote the whole release (150 KB
/// for 1,000 installs) 900 times. The last end of a wave moves the release this much later.
pub(crate) const RELEASE_GATHER: std::time::Duration = std::time::Duration::from_millis(250);

type WriterFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

impl Scheduler {
    /// Runs `work` and everything it yields, in order, until the queue is empty or an error.
    pub(crate) async fn execute(
        &self,
        work: impl IntoIterator<Item = Work>,
    ) -> Result<(), SchedulerError> {
        let mut queue: VecDeque<Work> = work.into_iter().collect();
        while let Some(next) = queue.pop_front() {
            // Boxed once here, not along the way: a step's effect (render, record, offer) is a
            // large future, and the queue is what keeps the nesting of futures one deep.
            let more = match next {
                Work::Change {
                    org,
                    workflow,
                    change,
                } => {
                    let changes = same_workflow(&mut queue, &org, &workflow, change);
                    Box::pin(self.transition(&org, &workflow, &changes)).await?
                }
                Work::Effect { wf, effect } => Box::pin(self.perform(&wf, effect)).await?,
                Work::ReleaseWorkflowEnded {
                    org,
                    release,
                    workflow,
                } => {
                    if Box::pin(self.release_workflow_ended(&org, &release, &workflow)).await? {
                        self.tasks.spawn(self.clone().write_release(org, release));
                    }
                    vec![]
                }
            };
            queue.extend(more);
        }
        Ok(())
    }

    /// The writer of a release (`coalesce.rs`): after [`RELEASE_GATHER`], feeds it the ends of
    /// its workflows queued meanwhile, one write for all, and runs what that starts; again
    /// until none is queued. A failure is left to the next writer and the release sweep.
    /// Boxed by hand: what it runs may start another writer, so its future holds its own type.
    fn write_release(self, org: String, release: String) -> WriterFuture {
        Box::pin(async move {
            tokio::time::sleep(RELEASE_GATHER).await;
            loop {
                let work = match self.apply_waiting_release_ends(&org, &release).await {
                    Ok(Some(work)) => work,
                    Ok(None) => return,
                    Err(e) => {
                        warn!(org, release, error = %e, "release not moved on its workflows' ends; the sweep moves it");
                        return;
                    }
                };
                // A wave's start is hundreds of workflows of different installs: started at
                // once, as their results are handled (`LANES`).
                futures_util::stream::iter(work)
                    .for_each_concurrent(crate::LANES, |w| async {
                        if let Err(e) = self.execute([w]).await {
                            warn!(org, release, error = %e, "a release's workflow not started; the sweep starts it");
                        }
                    })
                    .await;
            }
        })
    }

    /// Applies `changes` in order to the workflow (laying it out first if needed), advances it,
    /// saves the record if anything changed, and returns the effects to perform. An illegal
    /// change (a duplicate or late message) leaves the record as it is.
    async fn transition(
        &self,
        org: &str,
        workflow_id: &str,
        changes: &[Change],
    ) -> Result<Vec<Work>, SchedulerError> {
        let span = info_span!(
            "workflow",
            org,
            workflow = workflow_id,
            install = tracing::field::Empty
        );
        async move {
            let repo = self.store.repo::<Workflow>();
            // The copy this scheduler last wrote, if any (`ferry_store::LastWritten`): the
            // compare-and-swap below says whether it was current.
            let mut copy = self.workflows.get(org, workflow_id);
            loop {
                let from_copy = copy.is_some();
                let v = match copy.take() {
                    Some(v) => v,
                    None => match repo.get(org, workflow_id).await? {
                        Some(v) => v,
                        None => {
                            warn!("workflow not found");
                            return Ok(vec![]);
                        }
                    },
                };
                let mut wf = v.value.clone();
                tracing::Span::current().record("install", wf.install.as_str());
                let effects = self.changed(&mut wf, changes).await?;
                if wf == v.value {
                    // Nothing to do on a copy may be the copy's staleness: decide on a read.
                    if from_copy {
                        continue;
                    }
                    return Ok(vec![]);
                }
                if effects.iter().any(|e| matches!(e, Effect::Finished { .. })) {
                    // The install's status first: whoever sees the workflow finished sees the
                    // install's final status too. (Idempotent if this CAS loop goes round again.)
                    self.finish_install(&wf).await?;
                }
                if !self.save(&wf, v.revision).await? {
                    continue;
                }
                let wf = Arc::new(wf);
                return Ok(effects
                    .into_iter()
                    .map(|effect| Work::Effect {
                        wf: wf.clone(),
                        effect,
                    })
                    .collect());
            }
        }
        .instrument(span)
        .await
    }

    /// `wf` laid out (once), `changes` applied in order, advanced: the effects to perform once
    /// it is saved.
    async fn changed(
        &self,
        wf: &mut Workflow,
        changes: &[Change],
    ) -> Result<Vec<Effect>, SchedulerError> {
        let now = m::Timestamp::now();
        let mut effects = Vec::new();
        if wf.steps.is_empty() && !wf.status.is_terminal() {
            let mut steps = self.lay_out(wf).await?;
            if let Ok(steps) = &mut steps {
                self.name_builds(wf, steps).await?;
            }
            effects.extend(wf.lay_out(steps, now).unwrap_or_default());
        }
        for change in changes {
            match wf.apply(change, now) {
                Ok(e) => effects.extend(e),
                Err(illegal) => debug!(%illegal, "transition refused; the record stands"),
            }
        }
        effects.extend(wf.advance(now));
        Ok(effects)
    }

    /// Saves `wf` by compare-and-swap on `revision`, keeping it as last written while it runs;
    /// `false` when someone else wrote it since.
    async fn save(&self, wf: &Workflow, revision: u64) -> Result<bool, SchedulerError> {
        let (org, id) = (wf.org.as_str(), wf.id.as_str());
        match self.store.repo::<Workflow>().update(wf, revision).await {
            Ok(revision) if !wf.status.is_terminal() => {
                let value = wf.clone();
                self.workflows.put(org, id, Versioned { value, revision });
                Ok(true)
            }
            Ok(_) => {
                self.workflows.forget(org, id);
                Ok(true)
            }
            Err(StoreError::Conflict { .. }) => Ok(false),
            Err(e) => {
                self.workflows.forget(org, id);
                Err(e.into())
            }
        }
    }

    async fn perform(&self, wf: &Workflow, effect: Effect) -> Result<Vec<Work>, SchedulerError> {
        match effect {
            Effect::Start { step } => {
                if let Some(s) = wf.step(step) {
                    info!(org = %wf.org, workflow = %wf.id, component = %s.component, step = s.kind.label(), "step started");
                }
                self.start_step(wf, step).await
            }
            Effect::CancelJob { job_id, .. } => self.cancel_job(wf, &job_id).await,
            Effect::Finished { .. } => {
                self.finished(wf).await?;
                // Last: until it is gone, reconcile finishes what a crash here interrupted.
                self.store
                    .repo::<m::OpenWorkflow>()
                    .erase(&wf.org, &wf.id)
                    .await?;
                // A release's workflow moves its release on now, not at the next sweep.
                Ok(wf
                    .release_of()
                    .map(|release| Work::ReleaseWorkflowEnded {
                        org: wf.org.clone(),
                        release: release.to_string(),
                        workflow: wf.id.clone(),
                    })
                    .into_iter()
                    .collect())
            }
        }
    }
}

/// `first` and every other change to the same workflow waiting in `queue`, taken out in order:
/// one transition, one write for all. Two reused builds that end at once were two writes.
/// Applying them together is applying them one after another: each was yielded by an effect
/// already performed, and `advance` starts what is ready whatever order the ends came in.
fn same_workflow(
    queue: &mut VecDeque<Work>,
    org: &str,
    workflow: &str,
    first: Change,
) -> Vec<Change> {
    let mut changes = vec![first];
    let mut rest = VecDeque::with_capacity(queue.len());
    for w in queue.drain(..) {
        match w {
            Work::Change {
                org: o,
                workflow: id,
                change,
            } if o == org && id == workflow => changes.push(change),
            other => rest.push_back(other),
        }
    }
    *queue = rest;
    changes
}
