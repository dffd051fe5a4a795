//! The scheduler turns requested workflows into steps, dispatches each step's job to its install,
//! grants job claims, takes job results, and advances the dependency graph.
//!
//! All state lives in KV: a workflow record (its steps), job records, build and approval records.
//! Every transition is a compare-and-swap and every handler is idempotent, so any number of scheduler
//! replicas can run, any of them can crash at any point, and the periodic reconcile pass (which
//! re-drives every unfinished workflow from its records) finishes whatever a crash interrupted.
//!
//! Inputs: `CONTROL` (workflow requested, build finished, approval decided), `JOB_EVENTS` (runner
//! results) and claim requests (`ferry.rx.<org>.<install>.claim`, core request/reply, queue group).
//! It also starts the runs of scheduled (`cron`) actions when they are due (`cron.rs`).
//! Outputs: job offers on `JOBS` plus a doorbell on `ferry.push.<org>.<install>.wake`, build and approval
//! requests on `CONTROL`.
//!
//! What happens next is decided by `ferry-model` (step transitions, a job's end, a workflow's end,
//! releases); the handlers turn what they hear into work, and `effects.rs` carries it out, one
//! queue, nothing recursing (see ARCHITECTURE.md, "The model decides, the scheduler executes").

mod actions;
mod approvals;
mod audit;
mod claims;
mod coalesce;
mod config;
mod control;
mod cron;
mod cron_marks;
mod dispatch;
mod drift;
mod effects;
mod events;
mod gauges;
mod installs;
mod offers;
mod pregrants;
mod reconcile;
mod releases;
mod results;
mod resume;
mod runbooks;
mod stacks;
mod steady;
mod stops;
mod work;
mod workflows;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_model as m;
use ferry_protocol::messages::JobEvent;
use ferry_protocol::resources::consumers;
use ferry_protocol::{Control, subjects};
use ferry_store::{
    CancellationToken, LastWritten, Store, StoreError, Tasks, consume_messages_by_install,
    consume_messages_in_lanes, lane_key,
};

use crate::control::handled;
use tracing::info;

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Publishing or subscribing failed; the source keeps its kind.
    #[error("NATS: {0}")]
    Nats(#[source] async_nats::Error),
    #[error("the {0} subscription ended")]
    SubscriptionEnded(&'static str),
    #[error("app config {0}: {1}")]
    Config(String, String),
    /// An audit record the stream did not take: always worth retrying (see `audit.rs`).
    #[error("audit record not written: {0}")]
    Audit(#[source] StoreError),
    /// A step cannot proceed for a reason retrying will not fix: the step fails with it.
    #[error("{0}")]
    Permanent(String),
}

impl SchedulerError {
    /// Errors worth retrying (the store or NATS may come back); the rest fail the step.
    fn is_transient(&self) -> bool {
        matches!(
            self,
            SchedulerError::Nats(_)
                | SchedulerError::Audit(_)
                | SchedulerError::Store(
                    StoreError::Nats(_)
                        | StoreError::ObjectNats { .. }
                        | StoreError::Timeout(_)
                        | StoreError::Conflict { .. }
                )
        )
    }
}

/// What a step that cannot proceed for a reason retrying will not fix fails with.
pub(crate) fn permanent(why: impl Into<String>) -> SchedulerError {
    SchedulerError::Permanent(why.into())
}

/// Renders a job's spec on the blocking pool: a template may make an RSA key (sprig's
/// `genPrivateKey "rsa"`, `genCA`: up to seconds of CPU), which must not hold a worker.
pub(crate) async fn rendered<T: Send + 'static>(
    render: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, SchedulerError> {
    match tokio::task::spawn_blocking(render).await {
        Ok(r) => r.map_err(permanent),
        Err(e) => Err(permanent(format!("rendering the job: {e}"))),
    }
}

#[derive(Clone)]
pub struct Scheduler {
    store: Store,
    client: async_nats::Client,
    /// Parsed app configs by id, with their app's name. Config versions are immutable, so the
    /// cache never goes stale.
    configs: Arc<Mutex<HashMap<String, config::Cached>>>,
    /// How long a runner holds a job without renewing it.
    lease: Duration,
    /// How long an offer waits for a runner before its job times out, if not each job kind's
    /// default (`JobKind::default_timeouts`).
    available: Option<Duration>,
    /// A plan older than this is planned (and approved) again before its apply runs.
    max_plan_age: Duration,
    /// Job records this scheduler just offered, for the claims that follow (`offers.rs`).
    known: offers::KnownJobs,
    /// The workflow and install records this scheduler last wrote, each next change of one
    /// starting from them instead of a read (`ferry_store::LastWritten`).
    workflows: Arc<LastWritten<m::Workflow>>,
    installs: Arc<LastWritten<m::Install>>,
    /// The runner records this scheduler last wrote, for the next heartbeat (`claims.rs`).
    heard: claims::Heard,
    /// Each install's runners as heard, to grant its jobs at their offer (`pregrants.rs`).
    runners: pregrants::Heard,
    /// The grants this scheduler made at the offer, until nobody heard them (`pregrants.rs`).
    unheard: pregrants::Unheard,
    /// Since when (ms since the epoch) this scheduler has seen the hub whole: since it started,
    /// its connection last came back, or a reconcile pass last failed. Leases are not expired
    /// within a lease period of it: runners cut off by the same disruption (a hub node lost,
    /// their leaf moving to another, the callout unable to admit it meanwhile) renew first.
    steady_since_ms: Arc<std::sync::atomic::AtomicU64>,
    /// The tasks answering claims, renewals and offer queries; stopping waits for them.
    tasks: Tasks,
    /// Ended workflows of a release waiting to be fed to it, by org and release id
    /// (`coalesce.rs`, `releases.rs`).
    release_ends: Arc<coalesce::Coalesce<(String, String), ReleaseEnd>>,
}

/// A release's workflow that ended, and how.
type ReleaseEnd = (String, Result<(), String>);

/// Workflow and install records kept as last written, of each: more than a release's wave of
/// a thousand installs has in flight.
const WRITTEN_KEPT: usize = 4096;

/// The default age past which an approved plan is planned again before it is applied.
pub const DEFAULT_MAX_PLAN_AGE: Duration = Duration::from_secs(72 * 3600);

/// The default lease: a runner that stops renewing (killed, cut off) loses its job after this.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// How often every unfinished workflow is re-driven from its records.
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(5);

/// Runners' results of different installs, and control messages about different workflows,
/// handled at once (`ferry_store::consume_messages_in_lanes`); one install's results, and one
/// workflow's messages, stay in order. More lanes than this mostly add compare-and-swap
/// conflicts on what installs share (a release's record).
pub(crate) const LANES: usize = 16;

impl Scheduler {
    pub fn new(client: async_nats::Client, store: Store) -> Self {
        Scheduler {
            store,
            client,
            configs: Arc::default(),
            lease: DEFAULT_LEASE,
            available: None,
            known: Default::default(),
            workflows: Arc::new(LastWritten::new(WRITTEN_KEPT)),
            installs: Arc::new(LastWritten::new(WRITTEN_KEPT)),
            heard: Default::default(),
            runners: Default::default(),
            unheard: Default::default(),
            max_plan_age: DEFAULT_MAX_PLAN_AGE,
            steady_since_ms: Arc::new(m::now_ms().into()),
            tasks: Tasks::default(),
            release_ends: Arc::default(),
        }
    }

    pub fn with_available(mut self, available: Duration) -> Self {
        self.available = Some(available);
        self
    }

    pub fn with_max_plan_age(mut self, age: Duration) -> Self {
        self.max_plan_age = age;
        self
    }

    /// Stops (after the requests in flight are answered) when `stop` is cancelled.
    pub fn with_stop(mut self, stop: CancellationToken) -> Self {
        self.tasks = Tasks::stopped_by(stop);
        self
    }

    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Runs the scheduler until an unrecoverable error or until it is asked to stop.
    pub async fn run(self) -> Result<(), SchedulerError> {
        let tasks = self.tasks.clone();
        // Boxed: its loops together are one large future, too large to move through the stack
        // of a debug build's thread.
        tasks.serve("scheduler", Box::pin(self.serve())).await
    }

    async fn serve(self) -> Result<(), SchedulerError> {
        let bus = self.store.bus();
        let consumer_control = bus
            .durable(
                "CONTROL",
                consumers::SCHEDULER_CONTROL,
                vec![
                    subjects::control_topic(subjects::topic::WORKFLOW),
                    subjects::control_topic(subjects::topic::BUILD_DONE),
                    subjects::control_topic(subjects::topic::APPROVAL_DONE),
                ],
            )
            .await?;
        let events = bus
            .durable("JOB_EVENTS", consumers::SCHEDULER_EVENTS, vec![])
            .await?;
        info!("scheduler started");

        let s = self.clone();
        let control_loop = consume_messages_in_lanes(
            consumer_control,
            consumers::SCHEDULER_CONTROL,
            LANES,
            |_: &str, c: &Control| lane_key(&c.about()),
            move |_, c: Control| {
                let s = s.clone();
                async move { handled(s.on_control(c).await) }
            },
        );
        let s = self.clone();
        let event_loop = consume_messages_by_install(
            events,
            consumers::SCHEDULER_EVENTS,
            LANES,
            move |subject, ev: JobEvent| {
                let s = s.clone();
                async move { s.on_job_event(&subject, ev).await }
            },
        );
        let claims = self.clone().serve_claims();
        let leases = self.clone().serve_leases();
        let heartbeats = self.clone().serve_heartbeats();
        let runners = self.clone().hear_heartbeats();
        let unheard = self.clone().serve_unheard();
        let stack_reports = self.clone().serve_stack_reports();
        let offer_queries = self.clone().serve_offer_queries();
        let reconcile = self.clone().reconcile_loop();
        let cron = self.clone().cron_loop();
        let gauges = self.clone().gauges_loop();
        let connection = self.clone().watch_connection();
        // The grace before leases may expire runs from when renewals can be answered (the loops
        // below subscribe on their first poll), not from when the scheduler was made nor from
        // before its consumers were set up (slow on a loaded hub): runners get a whole lease
        // period to renew with it.
        self.unsteady();
        tokio::try_join!(
            async { control_loop.await.map_err(SchedulerError::from) },
            async { event_loop.await.map_err(SchedulerError::from) },
            claims,
            leases,
            heartbeats,
            runners,
            unheard,
            stack_reports,
            offer_queries,
            reconcile,
            cron,
            gauges,
            connection,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_store::Handled;

    /// What decides whether a control message is tried again: a NATS failure while storing an
    /// object (a plan, during a hub failover) is retried, as any NATS failure, not dropped.
    #[test]
    fn nats_failures_are_retried_and_bad_input_is_not() {
        let io = || -> async_nats::Error { Box::new(std::io::Error::other("ack timed out")) };
        let retried = [
            SchedulerError::Nats(io()),
            SchedulerError::Store(StoreError::Nats(io())),
            SchedulerError::Store(StoreError::ObjectNats {
                bucket: "plans",
                name: "o.j1.json".into(),
                source: io(),
            }),
            SchedulerError::Store(StoreError::Timeout("reading")),
        ];
        for e in retried {
            assert!(matches!(handled(Err(e)), Handled::Retry(_)));
        }
        let dropped = [
            permanent("no such component"),
            SchedulerError::Store(StoreError::Object {
                bucket: "plans",
                name: "o.j1.json".into(),
                reason: "package files missing".into(),
            }),
        ];
        for e in dropped {
            assert!(matches!(handled(Err(e)), Handled::Done));
        }
    }
}
