//! The runner's main loop: doorbell, pull, claim, run (a grant's run: `grants.rs`).

mod grants;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use ferry_protocol::messages::{
    BellGrant, ClaimReply, ClaimRequest, Heartbeat, JobOffer, RunnerTiming,
};
use ferry_protocol::rpc::ask;
use ferry_protocol::{encode, subjects};
use futures_util::StreamExt;
use tokio::sync::Semaphore;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::exec::{Executor, Stop};
use crate::outbox::Outbox;

#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub nats_url: String,
    /// The install's certificate and key; org and install are the ones it names.
    pub credentials: ferry_pki::Credentials,
    /// Where the certificate is kept, to renew it before it expires (`rotate.rs`).
    pub identity: Option<ferry_pki::InstallFiles>,
    pub org: String,
    pub install: String,
    /// Install-side state: the install's artifact store, component state, job work directories.
    pub data_dir: PathBuf,
    /// Jobs run at once.
    pub max_jobs: usize,
    /// How long to wait for a doorbell before looking for work anyway.
    pub idle_poll: Duration,
    /// How long a cancelled job's processes get between SIGTERM and SIGKILL.
    pub cancel_grace: Duration,
    /// When stopping: how long running jobs may finish before they are cancelled.
    pub drain: Duration,
    /// How the runner reaches the hub: through its leaf (with its spool), or directly.
    pub mode: Mode,
    /// Give up (see [`Runner::gave_up`]) once the hub has refused the install's certificate this
    /// long without a break.
    pub give_up_when_refused: Option<Duration>,
    /// helm, kubectl and the runner's own kubeconfig, for the Kubernetes plugins.
    pub tools: crate::plugin::Tools,
    /// The install's own registry (artifacts and images are copied there); `None`: a layout
    /// directory in `data_dir`.
    pub registry: Option<crate::registry::InstallRegistry>,
    /// Break-glass roles count only when granted on this host, not through the API.
    pub break_glass_host_only: bool,
    /// How often the runner sends its metrics to the hub (`stats.rs`).
    pub metrics_interval: Duration,
    /// The install stack this runner reads and reports (`stack.rs`), if it runs in one.
    pub stack: Option<crate::stack::StackSource>,
    /// How each job is confined on the host (`sandbox.rs`).
    pub sandbox: crate::sandbox::Sandbox,
    /// Host variables the operator passes on to jobs (`--job-env`).
    pub job_env: Vec<String>,
    /// Paths of the runner's no job may see besides its data directory: its identity directory,
    /// its bootstrap token file, `/etc/ferry`.
    pub hidden: Vec<PathBuf>,
    /// The install's environment on this host, shared by its jobs (`FERRY_INSTALL_DIR`);
    /// `None`: `<data_dir>/install`.
    pub install_dir: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub enum Mode {
    /// The runner connects to the hub itself (`nats_url` is the hub's client URL), over mTLS.
    Direct,
    /// The runner starts a leaf nats-server whose one remote is the hub's leafnode URL
    /// (`nats_url`), and talks only to it (`leaf.rs`).
    Leaf(crate::leaf::LeafConfig),
}

/// How long a stopping runner waits for the hub to take its spool.
const SPOOL_SETTLE: Duration = Duration::from_secs(30);

/// The jobs this runner is executing, each with the signal that cancels it.
type Running = Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<Stop>>>>;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// A NATS or JetStream operation failed; the source keeps its kind.
    #[error("NATS: {0}")]
    Nats(#[source] async_nats::Error),
    #[error("{0}")]
    Setup(String),
}

fn nats<E: std::error::Error + Send + Sync + 'static>(e: E) -> RunnerError {
    RunnerError::Nats(Box::new(e))
}

pub struct Runner {
    /// The leaf this runner supervises (leaf mode); dropped with the runner, which stops it.
    _leaf: Option<crate::leaf::Leaf>,
    /// The spool's forwarder and the certificate's rotation: stopped with the runner.
    background: Vec<tokio::task::JoinHandle<()>>,
    outbox: Outbox,
    cfg: RunnerConfig,
    id: String,
    client: async_nats::Client,
    executor: Arc<Executor>,
    /// The install stack it runs in, if any: reported every minute, read by its jobs.
    account: Arc<crate::stack::Account>,
    slots: Arc<Semaphore>,
    running: Running,
    /// The jobs running now, each in its task (a slot held for as long as it runs: the drain
    /// waits for the slots).
    jobs: tokio_util::task::TaskTracker,
    /// Applies this host left to the install's other runner hosts, since when (see
    /// [`Runner::leave_to_planner`]).
    left: std::sync::Mutex<std::collections::HashMap<String, tokio::time::Instant>>,
    gave_up: tokio::sync::watch::Receiver<Option<String>>,
    /// Whether the customer paused this host (`pause.rs`): no new job is taken meanwhile.
    paused: tokio::sync::watch::Receiver<bool>,
}

/// How long a runner host leaves an apply whose plan it does not hold to the host that does,
/// before it claims the apply itself (and fails it, saying the plan is not here).
const LEAVE_APPLY_TO_PLANNER: Duration = Duration::from_secs(10);

impl Drop for Runner {
    fn drop(&mut self) {
        for t in &self.background {
            t.abort();
        }
    }
}

impl Runner {
    // Long: the runner's start in the order it must happen (orphans killed, the leaf started or
    // the hub connected, the link watched, the spool's forwarder, the executor, its metrics and
    // the certificate's rotation started); each step is a call, and the order is what this
    // function is for.
    pub async fn connect(cfg: RunnerConfig) -> Result<Runner, RunnerError> {
        if !subjects::is_valid_token(&cfg.org) || !subjects::is_valid_token(&cfg.install) {
            return Err(RunnerError::Setup(format!(
                "invalid org or install name: {}/{}",
                cfg.org, cfg.install
            )));
        }
        let (data, sandbox) = (cfg.data_dir.clone(), cfg.sandbox.clone());
        let killed = tokio::task::spawn_blocking(move || {
            let (killed, names) = crate::orphans::kill_left_behind(&data);
            for name in names {
                sandbox.remove_job_cgroup(&name);
            }
            killed
        })
        .await
        .unwrap_or(0);
        if killed > 0 {
            info!(
                killed,
                "killed the process groups of jobs an earlier runner process left"
            );
        }
        let id = format!("runner-{}", ulid::Ulid::new().to_string().to_lowercase());
        let name = format!("ferry-runner {}/{} {id}", cfg.org, cfg.install);
        let mut link_watch = None;
        let stats = Arc::new(crate::stats::Stats::default());
        let (gave_up_tx, gave_up) = tokio::sync::watch::channel(None);
        let (leaf, client) = match &cfg.mode {
            Mode::Direct => {
                let client = cfg
                    .credentials
                    .connect_options()
                    .name(name)
                    .retry_on_initial_connect()
                    .connect(
                        ferry_pki::hub::addrs(&cfg.nats_url)
                            .map_err(|e| RunnerError::Setup(format!("--nats-url: {e}")))?,
                    )
                    .await
                    .map_err(nats)?;
                (None, client)
            }
            Mode::Leaf(leaf_cfg) => {
                let leaf = crate::leaf::start(leaf_cfg.clone())
                    .await
                    .map_err(|e| RunnerError::Setup(e.to_string()))?;
                link_watch = Some(tokio::spawn(crate::link::watch(
                    crate::link::Watch {
                        log: leaf.log.clone(),
                        offset: leaf.log_start,
                        hub: leaf_cfg.hub.clone(),
                        install: leaf_cfg.install.clone(),
                        give_up_after: cfg.give_up_when_refused,
                        stats: stats.clone(),
                    },
                    gave_up_tx,
                )));
                // Loopback to the install's own server: the leaf holds the hub connection and
                // the certificate; replies still come to the install's own inbox space.
                let prefix = cfg.credentials.inbox_prefix.clone().unwrap_or_default();
                let client = leaf
                    .connect_options()
                    .name(name)
                    .custom_inbox_prefix(prefix)
                    .retry_on_initial_connect()
                    .connect(&leaf.url)
                    .await
                    .map_err(nats)?;
                (Some(leaf), client)
            }
        };
        let js = jetstream::new(client.clone());
        let mut background: Vec<_> = link_watch.into_iter().collect();
        let outbox = match leaf {
            None => Outbox::Direct(js),
            Some(_) => {
                crate::outbox::open_spool(&js)
                    .await
                    .map_err(RunnerError::Nats)?;
                let sent = Arc::new(tokio::sync::Notify::new());
                background.push(tokio::spawn(crate::outbox::forward(
                    js.clone(),
                    js.clone(),
                    sent.clone(),
                )));
                Outbox::Spool { local: js, sent }
            }
        };
        let account = Arc::new(crate::stack::Account::new(cfg.stack.clone()));
        let executor = Arc::new(
            Executor::new(
                client.clone(),
                outbox.clone(),
                &cfg,
                stats.clone(),
                account.clone(),
            )
            .map_err(|e| RunnerError::Setup(e.to_string()))?,
        );
        background.push(tokio::spawn(crate::stats::publish_loop(
            crate::stats::Publisher {
                client: client.clone(),
                outbox: outbox.clone(),
                org: cfg.org.clone(),
                install: cfg.install.clone(),
                runner_id: id.clone(),
                data_dir: cfg.data_dir.clone(),
                interval: cfg.metrics_interval,
                direct: leaf.is_none(),
            },
            stats,
        )));
        if let Some(files) = &cfg.identity {
            let reconnect = match &leaf {
                Some(l) => crate::rotate::Reconnect::Leaf(l.restart.clone()),
                None => crate::rotate::Reconnect::Direct(client.clone()),
            };
            let identity = ferry_pki::InstallIdentity::new(&cfg.org, &cfg.install)
                .map_err(|e| RunnerError::Setup(e.to_string()))?;
            background.push(tokio::spawn(crate::rotate::rotate_loop(
                client.clone(),
                files.clone(),
                identity,
                reconnect,
            )));
        }
        let (pause_tx, paused) =
            tokio::sync::watch::channel(crate::pause::is_paused(&cfg.data_dir));
        background.push(tokio::spawn(crate::pause::watch(
            cfg.data_dir.clone(),
            account.clone(),
            pause_tx,
        )));
        let slots = Arc::new(Semaphore::new(cfg.max_jobs.max(1)));
        Ok(Runner {
            _leaf: leaf,
            background,
            outbox,
            cfg,
            id,
            client,
            executor,
            account,
            slots,
            running: Running::default(),
            jobs: Default::default(),
            left: Default::default(),
            gave_up,
            paused,
        })
    }

    /// What its heartbeats say, and where they go.
    fn beat(&self) -> Beat {
        Beat {
            client: self.client.clone(),
            org: self.cfg.org.clone(),
            install: self.cfg.install.clone(),
            runner_id: self.id.clone(),
            slots: self.slots.clone(),
            max: self.cfg.max_jobs,
            sandbox: self.cfg.sandbox.state(),
            paused: self.paused.clone(),
        }
    }

    /// As it stops: the install stack read once more (a customer who sets its `RunnerPaused`
    /// scales the runner hosts to zero, which is why this one may be stopping), then a last
    /// heartbeat, so the control plane shows a runner its customer paused as paused, not as
    /// gone.
    async fn last_word(&self) {
        if self.account.source().is_some() {
            let _ = tokio::time::timeout(Duration::from_secs(5), self.account.refresh()).await;
        }
        let paused = *self.paused.borrow()
            || self.account.paused_by_stack()
            || crate::pause::is_paused(&self.cfg.data_dir);
        let beat = self.beat();
        let _ = self
            .client
            .publish(
                subjects::heartbeat(&beat.org, &beat.install),
                encode(&beat.heartbeat(paused)).into(),
            )
            .await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.flush()).await;
    }

    /// Says why, once this runner has given up: the hub refused its install's certificate for
    /// longer than `give_up_when_refused` (the install was revoked or deleted).
    pub fn gave_up(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.gave_up.clone()
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs until `stop` completes, then drains: takes no new job, lets running ones finish for
    /// up to the drain period, cancels what is left (reporting it), and returns once every
    /// result is published.
    pub async fn run_until(
        self,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<(), RunnerError> {
        let this = Arc::new(self);
        tokio::select! {
            r = this.clone().run() => return r,
            _ = stop => {}
        }
        this.last_word().await;
        let all = this.cfg.max_jobs.max(1) as u32;
        let running = all as usize - this.slots.available_permits();
        info!(running, drain = ?this.cfg.drain, "stopping: no new jobs; waiting for running ones");
        if tokio::time::timeout(this.cfg.drain, this.slots.acquire_many(all))
            .await
            .is_err()
        {
            let stops: Vec<Arc<Stop>> = this
                .running
                .lock()
                .map(|r| r.values().cloned().collect())
                .unwrap_or_default();
            warn!(
                jobs = stops.len(),
                "drain period over: cancelling the jobs still running"
            );
            for s in stops {
                s.cancel.notify_one();
            }
            let _ = tokio::time::timeout(
                this.cfg.cancel_grace + Duration::from_secs(30),
                this.slots.acquire_many(all),
            )
            .await;
        }
        // What the jobs reported is in the spool (leaf mode): give the hub a moment to take it
        // before the leaf stops with the runner. What it does not take stays on disk for the
        // next runner.
        if !this.outbox.settle(SPOOL_SETTLE).await {
            warn!("the hub did not take the whole spool; the next runner sends the rest");
        }
        info!("stopped");
        Ok(())
    }

    /// Runs until the process is stopped.
    pub async fn run(self: Arc<Self>) -> Result<(), RunnerError> {
        let (org, install) = (self.cfg.org.clone(), self.cfg.install.clone());
        let span = info_span!("runner", org = %org, install = %install, runner = %self.id);
        async move {
            // The runner's one raw subscription: what the control plane pushes to the install
            // (a doorbell, a cancel), not requests it answers (those are `ferry_protocol::rpc`'s).
            // It names the install in its subject, and the hub lets the install subscribe only
            // to its own.
            let pushes = self
                .client
                .subscribe(subjects::pushes(&org, &install))
                .await
                .map_err(nats)?;
            let (bells_tx, bells) = tokio::sync::mpsc::channel(BELLS);
            // Unbounded: a grant dropped would cost its job a lease; there is one per job.
            let (grants_tx, grants) = tokio::sync::mpsc::unbounded_channel();
            // Beside the offers loop, in this task: they end with it.
            let beating = heartbeats(self.beat());
            let routing = route_pushes(pushes, self.running.clone(), bells_tx, grants_tx);
            let granting = self.serve_grants(grants);
            let reporting = crate::stack::report(
                self.client.clone(),
                org.clone(),
                install.clone(),
                self.account.clone(),
            );
            let beside = async {
                tokio::join!(beating, routing, reporting, granting);
                std::future::pending::<()>().await
            };
            info!(nats = %self.cfg.nats_url, "runner started");
            tokio::select! {
                r = self.serve_offers(bells, &org, &install) => r,
                () = beside => Ok(()),
            }
        }
        .instrument(span)
        .await
    }

    /// Takes the install's offers: walks them when a doorbell does not carry one (at start, on a
    /// poll, after a failure) and claims each while a slot is free, until the doorbell's
    /// subscription ends.
    async fn serve_offers(
        &self,
        mut bells: tokio::sync::mpsc::Receiver<Option<JobOffer>>,
        org: &str,
        install: &str,
    ) -> Result<(), RunnerError> {
        let offers = crate::offers::Offers::new(&self.client, org, install);
        let mut walk = true;
        // Failures in a row: the pause before the next walk doubles up to 30 s, and only the
        // first is a warning (a runner cut off for days must not fill its disk with the same
        // line); a doorbell still ends the pause at once.
        let mut failures: u32 = 0;
        // Until offers were read once, "nobody answers" is the link coming up, not a fault.
        let mut ever_read = false;
        let mut paused = self.paused.clone();
        loop {
            if *paused.borrow_and_update() {
                if !resumed(&mut paused).await {
                    return Ok(());
                }
                walk = true;
            }
            if walk || failures > 0 {
                match self.take_offers(&offers).await {
                    Ok(()) if failures > 0 && ever_read => {
                        info!(failures, "reading offers again");
                        failures = 0;
                    }
                    Ok(()) => {
                        if !ever_read {
                            info!("reading offers from the control plane");
                        }
                        ever_read = true;
                        failures = 0;
                    }
                    Err(e) if !ever_read && e.nobody_serves() => {
                        if failures == 0 {
                            info!(
                                "waiting for the control plane to answer (the link is coming up)"
                            );
                        }
                        failures = failures.saturating_add(1);
                    }
                    Err(e) => {
                        if failures == 0 {
                            warn!(error = %e, "reading offers failed; trying again, less often while it fails");
                        } else {
                            debug!(error = %e, failures, "reading offers failed again");
                        }
                        failures = failures.saturating_add(1);
                    }
                }
            }
            // While reading fails, the next walk comes after the back-off even if doorbells
            // (answered on their own) come meanwhile: offers made before may wait.
            let pause = match failures {
                0 => self.cfg.idle_poll,
                n => Duration::from_secs(1 << n.min(5)).min(Duration::from_secs(30)),
            };
            walk = tokio::select! {
                bell = bells.recv() => match bell {
                    // The doorbell carries its offer: claim it at once, no walk needed.
                    Some(bell) => match bell {
                        // Unanswered (no scheduler yet): walk, which asks again.
                        Some(next) if self.slots.available_permits() > 0 => {
                            !self.take_offer(next, ferry_model::now_us()).await
                        }
                        _ => true,
                    },
                    None => return Err(RunnerError::Setup("the doorbell subscription ended".into())),
                },
                _ = tokio::time::sleep(pause) => true,
                // A pause or a resume: the loop's top waits while paused, walks once resumed.
                changed = paused.changed() => match changed {
                    Ok(()) => false,
                    Err(_) => return Ok(()),
                },
            };
        }
    }

    /// Walks the install's offers from the first, claiming each while a slot is free. Offers are
    /// read by direct get (no consumer: the hub keeps nothing per install for dispatch); the
    /// scheduler deletes an offer once its claim is decided, so what is left is what is still open.
    async fn take_offers(
        &self,
        offers: &crate::offers::Offers,
    ) -> Result<(), crate::offers::OffersError> {
        let mut after = 0;
        loop {
            if self.slots.available_permits() == 0 {
                // Wait for a running job to finish rather than spin; then walk again. The
                // slots close only when the runner stops: nothing more to take then.
                let Ok(permit) = self.slots.clone().acquire_owned().await else {
                    return Ok(());
                };
                drop(permit);
            }
            let Some(next) = offers.next(after).await? else {
                return Ok(());
            };
            after = next.seq;
            self.take_offer(next.offer, ferry_model::now_us()).await;
        }
    }

    /// Whether to leave `offer` to another runner host of the install: an apply of a plan this
    /// host does not hold (plans stay on the host that made them) is left to the others for
    /// [`LEAVE_APPLY_TO_PLANNER`]; after that this host claims it, and the apply fails saying why.
    fn leave_to_planner(&self, offer: &JobOffer) -> bool {
        let ferry_protocol::messages::JobSpec::Apply(a) = &offer.spec else {
            return false;
        };
        if self
            .executor
            .holds_plan(&a.component.component, &a.plan_digest)
        {
            return false;
        }
        let Ok(mut left) = self.left.lock() else {
            return false;
        };
        let now = tokio::time::Instant::now();
        left.retain(|_, since| now.duration_since(*since) < LEAVE_APPLY_TO_PLANNER * 6);
        let since = *left.entry(offer.job_id.clone()).or_insert(now);
        now.duration_since(since) < LEAVE_APPLY_TO_PLANNER
    }

    /// Claims one offer (seen at `seen_us`) and, if granted, runs its job. Returns whether the
    /// claim was answered (granted or refused); an unanswered one stays in `JOBS` for the next
    /// walk.
    async fn take_offer(&self, offer: JobOffer, seen_us: u64) -> bool {
        if offer.org != self.cfg.org || offer.install != self.cfg.install {
            warn!(job = %offer.job_id, "offer for another install; ignoring");
            return true;
        }
        if *self.paused.borrow() {
            // Left in the offers: the walk after the resume takes it.
            debug!(job = %offer.job_id, "paused by the customer: offer left");
            return true;
        }
        if self.leave_to_planner(&offer) {
            debug!(job = %offer.job_id, "apply of a plan another runner host made: left to it");
            return true;
        }
        let req = ClaimRequest {
            job_id: offer.job_id.clone(),
            runner_id: self.id.clone(),
        };
        // The lease the scheduler grants starts after this, by its clock: counting from here errs
        // on the safe side.
        let asked = tokio::time::Instant::now();
        let mut timing = RunnerTiming {
            offer_seen_us: seen_us,
            claim_sent_us: ferry_model::now_us(),
            ..Default::default()
        };
        let subject = subjects::claim(&self.cfg.org, &self.cfg.install);
        // The work directory is prepared while the claim is out (`staging.rs`).
        let staging = self.executor.stage(&offer);
        let reply = ask(&self.client, subject, &req, Duration::from_secs(10)).await;
        timing.granted_us = ferry_model::now_us();
        let reply = match reply {
            Ok(r) => Ok(r),
            // Not answered: the offer stays, and the next walk asks again.
            Err(e) if e.is_transient() => {
                debug!(job = %offer.job_id, error = %e, "claim not answered");
                self.discard(staging);
                return false;
            }
            Err(e) => Err(e),
        };
        match reply {
            Ok(ClaimReply::Granted {
                execution_id,
                attempt,
                lease_ms,
            }) => {
                let grant = grants::Grant {
                    execution_id,
                    attempt,
                    lease_ms,
                    asked,
                    timing,
                    staging,
                };
                self.start_job(offer, grant).await;
                return true;
            }
            Ok(ClaimReply::Refused { reason }) => {
                debug!(job = %offer.job_id, %reason, "claim refused");
            }
            Err(e) => {
                warn!(job = %offer.job_id, error = %e, "undecodable claim reply");
            }
        }
        self.discard(staging);
        true
    }

    /// Removes, in a task of the runner's, a work directory staged for a claim that did not
    /// become this runner's execution.
    fn discard(&self, staging: Option<crate::staging::Staging>) {
        if let Some(s) = staging {
            self.jobs.spawn(crate::staging::discard(s));
        }
    }
}

/// Waits while the customer keeps the runner paused (`pause.rs`); false when the runner stops
/// meanwhile. A resume walks the offers at once.
async fn resumed(paused: &mut tokio::sync::watch::Receiver<bool>) -> bool {
    info!("paused by the customer: taking no new job until it is resumed");
    if paused.wait_for(|p| !*p).await.is_err() {
        return false;
    }
    info!("resumed by the customer: taking jobs again");
    true
}

/// Doorbells waiting for the offers loop; more are dropped (a doorbell is a hint: the loop
/// walks the offers when it gets to them).
const BELLS: usize = 64;

/// Routes what the control plane pushes to the install: a doorbell to the offers loop, a cancel
/// request (`ferry.push.<org>.<install>.cancel.<job>`) to the job it names, if this runner
/// executes it. A request for a job not (or no longer) here is ignored; the scheduler sends it
/// again while the job is still running.
async fn route_pushes(
    mut sub: async_nats::Subscriber,
    running: Running,
    bells: tokio::sync::mpsc::Sender<Option<JobOffer>>,
    grants: tokio::sync::mpsc::UnboundedSender<(JobOffer, BellGrant)>,
) {
    while let Some(msg) = sub.next().await {
        match subjects::push_of(&msg.subject) {
            Some(subjects::Push::Wake) => match crate::offers::rung(&msg.payload) {
                Some(bell) => match bell.grant {
                    Some(grant) => {
                        let _ = grants.send((bell.offer, grant));
                    }
                    None => {
                        let _ = bells.try_send(Some(bell.offer));
                    }
                },
                None => {
                    let _ = bells.try_send(None);
                }
            },
            Some(subjects::Push::Cancel { job }) => {
                let stop = running.lock().ok().and_then(|r| r.get(job).cloned());
                if let Some(stop) = stop {
                    info!(job, "cancel requested");
                    stop.cancel.notify_one();
                }
            }
            None => debug!(subject = %msg.subject, "not a push this runner knows"),
        }
    }
}

/// How often a runner says it is there (the first at once, on start).
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);

/// What a runner's heartbeats say, and where they go.
struct Beat {
    client: async_nats::Client,
    org: String,
    install: String,
    runner_id: String,
    slots: Arc<Semaphore>,
    max: usize,
    sandbox: ferry_protocol::messages::SandboxState,
    /// A pause or a resume is said at once, not at the next interval.
    paused: tokio::sync::watch::Receiver<bool>,
}

impl Beat {
    fn heartbeat(&self, paused: bool) -> Heartbeat {
        Heartbeat {
            runner_id: self.runner_id.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            running_jobs: self.max.saturating_sub(self.slots.available_permits()) as u32,
            at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            interval_ms: HEARTBEAT_INTERVAL.as_millis() as u32,
            max_jobs: u32::try_from(self.max).unwrap_or(u32::MAX),
            sandbox: self.sandbox,
            paused,
        }
    }
}

async fn heartbeats(mut b: Beat) {
    // The first few come every second: a runner that just started (its leaf still connecting
    // to the hub, whose interest is not here yet) becomes known within seconds, not an interval.
    for sent in 0u32.. {
        if sent > 0 {
            let pause = if sent < 10 {
                Duration::from_secs(1)
            } else {
                HEARTBEAT_INTERVAL
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                r = b.paused.changed() => if r.is_err() { return },
            }
        }
        let paused = *b.paused.borrow_and_update();
        let hb = b.heartbeat(paused);
        let _ = b
            .client
            .publish(subjects::heartbeat(&b.org, &b.install), encode(&hb).into())
            .await;
    }
}
