//! Amazon ECR credentials for OCI registries: ECR is a distribution registry whose password comes
//! from `GetAuthorizationToken` (valid 12 hours), under the caller's own AWS identity (the runner
//! host's: environment, profile, instance or task role, as the AWS SDK finds it). Everything else
//! speaks to registries through `ferry_artifacts::Registry` with the [`Auth`] this returns.

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
        let shared = crate::sdk_config(region).await;
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

/// A registry as an operator configures one: its URL (`https://host/path`, `http://127.0.0.1:5000/path`)
/// and, when it is Amazon ECR, its region. Repositories under it are opened with fresh credentials:
/// the ones given, or ECR's (a token is asked again once it is an hour old; ECR's live 12 hours),
/// and on ECR each repository is created first (ECR creates none on push).
#[derive(Debug, Clone)]
pub struct RegistrySite {
    url: String,
    ecr_region: Option<String>,
    given: Auth,
    /// ECR's last token, and when it was asked for.
    token: std::sync::Arc<std::sync::Mutex<Option<(std::time::Instant, Auth)>>>,
    /// Repositories already made (or found) on ECR by this site.
    made: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
}

/// How long an ECR token is used before another is asked for.
const TOKEN_REUSE: std::time::Duration = std::time::Duration::from_secs(3600);

impl RegistrySite {
    /// `given`: the credentials of a registry that is not ECR (ignored for ECR).
    pub fn new(url: &str, ecr_region: Option<String>, given: Auth) -> Result<RegistrySite, String> {
        // Checked now: a bad URL stops a service at start, not at its first use.
        ferry_artifacts::Registry::new(url, Auth::Anonymous).map_err(|e| format!("{url}: {e}"))?;
        Ok(RegistrySite {
            url: url.to_string(),
            ecr_region,
            given,
            token: Default::default(),
            made: Default::default(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The repository `<path>/<child>`, ready to push to and pull from.
    pub async fn repository(&self, child: &str) -> Result<ferry_artifacts::Registry, String> {
        // Boxed: the SDK's futures are deep types, and a caller's own future (a service's whole
        // task) would otherwise outgrow the compiler's layout depth.
        Box::pin(self.open(child)).await
    }

    async fn open(&self, child: &str) -> Result<ferry_artifacts::Registry, String> {
        let Some(region) = &self.ecr_region else {
            return ferry_artifacts::Registry::new(&self.url, self.given.clone())
                .map(|r| r.child(child))
                .map_err(|e| e.to_string());
        };
        let endpoint = std::env::var("FERRY_ECR_ENDPOINT").ok();
        let ecr = Ecr::new(region, endpoint.as_deref()).await;
        let cached = self
            .token
            .lock()
            .ok()
            .and_then(|t| t.clone())
            .filter(|(at, _)| at.elapsed() < TOKEN_REUSE)
            .map(|(_, auth)| auth);
        let auth = match cached {
            Some(a) => a,
            None => {
                let a = ecr.auth().await.map_err(|e| e.to_string())?;
                if let Ok(mut t) = self.token.lock() {
                    *t = Some((std::time::Instant::now(), a.clone()));
                }
                a
            }
        };
        let repo = ferry_artifacts::Registry::new(&self.url, auth)
            .map_err(|e| e.to_string())?
            .child(child);
        let name = repo.repository().to_string();
        if !self.made.lock().is_ok_and(|m| m.contains(&name)) {
            ecr.ensure_repository(&name)
                .await
                .map_err(|e| e.to_string())?;
            if let Ok(mut m) = self.made.lock() {
                m.insert(name);
            }
        }
        Ok(repo)
    }
}
