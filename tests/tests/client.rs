//! Every operation of the API, made through the typed client (`ferry-client`) against a real
//! control plane and runner, each answer decoded into the operation's own reply type: a
//! handler whose answer drifted from its declaration in `ferry_model::ops` fails here. The test
//! records each operation it makes and fails if one in `ops::ALL` was not made, so a new
//! operation comes with its call here.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ferry_client::{Client, ClientError};
use ferry_model::api::{
    ApprovalFilter, BootstrapRequest, CreateInstall, CreateRelease, Decision, EventsQuery,
    GrantBreakGlass, LogEventsQuery, LogQuery, NewToken, RunAction, RunnerFilter, SetLabels,
    StackQuery, StepRef, WorkflowFilter,
};
use ferry_model::ops::{self, Operation};
use ferry_model::{
    InstallQuery, JobStatus, LogEntry, Role, StepKind, StepStatus, Workflow, WorkflowStatus,
};
use ferry_tests::{NatsServer, Proc, repo_root, token_for};

/// The operations made so far.
static MADE: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// Notes that operation `O` was made.
fn made<O: Operation>() {
    MADE.lock().unwrap().insert(O::ID);
}

/// Makes `O` (path arguments only) and notes it.
async fn run<O>(c: &Client, args: &[&str]) -> Result<O::Reply, ClientError>
where
    O: Operation<Query = (), Body = ()>,
    O::Reply: serde::de::DeserializeOwned,
{
    made::<O>();
    c.run::<O>(args).await
}

/// Makes `O` with its query and body, and notes it.
async fn call<O>(
    c: &Client,
    args: &[&str],
    query: &O::Query,
    body: &O::Body,
) -> Result<O::Reply, ClientError>
where
    O: Operation,
    O::Query: serde::Serialize,
    O::Body: serde::Serialize,
    O::Reply: serde::de::DeserializeOwned,
{
    made::<O>();
    c.call::<O>(args, query, body).await
}

/// examples/hello with a runbook, and an action that needs a break-glass role.
fn app(dir: &Path) -> std::path::PathBuf {
    let app = dir.join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::write(
        app.join("actions/fix.toml"),
        "name = \"fix\"\ntimeout = \"30s\"\nbreak_glass_role = \"admin-access\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"repair\"\ncommand = \"echo repaired\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(app.join("runbooks")).unwrap();
    std::fs::write(
        app.join("runbooks/note.toml"),
        "name = \"note\"\n\n[[steps]]\nname = \"say\"\ntype = \"action\"\ncommand = \"echo noted\"\n",
    )
    .unwrap();
    app
}

/// Polls workflow `id` until `done` holds (or panics after a minute).
async fn until(c: &Client, id: &str, what: &str, done: impl Fn(&Workflow) -> bool) -> Workflow {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let w = run::<ops::GetWorkflow>(c, &[id]).await.unwrap();
        if done(&w) {
            return w;
        }
        let steps: Vec<String> = w
            .steps
            .iter()
            .map(|s| {
                format!(
                    "{} {:?} {:?} {:?}",
                    s.component, s.kind, s.status, s.message
                )
            })
            .collect();
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {:?} {steps:#?}",
            w.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn waiting_on(component: &'static str) -> impl Fn(&Workflow) -> bool {
    move |w| {
        w.steps.iter().any(|s| {
            s.kind == StepKind::Approve
                && s.component == component
                && s.status == StepStatus::Waiting
        })
    }
}

fn ended(w: &Workflow) -> bool {
    w.status.is_terminal()
}

fn decision(step: &str) -> Decision {
    Decision {
        step: Some(step.into()),
        ..Default::default()
    }
}

fn refused(e: ClientError, status: u16) {
    assert_eq!(e.status().map(|s| s.as_u16()), Some(status), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_through_the_typed_client() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner(
        &nats.url,
        "c1",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let c = Client::new(&api, token_for(&api).as_deref()).unwrap();

    let doc = run::<ops::OpenApiDocument>(&c, &[]).await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");
    apps(&c, &app(dir.path())).await;
    let wf = responses(&c).await;
    jobs_and_logs(&c, &wf).await;
    installs(&c).await;
    actions_and_break_glass(&c).await;
    releases(&c).await;
    tokens_and_runners(&c, dir.path()).await;
    ends(&c).await;

    let made = MADE.lock().unwrap().clone();
    let missing: Vec<&str> = ops::ALL
        .iter()
        .map(|o| o.id)
        .filter(|id| !made.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "operations no test makes through the typed client: {missing:?}"
    );
}

async fn apps(c: &Client, app: &Path) {
    let bundle = ferry_appconfig::Package::from_dir(app).unwrap().to_bundle();
    made::<ops::SyncApp>();
    let synced = c.upload::<ops::SyncApp>(&["hello"], bundle).await.unwrap();
    assert_eq!(synced.version, 1);
    let all = run::<ops::ListApps>(c, &[]).await.unwrap();
    assert_eq!(all.len(), 1);
    let a = run::<ops::GetApp>(c, &["hello"]).await.unwrap();
    assert_eq!(a.latest_config.as_deref(), Some(synced.config_id.as_str()));
    let v = run::<ops::GetConfig>(c, &[&synced.config_id])
        .await
        .unwrap();
    assert_eq!(v.version, 1);
    assert!(v.components.iter().any(|c| c.name == "counter"));
    refused(run::<ops::GetConfig>(c, &["nope"]).await.unwrap_err(), 404);
    let fleet = run::<ops::AppFleet>(c, &["hello"]).await.unwrap();
    assert_eq!(fleet.installs, 0);
}

/// c1 without approve-all: its plans wait, are approved, denied, retried, skipped; then
/// approve-all is turned on for what follows. Returns the provisioning workflow.
async fn responses(c: &Client) -> Workflow {
    let new = CreateInstall {
        name: "c1".into(),
        app: "hello".into(),
        inputs: Default::default(),
        approve_all: false,
        labels: [("tier".to_string(), "gold".to_string())].into(),
        approvals_by: Default::default(),
    };
    let created = call::<ops::CreateInstallOp>(c, &[], &(), &new)
        .await
        .unwrap();
    let id = created.workflow_id.clone();
    until(c, &id, "the sandbox's plan to wait", waiting_on("sandbox")).await;
    let mine = ApprovalFilter {
        install: Some("c1".into()),
    };
    let waiting = call::<ops::ListApprovals>(c, &[], &mine, &())
        .await
        .unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let approved = call::<ops::ApproveWorkflow>(c, &[&id], &(), &decision("sandbox"))
        .await
        .unwrap();
    // The answer is the approvals the decision names; the approval service records it.
    assert_eq!(approved[0].component, "sandbox", "{approved:?}");
    until(c, &id, "greeter's plan to wait", waiting_on("greeter")).await;
    call::<ops::ApproveWorkflow>(c, &[&id], &(), &decision("greeter"))
        .await
        .unwrap();
    until(c, &id, "counter's plan to wait", waiting_on("counter")).await;
    let denied = call::<ops::DenyWorkflow>(c, &[&id], &(), &decision("counter"))
        .await
        .unwrap();
    assert_eq!(denied[0].component, "counter", "{denied:?}");
    let failed = until(c, &id, "the denial to end it", ended).await;
    assert_eq!(failed.status, WorkflowStatus::Failed);
    let counter = StepRef {
        step: "counter".into(),
    };
    call::<ops::RetryWorkflow>(c, &[&id], &(), &counter)
        .await
        .unwrap();
    until(
        c,
        &id,
        "counter's plan to wait again",
        waiting_on("counter"),
    )
    .await;
    call::<ops::ApproveWorkflow>(c, &[&id], &(), &decision("counter"))
        .await
        .unwrap();
    until(c, &id, "reporter's plan to wait", waiting_on("reporter")).await;
    let reporter = StepRef {
        step: "reporter".into(),
    };
    call::<ops::SkipWorkflow>(c, &[&id], &(), &reporter)
        .await
        .unwrap();
    let done = until(c, &id, "the provisioning to end", ended).await;
    assert_eq!(done.status, WorkflowStatus::Succeeded, "{done:?}");
    let on = ferry_model::api::ApproveAll { enabled: true };
    let i = call::<ops::SetApproveAll>(c, &["c1"], &(), &on)
        .await
        .unwrap();
    assert!(i.approve_all);
    let vendor = ferry_model::api::SetApprovals {
        approvals_by: ferry_model::ApprovalsBy::Vendor,
    };
    let i = call::<ops::SetApprovalsOp>(c, &["c1"], &(), &vendor)
        .await
        .unwrap();
    assert_eq!(i.approvals_by, ferry_model::ApprovalsBy::Vendor);
    done
}

/// A job, its logs (whole, tailed, as events), its plan; the org's events.
async fn jobs_and_logs(c: &Client, wf: &Workflow) {
    let plan = wf
        .steps
        .iter()
        .find(|s| s.component == "counter" && s.kind == StepKind::Plan && s.job_id.is_some())
        .and_then(|s| s.job_id.clone())
        .unwrap();
    let j = run::<ops::GetJob>(c, &[&plan]).await.unwrap();
    assert_eq!(j.status, JobStatus::Finished);
    made::<ops::JobPlan>();
    let shown = c.octets::<ops::JobPlan>(&[&plan]).await.unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&shown.unwrap()).unwrap();
    assert!(shown["resource_changes"].is_array(), "{shown}");

    made::<ops::JobLogs>();
    let tail = LogQuery {
        follow: false,
        tail: Some(1),
    };
    let text = c
        .open::<ops::JobLogs>(&[&plan], &tail)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines: Vec<LogEntry> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");

    made::<ops::JobLogEvents>();
    let q = LogEventsQuery {
        follow: false,
        last_event_id: None,
    };
    let body = c
        .subscribe::<ops::JobLogEvents>(&[&plan], &q, None)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        body.contains("event: line") && body.contains("event: end"),
        "{body}"
    );

    made::<ops::Events>();
    let org = EventsQuery::default();
    let resp = c.subscribe::<ops::Events>(&[], &org, None).await.unwrap();
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
}

/// Listing, labels, inputs, deploys of every kind on c1.
async fn installs(c: &Client) {
    let gold = InstallQuery {
        label: Some("tier=gold".into()),
        ..Default::default()
    };
    let listed = call::<ops::ListInstalls>(c, &[], &gold, &()).await.unwrap();
    assert_eq!(listed.len(), 1);
    let labels = SetLabels {
        set: [("team".to_string(), "core".to_string())].into(),
        remove: vec!["tier".into()],
    };
    let i = call::<ops::SetLabelsOp>(c, &["c1"], &(), &labels)
        .await
        .unwrap();
    assert_eq!(i.labels.get("team").map(String::as_str), Some("core"));
    let inputs = [("greeting".to_string(), "ahoy".to_string())].into();
    let d = call::<ops::UpdateInputs>(c, &["c1"], &(), &inputs)
        .await
        .unwrap();
    until(c, &d.workflow_id, "the inputs' deploy", ended).await;
    let i = run::<ops::GetInstall>(c, &["c1"]).await.unwrap();
    assert_eq!(i.inputs.get("greeting").map(String::as_str), Some("ahoy"));
    let d = call::<ops::DeployInstall>(c, &["c1"], &(), &None)
        .await
        .unwrap();
    until(c, &d.workflow_id, "the deploy", ended).await;
    let d = call::<ops::DriftCheck>(c, &["c1"], &(), &None)
        .await
        .unwrap();
    until(c, &d.workflow_id, "the drift check", ended).await;
    let d = run::<ops::ReprovisionInstall>(c, &["c1"]).await.unwrap();
    let w = until(c, &d.workflow_id, "the reprovision", ended).await;
    assert_eq!(w.status, WorkflowStatus::Succeeded, "{w:?}");
    // The audit record of the install: its creation and its workflows, oldest first.
    let q = ferry_model::api::AuditQuery {
        install: Some("c1".into()),
        ..Default::default()
    };
    let page = call::<ops::ListAudit>(c, &[], &q, &()).await.unwrap();
    let actions: Vec<&str> = page
        .entries
        .iter()
        .map(|e| e.event.action.as_str())
        .collect();
    assert!(actions.contains(&"install.created"), "{actions:?}");
    assert!(actions.contains(&"approval.approved"), "{actions:?}");
    assert!(page.entries.iter().all(|e| e.event.install() == Some("c1")));
    assert!(page.entries.windows(2).all(|w| w[0].seq < w[1].seq));
    let bad = ferry_model::api::AuditQuery {
        since: Some("yesterday".into()),
        ..Default::default()
    };
    refused(
        call::<ops::ListAudit>(c, &[], &bad, &()).await.unwrap_err(),
        400,
    );
    // Its history: the provision and the deploys, newest first.
    let history = run::<ops::InstallHistory>(c, &["c1"]).await.unwrap();
    assert_eq!(
        history.last().map(|h| h.kind),
        Some(ferry_model::WorkflowKind::Provision)
    );
    // The example's readme, rendered for the install (no template in it: as written).
    let readme = run::<ops::InstallReadme>(c, &["c1"]).await.unwrap();
    assert!(readme.markdown.starts_with("# hello"), "{readme:?}");
    assert_eq!(readme.warning, None);
    // The customer portal's readme, rendered for the install (it names it).
    let portal = run::<ops::InstallPortalReadme>(c, &["c1"]).await.unwrap();
    assert!(portal.markdown.contains("for install `c1`"), "{portal:?}");
    let trail = call::<ops::InstallAudit>(c, &["c1"], &Default::default(), &())
        .await
        .unwrap();
    assert!(
        trail
            .entries
            .iter()
            .all(|e| e.event.install() == Some("c1")),
        "{trail:?}"
    );
    assert!(!trail.entries.is_empty());
    let stack = call::<ops::InstallStackOp>(c, &["c1"], &StackQuery::default(), &())
        .await
        .unwrap();
    assert_eq!(
        stack["Resources"]["RunnerGroup"]["Type"],
        "AWS::AutoScaling::AutoScalingGroup"
    );
    // What goes into the template and the install record's link is bounded.
    let long = StackQuery {
        bundle_url: Some(format!("https://x/{}", "a".repeat(3000))),
        bundle_sha256: None,
    };
    refused(
        call::<ops::InstallStackOp>(c, &["c1"], &long, &())
            .await
            .unwrap_err(),
        400,
    );
    let bad_region = ferry_model::api::PublishStack {
        region: Some("EU WEST".into()),
        ..Default::default()
    };
    refused(
        call::<ops::PublishInstallStack>(c, &["c1"], &(), &bad_region)
            .await
            .unwrap_err(),
        400,
    );
    // This control plane has no stack bucket (tests/stack.rs publishes to one).
    let e = call::<ops::PublishInstallStack>(c, &["c1"], &(), &Default::default())
        .await
        .unwrap_err();
    refused(e, 409);
    let all = call::<ops::ListWorkflows>(c, &[], &WorkflowFilter::default(), &())
        .await
        .unwrap();
    assert!(all.len() >= 5, "{}", all.len());
}

/// An action, a runbook, and the break-glass role a customer grants and revokes.
async fn actions_and_break_glass(c: &Client) {
    let actions = run::<ops::ListActions>(c, &["c1"]).await.unwrap();
    assert!(
        actions.iter().any(|a| a.name == "greeting_check"),
        "{actions:?}"
    );
    let body = Some(RunAction::default());
    let d = call::<ops::RunActionOp>(c, &["c1", "greeting_check"], &(), &body)
        .await
        .unwrap();
    let w = until(c, &d.workflow_id, "the action", ended).await;
    assert_eq!(w.status, WorkflowStatus::Succeeded, "{w:?}");
    let d = run::<ops::RunRunbook>(c, &["c1", "note"]).await.unwrap();
    let w = until(c, &d.workflow_id, "the runbook", ended).await;
    assert_eq!(w.status, WorkflowStatus::Succeeded, "{w:?}");

    let new = NewToken {
        name: "security".into(),
        role: Role::Customer,
        scope: ferry_model::TokenScope {
            installs: ["c1".to_string()].into(),
            ..Default::default()
        },
    };
    let minted = call::<ops::CreateToken>(c, &[], &(), &new).await.unwrap();
    let customer = Client::new(c.base(), Some(&minted.token)).unwrap();
    let grant = GrantBreakGlass {
        role: "admin-access".into(),
        for_secs: 60,
    };
    let i = call::<ops::GrantBreakGlassOp>(&customer, &["c1"], &(), &grant)
        .await
        .unwrap();
    assert!(i.break_glass.contains_key("admin-access"));
    refused(
        run::<ops::RevokeBreakGlass>(c, &["c1", "admin-access"])
            .await
            .unwrap_err(),
        403,
    );
    run::<ops::RevokeBreakGlass>(&customer, &["c1", "admin-access"])
        .await
        .unwrap();
}

/// A release over c1, paused, resumed, cancelled.
async fn releases(c: &Client) {
    let new = CreateRelease {
        app: "hello".into(),
        installs: vec!["c1".into()],
        waves: "1".into(),
        delay_secs: 3600,
        ..Default::default()
    };
    let r = call::<ops::CreateReleaseOp>(c, &[], &(), &new)
        .await
        .unwrap();
    assert_eq!(run::<ops::GetRelease>(c, &[&r.id]).await.unwrap().id, r.id);
    assert_eq!(run::<ops::ListReleases>(c, &[]).await.unwrap().len(), 1);
    run::<ops::PauseRelease>(c, &[&r.id]).await.unwrap();
    run::<ops::ResumeRelease>(c, &[&r.id]).await.unwrap();
    let r = run::<ops::CancelRelease>(c, &[&r.id]).await.unwrap();
    assert!(r.status.is_terminal(), "{:?}", r.status);
}

/// Tokens listed and revoked; a runner token traded for a certificate; runners listed and
/// cut off.
async fn tokens_and_runners(c: &Client, dir: &Path) {
    let all = run::<ops::ListTokens>(c, &[]).await.unwrap();
    let customer = all.iter().find(|t| t.name == "security").unwrap();
    let revoked = run::<ops::RevokeToken>(c, &[&customer.id]).await.unwrap();
    assert!(revoked.revoked_at.is_some());

    let t = run::<ops::RunnerTokenOp>(c, &["c1"]).await.unwrap();
    let files = ferry_pki::InstallFiles::new(&dir.join("bootstrapped"));
    let hint = ferry_pki::InstallIdentity::new("default", "c1").unwrap();
    let csr = files.new_key_and_csr(&hint).unwrap();
    let anyone = Client::new(c.base(), None).unwrap();
    let body = BootstrapRequest {
        token: t.token.clone(),
        csr,
    };
    let cert = call::<ops::Bootstrap>(&anyone, &[], &(), &body)
        .await
        .unwrap();
    assert_eq!(cert.install, "c1");
    refused(
        call::<ops::Bootstrap>(&anyone, &[], &(), &body)
            .await
            .unwrap_err(),
        401,
    );

    let c1 = RunnerFilter {
        install: Some("c1".into()),
    };
    let runners = call::<ops::ListRunners>(c, &[], &c1, &()).await.unwrap();
    assert_eq!(runners.len(), 1, "{runners:?}");
    let cut = run::<ops::RevokeRunners>(c, &["c1"]).await.unwrap();
    assert_eq!(cut.install, "c1");
}

/// A job no runner takes, cancelled; a workflow cancelled; c1 torn down and deleted.
async fn ends(c: &Client) {
    let new = CreateInstall {
        name: "c2".into(),
        app: "hello".into(),
        inputs: Default::default(),
        approve_all: true,
        labels: Default::default(),
        approvals_by: Default::default(),
    };
    let created = call::<ops::CreateInstallOp>(c, &[], &(), &new)
        .await
        .unwrap();
    let w = until(c, &created.workflow_id, "c2's first job", |w| {
        w.steps.iter().any(|s| s.job_id.is_some())
    })
    .await;
    let job = w.steps.iter().find_map(|s| s.job_id.clone()).unwrap();
    let j = run::<ops::CancelJob>(c, &[&job]).await.unwrap();
    assert_eq!(j.id, job);
    let w = run::<ops::CancelWorkflow>(c, &[&created.workflow_id])
        .await
        .unwrap();
    assert_eq!(w.id, created.workflow_id);
    until(c, &created.workflow_id, "c2's cancel", ended).await;

    let d = run::<ops::TeardownInstall>(c, &["c2"]).await.unwrap();
    until(c, &d.workflow_id, "c2's teardown", ended).await;
    let force = ferry_model::api::DeleteOptions { force: true };
    call::<ops::DeleteInstall>(c, &["c2"], &force, &())
        .await
        .unwrap();
    refused(run::<ops::GetInstall>(c, &["c2"]).await.unwrap_err(), 404);
}
