//! Releases: the scheduler executes the pure release logic of `ferry_model::releases`.
//!
//! A release moves on events: when one of its workflows ends, that outcome is fed to the
//! record (`Release::workflow_ended`, then `next`), the record saved (compare-and-swap, tried
//! again on a conflict) and what it says started ([`Work::ReleaseWorkflowEnded`]): a wave's
//! last deploy ending starts the next wave a moment later: the ends arriving within
//! `effects::RELEASE_GATHER` of each other are fed in one read and one write (`coalesce.rs`).
//!
//! The sweep stays as the safety net and the clock: it reads the open releases; for each, it
//! feeds back how every workflow it started ended, asks the record what comes next (a wave's
//! delay or soak that has run out), saves it and starts what it names. A workflow the record
//! names but that does not exist yet (a crash between the save and the start, or an install
//! busy with another workflow) is started on a later sweep, under the same id: nothing starts
//! twice, and a restart mid-wave loses nothing. Starting yields work for the executor's queue
//! (never run inside the release code), so nothing here calls back into it.

use ferry_model::{self as m, Release, ReleaseEffect, TargetStatus, Workflow};
use ferry_store::StoreError;
use tracing::{info, warn};

use crate::work::Work;
use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// A workflow of release `id` ended: its outcome queued for the release (`coalesce.rs`).
    /// `true`: nobody is writing the release now, and the caller is to start its writer, which
    /// feeds it everything queued ([`Scheduler::apply_waiting_release_ends`]).
    pub(crate) async fn release_workflow_ended(
        &self,
        org: &str,
        id: &str,
        workflow: &str,
    ) -> Result<bool, SchedulerError> {
        let Some(outcome) = self.outcome_of(org, workflow).await? else {
            return Ok(false);
        };
        let key = (org.to_string(), id.to_string());
        Ok(self.release_ends.add(&key, (workflow.to_string(), outcome)))
    }

    /// For the writer of release `id`: the ends of its workflows queued so far fed to it in
    /// one write, and the work that starts what comes next; `None` when nothing is queued (the
    /// writer's turn is over). What an error left unapplied stays queued for the next writer
    /// (and the sweep feeds every outcome back anyway).
    pub(crate) async fn apply_waiting_release_ends(
        &self,
        org: &str,
        id: &str,
    ) -> Result<Option<Vec<Work>>, SchedulerError> {
        let key = (org.to_string(), id.to_string());
        let ended = self.release_ends.take(&key);
        if ended.is_empty() {
            return Ok(None);
        }
        match self.apply_release_ends(org, id, &ended).await {
            Ok(work) => Ok(Some(work)),
            Err(e) => {
                self.release_ends.give_back(&key, ended);
                Err(e)
            }
        }
    }

    /// Feeds the outcomes of `ended` workflows to release `id` and saves it (again on a
    /// conflict with another replica's write), then starts what it says comes next.
    async fn apply_release_ends(
        &self,
        org: &str,
        id: &str,
        ended: &[(String, Result<(), String>)],
    ) -> Result<Vec<Work>, SchedulerError> {
        let repo = self.store.repo::<Release>();
        let (r, effects) = loop {
            let Some(v) = repo.get(org, id).await? else {
                return Ok(vec![]);
            };
            let mut r = v.value.clone();
            if r.status.is_terminal() {
                return Ok(vec![]);
            }
            let now = m::Timestamp::now();
            let mut effects = Vec::new();
            for (workflow, outcome) in ended {
                effects.extend(r.workflow_ended(workflow, outcome.clone(), now));
            }
            effects.extend(r.next(now));
            if r == v.value {
                return Ok(vec![]);
            }
            if effects.iter().any(|e| matches!(e, ReleaseEffect::Ended)) {
                self.release_ended(&r).await?;
            }
            match repo.update(&r, v.revision).await {
                Ok(_) => break (r, effects),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        };
        info!(
            org,
            release = id,
            workflows = ended.len(),
            "release moved on its workflows' ends"
        );
        let mut work = Vec::new();
        for e in effects {
            let started = match &e {
                ReleaseEffect::Deploy {
                    install, workflow, ..
                } => self.start_release_deploy(&r, install, workflow).await,
                ReleaseEffect::Check {
                    install, workflow, ..
                } => self.start_release_check(&r, install, workflow).await,
                ReleaseEffect::Ended => Ok(None),
            };
            match started {
                Ok(w) => work.extend(w),
                Err(e) => warn!(org, release = id, error = %e, "release workflow not started"),
            }
        }
        if r.status.is_terminal() {
            self.close_release(org, id).await?;
        }
        Ok(work)
    }

    /// The sweep's pass over one release: every outcome fed back, what comes next decided,
    /// what the record names and does not exist yet started; the work that advances them.
    pub(crate) async fn drive_release(
        &self,
        org: &str,
        id: &str,
    ) -> Result<Vec<Work>, SchedulerError> {
        let repo = self.store.repo::<Release>();
        let Some(v) = repo.get(org, id).await? else {
            self.close_release(org, id).await?;
            return Ok(vec![]);
        };
        let mut r = v.value.clone();
        if r.status.is_terminal() {
            // Ended, but its mark outlived the sweep that ended it (a crash, or its audit
            // record not taken): the record again (the same one, kept once), then the mark.
            self.release_ended(&r).await?;
            self.close_release(org, id).await?;
            return Ok(vec![]);
        }
        let now = m::Timestamp::now();
        let mut effects = Vec::new();
        // How the workflows it started ended (one still running needs no read).
        for (workflow, _) in in_flight(&r) {
            if self.running(org, &workflow) {
                continue;
            }
            if let Some(outcome) = self.outcome_of(org, &workflow).await? {
                effects.extend(r.workflow_ended(&workflow, outcome, now));
            }
        }
        effects.extend(r.next(now));
        // Audited before it is saved: a record the stream does not take leaves the release as
        // it was, and the next sweep decides (and audits) again.
        if effects.iter().any(|e| matches!(e, ReleaseEffect::Ended)) {
            self.release_ended(&r).await?;
        }
        if r != v.value {
            match repo.update(&r, v.revision).await {
                Ok(_) => {}
                // Another replica moved it: its decisions stand; the next sweep goes on.
                Err(StoreError::Conflict { .. }) => return Ok(vec![]),
                Err(e) => return Err(e.into()),
            }
        }
        let work = self.start_missing(&r).await?;
        if r.status.is_terminal() {
            self.close_release(org, id).await?;
        }
        Ok(work)
    }

    /// Starts what release `r` names and does not exist yet (this sweep's, or one a crash or a
    /// busy install left); the work that advances them.
    async fn start_missing(&self, r: &Release) -> Result<Vec<Work>, SchedulerError> {
        let org = r.org.as_str();
        let mut work = Vec::new();
        for (workflow, (wave, target)) in in_flight(r) {
            let t = &r.waves[wave].targets[target];
            let exists = self.running(org, &workflow)
                || self
                    .store
                    .repo::<Workflow>()
                    .get(org, &workflow)
                    .await?
                    .is_some();
            if exists {
                continue;
            }
            let started = match t.status {
                TargetStatus::Deploying => {
                    self.start_release_deploy(r, &t.install, &workflow).await
                }
                _ => self.start_release_check(r, &t.install, &workflow).await,
            };
            match started {
                Ok(w) => work.extend(w),
                Err(e) => {
                    warn!(org, release = %r.id, install = %t.install, error = %e, "release workflow not started");
                }
            }
        }
        Ok(work)
    }

    /// Whether this scheduler wrote workflow `w` since the last sweep: it runs (an ended one
    /// is no longer kept as written), and needs no read.
    fn running(&self, org: &str, w: &str) -> bool {
        self.workflows
            .written_within(org, w, crate::RECONCILE_INTERVAL)
    }

    /// How a workflow ended: `None` while it runs (or does not exist yet).
    async fn outcome_of(
        &self,
        org: &str,
        workflow: &str,
    ) -> Result<Option<Result<(), String>>, SchedulerError> {
        let Some(w) = self.store.repo::<Workflow>().get(org, workflow).await? else {
            return Ok(None);
        };
        let w = w.value;
        Ok(match w.status {
            m::WorkflowStatus::Succeeded => Some(Ok(())),
            s if s.is_terminal() => {
                let why = w
                    .steps
                    .iter()
                    .find(|s| s.status == m::StepStatus::Failed)
                    .and_then(|s| s.message.clone())
                    .or(w.error.clone())
                    .unwrap_or_else(|| s.to_string());
                Some(Err(why))
            }
            _ => None,
        })
    }

    /// Deploys the release's config to an install, as `workflow`, if no other workflow holds it
    /// (otherwise a later sweep tries again): the work that advances it.
    async fn start_release_deploy(
        &self,
        r: &Release,
        install: &str,
        workflow: &str,
    ) -> Result<Option<Work>, SchedulerError> {
        let Some(current) = self.store.repo::<m::Install>().get(&r.org, install).await? else {
            warn!(org = %r.org, release = %r.id, install, "a release's install is gone");
            return Ok(None);
        };
        if let Some(holder) = current.value.last_workflow.as_deref()
            && let Some(h) = self.store.repo::<Workflow>().get(&r.org, holder).await?
            && !h.value.status.is_terminal()
        {
            info!(org = %r.org, release = %r.id, install, busy = holder, "release waits for the install");
            return Ok(None);
        }
        let mut wf = Workflow::requested(
            workflow.to_string(),
            &r.org,
            install,
            m::WorkflowKind::DeployComponents,
            &r.config_id,
            Default::default(),
            m::Timestamp::now(),
        );
        wf.cause = Some(m::release_cause(&r.id));
        wf.approve_all = r.settings.approve_all;
        // Reserve the install first: a workflow recorded but not holding its install would be
        // refused at lay-out.
        let seen = current.value.last_workflow.clone();
        let now = m::Timestamp::now();
        let reserved = self
            .store
            .repo::<m::Install>()
            .modify_written(&self.installs, &r.org, install, |i| {
                if i.reserve(seen.as_deref(), workflow, &r.config_id, now) {
                    Ok(true)
                } else {
                    Err(())
                }
            })
            .await?;
        if reserved.is_err() {
            return Ok(None);
        }
        self.store
            .repo::<m::OpenWorkflow>()
            .create_if_absent(&wf.open_mark())
            .await?;
        match self.store.repo::<Workflow>().create(&wf).await {
            Ok(revision) => {
                let v = ferry_store::Versioned {
                    value: wf,
                    revision,
                };
                self.workflows.put(&r.org, workflow, v);
            }
            Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        info!(org = %r.org, release = %r.id, install, workflow, "release deploy started");
        Ok(Some(Work::advance(&r.org, workflow)))
    }

    /// Runs the release's health action on an install, as `workflow`.
    async fn start_release_check(
        &self,
        r: &Release,
        install: &str,
        workflow: &str,
    ) -> Result<Option<Work>, SchedulerError> {
        let Some(action) = r.settings.health_action.clone() else {
            return Ok(None);
        };
        let mut wf = Workflow::requested(
            workflow.to_string(),
            &r.org,
            install,
            m::WorkflowKind::Action,
            &r.config_id,
            Default::default(),
            m::Timestamp::now(),
        );
        wf.run = Some(m::ActionRun {
            action,
            trigger: "release".into(),
            inputs: Default::default(),
        });
        wf.cause = Some(m::release_cause(&r.id));
        self.store
            .repo::<m::OpenWorkflow>()
            .create_if_absent(&wf.open_mark())
            .await?;
        match self.store.repo::<Workflow>().create(&wf).await {
            Ok(_) | Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(Some(Work::advance(&r.org, workflow)))
    }

    /// Audits a release's end: at when it ended, or at its last change for a halt.
    async fn release_ended(&self, r: &Release) -> Result<(), SchedulerError> {
        info!(org = %r.org, release = %r.id, status = ?r.status, reason = ?r.reason, "release ended");
        let at = r
            .finished_at
            .clone()
            .unwrap_or_else(|| r.updated_at.clone());
        self.audit(&m::AuditEvent::release_ended(r, &at)).await
    }

    async fn close_release(&self, org: &str, id: &str) -> Result<(), SchedulerError> {
        self.store.repo::<m::OpenRelease>().erase(org, id).await?;
        Ok(())
    }
}

/// The workflows a release has started and not yet heard the end of, with where they are
/// (wave, target).
fn in_flight(r: &Release) -> Vec<(String, (usize, usize))> {
    let mut out = Vec::new();
    for (w, wave) in r.waves.iter().enumerate() {
        for (i, t) in wave.targets.iter().enumerate() {
            let wf = match t.status {
                TargetStatus::Deploying => t.deploy.clone(),
                TargetStatus::Checking => t.health.clone(),
                _ => None,
            };
            if let Some(wf) = wf {
                out.push((wf, (w, i)));
            }
        }
    }
    out
}
