//! The parsed app config of a config version, cached: versions are immutable, so the cache
//! never goes stale.

use std::sync::Arc;

use ferry_appconfig::AppConfig;
use ferry_store::StoreError;

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// The parsed config of an app config version.
    pub(crate) async fn config(
        &self,
        org: &str,
        config_id: &str,
    ) -> Result<Arc<AppConfig>, SchedulerError> {
        if let Some(c) = self
            .configs
            .lock()
            .ok()
            .and_then(|m| m.get(config_id).cloned())
        {
            return Ok(c);
        }
        let (_, _, cfg) = self
            .store
            .config(org, config_id)
            .await
            .map_err(|e| match e {
                StoreError::Package { config_id, reason } => {
                    SchedulerError::Config(config_id, reason)
                }
                other => other.into(),
            })?;
        let cfg = Arc::new(cfg);
        if let Ok(mut map) = self.configs.lock() {
            map.insert(config_id.to_string(), cfg.clone());
        }
        Ok(cfg)
    }
}
