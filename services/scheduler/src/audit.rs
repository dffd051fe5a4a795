//! Writing the scheduler's audit records, none of them dropped.
//!
//! A record is tried a few times at once (a hub node moving its stream's leader takes a moment),
//! every failed attempt counted in `ferry_audit_failures_total`; if the stream still does not
//! take it, the error is transient and goes back to whatever the record is part of — a message
//! redelivered, a workflow's end the reconcile pass finishes, a sweep run again — which writes
//! it again. Each record's time comes from the record it is about (`ferry_model::audit`), so
//! the bus keeps a record written twice once.

use std::time::Duration;

use ferry_model as m;
use tracing::warn;

use crate::{Scheduler, SchedulerError};

/// Attempts at once before the record goes back to its caller's retry.
const ATTEMPTS: u32 = 3;

/// The wait before the second attempt; each later one waits four times longer.
const FIRST_WAIT: Duration = Duration::from_millis(100);

impl Scheduler {
    pub(crate) async fn audit(&self, event: &m::AuditEvent) -> Result<(), SchedulerError> {
        let mut wait = FIRST_WAIT;
        for attempt in 1.. {
            let e = match self.store.bus().audit(event).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            ferry_telemetry::metrics().audit_failures.inc();
            warn!(org = %event.org, action = %event.action, target = %event.target, attempt, error = %e, "audit record not written");
            if attempt >= ATTEMPTS {
                return Err(SchedulerError::Audit(e));
            }
            tokio::time::sleep(wait).await;
            wait *= 4;
        }
        Ok(())
    }
}
