//! The install stack of examples/aws-account: what it creates, checked against the template, and
//! the whole template checked by AWS's own linter (PyPI's cfn-lint, `scripts/install-cfn-lint`).

use crate::common;

use std::path::Path;
use std::process::Command;

use ferry_appconfig::stack::{StackOptions, cloudformation};
use ferry_appconfig::state::Facts;
use ferry_appconfig::{AppConfig, Package, load};
use serde_json::Value;

fn repo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn app(name: &str) -> AppConfig {
    load(&Package::from_dir(&repo().join("examples").join(name)).unwrap()).unwrap()
}

fn template(cfg: &AppConfig) -> Value {
    let state = cfg.template_state(&Facts {
        org: "acme",
        app: "aws-account",
        install: "prod",
        inputs: None,
        sandbox_outputs: None,
        component_outputs: None,
        actions: None,
        install_stack: None,
        stack_template: None,
    });
    let opts = StackOptions {
        install: "prod".into(),
        bundle_url: "https://vendor.example.com/ferry-runner.tar.gz".into(),
        bundle_sha256: "ab".repeat(32),
    };
    cloudformation(cfg, &state, &opts).unwrap()
}

/// The resource of type `ty` whose property `key` is `value`.
fn resource<'a>(t: &'a Value, ty: &str, key: &str, value: &str) -> &'a Value {
    t["Resources"]
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["Type"] == ty && r["Properties"][key] == value)
        .unwrap_or_else(|| panic!("no {ty} with {key} = {value}"))
}

#[test]
fn the_stack_creates_a_role_per_operation_the_runner_alone_assumes() {
    let t = template(&app("aws-account"));
    for op in ["provision", "maintenance", "deprovision"] {
        let role = resource(&t, "AWS::IAM::Role", "RoleName", &format!("prod-{op}"));
        let trust = &role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0];
        assert_eq!(
            trust["Principal"]["AWS"]["Fn::GetAtt"][0], "RunnerRole",
            "only the runner's instance role assumes {op}"
        );
        assert!(role.get("Condition").is_none(), "{op} is always created");
    }
    let maintenance = resource(&t, "AWS::IAM::Role", "RoleName", "prod-maintenance");
    let inline = &maintenance["Properties"]["Policies"][0];
    assert_eq!(inline["PolicyName"], "deploy");
    assert_eq!(
        inline["PolicyDocument"]["Statement"][0]["Action"][0], "s3:GetObject",
        "the document read from permissions/maintenance-policy.json"
    );
    assert!(
        maintenance["Properties"]["PermissionsBoundary"]["Ref"].is_string(),
        "{maintenance}"
    );
    // Break glass: only while the customer turns it on.
    let glass = resource(&t, "AWS::IAM::Role", "RoleName", "prod-break-glass");
    assert_eq!(glass["Condition"], "BreakGlassOn");
    assert_eq!(t["Parameters"]["EnableBreakGlass"]["Default"], "false");
    let outputs = t["Outputs"].as_object().unwrap();
    let keys: Vec<&str> = outputs
        .values()
        .filter_map(|o| o["Description"].as_str())
        .collect();
    for key in [
        "provision_iam_role_arn",
        "maintenance_iam_role_arn",
        "deprovision_iam_role_arn",
        "break_glass_role_arns.prod-break-glass",
        "runner_iam_role_arn",
        "vpc_id",
        "region",
        "account_id",
        "license_key_arn",
        "db_password_arn",
        "custom_nested_stacks.audit.id",
    ] {
        assert!(keys.contains(&key), "no output {key}: {keys:?}");
    }
}

#[test]
fn secrets_and_the_bootstrap_token_stay_in_the_account_and_out_of_user_data() {
    let t = template(&app("aws-account"));
    let generated = resource(
        &t,
        "AWS::SecretsManager::Secret",
        "Name",
        "prod/db_password",
    );
    assert!(generated["Properties"]["GenerateSecretString"].is_object());
    let given = resource(
        &t,
        "AWS::SecretsManager::Secret",
        "Name",
        "prod/license_key",
    );
    assert!(given["Properties"]["SecretString"]["Fn::If"].is_array());
    let param = &t["Parameters"]["SecretLicenseKeyValue"];
    assert_eq!(param["NoEcho"], true, "{param}");
    assert_eq!(t["Parameters"]["BootstrapToken"]["NoEcho"], true);
    let user_data = t["Resources"]["RunnerLaunchTemplate"]["Properties"]["LaunchTemplateData"]
        ["UserData"]["Fn::Base64"]["Fn::Sub"]
        .as_str()
        .unwrap();
    assert!(user_data.contains("sha256sum -c"), "{user_data}");
    assert!(
        !user_data.contains("${BootstrapToken}"),
        "the token is read from Secrets Manager, never written into the user data"
    );
    assert!(user_data.contains("${RunnerBootstrapToken}"));
    // The runner host takes no inbound traffic.
    let sg = &t["Resources"]["RunnerSecurityGroup"]["Properties"];
    assert!(sg.get("SecurityGroupIngress").is_none(), "{sg}");
    // One runner host, none while the customer pauses the runner with `RunnerPaused`.
    assert_eq!(
        t["Resources"]["RunnerGroup"]["Properties"]["MaxSize"],
        serde_json::json!({ "Fn::If": ["RunnerPausedOn", "0", "1"] }),
    );
    assert_eq!(
        t["Conditions"]["RunnerPausedOn"],
        serde_json::json!({ "Fn::Equals": [{ "Ref": "RunnerPaused" }, "true"] })
    );
    assert_eq!(t["Parameters"]["RunnerPaused"]["Default"], "false");
    // The host's metadata service answers session-token requests only, one hop away.
    let metadata = &t["Resources"]["RunnerLaunchTemplate"]["Properties"]["LaunchTemplateData"]["MetadataOptions"];
    assert_eq!(metadata["HttpTokens"], "required");
    assert_eq!(metadata["HttpPutResponseHopLimit"], 1);
}

#[test]
fn an_app_without_a_stack_gets_the_default_one_and_other_clouds_are_refused() {
    let t = template(&app("hello"));
    assert!(t["Resources"]["RunnerGroup"].is_object());
    let mut cfg = app("aws-account");
    if let Some(s) = cfg.stack.as_mut() {
        s.kind = "azure-bicep".into();
    }
    let state = serde_json::json!({ "nuon": { "install": { "id": "prod" } } });
    let err = cloudformation(&cfg, &state, &StackOptions::default()).unwrap_err();
    assert!(err.to_string().contains("azure-bicep"), "{err}");
}

/// AWS's own linter finds nothing wrong in the templates Ferry writes.
#[test]
fn cfn_lint_passes_the_templates() {
    let lint = repo().join(".tools/pip-cfn-lint");
    assert!(
        lint.join("bin/cfn-lint").exists(),
        "cfn-lint is not installed: run scripts/install-cfn-lint"
    );
    let dir = tempfile::tempdir().unwrap();
    let configs = [
        ("aws-account", app("aws-account")),
        ("hello", app("hello")),
        ("vendor-host", vendor_host()),
    ];
    for (name, cfg) in configs {
        let file = dir.path().join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&template(&cfg)).unwrap();
        std::fs::write(&file, text).unwrap();
        let out = Command::new("python3")
            .arg(lint.join("bin/cfn-lint"))
            .arg(&file)
            .env("PYTHONPATH", &lint)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cfn-lint on {name}'s stack:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A published template's place and link render as Nuon's `install_stack` fields, and the
/// console link names the template, the stack and the bundle.
#[test]
fn a_published_template_renders_its_link_and_the_link_launches_it() {
    let cfg = app("aws-account");
    let published = ferry_model::StackTemplate {
        template_url: "https://b.s3.eu-west-1.amazonaws.com/ferry/stacks/o/prod/ab.json".into(),
        quick_link_url: "https://console/link".into(),
        checksum: "sha256:ab".into(),
        app_config_id: "c1".into(),
        published_at: "2026-11-27T10:00:00.000Z".into(),
        published_by: "token:admin".into(),
    };
    let state = cfg.template_state(&Facts {
        org: "acme",
        app: "aws-account",
        install: "prod",
        stack_template: Some(&published),
        ..Default::default()
    });
    let s = &state["nuon"]["install_stack"];
    assert_eq!(s["template_url"], published.template_url.as_str());
    assert_eq!(s["quick_link_url"], "https://console/link");
    assert_eq!(s["checksum"], "sha256:ab");
    let name = ferry_appconfig::stack::stack_name(&cfg, &state, "prod").unwrap();
    assert_eq!(name, "ferry-prod");
    let opts = StackOptions {
        install: "prod".into(),
        bundle_url: "https://vendor.example.com/r.tar.gz".into(),
        bundle_sha256: "ab".repeat(32),
    };
    let link = ferry_appconfig::stack::quick_create_link(
        "eu-west-1",
        &published.template_url,
        &name,
        &opts,
    );
    assert_eq!(
        link,
        format!(
            "https://eu-west-1.console.aws.amazon.com/cloudformation/home?region=eu-west-1#/stacks/quickcreate?templateURL=https%3A%2F%2Fb.s3.eu-west-1.amazonaws.com%2Fferry%2Fstacks%2Fo%2Fprod%2Fab.json&stackName=ferry-prod&param_RunnerBundleUrl=https%3A%2F%2Fvendor.example.com%2Fr.tar.gz&param_RunnerBundleSha256={}",
            "ab".repeat(32)
        )
    );
}

/// examples/aws-account with the vendor's own runner host template and a secret the customer
/// is not asked for.
fn vendor_host() -> AppConfig {
    let dir = tempfile::tempdir().unwrap();
    let src = repo().join("examples/aws-account");
    common::copy_dir(&src, dir.path());
    let stack = std::fs::read_to_string(src.join("stack.toml")).unwrap().replacen(
        "\n[[custom_nested_stacks]]",
        "runner_nested_template_url = \"https://vendor-bucket.s3.amazonaws.com/runner.json\"\n\n[[custom_nested_stacks]]",
        1,
    );
    std::fs::write(dir.path().join("stack.toml"), stack).unwrap();
    let secrets = std::fs::read_to_string(src.join("secrets.toml")).unwrap()
        + "\n[[secret]]\nname = \"region_hint\"\ndescription = \"fixed\"\ndefault = \"eu\"\nuser_configurable = false\n\n[[secret]]\nname = \"tier\"\ndescription = \"asked, with a default\"\ndefault = \"gold\"\n";
    std::fs::write(dir.path().join("secrets.toml"), secrets).unwrap();
    load(&Package::from_dir(dir.path()).unwrap()).unwrap()
}

#[test]
fn a_vendor_host_template_is_nested_with_what_the_runner_needs() {
    let t = template(&vendor_host());
    let host = &t["Resources"]["RunnerHost"];
    assert_eq!(host["Type"], "AWS::CloudFormation::Stack");
    assert_eq!(
        host["Properties"]["TemplateURL"],
        "https://vendor-bucket.s3.amazonaws.com/runner.json"
    );
    let p = &host["Properties"]["Parameters"];
    for k in [
        "VpcId",
        "SubnetId",
        "InstanceProfileArn",
        "ImageId",
        "InstanceType",
        "RunnerBundleUrl",
        "RunnerBundleSha256",
        "BootstrapTokenSecret",
        "InstallStackName",
    ] {
        assert!(!p[k].is_null(), "no {k}: {p}");
    }
    assert_eq!(
        p["InstanceProfileArn"]["Fn::GetAtt"][0],
        "RunnerInstanceProfile"
    );
    assert!(t["Resources"].get("RunnerLaunchTemplate").is_none());
    assert!(
        t["Resources"].get("RunnerRole").is_some(),
        "the roles trust the runner's role"
    );
}

#[test]
fn a_secret_takes_its_default_and_is_asked_for_only_when_the_customer_may_set_it() {
    let t = template(&vendor_host());
    let fixed = resource(
        &t,
        "AWS::SecretsManager::Secret",
        "Name",
        "prod/region_hint",
    );
    assert_eq!(fixed["Properties"]["SecretString"], "eu");
    assert!(t["Parameters"].get("SecretRegionHintValue").is_none());
    assert_eq!(t["Parameters"]["SecretTierValue"]["Default"], "gold");
    assert_eq!(t["Parameters"]["SecretTierValue"]["NoEcho"], true);
}
