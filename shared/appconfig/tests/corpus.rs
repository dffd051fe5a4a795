//! The fixture corpus: app directories shaped like real vendor apps must validate with the expected
//! deploy order, and each invalid variant must give exactly the expected first diagnostic.
//!
//! Long because it is a table of cases: one line of expected diagnostic per invalid variant.

use std::path::{Path, PathBuf};

use ferry_appconfig::{Package, Severity, validate};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/apps")
}

fn app(name: &str) -> Package {
    Package::from_dir(&fixtures().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn order(name: &str) -> (bool, Vec<Vec<String>>) {
    let r = validate(&app(name));
    let errors: Vec<String> = r.diagnostics.errors().map(|d| d.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{name} should be valid:\n{}",
        errors.join("\n")
    );
    let cfg = r.config.unwrap();
    (cfg.sandbox.is_some(), cfg.deploy_order)
}

fn stages(s: &[&[&str]]) -> Vec<Vec<String>> {
    s.iter()
        .map(|st| st.iter().map(|x| x.to_string()).collect())
        .collect()
}

#[test]
fn every_fixture_validates_with_its_deploy_order() {
    let expected: &[(&str, bool, &[&[&str]])] = &[
        ("aks-web", true, &[&["namespace"], &["web"], &["dns"]]),
        ("byoc-db", false, &[&["db"]]),
        (
            "data-pipeline",
            true,
            &[&["etl-image", "warehouse"], &["etl"]],
        ),
        (
            "ecs-service",
            false,
            &[&["network"], &["cluster", "storage"], &["service"]],
        ),
        (
            "eks-platform",
            true,
            &[
                &["api_image", "certificate", "database"],
                &["ingress"],
                &["api"],
                &["network_policy"],
            ],
        ),
        ("gke-pulumi", true, &[&["bucket"], &["reader"]]),
        (
            "kustomize-ops",
            false,
            &[&["base", "configmap"], &["local-overlay"]],
        ),
        (
            "lambda-api",
            true,
            &[&["image", "table"], &["function"], &["gateway"]],
        ),
        (
            "local-scripts",
            true,
            &[&["cache", "config"], &["server"], &["monitor"]],
        ),
        (
            "multi-cluster",
            false,
            &[&["compute-cluster", "data-cluster"], &["analytics"]],
        ),
        ("nuon-compat", true, &[&["whoami"], &["whoami_chart"]]),
        (
            "nuon-shapes",
            true,
            &[&["queue"], &["app"], &["network_policy"]],
        ),
        ("tf-only", false, &[&["vpc"], &["peering"]]),
    ];
    let on_disk: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        on_disk.len(),
        expected.len(),
        "every fixture has an expected deploy order"
    );
    for (name, sandbox, want) in expected {
        let (has_sandbox, got) = order(name);
        assert_eq!(has_sandbox, *sandbox, "{name}: sandbox");
        assert_eq!(got, stages(want), "{name}: deploy order");
    }
}

/// `nuon-shapes` is written in every shape Nuon's rules (docs/app-config.md, "Compatibility with Nuon") lists, as Nuon's own examples write
/// them: it is valid, and its warnings are exactly these (keys Ferry reads but does not act on yet
/// are counted, not listed: that list shrinks as features land).
#[test]
fn nuon_shapes_validate_with_exact_warnings_and_carry_their_values() {
    let r = validate(&app("nuon-shapes"));
    let cfg = r.config.clone().expect("nuon-shapes is valid");
    let (pending, warnings): (Vec<String>, Vec<String>) = r
        .diagnostics
        .warnings()
        .map(|d| d.to_string())
        .partition(|w| {
            w.contains("not acted on")
                || w.contains("cannot deploy them yet")
                || w.contains("not enforced")
        });
    assert_eq!(
        warnings,
        [
            "actions/smoke.toml:9:8: warning: this `cron` trigger has no `cron_schedule`: it never fires",
            "actions/smoke.toml:17:22: warning: template: unknown function `ferry` (Nuon accepts it, but rendering it at deploy fails)",
            "components/app.toml:4:1: warning: unknown key `namspace` in helm_chart component (did you mean `namespace`?): it is ignored",
            "components/app.toml:13:12: warning: `./components/values/app.yaml` (from `contents`) is resolved against `components/`, where it does not exist; it was found at the package root: write `../components/values/app.yaml`",
            "components/app.toml:20:12: warning: `contents`: `https://charts.example.com/acme/values.yaml` is a remote reference, fetched by `ferry apps sync`; not checked here",
            "components/queue.toml:17:10: warning: not a template: a string without `.nuon` is never rendered (Nuon passes it through), so its `{{ }}` appear literally",
            "secrets/license.toml:3:16: warning: not a template: a string without `.nuon` is never rendered (Nuon passes it through), so its `{{ }}` appear literally",
        ]
    );
    assert_eq!(pending.len(), 15, "{pending:#?}");
    // R2: `./boundary.json` (permissions, break glass), `./values/..` (components),
    // `./scripts/..` (actions), `./no-privileged.yaml` (a policy in `policies/k8s/`) only exist under
    // their block's base directory: had any been resolved from the root, it would be an error above.
    // R5/R6 values Ferry acts on.
    assert!(cfg.installs[0].approve_all, "approval_option = approve-all");
    assert_eq!(
        cfg.policies[0].components,
        Vec::<String>::new(),
        "`*` is every component"
    );
    assert_eq!(cfg.policies[0].name, "policies");
    let rb = &cfg.runbooks[0];
    assert_eq!(
        rb.steps[0].kind,
        ferry_appconfig::RunbookStepKind::Deploy {
            component: "app".into(),
            dependents: true,
            plan_only: false
        }
    );
    // An inline action is an action of its own, found by its name.
    let inline = format!("{}.check", rb.name);
    assert_eq!(
        rb.steps[1].kind,
        ferry_appconfig::RunbookStepKind::Action {
            action: inline.clone()
        }
    );
    assert!(cfg.action(&inline).is_some_and(|a| a.steps.len() == 1));
    // Nuon's other step types (its byoc app tears down with `sandbox_deprovision`).
    use ferry_appconfig::RunbookStepKind as K;
    let kinds: Vec<&K> = cfg.runbooks[1].steps.iter().map(|s| &s.kind).collect();
    assert_eq!(
        kinds,
        [
            &K::Deploy {
                component: "app".into(),
                dependents: true,
                plan_only: true
            },
            &K::SandboxReprovision {
                skip_components: true
            },
            &K::ComponentTearDown {
                component: "app".into()
            },
            &K::SandboxDeprovision,
        ]
    );
    assert_eq!(
        cfg.component("network_policy").unwrap().dependencies,
        vec!["app"]
    );
    assert_eq!(
        r.remote.len(),
        1,
        "the remote values file, for sync to fetch"
    );
    // Sprig-heavy values render at deploy; `{{nuon.install.id}}` (no dot) stays as written.
    let inputs = [("domain".to_string(), "Acme.Example.".to_string())].into();
    let state = cfg.template_state(&ferry_appconfig::state::Facts {
        org: "acme",
        app: "nuon-shapes",
        install: "prod-eu",
        inputs: Some(&inputs),
        ..Default::default()
    });
    let vars = cfg.component("queue").unwrap().render(&state).unwrap().vars;
    let var = |k: &str| vars.iter().find(|(n, _)| n == k).unwrap().1.clone();
    assert_eq!(
        var("tags"),
        r#"{"domain":"acme.example","install":"prod-eu"}"#
    );
    assert_eq!(var("retention"), "168h");
    assert_eq!(var("label"), "{{nuon.install.id}}");
    assert_eq!(var("name"), "prod-eu-queue");
}

#[test]
fn fixtures_carry_what_ferry_reads() {
    let cfg = validate(&app("eks-platform")).config.unwrap();
    assert_eq!(
        cfg.metadata.extra["onboarding"]["steps"][0],
        "create the stack"
    );
    assert_eq!(
        cfg.component("api").unwrap().dependencies,
        vec!["api_image", "database", "ingress"]
    );
    assert_eq!(
        cfg.actions
            .iter()
            .find(|a| a.name == "migrate")
            .unwrap()
            .dependencies,
        vec!["database"]
    );
    assert_eq!(
        cfg.actions
            .iter()
            .find(|a| a.name == "healthcheck")
            .unwrap()
            .triggers[0]
            .cron_schedule
            .as_deref(),
        Some("*/5 * * * *")
    );
    assert_eq!(cfg.runbooks[0].steps[1].name, "verify");
    assert_eq!(
        cfg.runbooks[0].steps[1].kind,
        ferry_appconfig::RunbookStepKind::Action {
            action: "healthcheck".into()
        }
    );
    assert_eq!(cfg.installs[0].inputs["domain"], "dev.acme.example");
    assert_eq!(cfg.installs[0].inputs["replicas"], "1");
    assert_eq!(cfg.policies.len(), 3);
    assert_eq!(cfg.policies[1].engine, "kyverno");
    let names: Vec<&str> = cfg.secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["license_key"]);
    // Referenced files are part of the component's content hash: editing a values file rebuilds it.
    let before = cfg.component("ingress").unwrap().content_hash.clone();
    let mut pkg = app("eks-platform");
    pkg.files.insert(
        "values/ingress.yaml".into(),
        b"controller:\n  replicaCount: 3\n".to_vec(),
    );
    let after = validate(&pkg).config.unwrap();
    assert_ne!(after.component("ingress").unwrap().content_hash, before);
    assert_eq!(
        after.component("certificate").unwrap().content_hash,
        cfg.component("certificate").unwrap().content_hash
    );

    let byoc = validate(&app("byoc-db")).config.unwrap();
    let names: Vec<&str> = byoc.secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["admin_password", "tls_cert"]);
    assert_eq!(byoc.inputs.len(), 3);
}

#[test]
fn keys_ferry_does_not_act_on_are_warnings_that_say_so() {
    let r = validate(&app("multi-cluster"));
    let warnings: Vec<String> = r.diagnostics.warnings().map(|d| d.to_string()).collect();
    assert!(warnings.contains(&"components/analytics.toml:6:1: warning: `toggleable` is accepted but not acted on by this version of Ferry".to_string()), "{warnings:#?}");
    // Drift schedules are acted on.
    assert!(
        !warnings.iter().any(|w| w.contains("`drift_schedule`")),
        "{warnings:#?}"
    );
    // Helm charts deploy; a type without a plugin says so.
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("`helm_chart` components are checked")),
        "{warnings:#?}"
    );
    let image = validate(&app("gke-pulumi"));
    let image: Vec<String> = image
        .diagnostics
        .warnings()
        .map(|d| d.to_string())
        .collect();
    assert!(image.contains(&"components/bucket.toml:2:8: warning: `pulumi` components are checked, but this version of Ferry cannot deploy them yet".to_string()), "{image:#?}");
    assert!(
        r.diagnostics
            .0
            .iter()
            .all(|d| d.severity == Severity::Warning)
    );
}

/// One variant: start from a fixture, replace (or delete) files; returns every diagnostic, and
/// whether the package is still valid.
fn diagnostics(base: &str, changes: &[(&str, Option<&str>)]) -> (bool, Vec<String>) {
    let mut pkg = app(base);
    for (path, content) in changes {
        match content {
            Some(c) => {
                pkg.files.insert(path.to_string(), c.as_bytes().to_vec());
            }
            None => {
                pkg.files.remove(*path);
            }
        }
    }
    let r = validate(&pkg);
    let all = r.diagnostics.0.iter().map(|d| d.to_string()).collect();
    (r.config.is_some(), all)
}

/// Test-only: a formatted case body that lives as long as the test.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// (base fixture, file changes — `None` deletes —, the diagnostic expected among the errors)
type Case = (
    &'static str,
    Vec<(&'static str, Option<&'static str>)>,
    &'static str,
);

const SERVER: &str = "name = \"server\"\ntype = \"script\"\ndirectory = \"scripts/server\"\n";

#[test]
fn variants_give_exact_diagnostics() {
    let cases: Vec<Case> = vec![
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some("name = \"server\"\ntype = \"script\"\ndirectry = \"scripts/server\"\n"),
            )],
            "components/server.toml:3:1: warning: unknown key `directry` in script component (did you mean `directory`?): it is ignored",
        ),
        (
            "local-scripts",
            vec![("sanbox.toml", Some("type = \"script\"\n"))],
            "sanbox.toml:1:1: warning: unknown file `sanbox.toml` (did you mean `sandbox.toml`?) is ignored: app packages use metadata.toml, sandbox.toml, components/*.toml, ...",
        ),
        (
            "local-scripts",
            vec![("metadata.toml", None)],
            "metadata.toml:1:1: error: missing metadata.toml",
        ),
        (
            "local-scripts",
            vec![("metadata.toml", Some("description = \"x\"\n"))],
            "metadata.toml:1:1: error: missing required key `version` in metadata.toml",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some("name = \"server\"\ntype = \"script\ndirectory = \"x\"\n"),
            )],
            "components/server.toml:2:15: error: invalid basic string, expected `\"`",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some("name = \"server\"\ntype = \"scrpt\"\n"),
            )],
            "components/server.toml:2:8: error: unknown component type `scrpt` (did you mean `script`?) (expected one of: terraform_module, script, helm_chart, kubernetes_manifest, container_image, external_image, docker_build, job, pulumi)",
        ),
        (
            "local-scripts",
            vec![(
                "components/monitor.toml",
                Some(
                    "name = \"monitor\"\ntype = \"script\"\ndirectory = \"scripts/monitor\"\ndependencies = \"server\"\n",
                ),
            )],
            "components/monitor.toml:4:16: error: `dependencies` must be an array, found a string",
        ),
        (
            "local-scripts",
            vec![(
                "components/monitor.toml",
                Some(
                    "name = \"monitor\"\ntype = \"script\"\ndirectory = \"scripts/monitor\"\ndependencies = [\"servr\"]\n",
                ),
            )],
            "components/monitor.toml:4:17: error: unknown component `servr` in dependencies (did you mean `server`?)",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nCONFIG = \"{{{{.nuon.components.confg.outputs.path}}}}\"\n"
                ))),
            )],
            "components/server.toml:5:13: error: unknown component `confg` (did you mean `config`?)",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nPORT = \"{{{{ .nuon.inputs.inputs.prot }}}}\"\n"
                ))),
            )],
            "components/server.toml:5:12: warning: unknown input `prot` (did you mean `port`?): it fails when rendered at deploy",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nID = \"{{{{ .nuon.install.id | uper }}}}\"\n"
                ))),
            )],
            "components/server.toml:5:29: warning: template: unknown function `uper` (did you mean `upper`?) (Nuon accepts it, but rendering it at deploy fails)",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nID = \"x {{{{ .nuon.install.id\"\n"
                ))),
            )],
            "components/server.toml:5:9: warning: template: unclosed action: `{{` without `}}` (Nuon accepts it, but rendering it at deploy fails)",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nPORT = \"{{{{.nuon.inputs.port}}}}\"\n"
                ))),
            )],
            "components/server.toml:5:11: warning: inputs are read as `.nuon.inputs.inputs.port`, not `.nuon.inputs.port` (it fails when rendered at deploy)",
        ),
        (
            "local-scripts",
            vec![(
                "components/config.toml",
                Some(
                    "name = \"config\"\ntype = \"script\"\ndirectory = \"scripts/config\"\ndependencies = [\"monitor\"]\n",
                ),
            )],
            "components/config.toml:1:8: error: dependency cycle: config -> monitor -> server -> config",
        ),
        (
            "local-scripts",
            vec![(
                "components/cache.toml",
                Some(
                    "name = \"cache\"\ntype = \"script\"\ndirectory = \"scripts/cache\"\ndependencies = [\"cache\"]\n",
                ),
            )],
            "components/cache.toml:4:17: error: component `cache` depends on itself",
        ),
        (
            "local-scripts",
            vec![(
                "components/cache2.toml",
                Some("name = \"cache\"\ntype = \"script\"\ndirectory = \"scripts/cache\"\n"),
            )],
            "components/cache2.toml:1:8: error: component `cache` is already declared in components/cache.toml",
        ),
        (
            "local-scripts",
            vec![(
                "components/cache.toml",
                Some("name = \"Cache\"\ntype = \"script\"\ndirectory = \"scripts/cache\"\n"),
            )],
            "components/cache.toml:1:8: error: invalid component name `Cache`: use lowercase letters, digits, `-` and `_`, starting with a letter (and not `sandbox`)",
        ),
        (
            "local-scripts",
            vec![
                ("scripts/cache/apply.sh", None),
                ("scripts/cache/run.sh", Some("#!/bin/sh\n")),
            ],
            "components/cache.toml:3:13: error: directory `scripts/cache` has no apply.sh",
        ),
        (
            "local-scripts",
            vec![(
                "components/cache.toml",
                Some("name = \"cache\"\ntype = \"script\"\ndirectory = \"scripts/nowhere\"\n"),
            )],
            "components/cache.toml:3:13: error: directory `scripts/nowhere` not found in the package",
        ),
        (
            "eks-platform",
            vec![(
                "components/0-certificate.toml",
                Some(
                    "name = \"certificate\"\ntype = \"terraform_module\"\ndirectory = \"src/certificate\"\n\n[public_repo]\nrepo = \"acme/x\"\n",
                ),
            )],
            "components/0-certificate.toml:5:2: error: `directory` and `public_repo` are mutually exclusive: a component has one source",
        ),
        (
            "eks-platform",
            vec![(
                "actions/healthcheck.toml",
                Some(
                    "name = \"healthcheck\"\n\n[[triggers]]\ntype = \"cron\"\n\n[[steps]]\nname = \"probe\"\ncommand = \"true\"\n",
                ),
            )],
            "actions/healthcheck.toml:4:8: warning: this `cron` trigger has no `cron_schedule`: it never fires",
        ),
        (
            "eks-platform",
            vec![(
                "actions/healthcheck.toml",
                Some(
                    "name = \"healthcheck\"\n\n[[triggers]]\ntype = \"cron\"\ncron_schedule = \"*/5 * * *\"\n\n[[steps]]\nname = \"probe\"\ncommand = \"true\"\n",
                ),
            )],
            "actions/healthcheck.toml:5:17: error: invalid cron schedule `*/5 * * *` for `cron_schedule`: expected 5 fields (minute hour day month weekday), found 4",
        ),
        (
            "eks-platform",
            vec![(
                "actions/healthcheck.toml",
                Some(
                    "name = \"healthcheck\"\ntimeout = \"5 minutes\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"probe\"\ncommand = \"true\"\n",
                ),
            )],
            "actions/healthcheck.toml:2:11: error: invalid duration `5 minutes` for `timeout` (expected e.g. `30s`, `5m`, `1h30m`)",
        ),
        (
            "eks-platform",
            vec![(
                "actions/migrate.toml",
                Some(
                    "name = \"migrate\"\n\n[[triggers]]\ntype = \"post-deploy-component\"\ncomponent_name = \"databse\"\n\n[[steps]]\nname = \"m\"\ncommand = \"true\"\n",
                ),
            )],
            "actions/migrate.toml:5:18: error: unknown component `databse` in trigger (did you mean `database`?)",
        ),
        (
            "eks-platform",
            vec![(
                "actions/migrate.toml",
                Some(
                    "name = \"migrate\"\n\n[[triggers]]\ntype = \"post-deploy-components\"\n\n[[steps]]\nname = \"m\"\ncommand = \"true\"\n",
                ),
            )],
            "actions/migrate.toml:4:8: error: unknown value `post-deploy-components` for `type` (did you mean `post-deploy-component`?)",
        ),
        (
            "eks-platform",
            vec![(
                "runbooks/upgrade.toml",
                Some(
                    "name = \"upgrade\"\n\n[[steps]]\nname = \"verify\"\ntype = \"action\"\naction_name = \"healthchek\"\n",
                ),
            )],
            "runbooks/upgrade.toml:6:15: error: unknown action `healthchek` (did you mean `healthcheck`?)",
        ),
        (
            "eks-platform",
            vec![("policies/vpc-cidr.rego", None)],
            "policies.toml:4:12: error: file `./policies/vpc-cidr.rego` (from `contents`, resolved against the package root) not found in the package",
        ),
        (
            "eks-platform",
            vec![(
                "policies.toml",
                Some(
                    "[[policy]]\ntype = \"sandbox\"\nengine = \"opa\"\ncontents = \"./policies/no-privileged.yaml\"\n",
                ),
            )],
            "policies.toml:3:10: warning: `./policies/no-privileged.yaml` looks like a kyverno policy, but the policy's engine is opa",
        ),
        (
            "eks-platform",
            vec![(
                "components/1-ingress.toml",
                Some(
                    "name = \"ingress\"\ntype = \"helm_chart\"\nchart_name = \"x\"\nstorage_driver = \"configmaps\"\n\n[helm_repo]\nrepo_url = \"https://x\"\nchart = \"x\"\n",
                ),
            )],
            "components/1-ingress.toml:4:18: error: unknown value `configmaps` for `storage_driver` (did you mean `configmap`?) (expected one of: configmap, secret)",
        ),
        (
            "eks-platform",
            vec![(
                "installs/acme-dev.toml",
                Some("name = \"acme-dev\"\n\n[[inputs]]\ndomian = \"x\"\n"),
            )],
            "installs/acme-dev.toml:4:1: warning: unknown input `domian` (did you mean `domain`?): the install cannot set it",
        ),
        (
            "local-scripts",
            vec![(
                "inputs.toml",
                Some("[[input]]\nname = \"port\"\ntype = \"number\"\ndefault = \"eighty\"\n"),
            )],
            "inputs.toml:4:11: warning: the default of input `port` is not a valid number: an install must give it a value",
        ),
        (
            "lambda-api",
            vec![(
                "policies/on-demand.rego",
                Some("package lambda.ondemand\n\ndeny contains msg if {\n  input.plan ==\n}\n"),
            )],
            "policies/on-demand.rego:5:1: error: policy does not compile: expecting expression",
        ),
        (
            "eks-platform",
            vec![("secrets.toml", Some("[[secret]]\nname = \"other\"\n"))],
            "secrets.toml:1:1: error: both `secrets.toml` and `secrets/` exist: use one of them",
        ),
        (
            "eks-platform",
            vec![(
                "components/2-database.toml",
                Some(
                    "name = \"database\"\ntype = \"terraform_module\"\n\n[[connected_repo]]\nrepo = \"acme/infra\"\n",
                ),
            )],
            "components/2-database.toml:4:1: error: `connected_repo` must be a single table: write `[connected_repo]`, not `[[connected_repo]]`",
        ),
        (
            "eks-platform",
            vec![(
                "actions/healthcheck.toml",
                Some(
                    "name = \"healthcheck\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"probe\"\ncommand = \"true\"\ninline_contents = \"echo\"\n",
                ),
            )],
            "actions/healthcheck.toml:9:1: error: step `probe`: `command` and `inline_contents` are mutually exclusive",
        ),
        (
            "kustomize-ops",
            vec![(
                "components/configmap.toml",
                Some("name = \"configmap\"\ntype = \"kubernetes_manifest\"\nnamespace = \"ops\"\n"),
            )],
            "components/configmap.toml:1:1: error: a kubernetes_manifest needs `manifest` or `kustomize`",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nID = \"{{{{ .install.id }}}}\"\n"
                ))),
            )],
            "components/server.toml:5:7: warning: not a template: a string without `.nuon` is never rendered (Nuon passes it through), so its `{{ }}` appear literally",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nME = \"{{{{ .nuon.components.server.outputs.x }}}}\"\n"
                ))),
            )],
            "components/server.toml:5:10: error: component `server` cannot read its own outputs",
        ),
        (
            "local-scripts",
            vec![(
                "sandbox.toml",
                Some(
                    "type = \"script\"\ndirectory = \"sandbox\"\n\n[env_vars]\nX = \"{{.nuon.components.cache.outputs.url}}\"\n",
                ),
            )],
            "sandbox.toml:1:1: error: the sandbox cannot depend on components (it reads outputs of cache): it is deployed before them",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nID = \"{{{{ .nuon.install.idd }}}}\"\n"
                ))),
            )],
            "components/server.toml:5:10: warning: `.nuon.install.idd`: `.nuon.install` has no field `idd` (did you mean `id`?): it fails when rendered at deploy",
        ),
        (
            "local-scripts",
            vec![(
                "components/server.toml",
                Some(leak(format!(
                    "{SERVER}[env_vars]\nID = \"{{{{ index .nuon.install.id 0 }}}}\"\n"
                ))),
            )],
            "components/server.toml:5:10: warning: template: `index`: cannot index a string with an int (Nuon accepts it, but rendering it at deploy fails)",
        ),
        (
            "eks-platform",
            vec![(
                "components/2-database.toml",
                Some(
                    "name = \"database\"\ntype = \"terraform_module\"\n\n[connected_repo]\nrepo = \"acme/infra\"\nbranchh = \"main\"\n",
                ),
            )],
            "components/2-database.toml:6:1: warning: unknown key `branchh` in public_repo / connected_repo (did you mean `branch`?): it is ignored",
        ),
    ];
    assert!(cases.len() >= 25);
    let mut failures = Vec::new();
    for (i, (base, changes, want)) in cases.iter().enumerate() {
        let (valid, got) = diagnostics(base, changes);
        // An error makes the package invalid; a warning alone never does (Nuon accepts it).
        let only_warnings = got.iter().all(|g| !g.contains(": error: "));
        if (want.contains(": error: ") && valid) || only_warnings != valid {
            failures.push(format!("case {i}: valid = {valid}, but expected {want}"));
        }
        if !got.iter().any(|g| g == want) {
            failures.push(format!(
                "case {i}:\n  want: {want}\n  got:  {}",
                got.join("\n        ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// docs/app-config.md's reference is the schema's; regenerate it with
/// `ferry apps schema --markdown` (or run this test with FERRY_UPDATE_DOCS=1).
#[test]
fn the_docs_reference_matches_the_schema() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/app-config.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = doc
        .split_once("<!-- generated: begin -->\n")
        .expect("begin marker");
    let (current, tail) = rest
        .split_once("<!-- generated: end -->")
        .expect("end marker");
    let generated = ferry_appconfig::markdown_reference();
    if std::env::var_os("FERRY_UPDATE_DOCS").is_some() {
        std::fs::write(
            &path,
            format!("{head}<!-- generated: begin -->\n{generated}<!-- generated: end -->{tail}"),
        )
        .unwrap();
        return;
    }
    assert!(
        current == generated,
        "docs/app-config.md is out of date: run `FERRY_UPDATE_DOCS=1 cargo test -p ferry-appconfig --test all corpus`"
    );
    // Every block and every component type is documented.
    for b in ferry_appconfig::schema::BLOCKS {
        assert!(
            doc.contains(&format!("`{}", b.name)),
            "{} is not documented",
            b.name
        );
    }
    for (t, _, _) in ferry_appconfig::schema::COMPONENT_TYPES {
        assert!(
            doc.contains(&format!("type = \"{t}\"")) || *t == "external_image",
            "{t} is not documented"
        );
    }
}

/// The JSON Schema is valid JSON Schema shape and covers every file kind.
#[test]
fn the_json_schema_covers_every_file() {
    let s = ferry_appconfig::json_schema();
    let defs = s["$defs"].as_object().unwrap();
    for key in [
        "metadata.toml",
        "sandbox.toml",
        "components/*.toml",
        "actions/*.toml",
        "runbooks/*.toml",
        "installs/*.toml",
        "secrets/*.toml",
        "permissions/*.toml",
    ] {
        assert!(defs.contains_key(key), "{key}");
    }
    assert_eq!(
        defs["components/*.toml"]["oneOf"].as_array().unwrap().len(),
        ferry_appconfig::schema::COMPONENT_TYPES.len()
    );
    assert_eq!(
        defs["metadata.toml"]["required"],
        serde_json::json!(["version"])
    );
}

/// Every block may be one file instead of a directory: `components.toml` with `[[components]]`.
#[test]
fn directory_blocks_have_a_single_file_form() {
    let mut pkg = app("local-scripts");
    let mut joined = String::new();
    for name in ["cache", "config", "monitor", "server"] {
        let path = format!("components/{name}.toml");
        let text = String::from_utf8(pkg.files.remove(&path).unwrap()).unwrap();
        // Each file's keys become one `[[components]]` table (its `[env_vars]` a sub-table).
        joined.push_str("[[components]]\n");
        joined.push_str(&text.replace("[env_vars]", "[components.env_vars]"));
        joined.push('\n');
    }
    pkg.files
        .insert("components.toml".into(), joined.into_bytes());
    pkg.files.insert(
        "actions.toml".into(),
        b"[[actions]]\nname = \"restart\"\ntimeout = \"1m\"\n\n[[actions.triggers]]\ntype = \"manual\"\n\n[[actions.steps]]\nname = \"restart\"\ncommand = \"echo {{.nuon.components.server.outputs.pid}}\"\n".to_vec(),
    );
    let r = validate(&pkg);
    let errors: Vec<String> = r.diagnostics.errors().map(|d| d.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let cfg = r.config.unwrap();
    assert_eq!(
        cfg.deploy_order,
        stages(&[&["cache", "config"], &["server"], &["monitor"]])
    );
    assert_eq!(cfg.actions[0].dependencies, vec!["server"]);

    // Errors inside point into components.toml, at the item's table.
    let text = String::from_utf8(pkg.files["components.toml"].clone()).unwrap();
    pkg.files.insert(
        "components.toml".into(),
        text.replacen("directory = \"scripts/cache\"\n", "", 1)
            .into_bytes(),
    );
    let errors: Vec<String> = validate(&pkg)
        .diagnostics
        .errors()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        errors,
        vec![
            "components.toml:1:1: error: missing required key `directory` in script component"
                .to_string()
        ]
    );

    pkg.files.insert(
        "components.toml".into(),
        b"[components]\nname = \"x\"\n".to_vec(),
    );
    let errors: Vec<String> = validate(&pkg)
        .diagnostics
        .errors()
        .map(|d| d.to_string())
        .collect();
    assert!(errors.contains(&"components.toml:1:2: error: `components` must be an array of tables: write `[[components]]`".to_string()), "{errors:#?}");
}

/// Validation and deploys share one definition of the template state: every path of it that
/// validation accepts without a word renders strictly against a minimal real install.
#[test]
fn every_path_validation_accepts_renders_at_deploy() {
    use ferry_appconfig::state::{self, Facts};
    let mut pkg = app("local-scripts");
    let cfg = validate(&pkg).config.unwrap();
    let stand_in = state::build(
        &cfg,
        &Facts {
            install: "validate",
            ..Default::default()
        },
    );
    let paths = state::paths(&stand_in);
    assert!(paths.len() > 40, "{paths:?}");
    // A component nothing depends on reads every path (other components' state included).
    let mut probe = String::from(
        "name = \"probe\"\ntype = \"script\"\ndirectory = \"scripts/server\"\n[env_vars]\n",
    );
    for (i, p) in paths.iter().enumerate() {
        probe.push_str(&format!("P{i} = \"{{{{ .nuon.{} }}}}\"\n", p.join(".")));
    }
    pkg.files
        .insert("components/probe.toml".into(), probe.into_bytes());
    let r = validate(&pkg);
    let said: Vec<String> = r.diagnostics.0.iter().map(|d| d.to_string()).collect();
    assert!(said.is_empty(), "validation accepts every path: {said:#?}");
    let cfg = r.config.unwrap();
    let inputs = Default::default();
    let deploy = cfg.template_state(&Facts {
        org: "acme",
        app: "local-scripts",
        install: "acme-dev",
        inputs: Some(&inputs),
        ..Default::default()
    });
    let rendered = cfg.component("probe").unwrap().render(&deploy);
    assert!(rendered.is_ok(), "{rendered:?}");
    // And the legacy spellings Nuon still renders.
    for legacy in [
        "install.id",
        "install.inputs.port",
        "install.sandbox.outputs",
        "app.id",
        "org.name",
        "secrets",
    ] {
        assert!(
            paths.iter().any(|p| p.join(".").starts_with(legacy)),
            "{legacy}"
        );
    }
}

#[test]
fn install_inputs_are_checked_against_their_declared_types() {
    let cfg = validate(&app("local-scripts")).config.unwrap();
    let inputs = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let number = cfg.inputs.iter().find(|i| i.kind == "number").unwrap();
    let boolean = cfg.inputs.iter().find(|i| i.kind == "bool").unwrap();
    assert_eq!(
        cfg.check_inputs(&inputs(&[(&number.name, "abc")])),
        Err(format!(
            "input `{}` must be a number, got `abc`",
            number.name
        ))
    );
    assert_eq!(
        cfg.check_inputs(&inputs(&[(&boolean.name, "yes")])),
        Err(format!(
            "input `{}` must be `true` or `false`, got `yes`",
            boolean.name
        ))
    );
    assert_eq!(
        cfg.check_inputs(&inputs(&[(&number.name, "inf")])),
        Err(format!(
            "input `{}` must be a number, got `inf`",
            number.name
        ))
    );
    assert!(
        cfg.check_inputs(&inputs(&[(&number.name, "3"), (&boolean.name, "true")]))
            .is_ok()
    );
    assert!(
        cfg.check_inputs(&inputs(&[("nmae", "x")]))
            .unwrap_err()
            .starts_with("unknown input `nmae`")
    );
}

/// A default that does not match its input's type (Nuon's own byoc app has a required bool input
/// defaulting to `please-provide-a-value`) is a warning at validation, and an install created
/// without a value for that input is refused; one that gives a value is not.
#[test]
fn a_default_of_the_wrong_type_is_a_warning_and_needs_a_value_at_install() {
    let mut pkg = app("local-scripts");
    pkg.files.insert(
        "inputs.toml".into(),
        b"[[input]]\nname = \"enable_sso\"\ntype = \"bool\"\nrequired = true\ndefault = \"please-provide-a-value\"\n".to_vec(),
    );
    let r = validate(&pkg);
    let shown: Vec<String> = r.diagnostics.0.iter().map(|d| d.to_string()).collect();
    assert!(
        shown.contains(&"inputs.toml:5:11: warning: the default of input `enable_sso` is not a valid bool: an install must give it a value".to_string()),
        "{shown:#?}"
    );
    let cfg = r.config.expect("valid, as Nuon takes it");
    let given = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert_eq!(
        cfg.check_inputs(&given(&[])),
        Err("input `enable_sso` needs a value: its default `please-provide-a-value` is not a valid bool".into())
    );
    assert!(cfg.check_inputs(&given(&[("enable_sso", "true")])).is_ok());
}

#[test]
fn an_input_change_reaches_the_components_whose_templates_read_it() {
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello");
    let cfg = validate(&Package::from_dir(&hello).unwrap())
        .config
        .unwrap();
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
    assert_eq!(cfg.readers_of(&names(&["greeting"])), ["greeter"]);
    assert!(cfg.readers_of(&names(&["nothing-reads-this"])).is_empty());
}

/// Rego with templates (Nuon renders policy contents per install) is not compiled before it is
/// rendered: a template outside a string is no error at validation.
#[test]
fn a_templated_policy_is_not_compiled_before_it_is_rendered() {
    let mut pkg = app("lambda-api");
    pkg.files.insert(
        "policies/on-demand.rego".into(),
        b"package lambda.ondemand\n\ndeny contains msg if {\n  count(input.plan.resource_changes) > {{.nuon.inputs.inputs.max_changes}}\n  msg := \"too many\"\n}\n".to_vec(),
    );
    let r = validate(&pkg);
    let errors: Vec<String> = r
        .diagnostics
        .0
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}
