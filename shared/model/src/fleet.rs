//! Which installs of a fleet a listing shows: labels (the one rule for their keys and values),
//! an install's runner health, and the query `ferry installs list` sends, as functions of one
//! install record.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Timestamp;
use crate::{Install, RunnerHealth, RunnerRecord};

/// Labels an install may carry.
pub const MAX_LABELS: usize = 32;
const MAX_KEY: usize = 63;
const MAX_VALUE: usize = 63;

/// Why a label cannot be stored, if it cannot. Keys are lowercase letters, digits, `-`, `_`,
/// `.` and `/`, starting and ending with a letter or digit (Kubernetes' label keys, so a vendor
/// can mirror them); values are letters, digits, `-`, `_` and `.`, possibly empty.
pub fn check_label(key: &str, value: &str) -> Result<(), String> {
    let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let key_ok = !key.is_empty()
        && key.len() <= MAX_KEY
        && key.starts_with(edge)
        && key.ends_with(edge)
        && key
            .chars()
            .all(|c| edge(c) || matches!(c, '-' | '_' | '.' | '/'));
    if !key_ok {
        return Err(format!(
            "label key {key:?}: lowercase letters, digits, '-', '_', '.', '/', starting and ending with a letter or digit, at most {MAX_KEY} characters"
        ));
    }
    let value_ok = value.len() <= MAX_VALUE
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !value_ok {
        return Err(format!(
            "label {key}={value:?}: a value is letters, digits, '-', '_' and '.', at most {MAX_VALUE} characters"
        ));
    }
    Ok(())
}

/// Checks a whole set of labels.
pub fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), String> {
    if labels.len() > MAX_LABELS {
        return Err(format!(
            "{} labels: an install carries at most {MAX_LABELS}",
            labels.len()
        ));
    }
    labels.iter().try_for_each(|(k, v)| check_label(k, v))
}

/// `key=value` pairs, comma-separated (`team=payments,tier=gold`), as the CLI and the API's
/// `label` query parameter take them.
pub fn parse_labels(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("label {pair:?} is not KEY=VALUE"))?;
        check_label(k, v)?;
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// An install's runner health: its healthiest runner's, `None` when no runner of it has ever
/// been heard from.
pub fn install_health(
    install: &str,
    runners: &[RunnerRecord],
    now: Timestamp,
) -> Option<RunnerHealth> {
    runners
        .iter()
        .filter(|r| r.install == install)
        .map(|r| r.health(now))
        .min_by_key(|h| match h {
            RunnerHealth::Active => 0,
            RunnerHealth::Paused => 1,
            RunnerHealth::Unhealthy => 2,
            RunnerHealth::Offline => 3,
        })
}

/// What an install's runners say a person must know of how its jobs run: jobs run unsandboxed
/// (or are refused for want of a sandbox) on one of its runners heard from now. `None`: every
/// such runner sandboxes its jobs.
pub fn install_sandbox_warning(
    install: &str,
    runners: &[RunnerRecord],
    now: Timestamp,
) -> Option<crate::RunnerSandbox> {
    use crate::RunnerSandbox as S;
    runners
        .iter()
        .filter(|r| r.install == install && r.health(now) != RunnerHealth::Offline)
        .filter_map(|r| r.sandbox)
        .filter(|s| matches!(s, S::Unsandboxed | S::Unavailable))
        .max_by_key(|s| matches!(s, S::Unsandboxed))
}

/// The filters of an install listing (`GET /v1/installs?...`); they combine.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InstallQuery {
    pub app: Option<String>,
    /// An app config version's id.
    pub config: Option<String>,
    /// `provisioning`, `active`, `failed`, `torn_down`.
    pub status: Option<String>,
    /// Only installs with (`true`) or without (`false`) a drifted component.
    pub drifted: Option<bool>,
    /// `active`, `paused`, `unhealthy`, `offline`, or `none` (no runner ever connected).
    pub runner_health: Option<String>,
    /// `key=value` pairs, comma-separated: installs carrying every one of them.
    pub label: Option<String>,
}

/// The values `runner_health` takes.
pub const RUNNER_HEALTH_FILTERS: [&str; 5] = ["active", "paused", "unhealthy", "offline", "none"];

/// A runner health's name, as filters and metrics say it (`none`: no runner ever heard from).
pub fn health_name(h: Option<RunnerHealth>) -> &'static str {
    match h {
        Some(RunnerHealth::Active) => "active",
        Some(RunnerHealth::Paused) => "paused",
        Some(RunnerHealth::Unhealthy) => "unhealthy",
        Some(RunnerHealth::Offline) => "offline",
        None => "none",
    }
}

impl InstallQuery {
    /// What of the query cannot be understood, if anything: checked before any record is read.
    pub fn check(&self) -> Result<(), String> {
        if let Some(h) = &self.runner_health
            && !RUNNER_HEALTH_FILTERS.contains(&h.as_str())
        {
            return Err(format!(
                "runner_health {h:?}: one of {}",
                RUNNER_HEALTH_FILTERS.join(", ")
            ));
        }
        if let Some(l) = &self.label {
            parse_labels(l)?;
        }
        Ok(())
    }

    /// Whether the listing needs the runners' records (to judge health).
    pub fn needs_runners(&self) -> bool {
        self.runner_health.is_some()
    }

    /// Whether `install`, whose runner health is `health`, is listed. A query that fails
    /// [`InstallQuery::check`] matches nothing.
    pub fn matches(&self, install: &Install, health: Option<RunnerHealth>) -> bool {
        let labels = match self.label.as_deref().map(parse_labels) {
            Some(Ok(l)) => l,
            Some(Err(_)) => return false,
            None => BTreeMap::new(),
        };
        let status = serde_json::to_value(install.status).ok();
        self.app.as_ref().is_none_or(|a| &install.app == a)
            && self
                .config
                .as_ref()
                .is_none_or(|c| &install.app_config_id == c)
            && self
                .status
                .as_ref()
                .is_none_or(|s| status.as_ref().is_some_and(|v| v == s.as_str()))
            && self
                .drifted
                .is_none_or(|d| d != install.drifted().is_empty())
            && self
                .runner_health
                .as_ref()
                .is_none_or(|h| h == health_name(health))
            && labels.iter().all(|(k, v)| install.labels.get(k) == Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_and_values_follow_one_rule() {
        assert!(check_label("team", "payments").is_ok());
        assert!(check_label("example.com/tier", "gold-1").is_ok());
        assert!(check_label("empty", "").is_ok());
        for bad in ["", "Team", "-team", "team-", "te am", &"k".repeat(64)] {
            assert!(check_label(bad, "x").is_err(), "{bad:?}");
        }
        for bad in ["a b", "a,b", "a=b", "ü", &"v".repeat(64)] {
            assert!(check_label("k", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_labels("team=payments, tier=gold").unwrap(),
            BTreeMap::from([
                ("team".to_string(), "payments".to_string()),
                ("tier".to_string(), "gold".to_string())
            ])
        );
        assert!(parse_labels("team").is_err());
        let many: BTreeMap<String, String> =
            (0..33).map(|i| (format!("k{i}"), String::new())).collect();
        assert!(check_labels(&many).is_err());
    }

    fn runner(install: &str, last_seen_ms: u64) -> RunnerRecord {
        RunnerRecord {
            org: "o".into(),
            id: format!("runner-{install}-{last_seen_ms}"),
            install: install.into(),
            version: "1".into(),
            running_jobs: 0,
            interval_ms: 1000,
            first_seen_ms: 0,
            last_seen_ms,
            sandbox: None,
            paused: false,
        }
    }

    #[test]
    fn an_install_warns_of_a_live_runner_that_runs_jobs_unsandboxed() {
        let now = 100_000;
        let t = Timestamp::from_ms(now);
        let mut a = runner("a", now);
        assert_eq!(install_sandbox_warning("a", &[a.clone()], t), None);
        a.sandbox = Some(crate::RunnerSandbox::Unsandboxed);
        assert_eq!(
            install_sandbox_warning("a", &[a.clone()], t),
            Some(crate::RunnerSandbox::Unsandboxed)
        );
        // A runner gone for good says nothing of how jobs run now.
        let mut old = a.clone();
        old.last_seen_ms = 0;
        assert_eq!(install_sandbox_warning("a", &[old], t), None);
        assert_eq!(install_sandbox_warning("b", &[a], t), None);
    }

    #[test]
    fn an_install_is_as_healthy_as_its_healthiest_runner() {
        let now = 100_000;
        let runners = [
            runner("a", now - 500),
            runner("a", 0),
            runner("b", now - 4000),
        ];
        assert_eq!(
            install_health("a", &runners, Timestamp::from_ms(now)),
            Some(RunnerHealth::Active)
        );
        assert_eq!(
            install_health("b", &runners, Timestamp::from_ms(now)),
            Some(RunnerHealth::Unhealthy)
        );
        assert_eq!(install_health("c", &runners, Timestamp::from_ms(now)), None);
    }

    #[test]
    fn a_query_combines_its_filters() {
        let mut i: Install = serde_json::from_value(serde_json::json!({
            "org": "o", "name": "i1", "app": "hello", "app_config_id": "v2",
            "inputs": {}, "approve_all": false, "status": "active",
            "sandbox": { "status": "active" }, "components": {}, "last_workflow": null,
            "created_at": "t", "updated_at": "t"
        }))
        .unwrap();
        i.labels = parse_labels("team=payments,tier=gold").unwrap();
        let q = |json: serde_json::Value| serde_json::from_value::<InstallQuery>(json).unwrap();
        let active = Some(RunnerHealth::Active);
        assert!(q(serde_json::json!({})).matches(&i, None));
        assert!(q(serde_json::json!({"app": "hello", "status": "active"})).matches(&i, active));
        assert!(!q(serde_json::json!({"status": "failed"})).matches(&i, active));
        assert!(q(serde_json::json!({"label": "tier=gold"})).matches(&i, active));
        assert!(q(serde_json::json!({"label": "tier=gold,team=payments"})).matches(&i, active));
        assert!(!q(serde_json::json!({"label": "tier=gold,team=search"})).matches(&i, active));
        assert!(q(serde_json::json!({"runner_health": "active"})).matches(&i, active));
        assert!(!q(serde_json::json!({"runner_health": "active"})).matches(&i, None));
        assert!(q(serde_json::json!({"runner_health": "none"})).matches(&i, None));
        assert!(
            q(serde_json::json!({"runner_health": "sleepy"}))
                .check()
                .is_err()
        );
        assert!(
            q(serde_json::json!({"label": "Tier=gold"}))
                .check()
                .is_err()
        );
        assert!(!q(serde_json::json!({"label": "Tier=gold"})).matches(&i, active));
    }
}

/// The number a person gives for a config version (`2`, `v2`, as `apps sync` prints it), if
/// `given` is one rather than a config version's id.
pub fn config_number(given: &str) -> Option<u32> {
    let digits = given.strip_prefix(['v', 'V']).unwrap_or(given);
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| *n > 0)
}

#[cfg(test)]
mod config_number_tests {
    use super::config_number;

    #[test]
    fn a_config_version_is_named_by_its_number_or_vn() {
        assert_eq!(config_number("2"), Some(2));
        assert_eq!(config_number("v12"), Some(12));
        assert_eq!(config_number("V3"), Some(3));
        assert_eq!(config_number("0"), None);
        assert_eq!(config_number("01m91e79ewjh3evmpy1nmfnba8"), None);
        assert_eq!(config_number("v"), None);
        assert_eq!(config_number("-1"), None);
    }
}
