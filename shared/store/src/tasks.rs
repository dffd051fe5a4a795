//! Who owns a service's tasks. A service answers each request (a claim, an artifact read, a
//! connecting runner, a followed log) in a task of its own so one slow answer holds up no other;
//! every such task is spawned on the service's [`Tasks`], never detached. Stopping a service
//! ends its loops and then waits — a bounded time — for the tasks in flight: a request being
//! answered is answered, not cut off mid-way, and nothing outlives the service unseen.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

/// How long a stopping service waits for its tasks in flight.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// A service's tasks and the signal that stops it. Cloning shares both.
#[derive(Clone, Debug, Default)]
pub struct Tasks {
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl Tasks {
    /// Tasks that stop when `stop` is cancelled (a child of the process's token).
    pub fn stopped_by(stop: CancellationToken) -> Tasks {
        Tasks {
            tracker: TaskTracker::new(),
            stop,
        }
    }

    /// Runs `task` as one of these tasks.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(task);
    }

    /// Resolves once the service is asked to stop.
    pub async fn stopping(&self) {
        self.stop.cancelled().await
    }

    /// How many tasks are in flight.
    pub fn in_flight(&self) -> usize {
        self.tracker.len()
    }

    /// Runs the service's loops (`serve`) until they end or the service is asked to stop, then
    /// waits up to [`STOP_GRACE`] for its tasks in flight. `name` names the service in the log.
    pub async fn serve<E>(
        &self,
        name: &str,
        serve: impl Future<Output = Result<(), E>>,
    ) -> Result<(), E> {
        let r = tokio::select! {
            r = serve => r,
            () = self.stop.cancelled() => Ok(()),
        };
        self.tracker.close();
        let left = self.tracker.len();
        if left > 0 {
            info!(
                service = name,
                tasks = left,
                "waiting for the tasks in flight"
            );
        }
        if tokio::time::timeout(STOP_GRACE, self.tracker.wait())
            .await
            .is_err()
        {
            warn!(
                service = name,
                tasks = self.tracker.len(),
                "tasks still running after the grace; leaving them"
            );
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test]
    async fn stopping_waits_for_the_tasks_in_flight() {
        let stop = CancellationToken::new();
        let tasks = Tasks::stopped_by(stop.clone());
        let answered = Arc::new(AtomicBool::new(false));
        let a = answered.clone();
        tasks.spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            a.store(true, Ordering::SeqCst);
        });
        stop.cancel();
        let r: Result<(), ()> = tasks.serve("test", std::future::pending()).await;
        assert!(r.is_ok());
        assert!(
            answered.load(Ordering::SeqCst),
            "the task in flight was cut off"
        );
        assert_eq!(tasks.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_loop_that_ends_ends_the_service_with_its_result() {
        let tasks = Tasks::default();
        let r: Result<(), &str> = tasks
            .serve("test", async { Err("subscription ended") })
            .await;
        assert_eq!(r, Err("subscription ended"));
    }
}
