use ferry_model::{App, DEFAULT_ORG};
use ferry_store::{LastWritten, Store, StoreError};
use ferry_tests::NatsServer;

fn app(org: &str, name: &str) -> App {
    App {
        org: org.into(),
        name: name.into(),
        created_at: "t".into(),
        updated_at: "t".into(),
        latest_config: None,
        config_count: 0,
    }
}

#[tokio::test]
async fn kv_records_are_compare_and_swap_and_org_scoped() {
    let nats = NatsServer::start();
    let client = nats.admin().await;
    let js = async_nats::jetstream::new(client);
    Store::ensure(js.clone(), 1).await.unwrap();
    // Idempotent: a second service start-up finds everything in place.
    let store = Store::ensure(js, 1).await.unwrap();
    let apps = store.repo::<App>();

    let rev = apps.create(&app(DEFAULT_ORG, "hello")).await.unwrap();
    assert!(matches!(
        apps.create(&app(DEFAULT_ORG, "hello")).await,
        Err(StoreError::AlreadyExists { .. })
    ));
    // The idempotent create: a second attempt reports "already there" and changes nothing.
    assert!(
        !apps
            .create_if_absent(&app(DEFAULT_ORG, "hello"))
            .await
            .unwrap()
    );
    assert!(
        apps.create_if_absent(&app(DEFAULT_ORG, "fresh"))
            .await
            .unwrap()
    );
    assert_eq!(
        apps.require(DEFAULT_ORG, "hello").await.unwrap().revision,
        rev
    );

    let mut a = apps.require(DEFAULT_ORG, "hello").await.unwrap();
    assert_eq!(a.revision, rev);
    a.value.config_count = 1;
    apps.update(&a.value, a.revision).await.unwrap();
    // The same stale revision loses.
    a.value.config_count = 2;
    assert!(matches!(
        apps.update(&a.value, a.revision).await,
        Err(StoreError::Conflict { .. })
    ));

    // modify re-reads and retries: concurrent increments all land.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let apps = apps.clone();
        tasks.push(tokio::spawn(async move {
            apps.modify(DEFAULT_ORG, "hello", |a| {
                a.config_count += 1;
                Ok::<_, ()>(true)
            })
            .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap().unwrap();
    }
    assert_eq!(
        apps.require(DEFAULT_ORG, "hello")
            .await
            .unwrap()
            .value
            .config_count,
        9
    );

    apps.create(&app("other", "hello")).await.unwrap();
    apps.create(&app("other", "second")).await.unwrap();
    let mine = apps.list(DEFAULT_ORG).await.unwrap();
    assert_eq!(mine.len(), 2);
    assert_eq!(apps.list("other").await.unwrap().len(), 2);
    assert!(apps.get("nobody", "hello").await.unwrap().is_none());

    let blob: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    store.put_object("plans", "o.j1", &blob).await.unwrap();
    assert_eq!(
        store.get_object("plans", "o.j1").await.unwrap().unwrap(),
        blob
    );
    assert!(
        store
            .get_object("plans", "o.missing")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.object_exists("plans", "o.j1").await.unwrap());
}

#[tokio::test]
async fn audit_stream_refuses_purge() {
    let nats = NatsServer::start();
    let client = nats.admin().await;
    let js = async_nats::jetstream::new(client);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    store
        .bus()
        .audit(&ferry_model::AuditEvent {
            org: "o".into(),
            at: "now".into(),
            actor: "test".into(),
            action: "app.sync".into(),
            target: "hello".into(),
            detail: serde_json::json!({}),
        })
        .await
        .unwrap();
    // nats-server 2.15 caps a stream at 1000 consumers by default; JOBS needs one per install.
    let mut jobs = js.get_stream("JOBS").await.unwrap();
    assert_eq!(jobs.info().await.unwrap().config.max_consumers, 1_000_000);

    let mut stream = js.get_stream("AUDIT").await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 1);
    assert!(stream.purge().await.is_err(), "AUDIT must refuse purge");
    assert!(
        stream.delete_message(1).await.is_err(),
        "AUDIT must refuse delete"
    );
}

/// `ferry-server` and `ferry-server init` (or replicas) start at the same moment on a fresh hub:
/// none may take a protected stream another is still making for one that was deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_starting_together_on_a_fresh_hub_all_set_it_up() {
    for _hub in 0..6 {
        let nats = NatsServer::start();
        let js = async_nats::jetstream::new(nats.admin().await);
        let starts: Vec<_> = (0..12u64)
            .map(|i| {
                let js = js.clone();
                tokio::spawn(async move {
                    // Staggered, so that some look while another is half-way through.
                    tokio::time::sleep(std::time::Duration::from_micros(700 * i)).await;
                    Store::ensure(js, 1).await.map(|_| ())
                })
            })
            .collect();
        for start in starts {
            let started = start.await.unwrap();
            assert!(started.is_ok(), "{started:?}");
        }
    }
}

/// A record written again and again while it is listed (a runner's heartbeat) is listed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_written_during_a_listing_is_listed_once() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js, 1).await.unwrap();
    let apps = store.repo::<App>();
    for i in 0..20 {
        apps.create(&app(DEFAULT_ORG, &format!("a{i}")))
            .await
            .unwrap();
    }
    let writer = {
        let apps = apps.clone();
        tokio::spawn(async move {
            for n in 0..400u32 {
                let bump = |a: &mut App| {
                    a.config_count = n;
                    Ok::<_, StoreError>(true)
                };
                apps.upsert(DEFAULT_ORG, "a0", || app(DEFAULT_ORG, "a0"), bump)
                    .await
                    .unwrap()
                    .unwrap();
            }
        })
    };
    while !writer.is_finished() {
        let listed = apps.list(DEFAULT_ORG).await.unwrap();
        assert_eq!(
            listed.len(),
            20,
            "{:?}",
            listed.iter().map(|a| &a.name).collect::<Vec<_>>()
        );
    }
}

/// `scan` reads an org's records in one pass: the latest revision of each, none of another
/// org's, none deleted, nothing for an org without records; the same records `list` gives.
#[tokio::test]
async fn a_scan_gives_the_latest_revision_of_each_record_of_one_org() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js, 1).await.unwrap();
    let apps = store.repo::<App>();
    assert!(apps.scan(DEFAULT_ORG).await.unwrap().is_empty());
    for n in 0..50 {
        apps.create(&app(DEFAULT_ORG, &format!("app-{n:02}")))
            .await
            .unwrap();
    }
    apps.create(&app("other", "theirs")).await.unwrap();
    for _ in 0..3 {
        apps.modify(DEFAULT_ORG, "app-07", |a| {
            a.config_count += 1;
            Ok::<_, ()>(true)
        })
        .await
        .unwrap()
        .unwrap();
    }
    apps.delete(DEFAULT_ORG, "app-13").await.unwrap();

    let scanned = apps.scan(DEFAULT_ORG).await.unwrap();
    assert_eq!(scanned.len(), 49);
    assert!(scanned.iter().all(|a| a.org == DEFAULT_ORG));
    assert!(!scanned.iter().any(|a| a.name == "app-13"));
    let seven = scanned.iter().find(|a| a.name == "app-07").unwrap();
    assert_eq!(seven.config_count, 3);
    let listed = apps.list(DEFAULT_ORG).await.unwrap();
    assert_eq!(
        scanned.iter().map(|a| &a.name).collect::<Vec<_>>(),
        listed.iter().map(|a| &a.name).collect::<Vec<_>>()
    );
    assert_eq!(apps.scan("other").await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_job_log_past_the_limit_is_cut_with_a_line_saying_so() {
    use ferry_protocol::messages::{LogBatch, LogLine, LogStream};
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1)
        .await
        .unwrap()
        .with_job_log_limit(2 << 20);
    let (job, _) = ferry_tests::fixtures::plan_job("acme", "prod", "j1");
    // 4 MiB of lines, in batches of 64 lines of 1 KiB.
    for b in 0..64u64 {
        let batch = LogBatch {
            job_id: "j1".into(),
            execution_id: "j1-1".into(),
            first_seq: b * 64,
            lines: (0..64)
                .map(|_| LogLine {
                    at_ms: 0,
                    stream: LogStream::Stdout,
                    text: "x".repeat(1024),
                })
                .collect(),
        };
        js.publish(
            ferry_protocol::subjects::system_log("acme", "prod", "j1"),
            ferry_protocol::encode(&batch).into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    }
    let log = store.job_log(&job).await.unwrap();
    let (last, kept) = log.split_last().unwrap();
    assert_eq!(kept.len(), 2048, "2 MiB of 1 KiB lines");
    assert_eq!(last.stream, "system");
    assert!(last.text.contains("log cut"), "{}", last.text);
    assert_eq!(
        last.seq, 2048,
        "the cut line stands where the first left out was"
    );
}

/// An object write the hub never acknowledges (it went away, as in a failover) fails with
/// NATS's error kept as the source: callers retry NATS errors and drop bad objects, and a plan
/// once taken for a bad object was dropped and its workflow waited for it forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_write_the_hub_never_acknowledges_keeps_the_nats_error() {
    let mut nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js, 1).await.unwrap();
    nats.kill();
    let err = store
        .put_object("plans", "o.j1", b"{}")
        .await
        .expect_err("no hub to take the object");
    match &err {
        StoreError::ObjectNats { bucket, name, .. } => {
            assert_eq!((*bucket, name.as_str()), ("plans", "o.j1"));
        }
        other => panic!("the NATS error was not kept: {other:?}"),
    }
    assert!(std::error::Error::source(&err).is_some(), "{err:?}");
}

/// A hub whose JetStream store is smaller than the streams' caps refuses a stream; the error
/// says that, and what to change, instead of nats-server's "insufficient storage resources".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_store_too_small_for_the_caps_is_named_with_the_fix() {
    let nats = NatsServer::start_with_store("1GB");
    let js = async_nats::jetstream::new(nats.admin().await);
    let Err(err) = Store::ensure(js, 1).await else {
        panic!("a 1 GB store cannot hold the default caps");
    };
    assert!(
        matches!(err, ferry_store::StoreError::StoreTooSmall { .. }),
        "{err:?}"
    );
    let said = err.to_string();
    assert!(said.contains("max_file_store"), "{said}");
    assert!(said.contains("4864 MiB"), "{said}");
    assert!(said.contains("--logs-max-bytes"), "{said}");
}

/// One log batch of `job` (one line, numbered `first`) on the control plane's log subject, whose
/// batches count whatever their execution.
async fn log_batch(js: &async_nats::jetstream::Context, job: &str, first: u64) {
    let subject = ferry_protocol::subjects::system_log("acme", "prod", job);
    log_batch_on(js, subject, job, &format!("{job}-1"), first).await;
}

/// One log batch of `job`'s execution `execution` (one line, numbered `first`) on `subject`.
async fn log_batch_on(
    js: &async_nats::jetstream::Context,
    subject: String,
    job: &str,
    execution: &str,
    first: u64,
) {
    use ferry_protocol::messages::{LogBatch, LogLine, LogStream};
    let batch = LogBatch {
        job_id: job.into(),
        execution_id: execution.into(),
        first_seq: first,
        lines: vec![LogLine {
            at_ms: 0,
            stream: LogStream::Stdout,
            text: format!("line {first}"),
        }],
    };
    js.publish(subject, ferry_protocol::encode(&batch).into())
        .await
        .unwrap()
        .await
        .unwrap();
}

async fn logs_consumers(js: &async_nats::jetstream::Context) -> usize {
    let mut logs = js.get_stream("LOGS").await.unwrap();
    logs.info().await.unwrap().state.consumer_count
}

/// Job logs are read whole and in order from among other jobs' lines (here the control plane's
/// subject, read a message per get; the runner's, read in pages, is the merge test's), and a
/// read leaves nothing at the server: log-ingest archives a hundred jobs a second in a release,
/// and a consumer per read (kept by the server after its last use) reached the stream's limit
/// of a thousand and stalled archiving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_logs_are_read_whole_in_order_and_leave_no_consumer_however_many() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    let (long, _) = ferry_tests::fixtures::plan_job("acme", "prod", "j1");
    let (short, _) = ferry_tests::fixtures::plan_job("acme", "prod", "j2");
    for n in 0..600 {
        log_batch(&js, "j1", n).await;
        if n % 100 == 0 {
            log_batch(&js, "j2", n).await;
        }
    }
    let log = store.job_log(&long).await.unwrap();
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..600).collect::<Vec<_>>(), "every line, in order");
    for _ in 0..1100 {
        assert_eq!(store.job_log(&short).await.unwrap().len(), 6);
    }
    assert_eq!(logs_consumers(&js).await, 0);
}

/// A job's log is its runner's lines and the control plane's, read on their two subjects and
/// merged back into the order the hub stored them, among other jobs' lines, over more than one
/// page of each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_log_merges_the_runners_and_the_control_planes_lines_in_stored_order() {
    use ferry_protocol::subjects;
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    let (mut job, _) = ferry_tests::fixtures::plan_job("acme", "prod", "j1");
    let grant = job
        .claim(
            "prod",
            "r",
            ferry_model::Timestamp::from_ms(0),
            60_000,
            "k3y",
        )
        .unwrap();
    let (runner, control) = (
        subjects::log("acme", "prod", "j1"),
        subjects::system_log("acme", "prod", "j1"),
    );
    let mut sent = Vec::new();
    for n in 0..700 {
        // Runs of each kind, longer than a page (256) of runner lines at the start, and the
        // control plane's line last.
        let by_control = n >= 300 && (n % 7 == 0 || (500..560).contains(&n) || n == 699);
        // The runner names its execution by its token, the control plane by its public id.
        let (subject, execution) = if by_control {
            (&control, "j1-1")
        } else {
            (&runner, grant.execution_id.as_str())
        };
        log_batch_on(&js, subject.clone(), "j1", execution, n).await;
        log_batch(&js, "j2", n).await;
        sent.push(n);
    }
    let log = store.job_log(&job).await.unwrap();
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, sent, "every line of both, in the order stored");
    assert!(log.iter().all(|e| e.execution == "j1-1"), "{:?}", log[0]);
}

/// Where `LOGS` allows no direct reads (a cluster: a replica may not have the newest batch),
/// a job log is read through a consumer, deleted once read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_direct_reads_a_job_log_is_read_through_a_consumer_then_deleted() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    let mut config = js
        .get_stream("LOGS")
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .config
        .clone();
    config.allow_direct = false;
    js.update_stream(config).await.unwrap();
    let (job, _) = ferry_tests::fixtures::plan_job("acme", "prod", "j1");
    for n in 0..300 {
        log_batch(&js, "j1", n).await;
    }
    let log = store.job_log(&job).await.unwrap();
    assert_eq!(log.len(), 300);
    assert_eq!(log.last().map(|e| e.seq), Some(299));
    assert_eq!(logs_consumers(&js).await, 0);
}

/// Messages of different installs are handled at once, each install's in order, and every one
/// is acknowledged: one install's slow message does not hold up the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_of_different_installs_are_handled_at_once_and_each_installs_in_order() {
    use ferry_protocol::messages::LogBatch;
    use ferry_store::{Handled, consume_messages_by_install};
    use std::sync::{Arc, Mutex};
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    js.create_stream(async_nats::jetstream::stream::Config {
        name: "T".into(),
        subjects: vec!["ferry.t.>".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    let publish = |install: String, n: u64| {
        let js = js.clone();
        async move {
            let batch = LogBatch {
                job_id: "j".into(),
                execution_id: "e".into(),
                first_seq: n,
                lines: vec![],
            };
            let subject = format!("ferry.t.acme.{install}.x");
            let payload = ferry_protocol::encode(&batch).into();
            js.publish(subject, payload).await.unwrap().await.unwrap();
        }
    };
    for n in 0..5 {
        publish("a".into(), n).await;
    }
    for i in 0..10 {
        publish(format!("b{i}"), 0).await;
    }
    let seen: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let others = Arc::new(tokio::sync::Notify::new());
    let consumer = store.bus().durable("T", "lanes", vec![]).await.unwrap();
    let handler = {
        let (seen, others) = (seen.clone(), others.clone());
        move |subject: String, b: LogBatch| {
            let (seen, others) = (seen.clone(), others.clone());
            async move {
                let install = subject.split('.').nth(3).unwrap_or_default().to_string();
                if install == "a" && b.first_seq == 0 {
                    // Held until another install's message was handled meanwhile.
                    let waited =
                        tokio::time::timeout(std::time::Duration::from_secs(10), others.notified());
                    if waited.await.is_err() {
                        return Handled::Reject("no other install was handled meanwhile".into());
                    }
                } else if install != "a" {
                    others.notify_one();
                }
                seen.lock().unwrap().push((install, b.first_seq));
                Handled::Done
            }
        }
    };
    let running = tokio::spawn(consume_messages_by_install(consumer, "lanes", 16, handler));
    for _ in 0..200 {
        if seen.lock().unwrap().len() == 15 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let seen = seen.lock().unwrap().clone();
    let of_a: Vec<u64> = seen
        .iter()
        .filter(|(i, _)| i == "a")
        .map(|(_, n)| *n)
        .collect();
    assert_eq!(of_a, vec![0, 1, 2, 3, 4], "{seen:?}");
    assert_ne!(seen[0].0, "a", "another install went first: {seen:?}");
    assert_eq!(seen.len(), 15);
    let mut consumer = store.bus().durable("T", "lanes", vec![]).await.unwrap();
    for _ in 0..100 {
        let info = consumer.info().await.unwrap();
        if info.num_ack_pending == 0 && info.num_pending == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let info = consumer.info().await.unwrap();
    assert_eq!((info.num_ack_pending, info.num_pending), (0, 0));
    running.abort();
}

/// A listing leaves nothing at the server: a thousand listings within the time the server keeps
/// an unused consumer (a dashboard's polls) once reached the bucket's consumer limit, and every
/// listing failed until they went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_leave_no_consumer_however_many() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    let apps = store.repo::<App>();
    apps.create(&app(DEFAULT_ORG, "a")).await.unwrap();
    for _ in 0..1100 {
        assert_eq!(apps.scan(DEFAULT_ORG).await.unwrap().len(), 1);
    }
    let mut stream = js.get_stream("KV_apps").await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.consumer_count, 0);
}

/// A change started from the copy last written (no read) is kept only when the store takes its
/// compare-and-swap: a copy someone else has changed since costs a lost swap, and a change the
/// stale copy finds already made, or refuses, is decided again on a fresh read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_from_the_copy_last_written_is_never_lost_to_a_stale_copy() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js, 1).await.unwrap();
    let apps = store.repo::<App>();
    let written = LastWritten::<App>::new(16);
    apps.create(&app(DEFAULT_ORG, "hello")).await.unwrap();
    let set = |n: u32| {
        move |a: &mut App| -> Result<bool, ()> {
            let changed = a.config_count != n;
            a.config_count = n;
            Ok(changed)
        }
    };
    let count = || async {
        let a = apps.require(DEFAULT_ORG, "hello").await.unwrap();
        a.value.config_count
    };
    // Read once, then kept: the copy is what was written.
    let a = apps
        .modify_written(&written, DEFAULT_ORG, "hello", set(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.config_count, 1);
    let copy = written.get(DEFAULT_ORG, "hello").unwrap();
    assert_eq!(copy.value.config_count, 1);
    // Written just now, as far as this process knows; what it never wrote, never.
    let minute = std::time::Duration::from_secs(60);
    assert!(written.written_within(DEFAULT_ORG, "hello", minute));
    assert!(!written.written_within(DEFAULT_ORG, "hello", std::time::Duration::ZERO));
    assert!(!written.written_within(DEFAULT_ORG, "other", minute));
    // Another writer moves the record on; the copy is stale.
    apps.modify(DEFAULT_ORG, "hello", set(2))
        .await
        .unwrap()
        .unwrap();
    // From the stale copy, setting 3 loses its swap and is made on a fresh read.
    apps.modify_written(&written, DEFAULT_ORG, "hello", set(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(count().await, 3);
    // The copy says 3 already; another writer sets 4. Setting 3 again is no change on the copy,
    // but is one on the record: it is made.
    apps.modify(DEFAULT_ORG, "hello", set(4))
        .await
        .unwrap()
        .unwrap();
    apps.modify_written(&written, DEFAULT_ORG, "hello", set(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(count().await, 3);
    // A refusal on a stale copy is decided again on the record: allowed only from 5.
    apps.modify(DEFAULT_ORG, "hello", set(5))
        .await
        .unwrap()
        .unwrap();
    let from_five = |a: &mut App| -> Result<bool, ()> {
        if a.config_count != 5 {
            return Err(());
        }
        a.config_count = 6;
        Ok(true)
    };
    let r = apps
        .modify_written(&written, DEFAULT_ORG, "hello", from_five)
        .await
        .unwrap();
    assert_eq!(r.map(|a| a.config_count), Ok(6));
    assert_eq!(
        written
            .get(DEFAULT_ORG, "hello")
            .unwrap()
            .value
            .config_count,
        6
    );
}

/// A succeeded build can no longer change: a process reads it from the hub once and answers
/// later reads from memory (a rewrite behind its back, which nothing in Ferry makes, stays
/// unseen), where a build still building is read afresh every time.
#[tokio::test]
async fn a_settled_record_is_read_from_the_hub_once() {
    use ferry_model::{Build, BuildStatus, Timestamp};
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    // Another process: its own memory.
    let other = Store::open(js).await.unwrap();
    let (builds, theirs) = (store.repo::<Build>(), other.repo::<Build>());
    let b = Build::requested(
        DEFAULT_ORG,
        "app",
        "web",
        "c1",
        "sha256:0123456789abcdef0",
        Timestamp::now(),
    );
    let rev = builds.create(&b).await.unwrap();
    let read = builds.require(DEFAULT_ORG, &b.id).await.unwrap();
    assert_eq!(read.value.status, BuildStatus::Building);

    // Still building, so read again: the other process's change is seen.
    let mut done = b.clone();
    done.status = BuildStatus::Succeeded;
    done.digest = Some("sha256:one".into());
    let rev = theirs.update(&done, rev).await.unwrap();
    let read = builds.require(DEFAULT_ORG, &b.id).await.unwrap();
    assert_eq!(read.value.digest.as_deref(), Some("sha256:one"));
    assert_eq!(read.revision, rev);

    // Settled: kept, and answered from memory from now on.
    let mut rewritten = done.clone();
    rewritten.digest = Some("sha256:two".into());
    theirs.update(&rewritten, rev).await.unwrap();
    let read = builds.require(DEFAULT_ORG, &b.id).await.unwrap();
    assert_eq!(read.value.digest.as_deref(), Some("sha256:one"));
    assert_eq!(read.revision, rev);
    // The other process had not read it settled: it reads the hub's.
    let read = theirs.require(DEFAULT_ORG, &b.id).await.unwrap();
    assert_eq!(read.value.digest.as_deref(), Some("sha256:two"));

    // Deleted through this process: forgotten.
    builds.delete(DEFAULT_ORG, &b.id).await.unwrap();
    assert!(builds.get(DEFAULT_ORG, &b.id).await.unwrap().is_none());
}

/// A sweep's listing: every org's records in the order of their keys, the latest revision of
/// each, none deleted, in one pass that leaves nothing at the server.
#[tokio::test]
async fn a_sweep_lists_every_orgs_latest_records_and_skips_the_deleted() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    let apps = store.repo::<App>();
    assert!(apps.list_all().await.unwrap().is_empty());
    for (org, name) in [
        ("zeta", "a"),
        (DEFAULT_ORG, "b"),
        (DEFAULT_ORG, "a"),
        ("alpha", "c"),
    ] {
        apps.create(&app(org, name)).await.unwrap();
    }
    let rev = apps.require("alpha", "c").await.unwrap().revision;
    let mut moved = app("alpha", "c");
    moved.config_count = 7;
    apps.update(&moved, rev).await.unwrap();
    apps.delete(DEFAULT_ORG, "b").await.unwrap();
    let listed: Vec<(String, String, u32)> = apps
        .list_all()
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.org, a.name, a.config_count))
        .collect();
    let want = [("alpha", "c", 7), (DEFAULT_ORG, "a", 0), ("zeta", "a", 0)];
    let want: Vec<(String, String, u32)> = want
        .iter()
        .map(|(o, n, c)| (o.to_string(), n.to_string(), *c))
        .collect();
    assert_eq!(listed, want);
    let mut stream = js.get_stream("KV_apps").await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.consumer_count, 0);
}

/// An open mark erased at its work's end leaves nothing in its bucket's stream: a sweep reading
/// the bucket whole meets only what is open, not every workflow ever run (a deleted key keeps a
/// marker), and the id can be marked again.
#[tokio::test]
async fn an_erased_mark_leaves_no_trace_for_a_sweep() {
    use ferry_model::OpenWorkflow;
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js.clone(), 1).await.unwrap();
    let marks = store.repo::<OpenWorkflow>();
    let mark = |id: &str| OpenWorkflow {
        org: DEFAULT_ORG.into(),
        id: id.into(),
        install: "i".into(),
    };
    for id in ["w1", "w2", "w3"] {
        marks.create(&mark(id)).await.unwrap();
    }
    marks.erase(DEFAULT_ORG, "w1").await.unwrap();
    marks.delete(DEFAULT_ORG, "w2").await.unwrap();
    let open: Vec<String> = marks
        .list_all()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(open, ["w3"]);
    assert!(marks.get(DEFAULT_ORG, "w1").await.unwrap().is_none());
    // What the stream still holds: the deleted key's marker, nothing of the erased one.
    let stream = js.get_stream("KV_open_workflows").await.unwrap();
    let subjects: Vec<String> = {
        use futures_util::TryStreamExt;
        let mut found = stream
            .info_with_subjects("$KV.open_workflows.>")
            .await
            .unwrap();
        let mut all = Vec::new();
        while let Some((subject, _)) = found.try_next().await.unwrap() {
            all.push(subject);
        }
        all.sort();
        all
    };
    assert_eq!(
        subjects,
        [
            "$KV.open_workflows.default.w2",
            "$KV.open_workflows.default.w3"
        ]
    );
    marks.create(&mark("w1")).await.unwrap();
}

/// A record rewritten while a scan walks the bucket is still in the scan, once: a listing that
/// passes over a busy install made `ferry dev` take it for deleted and forget its runner.
#[tokio::test]
async fn a_record_rewritten_during_a_scan_is_in_it_once() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let store = Store::ensure(js, 1).await.unwrap();
    let apps = store.repo::<App>();
    for n in 0..20 {
        apps.create(&app(DEFAULT_ORG, &format!("app-{n:02}")))
            .await
            .unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (apps, stop) = (store.repo::<App>(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for busy in ["app-00", "app-10", "app-19"] {
                    apps.modify(DEFAULT_ORG, busy, |a| {
                        a.config_count += 1;
                        Ok::<_, ()>(true)
                    })
                    .await
                    .unwrap()
                    .unwrap();
                }
            }
        })
    };
    for round in 0..300 {
        let scanned = apps.scan(DEFAULT_ORG).await.unwrap();
        let names: Vec<&str> = scanned.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names.len(), 20, "round {round}: {names:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.await.unwrap();
}
