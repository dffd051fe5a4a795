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
