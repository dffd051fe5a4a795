//! What each party may publish and subscribe to on the hub: the one definition the hub's
//! configuration (`ferry_pki::hub`, for the services' users) and its auth callout (for installs)
//! are written from, and the permission tests check.
//!
//! A service gets the JetStream API of exactly the buckets, object stores and streams its role
//! uses, the core subjects it serves or sends, and may answer the requests it receives
//! (`allow_responses`). Stream metadata (`STREAM.INFO`) is readable by every service: opening the
//! store reads it. No service may update, delete or purge a stream, except the purges its role
//! needs on its own streams (`RESULTS`, object stores it deletes from, the open marks it erases);
//! `AUDIT` is append-only to all of them.

use crate::resources::{self, buckets, objects};
use crate::subjects;

/// Subjects a user may publish to and subscribe to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    pub publish: Vec<String>,
    pub subscribe: Vec<String>,
}

impl Grant {
    fn publish(&mut self, subjects: impl IntoIterator<Item = String>) -> &mut Self {
        self.publish.extend(subjects);
        self
    }

    fn subscribe(&mut self, subjects: impl IntoIterator<Item = String>) -> &mut Self {
        self.subscribe.extend(subjects);
        self
    }

    /// Reading messages of `stream` by sequence or subject (direct get, message get).
    fn read(&mut self, stream: &str) -> &mut Self {
        self.publish([
            format!("$JS.API.DIRECT.GET.{stream}"),
            format!("$JS.API.DIRECT.GET.{stream}.>"),
            format!("$JS.API.STREAM.MSG.GET.{stream}"),
        ])
    }

    /// Consumers on `stream` (durable, or ordered for listings and watches).
    fn consume(&mut self, stream: &str) -> &mut Self {
        self.publish([
            format!("$JS.API.CONSUMER.CREATE.{stream}"),
            format!("$JS.API.CONSUMER.CREATE.{stream}.>"),
            format!("$JS.API.CONSUMER.DURABLE.CREATE.{stream}.>"),
            format!("$JS.API.CONSUMER.INFO.{stream}.>"),
            format!("$JS.API.CONSUMER.DELETE.{stream}.>"),
            format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.>"),
            format!("$JS.ACK.{stream}.>"),
            format!("$JS.FC.{stream}.>"),
        ])
    }

    /// Ordered consumers on `stream` only: reading it in order, from a position or a time,
    /// without acknowledging anything (the audit reader's access to `AUDIT`).
    fn watch(&mut self, stream: &str) -> &mut Self {
        self.publish([
            format!("$JS.API.CONSUMER.CREATE.{stream}"),
            format!("$JS.API.CONSUMER.CREATE.{stream}.>"),
            format!("$JS.API.CONSUMER.INFO.{stream}.>"),
            format!("$JS.API.CONSUMER.DELETE.{stream}.>"),
            format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.>"),
            format!("$JS.FC.{stream}.>"),
        ])
    }

    /// A KV bucket: read, write (every write is a publish with its expected revision), list.
    fn kv(&mut self, bucket: &str) -> &mut Self {
        let stream = format!("KV_{bucket}");
        self.publish([format!("$KV.{bucket}.>")])
            .read(&stream)
            .consume(&stream)
    }

    /// Erasing keys of an index of open work (`open_workflows`, `open_releases`) when the work
    /// ends: a purge of the key's subject (`Repo::erase`), so that a sweep reading the bucket
    /// whole meets only what is open. Beside [`Grant::kv`] of the same bucket.
    fn erase(&mut self, bucket: &str) -> &mut Self {
        self.publish([format!("$JS.API.STREAM.PURGE.KV_{bucket}")])
    }

    /// A KV bucket, read only: a key's value (direct get), no writes.
    fn kv_read(&mut self, bucket: &str) -> &mut Self {
        self.read(&format!("KV_{bucket}"))
    }

    /// An object store: read, write, delete (a purge of the object's subjects).
    fn objects(&mut self, store: &str) -> &mut Self {
        let stream = format!("OBJ_{store}");
        self.publish([
            format!("$O.{store}.>"),
            format!("$JS.API.STREAM.PURGE.{stream}"),
        ])
        .read(&stream)
        .consume(&stream)
    }
}

/// The services' NATS user names (each service connects as its own).
pub const SERVICES: [&str; 5] = ["api", "scheduler", "build", "log-ingest", "approval"];

/// What the service `name` may do, or `None` for a name that is not a service.
// Long: the table of what each service may publish and subscribe to on the hub, one
// match arm per service: the security review reads it as one table.
pub fn service(name: &str) -> Option<Grant> {
    let mut g = Grant::default();
    g.publish([
        "$JS.API.INFO".to_string(),
        "$JS.API.STREAM.INFO.>".to_string(),
    ])
    .subscribe(["_INBOX.>".to_string()]);
    let audit = subjects::audit("*", "*");
    let control = "ferry.ctl.>".to_string();
    match name {
        "api" => {
            for b in buckets::ALL {
                g.kv(b);
            }
            // A workflow that lost its install's reservation is discarded with its mark.
            g.erase(buckets::OPEN_WORKFLOWS);
            for o in [objects::APP_SOURCES, objects::PLANS, objects::JOB_LOGS] {
                g.objects(o);
            }
            g.publish([control, audit])
                .consume(resources::LOGS.name)
                .read(resources::LOGS.name)
                .consume(resources::events::STREAM)
                // `GET /v1/audit` reads the audit record; nothing may change it.
                .watch(resources::AUDIT.name)
                .subscribe([
                    "$SYS.REQ.USER.AUTH".to_string(),
                    subjects::RENEW_ALL.to_string(),
                    subjects::RENEW_CERTIFICATE_ALL.to_string(),
                ]);
        }
        "scheduler" => {
            for b in buckets::ALL {
                g.kv(b);
            }
            g.erase(buckets::OPEN_WORKFLOWS)
                .erase(buckets::OPEN_RELEASES);
            for o in [objects::APP_SOURCES, objects::PLANS] {
                g.objects(o);
            }
            let jobs = resources::JOBS.name;
            g.publish([
                control,
                audit,
                "ferry.jobs.>".to_string(),
                subjects::pushes("*", "*"),
                subjects::system_log("*", "*", "*"),
                format!("$JS.API.STREAM.PURGE.{jobs}"),
                format!("$JS.API.STREAM.PURGE.{}", resources::RESULTS.name),
            ])
            .read(jobs)
            .read(resources::RESULTS.name)
            // A result waiting there when its lease ends is applied, not lost (`stops.rs`).
            .read(resources::JOB_EVENTS.name)
            .consume(resources::CONTROL.name)
            .consume(resources::JOB_EVENTS.name)
            .subscribe([
                subjects::CLAIM_ALL.to_string(),
                subjects::LEASE_ALL.to_string(),
                subjects::HEARTBEAT_ALL.to_string(),
                subjects::STACK_ALL.to_string(),
                subjects::OFFERS_ALL.to_string(),
                // The hub's "no responders" to a doorbell carrying a grant.
                subjects::UNHEARD_ALL.to_string(),
            ]);
        }
        "build" => {
            for b in [buckets::BUILDS, buckets::INSTALLS, buckets::APP_CONFIGS] {
                g.kv(b);
            }
            for o in [objects::APP_SOURCES, objects::ARTIFACTS] {
                g.objects(o);
            }
            g.publish([control, audit])
                .consume(resources::CONTROL.name)
                .subscribe([subjects::ARTIFACT_ALL.to_string()]);
        }
        "log-ingest" => {
            g.kv(buckets::JOBS)
                // Throttling an install over its quota (`ferry_model::quotas`).
                .kv(buckets::RUNNER_ACCESS)
                .objects(objects::JOB_LOGS)
                .consume(resources::JOB_EVENTS.name)
                .consume(resources::LOGS.name)
                .read(resources::LOGS.name)
                .consume(resources::METRICS.name)
                .publish([audit]);
            // Metering every install-fed stream, and purging an install's messages over its
            // quota from it.
            for def in resources::STREAMS.iter().filter(|d| d.install_fed()) {
                g.consume(def.name)
                    .publish([format!("$JS.API.STREAM.PURGE.{}", def.name)]);
            }
        }
        "approval" => {
            for b in [buckets::APPROVALS, buckets::INSTALLS] {
                g.kv(b);
            }
            // Whether a workflow approves its own plans (a release's `--approve-all`).
            g.kv_read(buckets::WORKFLOWS);
            g.publish([control, audit]).consume(resources::CONTROL.name);
        }
        _ => return None,
    }
    Some(g)
}

/// What an install's connection may do: publish only under `ferry.rx.<org>.<install>.>`;
/// receive only its own doorbell, cancels and replies. No JetStream API, KV bucket, stream or
/// object store of the control plane.
pub fn install(org: &str, install: &str) -> Grant {
    Grant {
        publish: vec![format!("ferry.rx.{org}.{install}.>")],
        subscribe: vec![
            subjects::pushes(org, install),
            format!("{}.>", subjects::install_inbox(org, install)),
        ],
    }
}

/// What a connection of `install` that presented certificate `serial` may do: [`install`], and
/// ask for that certificate's renewal (and no other's).
pub fn install_certificate(org: &str, install: &str, serial: &str) -> Grant {
    let mut g = self::install(org, install);
    g.publish
        .push(subjects::renew_certificate(org, install, serial));
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_service_has_a_grant_and_none_administers_audit() {
        for s in SERVICES {
            let g = service(s).unwrap();
            assert!(!g.publish.is_empty() && !g.subscribe.is_empty(), "{s}");
            // Reading AUDIT in order is allowed (the API's audit reader); nothing else on it.
            let mut reader = Grant::default();
            reader.watch(resources::AUDIT.name);
            for p in &g.publish {
                assert!(
                    !p.contains("AUDIT") || reader.publish.contains(p),
                    "{s} may publish {p}"
                );
                assert!(
                    !p.starts_with("$JS.API.STREAM.UPDATE")
                        && !p.starts_with("$JS.API.STREAM.DELETE"),
                    "{s} may publish {p}"
                );
            }
            assert!(
                !g.publish.iter().any(|p| p == ">" || p == "$JS.API.>"),
                "{s}"
            );
        }
        assert!(service("runner").is_none());
    }

    #[test]
    fn a_connection_renews_only_the_certificate_it_presented() {
        let g = install_certificate("acme", "prod", "0a1b");
        assert!(
            g.publish
                .contains(&"ferry.renew.acme.prod.0a1b".to_string())
        );
        assert!(
            !g.publish
                .iter()
                .any(|p| p.starts_with("ferry.renew.") && p.ends_with('*'))
        );
    }

    #[test]
    fn an_install_publishes_only_under_its_own_subjects() {
        let g = install("acme", "prod");
        assert_eq!(g.publish, vec!["ferry.rx.acme.prod.>".to_string()]);
        assert!(g.subscribe.iter().all(|s| s.contains("acme.prod")));
    }
}
