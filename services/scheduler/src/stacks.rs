//! Install stack reports: a runner reads its stack in the customer's account and sends its
//! status and outputs (`StackReport`); the install named by the subject records them
//! (`Install::stack_reported`: bounded, keyed as Nuon's `install_stack.outputs`), where
//! templates (`.nuon.install_stack`) and `installs get` read them. Each install's reports are
//! rate-limited before anything is read.

use std::collections::HashMap;

use ferry_model as m;
use ferry_protocol::messages::StackReport;
use ferry_store::serve::take;
use tracing::{debug, warn};

use crate::{Scheduler, SchedulerError};

/// Replicas share the reports (queue group).
const QUEUE: &str = "scheduler-stacks";

/// Reports an install may send at once, and one more every `REFILL_MS`: a runner sends one a
/// minute, an install may have several runner hosts; one sending thousands costs no store reads.
const AT_ONCE: u32 = 4;
const REFILL_MS: u64 = 10_000;

/// Each install's reports allowed, in this replica (`ferry_model::quotas::TokenBucket`).
type Limits = std::sync::Mutex<HashMap<(String, String), m::quotas::TokenBucket>>;

impl Scheduler {
    pub(crate) async fn serve_stack_reports(self) -> Result<(), SchedulerError> {
        let client = self.client.clone();
        let limits = Limits::default();
        take::<StackReport, _, _>(client, QUEUE, |caller, report| {
            let s = self.clone();
            let allowed = allow(&limits, &caller.org, &caller.install);
            async move {
                if !allowed {
                    debug!(org = %caller.org, install = %caller.install, "stack report over the install's rate: dropped");
                    return;
                }
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
            .modify(org, install, |i| i.stack_reported(seen(&report), now))
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

/// Whether `install` of `org` may have a report recorded now: checked before anything is read.
fn allow(limits: &Limits, org: &str, install: &str) -> bool {
    let now = m::now_ms();
    let Ok(mut buckets) = limits.lock() else {
        return false;
    };
    buckets
        .entry((org.to_string(), install.to_string()))
        .or_insert_with(|| m::quotas::TokenBucket::full(AT_ONCE, now))
        .take(now, AT_ONCE, REFILL_MS)
}

/// A report as the model takes it.
fn seen(report: &StackReport) -> m::StackSeen {
    m::StackSeen {
        stack_id: report.stack_id.clone(),
        status: report.status.clone(),
        outputs: report.outputs.clone(),
        secrets: report.secrets.as_ref().map(|all| {
            all.iter()
                .map(|s| {
                    let state = m::SecretState {
                        arn: s.arn.clone(),
                        timestamp: s.last_changed.clone(),
                        length: s.length,
                    };
                    (s.name.clone(), state)
                })
                .collect()
        }),
    }
}
