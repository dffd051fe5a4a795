//! The vendor's artifact store: the hub's `artifacts` object store (the embedded default), or an
//! OCI registry (`ferry-server --vendor-registry`, Amazon ECR with `--vendor-registry-ecr-region`),
//! where each component's artifacts live in a repository of their own,
//! `<registry path>/<org>/<app>/<component>`, so `helm pull oci://` and other registry tools find
//! them by name.

use ferry_artifacts::{AnyStore, NatsObjectStore};
use ferry_aws::RegistrySite;

#[derive(Clone)]
pub enum Vendor {
    Nats(Box<NatsObjectStore>),
    Registry(RegistrySite),
}

impl Vendor {
    /// The store of one component's artifacts (on a registry, with fresh credentials).
    pub async fn of(&self, org: &str, app: &str, component: &str) -> Result<AnyStore, String> {
        match self {
            Vendor::Nats(n) => Ok(AnyStore::Nats(n.clone())),
            Vendor::Registry(site) => Ok(AnyStore::Registry(
                site.repository(&format!("{org}/{app}/{component}")).await?,
            )),
        }
    }

    /// Where a build's artifact is, for its record (`repository`).
    pub fn location(&self, org: &str, app: &str, component: &str) -> String {
        let path = format!("{org}/{app}/{component}");
        match self {
            Vendor::Nats(_) => path,
            Vendor::Registry(site) => {
                let base = site.url().split_once("://").map_or(site.url(), |(_, r)| r);
                format!("{}/{path}", base.trim_end_matches('/'))
            }
        }
    }
}
