//! Nothing one install sends can change what the vendor sees of another. Two installs, `a` and
//! `b`, each with its own runner and identity; `a`'s identity — connected to the hub directly with
//! its certificate, and through its runner's leaf nats-server without any credential — attacks
//! `b`'s job on its own subjects (the only ones the hub lets it publish on): it replaces the job's
//! log, puts a forged plan in front of `b`'s reviewer, and pre-empts the de-duplication id of `b`'s
//! real result. `b`'s log, plan and result stay exactly as `b`'s runner made them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use ferry_protocol::messages::{
    EventBody, JobEvent, JobResult, LogBatch, LogLine, LogStream, Outcome, PlanData,
};
use ferry_tests::typed::*;
use ferry_tests::{
    NatsServer, ORG, Proc, copy_dir, ferry, repo_root, running_job, sync_hello, token_for,
};

/// The two installs, their runners and the control plane.
struct Two {
    nats: NatsServer,
    dir: tempfile::TempDir,
    api: String,
    _server: Proc,
    _runners: Vec<Proc>,
}

/// How `a` reaches the hub.
#[derive(Debug, Clone, Copy)]
enum Via {
    /// Its own certificate, straight to the hub.
    Direct,
    /// Its runner's leaf nats-server, which needs no credential on the runner's host.
    Leaf,
}

/// The example app, with the sandbox's plan taking `plan_secs` first.
fn example(dir: &Path, plan_secs: u32) -> PathBuf {
    let app = dir.join("app");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let plan = app.join("sandbox/plan.sh");
    let script = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(
        &plan,
        script.replacen("set -eu\n", &format!("set -eu\nsleep {plan_secs}\n"), 1),
    )
    .unwrap();
    app
}

/// The control plane, install `a` (approve-all, deployed) and install `b` (approve-all as asked:
/// without it, `b` waits for a review of its sandbox's plan); returns `b`'s first workflow.
fn two_installs(plan_secs: u32, b_approve_all: bool) -> (Two, String) {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    sync_hello(&api, &example(dir.path(), plan_secs));
    let create = |name: &str, approve_all: bool| {
        let mut args = vec![
            "installs", "create", "--app", "hello", "--name", name, "--json",
        ];
        if approve_all {
            args.push("--approve-all");
        }
        cli::<CreatedInstall>(&api, &args).workflow_id
    };
    let runner = |name: &str| {
        Proc::runner(
            &nats.url,
            name,
            &dir.path().join(format!("runner-{name}")),
            dir.path().join(format!("runner-{name}.log")),
        )
    };
    let a_wf = create("a", true);
    let runners = vec![runner("a"), runner("b")];
    let a_done = wait_until(&api, &a_wf, 120, "a's deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&a_done.status), "succeeded", "{a_done:?}");
    let b_wf = create("b", b_approve_all);
    let two = Two {
        nats,
        dir,
        api,
        _server: server,
        _runners: runners,
    };
    (two, b_wf)
}

impl Two {
    /// A JetStream context of `a`'s identity, `via` the hub or `a`'s leaf.
    async fn attacker(&self, via: Via) -> jetstream::Context {
        let inbox = format!("_INBOX.{ORG}.a");
        match via {
            Via::Direct => {
                let identity =
                    ferry_pki::InstallFiles::new(&self.dir.path().join("runner-a/identity"));
                let id = ferry_pki::InstallIdentity::new(ORG, "a").unwrap();
                let client = identity
                    .credentials(&id)
                    .connect_options()
                    .connect(&self.nats.url)
                    .await
                    .expect("a's certificate is admitted");
                jetstream::new(client)
            }
            Via::Leaf => {
                let (url, options) =
                    ferry_tests::leaf_access(&self.dir.path().join("runner-a/leaf/nats.conf"))
                        .expect("a's leaf configuration");
                let client = options
                    .custom_inbox_prefix(inbox)
                    .connect(url)
                    .await
                    .expect("a's leaf takes its local user");
                jetstream::with_domain(client, "hub")
            }
        }
    }

    fn server_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Waits until the control plane's log holds `n` lines with `what` (the refusal of a forged
    /// message: it has been judged).
    fn wait_for_log(&self, what: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.server_log().matches(what).count() < n {
            assert!(
                Instant::now() < deadline,
                "the control plane never said `{what}` {n} times:\n{}",
                self.server_log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Publishes `payload` on `subject` with de-duplication id `id`, and waits for the hub's stream
/// to acknowledge it (stored, or dropped as a duplicate).
async fn publish(js: &jetstream::Context, subject: String, id: &str, payload: Vec<u8>) {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(async_nats::header::NATS_MESSAGE_ID, id);
    js.publish_with_headers(subject, headers, payload.into())
        .await
        .expect("published")
        .await
        .expect("acknowledged by the hub's stream");
}

/// A `Finished` event claiming `job` succeeded, with a forged plan.
fn forged_result(job: &str, execution: &str) -> Vec<u8> {
    ferry_protocol::encode(&JobEvent {
        job_id: job.into(),
        execution_id: execution.into(),
        seq: 1,
        at_ms: 0,
        body: EventBody::Finished(Box::new(JobResult {
            status: Outcome::Succeeded,
            outputs_json: r#"{"forged":"yes"}"#.into(),
            plan: Some(PlanData {
                digest: format!("sha256:{}", "f".repeat(64)),
                changes: true,
                summary: "forged".into(),
                diff_json: br#"{"resource_changes":[{"address":"forged.by_a"}]}"#.to_vec(),
            }),
            error: None,
            sensitive_outputs: vec![],
            offloaded: None,
            ran_as: None,
            timing: Default::default(),
        })),
    })
}

/// The public id of `job`'s first execution, as the API shows it to every token of the org.
fn shown_execution(api: &str, job: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let j = cli::<Job>(api, &["jobs", "get", job, "--json"]);
        if let Some(e) = j.executions.first() {
            return e.id.clone();
        }
        assert!(Instant::now() < deadline, "job {job} never ran: {j:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `b`'s sandbox plan, once it has ended and waits for its review.
fn b_plan_waiting(two: &Two, wf: &str) -> String {
    let w = wait_until(
        &two.api,
        wf,
        120,
        "b's sandbox plan to wait for review",
        |w| step_is(w, "sandbox", "approve", "waiting"),
    );
    the_step(&w, "sandbox", "plan")
        .job_id
        .as_deref()
        .unwrap()
        .to_string()
}

fn log_lines(api: &str, job: &str) -> String {
    let (code, out, err) = ferry(api, &["logs", "--job", job, "--json"]);
    assert_eq!(code, 0, "{err}");
    out
}

/// `GET /v1/jobs/{job}/plan`: its status and body.
fn plan_route(api: &str, job: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {}", token_for(api).unwrap()))
        .arg(format!("{api}/v1/jobs/{job}/plan"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (status.to_string(), body.to_string())
}

#[test]
fn another_installs_job_log_cannot_be_replaced() {
    let (two, wf) = two_installs(0, false);
    let job = b_plan_waiting(&two, &wf);
    let execution = shown_execution(&two.api, &job);
    two.wait_for_log("job log archived", 1);
    let before = log_lines(&two.api, &job);
    assert!(before.contains("sandbox for install"), "{before}");

    let rt = tokio::runtime::Runtime::new().unwrap();
    for (n, via) in [Via::Direct, Via::Leaf].into_iter().enumerate() {
        rt.block_on(async {
            let js = two.attacker(via).await;
            let batch = ferry_protocol::encode(&LogBatch {
                job_id: job.clone(),
                execution_id: execution.clone(),
                first_seq: 0,
                lines: vec![LogLine {
                    at_ms: 0,
                    stream: LogStream::Stdout,
                    text: format!("forged by a {via:?}"),
                }],
            });
            let subject = ferry_protocol::subjects::log(ORG, "a", &job);
            publish(&js, subject, &format!("forged-log-{n}"), batch).await;
            let subject = ferry_protocol::subjects::event(ORG, "a", &job);
            let id = format!("forged-event-{n}");
            publish(&js, subject, &id, forged_result(&job, &execution)).await;
        });
        two.wait_for_log("finished event refused", n + 1);
    }
    assert_eq!(log_lines(&two.api, &job), before, "b's log is b's runner's");
}

#[test]
fn another_installs_plan_cannot_be_replaced_in_front_of_its_reviewer() {
    let (two, wf) = two_installs(0, false);
    let job = b_plan_waiting(&two, &wf);
    let execution = shown_execution(&two.api, &job);
    let before = plan_route(&two.api, &job);

    let rt = tokio::runtime::Runtime::new().unwrap();
    for (n, via) in [Via::Direct, Via::Leaf].into_iter().enumerate() {
        rt.block_on(async {
            let js = two.attacker(via).await;
            let subject = ferry_protocol::subjects::event(ORG, "a", &job);
            let id = format!("forged-plan-{n}");
            publish(&js, subject, &id, forged_result(&job, &execution)).await;
        });
        two.wait_for_log("belongs to install b, not a", n + 1);
    }
    assert_eq!(
        plan_route(&two.api, &job),
        before,
        "b's reviewer sees b's plan"
    );
    let w = cli::<Workflow>(&two.api, &["workflows", "get", &wf, "--json"]);
    assert_ne!(
        the_step(&w, "sandbox", "plan").message.as_deref(),
        Some("forged"),
        "{w:?}"
    );
}

#[test]
fn another_installs_result_cannot_be_preempted_by_its_deduplication_id() {
    // b's sandbox plan runs 4 s: long enough for a to read its execution from the API and send
    // results with every de-duplication id it can derive before b's runner sends the real one.
    let (two, wf) = two_installs(4, true);
    let job = running_job(&two.api, &wf, "sandbox", "plan");
    let execution = shown_execution(&two.api, &job);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for via in [Via::Direct, Via::Leaf] {
        rt.block_on(async {
            let js = two.attacker(via).await;
            for local in [format!("{execution}-1"), format!("{execution}-0")] {
                for id in [
                    local.clone(),
                    ferry_protocol::subjects::msg_id(ORG, "b", &local),
                    ferry_protocol::subjects::msg_id(ORG, "a", &local),
                ] {
                    let subject = ferry_protocol::subjects::event(ORG, "a", &job);
                    publish(&js, subject, &id, forged_result(&job, &execution)).await;
                }
            }
        });
    }
    let done = wait_until(&two.api, &wf, 120, "b's deploy", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let j = cli::<Job>(&two.api, &["jobs", "get", &job, "--json"]);
    let executions = &j.executions;
    assert_eq!(
        executions.len(),
        1,
        "b's real result was taken at once, not lost and run again: {j:?}"
    );
    assert_eq!(name_of(&executions[0].status), "finished", "{j:?}");
    assert!(!j.outputs.contains_key("forged"), "{j:?}");
}

/// The execution's token — what its runner's messages carry — is never shown: not by the API,
/// not in the job's log.
#[test]
fn the_execution_token_is_never_shown() {
    let (two, wf) = two_installs(0, true);
    let done = wait_until(&two.api, &wf, 120, "b's deploy", |w| {
        name_of(&w.status) == "succeeded"
    });
    let job = the_step(&done, "sandbox", "plan")
        .job_id
        .as_deref()
        .unwrap()
        .to_string();
    // The JSON shape itself: a field left out is not decoded into a record.
    let shown = cli::<serde_json::Value>(&two.api, &["jobs", "get", &job, "--json"]);
    let execution = shown["executions"][0]["id"].as_str().unwrap();
    assert_eq!(execution, format!("{job}-1"), "the public id: {shown:?}");
    assert!(
        shown["executions"][0].get("key_sha256").is_none(),
        "{shown:?}"
    );
    let log = log_lines(&two.api, &job);
    for line in log.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(entry["execution"], execution, "{line}");
    }
    // The runner's own log names executions by their public ids too.
    let runner_log =
        std::fs::read_to_string(two.dir.path().join("runner-b.log")).unwrap_or_default();
    assert!(
        runner_log.contains(execution),
        "the runner names the execution"
    );
    assert!(
        !runner_log.contains(&format!("{execution}-")),
        "{runner_log}"
    );
}
