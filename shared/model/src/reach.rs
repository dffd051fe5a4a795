//! What a token reaches: all of its org's installs, or only some — the installs it names and
//! those carrying every label it names. A vendor serves many customers from one org; each
//! customer's token must reach that customer's installs and nothing of the others'.
//!
//! The API decides every answer with these functions: a request naming a record of an install
//! out of reach is answered as if the record did not exist (404, never 403, which would confirm
//! the name), and listings and streams leave such records out. What a path names is read from
//! its template ([`PathTarget::of`]), so one table covers the API's routes and the dashboard's.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::{Install, Role};

/// The most installs a token's scope names.
pub const MAX_TOKEN_INSTALLS: usize = 256;

/// Which installs of its org a token reaches (empty: all of them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TokenScope {
    /// These installs, by name.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub installs: BTreeSet<String>,
    /// Also every install carrying all of these labels (none: no install by label).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl TokenScope {
    /// Whether the token reaches every install of its org.
    pub fn whole_org(&self) -> bool {
        self.installs.is_empty() && self.labels.is_empty()
    }

    /// Whether the token reaches `install`.
    pub fn covers(&self, install: &Install) -> bool {
        self.whole_org()
            || self.installs.contains(&install.name)
            || (!self.labels.is_empty()
                && self
                    .labels
                    .iter()
                    .all(|(k, v)| install.labels.get(k) == Some(v)))
    }

    /// Whether the token reaches the install named `name`, when the name alone decides it
    /// (`None`: it depends on the install's labels).
    pub fn covers_name(&self, name: &str) -> Option<bool> {
        if self.whole_org() || self.installs.contains(name) {
            Some(true)
        } else if self.labels.is_empty() {
            Some(false)
        } else {
            None
        }
    }

    /// Why a token of `role` cannot have this scope, if it cannot. A customer's token is always
    /// bound to installs (it is one customer's); an admin's never is (an admin mints tokens,
    /// so a bound admin would be bound to nothing). At most [`MAX_TOKEN_INSTALLS`] installs are
    /// named (a customer with more is bound by label).
    pub fn refused_for(&self, role: Role) -> Option<String> {
        if self.installs.len() > MAX_TOKEN_INSTALLS {
            return Some(format!(
                "{} installs named: a token names at most {MAX_TOKEN_INSTALLS} (label the \
                 customer's installs and bind the token with --label instead)",
                self.installs.len()
            ));
        }
        match role {
            Role::Customer if self.whole_org() => Some(
                "a customer token is bound to the customer's installs: give --install NAME \
                 (repeat it for each) or --label KEY=VALUE"
                    .into(),
            ),
            Role::Admin if !self.whole_org() => Some(
                "an admin token reaches every install (it can mint tokens): bind a viewer, \
                 operator or customer token instead"
                    .into(),
            ),
            _ => None,
        }
    }

    /// The scope as a person reads it: `all installs`, or `installs a, b; labels k=v`.
    pub fn describe(&self) -> String {
        if self.whole_org() {
            return "all installs".into();
        }
        let mut parts = Vec::new();
        if !self.installs.is_empty() {
            let names: Vec<&str> = self.installs.iter().map(String::as_str).collect();
            parts.push(format!("installs {}", names.join(", ")));
        }
        if !self.labels.is_empty() {
            let pairs: Vec<String> = self
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            parts.push(format!("labels {}", pairs.join(",")));
        }
        parts.join("; ")
    }
}

/// Why a stored token may no longer be used, if so: a customer token minted before tokens were
/// bound to installs reaches every customer's installs, and is refused until re-issued.
pub fn unbound_customer(token_name: &str, role: Role, scope: &TokenScope) -> Option<String> {
    (role == Role::Customer && scope.whole_org()).then(|| {
        format!(
            "customer token `{token_name}` is bound to no install, so it is refused: revoke it \
             (`ferry tokens revoke {token_name}`) and create it again bound to the customer's \
             installs (`ferry tokens create --name {token_name} --role customer --install NAME`)"
        )
    })
}

/// What a request's path names: the record whose install decides whether the caller reaches
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathTarget {
    Install(String),
    Workflow(String),
    Job(String),
    Release(String),
    App(String),
    Config(String),
    /// A path naming no record (a listing, a creation) or one no install owns (a token).
    None,
}

impl PathTarget {
    /// What the route `template` (`/v1/installs/{name}/deploy`, `/ui/jobs/{id}`) names, given
    /// its parameters' values: the kind is the segment after the prefix, the record its first
    /// parameter.
    pub fn of<'a>(template: &str, param: impl Fn(&str) -> Option<&'a str>) -> PathTarget {
        let mut segs = template.trim_start_matches('/').split('/');
        let (Some("v1" | "ui"), Some(kind), Some(p)) = (segs.next(), segs.next(), segs.next())
        else {
            return PathTarget::None;
        };
        let Some(value) = p
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .and_then(param)
        else {
            return PathTarget::None;
        };
        let value = value.to_string();
        match kind {
            "installs" => PathTarget::Install(value),
            "workflows" => PathTarget::Workflow(value),
            "jobs" => PathTarget::Job(value),
            "releases" => PathTarget::Release(value),
            "apps" => PathTarget::App(value),
            "configs" => PathTarget::Config(value),
            _ => PathTarget::None,
        }
    }

    /// How a missing record of this target is answered: a record out of reach is answered so.
    pub fn not_found(&self) -> String {
        match self {
            PathTarget::Install(n) => format!("install `{n}` not found"),
            PathTarget::Workflow(id) => format!("workflow `{id}` not found"),
            PathTarget::Job(id) => format!("job `{id}` not found"),
            PathTarget::Release(id) => format!("release `{id}` not found"),
            PathTarget::App(a) => format!("app `{a}` not found"),
            PathTarget::Config(id) => format!("config version `{id}` not found"),
            PathTarget::None => "not found".into(),
        }
    }
}

/// The installs a scoped token reaches among `installs`, by name.
pub fn reached<'a>(
    scope: &TokenScope,
    installs: impl IntoIterator<Item = &'a Install>,
) -> BTreeSet<String> {
    installs
        .into_iter()
        .filter(|i| scope.covers(i))
        .map(|i| i.name.clone())
        .collect()
}

/// The installs a caller reaches, as a listing filters by them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    /// Every install of the org.
    All,
    /// These, by name.
    Only(BTreeSet<String>),
}

impl Reached {
    pub fn has(&self, install: &str) -> bool {
        match self {
            Reached::All => true,
            Reached::Only(names) => names.contains(install),
        }
    }
}

/// Which events of a stream a token's caller is sent: those of the installs it reaches. An
/// install's change re-decides whether it is reached (a label scope follows the labels).
#[derive(Debug, Clone)]
pub struct EventReach {
    scope: TokenScope,
    names: BTreeSet<String>,
}

impl EventReach {
    /// `names`: the installs the scope reaches as the stream starts.
    pub fn new(scope: TokenScope, names: BTreeSet<String>) -> EventReach {
        EventReach { scope, names }
    }

    /// Whether `event` is sent (an event of no install, a release's, is not, unless the token
    /// reaches every install).
    pub fn admits(&mut self, event: &crate::events::Event) -> bool {
        if self.scope.whole_org() {
            return true;
        }
        if event.kind == crate::events::EventKind::Install
            && let Some(install) = event
                .record
                .clone()
                .and_then(|r| serde_json::from_value::<Install>(r).ok())
        {
            match self.scope.covers(&install) {
                true => self.names.insert(install.name),
                false => self.names.remove(&install.name),
            };
        }
        event
            .install
            .as_ref()
            .is_some_and(|i| self.names.contains(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install(name: &str, labels: &[(&str, &str)]) -> Install {
        let mut i: Install = serde_json::from_value(serde_json::json!({
            "org": "o", "name": name, "app": "a", "app_config_id": "c",
            "inputs": {}, "approve_all": false, "status": "active",
            "sandbox": { "status": "active" }, "components": {}, "last_workflow": null,
            "created_at": "t", "updated_at": "t"
        }))
        .unwrap_or_else(|e| panic!("an install record: {e}"));
        i.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        i
    }

    fn scope(installs: &[&str], labels: &[(&str, &str)]) -> TokenScope {
        TokenScope {
            installs: installs.iter().map(|s| s.to_string()).collect(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_scope_covers_its_named_installs_and_those_with_all_its_labels() {
        let acme = install("acme-prod", &[("customer", "acme"), ("tier", "gold")]);
        let other = install("globex", &[("customer", "globex")]);
        assert!(TokenScope::default().covers(&other));
        let named = scope(&["acme-prod"], &[]);
        assert!(named.covers(&acme) && !named.covers(&other));
        assert_eq!(named.covers_name("acme-prod"), Some(true));
        assert_eq!(named.covers_name("globex"), Some(false));
        let labelled = scope(&[], &[("customer", "acme")]);
        assert!(labelled.covers(&acme) && !labelled.covers(&other));
        assert_eq!(labelled.covers_name("globex"), None);
        // Every label must match.
        let both = scope(&[], &[("customer", "acme"), ("tier", "silver")]);
        assert!(!both.covers(&acme));
        let either = scope(&["globex"], &[("customer", "acme")]);
        assert!(either.covers(&acme) && either.covers(&other));
        assert_eq!(
            reached(&named, [&acme, &other]),
            BTreeSet::from(["acme-prod".to_string()])
        );
        assert_eq!(either.describe(), "installs globex; labels customer=acme");
    }

    #[test]
    fn customers_are_always_bound_and_admins_never() {
        assert!(TokenScope::default().refused_for(Role::Customer).is_some());
        assert!(scope(&["a"], &[]).refused_for(Role::Customer).is_none());
        assert!(scope(&["a"], &[]).refused_for(Role::Admin).is_some());
        assert!(scope(&["a"], &[]).refused_for(Role::Viewer).is_none());
        assert!(TokenScope::default().refused_for(Role::Operator).is_none());
        let many: Vec<String> = (0..=MAX_TOKEN_INSTALLS).map(|n| format!("i{n}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(
            scope(&many, &[])
                .refused_for(Role::Customer)
                .is_some_and(|w| w.contains("at most 256"))
        );
        let why = unbound_customer("acme-sec", Role::Customer, &TokenScope::default());
        assert!(why.is_some_and(|w| w.contains("ferry tokens revoke acme-sec")));
        assert!(unbound_customer("v", Role::Viewer, &TokenScope::default()).is_none());
    }

    #[test]
    fn a_path_names_the_record_its_first_parameter_is() {
        let p = |name: &str| (name == "name" || name == "id").then_some("x");
        assert_eq!(
            PathTarget::of("/v1/installs/{name}/deploy", p),
            PathTarget::Install("x".into())
        );
        assert_eq!(
            PathTarget::of("/ui/jobs/{id}/log", p),
            PathTarget::Job("x".into())
        );
        assert_eq!(
            PathTarget::of("/v1/workflows/{id}", p),
            PathTarget::Workflow("x".into())
        );
        assert_eq!(PathTarget::of("/v1/installs", p), PathTarget::None);
        assert_eq!(PathTarget::of("/v1/tokens/{id}", p), PathTarget::None);
        assert_eq!(
            PathTarget::of("/v1/apps/{app}", |_| Some("hello")),
            PathTarget::App("hello".into())
        );
        assert_eq!(
            PathTarget::of("/v1/installs/{name}", |_| None),
            PathTarget::None,
            "a template whose parameter is missing names nothing"
        );
    }

    #[test]
    fn a_stream_sends_the_events_of_reached_installs_and_follows_their_labels() {
        use crate::events::{Event, EventKind};
        let event = |kind, id: &str, record: Option<serde_json::Value>| {
            let mut e = Event::new(1, kind, id, 0, record);
            if kind != EventKind::Install {
                e.install = Some("b".into());
            }
            e
        };
        let mut reach = EventReach::new(
            scope(&["a"], &[("customer", "acme")]),
            BTreeSet::from(["a".to_string()]),
        );
        let a = serde_json::to_value(install("a", &[])).unwrap();
        assert!(reach.admits(&event(EventKind::Install, "a", Some(a))));
        // b is not reached until it carries the label, then its workflow's events come too.
        assert!(!reach.admits(&event(EventKind::Workflow, "w1", None)));
        let b = serde_json::to_value(install("b", &[("customer", "acme")])).unwrap();
        assert!(reach.admits(&event(EventKind::Install, "b", Some(b))));
        assert!(reach.admits(&event(EventKind::Workflow, "w1", None)));
        let b = serde_json::to_value(install("b", &[])).unwrap();
        assert!(!reach.admits(&event(EventKind::Install, "b", Some(b))));
        assert!(!reach.admits(&event(EventKind::Job, "j1", None)));
        let mut release = event(EventKind::Release, "r1", None);
        release.install = None;
        assert!(!reach.admits(&release));
        assert!(EventReach::new(TokenScope::default(), BTreeSet::new()).admits(&release));
    }
}
