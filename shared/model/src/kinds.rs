//! The one table of what each kind of component is: the facts that validation (ferry-appconfig),
//! the scheduler (what a job carries) and the runner (what its plugin does) would otherwise each
//! decide with a `match` of their own. Keyed by the plugin's name (`ComponentKind::name` in
//! ferry-protocol; this crate imports none).

/// What a kind of component needs and does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindFacts {
    /// The plugin's name.
    pub name: &'static str,
    /// It deploys into the install's cluster: its jobs carry the cluster the sandbox names.
    pub needs_cluster: bool,
    /// Its plugin evaluates the app's OPA policies on its plans; other kinds' plans say which
    /// policies they were not checked against.
    pub evaluates_policies: bool,
}

/// Every kind, with its facts.
pub const KINDS: [KindFacts; 6] = [
    KindFacts {
        name: "script",
        needs_cluster: false,
        evaluates_policies: false,
    },
    KindFacts {
        name: "terraform",
        needs_cluster: false,
        evaluates_policies: true,
    },
    KindFacts {
        name: "helm",
        needs_cluster: true,
        evaluates_policies: true,
    },
    KindFacts {
        name: "kubernetes_manifest",
        needs_cluster: true,
        evaluates_policies: true,
    },
    KindFacts {
        name: "container_image",
        needs_cluster: false,
        evaluates_policies: false,
    },
    KindFacts {
        name: "job",
        needs_cluster: true,
        evaluates_policies: true,
    },
];

/// The facts of the kind whose plugin is `name`.
pub fn kind_facts(name: &str) -> Option<&'static KindFacts> {
    KINDS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once() {
        for k in &KINDS {
            assert_eq!(kind_facts(k.name), Some(k));
            assert_eq!(KINDS.iter().filter(|o| o.name == k.name).count(), 1);
        }
        assert_eq!(kind_facts("pulumi"), None);
    }

    #[test]
    fn the_kubernetes_kinds_need_the_cluster() {
        let cluster: Vec<&str> = KINDS
            .iter()
            .filter(|k| k.needs_cluster)
            .map(|k| k.name)
            .collect();
        assert_eq!(cluster, ["helm", "kubernetes_manifest", "job"]);
    }
}
