//! What an install's identity can and cannot do on the hub, tried as an attacker would: with a
//! raw NATS client holding install `a`'s real certificate (issued by the hub's CA, admitted by the
//! api's auth callout), against a real nats-server and ferry-server. One test per attempt, each
//! asserting the server's permission error.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, ORG, Proc};

/// A hub with the control plane running, and a connection holding install `a`'s certificate,
/// recording every error the server sends it.
struct Attacker {
    client: async_nats::Client,
    errors: Errors,
    nats: NatsServer,
    _server: Proc,
    dir: tempfile::TempDir,
}

async fn install_a() -> Attacker {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (server, _api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let creds = nats.issue_install(ORG, "a", &dir.path().join("a"));
    let (opts, errors) = recording(creds.connect_options());
    let client = opts
        .connect(&nats.url)
        .await
        .expect("install a's certificate is admitted");
    Attacker {
        client,
        errors,
        nats,
        _server: server,
        dir,
    }
}

impl Attacker {
    /// Waits for the server's permission error naming `subject` (as publish or subscription).
    async fn refused(&self, what: &str, subject: &str) {
        let _ = self.client.flush().await;
        violation(&self.errors, what, subject).await;
    }

    async fn publish_refused(&self, subject: &str) {
        self.client
            .publish(subject.to_string(), "forged".into())
            .await
            .unwrap();
        self.refused("publish", subject).await;
    }

    async fn subscribe_refused(&self, subject: &str) {
        let _sub = self.client.subscribe(subject.to_string()).await.unwrap();
        self.refused("subscription", subject).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_may_use_its_own_subjects() {
    let a = install_a().await;
    let mut wake = a
        .client
        .subscribe("ferry.push.default.a.wake")
        .await
        .unwrap();
    a.client
        .publish("ferry.rx.default.a.hb", "x".into())
        .await
        .unwrap();
    a.client.flush().await.unwrap();
    // The doorbell reaches it (published by the control plane's user).
    let services = a.nats.connect_as(ferry_pki::hub::SERVICES_USER).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let got = loop {
        services
            .publish("ferry.push.default.a.wake", "ring".into())
            .await
            .unwrap();
        services.flush().await.unwrap();
        if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(200), {
            use futures_util::StreamExt;
            wake.next()
        })
        .await
        {
            break m;
        }
        assert!(Instant::now() < deadline, "the doorbell never arrived");
    };
    assert_eq!(&got.payload[..], b"ring");
    assert!(a.errors.lock().unwrap().is_empty(), "{:?}", a.errors);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_claim_another_installs_jobs() {
    install_a()
        .await
        .publish_refused("ferry.rx.default.b.claim")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_ask_for_another_installs_offers_or_artifacts() {
    let a = install_a().await;
    a.publish_refused("ferry.rx.default.b.offers").await;
    a.publish_refused("ferry.rx.default.b.artifact").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_receive_another_installs_doorbell() {
    install_a()
        .await
        .subscribe_refused("ferry.push.default.b.wake")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_receive_another_installs_cancels() {
    install_a()
        .await
        .subscribe_refused("ferry.push.default.b.cancel.*")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_publish_events_as_another() {
    install_a()
        .await
        .publish_refused("ferry.rx.default.b.event.j1")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_publish_logs_as_another() {
    install_a()
        .await
        .publish_refused("ferry.rx.default.b.log.j1")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_read_another_installs_replies() {
    install_a()
        .await
        .subscribe_refused("_INBOX.default.b.>")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_subscribe_to_everything() {
    install_a().await.subscribe_refused(">").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_touch_any_bucket_stream_or_object_store() {
    let a = install_a().await;
    let js = async_nats::jetstream::new(a.client.clone());
    // Every JetStream API call is a publish under $JS.API, which the install may not make.
    assert!(js.get_key_value("installs").await.is_err());
    a.refused("publish", "$JS.API.STREAM.INFO.KV_installs")
        .await;
    for bucket in ferry_protocol::resources::buckets::ALL {
        a.publish_refused(&format!("$KV.{bucket}.default.a")).await;
    }
    for stream in ferry_protocol::resources::STREAMS {
        a.publish_refused(&format!("$JS.API.STREAM.INFO.{}", stream.name))
            .await;
        a.publish_refused(&format!("$JS.API.DIRECT.GET.{}", stream.name))
            .await;
    }
    for store in ferry_protocol::resources::objects::ALL {
        a.publish_refused(&format!("$JS.API.STREAM.INFO.OBJ_{store}"))
            .await;
    }
    a.subscribe_refused("$KV.installs.>").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_cannot_call_internal_subjects_or_decide_approvals() {
    let a = install_a().await;
    // A forged approval decision, a forged audit record, a forged auth answer.
    a.publish_refused("ferry.ctl.approval-done.default").await;
    a.publish_refused("ferry.ctl.workflow.default").await;
    a.publish_refused("ferry.audit.default.install").await;
    a.publish_refused("$SYS.REQ.USER.AUTH").await;
    a.publish_refused("ferry.jobs.default.a.forged").await;
}

/// Connects to `nats` with `opts`; the error if it is refused.
async fn refused_connection(nats: &NatsServer, opts: async_nats::ConnectOptions) -> String {
    match tokio::time::timeout(Duration::from_secs(10), opts.connect(&nats.url)).await {
        Ok(Ok(_)) => panic!("the connection was admitted"),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "timed out".into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_without_a_certificate_is_refused() {
    let a = install_a().await;
    let opts = async_nats::ConnectOptions::new()
        .require_tls(true)
        .add_root_certificates(a.nats.hub.path("ca.pem"));
    let err = refused_connection(&a.nats, opts).await;
    assert!(!err.is_empty());
    // Nor does a user name help without the password.
    let opts = async_nats::ConnectOptions::with_user_and_password("ferry".into(), "guess".into())
        .require_tls(true)
        .add_root_certificates(a.nats.hub.path("ca.pem"))
        .add_client_certificate(
            a.dir.path().join("a/cert.pem"),
            a.dir.path().join("a/key.pem"),
        );
    let err = refused_connection(&a.nats, opts).await;
    assert!(err.to_lowercase().contains("authorization"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_from_another_ca_is_refused() {
    let a = install_a().await;
    let other = ferry_pki::Ca::generate("not ferry's").unwrap();
    let id = ferry_pki::InstallIdentity::new(ORG, "a").unwrap();
    let files = ferry_pki::InstallFiles::new(&a.dir.path().join("forged"));
    let csr = files.new_key_and_csr(&id).unwrap();
    let cert = other
        .sign_install_csr(&csr, &id, Duration::from_secs(3600))
        .unwrap();
    files
        .store(
            &cert,
            &std::fs::read_to_string(a.nats.hub.path("ca.pem")).unwrap(),
        )
        .unwrap();
    let err = refused_connection(&a.nats, files.credentials(&id).connect_options()).await;
    assert!(!err.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_certificate_is_refused() {
    let a = install_a().await;
    let hub = ferry_pki::HubFiles::open(&a.nats.hub.dir).unwrap();
    let id = ferry_pki::InstallIdentity::new(ORG, "a").unwrap();
    let files = ferry_pki::InstallFiles::new(&a.dir.path().join("expired"));
    let csr = files.new_key_and_csr(&id).unwrap();
    let ca = hub.ca().unwrap();
    let cert = ca
        .sign_install_csr(&csr, &id, Duration::from_secs(1))
        .unwrap();
    files.store(&cert, ca.cert_pem()).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let err = refused_connection(&a.nats, files.credentials(&id).connect_options()).await;
    assert!(!err.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_services_credentials_cannot_change_or_delete_the_audit_stream() {
    let a = install_a().await;
    let (services, errors) = service_user(&a.nats, ferry_pki::hub::SERVICES_USER).await;
    let js = async_nats::jetstream::new(services);
    let mut stream = js.get_stream("AUDIT").await.unwrap();
    let mut config = stream.info().await.unwrap().config.clone();
    config.max_messages = 1;
    assert!(js.update_stream(config).await.is_err());
    assert!(stream.purge().await.is_err());
    assert!(js.delete_stream("AUDIT").await.is_err());
    for subject in ferry_pki::hub::AUDIT_ADMIN_SUBJECTS.iter().take(3) {
        violation(&errors, "publish", subject).await;
    }
    // The stream is as it was.
    let info = js
        .get_stream("AUDIT")
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .clone();
    assert_eq!(info.config.max_messages, -1);
}

/// Forged results from the install's own identity — a connection that is not the runner granted
/// the jobs — published before the runner even starts, for every job id the workflow will have
/// and the execution ids a counter would give them: none is taken, and none pre-empts the real
/// result's de-duplication id (execution ids end with a secret only the granted runner gets).
#[tokio::test(flavor = "multi_thread")]
async fn forged_results_from_the_installs_own_identity_are_ignored_and_preempt_nothing() {
    use ferry_protocol::messages::{EventBody, JobEvent, JobResult, Outcome, PlanData};

    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::sync_hello(&api, &ferry_tests::repo_root().join("examples/hello"));
    let created = cli::<CreatedInstall>(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "prod",
            "--approve-all",
            "--json",
        ],
    );
    let wf = created.workflow_id.as_str().to_string();

    let creds = nats.issue_install(ORG, "prod", &dir.path().join("forger"));
    let forger = creds.connect_options().connect(&nats.url).await.unwrap();
    let js = async_nats::jetstream::new(forger);
    for n in 0..40 {
        let job = format!("{wf}-{n}");
        for seq in 0..2u32 {
            let execution_id = format!("{job}-1");
            let forged = JobEvent {
                job_id: job.clone(),
                execution_id: execution_id.clone(),
                seq,
                at_ms: 0,
                body: EventBody::Finished(Box::new(JobResult {
                    status: Outcome::Succeeded,
                    outputs_json: r#"{"forged":"yes"}"#.into(),
                    plan: Some(PlanData {
                        digest: format!("sha256:{}", "f".repeat(64)),
                        changes: true,
                        summary: "forged".into(),
                        diff_json: vec![],
                    }),
                    error: None,
                    sensitive_outputs: vec![],
                    offloaded: None,
                    ran_as: None,
                    timing: Default::default(),
                })),
            };
            let mut headers = async_nats::HeaderMap::new();
            let id = format!("{execution_id}-{seq}");
            headers.insert(async_nats::header::NATS_MESSAGE_ID, id.as_str());
            js.publish_with_headers(
                format!("ferry.rx.{ORG}.prod.event.{job}"),
                headers,
                ferry_protocol::encode(&forged).into(),
            )
            .await
            .unwrap()
            .await
            .unwrap();
        }
    }
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let done = tokio::task::spawn_blocking(move || {
        wait_until(&api, &wf, 120, "the workflow to end", |w| {
            name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
        })
    })
    .await
    .unwrap();
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    for s in &done.steps {
        assert_ne!(s.message.as_deref(), Some("forged"), "{s:?}");
    }
    assert_ne!(
        the_step(&done, "sandbox", "plan").message.as_deref(),
        Some("forged")
    );
}

/// Connects as one of the services' users and records the server's errors.
async fn service_user(nats: &NatsServer, user: &str) -> (async_nats::Client, Errors) {
    let (opts, errors) = recording(nats.hub.credentials(user).unwrap().connect_options());
    (opts.connect(&nats.url).await.unwrap(), errors)
}

/// The errors the server sent a connection, lowercased.
type Errors = Arc<Mutex<Vec<String>>>;

/// `opts` recording every error the server sends.
fn recording(opts: async_nats::ConnectOptions) -> (async_nats::ConnectOptions, Errors) {
    let errors = Errors::default();
    let seen = errors.clone();
    let opts = opts.event_callback(move |e| {
        let seen = seen.clone();
        async move {
            if let async_nats::Event::ServerError(e) = e {
                seen.lock().unwrap().push(e.to_string().to_lowercase());
            }
        }
    });
    (opts, errors)
}

/// Waits up to 5 s for the server's permission error for `what` (publish, subscription) to
/// `subject`.
async fn violation(errors: &Errors, what: &str, subject: &str) {
    let wanted = format!("permissions violation for {what} to \"{subject}\"").to_lowercase();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !errors.lock().unwrap().iter().any(|e| e.contains(&wanted)) {
        assert!(Instant::now() < deadline, "{wanted}: {:?}", errors);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_service_user_may_do_only_what_its_role_needs() {
    let a = install_a().await;
    // build: no runner's events (no service can forge a job result), no job offers, no
    // doorbells, no tokens, no claims to serve.
    let (build, errors) = service_user(&a.nats, "build").await;
    for subject in [
        "ferry.rx.default.a.event.j1",
        "ferry.jobs.default.a.j1",
        "ferry.push.default.a.wake",
        "$KV.tokens.default.t1",
        "$JS.API.DIRECT.GET.KV_tokens.$KV.tokens.default.t1",
    ] {
        build.publish(subject, "x".into()).await.unwrap();
        build.flush().await.unwrap();
        violation(&errors, "publish", subject).await;
    }
    let _claims = build
        .subscribe(ferry_protocol::subjects::CLAIM_ALL)
        .await
        .unwrap();
    build.flush().await.unwrap();
    violation(&errors, "subscription", ferry_protocol::subjects::CLAIM_ALL).await;
    // approval: no installs' subjects, no artifacts.
    let (approval, errors) = service_user(&a.nats, "approval").await;
    for subject in ["ferry.push.default.a.cancel.j1", "$O.artifacts.C.x"] {
        approval.publish(subject, "x".into()).await.unwrap();
        approval.flush().await.unwrap();
        violation(&errors, "publish", subject).await;
    }
    // log-ingest: no control messages (it decides nothing).
    let (logs, errors) = service_user(&a.nats, "log-ingest").await;
    logs.publish("ferry.ctl.approval-done.default", "x".into())
        .await
        .unwrap();
    logs.flush().await.unwrap();
    violation(&errors, "publish", "ferry.ctl.approval-done.default").await;
    // And no service user may touch the audit stream's configuration.
    let (scheduler, errors) = service_user(&a.nats, "scheduler").await;
    scheduler
        .publish("$JS.API.STREAM.DELETE.AUDIT", "".into())
        .await
        .unwrap();
    scheduler.flush().await.unwrap();
    violation(&errors, "publish", "$JS.API.STREAM.DELETE.AUDIT").await;
}

/// The scheduler erases the open marks of work that ended (a purge of the mark's subject, so a
/// sweep never meets them again) and may purge nothing else of the records.
#[tokio::test(flavor = "multi_thread")]
async fn the_scheduler_may_erase_open_marks_and_purge_no_record() {
    let a = install_a().await;
    let (scheduler, errors) = service_user(&a.nats, "scheduler").await;
    // What `ferry_store::Repo::erase` sends.
    let js = async_nats::jetstream::new(scheduler);
    let marks = js.get_key_value("open_workflows").await.unwrap();
    marks.put("default.w1", "{}".into()).await.unwrap();
    let stream = js.get_stream("KV_open_workflows").await.unwrap();
    stream
        .purge()
        .filter("$KV.open_workflows.default.w1")
        .await
        .unwrap();
    assert!(marks.entry("default.w1").await.unwrap().is_none());
    let installs = js.get_stream("KV_installs").await.unwrap();
    assert!(
        installs
            .purge()
            .filter("$KV.installs.default.a")
            .await
            .is_err()
    );
    violation(&errors, "publish", "$JS.API.STREAM.PURGE.KV_installs").await;
}
