//! The CLI's `--json` answers as Ferry's own records (`ferry_model`), for tests that read
//! fields: a field renamed or retyped fails to decode here rather than comparing `null`.

use std::time::{Duration, Instant};

use ferry_model::StepKind;
use serde::de::DeserializeOwned;

// What tests read, in one glob import (`use ferry_tests::typed::*`).
pub use ferry_model::api::{
    ActionRunReport, CreatedInstall, CreatedToken, Deployed, Fleet, InstallAction, RunnerInfo,
    SyncResponse, TokenInfo,
};
pub use ferry_model::{
    Approval, Execution, ExecutionStatus, Install, InstallStatus, Job, JobStatus, Release, Step,
    StepStatus, Workflow, WorkflowStatus,
};

use crate::ferry;

/// `ferry ARGS` (which must end in `--json`) decoded as a `T`; panics with the CLI's output if
/// it fails or prints something else.
pub fn cli<T: DeserializeOwned>(api: &str, args: &[&str]) -> T {
    let (code, out, err) = ferry(api, args);
    assert_eq!(code, 0, "ferry {args:?} failed:\n{out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("ferry {args:?}: {e}:\n{out}"))
}

/// The workflow as `ferry workflows get ID --json` prints it (whatever its status).
pub fn workflow(api: &str, id: &str) -> Option<Workflow> {
    let (_, out, _) = ferry(api, &["workflows", "get", id, "--json"]);
    serde_json::from_str(&out).ok()
}

/// Polls the workflow until `done` holds; panics after `secs` with its steps.
pub fn wait_until(
    api: &str,
    id: &str,
    secs: u64,
    what: &str,
    done: impl Fn(&Workflow) -> bool,
) -> Workflow {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let w = workflow(api, id);
        if let Some(w) = w.as_ref().filter(|w| done(w)) {
            return w.clone();
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last: {}",
            w.as_ref().map_or("no workflow".into(), steps_of)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a workflow has ended.
pub fn ended(w: &Workflow) -> bool {
    w.status.is_terminal()
}

/// The step of `component` of kind `kind` (a label: `plan`, `apply`...) that is not an action's.
pub fn step_of<'a>(w: &'a Workflow, component: &str, kind: &str) -> Option<&'a Step> {
    w.steps
        .iter()
        .find(|s| s.component == component && s.kind.label() == kind && s.action.is_none())
}

/// [`step_of`], for a step that must be there.
pub fn the_step<'a>(w: &'a Workflow, component: &str, kind: &str) -> &'a Step {
    step_of(w, component, kind)
        .unwrap_or_else(|| panic!("no {kind} step of {component} in {}", steps_of(w)))
}

/// Whether a plan of `component` waits for a decision.
pub fn waits_on(w: &Workflow, component: &str) -> bool {
    step_of(w, component, StepKind::Approve.label())
        .is_some_and(|s| s.status == ferry_model::StepStatus::Waiting)
}

/// A workflow's status and steps, one line each, for failure messages.
pub fn steps_of(w: &Workflow) -> String {
    let mut out = format!("{} {:?}", w.id, w.status);
    for s in &w.steps {
        out.push_str(&format!(
            "\n  {} {} {} {:?} {}",
            s.index,
            s.component,
            s.kind.label(),
            s.status,
            s.message.as_deref().unwrap_or("")
        ));
    }
    out
}

/// The name a value of one of the model's enums has on the wire (`succeeded`,
/// `not_attempted`): what the CLI prints and a test compares.
pub fn name_of<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

/// Whether the step of `component` of kind `kind` is there with status `status` (its wire
/// name): false while the workflow has no such step yet.
pub fn step_is(w: &Workflow, component: &str, kind: &str, status: &str) -> bool {
    step_of(w, component, kind).is_some_and(|s| name_of(&s.status) == status)
}

/// A customer token named `name` bound to install `install` (`tokens create --role customer
/// --install`): its text.
pub fn customer_token(api: &str, name: &str, install: &str) -> String {
    let args = [
        "tokens",
        "create",
        "--name",
        name,
        "--role",
        "customer",
        "--install",
        install,
        "--json",
    ];
    cli::<CreatedToken>(api, &args).token
}
