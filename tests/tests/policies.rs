//! The app's OPA policies, evaluated by the install's runner against the real `terraform show
//! -json` of each plan: a deny blocks the apply and says why, a warning annotates the plan.

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, repo_root};

/// examples/hello with `policies.toml` and its Rego files.
fn app_with_policies(dir: &std::path::Path, policies: &[(&str, &str, &str)]) -> std::path::PathBuf {
    let app = dir.join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::create_dir_all(app.join("policies")).unwrap();
    let mut toml = String::new();
    for (name, kind, rego) in policies {
        std::fs::write(app.join(format!("policies/{name}.rego")), rego).unwrap();
        toml.push_str(&format!(
            "[[policy]]\nname = \"{name}\"\ntype = \"{kind}\"\nengine = \"opa\"\ncontents = \"./policies/{name}.rego\"\n\n"
        ));
    }
    std::fs::write(app.join("policies.toml"), toml).unwrap();
    app
}

fn deploy(app: &std::path::Path, dir: &std::path::Path) -> Workflow {
    deploy_audited(app, dir).0
}

/// [`deploy`], and the audit stream's records.
fn deploy_audited(
    app: &std::path::Path,
    dir: &std::path::Path,
) -> (Workflow, Vec<ferry_model::AuditEvent>) {
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, dir.join("server.log"));
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.join("runner"),
        dir.join("runner.log"),
    );
    let wf = ferry_tests::sync_and_create(&api, app, "prod");
    let w = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    let audit = nats.audit_events();
    (w, audit)
}

/// As Nuon's examples write them: Rego v0 with `future.keywords`, `some ... in`, `sprintf`.
const DENY_DATA: &str = r#"package ferry.no_data
import future.keywords.in

deny[msg] {
  some rc in input.plan.resource_changes
  rc.type == "terraform_data"
  "create" in rc.change.actions
  msg := sprintf("%s may not be created", [rc.address])
}
"#;

/// Rego v1, with a helper rule.
const WARN_MANY: &str = r#"package ferry.sizes

creates := [rc | some rc in input.plan.resource_changes; "create" in rc.change.actions]

warn contains msg if {
  count(creates) > 0
  msg := sprintf("%d resource(s) will be created", [count(creates)])
}
"#;

#[test]
fn a_deny_blocks_the_apply_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_with_policies(dir.path(), &[("no-data", "terraform_module", DENY_DATA)]);
    let (w, audit) = deploy_audited(&app, dir.path());
    assert_eq!(name_of(&w.status), "failed", "{w:?}");
    assert_eq!(
        name_of(&the_step(&w, "counter", "plan").status),
        "failed",
        "{w:?}"
    );
    assert_eq!(
        the_step(&w, "counter", "plan").message.as_deref(),
        Some("denied by policy: no-data: terraform_data.message may not be created"),
        "{w:?}"
    );
    assert_ne!(
        name_of(&the_step(&w, "counter", "apply").status),
        "succeeded",
        "{w:?}"
    );
    // The audit stream has the decision.
    assert!(
        audit.iter().any(|e| e.action == "job.failed"
            && e.detail["component"] == "counter"
            && e.detail["error"]
                .as_str()
                .is_some_and(|m| m.starts_with("denied by policy: no-data:"))),
        "{audit:?}"
    );
    // The script components the policy does not cover deployed.
    assert_eq!(
        name_of(&the_step(&w, "greeter", "apply").status),
        "succeeded",
        "{w:?}"
    );
}

#[test]
fn a_warning_lets_the_plan_through_and_shows() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_with_policies(dir.path(), &[("sizes", "terraform_module", WARN_MANY)]);
    let w = deploy(&app, dir.path());
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");
    let plan = the_step(&w, "counter", "plan")
        .message
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        plan,
        "Plan: 1 to add, 0 to change, 0 to destroy. 2 output(s) change. Policy warnings: sizes: 1 resource(s) will be created.",
        "{w:?}"
    );
    assert_eq!(
        name_of(&the_step(&w, "counter", "apply").status),
        "succeeded",
        "{w:?}"
    );
}

/// A policy over a type whose plans this version does not evaluate is not passed in silence: the
/// plan says it was not checked.
#[test]
fn a_policy_over_a_type_not_evaluated_says_so_on_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_with_policies(dir.path(), &[("scripts", "script", WARN_MANY)]);
    let w = deploy(&app, dir.path());
    assert_eq!(name_of(&w.status), "succeeded", "{w:?}");
    assert_eq!(
        the_step(&w, "greeter", "plan").message.as_deref(),
        Some("apply.sh will run Policies not evaluated for this type by this version: scripts."),
        "{w:?}"
    );
    // The Terraform module's plan is not touched by a policy of another type.
    assert!(
        the_step(&w, "counter", "plan")
            .message
            .as_deref()
            .unwrap_or_default()
            .ends_with("2 output(s) change."),
        "{w:?}"
    );
}

/// `deploy --plan-first` plans (and judges) every component before any apply: a policy that
/// denies the counter's new resource leaves the greeter's change unapplied too, where a plain
/// deploy applies the greeter first and fails at the counter.
#[test]
fn plan_first_applies_nothing_when_a_later_plan_is_denied() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api, app) = ferry_tests::provisioned_hello(&nats, dir.path());
    let greeting = || {
        let i = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
        i.components["greeter"].outputs["message"].clone()
    };
    let before = greeting();

    // A new config: the greeter says something else, the counter gets a new resource, and a
    // policy denies creating one.
    let apply = app.join("components/src/greeter/apply.sh");
    let text = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(
        &apply,
        text.replace(
            "message=\"${GREETING}, ${INSTALL_ID}!\"",
            "message=\"${GREETING}, ${INSTALL_ID}!!\"",
        ),
    )
    .unwrap();
    let tf = app.join("components/src/counter/main.tf");
    let mut main = std::fs::read_to_string(&tf).unwrap();
    main.push_str("\nresource \"terraform_data\" \"extra\" {\n  input = \"x\"\n}\n");
    std::fs::write(&tf, main).unwrap();
    std::fs::create_dir_all(app.join("policies")).unwrap();
    std::fs::write(app.join("policies/no-data.rego"), DENY_DATA).unwrap();
    std::fs::write(
        app.join("policies.toml"),
        "[[policy]]\nname = \"no-data\"\ntype = \"terraform_module\"\nengine = \"opa\"\ncontents = \"./policies/no-data.rego\"\n",
    )
    .unwrap();
    ferry_tests::sync_hello(&api, &app);

    let (code, out, err) =
        ferry_tests::ferry(&api, &["installs", "deploy", "prod", "--plan-first"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("did not all pass: nothing was applied"),
        "{err}"
    );
    assert!(err.contains("denied by policy: no-data"), "{err}");
    assert_eq!(greeting(), before, "nothing applied");

    // The default: components in order; the greeter's apply comes before the counter's deny.
    let (code, out, err) = ferry_tests::ferry(&api, &["installs", "deploy", "prod", "--wait"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_ne!(
        greeting(),
        before,
        "the greeter applied before the counter was denied"
    );
}
