//! Request and response bodies of the Control API that are not records themselves. Shared by the API
//! (which produces them) and the CLI (which reads them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{AppConfigVersion, AuditEvent, ComponentSummary, Install};

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncComponent {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub content_hash: String,
    /// True when the component differs from the previous config version (it needs a new build).
    pub changed: bool,
}

impl SyncComponent {
    /// A synced package's components against the app's previous version: a component is changed
    /// unless that version has it, by name, with the same content hash (a first version changes
    /// them all).
    pub fn compared(
        components: &[ComponentSummary],
        previous: Option<&AppConfigVersion>,
    ) -> Vec<SyncComponent> {
        components
            .iter()
            .map(|c| SyncComponent {
                name: c.name.clone(),
                kind: c.kind.clone(),
                content_hash: c.content_hash.clone(),
                changed: !previous.is_some_and(|p| {
                    p.components
                        .iter()
                        .any(|pc| pc.name == c.name && pc.content_hash == c.content_hash)
                }),
            })
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncResponse {
    pub app: String,
    pub config_id: String,
    pub version: u32,
    /// False when the package is identical to the latest version (nothing was stored).
    pub changed: bool,
    pub components: Vec<SyncComponent>,
    pub deploy_order: Vec<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreateInstall {
    pub name: String,
    pub app: String,
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    /// Approve every plan of this install without review.
    #[serde(default)]
    pub approve_all: bool,
    /// The vendor's labels for the install (`team=payments`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Who approves its plans: the vendor (default), its customer, or both.
    #[serde(default)]
    pub approvals_by: crate::ApprovalsBy,
}

/// `POST /v1/installs/{name}/approvals`: who approves the install's plans from now on.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SetApprovals {
    pub approvals_by: crate::ApprovalsBy,
}

/// Labels set on an install (`POST /v1/installs/{name}/labels`): `set` added or replaced,
/// `remove` taken away.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SetLabels {
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    #[serde(default)]
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreatedInstall {
    pub install: Install,
    pub workflow_id: String,
    /// The one-time token the install's first runner bootstraps with (shown only now).
    #[serde(default)]
    pub runner_token: Option<RunnerToken>,
    /// Whoever started the control plane starts the install's runner too (`ferry dev`).
    #[serde(default)]
    pub runners_managed: bool,
}

/// A one-time bootstrap token for an install's runner (`ferry-runner --bootstrap`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunnerToken {
    /// `ferryboot_<org>_<id>_<secret>`: shown only now.
    pub token: String,
    pub install: String,
    pub expires_in_secs: u64,
    /// The hub's leafnode URL for the runner (`ferry-server --runner-hub-url`), if configured.
    #[serde(default)]
    pub hub_url: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Deployed {
    pub workflow_id: String,
    pub app_config_id: String,
}

/// `POST /v1/workflows/{id}/approve` and `/deny`: which waiting approval(s) to decide.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Decision {
    /// A step: its index, or the name of the component whose approval it is.
    #[serde(default)]
    pub step: Option<String>,
    /// Every approval of the workflow that waits (approve only).
    #[serde(default)]
    pub all: bool,
    /// Deny only: what the denial does to the workflow (default: it fails).
    #[serde(default)]
    pub on_deny: crate::OnDeny,
    /// Deny only: why, for the step's message and the record.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Decision {
    /// The reason given, trimmed (`None`: none), or why it is refused (too long).
    pub fn reason(&self) -> Result<Option<String>, String> {
        let reason = self
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(String::from);
        match &reason {
            Some(r) if r.chars().count() > crate::MAX_REASON => {
                Err(format!("reason: at most {} characters", crate::MAX_REASON))
            }
            _ => Ok(reason),
        }
    }
}

/// `POST /v1/installs/{name}/approve-all`: switch approve-all on or off.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApproveAll {
    pub enabled: bool,
}

/// `POST /v1/workflows/{id}/retry` and `/skip`: the step (index or component) to run again or to
/// skip.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StepRef {
    pub step: String,
}

/// A runner with its health as of the request (`GET /v1/runners`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunnerInfo {
    #[serde(flatten)]
    pub runner: crate::RunnerRecord,
    pub health: crate::RunnerHealth,
    /// When it was last heard from (RFC 3339).
    pub last_seen: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(name: &str, hash: &str) -> ComponentSummary {
        ComponentSummary {
            name: name.into(),
            kind: "script".into(),
            content_hash: hash.into(),
            dependencies: vec![],
        }
    }

    #[test]
    fn a_component_is_changed_unless_the_previous_version_has_it_with_the_same_hash() {
        let previous = AppConfigVersion {
            id: "v1".into(),
            org: "acme".into(),
            app: "shop".into(),
            version: 1,
            content_hash: "sha256:p".into(),
            source_object: "o".into(),
            components: vec![summary("web", "h1"), summary("db", "h2")],
            deploy_order: vec![],
            created_at: "2026-11-23T00:00:00.000Z".into(),
        };
        let now = [
            summary("web", "h1"),
            summary("db", "h3"),
            summary("cache", "h4"),
        ];
        let changed: Vec<(String, bool)> = SyncComponent::compared(&now, Some(&previous))
            .into_iter()
            .map(|c| (c.name, c.changed))
            .collect();
        assert_eq!(
            changed,
            [
                ("web".to_string(), false),
                ("db".to_string(), true),
                ("cache".to_string(), true)
            ]
        );
        assert!(
            SyncComponent::compared(&now, None)
                .iter()
                .all(|c| c.changed)
        );
    }
}

/// `POST /v1/installs/{name}/actions/{action}/runs`: the run's inputs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunAction {
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
}

/// `GET /v1/installs/{name}/actions`: an action of the install's app config, and its latest run.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ActionInfo {
    pub name: String,
    /// Its triggers as written (`manual`, `cron 0 * * * *`, `pre-deploy-component web`).
    pub triggers: Vec<String>,
    pub steps: Vec<String>,
    /// Its inputs: `name` (`type`, required or its default).
    pub inputs: Vec<String>,
    pub dependencies: Vec<String>,
    pub break_glass_role: Option<String>,
    /// The next scheduled run, for a `cron` action.
    pub next_run: Option<String>,
    pub last_run: Option<crate::ActionState>,
}

/// A break-glass role an install's action waits for: the action needs it, its last run failed,
/// and no grant of the role is live now. What the customer's portal shows as a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BreakGlassRequest {
    pub role: String,
    pub action: String,
    /// The failed run's workflow.
    pub workflow: String,
    pub failed_at: String,
}

/// The requests among `actions` (as `GET /v1/installs/{name}/actions` lists them) of install
/// `install` at `now_ms`, one per action, ordered by role then action.
pub fn break_glass_requests(
    actions: &[ActionInfo],
    install: &crate::Install,
    now_ms: u64,
) -> Vec<BreakGlassRequest> {
    let live = |role: &str| {
        install
            .break_glass
            .get(role)
            .is_some_and(|g| g.until_ms > now_ms)
    };
    let mut out: Vec<BreakGlassRequest> = actions
        .iter()
        .filter_map(|a| {
            let role = a.break_glass_role.as_deref()?;
            let run = a.last_run.as_ref().filter(|r| r.status == "failed")?;
            (!live(role)).then(|| BreakGlassRequest {
                role: role.to_string(),
                action: a.name.clone(),
                workflow: run.workflow.clone(),
                failed_at: run.updated_at.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.role, &a.action).cmp(&(&b.role, &b.action)));
    out
}

/// `POST /v1/installs/{name}/break-glass`: grant a role for a while (a customer token only).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GrantBreakGlass {
    pub role: String,
    /// How long, in seconds (at most a day).
    pub for_secs: u64,
}

/// `POST /v1/releases`: roll a config version out over installs in waves.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreateRelease {
    pub app: String,
    /// A config version's id (default: the app's latest).
    #[serde(default)]
    pub config: Option<String>,
    /// The installs, in order (default: every install of the app, by name).
    #[serde(default)]
    pub installs: Vec<String>,
    /// Without `installs`: only the app's installs carrying every one of these labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Cumulative wave sizes: `1,10%,50%,100%`.
    pub waves: String,
    #[serde(default)]
    pub delay_secs: u64,
    #[serde(default)]
    pub soak_secs: u64,
    #[serde(default)]
    pub max_failures: u32,
    /// An action of the config, run on each deployed install as its wave's health gate.
    #[serde(default)]
    pub health: Option<String>,
    /// At most this many deploys of a wave at once (0: all).
    #[serde(default)]
    pub concurrency: u32,
    /// Approve the release's plans without review (else each install's setting holds).
    #[serde(default)]
    pub approve_all: bool,
}

/// `GET /v1/apps/{app}/fleet`: where the app's installs are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Fleet {
    pub app: String,
    pub latest_config: Option<String>,
    pub installs: usize,
    /// Installs per config version they run.
    pub by_config: BTreeMap<String, usize>,
    /// Installs per status (`active`, `failed`, ...).
    pub by_status: BTreeMap<String, usize>,
    /// Installs with a drifted component.
    pub drifted: Vec<String>,
    /// Installs whose last workflow failed.
    pub failing: Vec<String>,
    /// Installs with a plan waiting for a decision.
    pub waiting_for_approval: Vec<String>,
}

impl Fleet {
    /// The summary of `installs` (the app's), `waiting` naming those with a pending approval.
    pub fn of(app: &crate::App, installs: &[Install], waiting: &[String]) -> Fleet {
        let mut f = Fleet {
            app: app.name.clone(),
            latest_config: app.latest_config.clone(),
            installs: installs.len(),
            ..Default::default()
        };
        for i in installs {
            *f.by_config.entry(i.app_config_id.clone()).or_default() += 1;
            let status = serde_json::to_value(i.status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            *f.by_status.entry(status).or_default() += 1;
            if !i.drifted().is_empty() {
                f.drifted.push(i.name.clone());
            }
            if i.status == crate::InstallStatus::Failed {
                f.failing.push(i.name.clone());
            }
            if waiting.contains(&i.name) {
                f.waiting_for_approval.push(i.name.clone());
            }
        }
        f
    }
}

/// `POST /v1/tokens`: the token to mint.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewToken {
    pub name: String,
    pub role: crate::Role,
    /// The installs it reaches: required for a customer token, refused for an admin's; empty
    /// for a viewer or operator: all of the org's.
    #[serde(default)]
    pub scope: crate::TokenScope,
}

/// A token as listed: never its hash.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub role: crate::Role,
    /// The installs it reaches (empty: all of the org's).
    #[serde(default)]
    pub scope: crate::TokenScope,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

impl From<crate::ApiToken> for TokenInfo {
    fn from(t: crate::ApiToken) -> Self {
        TokenInfo {
            id: t.id,
            name: t.name,
            role: t.role,
            scope: t.scope,
            created_at: t.created_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// A token just minted: its text, shown only here, and what lists will show of it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreatedToken {
    pub token: String,
    pub info: TokenInfo,
}

/// What revoking an install's runner access did.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Revoked {
    pub install: String,
    /// Serials revoked now.
    pub certificates: Vec<String>,
    /// Live connections closed.
    pub connections_closed: usize,
}

/// `POST /v1/bootstrap`: a runner's one-time token and the CSR of the key it made and keeps.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BootstrapRequest {
    pub token: String,
    /// PEM CSR for the key the runner made and keeps.
    pub csr: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BootstrapReply {
    pub org: String,
    pub install: String,
    /// PEM certificate for the CSR's key, naming the install.
    pub certificate: String,
    /// PEM certificate of the CA, to verify the hub with.
    pub ca: String,
}

/// `GET /v1/runners?install=`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunnerFilter {
    pub install: Option<String>,
}

/// `GET /v1/workflows?install=&kind=&action=`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WorkflowFilter {
    pub install: Option<String>,
    /// `action`, `deploy-components`, ...
    pub kind: Option<String>,
    /// The runs of one action.
    pub action: Option<String>,
}

/// `GET /v1/approvals?install=`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApprovalFilter {
    pub install: Option<String>,
}

/// `DELETE /v1/installs/{name}?force=`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteOptions {
    #[serde(default)]
    pub force: bool,
}

/// `GET /v1/jobs/{id}/logs?follow=&tail=`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    #[serde(default)]
    pub follow: bool,
    /// Only the last this many lines (not with `follow`).
    #[serde(default)]
    pub tail: Option<usize>,
}

/// `GET /v1/jobs/{id}/log?follow=&last_event_id=`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogEventsQuery {
    #[serde(default)]
    pub follow: bool,
    pub last_event_id: Option<String>,
}

/// `GET /v1/events?install=&workflow=&kinds=&last_event_id=`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EventsQuery {
    #[serde(flatten)]
    pub filter: crate::events::EventFilter,
    pub last_event_id: Option<String>,
}

/// `GET /v1/installs/{name}/stack?bundle_url=&bundle_sha256=`: where the runner host fetches the
/// runner bundle, and its sha256 (the template's defaults; the customer may change them).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StackQuery {
    pub bundle_url: Option<String>,
    pub bundle_sha256: Option<String>,
}

/// One entry of an install's history (`GET /v1/installs/{name}/history`): a workflow that
/// changed what it runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryEntry {
    pub workflow_id: String,
    pub kind: crate::WorkflowKind,
    /// The config version it deployed.
    pub app_config_id: String,
    pub status: crate::WorkflowStatus,
    /// Who asked for it, or what started it (`release R`, a schedule).
    pub by: String,
    pub created_at: String,
    pub finished_at: Option<String>,
}

impl HistoryEntry {
    /// The entry of a workflow that changes what the install runs; `None` for an action run or
    /// a drift check.
    pub fn of(wf: &crate::Workflow) -> Option<HistoryEntry> {
        wf.kind.sets_install_status().then(|| HistoryEntry {
            workflow_id: wf.id.clone(),
            kind: wf.kind,
            app_config_id: wf.app_config_id.clone(),
            status: wf.status,
            by: wf
                .requested_by
                .clone()
                .or_else(|| wf.cause.clone())
                .unwrap_or_else(|| crate::SCHEDULER.into()),
            created_at: wf.created_at.clone(),
            finished_at: wf.finished_at.clone(),
        })
    }

    /// The config version a rollback goes back to: the newest successful deploy's config that
    /// is not `current` (what the install runs now).
    pub fn rollback_target<'a>(history: &'a [HistoryEntry], current: &str) -> Option<&'a str> {
        history
            .iter()
            .filter(|h| h.status == crate::WorkflowStatus::Succeeded)
            .filter(|h| h.kind != crate::WorkflowKind::Teardown)
            .map(|h| h.app_config_id.as_str())
            .find(|c| *c != current)
    }
}

/// `GET /v1/audit`: audit records, oldest first, filtered; combine filters freely.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Records about this install (its workflows', jobs' and approvals' too).
    pub install: Option<String>,
    /// Records of this actor (`token:ci`, `scheduler`, `approve-all`).
    pub actor: Option<String>,
    /// This action (`install.deploy`), or every action of a family (`install`).
    pub action: Option<String>,
    /// Records from this time on (RFC 3339).
    pub since: Option<String>,
    /// Records after this position: the `next` of the page before.
    pub after: Option<u64>,
    /// At most this many records (default 500, at most 5,000).
    pub limit: Option<usize>,
}

/// One audit record and its position in the audit stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditEntry {
    pub seq: u64,
    #[serde(flatten)]
    pub event: AuditEvent,
}

/// A page of audit records: ask again with `after = next` for the ones after (and to follow).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// The position read up to: what the next page starts after.
    pub next: u64,
    /// Whether records were left unread (the page filled up): ask again at once.
    pub more: bool,
}

/// `GET /v1/installs/{name}/readme`: the app's readme rendered for the install, as Nuon renders
/// it (Go's html/template over the install's state).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Readme {
    /// The config version it was rendered from.
    pub app_config_id: String,
    /// The rendered markdown; the readme as written when rendering failed; empty when the app
    /// has none.
    pub markdown: String,
    /// Why rendering failed (a value the install does not have yet, say), when it did.
    pub warning: Option<String>,
}

/// `POST /v1/installs/{name}/stack`: publish the install stack's template to the vendor's
/// bucket (`ferry-server --stack-bucket`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PublishStack {
    pub bundle_url: Option<String>,
    pub bundle_sha256: Option<String>,
    /// The region whose console the quick-create link opens (default: the bucket's).
    pub region: Option<String>,
}

/// One action of an install, as `ferry actions list --json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstallAction {
    pub install: String,
    pub action: ActionInfo,
}

/// One run of an action with its steps' outputs, as `ferry actions runs --json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRunReport {
    /// The run's workflow.
    pub run: String,
    pub action: Option<String>,
    /// `manual`, `cron` or the lifecycle trigger.
    pub trigger: Option<String>,
    pub status: crate::WorkflowStatus,
    pub created_at: String,
    pub steps: Vec<ActionStepReport>,
}

/// One step of an action's run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionStepReport {
    pub step: Option<String>,
    pub status: crate::StepStatus,
    pub job: Option<String>,
    pub message: Option<String>,
    #[serde(default)]
    pub outputs: serde_json::Map<String, serde_json::Value>,
}

#[cfg(test)]
mod break_glass_tests {
    use super::*;

    #[test]
    fn an_action_that_failed_for_want_of_a_role_is_a_request_until_the_role_is_granted() {
        let action = |name: &str, role: Option<&str>, status: &str| ActionInfo {
            name: name.into(),
            triggers: vec![],
            steps: vec![],
            inputs: vec![],
            dependencies: vec![],
            break_glass_role: role.map(String::from),
            next_run: None,
            last_run: Some(crate::ActionState {
                workflow: format!("wf-{name}"),
                status: status.into(),
                outputs: Default::default(),
                updated_at: "t".into(),
            }),
        };
        let actions = [
            action("fix", Some("admin-access"), "failed"),
            action("check", None, "failed"),
            action("clean", Some("admin-access"), "succeeded"),
        ];
        let mut install: crate::Install = serde_json::from_value(serde_json::json!({
            "org": "o", "name": "i", "app": "a", "app_config_id": "c",
            "inputs": {}, "approve_all": false, "status": "active",
            "sandbox": { "status": "active" }, "components": {}, "last_workflow": null,
            "created_at": "t", "updated_at": "t"
        }))
        .unwrap();
        let asked = break_glass_requests(&actions, &install, 1_000);
        assert_eq!(asked.len(), 1);
        assert_eq!(
            (asked[0].role.as_str(), asked[0].action.as_str()),
            ("admin-access", "fix")
        );
        install.break_glass.insert(
            "admin-access".into(),
            crate::BreakGlassGrant {
                by: "token:sec".into(),
                granted_at: "t".into(),
                until_ms: 2_000,
            },
        );
        assert!(break_glass_requests(&actions, &install, 1_000).is_empty());
        // Expired: asked again.
        assert_eq!(break_glass_requests(&actions, &install, 2_000).len(), 1);
    }
}
