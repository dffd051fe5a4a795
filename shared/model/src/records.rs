//! The records of state kept in the hub's KV buckets: apps and their config versions, builds,
//! installs (with their components, action runs, drift and break-glass grants), jobs and their
//! executions, approvals, runners, audit events and log lines.
//!
//! Long (about 520 lines, the rest tests) because it is the one list of what Ferry keeps; each
//! record is small, and the logic of each lives in its own module.

use std::collections::BTreeMap;

use crate::Timestamp;
use serde::{Deserialize, Serialize};

pub type Outputs = serde_json::Map<String, serde_json::Value>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct App {
    pub org: String,
    pub name: String,
    pub created_at: String,
    pub updated_at: String,
    /// Id of the newest config version.
    pub latest_config: Option<String>,
    pub config_count: u32,
}

/// One immutable version of an app's package. The files themselves live in the `app_sources`
/// object store under `source_object`; services parse them with `ferry-appconfig` when needed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AppConfigVersion {
    pub id: String,
    pub org: String,
    pub app: String,
    pub version: u32,
    /// Hash over every file of the package.
    pub content_hash: String,
    pub source_object: String,
    pub components: Vec<ComponentSummary>,
    /// Deploy stages: each inner list can run in parallel; stages run in order.
    pub deploy_order: Vec<Vec<String>>,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ComponentSummary {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Hash over the component's config and every file its build reads.
    pub content_hash: String,
    pub dependencies: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuildStatus {
    Building,
    Succeeded,
    Failed,
}

/// One component's artifact. Its id derives from the content hash, so an unchanged component is built
/// once and reused by every later config version and install.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Build {
    pub id: String,
    pub org: String,
    pub app: String,
    pub component: String,
    pub config_id: String,
    pub content_hash: String,
    pub status: BuildStatus,
    /// Repository of the artifact in the vendor store.
    pub repository: String,
    /// OCI manifest digest, once built.
    pub digest: Option<String>,
    pub size: u64,
    /// The manifest's media type, once built.
    #[serde(default)]
    pub media_type: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InstallStatus {
    /// Its sandbox (and what follows) is being provisioned.
    Provisioning,
    /// A deploy (or a runbook) is changing what it runs.
    Deploying,
    /// A teardown is destroying what it deployed.
    TearingDown,
    Active,
    Failed,
    /// Its last deploy was cancelled part way: some components may run the new config, some
    /// the old.
    Cancelled,
    /// Everything it deployed was destroyed.
    TornDown,
}

impl InstallStatus {
    /// Every status, in the order an install's life meets them.
    pub const ALL: [InstallStatus; 7] = [
        InstallStatus::Provisioning,
        InstallStatus::Deploying,
        InstallStatus::Active,
        InstallStatus::Failed,
        InstallStatus::Cancelled,
        InstallStatus::TearingDown,
        InstallStatus::TornDown,
    ];

    /// The status's name, as the API, filters and the dashboard say it.
    pub fn label(self) -> &'static str {
        match self {
            InstallStatus::Provisioning => "provisioning",
            InstallStatus::Deploying => "deploying",
            InstallStatus::TearingDown => "tearing_down",
            InstallStatus::Active => "active",
            InstallStatus::Failed => "failed",
            InstallStatus::Cancelled => "cancelled",
            InstallStatus::TornDown => "torn_down",
        }
    }

    /// Every status's name (what `installs list --status` takes).
    pub fn labels() -> Vec<&'static str> {
        InstallStatus::ALL.iter().map(|s| s.label()).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ComponentStatus {
    #[default]
    Pending,
    Deploying,
    Active,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, utoipa::ToSchema)]
pub struct ComponentState {
    pub status: ComponentStatus,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub outputs: Outputs,
    /// Manifest digest of the artifact deployed (or being deployed).
    pub artifact_digest: Option<String>,
    /// The app config version it was deployed with (its teardown uses it).
    #[serde(default)]
    pub config_id: Option<String>,
    /// Digest of the last applied plan.
    pub applied_digest: Option<String>,
    pub last_job: Option<String>,
    pub updated_at: Option<String>,
    /// Outputs its tool marks sensitive: never shown in clear (see [`Install::redacted`]).
    #[serde(default)]
    pub sensitive_outputs: Vec<String>,
    /// What its last drift check found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
}

/// A drift check's finding on a component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Drift {
    /// When it was checked (or skipped).
    pub checked_at: String,
    /// The check's workflow.
    pub workflow: String,
    /// Its plan has changes: what is deployed is not what the last apply left.
    pub drifted: bool,
    /// The plan's summary (`workflows get --diff` on the workflow shows its changes), or why the
    /// check was skipped.
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Install {
    pub org: String,
    pub name: String,
    pub app: String,
    pub app_config_id: String,
    pub inputs: BTreeMap<String, String>,
    /// Inputs the app declares sensitive: stored and used, never shown in clear.
    #[serde(default)]
    pub sensitive_inputs: Vec<String>,
    /// Approve every plan without review (dev installs default to true).
    pub approve_all: bool,
    pub status: InstallStatus,
    /// The sandbox is deployed like a component named `sandbox`.
    pub sandbox: ComponentState,
    pub components: BTreeMap<String, ComponentState>,
    pub last_workflow: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Each action's latest run (`.nuon.actions.workflows.NAME` in templates).
    #[serde(default)]
    pub actions: BTreeMap<String, ActionState>,
    /// Break-glass roles granted through the API by a customer token, by role.
    #[serde(default)]
    pub break_glass: BTreeMap<String, BreakGlassGrant>,
    /// The vendor's labels (`team=payments`, `tier=gold`), for finding installs of a fleet
    /// (`ferry_model::check_label` is their rule).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Who approves this install's plans: the vendor (the default), its customer, or both.
    #[serde(default)]
    pub approvals_by: crate::ApprovalsBy,
    /// The install stack as the install's runner last read it in the customer's account
    /// (`.nuon.install_stack` in templates); none before a runner reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_stack: Option<StackState>,
    /// The install stack's template as last published to the vendor's bucket, with the link
    /// that opens it in the customer's console (`ferry installs stack --upload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_template: Option<StackTemplate>,
}

/// An install stack's template published for the customer: where it is, its checksum, and the
/// AWS console's quick-create link that launches it (`.nuon.install_stack.{template_url,
/// quick_link_url,checksum}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StackTemplate {
    pub template_url: String,
    pub quick_link_url: String,
    /// `sha256:<hex>` of the template's bytes.
    pub checksum: String,
    /// The config version it was rendered from.
    pub app_config_id: String,
    pub published_at: String,
    pub published_by: String,
}

/// The install stack's status and outputs, as the runner reads them with CloudFormation's
/// DescribeStacks. Outputs are keyed as Nuon's `install_stack.outputs` (`vpc_id`,
/// `break_glass_role_arns.NAME` becomes a map).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StackState {
    pub stack_id: String,
    /// CloudFormation's status (`CREATE_COMPLETE`, `UPDATE_IN_PROGRESS`, ...).
    pub status: String,
    #[schema(value_type = Object)]
    pub outputs: Outputs,
    pub reported_at: String,
    /// The install's secrets that exist in the account, by name: their status, never a value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, SecretState>,
}

/// A secret of the install as its runner saw it in the customer's account (`.nuon.secrets.NAME`):
/// where it is, when it last changed and how long its value is. The value stays in the account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SecretState {
    pub arn: String,
    /// When its value last changed (RFC 3339), if Secrets Manager says.
    pub timestamp: String,
    /// Its value's length in bytes: 0 until the customer sets it.
    pub length: u64,
}

/// The mark of a break-glass grant made through the API: the scheduler's sweep reads these, not
/// every install, to see grants end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GrantMark {
    /// `<install>.<role>`.
    pub id: String,
    pub org: String,
    pub install: String,
    pub role: String,
    pub until_ms: u64,
}

impl GrantMark {
    pub fn of(org: &str, install: &str, role: &str, until_ms: u64) -> GrantMark {
        GrantMark {
            id: format!("{install}.{role}"),
            org: org.into(),
            install: install.into(),
            role: role.into(),
            until_ms,
        }
    }
}

/// A break-glass role granted until a time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BreakGlassGrant {
    /// Who granted it (`token:NAME`).
    pub by: String,
    pub granted_at: String,
    /// When it ends, ms since the epoch.
    pub until_ms: u64,
}

/// An action's latest run on an install, as templates and `actions list` see it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ActionState {
    /// The run's workflow.
    pub workflow: String,
    /// `running`, `succeeded` or `failed`.
    pub status: String,
    /// `steps.STEP.KEY` for every step that wrote outputs, and each step's keys at the top
    /// level too (a later step's win): Nuon's apps read them both ways.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub outputs: Outputs,
    pub updated_at: String,
}

impl ActionState {
    /// Records what one step of the run `workflow` wrote. A new run keeps the last run's
    /// outputs until its own steps replace them: templates never see them vanish mid-run.
    pub fn step_finished(&mut self, workflow: &str, step: &str, outputs: &Outputs, now: Timestamp) {
        self.workflow = workflow.to_string();
        let steps = self
            .outputs
            .entry("steps")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        if let serde_json::Value::Object(m) = steps {
            m.insert(step.to_string(), serde_json::Value::Object(outputs.clone()));
        }
        for (k, v) in outputs {
            if k != "steps" {
                self.outputs.insert(k.clone(), v.clone());
            }
        }
        self.updated_at = now.to_string();
    }
}

/// The most bytes an install's input names and values may take together: the install record
/// holds them beside every component's outputs, and a record must fit in one NATS message (1 MiB
/// by default; outputs get a quarter each, see the scheduler's `checked_outputs`).
pub const MAX_INPUTS_BYTES: usize = 256 * 1024;

impl Install {
    /// The deployables (the sandbox first) whose last drift check found changes.
    pub fn drifted(&self) -> Vec<&str> {
        std::iter::once((SANDBOX, &self.sandbox))
            .chain(self.components.iter().map(|(n, c)| (n.as_str(), c)))
            .filter(|(_, c)| c.drift.as_ref().is_some_and(|d| d.drifted))
            .map(|(n, _)| n)
            .collect()
    }

    /// Why `inputs` cannot be stored in an install record, if they cannot.
    pub fn inputs_too_large(inputs: &BTreeMap<String, String>) -> Option<String> {
        let size: usize = inputs.iter().map(|(k, v)| k.len() + v.len()).sum();
        (size > MAX_INPUTS_BYTES).then(|| {
            format!(
                "the inputs take {size} bytes, more than the {MAX_INPUTS_BYTES} an install can \
                 hold: keep large values in the install's own storage and pass their location"
            )
        })
    }

    pub fn component_mut(&mut self, name: &str) -> &mut ComponentState {
        if name == crate::SANDBOX {
            &mut self.sandbox
        } else {
            self.components.entry(name.to_string()).or_default()
        }
    }

    pub fn component(&self, name: &str) -> Option<&ComponentState> {
        if name == crate::SANDBOX {
            Some(&self.sandbox)
        } else {
            self.components.get(name)
        }
    }

    /// Whether an apply has deployed `name` (it recorded the artifact it deployed).
    pub fn has_deployed(&self, name: &str) -> bool {
        self.component(name)
            .is_some_and(|c| c.artifact_digest.is_some())
    }

    /// Components still deployed that the app (`in_app`) no longer has.
    pub fn deployed_outside(&self, in_app: impl Fn(&str) -> bool) -> Vec<String> {
        self.components
            .keys()
            .filter(|n| self.has_deployed(n) && !in_app(n))
            .cloned()
            .collect()
    }

    /// What a teardown destroys, stage by stage in deploy order (`Workflow::teardown` reverses
    /// it): the sandbox, then the app's stages, each only what is deployed, then what is deployed
    /// but no longer in the app (so it goes first).
    pub fn teardown_stages(
        &self,
        deploy_order: &[Vec<String>],
        in_app: impl Fn(&str) -> bool,
    ) -> Vec<Vec<String>> {
        let sandbox = vec![crate::SANDBOX.to_string()];
        std::iter::once(&sandbox)
            .chain(deploy_order)
            .map(|stage| {
                stage
                    .iter()
                    .filter(|n| self.has_deployed(n))
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .chain(std::iter::once(self.deployed_outside(in_app)))
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// What a sensitive value reads as wherever a record is shown.
pub const REDACTED: &str = "(sensitive)";

fn redact(outputs: &mut Outputs, names: &[String]) {
    for name in names {
        if let Some(v) = outputs.get_mut(name) {
            *v = serde_json::Value::String(REDACTED.into());
        }
    }
}

impl Install {
    /// The install as the API shows it: sensitive inputs and outputs read [`REDACTED`].
    pub fn redacted(mut self) -> Install {
        for name in &self.sensitive_inputs {
            if let Some(v) = self.inputs.get_mut(name) {
                *v = REDACTED.into();
            }
        }
        for c in std::iter::once(&mut self.sandbox).chain(self.components.values_mut()) {
            redact(&mut c.outputs, &c.sensitive_outputs);
        }
        self
    }
}

/// Shortest secret value masked in job logs: masking every `a` or `1` would make logs unreadable
/// and hide nothing.
pub const MIN_MASKED_LEN: usize = 3;

impl Install {
    /// The values its jobs' logs must not show: its sensitive inputs' and the sensitive outputs of
    /// its sandbox and components (at least [`MIN_MASKED_LEN`] long), longest first so a value that
    /// contains another is masked whole.
    /// `defaults` are the values its sensitive inputs take when it sets none
    /// (`AppConfig::sensitive_defaults`).
    pub fn secret_values(&self, defaults: &[String]) -> Vec<String> {
        let inputs = self
            .sensitive_inputs
            .iter()
            .filter_map(|n| self.inputs.get(n))
            .chain(defaults)
            .cloned();
        // A string output as it is; any other value as the JSON a tool would print.
        let outputs = std::iter::once(&self.sandbox)
            .chain(self.components.values())
            .flat_map(|c| c.sensitive_outputs.iter().filter_map(|n| c.outputs.get(n)))
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        let mut values: Vec<String> = inputs
            .chain(outputs)
            .filter(|v| v.len() >= MIN_MASKED_LEN)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        values.dedup();
        values
    }
}

/// The names of the outputs whose values show any of `secrets` (each at least
/// [`MIN_MASKED_LEN`] long): an output that echoes a secret is as sensitive as the secret, and
/// is shown and logged as such.
pub fn outputs_echoing(outputs: &Outputs, secrets: &[String]) -> Vec<String> {
    outputs
        .iter()
        .filter(|(_, v)| {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            secrets
                .iter()
                .filter(|s| s.len() >= MIN_MASKED_LEN)
                .any(|s| text.contains(s.as_str()))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

impl Job {
    /// The job as the API shows it: sensitive outputs read [`REDACTED`].
    pub fn redacted(mut self) -> Job {
        redact(&mut self.outputs, &self.sensitive_outputs);
        for e in &mut self.executions {
            e.key_sha256.clear();
        }
        self
    }
}

/// The sandbox's name wherever it is treated as a deployable like a component.
pub const SANDBOX: &str = "sandbox";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    Sync,
    Plan,
    Apply,
    Teardown,
    /// One step of an action.
    Action,
}

/// Where a job is in its life. The names are the ones users see (`ferry jobs get`); older
/// records' names are read through the aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Recorded, not offered to a runner yet (or queued again after a lost execution).
    Queued,
    /// Offered to its install's runners; none has claimed it yet.
    Available,
    /// A runner holds it under a lease.
    #[serde(alias = "running")]
    InProgress,
    #[serde(alias = "succeeded")]
    Finished,
    Failed,
    /// It ran past one of its timeouts (see [`JobTimeouts`](crate::JobTimeouts)).
    TimedOut,
    /// Stopped by a cancel while a runner ran it.
    Cancelled,
    /// Ended without any execution: cancelled before a runner took it.
    NotAttempted,
}

impl JobStatus {
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            JobStatus::Queued | JobStatus::Available | JobStatus::InProgress
        )
    }

    /// Waiting for a runner to claim it (offered or not).
    pub fn is_unclaimed(self) -> bool {
        matches!(self, JobStatus::Queued | JobStatus::Available)
    }

    /// The name users see (and metrics and audit actions carry).
    pub fn name(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Available => "available",
            JobStatus::InProgress => "in_progress",
            JobStatus::Finished => "finished",
            JobStatus::Failed => "failed",
            JobStatus::TimedOut => "timed_out",
            JobStatus::Cancelled => "cancelled",
            JobStatus::NotAttempted => "not_attempted",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    #[serde(alias = "running")]
    InProgress,
    #[serde(alias = "succeeded")]
    Finished,
    Failed,
    Cancelled,
    /// The runner holding the lease went away.
    Lost,
    TimedOut,
}

impl ExecutionStatus {
    /// The status a job ends with when this execution ends it (`Lost` requeues instead; see
    /// [`Job::expire`](crate::Job::expire)).
    pub fn job_status(self) -> JobStatus {
        match self {
            ExecutionStatus::InProgress => JobStatus::InProgress,
            ExecutionStatus::Finished => JobStatus::Finished,
            ExecutionStatus::Failed | ExecutionStatus::Lost => JobStatus::Failed,
            ExecutionStatus::Cancelled => JobStatus::Cancelled,
            ExecutionStatus::TimedOut => JobStatus::TimedOut,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Execution {
    /// The public id, `<job>-<attempt>` (see `executions.rs`).
    pub id: String,
    /// Hex SHA-256 of the key that ends the token granted to its runner; never shown by the API.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_sha256: String,
    pub attempt: u32,
    pub runner: String,
    pub status: ExecutionStatus,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Where its time went, from the offer to the plugin's exit (see `timing.rs`).
    #[serde(default)]
    pub timing: crate::Timing,
}

/// One unit of work for one install. Its executions are the attempts at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Job {
    pub id: String,
    pub org: String,
    pub install: String,
    pub workflow_id: String,
    pub step: u32,
    pub kind: JobKind,
    pub component: String,
    pub status: JobStatus,
    pub executions: Vec<Execution>,
    pub max_executions: u32,
    /// Its limits in time (per kind by default; a component's `timeout` sets the execution's).
    #[serde(default)]
    pub timeouts: crate::JobTimeouts,
    #[schema(value_type = Object)]
    pub outputs: Outputs,
    /// Outputs its tool marks sensitive.
    #[serde(default)]
    pub sensitive_outputs: Vec<String>,
    pub plan_digest: Option<String>,
    pub plan_changes: Option<bool>,
    pub plan_summary: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// When it was last offered, µs since the epoch by the scheduler's clock (`Timing`).
    #[serde(default)]
    pub offered_us: u64,
    /// When its offer was published: the reconcile pass offers only a job that has none (a crash
    /// between the record and the offer), never one again.
    #[serde(default)]
    pub offered_at: Option<String>,
    /// While running: when the current execution's lease ends (ms since the epoch, the
    /// scheduler's clock) unless its runner renews it. See `leases.rs`.
    #[serde(default)]
    pub lease_expires_ms: Option<u64>,
    /// Who ended it: `runner:<install>` for its runner's result; the scheduler for a timeout, a
    /// lost last lease or a cancel before any runner claimed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// The ARN of the role of the customer's account its last execution ran as, when its runner
    /// assumed one (an install stack's runner, for a role the app declares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_as: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Denied,
}

/// A plan review gate. It binds to the plan's digest: the apply receives exactly those bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Approval {
    pub id: String,
    pub org: String,
    pub install: String,
    pub workflow_id: String,
    pub step: u32,
    pub component: String,
    pub plan_job: String,
    pub plan_digest: String,
    pub plan_summary: String,
    pub status: ApprovalStatus,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    pub created_at: String,
    /// When the approval service was asked to decide (see `Job::offered_at`).
    #[serde(default)]
    pub requested_at: Option<String>,
    /// What a denial does to the workflow.
    #[serde(default)]
    pub on_deny: OnDeny,
    /// Why it was denied, as the person said (at most `MAX_REASON` characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who approved for the vendor, while the customer's approval is still wanted (an install
    /// whose plans both approve: `ApprovalsBy::Both`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_approved_by: Option<String>,
    /// Who approved for the customer, while the vendor's approval is still wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_approved_by: Option<String>,
}

/// What denying a plan does: fail the workflow, or skip the denied apply (and, with
/// `SkipDependents`, everything that depends on it) and go on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnDeny {
    #[default]
    Fail,
    SkipCurrent,
    SkipDependents,
}

/// One audit record, appended to the `AUDIT` stream as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditEvent {
    pub org: String,
    pub at: String,
    pub actor: String,
    pub action: String,
    pub target: String,
    #[serde(default)]
    pub detail: serde_json::Value,
}

/// One line of a job's log, as the API returns it and log-ingest archives it (JSON lines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LogEntry {
    pub execution: String,
    pub seq: u64,
    pub at_ms: u64,
    /// `stdout`, `stderr` or `system` (written by the runner itself).
    pub stream: String,
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_teardown_takes_what_is_deployed_in_deploy_order_and_what_the_app_lost_first() {
        let deployed = |d: bool| ComponentState {
            artifact_digest: d.then(|| "sha256:x".to_string()),
            ..Default::default()
        };
        let install = Install {
            org: "o".into(),
            name: "i".into(),
            app: "a".into(),
            app_config_id: "c".into(),
            inputs: Default::default(),
            sensitive_inputs: vec![],
            approve_all: true,
            status: InstallStatus::Active,
            sandbox: deployed(true),
            components: [
                ("db".to_string(), deployed(true)),
                ("web".to_string(), deployed(false)),
                ("old".to_string(), deployed(true)),
            ]
            .into(),
            last_workflow: None,
            created_at: String::new(),
            updated_at: String::new(),
            actions: Default::default(),
            break_glass: Default::default(),
            labels: Default::default(),
            approvals_by: Default::default(),
            install_stack: None,
            stack_template: None,
        };
        let order = vec![vec!["db".to_string()], vec!["web".to_string()]];
        let in_app = |n: &str| n != "old";
        assert_eq!(install.deployed_outside(in_app), ["old"]);
        assert_eq!(
            install.teardown_stages(&order, in_app),
            [vec!["sandbox"], vec!["db"], vec!["old"]]
        );
    }

    #[test]
    fn the_values_job_logs_mask_are_the_sensitive_inputs_and_outputs_longest_first() {
        let mut db = ComponentState::default();
        db.outputs.insert("password".into(), "hunter22".into());
        db.outputs.insert("port".into(), 5432.into());
        db.outputs.insert("host".into(), "db.local".into());
        db.sensitive_outputs = vec!["password".into(), "port".into()];
        let install = Install {
            org: "o".into(),
            name: "i".into(),
            app: "a".into(),
            app_config_id: "c".into(),
            inputs: [
                ("api_key".to_string(), "hunter22-extra".to_string()),
                ("pin".to_string(), "12".to_string()),
                ("region".to_string(), "eu-west-1".to_string()),
            ]
            .into(),
            sensitive_inputs: vec!["api_key".into(), "pin".into()],
            approve_all: true,
            status: InstallStatus::Active,
            sandbox: ComponentState::default(),
            components: [("db".to_string(), db)].into(),
            last_workflow: None,
            created_at: String::new(),
            updated_at: String::new(),
            actions: Default::default(),
            break_glass: Default::default(),
            labels: Default::default(),
            approvals_by: Default::default(),
            install_stack: None,
            stack_template: None,
        };
        assert_eq!(
            install.secret_values(&[]),
            ["hunter22-extra", "hunter22", "5432"],
            "not the public ones, not the too short, the longer first"
        );
        // A sensitive input left at its default: the default is as secret.
        assert_eq!(
            install.secret_values(&["s3cret-default".into()]),
            ["hunter22-extra", "s3cret-default", "hunter22", "5432"],
        );
    }

    #[test]
    fn an_output_echoing_a_secret_is_sensitive() {
        let outputs: Outputs = serde_json::from_value(serde_json::json!({
            "dsn": "postgres://app:hunter22@db:5432/app",
            "host": "db",
            "nested": {"password": "hunter22"},
            "short": "ab",
        }))
        .unwrap();
        let secrets = ["hunter22".to_string(), "ab".to_string()];
        assert_eq!(outputs_echoing(&outputs, &secrets), ["dsn", "nested"]);
    }
}
