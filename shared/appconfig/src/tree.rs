//! A TOML document as an owned tree in which every key and value keeps its byte span, so every
//! diagnostic can point at a file, line and column.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub span: Range<usize>,
    pub v: V,
}

#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Datetime(String),
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_span: Range<usize>,
    pub value: Node,
}

impl Node {
    pub fn kind(&self) -> &'static str {
        match self.v {
            V::Str(_) => "a string",
            V::Int(_) => "an integer",
            V::Float(_) => "a float",
            V::Bool(_) => "a boolean",
            V::Datetime(_) => "a datetime",
            V::Array(_) => "an array",
            V::Table(_) => "a table",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.v {
            V::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.v {
            V::Table(e) => e,
            _ => &[],
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entries()
            .iter()
            .find(|e| e.key == key)
            .map(|e| &e.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries().iter().find(|e| e.key == key)
    }

    pub fn str_of(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Node::as_str)
    }

    /// A scalar as the text a template or an environment variable sees: a string as it is,
    /// anything else as its TOML/JSON text (`8080`, `true`).
    pub fn scalar_text(&self) -> Option<String> {
        match &self.v {
            V::Str(s) => Some(s.clone()),
            V::Array(_) | V::Table(_) => None,
            _ => Some(self.to_json().to_string()),
        }
    }

    pub fn bool_of(&self, key: &str) -> Option<bool> {
        match self.get(key).map(|n| &n.v) {
            Some(V::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    pub fn items(&self) -> &[Node] {
        match &self.v {
            V::Array(a) => a,
            _ => &[],
        }
    }

    /// The value as JSON (for free-form values the control plane keeps as they are).
    pub fn to_json(&self) -> serde_json::Value {
        match &self.v {
            V::Str(s) | V::Datetime(s) => serde_json::Value::String(s.clone()),
            V::Int(i) => serde_json::Value::from(*i),
            V::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            V::Bool(b) => serde_json::Value::Bool(*b),
            V::Array(a) => serde_json::Value::Array(a.iter().map(Node::to_json).collect()),
            V::Table(e) => serde_json::Value::Object(
                e.iter()
                    .map(|e| (e.key.clone(), e.value.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Parses a TOML document. On a syntax error: its byte offset and message.
pub fn parse(src: &str) -> Result<Node, (usize, String)> {
    let doc = DeTable::parse(src).map_err(|e| {
        (
            e.span().map(|s| s.start).unwrap_or(0),
            e.message().trim().to_string(),
        )
    })?;
    let span = doc.span();
    Ok(Node {
        span,
        v: V::Table(table(doc.into_inner())),
    })
}

fn table(t: DeTable<'_>) -> Vec<Entry> {
    let mut out: Vec<Entry> = t
        .into_iter()
        .map(|(k, v)| {
            let key_span = k.span();
            Entry {
                key: k.into_inner().into_owned(),
                key_span,
                value: node(v),
            }
        })
        .collect();
    // Source order, not the map's key order: diagnostics then read top to bottom.
    out.sort_by_key(|e| e.key_span.start);
    out
}

fn node(v: toml::Spanned<DeValue<'_>>) -> Node {
    let span = v.span();
    let v = match v.into_inner() {
        DeValue::String(s) => V::Str(s.into_owned()),
        DeValue::Integer(i) => {
            let digits: String = i.as_str().chars().filter(|c| *c != '_').collect();
            V::Int(i64::from_str_radix(&digits, i.radix()).unwrap_or(0))
        }
        DeValue::Float(f) => V::Float(f.as_str().replace('_', "").parse().unwrap_or(0.0)),
        DeValue::Boolean(b) => V::Bool(b),
        DeValue::Datetime(d) => V::Datetime(d.to_string()),
        DeValue::Array(a) => V::Array(a.into_iter().map(node).collect()),
        DeValue::Table(t) => V::Table(table(t)),
    };
    Node { span, v }
}
