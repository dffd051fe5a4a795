//! What a deploy covers: every component (the default), some of them (`--component`, with or
//! without what depends on them), and whether it stops after the plans (`--plan-only`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::{Deployable, SANDBOX};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeployScope {
    /// Only these (by name; `sandbox` is the sandbox). Empty: all of them.
    #[serde(default)]
    pub components: Vec<String>,
    /// With `components`: also everything that depends on them, directly or not.
    #[serde(default)]
    pub with_dependents: bool,
    /// Build, sync and plan, then stop: no approval, no apply.
    #[serde(default)]
    pub plan_only: bool,
    /// Deploy this config version of the app (an earlier one: a rollback) instead of its
    /// latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
}

impl DeployScope {
    /// The deploy stages this scope keeps of `stages` (the sandbox first, then the app's deploy
    /// order), or the reason it names something the app does not have. Every component depends on
    /// the sandbox, so the sandbox with its dependents is everything.
    pub fn select(&self, stages: &[Vec<Deployable>]) -> Result<Vec<Vec<Deployable>>, String> {
        if self.components.is_empty() {
            return Ok(stages.to_vec());
        }
        let known: BTreeSet<&str> = stages.iter().flatten().map(|d| d.name.as_str()).collect();
        let unknown: Vec<&str> = self
            .components
            .iter()
            .map(String::as_str)
            .filter(|c| !known.contains(c))
            .collect();
        if !unknown.is_empty() {
            return Err(format!(
                "the app has no component {} (it has: {})",
                unknown.join(", "),
                known.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        let mut chosen: BTreeSet<String> = self.components.iter().cloned().collect();
        if self.with_dependents {
            // Stages are in deploy order: one pass picks up dependents of dependents.
            for d in stages.iter().flatten() {
                let depends = d.name != SANDBOX && chosen.contains(SANDBOX)
                    || d.dependencies.iter().any(|dep| chosen.contains(dep));
                if depends {
                    chosen.insert(d.name.clone());
                }
            }
        }
        Ok(stages
            .iter()
            .map(|s| {
                s.iter()
                    .filter(|d| chosen.contains(&d.name))
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .collect())
    }

    /// How the scope reads in a listing (`all`, `web, api + dependents`, `…, plan only`).
    pub fn describe(&self) -> String {
        let mut s = if self.components.is_empty() {
            "all".to_string()
        } else {
            self.components.join(", ")
        };
        if self.with_dependents && !self.components.is_empty() {
            s.push_str(" + dependents");
        }
        if self.plan_only {
            s.push_str(", plan only");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::Deployable as D;

    fn d(name: &str, deps: &[&str]) -> D {
        D::named(name, deps)
    }

    fn stages() -> Vec<Vec<Deployable>> {
        vec![
            vec![d("sandbox", &[])],
            vec![d("db", &[]), d("cache", &[])],
            vec![d("api", &["db"])],
            vec![d("web", &["api"])],
        ]
    }

    fn names(s: &[Vec<Deployable>]) -> Vec<Vec<&str>> {
        s.iter()
            .map(|st| st.iter().map(|d| d.name.as_str()).collect())
            .collect()
    }

    fn scope(components: &[&str], with_dependents: bool) -> DeployScope {
        DeployScope {
            components: components.iter().map(|s| s.to_string()).collect(),
            with_dependents,
            ..Default::default()
        }
    }

    #[test]
    fn everything_by_default() {
        assert_eq!(DeployScope::default().select(&stages()).unwrap(), stages());
        assert_eq!(DeployScope::default().describe(), "all");
    }

    #[test]
    fn one_component_alone_or_with_its_transitive_dependents() {
        let s = scope(&["db"], false).select(&stages()).unwrap();
        assert_eq!(names(&s), vec![vec!["db"]]);
        let s = scope(&["db"], true).select(&stages()).unwrap();
        assert_eq!(names(&s), vec![vec!["db"], vec!["api"], vec!["web"]]);
        assert_eq!(scope(&["db"], true).describe(), "db + dependents");
    }

    #[test]
    fn the_sandbox_alone_is_a_reprovision_and_with_dependents_everything() {
        let s = scope(&["sandbox"], false).select(&stages()).unwrap();
        assert_eq!(names(&s), vec![vec!["sandbox"]]);
        let s = scope(&["sandbox"], true).select(&stages()).unwrap();
        assert_eq!(s, stages());
    }

    #[test]
    fn an_unknown_component_is_named() {
        assert_eq!(
            scope(&["db", "nope"], false).select(&stages()).unwrap_err(),
            "the app has no component nope (it has: api, cache, db, sandbox, web)"
        );
    }
}
