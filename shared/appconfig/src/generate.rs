//! The JSON Schema for editors and the Markdown reference, both generated from [`crate::schema`].

use serde_json::{Map, Value, json};

use crate::schema::{self, BLOCKS, Dir, Field, Schema, Ty};
use crate::template::functions;

fn ty_json(ty: Ty) -> Value {
    match ty {
        Ty::Str | Ty::File | Ty::Contents => json!({ "type": "string" }),
        Ty::Duration => json!({ "type": "string", "pattern": "^([0-9.]+(ns|us|µs|ms|s|m|h))+$" }),
        Ty::Cron => json!({ "type": "string" }),
        Ty::Int => json!({ "type": "integer" }),
        Ty::Bool => json!({ "type": "boolean" }),
        Ty::Scalar => json!({ "type": ["string", "number", "boolean"] }),
        Ty::Enum(values) => json!({ "type": "string", "enum": values }),
        Ty::List(item) => json!({ "type": "array", "items": ty_json(*item) }),
        Ty::Map(item) => json!({ "type": "object", "additionalProperties": ty_json(*item) }),
        Ty::Any => json!({}),
        Ty::Table(s) => schema_json(s),
        Ty::Tables(s) => json!({ "type": "array", "items": schema_json(s) }),
    }
}

fn field_json(f: &Field) -> Value {
    let mut v = ty_json(f.ty);
    if let Value::Object(m) = &mut v {
        let note = if f.acted {
            ""
        } else {
            " (accepted; not acted on by this version of Ferry)"
        };
        m.insert(
            "description".into(),
            Value::String(format!("{}{note}", f.doc)),
        );
    }
    v
}

pub fn schema_json(s: &Schema) -> Value {
    let props: Map<String, Value> = s
        .fields()
        .map(|f| (f.name.to_string(), field_json(f)))
        .collect();
    let required: Vec<&str> = s.fields().filter(|f| f.required).map(|f| f.name).collect();
    let mut out = json!({ "type": "object", "description": s.doc, "properties": props, "additionalProperties": s.free_tables });
    if !required.is_empty()
        && let Value::Object(m) = &mut out
    {
        m.insert("required".into(), json!(required));
    }
    out
}

/// A JSON Schema (draft 2020-12) of every file of an app package, keyed by file kind under `$defs`.
/// Editors map files to definitions (`components/*.toml` → `component`).
pub fn json_schema() -> Value {
    let mut defs = Map::new();
    for b in BLOCKS {
        if let Some(f) = b.file {
            defs.insert(format!("{}.toml", b.name), schema_json(f));
        }
        if let Dir::Items(item) = b.dir {
            defs.insert(format!("{}/*.toml", b.name), schema_json(item));
        }
    }
    let components: Vec<Value> = schema::COMPONENT_TYPES
        .iter()
        .map(|(name, s, _)| {
            let mut v = schema_json(s);
            if let Some(Value::Object(p)) = v.get_mut("properties") {
                p.insert("type".into(), json!({ "const": name }));
            }
            v
        })
        .collect();
    defs.insert("components/*.toml".into(), json!({ "oneOf": components }));
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ferry.dev/schemas/app-config.json",
        "title": "Ferry app package",
        "description": "The files of a Ferry app package (compatible with Nuon's v2 app configs). Each entry of $defs describes one file or file pattern.",
        "$defs": defs,
    })
}

fn ty_doc(ty: Ty) -> String {
    match ty {
        Ty::Str => "string".into(),
        Ty::Int => "integer".into(),
        Ty::Bool => "boolean".into(),
        Ty::Scalar => "string, number or boolean".into(),
        Ty::Duration => "duration (`30s`, `5m`)".into(),
        Ty::Cron => "cron schedule".into(),
        Ty::File => "file path".into(),
        Ty::Contents => "`./file` or inline text".into(),
        Ty::Enum(v) if v.len() <= 10 => format!(
            "one of {}",
            v.iter()
                .map(|x| format!("`{x}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Ty::Enum(_) => "see below".into(),
        Ty::List(i) => format!("array of {}", ty_doc(*i)),
        Ty::Map(i) => format!("table of {}", ty_doc(*i)),
        Ty::Any => "any".into(),
        Ty::Table(s) => format!("table ({})", s.name),
        Ty::Tables(s) => format!("array of tables ({})", s.name),
    }
}

fn table_doc(out: &mut String, s: &Schema, seen: &mut Vec<&'static str>) {
    out.push_str(&format!(
        "{}\n\n| key | type | required | Ferry | description |\n|---|---|---|---|---|\n",
        s.doc
    ));
    for f in s.fields() {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            f.name,
            ty_doc(f.ty),
            if f.required { "yes" } else { "" },
            if f.acted {
                "acts on it"
            } else {
                "accepted, ignored"
            },
            f.doc.replace('|', "\\|")
        ));
    }
    out.push('\n');
    let nested: Vec<&'static Schema> = s
        .fields()
        .filter_map(|f| match f.ty {
            Ty::Table(n) | Ty::Tables(n) => Some(n),
            _ => None,
        })
        .collect();
    for n in nested {
        if seen.contains(&n.name) {
            continue;
        }
        seen.push(n.name);
        out.push_str(&format!("#### `{}`\n\n", n.name));
        table_doc(out, n, seen);
    }
}

/// The reference section of `docs/app-config.md` (between the generated-section markers).
pub fn markdown_reference() -> String {
    let mut out = String::new();
    let mut seen: Vec<&'static str> = Vec::new();
    for b in BLOCKS {
        let (title, schema) = match (b.file, b.dir) {
            (_, Dir::Components) => continue,
            (Some(f), Dir::Items(item)) => {
                out.push_str(&format!("### `{}.toml` or `{}/`\n\n", b.name, b.name));
                out.push_str(&format!(
                    "In the directory form (read recursively), each file holds one {} with its keys at the top level.\n\n",
                    item.name
                ));
                (None, f)
            }
            (None, Dir::Items(item)) => (
                Some(format!(
                    "### `{0}/**/*.toml` or `{0}.toml`\n\nOne {1} per file (folders are read recursively), or all of them as `[[{0}]]` tables of `{0}.toml`.\n\n",
                    b.name, item.name
                )),
                item,
            ),
            (Some(f), _) => (Some(format!("### `{}.toml`\n\n", b.name)), f),
            (None, _) => continue,
        };
        if let Some(t) = title {
            out.push_str(&t);
        }
        table_doc(&mut out, schema, &mut seen);
    }
    out.push_str("### `components/*.toml` or `components.toml`\n\nOne component per file (or `[[components]]` tables of `components.toml`); `type` selects the keys it takes. Every type takes the common keys (`name`, `type`, `dependencies`, ...).\n\n");
    for (name, s, deployable) in schema::COMPONENT_TYPES {
        if *name == "external_image" {
            out.push_str("`external_image` is accepted as another name of `container_image`.\n\n");
            continue;
        }
        out.push_str(&format!(
            "#### `type = \"{name}\"`{}\n\n",
            if *deployable {
                ""
            } else {
                " (checked; not deployable by this version yet)"
            }
        ));
        table_doc(&mut out, s, &mut seen);
    }
    out.push_str("### Action trigger types\n\n");
    out.push_str(
        &schema::TRIGGER_TYPES
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str("\n\n### Template functions\n\n| function | what it does |\n|---|---|\n");
    let mut all: Vec<_> = functions().collect();
    all.sort_by_key(|f| f.0);
    for (name, _, _, doc) in all {
        out.push_str(&format!("| `{name}` | {} |\n", doc.replace('|', "\\|")));
    }
    out
}
