//! The scheduler's shape, read off its sources: its files call each other in layers (handlers →
//! the executor → effects → helpers), never in a circle, and neither it nor the model has a
//! function over 80 lines. A reader's checks, made here so they stay true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The identifier after each `needle` in `text`.
fn names_after<'a>(text: &'a str, needle: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    text.match_indices(needle).filter_map(move |(i, _)| {
        let rest = &text[i + needle.len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// Which file calls which (by the methods each defines, where a name is defined once).
fn calls(src: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut defined: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (file, text) in src {
        for name in names_after(text, "fn ") {
            defined.entry(name).or_default().push(file);
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in src {
        let out = edges.entry(file.clone()).or_default();
        for receiver in ["self.", "s."] {
            for name in names_after(text, receiver) {
                if let Some([to]) = defined.get(name).map(Vec::as_slice)
                    && *to != file
                    && text.contains(&format!("{receiver}{name}("))
                {
                    out.insert(to.to_string());
                }
            }
        }
    }
    edges
}

fn a_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut cycle = path[i..].to_vec();
            cycle.push(at.to_string());
            return Some(cycle);
        }
        if !done.insert(at.to_string()) {
            return None;
        }
        path.push(at.to_string());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|f| visit(f, edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_schedulers_files_call_each_other_in_layers_not_in_a_circle() {
    let mut src = sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // The crate's root starts every loop and calls back into nothing.
    src.remove("lib.rs");
    let edges = calls(&src);
    assert!(edges["effects.rs"].contains("dispatch.rs"), "{edges:#?}");
    assert_eq!(a_cycle(&edges), None, "{edges:#?}");
}

/// Functions of `dir`'s sources (tests aside) longer than `most` lines, as `file:line name`.
fn long_functions(dir: &Path, most: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for p in std::fs::read_dir(&d).unwrap().flatten().map(|e| e.path()) {
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if line.starts_with("#[cfg(test)]") {
                    break;
                }
                let code = line.trim_start();
                let indent = &line[..line.len() - code.len()];
                let is_fn = [
                    "fn ",
                    "pub fn ",
                    "async fn ",
                    "pub async fn ",
                    "pub(crate) fn ",
                ]
                .iter()
                .chain(&["pub(crate) async fn ", "const fn ", "pub const fn "])
                .any(|p| code.starts_with(p));
                if !is_fn || code.ends_with(';') {
                    continue;
                }
                let close = format!("{indent}}}");
                let end = lines[i..].iter().position(|l| *l == close).unwrap_or(0);
                if end + 1 > most {
                    out.push(format!("{}:{} ({} lines)", p.display(), i + 1, end + 1));
                }
            }
        }
    }
    out
}

#[test]
fn no_function_of_the_scheduler_or_the_model_is_over_80_lines() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = long_functions(&here.join("src"), 80);
    long.extend(long_functions(&here.join("../../shared/model/src"), 80));
    assert!(long.is_empty(), "{long:#?}");
}
