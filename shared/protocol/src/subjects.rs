//! Subject names. Org and install sit at fixed token positions (`ferry.<kind>.<org>.<install>...`) so
//! that NATS permissions, subject-mapping templates and partitioning can all key on them.

/// Checks that a name can be used as one subject token (and one KV key segment): lowercase ASCII
/// letters, digits and `-`, 1 to 63 characters, starting with a letter or digit.
pub fn is_valid_token(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

pub fn job(org: &str, install: &str, job: &str) -> String {
    format!("ferry.jobs.{org}.{install}.{job}")
}

/// Filter for all job offers of one install.
pub fn jobs_of_install(org: &str, install: &str) -> String {
    format!("ferry.jobs.{org}.{install}.*")
}

/// What the control plane pushes to an install's runners (core NATS), all under
/// `ferry.push.<org>.<install>.`: the runner holds one subscription for them ([`pushes`]).
pub fn pushes(org: &str, install: &str) -> String {
    format!("ferry.push.{org}.{install}.>")
}

/// The doorbell: a new offer, carried whole.
pub fn wake(org: &str, install: &str) -> String {
    format!("ferry.push.{org}.{install}.wake")
}

/// A request to stop a job.
pub fn cancel(org: &str, install: &str, job: &str) -> String {
    format!("ferry.push.{org}.{install}.cancel.{job}")
}

/// One of [`pushes`], read from its subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Push<'a> {
    Wake,
    Cancel { job: &'a str },
}

/// The push a subject under [`pushes`] is, if it is one.
pub fn push_of(subject: &str) -> Option<Push<'_>> {
    let mut parts = subject.strip_prefix("ferry.push.")?.splitn(4, '.');
    let (_org, _install) = (parts.next()?, parts.next()?);
    match (parts.next()?, parts.next()) {
        ("wake", None) => Some(Push::Wake),
        ("cancel", Some(job)) if !job.is_empty() && !job.contains('.') => {
            Some(Push::Cancel { job })
        }
        _ => None,
    }
}

pub fn event(org: &str, install: &str, job: &str) -> String {
    format!("ferry.rx.{org}.{install}.event.{job}")
}

pub fn log(org: &str, install: &str, job: &str) -> String {
    format!("ferry.rx.{org}.{install}.log.{job}")
}

/// Lines the control plane itself adds to a job's log (a lost lease), in stream `LOGS` beside the
/// runner's. No install may publish under `ferry.sys.>`, so a reader takes these without an
/// execution's token.
pub fn system_log(org: &str, install: &str, job: &str) -> String {
    format!("ferry.sys.{org}.{install}.log.{job}")
}

/// Every line of a job's log in stream `LOGS`, its runners' ([`log`]) and the control plane's
/// ([`system_log`]), as one filter, for a consumer (a log followed live, or read where direct
/// gets are off): two filter subjects made the server match message by message from the
/// stream's start (`loadtest release` saw a quarter of the hub's CPU in it). A whole log read by
/// direct gets asks for each literal subject instead: on a wildcard, a direct get still matches
/// every message of a block where each subject has few (`ferry_store`'s `logs.rs`).
pub fn job_log_filter(org: &str, install: &str, job: &str) -> String {
    format!("ferry.*.{org}.{install}.log.{job}")
}

/// The JetStream de-duplication id (`Nats-Msg-Id`) of message `local` of install `install`.
/// JetStream de-duplicates across a whole stream, so every id an install's runner sends is
/// namespaced by its org and install; `local` starts with the execution's token, which only the
/// granted runner knows (see `ferry_model::execution_token`): no install can pre-empt another's
/// message, nor another execution's of its own.
pub fn msg_id(org: &str, install: &str, local: &str) -> String {
    format!("{org}.{install}.{local}")
}

pub fn heartbeat(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.hb")
}

/// The install stack's status and outputs, as the runner reads them (`StackReport`).
pub fn stack(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.stack")
}

pub fn metrics(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.metrics")
}

pub fn claim(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.claim")
}

pub fn lease(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.lease")
}

/// A runner's request for its install's next offer (see `messages::OfferQuery`).
pub fn offers(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.offers")
}

/// A runner's request for artifact bytes (see `messages::ArtifactRead`).
pub fn artifact(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.artifact")
}

/// The chunks of an execution's offloaded result (stream `RESULTS`).
pub fn result_chunks(org: &str, install: &str, execution: &str) -> String {
    format!("ferry.rx.{org}.{install}.result.{execution}")
}

/// A runner's certificate renewal (see `messages::RenewRequest`).
pub fn renew(org: &str, install: &str) -> String {
    format!("ferry.rx.{org}.{install}.renew")
}

/// Every install's certificate renewals.
pub const RENEW_ALL: &str = "ferry.rx.*.*.renew";

/// A renewal of certificate `serial` (lowercase hex) of `install`: the hub lets a connection
/// publish here only for the serial of the certificate it presented
/// (`permissions::install_certificate`), so the renewal handler knows which certificate asks,
/// and refuses one that has most of its life left.
pub fn renew_certificate(org: &str, install: &str, serial: &str) -> String {
    format!("ferry.renew.{org}.{install}.{serial}")
}

/// Every renewal naming the certificate that asks.
pub const RENEW_CERTIFICATE_ALL: &str = "ferry.renew.*.*.*";

/// Every install's offer queries.
pub const OFFERS_ALL: &str = "ferry.rx.*.*.offers";
/// Every install's artifact reads.
pub const ARTIFACT_ALL: &str = "ferry.rx.*.*.artifact";

/// The inbox prefix of an install's connections. Replies to a runner's requests go there, and
/// it may subscribe to no other inbox.
pub fn install_inbox(org: &str, install: &str) -> String {
    format!("_INBOX.{org}.{install}")
}

/// Every install's claim requests: the scheduler's queue-group subscription.
pub const CLAIM_ALL: &str = "ferry.rx.*.*.claim";
/// Every install's lease renewals.
pub const LEASE_ALL: &str = "ferry.rx.*.*.lease";
/// Every install's heartbeats.
pub const HEARTBEAT_ALL: &str = "ferry.rx.*.*.hb";
pub const STACK_ALL: &str = "ferry.rx.*.*.stack";

/// The reply subject of a doorbell granting `job` to `runner` (`messages::Doorbell`): only the
/// hub writes on it, "no responders" when no runner of the install listens. Under the install's
/// own subjects, so the scheduler reads the install from it like any other; a runner writing
/// there itself can only withdraw its own install's grant.
pub fn unheard(org: &str, install: &str, job: &str, runner: &str) -> String {
    format!("ferry.rx.{org}.{install}.unheard.{job}.{runner}")
}

/// Every install's unheard grants: each scheduler hears only its own (the hub answers the
/// publisher's own subscription).
pub const UNHEARD_ALL: &str = "ferry.rx.*.*.unheard.*.*";

/// The job and the runner an [`unheard`] subject names.
pub fn unheard_grant(subject: &str) -> Option<(&str, &str)> {
    let mut it = subject.split('.');
    match (it.nth(4), it.next(), it.next(), it.next()) {
        (Some("unheard"), Some(job), Some(runner), None)
            if is_valid_token(job) && is_valid_token(runner) =>
        {
            Some((job, runner))
        }
        _ => None,
    }
}

/// Extracts `(org, install)` from any `ferry.<kind>.<org>.<install>...` subject.
pub fn org_install(subject: &str) -> Option<(&str, &str)> {
    let mut it = subject.split('.');
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some("ferry"), Some(_), Some(org), Some(install)) => Some((org, install)),
        _ => None,
    }
}

pub mod topic {
    pub const WORKFLOW: &str = "workflow";
    pub const BUILD: &str = "build";
    pub const BUILD_DONE: &str = "build-done";
    pub const APPROVAL: &str = "approval";
    pub const APPROVAL_DONE: &str = "approval-done";
}

pub fn control(topic: &str, org: &str) -> String {
    format!("ferry.ctl.{topic}.{org}")
}

/// Filter for one control topic across orgs.
pub fn control_topic(topic: &str) -> String {
    format!("ferry.ctl.{topic}.*")
}

pub fn audit(org: &str, kind: &str) -> String {
    format!("ferry.audit.{org}.{kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_read_back_from_their_subjects() {
        assert_eq!(push_of(&wake("acme", "prod")), Some(Push::Wake));
        assert_eq!(
            push_of(&cancel("acme", "prod", "j1")),
            Some(Push::Cancel { job: "j1" })
        );
        assert_eq!(push_of("ferry.push.acme.prod.cancel"), None);
        assert_eq!(push_of("ferry.push.acme.prod.other"), None);
        assert_eq!(push_of("ferry.push.acme.prod.wake.x"), None);
        assert_eq!(push_of("ferry.jobs.acme.prod.j1"), None);
        let all = pushes("acme", "prod");
        let prefix = all.trim_end_matches('>');
        assert!(wake("acme", "prod").starts_with(prefix));
        assert!(cancel("acme", "prod", "j").starts_with(prefix));
    }

    #[test]
    fn an_unheard_grant_names_its_job_and_runner_under_the_install() {
        let s = unheard("acme", "prod", "j1", "runner-a");
        assert_eq!(unheard_grant(&s), Some(("j1", "runner-a")));
        assert_eq!(org_install(&s), Some(("acme", "prod")));
        assert_eq!(unheard_grant("ferry.rx.acme.prod.claim.j1.runner-a"), None);
        assert_eq!(unheard_grant("ferry.rx.acme.prod.unheard.j1"), None);
        assert_eq!(unheard_grant("ferry.rx.acme.prod.unheard.j1.r.x"), None);
        assert!(
            s.starts_with("ferry.rx.acme.prod."),
            "an install may write it"
        );
    }

    #[test]
    fn org_and_install_are_at_fixed_positions() {
        assert_eq!(
            org_install(&job("acme", "prod", "j1")),
            Some(("acme", "prod"))
        );
        assert_eq!(
            org_install(&event("acme", "prod", "j1")),
            Some(("acme", "prod"))
        );
        assert_eq!(org_install(&claim("acme", "prod")), Some(("acme", "prod")));
        assert_eq!(org_install("nope"), None);
    }

    #[test]
    fn tokens() {
        assert!(is_valid_token("dev"));
        assert!(is_valid_token("01h2x-abc"));
        assert!(!is_valid_token(""));
        assert!(!is_valid_token("a.b"));
        assert!(!is_valid_token("A"));
        assert!(!is_valid_token("a*"));
        assert!(!is_valid_token("-a"));
        assert!(!is_valid_token(&"a".repeat(64)));
    }
}
