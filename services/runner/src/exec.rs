//! Running one claimed job: report it started, do it (sync in-process, everything else through a
//! plugin process, in its sandbox: `spawn.rs`), stream its output, report the result.
//!
//! Long (about 950 lines with its tests) because it is one execution's whole path, in order:
//! preparing the work directory (the artifact copied here if another runner host synced it), the
//! plugin's process group and its stop, collecting and offloading the result. Split, a reader
//! would chase one execution across files; how its process is made and confined is `spawn.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ferry_artifacts::{AnyStore, LocalLayout};
use ferry_protocol::messages::{
    ActionJob, EventBody, JobEvent, JobOffer, JobResult, JobSpec, LogStream, Offloaded, Outcome,
    PlanData, RunnerTiming, SyncJob,
};
use ferry_protocol::{encode, subjects};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::Notify;
use tracing::{Instrument, info, info_span, warn};

mod spawn;

use crate::artifacts::HubArtifacts;
use crate::logsink::{self, LogHandle};
use crate::outbox::{Outbox, Sent};
use crate::plugin::{ActionStep, Phase, PluginInput, PluginJob, PluginResult};
use crate::runner::RunnerConfig;
use spawn::{Spawn, read_from_job};

pub struct Executor {
    client: async_nats::Client,
    outbox: Outbox,
    org: String,
    install: String,
    pub(crate) data_dir: PathBuf,
    /// The install's own registry; `None`: `layout`. Deployments only ever read from it.
    registry: Option<ferry_aws::RegistrySite>,
    /// The install's OCI layout directory, in the data directory.
    layout: LocalLayout,
    cancel_grace: Duration,
    tools: crate::plugin::Tools,
    break_glass_host_only: bool,
    stats: Arc<crate::stats::Stats>,
    /// The install stack the runner runs in, if any: the roles its jobs run as (`roles.rs`).
    account: Arc<crate::stack::Account>,
    /// How each job is confined (`sandbox.rs`), what of the host's environment it gets, and what
    /// of the runner's besides its data directory it must not see.
    sandbox: crate::sandbox::Sandbox,
    job_env: Vec<String>,
    hidden: Vec<PathBuf>,
    install_dir: PathBuf,
}

/// Room left in a message for headers and framing.
const RESULT_HEADROOM: usize = 4096;

/// What ends a running job early. Each is a stored permit: a job sees it even if it comes between
/// two waits.
#[derive(Default)]
pub struct Stop {
    /// The user cancelled it: SIGTERM, grace, SIGKILL.
    pub cancel: Notify,
    /// Its lease could not be renewed: it may be running elsewhere soon, so SIGKILL now.
    pub lost: Notify,
}

const LEASE_LOST: &str = "the lease could not be renewed; stopped so it cannot run twice";

/// Whether any process of the group led by `pid` is still there (signal 0 checks without sending).
fn group_alive(pid: Option<u32>) -> bool {
    pid.is_some_and(|p| {
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(p as i32), None).is_ok()
    })
}

/// A granted job as the plugin path runs it.
struct Job<'a> {
    offer: &'a JobOffer,
    execution_id: &'a str,
    /// Its execution timeout.
    limit: Duration,
    /// Its work directory, if it was being prepared while the claim was out (`staging.rs`).
    staging: Option<crate::staging::Staging>,
}

/// The job log's last line: how it ended.
fn ending(result: &JobResult) -> String {
    match (&result.status, &result.error) {
        (Outcome::Succeeded, _) => "succeeded".into(),
        (status, Some(e)) => format!("{}: {e}", format!("{status:?}").to_lowercase()),
        (status, None) => format!("{status:?}").to_lowercase(),
    }
}

fn cancelled(why: impl Into<String>) -> JobResult {
    JobResult {
        status: Outcome::Cancelled,
        outputs_json: "{}".into(),
        plan: None,
        error: Some(why.into()),
        sensitive_outputs: vec![],
        offloaded: None,
        ran_as: None,
        timing: Default::default(),
    }
}

fn failed(error: impl Into<String>) -> JobResult {
    JobResult {
        status: Outcome::Failed,
        outputs_json: "{}".into(),
        plan: None,
        error: Some(error.into()),
        sensitive_outputs: vec![],
        offloaded: None,
        ran_as: None,
        timing: Default::default(),
    }
}

impl Executor {
    pub fn new(
        client: async_nats::Client,
        outbox: Outbox,
        cfg: &RunnerConfig,
        stats: Arc<crate::stats::Stats>,
        account: Arc<crate::stack::Account>,
    ) -> std::io::Result<Executor> {
        for d in ["state", "work"] {
            std::fs::create_dir_all(cfg.data_dir.join(d))?;
        }
        // The runner's alone: a job of this install sees it hidden in its sandbox, and a job of
        // another install on the same host (another runner's) must not read it either. Jobs
        // reach their own paths in it through their sandbox's binds, not through its mode.
        if matches!(cfg.sandbox, crate::sandbox::Sandbox::Bwrap { .. }) {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&cfg.data_dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let layout =
            LocalLayout::open(&cfg.data_dir.join("registry")).map_err(std::io::Error::other)?;
        Ok(Executor {
            client,
            outbox,
            org: cfg.org.clone(),
            install: cfg.install.clone(),
            data_dir: cfg.data_dir.clone(),
            registry: match &cfg.registry {
                Some(r) => Some(r.open().map_err(std::io::Error::other)?),
                None => None,
            },
            layout,
            cancel_grace: cfg.cancel_grace,
            tools: cfg.tools.clone(),
            break_glass_host_only: cfg.break_glass_host_only,
            stats,
            account,
            sandbox: cfg.sandbox.clone(),
            job_env: cfg.job_env.clone(),
            hidden: cfg.hidden.clone(),
            install_dir: cfg
                .install_dir
                .clone()
                .unwrap_or_else(|| cfg.data_dir.join("install")),
        })
    }

    /// The largest message the hub accepts (a larger result goes in chunks, stream `RESULTS`).
    /// Read from the live connection: the runner may start before its first connect, when the
    /// server has said nothing yet (then NATS's default, 1 MiB).
    fn max_payload(&self) -> usize {
        match self.client.server_info().max_payload {
            0 => 1024 * 1024,
            n => n,
        }
    }

    /// Runs one job to its end; `stop` ends it early (see [`Self::plugin_in`] for how a process
    /// stops).
    /// `execution_id` is the execution's token: it goes back with every event and log batch (and
    /// starts their de-duplication ids), and is never printed; logs name the execution by its
    /// public id. Returns where the result went (the lease must hold until the hub has it).
    pub(crate) async fn run(
        &self,
        offer: JobOffer,
        execution_id: String,
        attempt: u32,
        stop: Arc<Stop>,
        mut timing: RunnerTiming,
        staging: Option<crate::staging::Staging>,
    ) -> Sent {
        let public_id = ferry_model::execution_public_id(&offer.job_id, attempt);
        let span = info_span!("job", org = %self.org, install = %self.install, workflow = %offer.workflow_id, job = %offer.job_id, execution = %public_id);
        async {
            let kind = offer.spec.label();
            let clock = std::time::Instant::now();
            self.stats.job_started(kind);
            let event_subject = subjects::event(&self.org, &self.install, &offer.job_id);
            let (log, log_task) = logsink::start(
                self.outbox.clone(),
                &self.org,
                &self.install,
                &offer.job_id,
                &execution_id,
                redacted_values(&offer.spec),
            );
            log.system(format!(
                "{} {}: execution {public_id}",
                offer.spec.label(),
                offer.spec.component()
            ))
            .await;
            let result = match &offer.spec {
                JobSpec::SyncArtifact(s) => tokio::select! {
                    r = self.sync(s, &log) => r,
                    _ = stop.cancel.notified() => cancelled("cancelled"),
                    _ = stop.lost.notified() => failed(LEASE_LOST),
                },
                _ => {
                    let limit = Duration::from_secs(u64::from(offer.timeouts.execution_secs));
                    let job = Job {
                        offer: &offer,
                        execution_id: &execution_id,
                        limit,
                        staging,
                    };
                    self.plugin(job, &log, &stop, &mut timing).await
                }
            };
            let mut result = masked(result, &offer.spec, &log);
            result.timing = timing;
            log.system(ending(&result)).await;
            drop(log);
            let outcome = format!("{:?}", result.status).to_lowercase();
            self.stats.job_finished(kind, &outcome, clock.elapsed());
            // Every log line is in the stream before the result is: whoever sees the result can read
            // the complete log.
            let lines = log_task.await.unwrap_or(0);
            info!(status = ?result.status, lines, "job finished");
            self.report(&offer.job_id, &execution_id, &event_subject, result)
                .await
        }
        .instrument(span)
        .await
    }

    /// Sends the job's result (in chunks when it does not fit in a message: see `offload`).
    async fn report(
        &self,
        job_id: &str,
        execution_id: &str,
        event_subject: &str,
        result: JobResult,
    ) -> Sent {
        let mut finished = JobEvent {
            job_id: job_id.to_string(),
            execution_id: execution_id.to_string(),
            seq: 1,
            at_ms: ferry_model::now_ms(),
            body: EventBody::Finished(Box::new(result)),
        };
        let mut payload = encode(&finished);
        if payload.len() + RESULT_HEADROOM > self.max_payload()
            && let EventBody::Finished(result) = &finished.body
        {
            let small = self.offload(execution_id, result, payload.len()).await;
            finished.body = EventBody::Finished(Box::new(small));
            payload = encode(&finished);
        }
        self.outbox
            .send(event_subject, &format!("{execution_id}-1"), payload)
            .await
    }

    /// A result too large for a message, published in chunks on the execution's result subject
    /// (stream `RESULTS`); returns the small result that points at them, or a failure saying why
    /// it could not be delivered.
    async fn offload(&self, execution_id: &str, result: &JobResult, size: usize) -> JobResult {
        let subject = subjects::result_chunks(&self.org, &self.install, execution_id);
        let bytes = encode(result);
        let chunk = self.max_payload().saturating_sub(RESULT_HEADROOM).max(1024);
        let chunks = bytes.chunks(chunk).count() as u32;
        let stored = async {
            for (n, part) in bytes.chunks(chunk).enumerate() {
                let id = format!("{execution_id}-r{n}");
                self.outbox.send(&subject, &id, part.to_vec()).await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(120), stored)
            .await
            .is_err()
        {
            return failed(format!(
                "the result ({size} bytes, over the {} byte message limit) could not be delivered within 120 s",
                self.max_payload()
            ));
        }
        info!(
            bytes = size,
            chunks, "result too large for a message: sent in chunks"
        );
        JobResult {
            status: result.status,
            outputs_json: "{}".into(),
            plan: None,
            error: None,
            sensitive_outputs: vec![],
            offloaded: Some(Offloaded {
                chunks,
                digest: ferry_artifacts::sha256_digest(&bytes),
            }),
            ran_as: None,
            timing: result.timing,
        }
    }

    /// The install's store of one component's artifacts: in a registry, a repository of its own
    /// (`<registry path>/<component>`).
    async fn store(&self, component: &str) -> Result<AnyStore, String> {
        match &self.registry {
            Some(r) => Ok(AnyStore::Registry(r.repository(component).await?)),
            None => Ok(AnyStore::Layout(self.layout.clone())),
        }
    }

    /// Copies the artifact from the vendor store into the install's own store, verifying digests.
    async fn sync(&self, s: &SyncJob, log: &LogHandle) -> JobResult {
        let vendor = HubArtifacts::new(&self.client, &self.org, &self.install, &s.digest);
        log.system(format!(
            "syncing {}@{} into the install's store",
            s.repository, s.digest
        ))
        .await;
        let store = match self.store(&s.component).await {
            Ok(s) => s,
            Err(e) => return failed(format!("the install's registry: {e}")),
        };
        // In a layout directory the component's name lists it in `index.json` (tools open it by
        // that name). A registry repository is the component's own: a chart is tagged with its
        // version there, so `helm pull oci://` finds the install's copy as the vendor's.
        let tag = match &store {
            AnyStore::Layout(_) => Some(s.component.clone()),
            _ => ferry_artifacts::chart_tag(&vendor, &s.digest)
                .await
                .unwrap_or(None),
        };
        match ferry_artifacts::copy_tagged(&vendor, &store, &s.digest, tag.as_deref()).await {
            Ok(stats) => {
                self.stats.synced(stats.bytes_copied);
                log.system(format!(
                    "copied {} blobs ({} bytes), {} already present",
                    stats.blobs_copied, stats.bytes_copied, stats.blobs_skipped
                ))
                .await;
                let outputs = serde_json::json!({ "digest": s.digest, "blobs_copied": stats.blobs_copied, "blobs_skipped": stats.blobs_skipped });
                JobResult {
                    status: Outcome::Succeeded,
                    outputs_json: outputs.to_string(),
                    plan: None,
                    error: None,
                    sensitive_outputs: vec![],
                    offloaded: None,
                    ran_as: None,
                    timing: Default::default(),
                }
            }
            Err(e) => failed(format!("artifact sync failed: {e}")),
        }
    }

    /// The artifact unpacked into `src`, and the component's `state` directory made. From this
    /// host's layout store that is one trip to the blocking pool (every read verified); from a
    /// registry, or when the artifact is not here yet, the store's own async path.
    async fn unpack(
        &self,
        component: &str,
        digest: &str,
        src: &Path,
        state: &Path,
        log: &LogHandle,
    ) -> Result<(), String> {
        if self.registry.is_none() && self.unpack_here(digest, src, state).await? {
            return Ok(());
        }
        for (dir, what) in [
            (src, "the work directory"),
            (state, "the component's state directory"),
        ] {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| format!("creating {what}: {e}"))?;
        }
        self.ensure_artifact(component, digest, log).await?;
        let store = self.store(component).await?;
        ferry_artifacts::unpack(&store, digest, src)
            .await
            .map_err(|e| format!("artifact {digest} is not usable from the install's store: {e}"))
    }

    /// Whether jobs can be staged while their claim is out (`staging.rs`): from the layout
    /// store only; a registry is read through the network, after the grant.
    pub(crate) fn stages(&self) -> bool {
        self.registry.is_none()
    }

    /// From this host's layout store: the artifact unpacked into `src` and `state` made, in one
    /// trip to the blocking pool (every read verified); false when the artifact is not here.
    pub(crate) async fn unpack_here(
        &self,
        digest: &str,
        src: &Path,
        state: &Path,
    ) -> Result<bool, String> {
        let (layout, d) = (self.layout.clone(), digest.to_string());
        let (src, state) = (src.to_path_buf(), state.to_path_buf());
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&src)
                .map_err(|e| format!("creating the work directory: {e}"))?;
            std::fs::create_dir_all(&state)
                .map_err(|e| format!("creating the component's state directory: {e}"))?;
            match layout.unpack_blocking(&d, &src) {
                Err(ferry_artifacts::ArtifactError::NotFound(_)) => Ok(false),
                r => r.map(|()| true).map_err(|e| {
                    format!("artifact {d} is not usable from the install's store: {e}")
                }),
            }
        })
        .await
        .map_err(|e| format!("preparing the work directory: {e}"))?
    }

    /// Makes sure the artifact is in this host's store. An install may have several runner hosts
    /// (each with its own store), and its sync job may have run on another one: then this host
    /// copies the artifact itself, by the same digest-verified path a sync takes.
    async fn ensure_artifact(
        &self,
        component: &str,
        digest: &str,
        log: &LogHandle,
    ) -> Result<(), String> {
        let store = self.store(component).await?;
        // A copy writes the manifest last: a manifest present means the whole artifact is.
        if ferry_artifacts::BlobStore::has_manifest(&store, digest)
            .await
            .unwrap_or(false)
        {
            return Ok(());
        }
        log.system(format!(
            "artifact {digest} is not in this runner host's store (synced by another): copying it"
        ))
        .await;
        let vendor = HubArtifacts::new(&self.client, &self.org, &self.install, digest);
        ferry_artifacts::copy(&vendor, &store, digest)
            .await
            .map(drop)
            .map_err(|e| format!("artifact {digest} could not be copied to this host: {e}"))
    }

    async fn plugin(
        &self,
        mut job: Job<'_>,
        log: &LogHandle,
        stop: &Stop,
        timing: &mut RunnerTiming,
    ) -> JobResult {
        let staged = match job.staging.take() {
            Some(s) => s.await.ok().flatten(),
            None => None,
        };
        let (work, input) = match staged {
            Some(s) => (s.work, Some(s.input)),
            None => (self.data_dir.join("work").join(job.execution_id), None),
        };
        let r = self.plugin_in(&job, &work, input, log, stop, timing).await;
        if let Err(e) = tokio::fs::remove_dir_all(&work).await {
            warn!(dir = %work.display(), error = %e, "could not remove the job's work directory");
        }
        r
    }

    /// Prepares the job's work directory, runs the plugin in it and reads what it produced.
    async fn plugin_in(
        &self,
        j: &Job<'_>,
        work: &Path,
        staged: Option<PluginInput>,
        log: &LogHandle,
        stop: &Stop,
        timing: &mut RunnerTiming,
    ) -> JobResult {
        let (offer, limit) = (j.offer, j.limit);
        let prepared = match staged {
            Some(job) => Ok(job),
            None => self.prepare(offer, work, log).await,
        };
        let job = match prepared {
            Ok(job) => job,
            Err(why) => return failed(why),
        };
        timing.prepared_us = ferry_model::now_us();
        // The secret values the plugin copies into the cluster are masked like sensitive inputs.
        let log = &log.with_more(job.secret_values());
        let identity = match self.identity(offer, limit, log).await {
            Ok(i) => i,
            Err(why) => return failed(why),
        };
        timing.identity_us = ferry_model::now_us();
        log.system(self.sandbox.describe()).await;
        let mut confinement = match self.confine(&job, work).await {
            Ok(c) => c,
            Err(why) => return failed(why),
        };
        let cgroup = match self.job_cgroup(work).await {
            Ok(c) => c,
            Err(why) => return failed(why),
        };
        confinement.cgroups = cgroup.iter().flat_map(|c| c.dirs().to_vec()).collect();
        let ran = self
            .run_plugin(
                &job,
                Spawn {
                    identity: &identity,
                    confinement: &confinement,
                },
                limit,
                log,
                stop,
                &mut timing.spawned_us,
            )
            .await;
        timing.exited_us = ferry_model::now_us();
        if Self::end_cgroup(cgroup).await {
            return failed(format!(
                "killed: the job ran out of memory (its limit is {} MiB: the runner's \
                 --job-memory-mb)",
                self.sandbox.memory_limit() >> 20
            ));
        }
        let status = match ran {
            Ok(status) => status,
            Err(ended) => return ended,
        };
        self.stats.plugin_exited(job.plugin_name(), status.code());
        let mut result = match self.collect(&job, work, status).await {
            Ok(r) | Err(r) => r,
        };
        result.ran_as = identity.assumed_arn();
        result
    }

    /// What the job runs as in the customer's account (`roles.rs`), said in its log.
    async fn identity(
        &self,
        offer: &JobOffer,
        limit: Duration,
        log: &LogHandle,
    ) -> Result<crate::roles::Identity, String> {
        let pinned = match &offer.spec {
            JobSpec::Action(a) => crate::breakglass::pins(&self.data_dir).remove(&a.action),
            _ => None,
        };
        let identity = crate::roles::for_job(
            &self.account,
            &offer.spec,
            &offer.job_id,
            pinned.as_deref(),
            limit,
        )
        .await?;
        log.system(identity.describe()).await;
        Ok(identity)
    }

    /// The plugin's job: the artifact unpacked into `work/src`, the component's state directory,
    /// the plan an apply runs (this install's own copy), written to `work/job.json`.
    async fn prepare(
        &self,
        offer: &JobOffer,
        work: &Path,
        log: &LogHandle,
    ) -> Result<PluginInput, String> {
        let (phase, c, plan) = match &offer.spec {
            JobSpec::Plan(c) => (Phase::Plan, c, None),
            JobSpec::Teardown(c) => (Phase::Teardown, c, None),
            JobSpec::Apply(a) => (Phase::Apply, &a.component, Some(&a.plan_digest)),
            JobSpec::Action(a) => return self.prepare_action(a, work, log).await,
            JobSpec::SyncArtifact(_) => return Err("not a plugin job".into()),
        };
        // The component's name becomes a directory of the install's state and plans: one plain
        // path segment, whatever an offer says.
        if !plain_name(&c.component) {
            return Err(format!(
                "refusing a job for component {:?}: not a plain name",
                c.component
            ));
        }
        let src = work.join("src");
        let state = self.data_dir.join("state").join(&c.component);
        self.unpack(&c.component, &c.artifact_digest, &src, &state, log)
            .await?;
        let plan_file = match plan {
            Some(digest) => Some(
                self.own_plan(&c.component, digest, &c.artifact_digest, work)
                    .await?,
            ),
            None => None,
        };
        let secrets = self.synced_secrets(phase, c, log).await?;
        let job = self.plugin_job(phase, c, plan, plan_file, work, secrets);
        write_job(work, PluginInput::Component(job)).await
    }

    /// The plugin's job file's content for a component job whose work directory is `work`.
    pub(crate) fn plugin_job(
        &self,
        phase: Phase,
        c: &ferry_protocol::messages::ComponentJob,
        plan: Option<&String>,
        plan_file: Option<PathBuf>,
        work: &Path,
        secrets: Vec<crate::plugin::SyncedSecret>,
    ) -> PluginJob {
        PluginJob {
            phase,
            org: self.org.clone(),
            install: self.install.clone(),
            spec: c.clone(),
            plan_file,
            plan_digest: plan.cloned(),
            src_dir: work.join("src"),
            state_dir: self.data_dir.join("state").join(&c.component),
            work_dir: work.to_path_buf(),
            tools: self.tools.clone(),
            secrets,
        }
    }

    /// An apply's `kubernetes_sync` secrets with their values (`secrets.rs`); what was not
    /// synced, and why, said in the log.
    async fn synced_secrets(
        &self,
        phase: Phase,
        c: &ferry_protocol::messages::ComponentJob,
        log: &LogHandle,
    ) -> Result<Vec<crate::plugin::SyncedSecret>, String> {
        if phase != Phase::Apply || c.secret_syncs.is_empty() {
            return Ok(vec![]);
        }
        match crate::secrets::values(&self.account, &c.secret_syncs).await? {
            None => {
                log.system("the app's kubernetes_sync secrets are not synced: the runner is in no install stack").await;
                Ok(vec![])
            }
            Some((values, skipped)) => {
                if !skipped.is_empty() {
                    log.system(format!(
                        "not synced, not set in the install's account: {}",
                        skipped.join(", ")
                    ))
                    .await;
                }
                Ok(values)
            }
        }
    }

    /// An action step's job: nothing to unpack (its script travels in the offer), and a
    /// break-glass role it names must be granted on this host.
    async fn prepare_action(
        &self,
        a: &ActionJob,
        work: &Path,
        log: &LogHandle,
    ) -> Result<PluginInput, String> {
        // The role this host holds the action to, whatever the config says now.
        let (role, note) =
            crate::breakglass::role_for(&self.data_dir, &a.action, a.break_glass_role.as_deref())?;
        if let Some(note) = note {
            log.system(note).await;
        }
        if let Some(role) = &role {
            // An API grant is for the role the config names; one for another role never counts.
            let api = a
                .api_grant
                .as_ref()
                .filter(|_| !self.break_glass_host_only)
                .filter(|_| a.break_glass_role.as_ref() == Some(role));
            let checked = crate::breakglass::check(&self.data_dir, role, &a.action, api);
            let line = match &checked {
                Ok(grant) => format!("action {} step {} used {grant}", a.action, a.step),
                Err(why) => format!("action {} step {} {why}", a.action, a.step),
            };
            crate::breakglass::record(&self.data_dir, &line)?;
            let grant = checked?;
            log.system(format!("using {grant}")).await;
        }
        let src = work.join("src");
        tokio::fs::create_dir_all(&src)
            .await
            .map_err(|e| format!("creating the work directory: {e}"))?;
        let step = ActionStep {
            org: self.org.clone(),
            install: self.install.clone(),
            step: a.clone(),
            src_dir: src,
            work_dir: work.to_path_buf(),
            tools: self.tools.clone(),
        };
        write_job(work, PluginInput::Action(step)).await
    }

    /// Runs the plugin process in its own process group until it exits. A timeout kills the
    /// group; a cancel sends it SIGTERM, then SIGKILL after the grace period, so a job that traps
    /// SIGTERM stops too; a lost lease kills it at once, before another runner may start the job.
    /// `Err` is how the job ended when the plugin did not end by itself.
    async fn run_plugin(
        &self,
        job: &PluginInput,
        how: Spawn<'_>,
        limit: Duration,
        log: &LogHandle,
        stop: &Stop,
        spawned_us: &mut u64,
    ) -> Result<std::process::ExitStatus, JobResult> {
        let mut cmd = self.plugin_command(job, &how).map_err(failed)?;
        how.identity.apply(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| failed(format!("starting the plugin: {e}")))?;
        *spawned_us = ferry_model::now_us();
        let pid = child.id();
        // Recorded until it has ended: if this runner process dies (SIGKILL, a crash), the next
        // one for the install kills the group it left behind before taking any work.
        let _marker = pid.and_then(|p| crate::orphans::record(&self.data_dir, job.work_dir(), p));
        let out = child
            .stdout
            .take()
            .map(|s| forward(s, LogStream::Stdout, log.clone()));
        let err = child
            .stderr
            .take()
            .map(|s| forward(s, LogStream::Stderr, log.clone()));
        let signal = |sig| {
            if let Some(pid) = pid {
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), sig);
            }
        };
        use nix::sys::signal::Signal::SIGKILL;
        let status = tokio::select! {
            r = tokio::time::timeout(limit, child.wait()) => match r {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Err(failed(format!("waiting for the plugin: {e}"))),
                Err(_) => {
                    signal(SIGKILL);
                    let _ = child.wait().await;
                    let mut r = failed(format!("timed out after {}s", limit.as_secs()));
                    r.status = Outcome::TimedOut;
                    return Err(r);
                }
            },
            _ = stop.lost.notified() => {
                signal(SIGKILL);
                let _ = child.wait().await;
                return Err(failed(LEASE_LOST));
            }
            _ = stop.cancel.notified() => return Err(self.cancel(&mut child, pid, log).await),
        };
        // The plugin has exited; whatever it started and left behind (it crashed, or forgot a
        // background process) must not run on unaccounted for, nor hold the output pipes open.
        signal(SIGKILL);
        for t in [out, err].into_iter().flatten() {
            let _ = t.await;
        }
        Ok(status)
    }

    /// A cancel: SIGTERM to the job's processes, SIGKILL to the group once they have ended or the
    /// grace period is over. Not a SIGTERM to the group: bubblewrap is in it, and would take the
    /// sandbox down at once (`sandbox::Sandbox::terminate`).
    async fn cancel(
        &self,
        child: &mut tokio::process::Child,
        pid: Option<u32>,
        log: &LogHandle,
    ) -> JobResult {
        log.system(format!(
            "cancel requested: SIGTERM to the job's processes, SIGKILL after {}s",
            self.cancel_grace.as_secs()
        ))
        .await;
        if let Some(pid) = pid {
            self.sandbox.terminate(pid);
        }
        // The grace period is the whole group's: a tool that traps SIGTERM to clean up
        // (Terraform releasing its state lock) may outlive the plugin that started it.
        let deadline = tokio::time::Instant::now() + self.cancel_grace;
        let _ = tokio::time::timeout_at(deadline, child.wait()).await;
        while tokio::time::Instant::now() < deadline && group_alive(pid) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(pid) = pid {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = child.wait().await;
        cancelled("cancelled")
    }

    /// The job's result from what the plugin wrote: its error, or its outputs and plan (the plan
    /// kept install-side, only its digest, summary and JSON going to the hub).
    async fn collect(
        &self,
        job: &PluginInput,
        work: &Path,
        status: std::process::ExitStatus,
    ) -> Result<JobResult, JobResult> {
        let result: Option<PluginResult> = read_from_job(work, &job.work_dir().join("result.json"))
            .await
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if !status.success() {
            let why = result
                .and_then(|r| r.error)
                .unwrap_or_else(|| format!("plugin exited with {status}"));
            return Err(failed(why));
        }
        let result = result.ok_or_else(|| failed("the plugin wrote no result"))?;
        if let Some(e) = result.error {
            return Err(failed(e));
        }
        let plan = match result.plan {
            Some(p) => {
                let bytes = read_from_job(work, &p.file)
                    .await
                    .map_err(|e| failed(format!("reading the plan file: {e}")))?;
                let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
                let diff_json = match &p.diff {
                    Some(f) => read_from_job(work, f)
                        .await
                        .map_err(|e| failed(format!("reading the plan's JSON: {e}")))?,
                    None => vec![],
                };
                if let PluginInput::Component(job) = job {
                    self.keep_plan(
                        &job.spec.component,
                        &digest,
                        &bytes,
                        &job.spec.artifact_digest,
                    )
                    .await
                    .map_err(failed)?;
                }
                Some(PlanData {
                    digest,
                    changes: p.changes,
                    summary: p.summary,
                    diff_json,
                })
            }
            None => None,
        };
        Ok(JobResult {
            status: Outcome::Succeeded,
            outputs_json: serde_json::Value::Object(result.outputs).to_string(),
            plan,
            error: None,
            sensitive_outputs: result.sensitive_outputs,
            offloaded: None,
            ran_as: None,
            timing: Default::default(),
        })
    }
}

/// One path segment that stays where it is joined: not empty, not `.` or `..`, no separator.
pub(crate) fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

fn forward<R: tokio::io::AsyncRead + Unpin + Send + 'static>(
    r: R,
    stream: LogStream,
    log: LogHandle,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(r);
        let mut raw = Vec::new();
        loop {
            // Bytes up to a newline, at most a log line's worth: output that is not UTF-8 or has
            // no newline is logged (lossily, split) and never stops the reading, which would
            // kill the writer with SIGPIPE.
            raw.clear();
            let read = (&mut reader)
                .take(crate::logsink::MAX_LINE_BYTES as u64)
                .read_until(b'\n', &mut raw)
                .await;
            match read {
                Ok(0) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&raw);
                    log.line(stream, text.trim_end_matches(['\n', '\r']).to_string())
                        .await
                }
                Err(e) => {
                    log.system(format!("(unreadable {stream:?} output: {e})"))
                        .await;
                    break;
                }
            }
        }
    })
}

/// The result as it may leave the host: its error masked like the log, and an output that
/// shows a secret (a DSN with the password in it) marked sensitive.
fn masked(mut result: JobResult, spec: &JobSpec, log: &LogHandle) -> JobResult {
    result.error = result.error.map(|e| log.mask(&e));
    if let Ok(outputs) = serde_json::from_str::<ferry_model::Outputs>(&result.outputs_json) {
        for name in ferry_model::outputs_echoing(&outputs, &redacted_values(spec)) {
            if !result.sensitive_outputs.contains(&name) {
                result.sensitive_outputs.push(name);
            }
        }
    }
    result
}

/// Writes the plugin's job file, `work/job.json`, readable by the runner's user only (it may
/// hold secret values to copy into the cluster).
pub(crate) async fn write_job(work: &Path, job: PluginInput) -> Result<PluginInput, String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let bytes = serde_json::to_vec_pretty(&job)
        .map_err(|e| format!("encoding the plugin's job file: {e}"))?;
    let path = work.join("job.json");
    // One trip to the blocking pool, the write whole before the plugin starts.
    let written = tokio::task::spawn_blocking(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?
            .write_all(&bytes)
    })
    .await;
    match written {
        Ok(Ok(())) => Ok(job),
        Ok(Err(e)) => Err(format!("writing the plugin's job file: {e}")),
        Err(e) => Err(format!("writing the plugin's job file: {e}")),
    }
}

/// The values a job's log must not show, as its offer lists them.
fn redacted_values(spec: &JobSpec) -> Vec<String> {
    match spec {
        JobSpec::Plan(c) | JobSpec::Teardown(c) => c.redact.clone(),
        JobSpec::Apply(a) => a.component.redact.clone(),
        JobSpec::Action(a) => a.redact.clone(),
        JobSpec::SyncArtifact(_) => vec![],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_plain_names_become_directories() {
        for ok in ["web", "rds_cluster", "a.b"] {
            assert!(super::plain_name(ok), "{ok}");
        }
        for bad in ["", ".", "..", "../x", "a/b", "a\\b", "x\0"] {
            assert!(!super::plain_name(bad), "{bad:?}");
        }
    }
}
