//! The install's own registry (`--registry`): where component artifacts and container images are
//! copied, one repository per component (`<path>/<component>`). Its credentials come from the
//! runner's environment (`FERRY_REGISTRY_USER`/`FERRY_REGISTRY_PASSWORD`, or
//! `FERRY_REGISTRY_TOKEN`), or, for Amazon ECR (`--registry-ecr-region`), from ECR's
//! `GetAuthorizationToken` under the host's AWS identity — and ECR, which creates no repository on
//! push, gets each one created first (`ferry_aws::RegistrySite`). The plugin process gets the
//! same description and opens it again under the same environment.

use ferry_artifacts::{Auth, Registry};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct InstallRegistry {
    pub url: String,
    /// The registry is Amazon ECR in this region.
    pub ecr_region: Option<String>,
}

impl InstallRegistry {
    /// The registry, opened under the runner's environment: keep it to reuse ECR's token.
    pub fn open(&self) -> Result<ferry_aws::RegistrySite, String> {
        ferry_aws::RegistrySite::new(&self.url, self.ecr_region.clone(), env_auth())
    }

    /// The repository of `component`'s artifacts and images (for a process that opens the
    /// registry once, as a plugin does).
    pub async fn for_component(&self, component: &str) -> Result<Registry, String> {
        self.open()?.repository(component).await
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

/// The registry's credentials as the runner has them in its environment, for the one job that
/// writes the install's registry itself (a `container_image` component's): no other job gets
/// them (`sandbox::JobEnv`).
pub fn env_credentials() -> Vec<(String, String)> {
    [
        "FERRY_REGISTRY_USER",
        "FERRY_REGISTRY_PASSWORD",
        "FERRY_REGISTRY_TOKEN",
    ]
    .into_iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect()
}
