//! Changing an install's record by compare-and-swap with a function of
//! `ferry_model::transitions`, which says whether it changed anything.

use ferry_model::{self as m, Workflow};
use ferry_store::StoreError;

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Changes the workflow's install by compare-and-swap with `f` (a function of
    /// `ferry_model::transitions`), which says whether it changed anything. An install that is
    /// gone is left gone.
    pub(crate) async fn change_install(
        &self,
        wf: &Workflow,
        f: impl FnMut(&mut m::Install) -> bool,
    ) -> Result<(), SchedulerError> {
        self.change_install_of(&wf.org, &wf.install, f).await
    }

    pub(crate) async fn change_install_of(
        &self,
        org: &str,
        install: &str,
        mut f: impl FnMut(&mut m::Install) -> bool,
    ) -> Result<(), SchedulerError> {
        let r = self
            .store
            .repo::<m::Install>()
            .modify_written(&self.installs, org, install, |i| Ok::<bool, ()>(f(i)))
            .await;
        match r {
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
