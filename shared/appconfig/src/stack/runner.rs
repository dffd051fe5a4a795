//! The runner host of the install stack: its instance role (which may assume the app's roles and
//! read the app's secrets, and nothing of the vendor's), an outbound-only security group, the
//! launch template whose user data installs the runner bundle, and an auto-scaling group of one
//! that replaces a host that dies.

use serde_json::{Value, json};

use super::{Template, att, r};

/// The user data: the bundle fetched and checked against its sha256, the one-time token read
/// from Secrets Manager with the instance role (never written into the user data), then the
/// bundle's `install.sh` (`ferry installs runner-bundle --for-stack`), which installs and starts
/// the runner with the token's file and the stack's name and region. `FERRY_ROOT`, unset on a
/// host, puts every file under a scratch directory: that is how the script is tested.
const USER_DATA: &str = r#"#!/bin/bash
set -euo pipefail
root="${!FERRY_ROOT:-}"
dir="$root/opt/ferry"
mkdir -p "$dir" "$root/etc/ferry"
cd "$dir"
curl -fsSL --retry 5 -o bundle.tar.gz '${RunnerBundleUrl}'
echo '${RunnerBundleSha256}  bundle.tar.gz' | sha256sum -c -
tar -xzf bundle.tar.gz
umask 077
aws secretsmanager get-secret-value --region '${AWS::Region}' --secret-id '${RunnerBootstrapToken}' --query SecretString --output text > "$root/etc/ferry/bootstrap-token"
FERRY_BOOTSTRAP_TOKEN_FILE="$root/etc/ferry/bootstrap-token" FERRY_STACK_NAME='${AWS::StackName}' FERRY_STACK_REGION='${AWS::Region}' ./install.sh
"#;

impl Template {
    /// The runner host: its instance role and profile here, and its machines here or, with
    /// `stack.toml`'s `runner_nested_template_url`, in the vendor's nested template.
    pub(super) fn runner(&mut self, nested: Option<&str>) {
        self.runner_role();
        match nested {
            Some(url) => self.nested_host(url),
            None => self.own_host(),
        }
        self.output("AccountId", "account_id", r("AWS::AccountId"), None);
        self.output("Region", "region", r("AWS::Region"), None);
        self.output(
            "RunnerRoleArn",
            "runner_iam_role_arn",
            att("RunnerRole", "Arn"),
            None,
        );
        self.output(
            "RunnerInstanceProfileArn",
            "runner_instance_profile",
            att("RunnerInstanceProfile", "Arn"),
            None,
        );
    }

    /// The runner's instance role: it may assume the app's roles, read the install's secrets
    /// and describe its own stack, nothing else.
    fn runner_role(&mut self) {
        let mut read: Vec<Value> = vec![r("RunnerBootstrapToken")];
        read.extend(self.secrets.iter().cloned());
        let mut statements = vec![
            json!({ "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
                "Resource": read }),
            json!({ "Effect": "Allow", "Action": ["cloudformation:DescribeStacks"],
                "Resource": r("AWS::StackId") }),
            // Which of the install's secrets exist (names and dates; ListSecrets cannot be
            // narrowed to resources): their values only as above.
            json!({ "Effect": "Allow", "Action": ["secretsmanager:ListSecrets"], "Resource": "*" }),
        ];
        if !self.assumable.is_empty() {
            statements.push(json!({ "Effect": "Allow", "Action": "sts:AssumeRole",
                "Resource": self.assumable.clone() }));
        }
        let res = &mut self.resources;
        res.insert("RunnerRole".into(), json!({ "Type": "AWS::IAM::Role", "Properties": {
            "Description": "The runner host's own role: assumes the install's roles, reads its secrets",
            "AssumeRolePolicyDocument": { "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "sts:AssumeRole",
                "Principal": { "Service": "ec2.amazonaws.com" } }] },
            "Policies": [{ "PolicyName": "runner", "PolicyDocument": {
                "Version": "2012-10-17", "Statement": statements } }] } }));
        res.insert(
            "RunnerInstanceProfile".into(),
            json!({ "Type": "AWS::IAM::InstanceProfile",
            "Properties": { "Roles": [r("RunnerRole")] } }),
        );
    }

    /// Ferry's own host: an outbound-only security group, the launch template with the user
    /// data, an auto-scaling group of one.
    fn own_host(&mut self) {
        let (vpc_id, subnet_id) = (self.vpc_id.clone(), self.subnet_id.clone());
        let res = &mut self.resources;
        res.insert("RunnerSecurityGroup".into(), json!({ "Type": "AWS::EC2::SecurityGroup", "Properties": {
            "GroupDescription": "The runner host: no inbound traffic, outbound to the control plane",
            "VpcId": vpc_id,
            "SecurityGroupEgress": [{ "IpProtocol": "-1", "CidrIp": "0.0.0.0/0" }] } }));
        res.insert(
            "RunnerLaunchTemplate".into(),
            json!({ "Type": "AWS::EC2::LaunchTemplate", "Properties": {
            "LaunchTemplateData": {
                "ImageId": r("ImageId"),
                "InstanceType": r("InstanceType"),
                "IamInstanceProfile": { "Arn": att("RunnerInstanceProfile", "Arn") },
                "SecurityGroupIds": [r("RunnerSecurityGroup")],
                // IMDSv2 only, one hop: nothing beyond the host's own network stack (a
                // container, a forwarded request) reaches the host's credentials; on the
                // host, the jobs' user is kept from it by ferry-jobs-firewall.
                "MetadataOptions": { "HttpTokens": "required", "HttpPutResponseHopLimit": 1, "HttpEndpoint": "enabled" },
                "UserData": { "Fn::Base64": { "Fn::Sub": USER_DATA } } } } }),
        );
        // The customer's stop: the runner host group scaled to zero (and one again). A runner
        // that reads this parameter as `true` takes no new job and says so at once, also as
        // it is stopped, so the control plane shows the install paused by its customer.
        let paused = ferry_protocol::messages::RUNNER_PAUSED_PARAMETER;
        self.parameters.insert(
            paused.into(),
            json!({ "Type": "String", "Default": "false", "AllowedValues": ["false", "true"],
                "Description": "Pause the runner: no runner host runs (the customer sets this, and unsets it)" }),
        );
        self.conditions.insert(
            "RunnerPausedOn".into(),
            json!({ "Fn::Equals": [r(paused), "true"] }),
        );
        let hosts = json!({ "Fn::If": ["RunnerPausedOn", "0", "1"] });
        let res = &mut self.resources;
        res.insert(
            "RunnerGroup".into(),
            json!({ "Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {
            "MinSize": hosts, "MaxSize": hosts, "DesiredCapacity": hosts,
            "VPCZoneIdentifier": [subnet_id],
            "LaunchTemplate": { "LaunchTemplateId": r("RunnerLaunchTemplate"),
                "Version": att("RunnerLaunchTemplate", "LatestVersionNumber") } } }),
        );
        self.output(
            "RunnerSecurityGroupId",
            "runner_security_group_id",
            r("RunnerSecurityGroup"),
            None,
        );
        self.output("RunnerAsgName", "runner_asg_name", r("RunnerGroup"), None);
    }

    /// The vendor's host template, nested: it gets where to run, the instance profile, the
    /// bundle and where the one-time token is, and must install the bundle as Ferry's user data
    /// does (docs/install-stack.md says what it is given).
    fn nested_host(&mut self, url: &str) {
        let params = json!({
            "VpcId": self.vpc_id, "SubnetId": self.subnet_id,
            "InstanceProfileArn": att("RunnerInstanceProfile", "Arn"),
            "ImageId": r("ImageId"), "InstanceType": r("InstanceType"),
            "RunnerBundleUrl": r("RunnerBundleUrl"), "RunnerBundleSha256": r("RunnerBundleSha256"),
            "BootstrapTokenSecret": r("RunnerBootstrapToken"),
            "InstallStackName": r("AWS::StackName"),
        });
        self.resources.insert(
            "RunnerHost".into(),
            json!({ "Type": "AWS::CloudFormation::Stack",
                "Properties": { "TemplateURL": url, "Parameters": params } }),
        );
        self.output(
            "RunnerHostStack",
            "runner_host_stack_id",
            r("RunnerHost"),
            None,
        );
    }

    pub(super) fn finish(self, description: String) -> Value {
        json!({
            "AWSTemplateFormatVersion": "2010-09-09",
            "Description": description,
            "Parameters": self.parameters,
            "Conditions": self.conditions,
            "Resources": self.resources,
            "Outputs": self.outputs,
        })
    }
}
