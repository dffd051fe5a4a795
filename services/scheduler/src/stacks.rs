//! Install stack reports: a runner reads its stack in the customer's account and sends its
//! status and outputs (`StackReport`); the install named by the subject records them
//! (`Install::stack_reported`: bounded, keyed as Nuon's `install_stack.outputs`), where
//! templates (`.nuon.install_stack`) and `installs get` read them.

use ferry_model as m;
use ferry_protocol::messages::StackReport;
use ferry_store::serve::take;
use tracing::{debug, warn};

use crate::{Scheduler, SchedulerError};

/// Replicas share the reports (queue group).
const QUEUE: &str = "scheduler-stacks";

impl Scheduler {
    pub(crate) async fn serve_stack_reports(self) -> Result<(), SchedulerError> {
        let client = self.client.clone();
        take::<StackReport, _, _>(client, QUEUE, |caller, report| {
            let s = self.clone();
            async move {
                if let Err(e) = s.record_stack(&caller.org, &caller.install, report).await {
                    warn!(org = %caller.org, install = %caller.install, error = %e, "could not record a stack report");
                }
            }
        })
        .await?;
        Ok(())
    }

    async fn record_stack(
        &self,
        org: &str,
        install: &str,
        report: StackReport,
    ) -> Result<(), SchedulerError> {
        let now = m::Timestamp::now();
        let recorded = self
            .store
            .repo::<m::Install>()
            .modify(org, install, |i| {
                i.stack_reported(&report.stack_id, &report.status, &report.outputs, now)
            })
            .await;
        match recorded {
            Ok(Ok(_)) => debug!(org, install, status = %report.status, "stack report recorded"),
            Ok(Err(refused)) => warn!(org, install, "stack report refused: {refused}"),
            // An install deleted meanwhile has no stack to record.
            Err(ferry_store::StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}
