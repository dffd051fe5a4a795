//! A plan as people read it: Terraform's `show -json` (the document a plan job's plugin gives)
//! as one line per change, the way `terraform plan` prints them. `ferry workflows get --diff`
//! and the dashboard's plan view both show this.

use serde_json::Value;

/// One line per resource that changes (`+` create, `~` update, `-/+` replace, `-` delete), then,
/// as `terraform plan` shows them, its attributes' values (`x: "hi" -> "bonjour"`; a value not
/// known before the apply reads `(known after apply)`, a sensitive one `(sensitive value)`); and
/// one line per output that changes, with its values.
pub fn plan_changes(plan: &Value) -> String {
    let mut out = String::new();
    let none = vec![];
    for rc in plan["resource_changes"].as_array().unwrap_or(&none) {
        let actions: Vec<&str> = rc["change"]["actions"]
            .as_array()
            .unwrap_or(&none)
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mark = match actions.as_slice() {
            ["create"] => "+",
            ["update"] => "~",
            ["delete"] => "-",
            ["delete", "create"] | ["create", "delete"] => "-/+",
            _ => continue,
        };
        let address = rc["address"].as_str().unwrap_or("?");
        out.push_str(&format!("  {mark} {address}\n"));
        for line in attribute_lines(&rc["change"], mark) {
            out.push_str(&format!("      {line}\n"));
        }
    }
    if let Some(outputs) = plan["output_changes"].as_object() {
        for (name, c) in outputs {
            let actions = c["actions"].as_array().unwrap_or(&none);
            if actions.iter().any(|a| a != "no-op") {
                let before = shown(&c["before"], &c["before_sensitive"], false);
                let after = shown(
                    &c["after"],
                    &c["after_sensitive"],
                    c["after_unknown"] == true,
                );
                let values = match join(actions).as_str() {
                    "create" => after,
                    "delete" => format!("{before} -> null"),
                    _ => format!("{before} -> {after}"),
                };
                out.push_str(&format!("  output {name}: {values}\n"));
            }
        }
    }
    if out.is_empty() {
        out.push_str("  no changes\n");
    }
    out
}

/// The attribute lines of a resource change: on an update or a replace, each attribute that
/// changes (`key: before -> after`); on a create, each attribute (`key = after`).
fn attribute_lines(change: &Value, mark: &str) -> Vec<String> {
    let empty = serde_json::Map::new();
    let before = change["before"].as_object().unwrap_or(&empty);
    let after = change["after"].as_object().unwrap_or(&empty);
    let unknown = change["after_unknown"].as_object().unwrap_or(&empty);
    let keys: std::collections::BTreeSet<&String> = after.keys().chain(unknown.keys()).collect();
    let mut lines = Vec::new();
    for key in keys {
        let sensitive = |side: &str| &change[side][key.as_str()];
        let is_unknown = unknown.get(key.as_str()) == Some(&Value::Bool(true));
        let now = shown(
            after.get(key.as_str()).unwrap_or(&Value::Null),
            sensitive("after_sensitive"),
            is_unknown,
        );
        match mark {
            "+" => lines.push(format!("{key} = {now}")),
            "~" | "-/+" if is_unknown || before.get(key.as_str()) != after.get(key.as_str()) => {
                let was = shown(
                    before.get(key.as_str()).unwrap_or(&Value::Null),
                    sensitive("before_sensitive"),
                    false,
                );
                lines.push(format!("{key}: {was} -> {now}"));
            }
            _ => {}
        }
    }
    lines
}

/// A value as a plan shows it: JSON, cut at 80 characters; `(sensitive value)` when its
/// sensitivity mark says so (Terraform marks with `true`, or an object or list of marks);
/// `(known after apply)` when unknown.
fn shown(value: &Value, sensitive: &Value, unknown: bool) -> String {
    if unknown {
        return "(known after apply)".into();
    }
    let marked = match sensitive {
        Value::Bool(b) => *b,
        Value::Object(o) => !o.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    };
    if marked {
        return "(sensitive value)".into();
    }
    let text = value.to_string();
    if text.chars().count() > 80 {
        let cut: String = text.chars().take(77).collect();
        return format!("{cut}...");
    }
    text
}

fn join(actions: &[Value]) -> String {
    actions
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_of_change_has_its_mark() {
        let plan = json!({
            "resource_changes": [
                {"address": "a.new", "change": {"actions": ["create"], "after": {"n": 1},
                    "after_unknown": {"id": true}}},
                {"address": "a.same", "change": {"actions": ["no-op"]}},
                {"address": "a.edit", "change": {"actions": ["update"],
                    "before": {"x": 1, "y": "hi", "k": "old"}, "after": {"x": 1, "y": "bonjour", "k": "new"},
                    "before_sensitive": {"k": true}, "after_sensitive": {"k": true}}},
                {"address": "a.swap", "change": {"actions": ["delete", "create"]}},
                {"address": "a.gone", "change": {"actions": ["delete"]}}
            ],
            "output_changes": {
                "o": {"actions": ["update"], "before": "hi", "after": "bonjour"},
                "s": {"actions": ["update"], "before": "a", "after": "b", "before_sensitive": true, "after_sensitive": true},
                "p": {"actions": ["no-op"]}
            }
        });
        assert_eq!(
            plan_changes(&plan),
            "  + a.new\n      id = (known after apply)\n      n = 1\n  ~ a.edit\n      k: (sensitive value) -> (sensitive value)\n      y: \"hi\" -> \"bonjour\"\n  -/+ a.swap\n  - a.gone\n  output o: \"hi\" -> \"bonjour\"\n  output s: (sensitive value) -> (sensitive value)\n"
        );
        assert_eq!(plan_changes(&json!({})), "  no changes\n");
    }
}
