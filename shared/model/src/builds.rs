//! A component's build: named by its content, so an unchanged component is built once and every
//! later config version and install reuses that build.

use crate::Timestamp;
use crate::{Build, BuildStatus};

impl Build {
    /// The id of the build of `component` of `app` whose content hashes to `content_hash`: a
    /// workflow's build steps are named by it when laid out, before anything is built.
    pub fn id_for(app: &str, component: &str, content_hash: &str) -> String {
        let hash = content_hash.trim_start_matches("sha256:");
        format!("{app}-{component}-{}", &hash[..hash.len().min(16)])
    }

    /// The build of `component` of `app` whose content hashes to `content_hash`, requested by
    /// config version `config_id` at `now`. Its id is derived from the hash: whoever requests
    /// the same content names the same build.
    pub fn requested(
        org: &str,
        app: &str,
        component: &str,
        config_id: &str,
        content_hash: &str,
        now: Timestamp,
    ) -> Build {
        Build {
            id: Build::id_for(app, component, content_hash),
            org: org.into(),
            app: app.into(),
            component: component.into(),
            config_id: config_id.into(),
            content_hash: content_hash.into(),
            status: BuildStatus::Building,
            repository: format!("{org}/{app}/{component}"),
            digest: None,
            size: 0,
            media_type: None,
            error: None,
            created_at: now.into(),
            finished_at: None,
        }
    }

    /// Whether this build can no longer change: one that succeeded is named by its content and
    /// never built again (only a failed build is retried, [`Build::retried`]) nor deleted, so a
    /// copy of it read once stays true (the store keeps it: `ferry_store` `settled.rs`).
    pub fn is_settled(&self) -> bool {
        self.status == BuildStatus::Succeeded
    }

    /// A failed build asked for again: it is built again. Whether it changed.
    pub fn retried(&mut self) -> bool {
        if self.status != BuildStatus::Failed {
            return false;
        }
        self.status = BuildStatus::Building;
        self.error = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::at;

    const NOW: &str = "2026-11-27T10:00:00.000Z";

    #[test]
    fn a_build_is_named_by_its_content() {
        let h = "sha256:0123456789abcdef0123456789abcdef";
        let a = Build::requested("o", "shop", "db", "c1", h, at(NOW));
        let b = Build::requested("o", "shop", "db", "c2", h, at("2026-11-28T10:00:00.000Z"));
        assert_eq!(a.id, "shop-db-0123456789abcdef");
        assert_eq!(a.id, b.id);
        assert_eq!(a.repository, "o/shop/db");
        assert_eq!(a.status, BuildStatus::Building);
        let other = Build::requested("o", "shop", "db", "c1", "sha256:ffff", at(NOW));
        assert_eq!(other.id, "shop-db-ffff");
    }

    #[test]
    fn only_a_failed_build_is_built_again() {
        let mut b = Build::requested("o", "a", "c", "c1", "sha256:ab", at(NOW));
        assert!(!b.retried());
        b.status = BuildStatus::Failed;
        b.error = Some("exit 1".into());
        assert!(b.retried());
        assert_eq!((b.status, b.error), (BuildStatus::Building, None));
    }

    #[test]
    fn only_a_succeeded_build_is_settled() {
        let mut b = Build::requested("o", "a", "c", "c1", "sha256:ab", at(NOW));
        assert!(!b.is_settled());
        b.status = BuildStatus::Failed;
        assert!(!b.is_settled());
        b.status = BuildStatus::Succeeded;
        assert!(b.is_settled());
        // A settled build is never retried.
        assert!(!b.retried());
        assert!(b.is_settled());
    }
}
