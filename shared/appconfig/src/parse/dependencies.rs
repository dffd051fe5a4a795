//! After every block is read: the components each template reads (implicit dependencies, checked
//! against a stand-in install's state), each component's dependencies, the deploy order, and the
//! content hashes that decide what needs a new build.

use super::refs::RefCtx;
use super::*;

impl<'a> Loader<'a> {
    /// Checks every template of the package against the state a deploy renders with (built for a
    /// stand-in install of `shape`, with `actions`), and renders it leniently against it; returns
    /// the components each owner's templates read.
    pub(super) fn implicit_dependencies(
        &mut self,
        shape: &AppConfig,
        actions: &[Action],
    ) -> BTreeMap<String, BTreeSet<String>> {
        let with_actions = AppConfig {
            actions: actions.to_vec(),
            runbooks: vec![],
            installs: vec![],
            policies: vec![],
            ..shape.clone()
        };
        let stand_in = crate::state::build(
            &with_actions,
            &crate::state::Facts {
                org: "validate",
                app: "validate",
                install: "validate",
                ..Default::default()
            },
        );
        let ctx = RefCtx {
            state: &stand_in,
            has_sandbox: shape.sandbox.is_some(),
        };
        let mut implicit = BTreeMap::new();
        for site in std::mem::take(&mut self.sites) {
            self.template(&site, &ctx, &mut implicit);
        }
        implicit
    }

    /// Each component's dependencies: its explicit ones (checked: known, not itself) and the
    /// components its templates read. Returns the dependency graph.
    pub(super) fn dependencies(
        &mut self,
        drafts: &mut [Draft],
        names: &BTreeSet<String>,
        implicit: &BTreeMap<String, BTreeSet<String>>,
    ) -> BTreeMap<String, Vec<String>> {
        let mut graph = BTreeMap::new();
        for d in drafts {
            let mut deps: BTreeSet<String> = BTreeSet::new();
            for (dep, at) in &d.explicit {
                let msg = if dep == &d.c.name {
                    format!("component `{dep}` depends on itself")
                } else if names.contains(dep) {
                    deps.insert(dep.clone());
                    continue;
                } else {
                    let hint = did_you_mean(dep, names.iter().map(String::as_str));
                    format!("unknown component `{dep}` in dependencies{hint}")
                };
                self.diags
                    .push(&d.c.file, &d.src, *at, Severity::Error, msg);
            }
            deps.extend(owner_refs(implicit, &format!("component:{}", d.c.name)));
            d.c.dependencies = deps.into_iter().collect();
            graph.insert(d.c.name.clone(), d.c.dependencies.clone());
        }
        graph
    }

    /// The components' deploy stages; a cycle is an error at its first component's name.
    pub(super) fn deploy_order(
        &mut self,
        graph: &BTreeMap<String, Vec<String>>,
        drafts: &[Draft],
    ) -> Vec<Vec<String>> {
        match crate::graph::deploy_stages(graph) {
            Ok(s) => s,
            Err(cycle) => {
                if let Some(d) = cycle
                    .first()
                    .and_then(|n| drafts.iter().find(|d| &d.c.name == n))
                {
                    self.err(
                        &d.c.file,
                        d.name_at,
                        format!("dependency cycle: {}", cycle.join(" -> ")),
                    );
                }
                vec![]
            }
        }
    }

    /// Content hashes of the components and the sandbox (declaration, directory and referenced
    /// files); components sorted by name.
    pub(super) fn hash_contents(&self, config: &mut AppConfig) {
        for c in config
            .components
            .iter_mut()
            .chain(config.sandbox.iter_mut())
        {
            let owner = if c.name == "sandbox" && c.file == "sandbox.toml" {
                "sandbox".to_string()
            } else {
                format!("component:{}", c.name)
            };
            c.content_hash =
                self.content_hash(c, self.refs.get(&owner).cloned().unwrap_or_default());
        }
        config.components.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// The components an owner's templates read (`component:NAME`, `action:NAME`, `sandbox`).
pub(super) fn owner_refs<'m>(
    implicit: &'m BTreeMap<String, BTreeSet<String>>,
    owner: &str,
) -> impl Iterator<Item = String> + 'm {
    implicit.get(owner).into_iter().flatten().cloned()
}
