//! The plans a runner keeps: every plan it makes stays in its data directory, by digest, with the
//! artifact it was made from, until the component's next plan. An apply runs only such a plan,
//! and only on that artifact: no plan bytes ever come from the hub, so a plan forged or swapped
//! there is never applied.

use std::path::{Path, PathBuf};

use crate::exec::Executor;

impl Executor {
    /// Where the runner keeps the plans it made, by digest, until the component's next plan
    /// (an apply run again after a lost execution still finds its plan): an apply runs only a
    /// plan this install produced itself, never bytes from the hub (a forged plan result cannot
    /// become an apply).
    fn plan_copy(&self, component: &str, digest: &str) -> PathBuf {
        let name = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.data_dir.join("plans").join(component).join(name)
    }

    /// Keeps a new plan of `component`, with the artifact it was made from; the component's
    /// older plans are stale now (one workflow at a time runs on an install) and are removed.
    pub(crate) async fn keep_plan(
        &self,
        component: &str,
        digest: &str,
        bytes: &[u8],
        artifact: &str,
    ) -> Result<(), String> {
        let path = self.plan_copy(component, digest);
        if let Some(dir) = path.parent() {
            let _ = tokio::fs::remove_dir_all(dir).await;
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| format!("keeping the plan: {e}"))?;
        }
        tokio::fs::write(path.with_extension("artifact"), artifact)
            .await
            .map_err(|e| format!("keeping the plan: {e}"))?;
        tokio::fs::write(&path, bytes)
            .await
            .map_err(|e| format!("keeping the plan: {e}"))
    }

    /// The install's own copy of the approved plan, put in the work directory for the plugin
    /// (which checks its digest again). The plan must have been made from the artifact the apply
    /// names: a plan is never applied to another configuration than the one it was made from.
    /// Whether this runner host holds plan `digest` of `component` (an install's other runner
    /// hosts keep their own plans: an apply belongs on the host that made its plan).
    pub(crate) fn holds_plan(&self, component: &str, digest: &str) -> bool {
        crate::exec::plain_name(component) && self.plan_copy(component, digest).exists()
    }

    pub(crate) async fn own_plan(
        &self,
        component: &str,
        digest: &str,
        artifact: &str,
        work: &Path,
    ) -> Result<PathBuf, String> {
        let ours = self.plan_copy(component, digest);
        let (digest, artifact) = (digest.to_string(), artifact.to_string());
        let p = work.join("plan.in");
        // File work in one trip to the blocking pool.
        tokio::task::spawn_blocking(move || {
            if ours.exists() {
                let made_from = std::fs::read_to_string(ours.with_extension("artifact")).ok();
                same_artifact(&digest, made_from.as_deref(), &artifact)?;
            }
            let bytes = std::fs::read(&ours).map_err(|_| {
                format!(
                    "refusing to apply: this install holds no plan {digest} of its own (it \
                     applies only plans it produced); retry the step to plan again"
                )
            })?;
            std::fs::write(&p, bytes).map_err(|e| format!("writing the plan: {e}"))?;
            Ok(p)
        })
        .await
        .map_err(|e| format!("copying the plan: {e}"))?
    }
}

/// Refuses to apply plan `digest`, made from artifact `made_from`, with another `artifact`.
fn same_artifact(digest: &str, made_from: Option<&str>, artifact: &str) -> Result<(), String> {
    match made_from.map(str::trim) {
        Some(m) if m == artifact => Ok(()),
        m => Err(format!(
            "refusing to apply: plan {digest} was made from artifact {}, not {artifact}",
            m.filter(|m| !m.is_empty()).unwrap_or("unknown")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::same_artifact;

    #[test]
    fn a_plan_is_applied_only_to_the_artifact_it_was_made_from() {
        assert!(same_artifact("sha256:p", Some("sha256:a\n"), "sha256:a").is_ok());
        let e = same_artifact("sha256:p", Some("sha256:a"), "sha256:b").unwrap_err();
        assert_eq!(
            e,
            "refusing to apply: plan sha256:p was made from artifact sha256:a, not sha256:b"
        );
        assert!(
            same_artifact("sha256:p", None, "sha256:b")
                .unwrap_err()
                .contains("from artifact unknown")
        );
    }
}
