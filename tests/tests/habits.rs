//! The CLI's habits for people and scripts: shell completion that the shell really completes
//! with, `--output table|wide|json` on listings, colour only on a terminal and never with
//! `NO_COLOR`, and `--quiet`.

use std::process::Command;

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, bin, ferry, repo_root};

#[test]
fn bash_completes_commands_and_flags_from_the_completion_script() {
    let (code, script, err) = ferry("http://127.0.0.1:9", &["completion", "bash"]);
    assert_eq!(code, 0, "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferry.bash");
    std::fs::write(&path, script).unwrap();
    // What bash offers after `ferry ins` and after `ferry installs list --ou`, calling the
    // function as bash does (command, current word, previous word).
    let complete = |words: &str, cword: usize| {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; \
                 _ferry ferry \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                path.display()
            ))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let offered = complete("ferry ins", 1);
    assert_eq!(offered.trim(), "installs", "{offered}");
    let offered = complete("ferry installs list --ou", 3);
    assert_eq!(offered.trim(), "--output", "{offered}");
    let offered = complete("ferry installs list --output ''", 4);
    for format in ["table", "wide", "json"] {
        assert!(offered.lines().any(|l| l == format), "{offered}");
    }
    for shell in ["zsh", "fish"] {
        let (code, script, _) = ferry("http://127.0.0.1:9", &["completion", shell]);
        assert_eq!(code, 0);
        assert!(script.contains("installs") && script.contains("--output"));
    }
    let (code, _, err) = ferry("http://127.0.0.1:9", &["completion", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("possible values"), "{err}");
}

/// Runs the CLI under a pseudo-terminal (util-linux `script`), with `env` set; returns what
/// the terminal showed.
fn on_a_terminal(api: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut line = format!("{} --api {api}", bin("ferry").display());
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("FERRY_TOKEN", ferry_tests::token_for(api).unwrap())
        .env("XDG_CONFIG_HOME", "/nonexistent/ferry-tests")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn listings_take_an_output_format_and_colour_is_for_terminals_only() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);

    // --quiet: nothing but the exit code, even while waiting for a deploy.
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait", "--quiet"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, "", "quiet printed: {out}");

    let (code, table, _) = ferry(&api, &["installs", "list"]);
    assert_eq!(code, 0);
    let header = table.lines().next().unwrap();
    assert!(header.starts_with("INSTALL") && !header.contains("APPROVE-ALL"));
    let (_, wide, _) = ferry(&api, &["installs", "list", "--output", "wide"]);
    let header = wide.lines().next().unwrap();
    assert!(header.contains("LAST WORKFLOW") && header.contains("APPROVE-ALL"));
    assert!(wide.lines().nth(1).unwrap().contains(" on "), "{wide}");
    let listed = cli::<Vec<Install>>(&api, &["installs", "list", "-o", "json"]);
    assert_eq!(listed[0].name, "prod");
    assert_eq!(
        cli::<Vec<Workflow>>(&api, &["workflows", "list", "--json"])[0].install,
        "prod"
    );
    let (_, wide, _) = ferry(&api, &["workflows", "list", "-o", "wide"]);
    assert!(wide.contains("STEPS DONE"), "{wide}");
    let (code, _, err) = ferry(&api, &["installs", "list", "--json", "-o", "wide"]);
    assert_eq!(code, 2, "--json and --output conflict: {err}");

    // Piped: no escape codes. On a terminal: colour, unless NO_COLOR.
    let (_, piped, _) = ferry(&api, &["installs", "deploy", "prod", "--wait"]);
    assert!(
        piped.contains("✓ succeeded") && !piped.contains('\x1b'),
        "{piped}"
    );
    let shown = on_a_terminal(&api, &["installs", "deploy", "prod", "--wait"], &[]);
    assert!(shown.contains("\x1b[32m✓ succeeded"), "{shown:?}");
    let plain = on_a_terminal(
        &api,
        &["installs", "deploy", "prod", "--wait"],
        &[("NO_COLOR", "1")],
    );
    assert!(
        plain.contains("✓ succeeded") && !plain.contains('\x1b'),
        "{plain:?}"
    );
    let refused = on_a_terminal(&api, &["installs", "get", "nope"], &[("NO_COLOR", "1")]);
    assert!(
        refused.contains("error:") && !refused.contains('\x1b'),
        "{refused:?}"
    );
}

/// A value someone else supplied (an input, an output, a reason) that carries terminal escapes
/// is shown with them written out, never sent to the terminal: nothing in a record can clear the
/// screen or plant a link.
#[test]
fn record_strings_print_their_terminal_escapes_as_text() {
    let nats = NatsServer::start();
    let (_server, api) = ferry_tests::Proc::server(&nats.url, nats.dir.path().join("server.log"));
    ferry_tests::sync_hello(&api, &repo_root().join("examples/hello"));
    let hostile = "\u{1b}[2J\u{1b}]8;;https://evil.test\u{7}hi";
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "prod",
            "--input",
            &format!("greeting={hostile}"),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = ferry(&api, &["installs", "get", "prod"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("\\u{1b}[2J"), "{out}");
}
