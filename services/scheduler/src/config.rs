//! The parsed app config of a config version, cached: versions are immutable, so the cache
//! never goes stale.

use std::sync::Arc;

use ferry_appconfig::AppConfig;
use ferry_model::{self as m, StepKind};
use ferry_store::StoreError;

use crate::{Scheduler, SchedulerError};

/// A config version as the scheduler keeps it: its app's name and its parsed config.
#[derive(Clone)]
pub(crate) struct Cached {
    app: Arc<str>,
    cfg: Arc<AppConfig>,
}

impl Scheduler {
    /// The parsed config of an app config version.
    pub(crate) async fn config(
        &self,
        org: &str,
        config_id: &str,
    ) -> Result<Arc<AppConfig>, SchedulerError> {
        Ok(self.cached_config(org, config_id).await?.cfg)
    }

    /// The name of the app of a config version.
    pub(crate) async fn app_of_config(
        &self,
        org: &str,
        config_id: &str,
    ) -> Result<Arc<str>, SchedulerError> {
        Ok(self.cached_config(org, config_id).await?.app)
    }

    async fn cached_config(&self, org: &str, config_id: &str) -> Result<Cached, SchedulerError> {
        if let Some(c) = self
            .configs
            .lock()
            .ok()
            .and_then(|m| m.get(config_id).cloned())
        {
            return Ok(c);
        }
        let (rec, _, cfg) = self
            .store
            .config(org, config_id)
            .await
            .map_err(|e| match e {
                StoreError::Package { config_id, reason } => {
                    SchedulerError::Config(config_id, reason)
                }
                other => other.into(),
            })?;
        let c = Cached {
            app: rec.app.into(),
            cfg: Arc::new(cfg),
        };
        if let Ok(mut map) = self.configs.lock() {
            map.insert(config_id.to_string(), c.clone());
        }
        Ok(c)
    }

    /// Names each build step of freshly laid-out `steps` of `wf` by the build it will use
    /// (`Build::id_for`: the id is its content's), so that starting the step writes nothing
    /// more to the workflow before the build is found or requested.
    pub(crate) async fn name_builds(
        &self,
        wf: &m::Workflow,
        steps: &mut [m::Step],
    ) -> Result<(), SchedulerError> {
        if !steps.iter().any(|s| s.kind == StepKind::Build) {
            return Ok(());
        }
        let c = self.cached_config(&wf.org, &wf.app_config_id).await?;
        for s in steps.iter_mut().filter(|s| s.kind == StepKind::Build) {
            if let Some(component) = c.cfg.component(&s.component) {
                let id = m::Build::id_for(&c.app, &component.name, &component.content_hash);
                s.build_id = Some(id);
            }
        }
        Ok(())
    }
}
