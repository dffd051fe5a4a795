//! The install's secrets as its runner sees them in the customer's account: which exist, their
//! ARN, when they last changed and how long their value is ([`list`]: a value is read for its
//! length and dropped there); and one secret's value ([`value`]), for the job that copies it
//! into the install's cluster.

/// Why the secrets could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("Secrets Manager ListSecrets `{prefix}*`: {source}")]
    List {
        prefix: String,
        #[source]
        source: Box<aws_sdk_secretsmanager::Error>,
    },
    #[error("Secrets Manager GetSecretValue `{name}`: {source}")]
    Value {
        name: String,
        #[source]
        source: Box<aws_sdk_secretsmanager::Error>,
    },
}

/// One secret's status: never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    /// Its name after the install's prefix (`license_key` of `acme/license_key`).
    pub name: String,
    pub arn: String,
    /// When its value last changed, RFC 3339; empty if Secrets Manager does not say.
    pub last_changed: String,
    /// Its value's length in bytes (0: set to nothing yet).
    pub length: u64,
}

/// A secret's value (a job's, to copy into the install's cluster): `None` when the secret does
/// not exist or has no value yet.
pub async fn value(
    region: &str,
    endpoint: Option<&str>,
    id: &str,
) -> Result<Option<String>, SecretsError> {
    let client = client(region, endpoint).await;
    match client.get_secret_value().secret_id(id).send().await {
        Ok(v) => Ok(v.secret_string().map(String::from)),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(SecretsError::Value {
            name: id.to_string(),
            source: Box::new(e.into()),
        }),
    }
}

async fn client(region: &str, endpoint: Option<&str>) -> aws_sdk_secretsmanager::Client {
    let shared = crate::sdk_config(region).await;
    let mut config = aws_sdk_secretsmanager::config::Builder::from(&shared);
    if let Some(url) = endpoint {
        config = config.endpoint_url(url);
    }
    aws_sdk_secretsmanager::Client::from_conf(config.build())
}

/// The most secrets read for one install: an app declares a handful.
const MOST: usize = 100;

/// The secrets named `prefix…` in `region` (`endpoint`: another Secrets Manager than AWS's).
pub async fn list(
    region: &str,
    endpoint: Option<&str>,
    prefix: &str,
) -> Result<Vec<SecretInfo>, SecretsError> {
    use aws_sdk_secretsmanager::types::{Filter, FilterNameStringType};
    let client = client(region, endpoint).await;
    let listed = client
        .list_secrets()
        .filters(
            Filter::builder()
                .key(FilterNameStringType::Name)
                .values(prefix)
                .build(),
        )
        .max_results(MOST as i32)
        .send()
        .await
        .map_err(|e| SecretsError::List {
            prefix: prefix.to_string(),
            source: Box::new(e.into()),
        })?;
    let mut out = Vec::new();
    for s in listed.secret_list().iter().take(MOST) {
        let (Some(full), Some(arn)) = (s.name(), s.arn()) else {
            continue;
        };
        // The filter matches by prefix word; only names in the install's own space count.
        let Some(name) = full.strip_prefix(prefix) else {
            continue;
        };
        let value = client.get_secret_value().secret_id(arn).send().await;
        let length = match value {
            Ok(v) => v
                .secret_string()
                .map(str::len)
                .or_else(|| v.secret_binary().map(|b| b.as_ref().len()))
                .unwrap_or(0) as u64,
            // Created without a value yet: it exists, and is empty.
            Err(e) if is_not_found(&e) => 0,
            Err(e) => {
                return Err(SecretsError::Value {
                    name: full.to_string(),
                    source: Box::new(e.into()),
                });
            }
        };
        out.push(SecretInfo {
            name: name.to_string(),
            arn: arn.to_string(),
            last_changed: s
                .last_changed_date()
                .and_then(|d| {
                    d.fmt(aws_sdk_secretsmanager::primitives::DateTimeFormat::DateTime)
                        .ok()
                })
                .unwrap_or_default(),
            length,
        });
    }
    Ok(out)
}

fn is_not_found(
    e: &aws_sdk_secretsmanager::error::SdkError<
        aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueError,
    >,
) -> bool {
    e.as_service_error()
        .is_some_and(|s| s.is_resource_not_found_exception())
}
