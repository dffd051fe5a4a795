//! Amazon ECR credentials for OCI registries: ECR is a distribution registry whose password comes
//! from `GetAuthorizationToken` (valid 12 hours), under the caller's own AWS identity (the runner
//! host's: environment, profile, instance or task role, as the AWS SDK finds it).
//!
//! Kept in a crate of its own because the AWS SDK is a large build; everything else speaks to
//! registries through `ferry_artifacts::Registry` with the [`Auth`] this returns.

use aws_sdk_ecr::config::Region;
use base64::Engine;
use ferry_artifacts::Auth;

#[derive(Debug, thiserror::Error)]
pub enum EcrError {
    #[error("ECR GetAuthorizationToken in {region}: {source}")]
    Token {
        region: String,
        #[source]
        source: Box<aws_sdk_ecr::Error>,
    },
    #[error("ECR CreateRepository `{name}` in {region}: {source}")]
    CreateRepository {
        name: String,
        region: String,
        #[source]
        source: Box<aws_sdk_ecr::Error>,
    },
    #[error("ECR in {region} answered without a usable authorization token: {reason}")]
    BadToken { region: String, reason: String },
}

/// An ECR client for `region`. `endpoint`: another ECR endpoint than AWS's (a VPC endpoint, a
/// FIPS one; in Ferry's tests a local stand-in that speaks the ECR API).
pub struct Ecr {
    client: aws_sdk_ecr::Client,
    region: String,
}

impl Ecr {
    pub async fn new(region: &str, endpoint: Option<&str>) -> Ecr {
        // rustls with ring, as everywhere in Ferry (the SDK's default would add aws-lc).
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(http)
            .region(Region::new(region.to_string()))
            .load()
            .await;
        let mut config = aws_sdk_ecr::config::Builder::from(&shared);
        if let Some(url) = endpoint {
            config = config.endpoint_url(url);
        }
        Ecr {
            client: aws_sdk_ecr::Client::from_conf(config.build()),
            region: region.to_string(),
        }
    }

    /// Registry credentials: ECR's token is `AWS:<password>`, base64, used as basic auth.
    pub async fn auth(&self) -> Result<Auth, EcrError> {
        let out = self
            .client
            .get_authorization_token()
            .send()
            .await
            .map_err(|e| EcrError::Token {
                region: self.region.clone(),
                source: Box::new(e.into()),
            })?;
        let bad = |reason: &str| EcrError::BadToken {
            region: self.region.clone(),
            reason: reason.into(),
        };
        let token = out
            .authorization_data()
            .first()
            .and_then(|d| d.authorization_token())
            .ok_or_else(|| bad("no authorizationData"))?;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|_| bad("the token is not base64"))?;
        let text = String::from_utf8(decoded).map_err(|_| bad("the token is not text"))?;
        let (user, password) = text
            .split_once(':')
            .ok_or_else(|| bad("the token is not `user:password`"))?;
        Ok(Auth::Basic {
            user: user.to_string(),
            password: password.to_string(),
        })
    }

    /// Creates repository `name` unless it exists (ECR does not create repositories on push).
    pub async fn ensure_repository(&self, name: &str) -> Result<(), EcrError> {
        match self
            .client
            .create_repository()
            .repository_name(name)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let e: aws_sdk_ecr::Error = e.into();
                if matches!(e, aws_sdk_ecr::Error::RepositoryAlreadyExistsException(_)) {
                    Ok(())
                } else {
                    Err(EcrError::CreateRepository {
                        name: name.into(),
                        region: self.region.clone(),
                        source: Box::new(e),
                    })
                }
            }
        }
    }
}
