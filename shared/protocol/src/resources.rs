//! The JetStream streams, KV buckets and object stores of the hub, as plain data. `ferry-store` turns
//! them into async-nats configs and creates them idempotently at start-up.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    Limits,
    /// A message is removed once acknowledged, or deleted. Job offers use it: no consumer reads
    /// them; runners read their install's offers by direct get, and the scheduler deletes an offer
    /// once its claim is decided.
    WorkQueue,
}

#[derive(Debug, Clone)]
pub struct StreamDef {
    pub name: &'static str,
    pub subjects: &'static [&'static str],
    pub retention: Retention,
    /// 0 = keep forever.
    pub max_age_secs: u64,
    pub duplicate_window_secs: u64,
    pub deny_delete: bool,
    pub deny_purge: bool,
    /// Consumers the stream allows; 0 = the server's default (1000 per stream since nats-server 2.15).
    pub max_consumers: i32,
    /// Whether messages can be read by sequence or subject without a consumer (direct get).
    pub direct: Direct,
    /// The stream's default cap in bytes (0 = none). Every stream installs feed has one, so
    /// that what installs send can never fill the hub's store: the control plane's records
    /// (KV buckets, `AUDIT`) live in the same store, and would fail with it. `ferry-server`
    /// takes another value per stream (`--logs-max-bytes`, ...; docs/security.md).
    pub max_bytes: i64,
    /// The largest message the stream takes (0 = the server's `max_payload`).
    pub max_msg_size: i32,
}

/// Whether a stream's messages can be read without a consumer (JetStream's direct get: a
/// request answered from the stream's index, nothing kept at the server after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direct {
    No,
    /// Whatever the replicas: any replica answers, and a reader that misses the newest
    /// messages reads again (offers, result chunks).
    Always,
    /// On a single node only. A reader of this stream needs every message stored so far (a
    /// finished job's whole log), and a replica that has not applied the newest yet would answer
    /// without them: on a cluster the stream is read through a consumer, which the leader serves.
    SingleNode,
}

impl Direct {
    /// Whether a stream of `replicas` replicas allows direct gets.
    pub fn allowed(self, replicas: usize) -> bool {
        match self {
            Direct::No => false,
            Direct::Always => true,
            Direct::SingleNode => replicas <= 1,
        }
    }
}

impl StreamDef {
    /// Whether installs publish into this stream (its subjects are under `ferry.rx.`): such a
    /// stream is capped, and drops its oldest messages when full rather than refusing new
    /// ones, so a full stream stops no other install's newest work.
    pub fn install_fed(&self) -> bool {
        self.subjects.iter().any(|s| s.starts_with("ferry.rx."))
    }
}

const DAY: u64 = 24 * 3600;
const MIB: i64 = 1 << 20;

pub const JOBS: StreamDef = StreamDef {
    name: "JOBS",
    subjects: &["ferry.jobs.>"],
    retention: Retention::WorkQueue,
    max_age_secs: 7 * DAY,
    duplicate_window_secs: 600,
    deny_delete: false,
    deny_purge: false,
    // No consumers read it any more: runners read offers by direct get (`direct`), so the
    // hub holds no per-install state for dispatch. The ceiling set for the earlier one consumer per
    // install stays (a stream's consumer limit cannot be changed once set).
    max_consumers: 1_000_000,
    direct: Direct::Always,
    max_bytes: 0,
    max_msg_size: 0,
};

pub const JOB_EVENTS: StreamDef = StreamDef {
    name: "JOB_EVENTS",
    subjects: &["ferry.rx.*.*.event.*"],
    retention: Retention::Limits,
    max_age_secs: 7 * DAY,
    duplicate_window_secs: 600,
    deny_delete: false,
    deny_purge: false,
    max_consumers: 0,
    direct: Direct::No,
    max_bytes: 512 * MIB,
    max_msg_size: 0,
};

pub const LOGS: StreamDef = StreamDef {
    name: "LOGS",
    // The runners' lines, and the control plane's own (`subjects::system_log`).
    subjects: &["ferry.rx.*.*.log.*", "ferry.sys.*.*.log.*"],
    retention: Retention::Limits,
    max_age_secs: 7 * DAY,
    duplicate_window_secs: 120,
    deny_delete: false,
    deny_purge: false,
    max_consumers: 0,
    direct: Direct::SingleNode,
    max_bytes: 2048 * MIB,
    max_msg_size: 1 << 20,
};

pub const METRICS: StreamDef = StreamDef {
    name: "METRICS",
    subjects: &["ferry.rx.*.*.metrics"],
    retention: Retention::Limits,
    max_age_secs: 3600,
    duplicate_window_secs: 60,
    deny_delete: false,
    deny_purge: false,
    max_consumers: 0,
    direct: Direct::No,
    max_bytes: 256 * MIB,
    max_msg_size: 256 * 1024,
};

pub const CONTROL: StreamDef = StreamDef {
    name: "CONTROL",
    subjects: &["ferry.ctl.>"],
    retention: Retention::Limits,
    max_age_secs: 7 * DAY,
    duplicate_window_secs: 600,
    deny_delete: false,
    deny_purge: false,
    max_consumers: 0,
    direct: Direct::No,
    max_bytes: 0,
    max_msg_size: 0,
};

pub const AUDIT: StreamDef = StreamDef {
    name: "AUDIT",
    subjects: &["ferry.audit.>"],
    retention: Retention::Limits,
    max_age_secs: 0,
    duplicate_window_secs: 120,
    deny_delete: true,
    deny_purge: true,
    max_consumers: 0,
    direct: Direct::No,
    max_bytes: 0,
    max_msg_size: 0,
};

/// Results too large for one message, in chunks (`messages::Offloaded`); the scheduler reads
/// them by direct get and purges an execution's subject once the result is recorded.
pub const RESULTS: StreamDef = StreamDef {
    name: "RESULTS",
    subjects: &["ferry.rx.*.*.result.*"],
    retention: Retention::Limits,
    max_age_secs: DAY,
    duplicate_window_secs: 600,
    deny_delete: false,
    deny_purge: false,
    max_consumers: 0,
    direct: Direct::Always,
    max_bytes: 1024 * MIB,
    max_msg_size: 0,
};

pub const STREAMS: &[StreamDef] = &[JOBS, JOB_EVENTS, LOGS, METRICS, CONTROL, AUDIT, RESULTS];

/// KV buckets of record. Every write is a compare-and-swap on the revision it read.
pub mod buckets {
    pub const ORGS: &str = "orgs";
    pub const TOKENS: &str = "tokens";
    /// Runners' one-time bootstrap tokens.
    pub const BOOTSTRAP_TOKENS: &str = "bootstrap_tokens";
    /// Install certificates issued, by `<org>.<serial>`, with their revocation.
    pub const CERTIFICATES: &str = "certificates";
    /// Each install's runner access (revoked or not, and its epoch), by `<org>.<install>`.
    pub const RUNNER_ACCESS: &str = "runner_access";
    pub const APPS: &str = "apps";
    pub const APP_CONFIGS: &str = "app_configs";
    pub const BUILDS: &str = "builds";
    pub const INSTALLS: &str = "installs";
    pub const WORKFLOWS: &str = "workflows";
    /// One small record per workflow not finished yet: what the reconcile pass reads, so that its
    /// cost follows the unfinished work, not the history.
    pub const OPEN_WORKFLOWS: &str = "open_workflows";
    pub const JOBS: &str = "jobs";
    pub const APPROVALS: &str = "approvals";
    pub const RUNNERS: &str = "runners";
    pub const RELEASES: &str = "releases";
    /// One small record per release not finished: what the scheduler's sweep reads.
    pub const OPEN_RELEASES: &str = "open_releases";
    /// When each scheduled (cron) action of an install fires next, by `<org>.<install>.<action>`.
    pub const CRON_MARKS: &str = "cron_marks";
    /// Break-glass grants made through the API, by `<org>.<install>.<role>`: what the scheduler
    /// reads to see them end, rather than every install.
    pub const GRANT_MARKS: &str = "grant_marks";
    /// Dashboard sign-ins, by `<org>.<hash of the cookie's secret>` (`DashboardSession`).
    pub const SESSIONS: &str = "sessions";

    pub const ALL: &[&str] = &[
        ORGS,
        TOKENS,
        BOOTSTRAP_TOKENS,
        CERTIFICATES,
        RUNNER_ACCESS,
        APPS,
        APP_CONFIGS,
        BUILDS,
        INSTALLS,
        WORKFLOWS,
        OPEN_WORKFLOWS,
        JOBS,
        APPROVALS,
        RUNNERS,
        RELEASES,
        OPEN_RELEASES,
        CRON_MARKS,
        GRANT_MARKS,
        SESSIONS,
    ];
    pub const HISTORY: i64 = 5;
}

/// Object stores for blobs too large for KV values.
pub mod objects {
    /// Uploaded app package files, one bundle per config version.
    pub const APP_SOURCES: &str = "app_sources";
    /// The vendor artifact store of the embedded default: OCI blobs by digest.
    pub const ARTIFACTS: &str = "artifacts";
    /// Plans awaiting or past approval, by job id.
    pub const PLANS: &str = "plans";
    /// Complete job logs archived by log-ingest, by `<org>.<job>`.
    pub const JOB_LOGS: &str = "job_logs";

    pub const ALL: &[&str] = &[APP_SOURCES, ARTIFACTS, PLANS, JOB_LOGS];
    /// Stores whose objects are named by their content's digest: what a name holds never
    /// changes, so a read may be kept (`ferry_store::Recent`).
    pub const IMMUTABLE: &[&str] = &[APP_SOURCES, ARTIFACTS];

    /// A plan job's plan as structured JSON in `PLANS` (when its plugin gives one).
    pub fn plan_json(org: &str, job_id: &str) -> String {
        format!("{org}.{job_id}.json")
    }
}

/// Durable consumer names. One per service and purpose, shared by all replicas of that service.
pub mod consumers {
    pub const SCHEDULER_CONTROL: &str = "scheduler-control";
    pub const SCHEDULER_EVENTS: &str = "scheduler-events";
    pub const BUILD_CONTROL: &str = "build-control";
    pub const APPROVAL_CONTROL: &str = "approval-control";
    pub const LOG_INGEST_EVENTS: &str = "log-ingest-events";
}

/// Changes to the records people watch, in one ordered stream per hub. Nobody publishes to it:
/// nats-server copies every write of the [`SOURCES`](events::SOURCES) buckets into it (stream
/// sourcing), so no service can forget an event, and a change and its event cannot part on a
/// crash. The API's `GET /v1/events` reads it, filtered to the caller's org, and a client resumes
/// after a dropped connection from the stream sequence it saw last (`Last-Event-ID`).
pub mod events {
    use super::buckets;

    pub const STREAM: &str = "EVENTS";
    /// The buckets whose changes are events, each an event kind (see `ferry_model::events`).
    pub const SOURCES: &[&str] = &[
        buckets::INSTALLS,
        buckets::WORKFLOWS,
        buckets::JOBS,
        buckets::APPROVALS,
        buckets::RELEASES,
    ];
    /// How long a client may be away and still resume.
    pub const MAX_AGE_SECS: u64 = super::DAY;
    /// A cap on the stream, whatever the rate of change.
    pub const MAX_BYTES: i64 = 1 << 30;

    /// The subjects of one org's events: a record of bucket `b` keyed `<org>.<id>` is written on
    /// `$KV.<b>.<org>.<id>`, and keeps that subject when sourced.
    pub fn org_filter(org: &str) -> String {
        format!("$KV.*.{org}.>")
    }
}
