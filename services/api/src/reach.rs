//! Keeps each caller to the installs its token reaches (`ferry_model::reach`). Two halves:
//!
//! * [`guard`] runs when a handler's caller is resolved ([`crate::auth::Ctx`] for the API,
//!   the dashboard's `Session`), before the handler: a path naming a record of an install out of
//!   reach (an install, a workflow, a job, a release, an app or config no reached install runs)
//!   is answered 404 with the words a missing record gets, so nothing confirms it exists.
//! * Listings and streams leave out what is out of reach with [`ApiState::reached`] and
//!   [`ApiState::reaches`].
//!
//! A whole-org token (every vendor admin's, and viewers and operators not bound) passes
//! without a read.

use axum::extract::{FromRequestParts, MatchedPath, RawPathParams};
use axum::http::request::Parts;
use ferry_model::{self as m, PathTarget};

use crate::{ApiError, ApiState};

impl ApiState {
    /// The installs the caller reaches.
    pub(crate) async fn reached(&self) -> Result<m::Reached, ApiError> {
        if self.scope.whole_org() {
            return Ok(m::Reached::All);
        }
        if self.scope.labels.is_empty() {
            return Ok(m::Reached::Only(self.scope.installs.clone()));
        }
        let all = self.store.repo::<m::Install>().scan(&self.org).await?;
        Ok(m::Reached::Only(m::reached(&self.scope, &all)))
    }

    /// Whether the caller reaches install `name` (one that does not exist is not reached).
    pub(crate) async fn reaches(&self, name: &str) -> Result<bool, ApiError> {
        if let Some(known) = self.scope.covers_name(name) {
            return Ok(known);
        }
        let install = self.store.repo::<m::Install>().get(&self.org, name).await?;
        Ok(install.is_some_and(|i| self.scope.covers(&i.value)))
    }

    /// Whether the caller reaches some install running `app`.
    async fn reaches_app(&self, app: &str) -> Result<bool, ApiError> {
        if self.scope.whole_org() {
            return Ok(true);
        }
        let all = self.store.repo::<m::Install>().scan(&self.org).await?;
        Ok(all.iter().any(|i| i.app == app && self.scope.covers(i)))
    }

    /// Whether the caller reaches what `target` names: the install that owns it.
    pub(crate) async fn reaches_target(&self, target: &PathTarget) -> Result<bool, ApiError> {
        if self.scope.whole_org() {
            return Ok(true);
        }
        match target {
            PathTarget::Install(name) => self.reaches(name).await,
            PathTarget::Workflow(id) => {
                match self.store.repo::<m::Workflow>().get(&self.org, id).await? {
                    Some(wf) => self.reaches(&wf.value.install).await,
                    None => Ok(false),
                }
            }
            PathTarget::Job(id) => match self.store.repo::<m::Job>().get(&self.org, id).await? {
                Some(job) => self.reaches(&job.value.install).await,
                None => Ok(false),
            },
            // A release spans the fleet: a token bound to installs sees none.
            PathTarget::Release(_) => Ok(false),
            PathTarget::App(app) => self.reaches_app(app).await,
            PathTarget::Config(id) => {
                let config = self.store.repo::<m::AppConfigVersion>();
                match config.get(&self.org, id).await? {
                    Some(c) => self.reaches_app(&c.value.app).await,
                    None => Ok(false),
                }
            }
            PathTarget::None => Ok(true),
        }
    }
}

/// Refuses a request whose path names a record the caller does not reach, as if it did not
/// exist (see the module doc). `state` is already the caller's.
pub(crate) async fn guard(state: &ApiState, parts: &mut Parts) -> Result<(), ApiError> {
    if state.scope.whole_org() {
        return Ok(());
    }
    let Some(template) = parts.extensions.get::<MatchedPath>().cloned() else {
        return Ok(());
    };
    let params = RawPathParams::from_request_parts(parts, &())
        .await
        .map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let target = PathTarget::of(template.as_str(), |name| {
        params.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    });
    match state.reaches_target(&target).await? {
        true => Ok(()),
        false => Err(ApiError::NotFound(target.not_found())),
    }
}
