//! Every operation of the Control API, declared once: its method, path, the role it needs, its
//! query, body and reply types. The API routes each handler at its operation's `PATH`, checks
//! its `ROLE` and describes both in OpenAPI from these constants (`path = ops::X::PATH` in its
//! `#[utoipa::path]`), and takes and returns its `Body` and `Reply` (`ops::Body<X>`,
//! `ops::Reply<X>` in its signature); `ferry-client` calls it with the same types. A test in the
//! API compares this table with the OpenAPI document it serves, so a handler cannot drift from
//! its declaration, and a test of the client calls every operation.
//!
//! Why a table of unit types and not one per handler in the API crate: the client and the CLI
//! must not import a service (DESIGN.md §2), and the model is what both already share.

use crate::api::*;
use crate::{
    App, AppConfigVersion, Approval, DeployScope, Install, InstallQuery, Job, Release, Role,
    Workflow,
};

/// An HTTP method of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Delete,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// One operation of the API (see the module doc).
pub trait Operation {
    /// The operation's id in OpenAPI: its handler's name.
    const ID: &'static str;
    const METHOD: Method;
    /// The route, with `{param}` segments filled in order by the caller.
    const PATH: &'static str;
    /// The role a token needs; `None`: the operation is open (a runner's bootstrap, the
    /// description itself).
    const ROLE: Option<Role>;
    /// The role's name, as the OpenAPI description's `token` scope says it.
    const ROLE_NAME: &'static str = match Self::ROLE {
        Some(r) => r.name(),
        None => "",
    };
    /// A second role that may make it too (the customer, on decisions that are also theirs).
    const ALSO: Option<Role> = None;
    /// The second role's name (`""`: none), as the description's second scope says it.
    const ALSO_NAME: &'static str = match Self::ALSO {
        Some(r) => r.name(),
        None => "",
    };
    /// Query parameters (`()`: none).
    type Query;
    /// The request body (`()`: none; an `Option`: it may be left out; [`Octets`]: bytes).
    type Body;
    /// What a successful answer carries: JSON of this type, or, for the [`Octets`] and
    /// [`EventStream`] markers, bytes and Server-Sent Events.
    type Reply;
}

/// The body a handler of `O` takes.
pub type Body<O> = <O as Operation>::Body;
/// The reply a handler of `O` gives.
pub type Reply<O> = <O as Operation>::Reply;
/// The query a handler of `O` takes.
pub type Query<O> = <O as Operation>::Query;

/// A body or reply of raw bytes (a package bundle; a plan as its plugin wrote it; log lines).
#[derive(Debug, Clone, Default)]
pub struct Octets(pub Vec<u8>);

/// A reply of Server-Sent Events.
#[derive(Debug)]
pub struct EventStream;

/// An empty reply (`204 No Content`); the client decodes it from the empty body.
#[derive(Debug, serde::Deserialize)]
pub struct NoContent;

/// What the table knows of one operation, for checks that go over all of them.
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    pub id: &'static str,
    pub method: Method,
    pub path: &'static str,
    pub role: Option<Role>,
    /// A second role that may make it too.
    pub also: Option<Role>,
    /// Rust's name of the body, query and reply types (for the OpenAPI comparison).
    pub body: fn() -> &'static str,
    pub query: fn() -> &'static str,
    pub reply: fn() -> &'static str,
}

impl Declared {
    /// Whether a token of `role` may make this operation (an open one: anybody).
    pub fn permits(&self, role: Role) -> bool {
        self.role.is_none_or(|r| role.allows(r)) || self.also.is_some_and(|a| role.allows(a))
    }

    const fn of<O: Operation>() -> Declared {
        Declared {
            id: O::ID,
            method: O::METHOD,
            path: O::PATH,
            role: O::ROLE,
            also: O::ALSO,
            body: std::any::type_name::<O::Body>,
            query: std::any::type_name::<O::Query>,
            reply: std::any::type_name::<O::Reply>,
        }
    }
}

/// `$role`: a role's name, or `open`.
macro_rules! role {
    (open) => {
        None
    };
    ($r:ident) => {
        Some(Role::$r)
    };
}

/// Declares each operation as a unit type implementing [`Operation`], and [`ALL`].
macro_rules! operations {
    ($(
        $(#[$doc:meta])*
        $name:ident = $id:ident: $method:ident $path:literal, $role:ident, $(also $also:ident,)?
            query $query:ty, body $body:ty, reply $reply:ty;
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl Operation for $name {
                const ID: &'static str = stringify!($id);
                const METHOD: Method = Method::$method;
                const PATH: &'static str = $path;
                const ROLE: Option<Role> = role!($role);
                $(const ALSO: Option<Role> = Some(Role::$also);)?
                type Query = $query;
                type Body = $body;
                type Reply = $reply;
            }
        )*
        /// Every operation, in the order of the table.
        pub const ALL: &[Declared] = &[$(Declared::of::<$name>()),*];
    };
}

type Inputs = std::collections::BTreeMap<String, String>;

operations! {
    ListApps = list_apps: Get "/v1/apps", Viewer, query (), body (), reply Vec<App>;
    GetApp = get_app: Get "/v1/apps/{app}", Viewer, query (), body (), reply App;
    AppFleet = app_fleet: Get "/v1/apps/{app}/fleet", Viewer, query (), body (), reply Fleet;
    /// One config version of an app, by its id (what `ferry apps sync` printed).
    GetConfig = get_config: Get "/v1/configs/{id}", Viewer,
        query (), body (), reply AppConfigVersion;
    /// A package bundle as `ferry apps sync` makes it.
    SyncApp = sync_app: Post "/v1/apps/{app}/configs", Admin,
        query (), body Octets, reply SyncResponse;

    ListInstalls = list_installs: Get "/v1/installs", Viewer,
        query InstallQuery, body (), reply Vec<Install>;
    CreateInstallOp = create_install: Post "/v1/installs", Admin,
        query (), body CreateInstall, reply CreatedInstall;
    GetInstall = get_install: Get "/v1/installs/{name}", Viewer,
        query (), body (), reply Install;
    DeleteInstall = delete_install: Delete "/v1/installs/{name}", Admin,
        query DeleteOptions, body (), reply NoContent;
    DeployInstall = deploy_install: Post "/v1/installs/{name}/deploy", Operator,
        query (), body Option<DeployScope>, reply Deployed;
    ReprovisionInstall = reprovision_install: Post "/v1/installs/{name}/reprovision", Operator,
        query (), body (), reply Deployed;
    TeardownInstall = teardown_install: Post "/v1/installs/{name}/teardown", Operator,
        query (), body (), reply Deployed;
    UpdateInputs = update_inputs: Post "/v1/installs/{name}/inputs", Operator,
        query (), body Inputs, reply Deployed;
    SetLabelsOp = set_labels: Post "/v1/installs/{name}/labels", Operator,
        query (), body SetLabels, reply Install;
    DriftCheck = drift_check: Post "/v1/installs/{name}/drift-check", Operator,
        query (), body Option<DeployScope>, reply Deployed;
    SetApproveAll = set_approve_all: Post "/v1/installs/{name}/approve-all", Operator,
        query (), body ApproveAll, reply Install;
    /// Who approves the install's plans; a side's say is taken away only by that side.
    SetApprovalsOp = set_approvals: Post "/v1/installs/{name}/approvals", Operator, also Customer,
        query (), body SetApprovals, reply Install;
    RunnerTokenOp = runner_token: Post "/v1/installs/{name}/runner-token", Admin,
        query (), body (), reply RunnerToken;
    RevokeRunners = revoke: Post "/v1/installs/{name}/revoke", Admin,
        query (), body (), reply Revoked;
    /// The CloudFormation template the customer launches in their account (JSON).
    InstallStackOp = install_stack: Get "/v1/installs/{name}/stack", Viewer,
        query StackQuery, body (), reply serde_json::Value;
    /// The template published to the vendor's bucket, with the console's quick-create link.
    PublishInstallStack = publish_install_stack: Post "/v1/installs/{name}/stack", Operator,
        query (), body PublishStack, reply crate::StackTemplate;
    /// Audit records, filtered (admin): pages of JSON.
    ListAudit = list_audit: Get "/v1/audit", Admin,
        query AuditQuery, body (), reply AuditPage;
    /// The workflows that changed what the install runs, newest first.
    InstallHistory = install_history: Get "/v1/installs/{name}/history", Viewer,
        query (), body (), reply Vec<HistoryEntry>;
    /// The app's readme rendered for the install.
    InstallReadme = install_readme: Get "/v1/installs/{name}/readme", Viewer,
        query (), body (), reply Readme;
    /// The app's `CUSTOMER_PORTAL_README.md` rendered for the install, as the readme is.
    InstallPortalReadme = install_portal_readme: Get "/v1/installs/{name}/portal-readme", Viewer,
        query (), body (), reply Readme;
    /// The install's audit trail (its workflows', jobs', approvals' and grants' records too),
    /// a page at a time: what its customer reads of the org's audit record.
    InstallAudit = install_audit: Get "/v1/installs/{name}/audit", Viewer,
        query AuditQuery, body (), reply AuditPage;
    RunRunbook = run_runbook: Post "/v1/installs/{name}/runbooks/{runbook}/runs", Operator,
        query (), body (), reply Deployed;

    ListActions = list_actions: Get "/v1/installs/{name}/actions", Viewer,
        query (), body (), reply Vec<ActionInfo>;
    RunActionOp = run_action: Post "/v1/installs/{name}/actions/{action}/runs", Operator,
        query (), body Option<RunAction>, reply Deployed;
    GrantBreakGlassOp = grant_break_glass: Post "/v1/installs/{name}/break-glass", Customer,
        query (), body GrantBreakGlass, reply Install;
    RevokeBreakGlass = revoke_break_glass: Delete "/v1/installs/{name}/break-glass/{role}", Customer,
        query (), body (), reply NoContent;

    ListReleases = list_releases: Get "/v1/releases", Viewer, query (), body (), reply Vec<Release>;
    CreateReleaseOp = create_release: Post "/v1/releases", Operator,
        query (), body CreateRelease, reply Release;
    GetRelease = get_release: Get "/v1/releases/{id}", Viewer, query (), body (), reply Release;
    PauseRelease = pause_release: Post "/v1/releases/{id}/pause", Operator,
        query (), body (), reply Release;
    ResumeRelease = resume_release: Post "/v1/releases/{id}/resume", Operator,
        query (), body (), reply Release;
    CancelRelease = cancel_release: Post "/v1/releases/{id}/cancel", Operator,
        query (), body (), reply Release;

    ListWorkflows = list_workflows: Get "/v1/workflows", Viewer,
        query WorkflowFilter, body (), reply Vec<Workflow>;
    GetWorkflow = get_workflow: Get "/v1/workflows/{id}", Viewer,
        query (), body (), reply Workflow;
    CancelWorkflow = cancel_workflow: Post "/v1/workflows/{id}/cancel", Operator,
        query (), body (), reply Workflow;
    /// For the vendor, or with a customer token for the customer, as the install's
    /// `approvals_by` says who decides.
    ApproveWorkflow = approve_workflow: Post "/v1/workflows/{id}/approve", Operator, also Customer,
        query (), body Decision, reply Vec<Approval>;
    DenyWorkflow = deny_workflow: Post "/v1/workflows/{id}/deny", Operator, also Customer,
        query (), body Decision, reply Vec<Approval>;
    RetryWorkflow = retry_workflow: Post "/v1/workflows/{id}/retry", Operator,
        query (), body StepRef, reply Workflow;
    SkipWorkflow = skip_workflow: Post "/v1/workflows/{id}/skip", Operator,
        query (), body StepRef, reply Workflow;
    ListApprovals = list_approvals: Get "/v1/approvals", Viewer,
        query ApprovalFilter, body (), reply Vec<Approval>;

    ListRunners = list_runners: Get "/v1/runners", Viewer,
        query RunnerFilter, body (), reply Vec<RunnerInfo>;

    GetJob = get_job: Get "/v1/jobs/{id}", Viewer, query (), body (), reply Job;
    CancelJob = cancel_job: Post "/v1/jobs/{id}/cancel", Operator, query (), body (), reply Job;
    /// The plan as its plugin wrote it (Terraform's `show -json`).
    JobPlan = job_plan: Get "/v1/jobs/{id}/plan", Viewer, query (), body (), reply Octets;
    /// JSON lines of `LogEntry`, followed live with `follow`.
    JobLogs = job_logs: Get "/v1/jobs/{id}/logs", Viewer, query LogQuery, body (), reply Octets;
    JobLogEvents = job_log_events: Get "/v1/jobs/{id}/log", Viewer,
        query LogEventsQuery, body (), reply EventStream;
    Events = events: Get "/v1/events", Viewer, query EventsQuery, body (), reply EventStream;

    ListTokens = list_tokens: Get "/v1/tokens", Admin, query (), body (), reply Vec<TokenInfo>;
    CreateToken = create_token: Post "/v1/tokens", Admin,
        query (), body NewToken, reply CreatedToken;
    RevokeToken = revoke_token: Delete "/v1/tokens/{id}", Admin,
        query (), body (), reply TokenInfo;

    Bootstrap = bootstrap: Post "/v1/bootstrap", open,
        query (), body BootstrapRequest, reply BootstrapReply;
    /// This description, as OpenAPI 3.1 JSON.
    OpenApiDocument = openapi_json: Get "/v1/openapi.json", open,
        query (), body (), reply serde_json::Value;
}

/// The path of operation `O` with its `{param}` segments filled, in order, by `args`, each
/// percent-encoded as one segment; `None` when `args` are too few or too many.
pub fn path_of<O: Operation>(args: &[&str]) -> Option<String> {
    fill(O::PATH, args)
}

fn fill(template: &str, args: &[&str]) -> Option<String> {
    let mut args = args.iter();
    let mut out = String::with_capacity(template.len() + 16);
    for (i, seg) in template.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        if seg.starts_with('{') {
            out.push_str(&encode_segment(args.next()?));
        } else {
            out.push_str(seg);
        }
    }
    args.next().is_none().then_some(out)
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_filled_in_order_and_each_argument_is_one_segment() {
        assert_eq!(
            path_of::<RunActionOp>(&["c1", "a b/c"]).as_deref(),
            Some("/v1/installs/c1/actions/a%20b%2Fc/runs")
        );
        assert_eq!(path_of::<GetInstall>(&[]), None, "too few");
        assert_eq!(path_of::<GetInstall>(&["a", "b"]), None, "too many");
        assert_eq!(path_of::<ListApps>(&[]).as_deref(), Some("/v1/apps"));
    }

    #[test]
    fn every_operation_is_declared_once() {
        let mut seen = std::collections::BTreeSet::new();
        for op in ALL {
            assert!(seen.insert((op.method.name(), op.path)), "{op:?} twice");
            assert!(op.path.starts_with("/v1/"), "{op:?}");
        }
        let ids: std::collections::BTreeSet<_> = ALL.iter().map(|o| o.id).collect();
        assert_eq!(ids.len(), ALL.len(), "an id used twice");
    }
}
