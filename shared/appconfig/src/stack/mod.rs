//! The install stack: the CloudFormation template a customer launches in their own AWS account
//! (`ferry installs stack I`). It creates what the install runs with and nothing the vendor
//! holds:
//!
//! * the runner host: a launch template and an auto-scaling group of one, in a new VPC with one
//!   public subnet (outbound only: its security group takes no inbound traffic), or in the VPC
//!   `vpc_nested_template_url` creates; its user data fetches the runner bundle from the vendor's
//!   URL, checks its sha256, and bootstraps with the install's one-time token, which the customer
//!   passes as a `NoEcho` parameter and the stack keeps in Secrets Manager (the user data reads
//!   it from there; it never appears in it);
//! * one IAM role per role of `permissions/` (managed policies, inline documents, a permissions
//!   boundary), each assumable only by the runner's instance role; the `break_glass` roles only
//!   while the customer's `EnableBreakGlass` parameter is `true`;
//! * one Secrets Manager secret per app secret: generated in the account (`auto_generate`), or
//!   the value of a `NoEcho` parameter the customer fills (empty until they set it);
//! * `custom_nested_stacks` as nested stacks;
//! * outputs under the keys of Nuon's `install_stack.outputs` (each output's description is its
//!   key: CloudFormation output names cannot hold `_`), which the runner reads from its stack.
//!
//! Templates in names and parameters render with the install's state, as everywhere else.
//! The template is JSON (CloudFormation takes JSON and YAML alike; JSON needs no YAML writer).

mod runner;

use serde_json::{Map, Value, json};

use crate::{AppConfig, CloudRole, InstallStack, RoleUse};

/// What the stack needs beyond the app config.
#[derive(Debug, Clone, Default)]
pub struct StackOptions {
    /// The install's name (its roles' and secrets' names start with it).
    pub install: String,
    /// Where the runner host downloads the runner bundle (`ferry installs runner-bundle`,
    /// packed), and its sha256.
    pub bundle_url: String,
    pub bundle_sha256: String,
}

/// Why a stack cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error(
        "the app's stack is `{0}`: this version of Ferry generates AWS CloudFormation stacks only (`type = \"aws-cloudformation\"` in stack.toml)"
    )]
    NotGenerated(String),
    #[error("cannot render `{what}`: {error}")]
    Render { what: String, error: String },
    #[error("the {what} of role `{role}` is not a JSON document: {error}")]
    Document {
        what: &'static str,
        role: String,
        error: String,
    },
}

/// The install stack's CloudFormation template.
pub fn cloudformation(
    cfg: &AppConfig,
    state: &Value,
    opts: &StackOptions,
) -> Result<Value, StackError> {
    let stack = cfg.stack.clone().unwrap_or_else(|| InstallStack {
        kind: "aws-cloudformation".into(),
        ..Default::default()
    });
    if stack.kind != "aws-cloudformation" {
        return Err(StackError::NotGenerated(stack.kind));
    }
    let render = |what: &str, src: &str| {
        crate::template::render(src, state).map_err(|e| StackError::Render {
            what: what.to_string(),
            error: e.to_string(),
        })
    };
    let mut t = Template::default();
    t.runner_parameters(opts);
    t.network(&stack);
    let roles: Vec<&CloudRole> = cfg.roles.iter().filter(|r| r.cloud == "aws").collect();
    let mut names = Vec::new();
    for (i, role) in roles.iter().enumerate() {
        let name = render(&format!("the name of role `{}`", role.name), &role.name)?;
        t.role(i, role, &name)?;
        names.push(name);
    }
    for s in &cfg.secrets {
        t.secret(&opts.install, s);
    }
    t.runner(stack.runner_nested_template_url.as_deref());
    for n in &stack.nested {
        let mut params = Map::new();
        for (k, v) in &n.parameters {
            params.insert(k.clone(), json!(render(&format!("{}.{k}", n.name), v)?));
        }
        t.nested(n, params);
    }
    let description = match &stack.description {
        Some(d) => render("the stack's description", d)?,
        None => format!(
            "Ferry install {}: its runner, roles and secrets",
            opts.install
        ),
    };
    Ok(t.finish(description))
}

/// The template as it is built: each part adds parameters, conditions, resources and outputs.
#[derive(Default)]
struct Template {
    parameters: Map<String, Value>,
    conditions: Map<String, Value>,
    resources: Map<String, Value>,
    outputs: Map<String, Value>,
    /// The role resources the runner may assume.
    assumable: Vec<Value>,
    /// The secret resources the runner may read.
    secrets: Vec<Value>,
    /// The runner's VPC and subnet: the stack's own, or the nested VPC template's outputs.
    vpc_id: Value,
    subnet_id: Value,
}

/// `Fn::GetAtt`.
fn att(resource: &str, attribute: &str) -> Value {
    json!({ "Fn::GetAtt": [resource, attribute] })
}

/// `Ref`.
fn r(name: &str) -> Value {
    json!({ "Ref": name })
}

/// The name the customer's stack gets: `stack.toml`'s `name` rendered against `state`, else
/// `ferry-INSTALL`.
pub fn stack_name(cfg: &AppConfig, state: &Value, install: &str) -> Result<String, StackError> {
    match cfg.stack.as_ref().and_then(|s| s.name.as_deref()) {
        Some(name) => crate::template::render(name, state).map_err(|e| StackError::Render {
            what: "the stack's name".into(),
            error: e.to_string(),
        }),
        None => Ok(format!("ferry-{install}")),
    }
}

/// The AWS console's link that opens the template at `template_url` in `region`'s
/// CloudFormation, named `stack_name`, with the bundle's URL and sha256 filled in: the
/// customer adds the one-time token (and any secret) and launches it.
pub fn quick_create_link(
    region: &str,
    template_url: &str,
    stack_name: &str,
    opts: &StackOptions,
) -> String {
    let enc = |v: &str| form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>();
    let mut link = format!(
        "https://{region}.console.aws.amazon.com/cloudformation/home?region={region}#/stacks/quickcreate?templateURL={}&stackName={}",
        enc(template_url),
        enc(stack_name)
    );
    for (param, value) in [
        ("RunnerBundleUrl", &opts.bundle_url),
        ("RunnerBundleSha256", &opts.bundle_sha256),
    ] {
        if !value.is_empty() {
            link.push_str(&format!("&param_{param}={}", enc(value)));
        }
    }
    link
}

/// Where the install stack keeps secret `name` of `install`: its Secrets Manager name, and the
/// `NoEcho` parameter a customer fills it with (none for a generated one).
pub fn secret_place(install: &str, name: &str) -> (String, String) {
    (
        format!("{install}/{name}"),
        format!("{}Value", logical("Secret", name)),
    )
}

/// A logical id from a name: letters and digits only, as CloudFormation requires.
fn logical(prefix: &str, name: &str) -> String {
    let mut out = prefix.to_string();
    let mut upper = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            upper = false;
        } else {
            upper = true;
        }
    }
    out
}

impl Template {
    fn output(&mut self, id: &str, key: &str, value: Value, condition: Option<&str>) {
        let mut o = json!({ "Description": key, "Value": value });
        if let Some(c) = condition {
            o["Condition"] = json!(c);
        }
        self.outputs.insert(id.to_string(), o);
    }

    fn runner_parameters(&mut self, opts: &StackOptions) {
        let p = &mut self.parameters;
        // Without a default the customer gives them at launch (CloudFormation asks).
        let with_default = |mut param: Value, default: &str| {
            if !default.is_empty() {
                param["Default"] = json!(default);
            }
            param
        };
        p.insert(
            "RunnerBundleUrl".into(),
            with_default(
                json!({ "Type": "String", "MinLength": 1,
                    "Description": "Where the runner host downloads the runner bundle (a .tar.gz)" }),
                &opts.bundle_url,
            ),
        );
        p.insert(
            "RunnerBundleSha256".into(),
            with_default(
                json!({ "Type": "String", "AllowedPattern": "^[0-9a-f]{64}$",
                    "Description": "The bundle's sha256: the host refuses any other" }),
                &opts.bundle_sha256,
            ),
        );
        p.insert(
            "BootstrapToken".into(),
            json!({ "Type": "String", "NoEcho": true, "MinLength": 1,
                "Description": "The install's one-time runner token (`ferry installs runner-token`): kept in Secrets Manager, never in user data" }),
        );
        p.insert(
            "InstanceType".into(),
            json!({ "Type": "String", "Default": "t3.small", "Description": "The runner host's instance type" }),
        );
        p.insert(
            "ImageId".into(),
            json!({ "Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
                "Default": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
                "Description": "The runner host's image" }),
        );
        self.resources.insert(
            "RunnerBootstrapToken".into(),
            json!({ "Type": "AWS::SecretsManager::Secret", "Properties": {
                "Description": "The runner's one-time bootstrap token",
                "SecretString": r("BootstrapToken") } }),
        );
    }

    /// A new VPC with one public subnet for the runner (or the vendor's VPC template, nested).
    fn network(&mut self, stack: &InstallStack) {
        if let Some(url) = &stack.vpc_nested_template_url {
            self.resources.insert(
                "VPC".into(),
                json!({ "Type": "AWS::CloudFormation::Stack", "Properties": { "TemplateURL": url } }),
            );
            self.vpc_id = att("VPC", "Outputs.VPC");
            self.subnet_id = att("VPC", "Outputs.RunnerSubnet");
            self.output("VpcId", "vpc_id", att("VPC", "Outputs.VPC"), None);
            self.output(
                "RunnerSubnet",
                "runner_subnet",
                att("VPC", "Outputs.RunnerSubnet"),
                None,
            );
            return;
        }
        self.vpc_id = r("VPC");
        self.subnet_id = r("RunnerSubnet");
        let res = &mut self.resources;
        res.insert(
            "VPC".into(),
            json!({ "Type": "AWS::EC2::VPC", "Properties": {
            "CidrBlock": "10.128.0.0/16", "EnableDnsSupport": true, "EnableDnsHostnames": true } }),
        );
        res.insert(
            "InternetGateway".into(),
            json!({ "Type": "AWS::EC2::InternetGateway" }),
        );
        res.insert(
            "GatewayAttachment".into(),
            json!({ "Type": "AWS::EC2::VPCGatewayAttachment",
            "Properties": { "VpcId": r("VPC"), "InternetGatewayId": r("InternetGateway") } }),
        );
        res.insert(
            "RunnerSubnet".into(),
            json!({ "Type": "AWS::EC2::Subnet", "Properties": {
            "VpcId": r("VPC"), "CidrBlock": "10.128.0.0/24", "MapPublicIpOnLaunch": true,
            "AvailabilityZone": { "Fn::Select": [0, { "Fn::GetAZs": "" }] } } }),
        );
        res.insert(
            "RouteTable".into(),
            json!({ "Type": "AWS::EC2::RouteTable", "Properties": { "VpcId": r("VPC") } }),
        );
        res.insert(
            "DefaultRoute".into(),
            json!({ "Type": "AWS::EC2::Route", "DependsOn": "GatewayAttachment",
            "Properties": { "RouteTableId": r("RouteTable"), "DestinationCidrBlock": "0.0.0.0/0",
                "GatewayId": r("InternetGateway") } }),
        );
        res.insert(
            "RunnerSubnetRoutes".into(),
            json!({ "Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Properties": { "SubnetId": r("RunnerSubnet"), "RouteTableId": r("RouteTable") } }),
        );
        self.output("VpcId", "vpc_id", r("VPC"), None);
        self.output("RunnerSubnet", "runner_subnet", r("RunnerSubnet"), None);
        self.output("PublicSubnets", "public_subnets", r("RunnerSubnet"), None);
    }

    /// One role of the app: assumable only by the runner's instance role.
    fn role(&mut self, i: usize, role: &CloudRole, name: &str) -> Result<(), StackError> {
        let id = logical(&format!("Role{i}"), name);
        let doc = |what: &'static str, text: &str| {
            serde_json::from_str::<Value>(text).map_err(|e| StackError::Document {
                what,
                role: role.name.clone(),
                error: e.to_string(),
            })
        };
        let mut props = json!({
            "RoleName": name,
            // A job's session lasts its execution limit (`ferry-runner`'s roles.rs), up to this.
            "MaxSessionDuration": 43200,
            "AssumeRolePolicyDocument": { "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "sts:AssumeRole",
                "Principal": { "AWS": att("RunnerRole", "Arn") } }] },
            "Description": role.description.clone().unwrap_or_else(|| format!("{} role of the install", role.used_for.name())),
        });
        let managed: Vec<Value> = role
            .policies
            .iter()
            .filter_map(|p| p.managed_policy_name.as_ref())
            .map(|m| json!({ "Fn::Sub": format!("arn:${{AWS::Partition}}:iam::aws:policy/{m}") }))
            .collect();
        if !managed.is_empty() {
            props["ManagedPolicyArns"] = json!(managed);
        }
        let mut inline = Vec::new();
        for (n, p) in role.policies.iter().enumerate() {
            if let Some(text) = &p.document {
                let name = p.name.clone().unwrap_or_else(|| format!("policy-{n}"));
                inline.push(json!({ "PolicyName": name, "PolicyDocument": doc("policy", text)? }));
            }
        }
        if !inline.is_empty() {
            props["Policies"] = json!(inline);
        }
        let condition = (role.used_for == RoleUse::BreakGlass).then_some("BreakGlassOn");
        if condition.is_some() {
            self.break_glass_switch();
        }
        if let Some(b) = &role.boundary {
            let boundary = format!("{id}Boundary");
            let mut res = json!({ "Type": "AWS::IAM::ManagedPolicy",
                "Properties": { "PolicyDocument": doc("permissions boundary", b)? } });
            if let Some(c) = condition {
                res["Condition"] = json!(c);
            }
            self.resources.insert(boundary.clone(), res);
            props["PermissionsBoundary"] = r(&boundary);
        }
        let mut res = json!({ "Type": "AWS::IAM::Role", "Properties": props });
        if let Some(c) = condition {
            res["Condition"] = json!(c);
        }
        self.resources.insert(id.clone(), res);
        let arn = att(&id, "Arn");
        // The runner's role names the roles it may assume by their ARN as written, not by
        // `Fn::GetAtt`: each role trusts the runner's role, so a reference back would be a cycle.
        let written = json!({ "Fn::Sub": format!(
            "arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/{}",
            name.replace("${", "${!")
        ) });
        self.assumable.push(match condition {
            Some(c) => json!({ "Fn::If": [c, written, r("AWS::NoValue")] }),
            None => written,
        });
        let key = role.used_for.output_key(name);
        self.output(&format!("{id}Arn"), &key, arn, condition);
        Ok(())
    }

    /// The customer's switch for the break-glass roles (off until they turn it on).
    fn break_glass_switch(&mut self) {
        self.parameters.insert(
            "EnableBreakGlass".into(),
            json!({ "Type": "String", "Default": "false", "AllowedValues": ["false", "true"],
                "Description": "Create the app's break-glass roles (the customer turns this on, and off)" }),
        );
        self.conditions.insert(
            "BreakGlassOn".into(),
            json!({ "Fn::Equals": [r("EnableBreakGlass"), "true"] }),
        );
    }

    /// One app secret, in the account's Secrets Manager.
    fn secret(&mut self, install: &str, s: &crate::Secret) {
        let id = logical("Secret", &s.name);
        let (name, param) = secret_place(install, &s.name);
        let mut props = json!({
            "Name": name,
            "Description": s.description.clone().or_else(|| s.display_name.clone()).unwrap_or_else(|| format!("secret {} of the install", s.name)),
        });
        if s.auto_generate {
            props["GenerateSecretString"] =
                json!({ "PasswordLength": 32, "ExcludePunctuation": true });
        } else if let (false, Some(default)) = (s.user_configurable, &s.default) {
            // Not the customer's to set: its default.
            props["SecretString"] = json!(default);
        } else {
            let given = format!("{id}Given");
            self.parameters.insert(
                param.clone(),
                json!({ "Type": "String", "NoEcho": true,
                "Default": s.default.clone().unwrap_or_default(),
                "Description": format!("The value of secret `{}`{}", s.name,
                    if s.required { " (required: deploys stop until it is set)" } else { "" }) }),
            );
            self.conditions.insert(
                given.clone(),
                json!({ "Fn::Not": [{ "Fn::Equals": [r(&param), ""] }] }),
            );
            props["SecretString"] = json!({ "Fn::If": [given, r(&param), r("AWS::NoValue")] });
        }
        self.resources.insert(
            id.clone(),
            json!({ "Type": "AWS::SecretsManager::Secret", "Properties": props }),
        );
        self.secrets.push(r(&id));
        self.output(
            &format!("{id}Arn"),
            &format!("{}_arn", s.name),
            r(&id),
            None,
        );
    }

    fn nested(&mut self, n: &crate::NestedStack, parameters: Map<String, Value>) {
        let id = logical("Nested", &n.name);
        let mut props = json!({ "TemplateURL": n.template_url });
        if !parameters.is_empty() {
            props["Parameters"] = Value::Object(parameters);
        }
        self.resources.insert(
            id.clone(),
            json!({ "Type": "AWS::CloudFormation::Stack", "Properties": props }),
        );
        self.output(
            &format!("{id}Id"),
            &format!("custom_nested_stacks.{}.id", n.name),
            r(&id),
            None,
        );
    }
}
