//! The control plane's state as gauges on `/metrics`: jobs of unfinished workflows by state,
//! plans waiting for a decision, runners by health. Sampled from the records every
//! [`INTERVAL`], reading the open workflows (as the reconcile pass does) and the runners'
//! records, never the history.

use std::collections::BTreeMap;
use std::time::Duration;

use ferry_model as m;
use tracing::warn;

use crate::{Scheduler, SchedulerError};

pub(crate) const INTERVAL: Duration = Duration::from_secs(15);

/// The job states a queue is made of: those a job waits or runs in.
const QUEUE_STATES: [m::JobStatus; 3] = [
    m::JobStatus::Queued,
    m::JobStatus::Available,
    m::JobStatus::InProgress,
];

impl Scheduler {
    pub(crate) async fn gauges_loop(self) -> Result<(), SchedulerError> {
        let mut tick = tokio::time::interval(INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.sample_gauges().await {
                warn!(error = %e, "sampling the state gauges failed");
            }
        }
    }

    async fn sample_gauges(&self) -> Result<(), SchedulerError> {
        let metrics = ferry_telemetry::metrics();
        let now = m::Timestamp::now();
        let mut health: BTreeMap<&str, i64> = m::RUNNER_HEALTH_FILTERS
            .iter()
            .filter(|h| **h != m::health_name(None))
            .map(|h| (*h, 0))
            .collect();
        for r in self.store.repo::<m::RunnerRecord>().list_all().await? {
            *health
                .entry(m::health_name(Some(r.health(now))))
                .or_default() += 1;
        }
        let mut states: BTreeMap<&str, i64> = QUEUE_STATES.iter().map(|s| (s.name(), 0)).collect();
        let mut waiting = 0;
        for mark in self.store.repo::<m::OpenWorkflow>().list_all().await? {
            let Some(wf) = self
                .store
                .repo::<m::Workflow>()
                .get(&mark.org, &mark.id)
                .await?
            else {
                continue;
            };
            let wf = wf.value;
            for step in &wf.steps {
                match (step.status, &step.job_id) {
                    (m::StepStatus::Waiting, _) => waiting += 1,
                    (m::StepStatus::Running, Some(job)) => {
                        if let Some(j) = self.store.repo::<m::Job>().get(&wf.org, job).await?
                            && let Some(n) = states.get_mut(j.value.status.name())
                        {
                            *n += 1;
                        }
                    }
                    _ => {}
                }
            }
        }
        for (h, n) in health {
            metrics
                .runners
                .get_or_create(&ferry_telemetry::HealthLabels {
                    health: h.to_string(),
                })
                .set(n);
        }
        for (s, n) in states {
            metrics
                .jobs_in_state
                .get_or_create(&ferry_telemetry::StateLabels {
                    state: s.to_string(),
                })
                .set(n);
        }
        metrics.approvals_waiting.set(waiting);
        Ok(())
    }
}
