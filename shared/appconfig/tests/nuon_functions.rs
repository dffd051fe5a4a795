//! Functions Ferry renders that Nuon's renderer does not have (Helm's `toYaml` and `required`):
//! validation warns where a template calls one, at its place, saying Nuon would refuse it.

use crate::common;

use std::path::Path;

use ferry_appconfig::{Package, validate};

#[test]
fn helms_functions_are_a_warning_that_nuon_would_refuse_them() {
    let dir = tempfile::tempdir().unwrap();
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello");
    common::copy_dir(&hello, dir.path());
    let file = dir.path().join("components/greeter.toml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "INSTALL_ID = \"{{ .nuon.install.id }}\"",
        "INSTALL_ID = \"{{ .nuon.install.id | toYaml }}\"\nOTHER = \"{{ required \\\"x\\\" .nuon.install.id }}\"",
    );
    std::fs::write(&file, text).unwrap();
    let report = validate(&Package::from_dir(dir.path()).unwrap());
    assert!(report.config.is_some(), "still valid");
    let warnings: Vec<String> = report
        .diagnostics
        .warnings()
        .map(|d| d.to_string())
        .collect();
    for f in ["toYaml", "required"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("components/greeter.toml:")
                    && w.contains(&format!(
                        "`{f}` is Helm's, not sprig's: Nuon would refuse this"
                    ))),
            "{f}: {warnings:#?}"
        );
    }
}

/// Where Ferry renders on purpose otherwise than Nuon (the host's environment, its resolver),
/// validation says so at the call; a readme named without `./` is text, which it says too.
#[test]
fn deliberate_differences_and_a_bare_readme_path_are_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello");
    common::copy_dir(&hello, dir.path());
    let file = dir.path().join("components/greeter.toml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "INSTALL_ID = \"{{ .nuon.install.id }}\"",
        "INSTALL_ID = \"{{ .nuon.install.id }}{{ env \\\"HOME\\\" }}\"\nCA = \"{{ .nuon.install.id }}{{ getHostByName \\\"x\\\" }}\"",
    );
    std::fs::write(&file, text).unwrap();
    let meta = dir.path().join("metadata.toml");
    let text = std::fs::read_to_string(&meta)
        .unwrap()
        .replace("\"./README.md\"", "\"README.md\"");
    std::fs::write(&meta, text).unwrap();
    let report = validate(&Package::from_dir(dir.path()).unwrap());
    assert!(report.config.is_some(), "still valid");
    let warnings: Vec<String> = report
        .diagnostics
        .warnings()
        .map(|d| d.to_string())
        .collect();
    let has = |file: &str, text: &str| {
        warnings
            .iter()
            .any(|w| w.starts_with(file) && w.contains(text))
    };
    assert!(
        has(
            "components/greeter.toml:",
            "`env` reads the renderer's environment"
        ),
        "{warnings:#?}"
    );
    assert!(
        has("components/greeter.toml:", "`getHostByName` fails in Ferry"),
        "{warnings:#?}"
    );
    assert!(
        has("metadata.toml:4:", "write `./README.md`"),
        "{warnings:#?}"
    );
}
