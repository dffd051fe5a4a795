//! Validating app packages without stalling the services.
//!
//! A package is untrusted input and validating one is CPU work: parsing every TOML file, checking
//! every template. The template engine bounds its own work (nesting, steps, output), but even
//! bounded work must not run on the async runtime, where it would stop every other request of the
//! process (`/healthz` included) while it runs. So validation runs on tokio's blocking pool, and the
//! caller stops waiting after a deadline.
//!
//! A validation that passed its deadline still runs to its end (a thread cannot be stopped), so
//! at most one validation per core runs at a time: a burst of hostile uploads queues (and times
//! out) instead of taking every core from the rest of the process.

use std::time::Duration;

use ferry_appconfig::{AppConfig, Package, Report};

use crate::{Store, StoreError};

/// What a deploy of `cfg` lays out, in order: the sandbox (if the app has one), then the app's
/// deploy stages. (Here because both the API, checking a deploy's scope, and the scheduler, laying
/// it out, need the same list.)
pub fn deploy_stages(cfg: &AppConfig) -> Vec<Vec<ferry_model::Deployable>> {
    let sandbox = cfg.sandbox.as_ref().map(|_| {
        vec![ferry_model::Deployable {
            name: ferry_model::SANDBOX.into(),
            dependencies: vec![],
        }]
    });
    sandbox
        .into_iter()
        .chain(cfg.deploy_order.iter().map(|stage| {
            stage
                .iter()
                .filter_map(|name| cfg.component(name))
                .map(|c| ferry_model::Deployable {
                    name: c.name.clone(),
                    dependencies: c.dependencies.clone(),
                })
                .collect()
        }))
        .collect()
}

/// Longest a caller waits for one package's validation.
pub const VALIDATE_DEADLINE: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error("validating the package took longer than {0:?}")]
    Deadline(Duration),
    #[error("the validation worker failed: {0}")]
    Worker(#[from] tokio::task::JoinError),
}

/// Validates `pkg` on the blocking pool; gives the package back with the report.
pub async fn validate_package(pkg: Package) -> Result<(Package, Report), ValidateError> {
    static SLOTS: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> =
        std::sync::OnceLock::new();
    let slots = SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::sync::Arc::new(tokio::sync::Semaphore::new(cores))
    });
    let run = async {
        // The semaphore is never closed, so acquiring only waits.
        let slot = slots.clone().acquire_owned().await;
        let work = tokio::task::spawn_blocking(move || {
            let report = ferry_appconfig::validate(&pkg);
            drop(slot);
            (pkg, report)
        });
        work.await
    };
    match tokio::time::timeout(VALIDATE_DEADLINE, run).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(ValidateError::Deadline(VALIDATE_DEADLINE)),
    }
}

impl Store {
    /// An app config version's package and its parsed config, validated off the runtime.
    pub async fn config(
        &self,
        org: &str,
        config_id: &str,
    ) -> Result<(ferry_model::AppConfigVersion, Package, AppConfig), StoreError> {
        let (rec, pkg) = self.package(org, config_id).await?;
        let unreadable = |reason: String| StoreError::Package {
            config_id: config_id.to_string(),
            reason,
        };
        let (pkg, report) = validate_package(pkg)
            .await
            .map_err(|e| unreadable(e.to_string()))?;
        match report.config {
            Some(cfg) => Ok((rec, pkg, cfg)),
            None => Err(unreadable(format!(
                "the stored package no longer validates:\n{}",
                report.diagnostics
            ))),
        }
    }
}
