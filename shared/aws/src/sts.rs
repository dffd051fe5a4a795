//! Assuming the role a job runs as, in the install's account: STS AssumeRole on the runner
//! host's own identity (the install stack lets its instance role assume the app's roles and
//! nothing else). The job gets the temporary credentials; the host's stay with the runner.

/// Why a role could not be assumed.
#[derive(Debug, thiserror::Error)]
pub enum StsError {
    #[error("STS AssumeRole {role}: {source}")]
    Assume {
        role: String,
        #[source]
        source: Box<aws_sdk_sts::Error>,
    },
    #[error("STS AssumeRole {0}: the answer has no credentials")]
    NoCredentials(String),
}

/// A role's temporary credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct RoleCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
    /// The session's identity: `arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION`.
    pub assumed_arn: String,
}

// Never printed whole: the secret and the token stay out of logs.
impl std::fmt::Debug for RoleCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("assumed_arn", &self.assumed_arn)
            .finish_non_exhaustive()
    }
}

/// Assumes `role_arn` as `session` for `seconds` in `region`; `endpoint`: another STS endpoint
/// than AWS's (in Ferry's tests, moto).
pub async fn assume_role(
    region: &str,
    endpoint: Option<&str>,
    role_arn: &str,
    session: &str,
    seconds: i32,
) -> Result<RoleCredentials, StsError> {
    let shared = crate::sdk_config(region).await;
    let mut config = aws_sdk_sts::config::Builder::from(&shared);
    if let Some(url) = endpoint {
        config = config.endpoint_url(url);
    }
    let client = aws_sdk_sts::Client::from_conf(config.build());
    let answer = client
        .assume_role()
        .role_arn(role_arn)
        .role_session_name(session)
        .duration_seconds(seconds)
        .send()
        .await
        .map_err(|e| StsError::Assume {
            role: role_arn.to_string(),
            source: Box::new(e.into()),
        })?;
    let c = answer
        .credentials()
        .ok_or_else(|| StsError::NoCredentials(role_arn.to_string()))?;
    Ok(RoleCredentials {
        access_key_id: c.access_key_id().to_string(),
        secret_access_key: c.secret_access_key().to_string(),
        session_token: c.session_token().to_string(),
        assumed_arn: answer
            .assumed_role_user()
            .map(|u| u.arn().to_string())
            .unwrap_or_else(|| role_arn.to_string()),
    })
}
