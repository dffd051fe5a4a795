//! Whether the hub has been whole long enough to expire leases: not within a lease period of
//! this scheduler starting, its connection coming back, or a reconcile pass failing (runners cut
//! off by the same disruption renew first).

use std::time::Duration;

use ferry_model as m;

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Whether a lease that ended (by the record) may be expired now: not before this scheduler
    /// has been up for a whole lease period.
    pub(crate) fn may_expire_leases(&self) -> bool {
        let since = self
            .steady_since_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        m::may_expire_leases(since, self.lease.as_millis() as u64, m::Timestamp::now())
    }

    /// The hub was not whole just now: the lease grace starts again.
    pub(crate) fn unsteady(&self) {
        self.steady_since_ms
            .store(m::now_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Watches this scheduler's connection: while it is down, and when it comes back, the lease
    /// grace starts again.
    pub(crate) async fn watch_connection(self) -> Result<(), SchedulerError> {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            if self.client.connection_state() != async_nats::connection::State::Connected {
                self.unsteady();
            }
        }
    }
}
