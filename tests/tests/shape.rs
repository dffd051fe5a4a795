//! The code's shape, read off the sources: at most 12 functions in the whole product are over 80
//! lines, and each says why it stays long (a `// Long: ...` comment above it). Tests are not the
//! product and are not counted.

use std::path::{Path, PathBuf};

use ferry_tests::repo_root;

/// Every `.rs` file of the product: the workspace's crates, their tests and `target/` aside.
fn sources() -> Vec<PathBuf> {
    let root = repo_root();
    let mut dirs: Vec<PathBuf> = ["shared", "services", "cli", "loadtest"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    let mut out = Vec::new();
    while let Some(d) = dirs.pop() {
        for p in std::fs::read_dir(&d).unwrap().flatten().map(|e| e.path()) {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            if p.is_dir() {
                if name != "tests" && name != "target" {
                    dirs.push(p);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                out.push(p);
            }
        }
    }
    out
}

/// `(where, lines, says why)` of each function of `file` over `most` lines, up to its tests.
fn long_functions(file: &Path, most: usize) -> Vec<(String, usize, bool)> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let is_fn = code
            .split_whitespace()
            .take_while(|w| !w.starts_with("fn"))
            .all(|w| matches!(w, "pub" | "pub(crate)" | "pub(super)" | "async" | "const"))
            && code.split_whitespace().any(|w| w == "fn")
            && !code.ends_with(';');
        if !is_fn {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(end) = lines[i..].iter().position(|l| *l == close) else {
            continue;
        };
        if end + 1 > most {
            let why = lines[i.saturating_sub(4)..i]
                .iter()
                .any(|l| l.trim_start().starts_with("// Long:"));
            out.push((format!("{}:{}", file.display(), i + 1), end + 1, why));
        }
    }
    out
}

#[test]
fn at_most_12_functions_are_over_80_lines_and_each_says_why() {
    let long: Vec<(String, usize, bool)> = sources()
        .iter()
        .flat_map(|f| long_functions(f, 80))
        .collect();
    let unexplained: Vec<&String> = long
        .iter()
        .filter(|(_, _, why)| !why)
        .map(|l| &l.0)
        .collect();
    assert!(
        unexplained.is_empty(),
        "long without a reason: {unexplained:#?}"
    );
    assert!(
        long.len() <= 12,
        "{} functions over 80 lines: {long:#?}",
        long.len()
    );
    // The scan sees functions at all (a broken scan would pass the checks above).
    assert!(long.len() >= 5, "{long:#?}");
}

/// Every `["field"]` read in the end-to-end tests, by file: a JSON value indexed by a key. Reads
/// of the records' own maps (a component's `outputs`, an install's `inputs` and `components`, an
/// audit record's `detail`) are typed record access and not counted.
fn string_indexed_reads() -> Vec<(String, usize)> {
    let root = repo_root().join("tests");
    let mut out = Vec::new();
    for dir in [root.join("tests"), root.join("src")] {
        for p in std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
            if p.extension().is_none_or(|e| e != "rs") || p.ends_with("shape.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let bytes = text.as_bytes();
            let mut n = 0;
            for (at, _) in text.match_indices("[\"") {
                let before = at.checked_sub(1).map(|i| bytes[i]);
                let indexes =
                    before.is_some_and(|b| b.is_ascii_alphanumeric() || b"_)]".contains(&b));
                let rest = &text[at + 2..];
                let key = rest.split('"').next().unwrap_or_default();
                let closed = rest[key.len()..].starts_with("\"]");
                let field =
                    !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
                let head = &text[at.saturating_sub(40)..at];
                let record_map = [".components", ".outputs", ".inputs", ".detail"]
                    .iter()
                    .any(|m| {
                        head.rsplit_once(m).is_some_and(|(_, tail)| {
                            tail.is_empty() || tail.starts_with('[') && tail.ends_with(']')
                        })
                    });
                if indexes && closed && field && !record_map {
                    n += 1;
                }
            }
            if n > 0 {
                out.push((p.display().to_string(), n));
            }
        }
    }
    out
}

/// End-to-end tests read Ferry's records typed (`ferry_tests::typed`): what is left indexing
/// JSON by string reads shapes that are not Ferry's records (NATS monitoring, SSE payloads,
/// Terraform's JSON, the OpenAPI document, the CLI's validate report).
#[test]
fn end_to_end_tests_read_typed_records() {
    let reads = string_indexed_reads();
    let total: usize = reads.iter().map(|r| r.1).sum();
    assert!(total <= 100, "{total} string-indexed reads: {reads:#?}");
    // The scan sees them at all.
    assert!(total >= 10, "{reads:#?}");
}
