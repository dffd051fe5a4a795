//! The example app and a few invalid variants of it (issue 3 grows this into a full corpus).

use std::path::Path;

use ferry_appconfig::{ComponentType, Package, load};

fn hello() -> Package {
    Package::from_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello")).unwrap()
}

#[test]
fn example_hello_validates_with_its_deploy_order() {
    let cfg = load(&hello()).unwrap();
    assert_eq!(cfg.metadata.version, "v1");
    assert_eq!(
        cfg.deploy_order,
        vec![vec!["greeter"], vec!["counter"], vec!["reporter"]]
    );
    let counter = cfg.component("counter").unwrap();
    assert_eq!(counter.kind, ComponentType::TerraformModule);
    assert_eq!(
        counter.dependencies,
        vec!["greeter"],
        "implicit dependency from the template"
    );
    assert_eq!(
        cfg.component("reporter").unwrap().dependencies,
        vec!["counter", "greeter"]
    );
    assert_eq!(cfg.sandbox.as_ref().unwrap().kind, ComponentType::Script);
    assert_eq!(cfg.inputs[0].default.as_deref(), Some("hello"));
}

fn diag(pkg: &Package) -> String {
    load(pkg).unwrap_err().to_string()
}

#[test]
fn errors_have_file_line_and_column() {
    let mut p = hello();
    p.files.insert("components/counter.toml".into(), b"name = \"counter\"\ntype = \"terraform_module\"\ndirectory = \"components/src/counter\"\n\n[vars]\nmessage = \"{{.nuon.components.greter.outputs.message}}\"\n".to_vec());
    assert_eq!(
        diag(&p),
        "components/counter.toml:6:14: error: unknown component `greter` (did you mean `greeter`?)"
    );

    let mut p = hello();
    p.files.insert("components/greeter.toml".into(), b"name = \"greeter\"\ntype = \"script\"\ndirectory = \"components/src/greeter\"\ncolour = 1\n".to_vec());
    let r = ferry_appconfig::validate(&p);
    assert!(
        r.config.is_some(),
        "unknown keys are warnings: Nuon ignores them"
    );
    assert_eq!(
        r.diagnostics.to_string(),
        "components/greeter.toml:4:1: warning: unknown key `colour` in script component: it is ignored"
    );
    let mut strict = r.diagnostics.clone();
    strict.strict();
    assert!(strict.has_errors(), "--strict makes warnings errors");

    let mut p = hello();
    p.files.insert("components/greeter.toml".into(), b"name = \"greeter\"\ntype = \"script\"\ndirectory = \"components/src/greeter\"\ndependencies = [\"reporter\"]\n".to_vec());
    let d = diag(&p);
    assert!(
        d.contains("error: dependency cycle: counter -> greeter -> reporter -> counter"),
        "{d}"
    );

    let mut p = hello();
    p.files.insert(
        "sandbox.toml".into(),
        b"type = \"script\"\ndirectory = \"nowhere\"\n".to_vec(),
    );
    assert_eq!(
        diag(&p),
        "sandbox.toml:2:13: error: directory `nowhere` not found in the package"
    );

    let mut p = hello();
    p.files.remove("metadata.toml");
    assert_eq!(diag(&p), "metadata.toml:1:1: error: missing metadata.toml");

    let mut p = hello();
    p.files.insert("components/greeter.toml".into(), b"name = \"greeter\"\ntype = \"script\"\ndirectory = \"components/src/greeter\"\n[env_vars]\nX = \"{{.nuon.inputs.inputs.greetin}}\"\n".to_vec());
    let r = ferry_appconfig::validate(&p);
    assert!(
        r.config.is_some(),
        "an unknown input fails at deploy: Nuon syncs it"
    );
    assert_eq!(
        r.diagnostics.to_string(),
        "components/greeter.toml:5:8: warning: unknown input `greetin` (did you mean `greeting`?): it fails when rendered at deploy"
    );
}

#[test]
fn renders_against_install_state() {
    let cfg = load(&hello()).unwrap();
    let mut outs = std::collections::BTreeMap::new();
    let mut g = serde_json::Map::new();
    g.insert("message".into(), "hi, dev!".into());
    outs.insert("greeter".to_string(), g);
    let state = cfg.template_state(&ferry_appconfig::state::Facts {
        install: "dev",
        component_outputs: Some(&outs),
        ..Default::default()
    });
    let r = cfg.component("counter").unwrap().render(&state).unwrap();
    assert_eq!(
        r.vars,
        vec![("message".to_string(), "hi, dev!".to_string())]
    );
    let err = cfg
        .component("reporter")
        .unwrap()
        .render(&state)
        .unwrap_err();
    assert!(
        err.contains("`.nuon.components.counter.outputs.length` is not set"),
        "{err}"
    );
}

#[test]
fn bundles_round_trip_and_refuse_escaping_paths() {
    let p = hello();
    assert_eq!(Package::from_bundle(&p.to_bundle()).unwrap(), p);
    assert!(Package::from_bundle(b"garbage").is_err());
    let mut evil = Package::default();
    evil.files.insert("../etc/passwd".into(), vec![]);
    assert!(Package::from_bundle(&evil.to_bundle()).is_err());
}
