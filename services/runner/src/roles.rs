//! The identity each job has in the customer's account: least privilege per operation.
//!
//! A runner in an install stack (`--stack-name`) runs each job as the role its offer names
//! (`RunAs`, decided by `ferry_appconfig::operations`): it looks the role's ARN up in its own
//! stack's outputs (so it assumes only a role its stack created, whatever an offer says),
//! assumes it with STS on the host's identity, and gives the plugin process those temporary
//! credentials and nothing else: the variables through which AWS's SDKs and CLIs would find the
//! host's own credentials are removed, and the instance metadata service is off for the job's
//! SDKs. A job that names no role runs with no AWS identity at all. A runner in no stack (a
//! developer's machine, `ferry dev`) leaves the environment as it is and says so.
//!
//! Credentials last the job's execution limit (and five minutes more), within what a role
//! allows (the stack sets 12 hours): a longer job would find them expired.

use std::time::Duration;

use ferry_aws::sts::RoleCredentials;
use ferry_protocol::messages::{JobSpec, RunAs};

use crate::stack::Account;

/// Where AWS's SDKs and CLIs find credentials other than those given: never passed to a job
/// of a runner in an install stack.
const HOST_CREDENTIALS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
];

/// The shortest and longest sessions STS gives for a role (the stack sets roles' maximum to 12 h).
const SESSION_SECS: (u64, u64) = (15 * 60, 12 * 3600);

/// What a job runs as.
#[derive(Debug)]
pub enum Identity {
    /// A runner in no install stack: the job has the runner's own environment.
    Host,
    /// In an install stack, a job the app declares no role for: no AWS identity.
    Nobody,
    /// The role of the job's operation, assumed for it.
    Role {
        run_as: RunAs,
        region: String,
        credentials: RoleCredentials,
    },
}

impl Identity {
    /// The identity the job runs as, for its log.
    pub fn describe(&self) -> String {
        match self {
            Identity::Host => {
                "runs with the runner's own environment (the runner is in no install stack)".into()
            }
            Identity::Nobody => {
                "runs with no AWS identity: the app declares no role for this operation".into()
            }
            Identity::Role {
                run_as,
                credentials,
                ..
            } => format!(
                "runs as role {} ({}) for {}",
                run_as.role, credentials.assumed_arn, run_as.operation
            ),
        }
    }

    /// The assumed role's session ARN, for the result (and so the audit).
    pub fn assumed_arn(&self) -> Option<String> {
        match self {
            Identity::Role { credentials, .. } => Some(credentials.assumed_arn.clone()),
            _ => None,
        }
    }

    /// The job's process environment: the host's credentials out, the role's in.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        if matches!(self, Identity::Host) {
            return;
        }
        for v in HOST_CREDENTIALS {
            cmd.env_remove(v);
        }
        cmd.env("AWS_EC2_METADATA_DISABLED", "true");
        if let Identity::Role {
            region,
            credentials: c,
            ..
        } = self
        {
            cmd.env("AWS_ACCESS_KEY_ID", &c.access_key_id)
                .env("AWS_SECRET_ACCESS_KEY", &c.secret_access_key)
                .env("AWS_SESSION_TOKEN", &c.session_token)
                .env("AWS_REGION", region)
                .env("AWS_DEFAULT_REGION", region);
        }
    }
}

/// What `spec`'s job runs as on a runner in `account`, for at most `limit`. A break-glass role
/// runs only an action that names it (its grant checked when the action was prepared) and is
/// held to this host's pin; a role the stack does not output is an error that says so.
pub async fn for_job(
    account: &Account,
    spec: &JobSpec,
    job_id: &str,
    pinned: Option<&str>,
    limit: Duration,
) -> Result<Identity, String> {
    let Some(source) = account.source() else {
        return Ok(Identity::Host);
    };
    let Some(run_as) = spec.run_as() else {
        return Ok(Identity::Nobody);
    };
    if run_as.break_glass {
        let named = match spec {
            JobSpec::Action(a) => a.break_glass_role.as_deref(),
            _ => None,
        };
        if named.is_none() || named != pinned {
            return Err(format!(
                "break-glass role {} runs only the action that names it, as this host pinned it",
                run_as.role
            ));
        }
    }
    let Some(output) = &run_as.output else {
        return Err(format!(
            "role {} is not declared by the app (permissions or break_glass.toml): the install stack has no such role to run {} as",
            run_as.role, run_as.operation
        ));
    };
    let arn = account.output(source, output).await?.ok_or_else(|| {
        format!(
            "the install stack {} has no output {output} (role {}): update the stack to the app's current template (ferry installs stack)",
            source.name, run_as.role
        )
    })?;
    let secs = (limit.as_secs() + 300).clamp(SESSION_SECS.0, SESSION_SECS.1);
    let credentials = ferry_aws::sts::assume_role(
        &source.region,
        source.endpoint.as_deref(),
        &arn,
        &session_name(job_id),
        i32::try_from(secs).unwrap_or(i32::MAX),
    )
    .await
    .map_err(|e| {
        format!(
            "cannot assume role {} for {}: {e}",
            run_as.role, run_as.operation
        )
    })?;
    Ok(Identity::Role {
        run_as: run_as.clone(),
        region: source.region.clone(),
        credentials,
    })
}

/// An STS session name for the job: what CloudTrail shows the customer. At most 64 of the
/// characters STS takes.
fn session_name(job_id: &str) -> String {
    let clean: String = job_id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '=' | ',' | '.' | '@' | '-' | '_' => c,
            _ => '-',
        })
        .collect();
    let mut name = format!("ferry-{clean}");
    name.truncate(64);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_what_sts_takes() {
        assert_eq!(session_name("01J9X/abc"), "ferry-01J9X-abc");
        assert_eq!(session_name(&"x".repeat(100)).len(), 64);
    }

    #[tokio::test]
    async fn a_runner_in_no_stack_keeps_its_environment() {
        let spec = JobSpec::SyncArtifact(ferry_protocol::messages::SyncJob {
            component: "c".into(),
            repository: "r".into(),
            digest: "d".into(),
        });
        let id = for_job(
            &Account::default(),
            &spec,
            "j",
            None,
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        assert!(matches!(id, Identity::Host));
        assert_eq!(id.assumed_arn(), None);
    }
}
