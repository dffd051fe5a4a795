//! Preparing a job's work directory while its claim is out.
//!
//! A claim's round trip (through the leaf to the scheduler, its compare-and-swap of the job
//! record, and back) takes about as long as preparing the work directory (the artifact unpacked,
//! the plan copied, the job file written): `loadtest dispatch --breakdown` measured both near
//! 1 ms. So when an offer arrives the runner starts both at once, and a granted job finds its
//! directory ready. Only what needs no answer and says nothing in the job's log is staged: a
//! component job whose artifact is already in this host's layout store and which copies no
//! secrets; anything else (or a staging that fails) is prepared after the grant as before, so
//! errors and log lines are the same either way. A refused claim's directory is removed.

use std::path::PathBuf;
use std::sync::Arc;

use ferry_protocol::messages::{JobOffer, JobSpec};

use crate::exec::{Executor, plain_name, write_job};
use crate::plugin::{Phase, PluginInput};

/// A work directory prepared before its grant.
pub(crate) struct Staged {
    pub work: PathBuf,
    pub input: PluginInput,
}

/// A staging under way: its task, owned by the claim that started it.
pub(crate) type Staging = tokio::task::JoinHandle<Option<Staged>>;

impl Executor {
    /// Starts staging `offer`'s work directory, if it is a job that can be staged.
    pub(crate) fn stage(self: &Arc<Self>, offer: &JobOffer) -> Option<Staging> {
        let (phase, c, plan) = match &offer.spec {
            JobSpec::Plan(c) => (Phase::Plan, c, None),
            JobSpec::Teardown(c) => (Phase::Teardown, c, None),
            JobSpec::Apply(a) => (Phase::Apply, &a.component, Some(a.plan_digest.clone())),
            _ => return None,
        };
        if !self.stages() || !plain_name(&c.component) || !c.secret_syncs.is_empty() {
            return None;
        }
        let (exec, c) = (self.clone(), c.clone());
        // A name no execution has: the execution's id is not known before the grant.
        let work =
            self.data_dir
                .join("work")
                .join(format!("{}.{}", offer.job_id, ferry_model::new_id()));
        Some(tokio::spawn(async move {
            let staged = async {
                let (src, state) = (
                    work.join("src"),
                    exec.data_dir.join("state").join(&c.component),
                );
                if !exec
                    .unpack_here(&c.artifact_digest, &src, &state)
                    .await
                    .ok()?
                {
                    return None;
                }
                let plan_file = match &plan {
                    Some(d) => Some(
                        exec.own_plan(&c.component, d, &c.artifact_digest, &work)
                            .await
                            .ok()?,
                    ),
                    None => None,
                };
                let job = exec.plugin_job(phase, &c, plan.as_ref(), plan_file, &work, vec![]);
                write_job(&work, PluginInput::Component(job)).await.ok()
            }
            .await;
            match staged {
                Some(input) => Some(Staged { work, input }),
                None => {
                    remove(work).await;
                    None
                }
            }
        }))
    }
}

/// Removes a staged directory no execution will use (its claim refused or unanswered).
pub(crate) async fn discard(staging: Staging) {
    if let Ok(Some(s)) = staging.await {
        remove(s.work).await;
    }
}

async fn remove(work: PathBuf) {
    if let Err(e) = tokio::fs::remove_dir_all(&work).await
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(dir = %work.display(), error = %e, "could not remove a staged work directory");
    }
}
