//! Fuzzing: bad input never panics. The seeds in `tests/fuzz-corpus/` (and the fixture apps) are
//! mutated with the tokens the parsers care about; parsing, validating and rendering must return,
//! never panic. proptest keeps any failing case in `proptest-regressions/` (committed) so it is
//! replayed on every run.

use std::path::Path;

use ferry_appconfig::template::{Mode, Template};
use ferry_appconfig::{Package, validate};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "{{", "}}", "{{-", "-}}", "|", ".", "$", "(", ")", "\"", "`", "'", "=", ":=", ",", " ", "\n",
    "end", "if", "else", "range", "with", "index", "default", "/*", "*/", "[", "]", "[[", "]]",
    "#", "\\", "é", "0", "-1", "1e400", "nil", "true", ".nuon", "{", "}", "\"\"\"", "= [", "x.y",
    "\t",
];

fn corpus(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fuzz-corpus")
            .join(name),
    )
    .unwrap()
}

/// Applies up to `edits` mutations (insert a token, delete a span, duplicate a span) to `seed`.
fn mutate(seed: &str, edits: Vec<(u8, usize, usize)>) -> String {
    let mut chars: Vec<char> = seed.chars().collect();
    for (op, a, b) in edits {
        let n = chars.len();
        match op % 3 {
            0 => {
                let at = if n == 0 { 0 } else { a % (n + 1) };
                let tok: Vec<char> = TOKENS[b % TOKENS.len()].chars().collect();
                chars.splice(at..at, tok);
            }
            1 if n > 0 => {
                let start = a % n;
                let end = (start + b % 8).min(n);
                chars.drain(start..end);
            }
            _ if n > 0 => {
                let start = a % n;
                let end = (start + b % 16).min(n);
                let dup: Vec<char> = chars[start..end].to_vec();
                chars.splice(start..start, dup);
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn state() -> serde_json::Value {
    serde_json::json!({"nuon": {"install": {"id": "i"}, "inputs": {"inputs": {"name": "n", "env": "prod"}},
        "components": {"db": {"outputs": {"endpoint": "e", "port": 1, "hosts": ["a", "b"], "tags": {"env": "x"}}}}}})
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(prop::test_runner::FileFailurePersistence::Direct("tests/fuzz-corpus/proptest-regressions.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn templates_never_panic(line in 0usize..12, edits in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 0..8)) {
        let seeds = corpus("templates.txt");
        let seed = seeds.lines().nth(line % seeds.lines().count()).unwrap_or_default();
        let src = mutate(seed, edits);
        if let Ok(t) = Template::parse(&src) {
            let _ = t.render(&state(), Mode::Strict);
            let _ = t.render(&state(), Mode::Lenient);
            let _ = t.references();
        }
    }

    #[test]
    fn arbitrary_text_never_panics_the_template_parser(src in any::<String>()) {
        if let Ok(t) = Template::parse(&src) {
            let _ = t.render(&state(), Mode::Lenient);
            // Text without actions renders to itself.
            if !src.contains("{{") {
                prop_assert_eq!(t.render(&state(), Mode::Strict).unwrap(), src);
            }
        }
    }

    #[test]
    fn packages_never_panic(edits in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 0..10), which in 0usize..3) {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/apps/local-scripts");
        let mut pkg = Package::from_dir(&base).unwrap();
        let (path, seed) = match which {
            0 => ("components/server.toml".to_string(), corpus("package.toml")),
            1 => ("inputs.toml".to_string(), pkg.text("inputs.toml").unwrap_or_default().to_string()),
            _ => ("sandbox.toml".to_string(), pkg.text("sandbox.toml").unwrap_or_default().to_string()),
        };
        pkg.files.insert(path, mutate(&seed, edits).into_bytes());
        let report = validate(&pkg);
        // Every diagnostic points inside its file.
        for d in &report.diagnostics.0 {
            prop_assert!(d.line >= 1 && d.column >= 1, "{}", d);
        }
    }
}
