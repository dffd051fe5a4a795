//! Events: the changes to records that `GET /v1/events` sends, and which of them a caller asked
//! for. An event is a record's new state (or its deletion) as the hub stored it; a step's change
//! is its workflow's change (the event carries every step, so a watcher compares with what it saw).
//!
//! Fields are read from the record's JSON rather than its type, so that an event of a record
//! written by a newer or older Ferry still reaches its watchers. The record itself is what the
//! API would show of it: an install's or a job's sensitive values read `(sensitive)`, as
//! `GET /v1/installs/{name}` and `GET /v1/jobs/{id}` give them (a record of those kinds that
//! cannot be read as one is not sent at all).

use serde::{Deserialize, Serialize};

/// What kind of record changed: the SSE `event:` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Install,
    Workflow,
    Job,
    Approval,
    Release,
}

impl EventKind {
    pub const ALL: [EventKind; 5] = [
        EventKind::Install,
        EventKind::Workflow,
        EventKind::Job,
        EventKind::Approval,
        EventKind::Release,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventKind::Install => "install",
            EventKind::Workflow => "workflow",
            EventKind::Job => "job",
            EventKind::Approval => "approval",
            EventKind::Release => "release",
        }
    }

    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventOp {
    /// The record was created or changed: `record` is its new state.
    Put,
    /// The record was deleted: no `record`.
    Delete,
}

/// One change, as `GET /v1/events` sends it in an SSE event's `data:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Event {
    /// The position in the hub's event stream: the SSE `id:`, from which a client resumes.
    pub seq: u64,
    pub kind: EventKind,
    pub op: EventOp,
    /// The record's id (an install's name).
    pub id: String,
    /// The install the record belongs to (none for a release, or a deleted record's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    /// The workflow the record belongs to (a workflow's own id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Milliseconds since the Unix epoch, when the hub stored the change.
    pub at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<serde_json::Value>,
}

impl Event {
    /// The event of a record's change. `record` is `None` for a deletion; a record whose
    /// fields are not where its kind keeps them gives an event with no install or workflow.
    pub fn new(
        seq: u64,
        kind: EventKind,
        id: &str,
        at_ms: u64,
        record: Option<serde_json::Value>,
    ) -> Event {
        let op = if record.is_some() {
            EventOp::Put
        } else {
            EventOp::Delete
        };
        let field = |name: &str| {
            record
                .as_ref()
                .and_then(|r| r.get(name))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let (install, workflow) = match kind {
            EventKind::Install => (Some(id.to_string()), None),
            EventKind::Workflow => (field("install"), Some(id.to_string())),
            EventKind::Job | EventKind::Approval => (field("install"), field("workflow_id")),
            EventKind::Release => (None, None),
        };
        Event {
            seq,
            kind,
            op,
            id: id.to_string(),
            install,
            workflow,
            at_ms,
            record: record.and_then(|r| shown(kind, r)),
        }
    }
}

/// A record as the API shows it: sensitive values redacted where its kind has them.
fn shown(kind: EventKind, record: serde_json::Value) -> Option<serde_json::Value> {
    fn redacted<T: serde::de::DeserializeOwned + Serialize>(
        record: serde_json::Value,
        redact: impl FnOnce(T) -> T,
    ) -> Option<serde_json::Value> {
        let typed: T = serde_json::from_value(record).ok()?;
        serde_json::to_value(redact(typed)).ok()
    }
    match kind {
        EventKind::Install => redacted(record, crate::Install::redacted),
        EventKind::Job => redacted(record, crate::Job::redacted),
        EventKind::Workflow | EventKind::Approval | EventKind::Release => Some(record),
    }
}

/// Which events a caller asked for; every field given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EventFilter {
    #[serde(default)]
    pub install: Option<String>,
    #[serde(default)]
    pub workflow: Option<String>,
    /// Comma-separated kinds (`workflow,job`); all when absent.
    #[serde(default)]
    pub kinds: Option<String>,
}

impl EventFilter {
    /// The filter's kinds, or an error naming the unknown one.
    pub fn check(&self) -> Result<(), String> {
        for k in self.kind_names() {
            if EventKind::parse(k).is_none() {
                let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
                return Err(format!(
                    "unknown event kind `{k}` (known: {})",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn kind_names(&self) -> impl Iterator<Item = &str> {
        self.kinds
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
    }

    pub fn matches(&self, e: &Event) -> bool {
        let mut kinds = self.kind_names().peekable();
        let kind_ok = kinds.peek().is_none() || kinds.any(|k| k == e.kind.name());
        let install_ok = self
            .install
            .as_ref()
            .is_none_or(|i| e.install.as_ref() == Some(i));
        let workflow_ok = self
            .workflow
            .as_ref()
            .is_none_or(|w| e.workflow.as_ref() == Some(w));
        kind_ok && install_ok && workflow_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job() -> Event {
        Event::new(
            7,
            EventKind::Job,
            "j1",
            1,
            Some(json!({"id": "j1", "install": "prod", "workflow_id": "w1"})),
        )
    }

    #[test]
    fn an_event_names_the_install_and_workflow_its_record_belongs_to() {
        let e = job();
        assert_eq!(e.install.as_deref(), Some("prod"));
        assert_eq!(e.workflow.as_deref(), Some("w1"));
        assert_eq!(e.op, EventOp::Put);
        let wf = Event::new(
            8,
            EventKind::Workflow,
            "w1",
            1,
            Some(json!({"install": "prod"})),
        );
        assert_eq!(
            (wf.install.as_deref(), wf.workflow.as_deref()),
            (Some("prod"), Some("w1"))
        );
        let gone = Event::new(9, EventKind::Install, "prod", 1, None);
        assert_eq!(gone.op, EventOp::Delete);
        assert_eq!(gone.install.as_deref(), Some("prod"));
        let release = Event::new(
            10,
            EventKind::Release,
            "r1",
            1,
            Some(json!({"install": "x"})),
        );
        assert_eq!(release.install, None);
    }

    #[test]
    fn a_filter_keeps_only_what_every_given_field_matches() {
        let e = job();
        assert!(EventFilter::default().matches(&e));
        let f = |install: Option<&str>, workflow: Option<&str>, kinds: Option<&str>| EventFilter {
            install: install.map(str::to_string),
            workflow: workflow.map(str::to_string),
            kinds: kinds.map(str::to_string),
        };
        assert!(f(Some("prod"), Some("w1"), Some("workflow, job")).matches(&e));
        assert!(!f(Some("staging"), None, None).matches(&e));
        assert!(!f(None, Some("w2"), None).matches(&e));
        assert!(!f(None, None, Some("install")).matches(&e));
        assert!(f(None, None, Some("")).matches(&e));
        let release = Event::new(1, EventKind::Release, "r1", 1, Some(json!({})));
        assert!(!f(Some("prod"), None, None).matches(&release));
    }

    #[test]
    fn an_installs_sensitive_values_never_leave_in_its_events() {
        let record = json!({
            "org": "acme", "name": "prod", "app": "hello", "app_config_id": "c1",
            "inputs": {"password": "hunter22", "region": "eu"},
            "sensitive_inputs": ["password"], "approve_all": false, "status": "active",
            "sandbox": {"status": "active", "outputs": {}},
            "components": {"db": {"status": "active",
                "outputs": {"dsn": "postgres://u:s3cr3t@db", "port": 5432},
                "sensitive_outputs": ["dsn"]}},
            "last_workflow": null, "created_at": "t", "updated_at": "t",
        });
        let e = Event::new(3, EventKind::Install, "prod", 1, Some(record));
        let shown = e.record.expect("an install record is sent").to_string();
        assert!(
            !shown.contains("hunter22") && !shown.contains("s3cr3t"),
            "{shown}"
        );
        assert!(
            shown.contains("\"region\":\"eu\"") && shown.contains("5432"),
            "{shown}"
        );
        // A record of a redacted kind that cannot be read is not sent.
        let odd = Event::new(4, EventKind::Install, "prod", 1, Some(json!({"x": 1})));
        assert_eq!((odd.op, odd.record), (EventOp::Put, None));
    }

    #[test]
    fn unknown_kinds_are_refused_by_name() {
        let f = EventFilter {
            kinds: Some("job,step".into()),
            ..Default::default()
        };
        let err = f.check().unwrap_err();
        assert!(err.contains("`step`") && err.contains("workflow"), "{err}");
    }
}
