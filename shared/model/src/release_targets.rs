//! What a request for a release asks for, decided from the app's installs: which installs it
//! targets, in which order, and its settings. The API reads the records and stores the release;
//! the choice is here.

use crate::api::CreateRelease;
use crate::{Install, InstallQuery, ReleaseSettings};

impl CreateRelease {
    /// The installs the release targets, in order: those it names (each must be an install of
    /// its app), or else every install of its app carrying all its labels, by name (the filter
    /// `installs list --app A --label ...` applies). `installs` are the org's.
    pub fn targets(&self, installs: &[Install]) -> Result<Vec<String>, String> {
        let chosen = if self.installs.is_empty() {
            let query = InstallQuery {
                app: Some(self.app.clone()),
                label: (!self.labels.is_empty()).then(|| {
                    self.labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                }),
                ..Default::default()
            };
            let mut chosen: Vec<String> = installs
                .iter()
                .filter(|i| query.matches(i, None))
                .map(|i| i.name.clone())
                .collect();
            chosen.sort();
            chosen
        } else {
            if !self.labels.is_empty() {
                return Err("name the installs or choose them by labels, not both".into());
            }
            let of_app = |name: &str| installs.iter().any(|i| i.app == self.app && i.name == name);
            if let Some(i) = self.installs.iter().find(|i| !of_app(i)) {
                return Err(format!(
                    "install `{i}` is not an install of app `{}`",
                    self.app
                ));
            }
            self.installs.clone()
        };
        if chosen.is_empty() {
            let labels = if self.labels.is_empty() {
                ""
            } else {
                " with those labels"
            };
            return Err(format!(
                "app `{}` has no install to release to{labels}",
                self.app
            ));
        }
        Ok(chosen)
    }

    /// The release's settings as asked (seconds in the request, ms in the record).
    pub fn settings(&self) -> ReleaseSettings {
        ReleaseSettings {
            max_failures: self.max_failures,
            delay_ms: self.delay_secs * 1000,
            soak_ms: self.soak_secs * 1000,
            health_action: self.health.clone(),
            concurrency: self.concurrency,
            approve_all: self.approve_all,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install(name: &str, app: &str, labels: &str) -> Install {
        let mut i: Install = serde_json::from_value(serde_json::json!({
            "org": "o", "name": name, "app": app, "app_config_id": "v1",
            "inputs": {}, "approve_all": false, "status": "active",
            "sandbox": { "status": "active" }, "components": {}, "last_workflow": null,
            "created_at": "t", "updated_at": "t"
        }))
        .unwrap();
        if !labels.is_empty() {
            i.labels = crate::parse_labels(labels).unwrap();
        }
        i
    }

    fn fleet() -> Vec<Install> {
        vec![
            install("zeta", "shop", "tier=gold"),
            install("alpha", "shop", "tier=free"),
            install("mid", "shop", "tier=gold,team=payments"),
            install("other", "blog", "tier=gold"),
        ]
    }

    fn request(json: serde_json::Value) -> CreateRelease {
        let mut base = serde_json::json!({ "app": "shop", "waves": "100%" });
        for (k, v) in json.as_object().unwrap() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn by_default_every_install_of_the_app_by_name() {
        let r = request(serde_json::json!({}));
        assert_eq!(r.targets(&fleet()).unwrap(), ["alpha", "mid", "zeta"]);
    }

    #[test]
    fn labels_choose_the_installs_carrying_all_of_them() {
        let r = request(serde_json::json!({ "labels": { "tier": "gold" } }));
        assert_eq!(r.targets(&fleet()).unwrap(), ["mid", "zeta"]);
        let r = request(serde_json::json!({ "labels": { "tier": "gold", "team": "payments" } }));
        assert_eq!(r.targets(&fleet()).unwrap(), ["mid"]);
    }

    #[test]
    fn named_installs_keep_their_order_and_must_be_the_apps() {
        let r = request(serde_json::json!({ "installs": ["zeta", "alpha"] }));
        assert_eq!(r.targets(&fleet()).unwrap(), ["zeta", "alpha"]);
        let r = request(serde_json::json!({ "installs": ["zeta", "other"] }));
        assert_eq!(
            r.targets(&fleet()).unwrap_err(),
            "install `other` is not an install of app `shop`"
        );
    }

    #[test]
    fn names_and_labels_together_are_refused() {
        let r = request(serde_json::json!({ "installs": ["zeta"], "labels": { "tier": "gold" } }));
        assert!(r.targets(&fleet()).unwrap_err().contains("not both"));
    }

    #[test]
    fn a_release_to_nothing_is_refused_and_says_why() {
        let r = request(serde_json::json!({ "labels": { "tier": "platinum" } }));
        assert_eq!(
            r.targets(&fleet()).unwrap_err(),
            "app `shop` has no install to release to with those labels"
        );
        let r = request(serde_json::json!({ "app": "wiki" }));
        assert_eq!(
            r.targets(&fleet()).unwrap_err(),
            "app `wiki` has no install to release to"
        );
    }

    #[test]
    fn settings_are_kept_in_ms() {
        let r = request(serde_json::json!({ "delay_secs": 3, "soak_secs": 60, "max_failures": 2 }));
        let s = r.settings();
        assert_eq!((s.delay_ms, s.soak_ms, s.max_failures), (3_000, 60_000, 2));
    }
}
