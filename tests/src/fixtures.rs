//! A job as the scheduler makes one, for the tests and the loadtest that drive the scheduler
//! in-process: the plan of a script component, with its offer.

use ferry_model as m;
use ferry_protocol::messages::{ComponentJob, ComponentKind, JobOffer, JobSpec, Timeouts};

/// Job `id` of install `install` (workflow `wf`, step 0): its record, queued, and its offer.
pub fn plan_job(org: &str, install: &str, id: &str) -> (m::Job, JobOffer) {
    let job = m::Job::queued(
        id.into(),
        org.into(),
        install.into(),
        "wf".into(),
        0,
        m::JobKind::Plan,
        "web".into(),
        m::Timestamp::from_ms(1_767_225_600_000),
    );
    let offer = JobOffer {
        job_id: id.into(),
        org: org.into(),
        install: install.into(),
        workflow_id: "wf".into(),
        spec: JobSpec::Plan(ComponentJob {
            component: "web".into(),
            kind: ComponentKind::Script,
            artifact_digest: format!("sha256:{}", "0".repeat(64)),
            vars: vec![("region".into(), "eu-west-1".into())],
            env: vec![("GREETING".into(), "hello".into())],
            applied_digest: None,
            redact: vec![],
            settings: Default::default(),
            timeout_secs: None,
            cluster: None,
            policies: vec![],
            run_as: None,
            secret_syncs: vec![],
        }),
        timeouts: Timeouts::default(),
    };
    (job, offer)
}
