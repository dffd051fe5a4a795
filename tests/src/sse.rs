//! Server-Sent Events as tests read them: curl streams a route's body to a file, and the file's
//! complete events are parsed (by hand: this is the test's view of the wire, kept independent
//! of the parser the CLI uses).

use std::path::Path;
use std::process::{Child, Command};

use crate::token_for;

/// One Server-Sent Event as a test reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sse {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

impl Sse {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

/// The complete events of an SSE body (a partial last one is left out); comments are skipped.
pub fn sse_events(body: &str) -> Vec<Sse> {
    let mut out = Vec::new();
    let mut blocks: Vec<&str> = body.split("\n\n").collect();
    // What follows the last blank line is an event still arriving (or nothing).
    blocks.pop();
    for block in blocks {
        let mut e = Sse {
            id: None,
            event: "message".into(),
            data: String::new(),
        };
        let mut any = false;
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => e.id = Some(value.to_string()),
                "event" => e.event = value.to_string(),
                "data" => {
                    if !e.data.is_empty() {
                        e.data.push('\n');
                    }
                    e.data.push_str(value);
                }
                _ => continue,
            }
            any = true;
        }
        if any {
            out.push(e);
        }
    }
    out
}

/// `curl -sN` of an SSE route of the API at `api`, with the test's token and `headers`,
/// writing the body to `out` as it comes; kill the child when done.
pub fn sse_curl(api: &str, path: &str, headers: &[&str], out: &Path) -> Child {
    let mut cmd = Command::new("curl");
    cmd.args(["-sN", "-H", "accept: text/event-stream"]);
    if let Some(t) = token_for(api) {
        cmd.args(["-H", &format!("authorization: Bearer {t}")]);
    }
    for h in headers {
        cmd.args(["-H", h]);
    }
    cmd.arg(format!("{api}{path}"))
        .stdout(std::fs::File::create(out).expect("sse output file"))
        .spawn()
        .expect("run curl")
}
