//! Wire messages. Append-only: postcard encodes enum variants by index and struct fields by position,
//! so new variants go at the end and a changed shape needs a `PROTOCOL_VERSION` bump.
//!
//! Free-form JSON (component outputs) travels as a JSON string, because postcard cannot carry
//! self-describing values.
//!
//! Long because every message of the runner protocol is here, in one append-only file, where a
//! reviewer checks that a change keeps the wire compatible or bumps the version.

use serde::{Deserialize, Serialize};

use crate::codec::Message;

macro_rules! message {
    ($t:ty, $kind:expr) => {
        impl Message for $t {
            const KIND: u8 = $kind;
            const NAME: &'static str = stringify!($t);
        }
    };
}

/// Control plane → runner: one job for one install, published on `ferry.jobs.<org>.<install>.<job>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOffer {
    pub job_id: String,
    pub org: String,
    pub install: String,
    pub workflow_id: String,
    pub spec: JobSpec,
    pub timeouts: Timeouts,
}
message!(JobOffer, 1);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// How long a running execution may take before the runner kills it.
    pub execution_secs: u32,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            execution_secs: 30 * 60,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobSpec {
    /// Copy an artifact from the vendor store into the install's own store, verifying digests.
    SyncArtifact(SyncJob),
    Plan(ComponentJob),
    Apply(ApplyJob),
    Teardown(ComponentJob),
    /// One step of an action.
    Action(ActionJob),
}

impl JobSpec {
    pub fn label(&self) -> &'static str {
        match self {
            JobSpec::SyncArtifact(_) => "sync",
            JobSpec::Plan(_) => "plan",
            JobSpec::Apply(_) => "apply",
            JobSpec::Teardown(_) => "teardown",
            JobSpec::Action(_) => "action",
        }
    }

    pub fn component(&self) -> &str {
        match self {
            JobSpec::SyncArtifact(s) => &s.component,
            JobSpec::Plan(c) | JobSpec::Teardown(c) => &c.component,
            JobSpec::Apply(a) => &a.component.component,
            JobSpec::Action(a) => &a.action,
        }
    }

    /// The role of the customer's account the job runs as, if any.
    pub fn run_as(&self) -> Option<&RunAs> {
        match self {
            JobSpec::SyncArtifact(_) => None,
            JobSpec::Plan(c) | JobSpec::Teardown(c) => c.run_as.as_ref(),
            JobSpec::Apply(a) => a.component.run_as.as_ref(),
            JobSpec::Action(a) => a.run_as.as_ref(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncJob {
    pub component: String,
    /// Name of the artifact in the vendor store (`<org>/<app>/<component>`).
    pub repository: String,
    /// Digest of the artifact's OCI manifest.
    pub digest: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ComponentKind {
    Script,
    Terraform,
    Helm,
    KubernetesManifest,
    ContainerImage,
    Job,
}

impl ComponentKind {
    /// The plugin's name, as metrics label it.
    pub fn name(self) -> &'static str {
        match self {
            ComponentKind::Script => "script",
            ComponentKind::Terraform => "terraform",
            ComponentKind::Helm => "helm",
            ComponentKind::KubernetesManifest => "kubernetes_manifest",
            ComponentKind::ContainerImage => "container_image",
            ComponentKind::Job => "job",
        }
    }
}

/// What a component of a Kubernetes type says beyond its variables. The app config holds it with
/// template sources; a job carries it rendered with the install's values (one type, both times).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum KindSettings {
    #[default]
    None,
    Helm(HelmSettings),
    Manifest(ManifestSettings),
    Image(ImageSettings),
    Job(JobSettings),
}

/// A `job` component: a container run to completion in the install's cluster, as a Kubernetes Job
/// (its environment is the component's `env_vars`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSettings {
    pub image_url: String,
    pub tag: String,
    pub cmd: Vec<String>,
    pub args: Vec<String>,
}

/// A `container_image` (or `external_image`): an existing image, copied into the install's
/// registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSettings {
    /// The repository, without tag (`docker.io/library/nginx`, `123.dkr.ecr.us-east-1.amazonaws.com/api`).
    pub image_url: String,
    /// The tag; empty: `latest`.
    pub tag: String,
    pub source: ImageSource,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageSource {
    /// `[public]`: pulled anonymously.
    Public,
    /// `[aws_ecr]`: pulled with credentials from ECR's `GetAuthorizationToken` in `region`.
    AwsEcr { region: String },
    /// A source this version does not copy from (`gcp_gar`, `azure_acr`), by its key.
    Unsupported(String),
}

/// A `helm_chart` component.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelmSettings {
    /// The release name (`chart_name`).
    pub release: String,
    /// Namespace of the release; empty: the install's name (Nuon's default is the install id).
    pub namespace: String,
    /// `configmap` or `secret` (Helm's `HELM_DRIVER`); empty: `configmap`, as Nuon does.
    pub storage_driver: String,
    /// The contents of each `values_file`, in the order declared: Helm merges them in that order.
    pub values_files: Vec<String>,
    /// `[values]` (and the older `[[value]]`) as `--set path=value`, applied after the files.
    pub set: Vec<(String, String)>,
    /// A chart from a Helm repository, fetched install-side at plan time.
    pub repo: Option<HelmRepo>,
    pub take_ownership: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelmRepo {
    pub url: String,
    pub chart: String,
    pub version: Option<String>,
}

/// A `kubernetes_manifest` component: a manifest, or a kustomization in its source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSettings {
    /// The YAML (inline, or the referenced file's contents).
    pub manifest: Option<String>,
    pub kustomize: Option<Kustomize>,
    pub namespace: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kustomize {
    /// The kustomization's directory, relative to the component's source.
    pub path: String,
    /// Patch files (relative to the source), applied on top of the build.
    pub patches: Vec<String>,
    pub enable_helm: bool,
    /// `none` or `rootOnly` (Nuon's spelling); empty: kustomize's default.
    pub load_restrictor: String,
}

/// The Kubernetes cluster a component deploys into, as the install's sandbox describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterAccess {
    /// A kubeconfig (JSON or YAML) for the plugin's helm and kubectl.
    pub kubeconfig: String,
    /// The API server's address, for messages.
    pub server: String,
    /// Where it came from, for messages ("the sandbox's `kubeconfig` output").
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentJob {
    pub component: String,
    pub kind: ComponentKind,
    /// Manifest digest of the artifact in the install's own store.
    pub artifact_digest: String,
    /// Rendered component variables (Terraform vars).
    pub vars: Vec<(String, String)>,
    /// Rendered environment variables for the plugin's tools.
    pub env: Vec<(String, String)>,
    /// Digest of the plan last applied for this component, so a plugin can tell "no changes".
    pub applied_digest: Option<String>,
    /// Values the job's log must not show (the install's sensitive inputs and outputs): the
    /// runner prints `***` in their place.
    pub redact: Vec<String>,
    /// What its type needs beyond variables, rendered.
    pub settings: KindSettings,
    /// Longest a plan or an apply may take (the component's `deploy_timeout`): Helm waits that long.
    pub timeout_secs: Option<u64>,
    /// The cluster, when the sandbox names one; the runner's own (in-cluster or `--kubeconfig`)
    /// otherwise.
    pub cluster: Option<ClusterAccess>,
    /// The app's OPA policies over this component's plans, rendered.
    pub policies: Vec<PolicyDoc>,
    /// The role of the customer's account the job runs as, if the app declares one for it.
    pub run_as: Option<RunAs>,
    /// A Kubernetes component: the app's secrets (`kubernetes_sync`) its apply writes into the
    /// cluster first. Where they are and where they go: never their values.
    pub secret_syncs: Vec<SecretSync>,
}

/// One app secret to copy from the install's account into the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretSync {
    /// The app's name for it (`license_key`).
    pub secret: String,
    /// Its name in the account's Secrets Manager (`acme/license_key`).
    pub source: String,
    pub namespace: String,
    /// The Kubernetes Secret's name.
    pub name: String,
    /// The key it is under in that Secret.
    pub key: String,
    /// The value is base64 already (the secret's `format = "base64"`).
    pub base64: bool,
    /// Missing in the account, the deploy fails (else the sync of it is skipped, and said).
    pub required: bool,
}

/// The role of the customer's account a job runs as (`ferry_appconfig::operations`). A runner in
/// an install stack assumes the role whose ARN its own stack outputs under `output` and hands
/// the plugin only those temporary credentials; a role its stack does not output is never
/// assumed, whatever an offer says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAs {
    /// The role's name, rendered (`acme-maintenance`).
    pub role: String,
    /// The operation it serves: `provision`, `reprovision`, `deploy`, `teardown`,
    /// `deprovision` or `trigger`.
    pub operation: String,
    /// The key of its ARN in the install stack's outputs (`maintenance_iam_role_arn`); `None`
    /// for a role the app names but does not declare (the stack has none: a runner in one
    /// refuses the job).
    pub output: Option<String>,
    /// A break-glass role: used only while the customer has granted it.
    pub break_glass: bool,
}

/// One step of an action, rendered: what it runs and with what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionJob {
    pub action: String,
    pub step: String,
    /// What ran it: `manual`, `cron` or a lifecycle trigger (`NUON_TRIGGER_TYPE` for the step).
    pub trigger: String,
    /// A command line, run by `sh -c`.
    pub command: Option<String>,
    /// A script, run by its `#!` line (by `sh` without one).
    pub script: Option<String>,
    /// Its environment: the step's `env_vars` and the run's inputs.
    pub env: Vec<(String, String)>,
    /// Values the job's log must not show.
    pub redact: Vec<String>,
    /// The cluster, when the sandbox names one (`KUBECONFIG` for the step).
    pub cluster: Option<ClusterAccess>,
    /// The break-glass role the action needs: the runner runs it only while it is granted.
    pub break_glass_role: Option<String>,
    /// The role's grant made through the API by a customer token, if there is a live one: the
    /// runner accepts it unless it takes host grants only (`--break-glass-host-only`).
    pub api_grant: Option<ApiGrant>,
    /// The role of the customer's account the step runs as, if the app declares one for it.
    pub run_as: Option<RunAs>,
}

/// A break-glass grant recorded by the control plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiGrant {
    pub by: String,
    /// When it ends, ms since the epoch.
    pub until_ms: u64,
}

/// An OPA policy as a plan job carries it: its name and its Rego.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDoc {
    pub name: String,
    pub rego: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyJob {
    pub component: ComponentJob,
    /// The approved plan's digest. The runner applies only its own copy of a plan it produced
    /// with this digest (kept install-side since the plan job): no plan bytes come from the hub.
    pub plan_digest: String,
}

/// Runner → control plane (request/reply on `ferry.rx.<org>.<install>.claim`): "may I run this job?"
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRequest {
    pub job_id: String,
    pub runner_id: String,
}
message!(ClaimRequest, 2);

/// Control plane → runner, on `ferry.push.<org>.<install>.wake` (core NATS): a new offer, carried whole
/// so the runner can claim it without asking for it first. It rings as the offer is written, not
/// after, so it names no sequence in `JOBS` (the scheduler retires a decided offer by its subject).
/// An empty doorbell (or a missed one) makes the runner walk its install's offers in `JOBS` instead;
/// the stream stays the source of truth.
///
/// A doorbell with a `grant` is different: the job is granted to the runner it names as it is
/// offered (the install has that one runner, with a free slot: `ferry_model::pregrant_to`), and
/// there is no offer in `JOBS` to claim. It rings twice. First [`BellGrant::Coming`], sent with
/// the record's write: the runner it names prepares the job's work directory meanwhile, and runs
/// nothing. Then, once the record is written granted, [`BellGrant::Made`]: that runner starts
/// the job. Any other runner ignores both. The second has a reply subject (`subjects::unheard`) on
/// which the hub answers "no responders" if no runner of the install listens any more: the
/// scheduler then takes the grant back and offers the job to all. (A `Coming` never followed by
/// its grant — the write failed — leaves the runner's prepared directory to expire.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Doorbell {
    pub offer: JobOffer,
    pub grant: Option<BellGrant>,
}
message!(Doorbell, 11);

/// What a doorbell says of a job granted at its offer (see [`Doorbell`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BellGrant {
    /// The job is being granted to this runner: prepare it, start nothing yet.
    Coming { runner_id: String },
    /// Its record is written: granted.
    Made(PreGrant),
}

/// A job granted at its offer (see [`Doorbell`]): what a [`ClaimReply::Granted`] would say, and
/// to whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreGrant {
    pub runner_id: String,
    pub execution_id: String,
    pub attempt: u32,
    pub lease_ms: u32,
    /// When the grant's record was written, µs by the control plane's clock: echoed back in the
    /// execution's timing ([`RunnerTiming::grant_written_us`]).
    pub written_us: u64,
}

/// An offer as stored in `JOBS`, with its sequence (a walking runner asks for the next one after it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredOffer {
    pub seq: u64,
    pub offer: JobOffer,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClaimReply {
    Granted {
        execution_id: String,
        attempt: u32,
        /// How long the lease lasts unless renewed (see [`LeaseRenewal`]).
        lease_ms: u32,
    },
    /// The job is not (or no longer) runnable: claimed by another runner, finished, cancelled, unknown.
    Refused { reason: String },
}
message!(ClaimReply, 3);

/// Runner → control plane on `ferry.rx.<org>.<install>.lease` (core request/reply): extend the
/// lease of an execution this runner is running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRenewal {
    pub job_id: String,
    pub execution_id: String,
}
message!(LeaseRenewal, 8);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseReply {
    Renewed {
        lease_ms: u32,
    },
    /// The execution may not run any more (lost, cancelled, finished): stop it now.
    Lost {
        reason: String,
    },
}
message!(LeaseReply, 9);

/// Runner → control plane on `ferry.rx.<org>.<install>.event.<job>` (stream `JOB_EVENTS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobEvent {
    pub job_id: String,
    pub execution_id: String,
    /// Per-execution sequence; with the execution id it forms the JetStream message id (dedup).
    pub seq: u32,
    pub at_ms: u64,
    pub body: EventBody,
}
message!(JobEvent, 4);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventBody {
    /// How the execution ended. (A runner sends no "started" event: the grant is the start, and
    /// the execution's timing keeps when its plugin started.)
    Finished(Box<JobResult>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Succeeded,
    Failed,
    Cancelled,
    /// Killed by the runner when it ran past its execution timeout.
    TimedOut,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    pub status: Outcome,
    /// Component outputs as a JSON object.
    pub outputs_json: String,
    pub plan: Option<PlanData>,
    pub error: Option<String>,
    /// Outputs the tool marks sensitive (Terraform's `sensitive = true`): stored and passed to
    /// templates like the others, never shown in clear by the API.
    pub sensitive_outputs: Vec<String>,
    /// The real result did not fit in a message: it was published in chunks on
    /// `ferry.rx.<org>.<install>.result.<execution>` (stream `RESULTS`), and the fields above are
    /// empty.
    pub offloaded: Option<Offloaded>,
    /// The ARN of the role the job ran as in the customer's account, when the runner assumed one.
    pub ran_as: Option<String>,
    /// When the runner reached each point of the execution (kept in the job record).
    pub timing: RunnerTiming,
}
message!(JobResult, 10);

/// When the runner reached each point of an execution, in µs since the epoch by its host's
/// clock; 0 where it did not get there. With the control plane's own points (the job record's
/// `Timing`) they say where a job's time went, from its offer to its plugin's exit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerTiming {
    /// The offer reached the runner (a doorbell carrying it, or a walk of the offers).
    pub offer_seen_us: u64,
    /// The claim left for the scheduler.
    pub claim_sent_us: u64,
    /// The grant came back.
    pub granted_us: u64,
    /// The work directory was ready: the artifact checked (copied if this host lacked it) and
    /// unpacked, the plugin's job file written.
    pub prepared_us: u64,
    /// The role to run as was assumed (or none was needed).
    pub identity_us: u64,
    /// The plugin process was started.
    pub spawned_us: u64,
    /// The plugin process exited.
    pub exited_us: u64,
    /// For a job granted at its offer: when its record was written, as the grant said (the
    /// control plane's clock, echoed so the record keeps the point; 0 otherwise).
    pub grant_written_us: u64,
}

/// Where an offloaded [`JobResult`] is: `chunks` messages on the execution's result subject,
/// which joined are the encoded result with this digest. The subject is derived from the job's
/// install and execution, so a runner can only ever point at chunks it published itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offloaded {
    pub chunks: u32,
    /// `sha256:<hex>` of the joined chunks.
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanData {
    /// `sha256:<hex>` of the plan file, which stays in the install (it can hold secrets: a
    /// Terraform plan carries variables and state in clear); approvals bind to it.
    pub digest: String,
    pub changes: bool,
    /// One human line ("2 to add, 0 to change, 0 to destroy").
    pub summary: String,
    /// The plan as structured JSON (Terraform's `show -json`), empty when the plugin has none;
    /// `ferry workflows get --diff` shows it.
    pub diff_json: Vec<u8>,
}

/// Runner → control plane on `ferry.rx.<org>.<install>.log.<job>` (stream `LOGS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogBatch {
    pub job_id: String,
    pub execution_id: String,
    /// Sequence number of the first line within the execution; batches are contiguous.
    pub first_seq: u64,
    pub lines: Vec<LogLine>,
}
message!(LogBatch, 5);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LogStream {
    Stdout,
    Stderr,
    /// Lines written by the runner itself (start, exit status, lost lease).
    System,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    pub at_ms: u64,
    pub stream: LogStream,
    pub text: String,
}

/// Runner → control plane, core NATS on `ferry.rx.<org>.<install>.hb`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub runner_id: String,
    pub version: String,
    pub running_jobs: u32,
    pub at_ms: u64,
    /// How often this runner sends them: the control plane judges its health by it.
    pub interval_ms: u32,
    /// How many jobs it runs at once: with `running_jobs`, whether it has a free slot.
    pub max_jobs: u32,
    /// How its jobs are confined on the host.
    pub sandbox: SandboxState,
    /// The customer paused it on the host (`ferry-runner pause`): it takes no new job.
    pub paused: bool,
}
message!(Heartbeat, 6);

/// The install stack's parameter with which the customer pauses the runner (`"true"`): the
/// stack scales the runner host group to zero, and a runner that reads it takes no new job and
/// says it is paused (`ferry_appconfig::stack`, `ferry_runner::pause`).
pub const RUNNER_PAUSED_PARAMETER: &str = "RunnerPaused";

/// How a runner confines its jobs (`ferry_runner::sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SandboxState {
    /// bubblewrap, each job as the host's unprivileged job user.
    BubblewrapJobUser,
    /// bubblewrap in a user namespace, as the runner's own (non-root) uid.
    BubblewrapUserNamespace,
    /// The operator started the runner with `--unsandboxed-jobs`: jobs run as the runner.
    Unsandboxed,
    /// No sandbox on the host and none waived: the runner refuses every job.
    Unavailable,
}

/// Runner → control plane, core NATS on `ferry.rx.<org>.<install>.stack`: the install stack as
/// the runner reads it in its own account (CloudFormation's DescribeStacks); each output under
/// its Nuon key (the output's description), or its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackReport {
    pub stack_id: String,
    pub status: String,
    pub outputs: Vec<(String, String)>,
    /// The install's secrets that exist in the account: their status, never a value. `None`:
    /// they could not be read this time (the last ones read stand).
    pub secrets: Option<Vec<SecretStatus>>,
}

/// One secret of the install as the runner sees it (`ferry_aws::secrets`): never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretStatus {
    /// The app's name for it (`license_key`).
    pub name: String,
    pub arn: String,
    /// When its value last changed, RFC 3339 (or empty).
    pub last_changed: String,
    /// Its value's length in bytes.
    pub length: u64,
}
message!(StackReport, 19);

/// Service ↔ service messages on the `CONTROL` stream (`ferry.ctl.<topic>.<org>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Control {
    /// api → scheduler: run the deploy workflow `workflow_id` (already recorded in KV by the api).
    WorkflowRequested {
        org: String,
        install: String,
        workflow_id: String,
    },
    /// scheduler → build.
    BuildRequested {
        org: String,
        build_id: String,
        workflow_id: String,
        step: u32,
    },
    /// build → scheduler.
    BuildFinished {
        org: String,
        build_id: String,
        workflow_id: String,
        step: u32,
        ok: bool,
        error: Option<String>,
    },
    /// scheduler → approval.
    ApprovalRequested { org: String, approval_id: String },
    /// approval → scheduler.
    ApprovalDecided {
        org: String,
        approval_id: String,
        workflow_id: String,
        step: u32,
        approved: bool,
    },
    /// api → scheduler: stop the workflow (on the `workflow` topic, beside its request).
    CancelRequested {
        org: String,
        workflow_id: String,
        actor: String,
    },
    /// api → scheduler: stop one job; its step ends cancelled, and its workflow starts nothing new.
    JobCancelRequested {
        org: String,
        job_id: String,
        actor: String,
    },
    /// api → approval: a person's decision on a waiting plan.
    ApprovalResponse {
        org: String,
        approval_id: String,
        approved: bool,
        actor: String,
        /// Decided with a customer token, for the customer (else for the vendor).
        by_customer: bool,
    },
    /// api → scheduler: run an ended workflow again from a failed or cancelled step (whose
    /// current attempt is `attempt`).
    RetryRequested {
        org: String,
        workflow_id: String,
        step: u32,
        attempt: u32,
        actor: String,
    },
    /// api → scheduler: skip a step (see `Workflow::skip`).
    SkipRequested {
        org: String,
        workflow_id: String,
        step: u32,
        actor: String,
    },
    /// api → scheduler: drive the release `release_id` (already recorded, with its open mark)
    /// now: its first wave starts at once, not at the next sweep.
    ReleaseRequested { org: String, release_id: String },
}
message!(Control, 7);

impl Control {
    pub fn org(&self) -> &str {
        match self {
            Control::WorkflowRequested { org, .. }
            | Control::BuildRequested { org, .. }
            | Control::BuildFinished { org, .. }
            | Control::ApprovalRequested { org, .. }
            | Control::ApprovalDecided { org, .. }
            | Control::CancelRequested { org, .. }
            | Control::JobCancelRequested { org, .. }
            | Control::ApprovalResponse { org, .. }
            | Control::RetryRequested { org, .. }
            | Control::SkipRequested { org, .. }
            | Control::ReleaseRequested { org, .. } => org,
        }
    }

    /// The record this message is about, with its org: its workflow, or where it names none,
    /// the approval or job it names. A service handles the messages about one record in order
    /// and those about different records at once (`ferry_store::consume_messages_in_lanes`).
    pub fn about(&self) -> (&str, &str) {
        match self {
            Control::WorkflowRequested {
                org, workflow_id, ..
            }
            | Control::BuildRequested {
                org, workflow_id, ..
            }
            | Control::BuildFinished {
                org, workflow_id, ..
            }
            | Control::ApprovalDecided {
                org, workflow_id, ..
            }
            | Control::CancelRequested {
                org, workflow_id, ..
            }
            | Control::RetryRequested {
                org, workflow_id, ..
            }
            | Control::SkipRequested {
                org, workflow_id, ..
            } => (org, workflow_id),
            Control::ApprovalRequested {
                org, approval_id, ..
            }
            | Control::ApprovalResponse {
                org, approval_id, ..
            } => (org, approval_id),
            Control::JobCancelRequested { org, job_id, .. } => (org, job_id),
            Control::ReleaseRequested { org, release_id } => (org, release_id),
        }
    }

    /// The topic token of the subject this message is published on.
    pub fn topic(&self) -> &'static str {
        match self {
            Control::WorkflowRequested { .. }
            | Control::CancelRequested { .. }
            | Control::JobCancelRequested { .. }
            | Control::RetryRequested { .. }
            | Control::SkipRequested { .. }
            | Control::ReleaseRequested { .. } => crate::subjects::topic::WORKFLOW,
            Control::BuildRequested { .. } => crate::subjects::topic::BUILD,
            Control::BuildFinished { .. } => crate::subjects::topic::BUILD_DONE,
            Control::ApprovalRequested { .. } | Control::ApprovalResponse { .. } => {
                crate::subjects::topic::APPROVAL
            }
            Control::ApprovalDecided { .. } => crate::subjects::topic::APPROVAL_DONE,
        }
    }

    /// A stable id for JetStream de-duplication: the same logical request published twice (a retry
    /// after a crash) is stored once.
    pub fn dedup_id(&self) -> String {
        match self {
            Control::WorkflowRequested { workflow_id, .. } => format!("wf-{workflow_id}"),
            Control::BuildRequested {
                build_id,
                workflow_id,
                step,
                ..
            } => format!("b-{build_id}-{workflow_id}-{step}"),
            Control::BuildFinished {
                build_id,
                workflow_id,
                step,
                ..
            } => format!("bd-{build_id}-{workflow_id}-{step}"),
            Control::ApprovalRequested { approval_id, .. } => format!("a-{approval_id}"),
            Control::ApprovalDecided { approval_id, .. } => format!("ad-{approval_id}"),
            Control::CancelRequested { workflow_id, .. } => format!("cancel-{workflow_id}"),
            Control::JobCancelRequested { job_id, .. } => format!("cancel-job-{job_id}"),
            Control::ApprovalResponse { approval_id, .. } => format!("response-{approval_id}"),
            Control::RetryRequested {
                workflow_id,
                step,
                attempt,
                ..
            } => format!("retry-{workflow_id}-{step}-{attempt}"),
            Control::SkipRequested {
                workflow_id, step, ..
            } => format!("skip-{workflow_id}-{step}"),
            Control::ReleaseRequested { release_id, .. } => format!("release-{release_id}"),
        }
    }
}

/// Runner → control plane on `ferry.rx.<org>.<install>.offers` (request/reply): the install's
/// first offer in `JOBS` after sequence `after`. Runners may not read `JOBS` themselves (their
/// permissions stop at their own subjects); the scheduler reads it for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferQuery {
    pub after: u64,
}
message!(OfferQuery, 12);

/// The reply: the next offer, or `None` when there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferReply {
    pub next: Option<StoredOffer>,
}
message!(OfferReply, 13);

/// Runner → control plane on `ferry.rx.<org>.<install>.artifact` (request/reply): bytes of a blob
/// of an artifact built for the install's org, from `offset`. `manifest` names the artifact the
/// blob belongs to (or is, for the manifest itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRead {
    pub manifest: String,
    pub digest: String,
    pub offset: u64,
    /// The most bytes a reply may carry: the runner's own server (its leaf) may take smaller
    /// messages than the hub.
    pub max_chunk: u32,
}
message!(ArtifactRead, 14);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArtifactReply {
    /// Up to a chunk of the blob from the offset asked for; `total` is the blob's size.
    Chunk { total: u64, bytes: Vec<u8> },
    /// Not an artifact of this install's org, or not found.
    Refused { reason: String },
}
message!(ArtifactReply, 15);

/// Runner → control plane on `ferry.rx.<org>.<install>.renew` (request/reply): a certificate for a
/// new key, before the current one expires. Asked over the live connection, which the hub admitted
/// with the install's current certificate: the new one names the same install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewRequest {
    /// PEM CSR for the new key (made in the install).
    pub csr: String,
}
message!(RenewRequest, 16);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RenewReply {
    Issued { certificate: String, ca: String },
    Refused { reason: String },
}
message!(RenewReply, 17);

/// Runner → control plane on `ferry.rx.<org>.<install>.metrics` (stream `METRICS`), every
/// metrics interval: the runner's counters since it started (cumulative, so a lost sample costs
/// nothing) and its gauges now. The org and install are the subject's, never the message's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerMetrics {
    pub runner_id: String,
    pub version: String,
    pub at_ms: u64,
    /// How often the runner sends these: a sample older than a few intervals is stale.
    pub interval_ms: u64,
    /// Jobs running now, by job kind (`plan`, `apply`, `sync`, …).
    pub jobs_running: Vec<(String, u64)>,
    /// Jobs finished, by kind and outcome.
    pub jobs_finished: Vec<(String, String, u64)>,
    /// How long jobs took, by kind.
    pub job_seconds: Vec<(String, Histogram)>,
    /// Plugin processes ended, by component type and exit code (-1: killed by a signal).
    pub plugin_exits: Vec<(String, i32, u64)>,
    /// Bytes copied into the install's store by sync jobs.
    pub artifact_bytes_synced: u64,
    /// Messages in the leaf's spool, waiting for the link (0 in direct mode).
    pub spool_depth: u64,
    /// Whether the install's link to the hub is up.
    pub link_up: bool,
    /// Times the link came back after being down.
    pub link_reconnects: u64,
    pub host: HostStats,
}
message!(RunnerMetrics, 18);

/// A histogram as Prometheus keeps one: counts per upper bound (cumulative), their sum and
/// count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// `(upper bound, observations at or below it)`, bounds ascending; `+Inf` is `count`.
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &[f64]) -> Histogram {
        Histogram {
            buckets: bounds.iter().map(|b| (*b, 0)).collect(),
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, v: f64) {
        for (bound, n) in &mut self.buckets {
            if v <= *bound {
                *n += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

/// The runner host's resources, as the runner sees them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostStats {
    /// CPU busy over the last interval, 0–100 (all cores together).
    pub cpu_percent: f32,
    pub memory_used_bytes: u64,
    pub memory_total_bytes: u64,
    /// The filesystem of the runner's data directory.
    pub disk_used_bytes: u64,
    pub disk_total_bytes: u64,
}
