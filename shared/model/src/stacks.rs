//! What a runner reports of its install stack, recorded on the install: checked against bounds
//! first (an install sends it), then its outputs keyed as Nuon's `install_stack.outputs`.

use serde_json::{Map, Value};

use std::collections::BTreeMap;

use crate::{Install, SecretState, StackState, Timestamp};

/// The most outputs a report may carry, and the longest key and value.
pub const MAX_STACK_OUTPUTS: usize = 200;
const MAX_KEY: usize = 256;
const MAX_VALUE: usize = 4096;
const MAX_STATUS: usize = 64;
const MAX_STACK_ID: usize = 2048;
/// The most secrets a report may carry (an app declares a handful).
pub const MAX_SECRETS: usize = 100;

/// What a runner read of its stack: its id, status, outputs (Nuon keys) and the install's
/// secrets that exist (by name; `None` when they could not be read: the last ones stand).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackSeen {
    pub stack_id: String,
    pub status: String,
    pub outputs: Vec<(String, String)>,
    pub secrets: Option<BTreeMap<String, SecretState>>,
}

impl Install {
    /// Records the install stack as the runner read it at `now`: its status, its outputs (a key
    /// with dots, `break_glass_role_arns.admin`, goes into a map, as Nuon's outputs have it)
    /// and its secrets' status. Returns whether anything changed; an oversized report is refused
    /// with the reason.
    pub fn stack_reported(&mut self, seen: StackSeen, now: Timestamp) -> Result<bool, String> {
        let StackSeen {
            stack_id,
            status,
            outputs,
            secrets,
        } = seen;
        let secrets = match secrets {
            Some(s) => s,
            None => self
                .install_stack
                .as_ref()
                .map(|s| s.secrets.clone())
                .unwrap_or_default(),
        };
        if secrets.len() > MAX_SECRETS {
            return Err(format!("{} secrets: at most {MAX_SECRETS}", secrets.len()));
        }
        let oversized = |(name, s): (&String, &SecretState)| {
            name.is_empty()
                || name.len() > MAX_KEY
                || s.arn.len() > MAX_STACK_ID
                || s.timestamp.len() > MAX_STATUS
        };
        if secrets.iter().any(oversized) {
            return Err("a secret's name, ARN or time is empty or too long".into());
        }
        if outputs.len() > MAX_STACK_OUTPUTS {
            return Err(format!(
                "{} stack outputs: at most {MAX_STACK_OUTPUTS}",
                outputs.len()
            ));
        }
        if status.len() > MAX_STATUS || stack_id.len() > MAX_STACK_ID {
            return Err("the stack's id or status is too long".into());
        }
        let mut map = Map::new();
        for (key, value) in &outputs {
            if key.is_empty() || key.len() > MAX_KEY || value.len() > MAX_VALUE {
                return Err(format!("stack output `{key}` is empty or too long"));
            }
            insert(&mut map, key, value);
        }
        let same = self.install_stack.as_ref().is_some_and(|s| {
            s.stack_id == stack_id && s.status == status && s.outputs == map && s.secrets == secrets
        });
        if same {
            return Ok(false);
        }
        self.install_stack = Some(StackState {
            stack_id,
            status,
            outputs: map,
            reported_at: now.to_string(),
            secrets,
        });
        Ok(true)
    }
}

/// `a.b.c = v` into nested maps; a key that is both a value and a map keeps the map.
fn insert(map: &mut Map<String, Value>, key: &str, value: &str) {
    match key.split_once('.') {
        None => {
            if !map.get(key).is_some_and(Value::is_object) {
                map.insert(key.to_string(), Value::String(value.to_string()));
            }
        }
        Some((head, rest)) => {
            let entry = map
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let Value::Object(inner) = entry {
                insert(inner, rest, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::at;

    fn install() -> Install {
        serde_json::from_value(serde_json::json!({
            "org": "o", "name": "prod", "app": "a", "app_config_id": "c", "inputs": {},
            "approve_all": false, "status": "active",
            "sandbox": { "status": "active", "outputs": {} }, "components": {},
            "last_workflow": null, "created_at": "t", "updated_at": "t"
        }))
        .unwrap()
    }

    fn seen(id: &str, status: &str, outputs: &[(String, String)]) -> StackSeen {
        StackSeen {
            stack_id: id.into(),
            status: status.into(),
            outputs: outputs.to_vec(),
            secrets: Some(BTreeMap::new()),
        }
    }

    #[test]
    fn a_report_keys_its_outputs_as_nuon_does_and_a_repeat_changes_nothing() {
        let mut i = install();
        let outputs = vec![
            ("vpc_id".to_string(), "vpc-1".to_string()),
            (
                "break_glass_role_arns.admin".to_string(),
                "arn:b".to_string(),
            ),
            (
                "custom_nested_stacks.audit.id".to_string(),
                "arn:s".to_string(),
            ),
        ];
        let now = at("2026-11-27T10:00:00.000Z");
        assert_eq!(
            i.stack_reported(seen("arn:stack", "CREATE_COMPLETE", &outputs), now),
            Ok(true)
        );
        let s = i.install_stack.clone().unwrap();
        assert_eq!(s.outputs["vpc_id"], "vpc-1");
        assert_eq!(s.outputs["break_glass_role_arns"]["admin"], "arn:b");
        assert_eq!(s.outputs["custom_nested_stacks"]["audit"]["id"], "arn:s");
        assert_eq!(s.reported_at, "2026-11-27T10:00:00.000Z");
        let later = at("2026-11-27T10:05:00.000Z");
        assert_eq!(
            i.stack_reported(seen("arn:stack", "CREATE_COMPLETE", &outputs), later),
            Ok(false)
        );
        assert_eq!(
            i.stack_reported(seen("arn:stack", "UPDATE_COMPLETE", &outputs), later),
            Ok(true)
        );
    }

    #[test]
    fn an_oversized_report_is_refused_and_stores_nothing() {
        let mut i = install();
        let many: Vec<(String, String)> = (0..=MAX_STACK_OUTPUTS)
            .map(|n| (format!("k{n}"), "v".to_string()))
            .collect();
        let now = at("2026-11-27T10:00:00.000Z");
        assert!(
            i.stack_reported(seen("s", "CREATE_COMPLETE", &many), now)
                .is_err()
        );
        let long = vec![("k".to_string(), "v".repeat(MAX_VALUE + 1))];
        assert!(
            i.stack_reported(seen("s", "CREATE_COMPLETE", &long), now)
                .is_err()
        );
        assert!(i.install_stack.is_none());
    }

    #[test]
    fn secrets_are_recorded_by_name_bounded_and_a_change_is_a_change() {
        let mut i = install();
        let now = at("2026-11-27T10:00:00.000Z");
        let mut report = seen("s", "CREATE_COMPLETE", &[]);
        let secret = SecretState {
            arn: "arn:aws:secretsmanager:us-east-1:1:secret:prod/license_key-AbCd".into(),
            timestamp: "2026-11-27T09:00:00Z".into(),
            length: 7,
        };
        report.secrets = Some(BTreeMap::from([("license_key".into(), secret.clone())]));
        assert_eq!(i.stack_reported(report.clone(), now), Ok(true));
        assert_eq!(
            i.install_stack.as_ref().unwrap().secrets["license_key"],
            secret
        );
        assert_eq!(i.stack_reported(report.clone(), now), Ok(false));
        // Secrets that could not be read this time: the last ones stand.
        let unread = StackSeen {
            secrets: None,
            ..report.clone()
        };
        assert_eq!(i.stack_reported(unread, now), Ok(false));
        // The customer set a new value: its length and time changed.
        let set = report.secrets.as_mut().unwrap();
        set.get_mut("license_key").unwrap().length = 9;
        assert_eq!(i.stack_reported(report.clone(), now), Ok(true));
        let mut many = seen("s", "CREATE_COMPLETE", &[]);
        let all = many.secrets.as_mut().unwrap();
        for n in 0..=MAX_SECRETS {
            all.insert(format!("s{n}"), secret.clone());
        }
        assert!(i.stack_reported(many, now).is_err());
        let mut long = seen("s", "CREATE_COMPLETE", &[]);
        long.secrets = Some(BTreeMap::from([("x".repeat(MAX_KEY + 1), secret)]));
        assert!(i.stack_reported(long, now).is_err());
    }
}
