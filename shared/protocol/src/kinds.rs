//! The one table of what each kind of component is: the facts that validation (ferry-appconfig),
//! the scheduler (what a job carries, through `ferry_appconfig::jobs`) and the runner (what its
//! plugin does) would otherwise each decide with a `match` of their own.
//!
//! It lives beside [`ComponentKind`] rather than in ferry-model (which imports no workspace
//! crate, so it could only key a table by name): here the table is one exhaustive `match`, and
//! a kind added without its facts does not compile.

use crate::messages::ComponentKind;

/// What a kind of component needs and does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindFacts {
    /// It deploys into the install's cluster: its jobs carry the cluster the sandbox names.
    pub needs_cluster: bool,
    /// Its plugin evaluates the app's OPA policies on its plans; other kinds' plans say which
    /// policies they were not checked against.
    pub evaluates_policies: bool,
    /// Its build packs the component's `directory` from the package into its artifact; the
    /// other kinds' artifacts hold no files (a container image and a job run an image).
    pub artifact_from_directory: bool,
}

impl ComponentKind {
    /// Every kind.
    pub const ALL: [ComponentKind; 6] = [
        ComponentKind::Script,
        ComponentKind::Terraform,
        ComponentKind::Helm,
        ComponentKind::KubernetesManifest,
        ComponentKind::ContainerImage,
        ComponentKind::Job,
    ];

    /// The kind's facts.
    pub const fn facts(self) -> KindFacts {
        let (needs_cluster, evaluates_policies, artifact_from_directory) = match self {
            ComponentKind::Script => (false, false, true),
            ComponentKind::Terraform => (false, true, true),
            ComponentKind::Helm => (true, true, true),
            ComponentKind::KubernetesManifest => (true, true, true),
            ComponentKind::ContainerImage => (false, false, false),
            ComponentKind::Job => (true, true, false),
        };
        KindFacts {
            needs_cluster,
            evaluates_policies,
            artifact_from_directory,
        }
    }

    /// The kind whose plugin is `name`.
    pub fn of_name(name: &str) -> Option<ComponentKind> {
        ComponentKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_and_found_by_its_name() {
        for k in ComponentKind::ALL {
            assert_eq!(ComponentKind::of_name(k.name()), Some(k));
            assert_eq!(ComponentKind::ALL.iter().filter(|o| **o == k).count(), 1);
        }
        assert_eq!(ComponentKind::of_name("pulumi"), None);
    }

    #[test]
    fn the_kubernetes_kinds_need_the_cluster() {
        let cluster: Vec<&str> = ComponentKind::ALL
            .into_iter()
            .filter(|k| k.facts().needs_cluster)
            .map(|k| k.name())
            .collect();
        assert_eq!(cluster, ["helm", "kubernetes_manifest", "job"]);
    }
}
