//! The reconcile pass: every few seconds, every unfinished workflow is re-driven from its
//! records, so whatever a crash, a lost message or a dropped connection interrupted is finished.

use ferry_model::{self as m, Workflow};
use tracing::warn;

use crate::work::Work;
use crate::{RECONCILE_INTERVAL, Scheduler, SchedulerError};

impl Scheduler {
    pub(crate) async fn reconcile_loop(self) -> Result<(), SchedulerError> {
        let mut tick = tokio::time::interval(RECONCILE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.reconcile().await {
                self.unsteady();
                warn!(error = %e, "reconcile pass failed");
            }
        }
    }

    /// Re-drives every unfinished workflow from its records: performs the side effects of started
    /// steps that have not happened (a crash between the record and the effect), picks up results
    /// that arrived while no scheduler ran, and advances. Reads only the open workflows.
    pub(crate) async fn reconcile(&self) -> Result<(), SchedulerError> {
        let open = self.store.repo::<m::OpenWorkflow>();
        for mark in open.list_all().await? {
            // Written by this scheduler since the last pass: moving, not stuck (a release's
            // wave is a thousand of these, each a few reads a pass). Were it stuck, the next
            // pass sees it.
            if self
                .workflows
                .written_within(&mark.org, &mark.id, RECONCILE_INTERVAL)
            {
                continue;
            }
            let wf = match self
                .store
                .repo::<Workflow>()
                .get(&mark.org, &mark.id)
                .await?
            {
                Some(v) => v.value,
                // Discarded by the API after losing a reservation, or never written.
                None => {
                    open.delete(&mark.org, &mark.id).await?;
                    continue;
                }
            };
            if wf.status.is_terminal() {
                // Finished, but the scheduler stopped (or its audit record was not taken)
                // before it removed the mark.
                self.close_finished(&wf).await?;
                continue;
            }
            let mut work = Vec::new();
            for step in &wf.steps {
                if !matches!(step.status, m::StepStatus::Running | m::StepStatus::Waiting) {
                    continue;
                }
                match self.resume_step(&wf, step.index).await {
                    Ok(w) => work.extend(w),
                    Err(e) => {
                        warn!(org = %wf.org, workflow = %wf.id, step = step.index, error = %e, "resuming step failed")
                    }
                }
            }
            work.push(Work::advance(&wf.org, &wf.id));
            self.execute(work).await?;
        }
        Ok(())
    }

    /// What the end of a finished workflow left undone: the install's status, its audit record,
    /// then its open mark.
    async fn close_finished(&self, wf: &Workflow) -> Result<(), SchedulerError> {
        self.finish_install(wf).await?;
        self.audit(&m::AuditEvent::workflow_ended(wf)).await?;
        self.store
            .repo::<m::OpenWorkflow>()
            .delete(&wf.org, &wf.id)
            .await?;
        Ok(())
    }
}
