//! The install's own registry (`--registry`): where component artifacts and container images are
//! copied, one repository per component (`<path>/<component>`). Its credentials come from the
//! runner's environment (`FERRY_REGISTRY_USER`/`FERRY_REGISTRY_PASSWORD`, or
//! `FERRY_REGISTRY_TOKEN`), or, for Amazon ECR (`--registry-ecr-region`), from ECR's
//! `GetAuthorizationToken` under the host's AWS identity, asked again for each job (a token lives
//! 12 hours) — and ECR, which creates no repository on push, gets each one created first.

use ferry_artifacts::{Auth, Registry};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct InstallRegistry {
    pub url: String,
    /// The registry is Amazon ECR in this region.
    pub ecr_region: Option<String>,
}

impl InstallRegistry {
    /// The repository of `component`'s artifacts and images, with fresh credentials.
    pub async fn for_component(&self, component: &str) -> Result<Registry, String> {
        let ecr = match &self.ecr_region {
            Some(region) => {
                let endpoint = std::env::var("FERRY_ECR_ENDPOINT").ok();
                Some(ferry_ecr::Ecr::new(region, endpoint.as_deref()).await)
            }
            None => None,
        };
        let auth = match &ecr {
            Some(e) => e.auth().await.map_err(|e| e.to_string())?,
            None => env_auth(),
        };
        let repo = Registry::new(&self.url, auth)
            .map_err(|e| format!("--registry {}: {e}", self.url))?
            .child(component);
        if let Some(e) = &ecr {
            e.ensure_repository(repo.repository())
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(repo)
    }
}

/// The registry's credentials from the environment only (a flag would show in `ps`).
pub fn env_auth() -> Auth {
    let var = |k: &str| std::env::var(k).ok();
    Auth::from_parts(
        var("FERRY_REGISTRY_USER"),
        var("FERRY_REGISTRY_PASSWORD"),
        var("FERRY_REGISTRY_TOKEN"),
    )
}
