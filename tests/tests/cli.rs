//! The `ferry` CLI's offline commands, through the built binary.

use std::process::Command;

use ferry_tests::{bin, copy_dir, repo_root};

fn ferry(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin("ferry"))
        .current_dir(repo_root())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_prints_the_deploy_order_with_parallel_stages() {
    let (code, out, err) = ferry(&["apps", "validate", "tests/fixtures/apps/ecs-service"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("valid (5 warnings)"), "{out}");
    assert!(
        out.contains("1. network\n  2. cluster, storage   (in parallel)\n  3. service"),
        "{out}"
    );
    // Its operation_roles rules decide the roles its jobs run as: no longer "not acted on".
    assert!(
        err.contains("operation_roles.toml:1:1: warning: `type` is accepted"),
        "{err}"
    );
    assert!(!err.contains("`rules` is accepted"), "{err}");
}

#[test]
fn validate_reports_every_error_with_position_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    copy_dir(&repo_root().join("tests/fixtures/apps/local-scripts"), &app);
    std::fs::write(app.join("components/server.toml"), "name = \"server\"\ntype = \"script\"\ndirectory = \"scripts/server\"\ncolour = 1\n\n[env_vars]\nX = \"{{ .nuon.components.cach.outputs.url }}\"\n").unwrap();
    let (code, out, err) = ferry(&["apps", "validate", app.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    // No hint: nothing known is close to `colour`.
    assert!(
        err.contains(
            "components/server.toml:4:1: warning: unknown key `colour` in script component: it is ignored\n"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "components/server.toml:7:9: error: unknown component `cach` (did you mean `cache`?)"
        ),
        "{err}"
    );
    assert!(err.contains("is invalid: 1 error, 1 warning"), "{err}");

    let (code, out, _) = ferry(&["apps", "validate", app.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["errors"], 1);
    assert_eq!(v["warnings"], 1);
    let d = &v["diagnostics"][0];
    assert_eq!(
        (
            d["file"].as_str(),
            d["line"].as_u64(),
            d["column"].as_u64(),
            d["severity"].as_str()
        ),
        (
            Some("components/server.toml"),
            Some(4),
            Some(1),
            Some("warning")
        )
    );
}

#[test]
fn warnings_pass_unless_strict() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    copy_dir(&repo_root().join("tests/fixtures/apps/local-scripts"), &app);
    std::fs::write(
        app.join("components/server.toml"),
        "name = \"server\"\ntype = \"script\"\ndirectory = \"scripts/server\"\ncolour = 1\n",
    )
    .unwrap();
    let (code, out, err) = ferry(&["apps", "validate", app.to_str().unwrap()]);
    assert_eq!(code, 0, "a package with only warnings is valid: {out}{err}");
    assert!(out.contains("valid (1 warning)"), "{out}");
    let (code, _, err) = ferry(&["apps", "validate", "--strict", app.to_str().unwrap()]);
    assert_eq!(code, 1, "--strict: warnings are errors");
    assert!(
        err.contains("components/server.toml:4:1: error: unknown key `colour`"),
        "{err}"
    );
}

/// Hostile packages: nothing outside the package is read, nothing blocks, every refusal names the
/// file, and a pathological template stops with a located error.
#[test]
fn hostile_packages_are_refused_with_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").unwrap();
    let app = dir.path().join("app");
    copy_dir(&repo_root().join("tests/fixtures/apps/local-scripts"), &app);
    let run = |app: &std::path::Path| ferry(&["apps", "validate", app.to_str().unwrap()]);

    std::os::unix::fs::symlink(&secret, app.join("scripts/leak.txt")).unwrap();
    let (code, out, err) = run(&app);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("scripts/leak.txt: a link to"), "{err}");
    assert!(err.contains("outside the repository"), "{err}");
    assert!(!format!("{out}{err}").contains("TOP SECRET"));
    std::fs::remove_file(app.join("scripts/leak.txt")).unwrap();

    std::os::unix::fs::symlink("/dev/zero", app.join("scripts/zero")).unwrap();
    let (code, _, err) = run(&app);
    assert_eq!(code, 1);
    assert!(err.contains("scripts/zero: a link to /dev/zero"), "{err}");
    std::fs::remove_file(app.join("scripts/zero")).unwrap();

    let fifo = app.join("scripts/pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (code, _, err) = run(&app);
    assert_eq!(code, 1);
    assert!(
        err.contains("scripts/pipe: not a regular file or directory (a FIFO)"),
        "{err}"
    );
    std::fs::remove_file(&fifo).unwrap();

    // A link that stays inside the package is followed (monorepos link shared folders).
    std::os::unix::fs::symlink("../scripts/cache", app.join("sandbox/linked")).unwrap();
    let (code, out, err) = run(&app);
    assert_eq!(code, 0, "{out}{err}");

    let loops = "{{range 100000}}{{range 100000}}{{range 100000}}x{{end}}{{end}}{{end}}";
    let nested = format!(
        "{}x{}",
        "{{if .nuon.install.id}}".repeat(300),
        "{{end}}".repeat(300)
    );
    for (name, template) in [("loops", loops.to_string()), ("nested", nested)] {
        std::fs::write(
            app.join("components/server.toml"),
            format!("name = \"server\"\ntype = \"script\"\ndirectory = \"scripts/server\"\n[env_vars]\nX = '{{{{.nuon.install.id}}}}{template}'\n"),
        )
        .unwrap();
        let (_, _, err) = ferry(&["apps", "validate", "--strict", app.to_str().unwrap()]);
        let located = err
            .lines()
            .find(|l| l.starts_with("components/server.toml:5:"));
        assert!(located.is_some(), "{name}: {err}");
    }
}

#[test]
fn validate_json_on_a_valid_app() {
    let (code, out, _) = ferry(&[
        "apps",
        "validate",
        "tests/fixtures/apps/local-scripts",
        "--json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["sandbox"], true);
    assert_eq!(
        v["deploy_order"],
        serde_json::json!([["cache", "config"], ["server"], ["monitor"]])
    );
}

#[test]
fn schema_is_json_schema_and_markdown() {
    let (code, out, _) = ferry(&["apps", "schema"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(v["$defs"]["components/*.toml"]["oneOf"].is_array());
    let (code, md, _) = ferry(&["apps", "schema", "--markdown"]);
    assert_eq!(code, 0);
    let docs = std::fs::read_to_string(repo_root().join("docs/app-config.md")).unwrap();
    assert!(
        docs.contains(&md),
        "docs/app-config.md embeds `ferry apps schema --markdown`"
    );
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let (code, _, err) = ferry(&["apps", "validate", "no/such/dir"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: reading no/such/dir: no/such/dir is not a directory"),
        "{err}"
    );
}

/// `apps lint` applies Nuon's lint rules with the package's `lint.toml`: findings located, an
/// error finding exits 1, and a disabled rule says nothing.
#[test]
fn lint_reports_nuons_rules_configured_by_the_packages_lint_toml() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let lint = |app: &std::path::Path| ferry(&["apps", "lint", app.to_str().unwrap()]);
    let (code, out, err) = lint(&app);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("components/greeter.toml:1:8: warning: component `greeter` has no labels [require-labels]"),
        "{out}"
    );
    std::fs::write(
        app.join("permissions.toml"),
        "[maintenance_role]\nname = \"maint\"\npermissions_boundary = \"./boundary.json\"\n\n[[maintenance_role.policies]]\nname = \"all\"\ncontents = '{\"Statement\": [{\"Effect\": \"Allow\", \"Action\": \"*\", \"Resource\": \"*\"}]}'\n",
    )
    .unwrap();
    std::fs::write(
        app.join("lint.toml"),
        "[rules.require-labels]\nenabled = false\n",
    )
    .unwrap();
    let (code, out, _) = lint(&app);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("permissions.toml:7:12: error: role `maint` has policy `all` allowing Action * on Resource * (full admin) [no-admin-permissions]"),
        "{out}"
    );
    assert!(!out.contains("require-labels"), "{out}");
    let (code, out, _) = ferry(&["apps", "lint", app.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    let findings: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        findings
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "no-admin-permissions" && f["severity"] == "error")
    );
}
