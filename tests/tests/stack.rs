//! The install stack as a vendor hands it over and a customer launches it: `ferry installs stack`
//! renders examples/aws-account's template for an install, AWS's linter passes it, and the
//! customer creates it with the AWS CLI in an AWS API (moto): the roles and the runner host are
//! there, and the break-glass role is not while the customer has not turned it on; the runner
//! reads the stack from inside the account and templates render its outputs.

use std::path::Path;
use std::process::Command;

use ferry_tests::aws::Moto;
use ferry_tests::{NatsServer, Proc, ferry, repo_root};

/// A nested template the vendor hosts: one resource, one output.
const AUDIT: &str = r#"{"AWSTemplateFormatVersion": "2010-09-09",
 "Parameters": {"Install": {"Type": "String"}},
 "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
 "Outputs": {"Install": {"Value": {"Ref": "Install"}}}}"#;

fn cfn_lint(file: &Path) {
    let lint = repo_root().join(".tools/pip-cfn-lint");
    let out = Command::new("python3")
        .arg(lint.join("bin/cfn-lint"))
        .arg(file)
        .env("PYTHONPATH", &lint)
        .output()
        .expect("cfn-lint (scripts/install-cfn-lint)");
    assert!(
        out.status.success(),
        "cfn-lint:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_customer_launches_the_install_stack_with_the_aws_cli_and_gets_the_roles_the_app_declares() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    // The vendor's bucket (in moto), where the control plane publishes install stacks and the
    // vendor keeps a nested template.
    let moto = Moto::start();
    moto.aws_json(&[
        "s3api",
        "create-bucket",
        "--bucket",
        "example-vendor-bucket",
    ]);
    let creds = [
        ("AWS_ACCESS_KEY_ID".to_string(), "testing".to_string()),
        ("AWS_SECRET_ACCESS_KEY".to_string(), "testing".to_string()),
    ];
    let (_server, api) = Proc::server_env(
        &nats.url,
        dir.path().join("server.log"),
        &[
            "--stack-bucket",
            "example-vendor-bucket",
            "--stack-bucket-endpoint",
            &moto.url,
        ],
        &creds,
    );
    ferry_tests::aws::aws_account_install(&api, "acme");

    let file = dir.path().join("stack.json");
    let sha = "0123456789abcdef".repeat(4);
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "stack",
            "acme",
            "--out",
            file.to_str().unwrap(),
            "--bundle-url",
            "https://vendor.example.com/ferry-runner.tar.gz",
            "--bundle-sha256",
            &sha,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("aws cloudformation create-stack"), "{err}");
    cfn_lint(&file);
    let (code, _, err) = ferry(
        &api,
        &["installs", "stack", "acme", "--bundle-sha256", "nope"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("64 lower-case hex digits"), "{err}");

    // Published to the vendor's bucket: the console's quick-create link, shown by installs get.
    let (code, link, err) = ferry(
        &api,
        &[
            "installs",
            "stack",
            "acme",
            "--upload",
            "--bundle-url",
            "https://vendor.example.com/ferry-runner.tar.gz",
            "--bundle-sha256",
            &sha,
        ],
    );
    assert_eq!(code, 0, "{link}{err}");
    let link = link.trim();
    assert!(
        link.starts_with(
            "https://us-east-1.console.aws.amazon.com/cloudformation/home?region=us-east-1#/stacks/quickcreate?templateURL=https%3A%2F%2Fexample-vendor-bucket.s3.us-east-1.amazonaws.com%2Fferry%2Fstacks%2F"
        ) && link.contains("&stackName=ferry-acme")
            && link.contains(&format!("&param_RunnerBundleSha256={sha}")),
        "{link}"
    );
    let published: ferry_model::Install =
        ferry_tests::typed::cli(&api, &["installs", "get", "acme", "--json"]);
    let published = published.stack_template.expect("the published template");
    assert_eq!(published.quick_link_url, link);
    let (_, shown, _) = ferry(&api, &["installs", "get", "acme"]);
    assert!(shown.contains(link), "{shown}");

    // The customer's side: the vendor's nested template where the stack names it, then the
    // stack from the published template, with the install's one-time token and the license key.
    let audit = dir.path().join("audit.json");
    std::fs::write(&audit, AUDIT).unwrap();
    let (code, out, err) = moto.aws(&[
        "s3",
        "cp",
        audit.to_str().unwrap(),
        "s3://example-vendor-bucket/audit.json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    moto.aws_json(&[
        "cloudformation",
        "create-stack",
        "--stack-name",
        "ferry-acme",
        "--template-url",
        &published.template_url,
        "--capabilities",
        "CAPABILITY_NAMED_IAM",
        "--parameters",
        "ParameterKey=BootstrapToken,ParameterValue=ferryboot_default_x",
        "ParameterKey=SecretLicenseKeyValue,ParameterValue=lic-123",
    ]);
    let stacks = moto.aws_json(&[
        "cloudformation",
        "describe-stacks",
        "--stack-name",
        "ferry-acme",
    ]);
    let stack = &stacks["Stacks"][0];
    assert_eq!(stack["StackStatus"], "CREATE_COMPLETE", "{stack}");
    // Outputs carry Nuon's keys in their descriptions.
    let outputs = stack["Outputs"].as_array().unwrap();
    let output = |key: &str| {
        outputs
            .iter()
            .find(|o| o["Description"] == key)
            .and_then(|o| o["OutputValue"].as_str())
            .unwrap_or_else(|| panic!("no output {key}: {outputs:?}"))
            .to_string()
    };
    assert!(output("maintenance_iam_role_arn").ends_with(":role/acme-maintenance"));
    let runner_role = output("runner_iam_role_arn");

    // Each role trusts the runner's role alone; the boundary is attached.
    let role = moto.aws_json(&["iam", "get-role", "--role-name", "acme-maintenance"]);
    let trust = role["Role"]["AssumeRolePolicyDocument"].to_string();
    assert!(trust.contains(&runner_role), "{trust}");
    assert!(
        role["Role"]["PermissionsBoundary"]["PermissionsBoundaryArn"].is_string(),
        "{role}"
    );
    for r in ["acme-provision", "acme-deprovision"] {
        moto.aws_json(&["iam", "get-role", "--role-name", r]);
    }
    // Break glass is off until the customer turns it on.
    let (code, _, err) = moto.aws(&["iam", "get-role", "--role-name", "acme-break-glass"]);
    assert_ne!(
        code, 0,
        "the break-glass role exists before it was turned on"
    );
    assert!(err.contains("NoSuchEntity"), "{err}");

    // The runner in the account reads the stack and reports it: the install records its status
    // and outputs, and templates read them (whoami prints the maintenance role's ARN). Each job
    // runs as the role of its operation, assumed by the runner: the components' scripts ask
    // STS who they are with the AWS CLI (on the host's PATH, pointed at moto).
    let aws_env = |k: &str, v: &str| (k.to_string(), v.to_string());
    let path = ferry_tests::aws::path_with_aws_cli();
    // The customer made the license key's secret but has not set it yet (moto's CloudFormation
    // creates no secrets: the customer's CLI does here what the stack does in AWS).
    moto.aws_json(&[
        "secretsmanager",
        "create-secret",
        "--name",
        "acme/license_key",
    ]);
    // Jobs get AWS_ENDPOINT_URL (moto) as a host variable the operator names: nothing else of
    // the runner's environment reaches them.
    let mut runner = Proc::runner_env(
        &nats.url,
        "acme",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--job-env", "AWS_ENDPOINT_URL"],
        &[
            aws_env("FERRY_STACK_NAME", "ferry-acme"),
            aws_env("FERRY_STACK_ENDPOINT", &moto.url),
            aws_env("FERRY_STACK_REGION", "us-east-1"),
            aws_env("AWS_ACCESS_KEY_ID", "testing"),
            aws_env("AWS_SECRET_ACCESS_KEY", "testing"),
            aws_env("AWS_ENDPOINT_URL", &moto.url),
            aws_env("FERRY_STACK_INTERVAL_SECS", "1"),
            aws_env("PATH", &path),
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let install = loop {
        let i: ferry_model::Install =
            ferry_tests::typed::cli(&api, &["installs", "get", "acme", "--json"]);
        if i.install_stack.is_some() {
            break i;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the runner reported no stack: {}",
            std::fs::read_to_string(dir.path().join("runner.log")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    let reported = install.install_stack.unwrap();
    assert_eq!(reported.status, "CREATE_COMPLETE");
    assert_eq!(
        reported.outputs["maintenance_iam_role_arn"],
        output("maintenance_iam_role_arn").as_str()
    );
    let (_, shown, _) = ferry(&api, &["installs", "get", "acme"]);
    assert!(shown.contains("install stack: CREATE_COMPLETE"), "{shown}");
    let (code, out, err) = ferry(&api, &["installs", "approve-all", "acme", "on"]);
    assert_eq!(code, 0, "{out}{err}");
    // A required secret not set stops the deploy, saying where the customer sets it.
    let wf = install.last_workflow.unwrap();
    let held = ferry_tests::typed::wait_until(&api, &wf, 120, "the provisioning", |w| {
        w.status.is_terminal()
    });
    assert_eq!(held.status, ferry_model::WorkflowStatus::Failed);
    let why = ferry_tests::typed::steps_of(&held);
    assert!(
        why.contains("`license_key`") && why.contains("`acme/license_key`"),
        "{why}"
    );
    // The customer sets it; the runner sees it (its status, never its value); the retried
    // provisioning goes through.
    moto.aws_json(&[
        "secretsmanager",
        "put-secret-value",
        "--secret-id",
        "acme/license_key",
        "--secret-string",
        "lic-1234567",
    ]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let i: ferry_model::Install =
            ferry_tests::typed::cli(&api, &["installs", "get", "acme", "--json"]);
        let seen = i
            .install_stack
            .and_then(|s| s.secrets.get("license_key").cloned());
        if seen.as_ref().is_some_and(|s| s.length == 11) {
            assert!(seen.unwrap().arn.contains(":secret:acme/license_key"));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the secret was not seen set: {seen:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let (_, shown, _) = ferry(&api, &["installs", "get", "acme", "--json"]);
    assert!(
        !shown.contains("lic-1234567"),
        "a secret's value left the account: {shown}"
    );
    let (code, out, err) = ferry(
        &api,
        &["workflows", "retry", &wf, "--step", "sandbox", "--wait"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let done = ferry_tests::typed::wait_until(&api, &wf, 120, "the provisioning", |w| {
        w.status.is_terminal()
    });
    assert_eq!(
        done.status,
        ferry_model::WorkflowStatus::Succeeded,
        "{}",
        ferry_tests::typed::steps_of(&done)
    );
    let (code, log, err) = ferry(&api, &["logs", "--workflow", &wf, "--component", "whoami"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        log.contains(&format!(
            "maintenance role: {}",
            output("maintenance_iam_role_arn")
        )),
        "{log}"
    );
    // The deploy ran as the maintenance role, the sandbox was provisioned as the provision role:
    // STS says so to the job itself, the job log says so, and the job record keeps the ARN.
    const ACCOUNT: &str = "arn:aws:sts::123456789012:assumed-role";
    assert!(
        log.contains(&format!("runs as: {ACCOUNT}/acme-maintenance/ferry-")),
        "{log}"
    );
    assert!(log.contains("runs as role acme-maintenance ("), "{log}");
    let (_, sandbox_log, _) = ferry(&api, &["logs", "--workflow", &wf, "--component", "sandbox"]);
    assert!(
        sandbox_log.contains(&format!("provisions as: {ACCOUNT}/acme-provision/")),
        "{sandbox_log}"
    );
    let apply = ferry_tests::typed::the_step(&done, "whoami", "apply");
    let job: ferry_model::Job = ferry_tests::typed::cli(
        &api,
        &["jobs", "get", apply.job_id.as_deref().unwrap(), "--json"],
    );
    assert!(
        job.ran_as
            .as_deref()
            .is_some_and(|a| a.starts_with(&format!("{ACCOUNT}/acme-maintenance/"))),
        "{job:?}"
    );
    // The job's process never had the host's credentials; it read the secret's ARN, never the
    // value.
    assert!(!log.contains("testing"), "{log}");
    assert!(
        log.contains("license key secret: arn:aws:secretsmanager:us-east-1:123456789012:secret:acme/license_key"),
        "{log}"
    );
    assert!(!log.contains("lic-1234567"), "{log}");

    // The dashboard's install page: the launch link, the stack's status, outputs and secrets.
    let session = ferry_tests::dashboard_cookie(&api);
    let page = Command::new("curl")
        .args(["-sf", "-H", &session])
        .arg(format!("{api}/ui/installs/acme"))
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&page.stdout);
    assert!(html.contains("Launch in the AWS console"), "{html}");
    assert!(html.contains(&link.replace('&', "&amp;")), "{html}");
    assert!(html.contains(">CREATE_COMPLETE<"), "{html}");
    assert!(
        html.contains("maintenance_iam_role_arn = arn:aws:iam::123456789012:role/acme-maintenance"),
        "{html}"
    );
    assert!(html.contains("secret license_key: set"), "{html}");
    assert!(!html.contains("lic-1234567"), "{html}");

    // A teardown runs as the deprovision role.
    let (code, out, err) = ferry(&api, &["installs", "teardown", "acme", "--wait", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let torn: ferry_model::Workflow = serde_json::from_str(&out).unwrap();
    let (_, log, _) = ferry(
        &api,
        &["logs", "--workflow", &torn.id, "--component", "whoami"],
    );
    assert!(
        log.contains(&format!("tears down as: {ACCOUNT}/acme-deprovision/")),
        "{log}"
    );

    // The customer pauses the runner from the stack: its runner hosts go to zero, and the
    // runner (still running here: moto starts no hosts) reads the parameter, takes no new job
    // and says it is paused; stopped then, as the scale-in would, its last word says so too.
    moto.aws_json(&[
        "cloudformation",
        "update-stack",
        "--stack-name",
        "ferry-acme",
        "--template-url",
        &published.template_url,
        "--capabilities",
        "CAPABILITY_NAMED_IAM",
        "--parameters",
        "ParameterKey=BootstrapToken,UsePreviousValue=true",
        "ParameterKey=SecretLicenseKeyValue,UsePreviousValue=true",
        "ParameterKey=RunnerPaused,ParameterValue=true",
    ]);
    let health = || {
        ferry_tests::typed::cli::<Vec<ferry_model::api::RunnerInfo>>(
            &api,
            &["runners", "list", "--install", "acme", "--json"],
        )
        .first()
        .map(|r| ferry_tests::typed::name_of(&r.health))
        .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while health() != "paused" {
        assert!(
            std::time::Instant::now() < deadline,
            "the runner is {}",
            health()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let exit = runner.terminate(std::time::Duration::from_secs(30));
    assert!(exit.is_some_and(|s| s.success()), "{exit:?}");
    assert_eq!(
        health(),
        "paused",
        "stopped by its customer, it stays paused"
    );
    let (_, listed, _) = ferry(&api, &["installs", "list", "--runner-health", "paused"]);
    assert!(listed.contains("acme"), "{listed}");

    // moto's CloudFormation does not create AWS::SecretsManager::Secret resources (it skips
    // types it does not model), so the secrets are checked in the template (and by cfn-lint):
    // one filled from the customer's NoEcho parameter, one generated in the account.
    let template: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let secret = |name: &str| {
        template["Resources"]
            .as_object()
            .unwrap()
            .values()
            .find(|r| r["Properties"]["Name"] == name)
            .unwrap_or_else(|| panic!("no secret {name}"))
            .clone()
    };
    assert!(secret("acme/db_password")["Properties"]["GenerateSecretString"].is_object());
    assert_eq!(
        template["Parameters"]["SecretLicenseKeyValue"]["NoEcho"],
        true
    );
    assert!(secret("acme/license_key")["Properties"]["SecretString"]["Fn::If"].is_array());
    // The runner host: a group of one.
    let groups = moto.aws_json(&["autoscaling", "describe-auto-scaling-groups"]);
    let group = &groups["AutoScalingGroups"][0];
    assert_eq!(group["MaxSize"], 1, "{group}");
}
