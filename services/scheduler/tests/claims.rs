//! Claims against the real scheduler and a real hub: the doorbell rings as the job's record is
//! written (not after), so a claim may reach a scheduler before the record does; a decided claim
//! retires its job's offers, and only its own install's.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream::DirectGetErrorKind};
use ferry_model as m;
use ferry_protocol::messages::{ClaimReply, ClaimRequest};
use ferry_protocol::{decode, encode, resources, subjects};
use ferry_tests::NatsServer;
use ferry_tests::fixtures::plan_job;

const ORG: &str = "acme";

/// A hub with the streams made, and the real scheduler running as its own NATS user; returns it
/// and a services connection that plays the runners.
async fn hub() -> (NatsServer, ferry_scheduler::Scheduler, async_nats::Client) {
    let nats = NatsServer::start();
    let setup = nats.connect_as(ferry_pki::hub::SERVICES_USER).await;
    ferry_store::Store::ensure(jetstream::new(setup.clone()), 1)
        .await
        .expect("streams");
    let client = nats.connect_as("scheduler").await;
    let store = ferry_store::Store::open(jetstream::new(client.clone()))
        .await
        .expect("store");
    let scheduler = ferry_scheduler::Scheduler::new(client, store);
    tokio::spawn(scheduler.clone().run());
    (nats, scheduler, setup)
}

async fn claim(client: &async_nats::Client, install: &str, id: &str) -> ClaimReply {
    let req = ClaimRequest {
        job_id: id.into(),
        runner_id: format!("runner-{install}"),
    };
    // The scheduler answers claims once it runs; until then a request finds no responder.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client
            .request(subjects::claim(ORG, install), encode(&req).into())
            .await
        {
            Ok(reply) => return decode(&reply.payload).expect("claim reply"),
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("claim of {id} not answered: {e}"),
        }
    }
}

/// Whether `JOBS` still holds an offer of the job.
async fn offered(client: &async_nats::Client, install: &str, id: &str) -> bool {
    let stream = jetstream::new(client.clone())
        .get_stream_no_info(resources::JOBS.name)
        .await
        .expect("JOBS");
    match stream
        .direct_get_last_for_subject(subjects::job(ORG, install, id))
        .await
    {
        Ok(_) => true,
        Err(e) if e.kind() == DirectGetErrorKind::NotFound => false,
        Err(e) => panic!("reading JOBS: {e}"),
    }
}

async fn wait_until_retired(client: &async_nats::Client, install: &str, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while offered(client, install, id).await {
        assert!(
            Instant::now() < deadline,
            "the offer of {id} is still in JOBS 5 s after its claim was decided"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_claim_that_overtakes_its_jobs_record_is_granted_once_the_record_is_written() {
    let (_nats, _scheduler, client) = hub().await;
    // Wait for the scheduler to answer at all, with a claim of a job that never exists.
    let ClaimReply::Refused { .. } = claim(&client, "web", "never").await else {
        panic!("a claim of a job that does not exist was granted");
    };
    let id = m::new_id();
    let asking = {
        let (client, id) = (client.clone(), id.clone());
        tokio::spawn(async move { claim(&client, "web", &id).await })
    };
    // The claim reaches the scheduler first, as it can when the doorbell outruns the record's write
    // (another replica took the claim); the record follows a moment later.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let (mut j, _) = plan_job(ORG, "web", &id);
    assert!(j.offered(m::Timestamp::now()));
    let store = ferry_store::Store::open(jetstream::new(client.clone()))
        .await
        .expect("store");
    store.repo::<m::Job>().create(&j).await.expect("job record");
    match asking.await.expect("claim task") {
        ClaimReply::Granted { attempt, .. } => assert_eq!(attempt, 1),
        other => panic!("the claim was not granted: {other:?}"),
    }
    let stored = store
        .repo::<m::Job>()
        .get(ORG, &id)
        .await
        .expect("read")
        .expect("record");
    assert_eq!(stored.value.status, m::JobStatus::InProgress);
}

#[tokio::test]
async fn a_decided_claim_retires_its_jobs_offers_and_another_installs_claim_retires_none() {
    let (_nats, scheduler, client) = hub().await;
    let id = m::new_id();
    let (job, offer) = plan_job(ORG, "web", &id);
    scheduler.offer_job(job, offer).await.expect("offered");
    assert!(offered(&client, "web", &id).await);

    // Another install names the job: refused, and the offer stays.
    match claim(&client, "db", &id).await {
        ClaimReply::Refused { reason } => assert!(reason.contains("not a job of install db")),
        other => panic!("another install's claim was answered {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        offered(&client, "web", &id).await,
        "another install's claim retired the offer"
    );

    let ClaimReply::Granted { .. } = claim(&client, "web", &id).await else {
        panic!("the install's own claim was not granted");
    };
    wait_until_retired(&client, "web", &id).await;

    // A second claim of the job is refused.
    let ClaimReply::Refused { .. } = claim(&client, "web", &id).await else {
        panic!("a claimed job was granted twice");
    };
}

/// A result sent in chunks past the scheduler's bound (64 MiB) fails its job with the reason,
/// rather than being gathered into the scheduler's memory.
#[tokio::test]
async fn a_result_in_chunks_past_the_bound_fails_its_job() {
    use ferry_protocol::messages::{EventBody, JobEvent, JobResult, Offloaded, Outcome};
    let (_nats, scheduler, client) = hub().await;
    let id = m::new_id();
    let (job, offer) = plan_job(ORG, "web", &id);
    scheduler.offer_job(job, offer).await.expect("offered");
    let ClaimReply::Granted { execution_id, .. } = claim(&client, "web", &id).await else {
        panic!("not granted");
    };
    let js = jetstream::new(client.clone());
    let chunk = vec![7u8; 7 << 20];
    for _ in 0..10 {
        js.publish(
            subjects::result_chunks(ORG, "web", &execution_id),
            chunk.clone().into(),
        )
        .await
        .expect("chunk")
        .await
        .expect("stored");
    }
    let finished = JobEvent {
        job_id: id.clone(),
        execution_id: execution_id.clone(),
        seq: 1,
        at_ms: 0,
        body: EventBody::Finished(Box::new(JobResult {
            status: Outcome::Succeeded,
            outputs_json: "{}".into(),
            plan: None,
            error: None,
            sensitive_outputs: vec![],
            offloaded: Some(Offloaded {
                chunks: 10,
                digest: format!("sha256:{}", "0".repeat(64)),
            }),
            ran_as: None,
            timing: Default::default(),
        })),
    };
    js.publish(subjects::event(ORG, "web", &id), encode(&finished).into())
        .await
        .expect("event")
        .await
        .expect("stored");
    let store = ferry_store::Store::open(jetstream::new(client.clone()))
        .await
        .expect("store");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let j = store
            .repo::<m::Job>()
            .require(ORG, &id)
            .await
            .expect("job")
            .value;
        if j.status.is_terminal() {
            assert_eq!(j.status, m::JobStatus::Failed, "{j:?}");
            let why = j.error.unwrap_or_default();
            assert!(why.contains("more than 64 MiB"), "{why}");
            break;
        }
        assert!(Instant::now() < deadline, "the job never ended: {j:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
