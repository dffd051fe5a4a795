//! What a runner reports of its install stack, recorded on the install: checked against bounds
//! first (an install sends it), then its outputs keyed as Nuon's `install_stack.outputs`.

use serde_json::{Map, Value};

use crate::{Install, StackState, Timestamp};

/// The most outputs a report may carry, and the longest key and value.
pub const MAX_STACK_OUTPUTS: usize = 200;
const MAX_KEY: usize = 256;
const MAX_VALUE: usize = 4096;
const MAX_STATUS: usize = 64;
const MAX_STACK_ID: usize = 2048;

impl Install {
    /// Records the install stack's `status` and `outputs` as the runner read them at `now`.
    /// A key with dots (`break_glass_role_arns.admin`) goes into a map, as Nuon's outputs have
    /// it. Returns whether anything changed; an oversized report is refused with the reason.
    pub fn stack_reported(
        &mut self,
        stack_id: &str,
        status: &str,
        outputs: &[(String, String)],
        now: Timestamp,
    ) -> Result<bool, String> {
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
        for (key, value) in outputs {
            if key.is_empty() || key.len() > MAX_KEY || value.len() > MAX_VALUE {
                return Err(format!("stack output `{key}` is empty or too long"));
            }
            insert(&mut map, key, value);
        }
        let same = self
            .install_stack
            .as_ref()
            .is_some_and(|s| s.stack_id == stack_id && s.status == status && s.outputs == map);
        if same {
            return Ok(false);
        }
        self.install_stack = Some(StackState {
            stack_id: stack_id.to_string(),
            status: status.to_string(),
            outputs: map,
            reported_at: now.to_string(),
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
            i.stack_reported("arn:stack", "CREATE_COMPLETE", &outputs, now),
            Ok(true)
        );
        let s = i.install_stack.clone().unwrap();
        assert_eq!(s.outputs["vpc_id"], "vpc-1");
        assert_eq!(s.outputs["break_glass_role_arns"]["admin"], "arn:b");
        assert_eq!(s.outputs["custom_nested_stacks"]["audit"]["id"], "arn:s");
        assert_eq!(s.reported_at, "2026-11-27T10:00:00.000Z");
        let later = at("2026-11-27T10:05:00.000Z");
        assert_eq!(
            i.stack_reported("arn:stack", "CREATE_COMPLETE", &outputs, later),
            Ok(false)
        );
        assert_eq!(
            i.stack_reported("arn:stack", "UPDATE_COMPLETE", &outputs, later),
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
            i.stack_reported("s", "CREATE_COMPLETE", &many, now)
                .is_err()
        );
        let long = vec![("k".to_string(), "v".repeat(MAX_VALUE + 1))];
        assert!(
            i.stack_reported("s", "CREATE_COMPLETE", &long, now)
                .is_err()
        );
        assert!(i.install_stack.is_none());
    }
}
