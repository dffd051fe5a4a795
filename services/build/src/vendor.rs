//! The vendor's artifact store: the hub's `artifacts` object store (the embedded default), or an
//! OCI registry (`ferry-server --vendor-registry`), where each component's artifacts live in a
//! repository of their own, `<registry path>/<org>/<app>/<component>`, so `helm pull oci://` and
//! other registry tools find them by name.

use ferry_artifacts::AnyStore;

/// The vendor store as configured: an object store or a registry ([`AnyStore`]'s `Nats` or
/// `Registry`).
#[derive(Clone)]
pub struct Vendor(pub AnyStore);

impl Vendor {
    /// The store of one component's artifacts.
    pub fn of(&self, org: &str, app: &str, component: &str) -> AnyStore {
        match &self.0 {
            AnyStore::Registry(r) => {
                AnyStore::Registry(r.child(&format!("{org}/{app}/{component}")))
            }
            other => other.clone(),
        }
    }

    /// Where a build's artifact is, for its record (`repository`).
    pub fn location(&self, org: &str, app: &str, component: &str) -> String {
        match self.of(org, app, component) {
            AnyStore::Registry(r) => r.location(),
            _ => format!("{org}/{app}/{component}"),
        }
    }
}
