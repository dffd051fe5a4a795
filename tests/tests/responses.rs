//! Every response to a workflow, a step, a job or an install in a state that does not allow it:
//! a 409 (or 404) with a message that says why, and nothing changed.

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, ferry, repo_root, server_and_runner};

/// Runs `args`, expects it refused with `status` and `says` in the message, and the workflow
/// record (and the install's) exactly as before.
fn refused(api: &str, wf: &str, args: &[&str], status: &str, says: &str) {
    let before = (
        ferry(api, &["workflows", "get", wf, "--json"]).1,
        ferry(api, &["installs", "get", "prod", "--json"]).1,
    );
    let (code, out, err) = ferry(api, args);
    assert_eq!(code, 1, "{args:?} was accepted: {out}");
    assert!(err.contains(status), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    let after = (
        ferry(api, &["workflows", "get", wf, "--json"]).1,
        ferry(api, &["installs", "get", "prod", "--json"]).1,
    );
    assert_eq!(before, after, "{args:?} changed something");
}

const CONFLICT: &str = "HTTP 409 Conflict";
/// The CLI reports a 404 by its message alone.
const NOT_FOUND: &str = "error: workflow";

#[test]
fn responses_to_an_ended_workflow_are_refused_and_change_nothing() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let created = cli::<Workflow>(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "prod",
            "--approve-all",
            "--wait",
            "--json",
        ],
    );
    let wf = created.id.as_str().to_string();
    assert_eq!(name_of(&created.status), "succeeded", "{created:?}");
    let job = the_step(&created, "greeter", "apply")
        .job_id
        .as_deref()
        .unwrap()
        .to_string();
    let w = wf.as_str();

    refused(
        &api,
        w,
        &["workflows", "approve", w, "--step", "sandbox"],
        CONFLICT,
        "does not wait for a decision: it is succeeded",
    );
    refused(
        &api,
        w,
        &["workflows", "approve", w, "--all"],
        CONFLICT,
        "has already ended",
    );
    refused(
        &api,
        w,
        &["workflows", "deny", w, "--step", "greeter"],
        CONFLICT,
        "does not wait for a decision: it is succeeded",
    );
    refused(
        &api,
        w,
        &["workflows", "retry", w, "--step", "greeter"],
        CONFLICT,
        "has no failed or cancelled step `greeter`",
    );
    refused(
        &api,
        w,
        &["workflows", "skip", w, "--step", "0"],
        CONFLICT,
        "step 0 cannot be skipped: step 0 has already ended (succeeded)",
    );
    refused(
        &api,
        w,
        &["workflows", "cancel", w],
        CONFLICT,
        "has already ended (succeeded)",
    );
    refused(
        &api,
        w,
        &["jobs", "cancel", &job],
        CONFLICT,
        "has already ended (finished)",
    );
    refused(
        &api,
        w,
        &["workflows", "approve", w, "--step", "99"],
        NOT_FOUND,
        "has no step `99`",
    );
    refused(
        &api,
        w,
        &["workflows", "skip", w, "--step", "nope"],
        NOT_FOUND,
        "has no step `nope` left to skip",
    );
    refused(
        &api,
        w,
        &["installs", "delete", "prod"],
        CONFLICT,
        "still has sandbox, counter, greeter, reporter deployed",
    );
}

#[test]
fn responses_to_a_running_workflow_are_refused_and_change_nothing() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    // No runner: the first jobs wait, their steps running.
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let wf = ferry_tests::sync_and_create(&api, &repo_root().join("examples/hello"), "prod");
    ferry_tests::running_job(&api, &wf, "sandbox", "sync");
    let w = wf.as_str();
    let sync = cli::<Workflow>(&api, &["workflows", "get", w, "--json"]);
    let sync = the_step(&sync, "sandbox", "sync").index.to_string();

    refused(
        &api,
        w,
        &["workflows", "skip", w, "--step", &sync],
        CONFLICT,
        &format!("step {sync} cannot be skipped: step {sync} is running: cancel it first"),
    );
    refused(
        &api,
        w,
        &["workflows", "retry", w, "--step", &sync],
        CONFLICT,
        "has no failed or cancelled step",
    );
    refused(
        &api,
        w,
        &["installs", "deploy", "prod"],
        CONFLICT,
        &format!("install `prod` is busy with workflow {w}"),
    );
    refused(
        &api,
        w,
        &["installs", "teardown", "prod"],
        CONFLICT,
        &format!("install `prod` is busy with workflow {w}"),
    );
    refused(
        &api,
        w,
        &[
            "installs",
            "update-inputs",
            "prod",
            "--input",
            "greeting=hi",
        ],
        CONFLICT,
        &format!("install `prod` is busy with workflow {w}"),
    );
    refused(
        &api,
        w,
        &["installs", "delete", "prod"],
        CONFLICT,
        &format!("install `prod` is busy with workflow {w}"),
    );
    refused(
        &api,
        w,
        &["installs", "deploy", "prod", "--component", "nope"],
        CONFLICT,
        "is busy",
    );
}
