//! What runners ask of the scheduler, over core request/reply in the scheduler's queue group:
//! job claims (exactly one per job is granted, by a compare-and-swap on the job record, and only for
//! a job of the install the subject names; the decided job's offers are then retired), lease
//! renewals, and heartbeats (kept in the `runners` bucket).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ferry_model as m;
use ferry_protocol::messages::{ClaimReply, ClaimRequest, Heartbeat, LeaseRenewal, LeaseReply};
use ferry_protocol::rpc::Caller;
use ferry_protocol::subjects;
use ferry_store::serve::{Answer, serve, take};
use ferry_store::{StoreError, Versioned};
use tracing::{info, warn};

use crate::{Scheduler, SchedulerError};

/// The scheduler replicas' queue group: each request reaches one of them.
pub(crate) const QUEUE: &str = "scheduler";

/// How long a claim of a job with no record waits before reading again: the doorbell is rung as
/// the record is written, so a claim that reached another replica can, rarely, overtake the write.
/// Generous, since only a claim of a job that does not exist (or not yet) ever waits it.
const RECORD_RACE: Duration = Duration::from_millis(200);

impl Scheduler {
    pub(crate) async fn serve_claims(self) -> Result<(), SchedulerError> {
        let (client, tasks) = (self.client.clone(), self.tasks.clone());
        serve::<ClaimRequest, _, _>(client, QUEUE, &tasks, move |caller, req| {
            let s = self.clone();
            async move { s.claim(caller, req).await }
        })
        .await?;
        Ok(())
    }

    /// Heartbeats: the last of each runner is kept in the `runners` bucket, where the API reads
    /// each runner's health. One scheduler replica takes each (queue group).
    pub(crate) async fn serve_heartbeats(self) -> Result<(), SchedulerError> {
        let client = self.client.clone();
        take::<Heartbeat, _, _>(client, QUEUE, |caller, hb| {
            let s = self.clone();
            async move {
                if let Err(e) = s.record_heartbeat(&caller.org, &caller.install, hb).await {
                    warn!(org = %caller.org, install = %caller.install, error = %e, "could not record a heartbeat");
                }
            }
        })
        .await?;
        Ok(())
    }

    async fn record_heartbeat(
        &self,
        org: &str,
        install: &str,
        hb: Heartbeat,
    ) -> Result<(), SchedulerError> {
        if !subjects::is_valid_token(&hb.runner_id) {
            return Ok(());
        }
        let runners = self.store.repo::<m::RunnerRecord>();
        let now = m::now_ms();
        let mut rec = m::RunnerRecord {
            org: org.to_string(),
            id: hb.runner_id.clone(),
            install: install.to_string(),
            version: hb.version,
            running_jobs: hb.running_jobs,
            interval_ms: u64::from(hb.interval_ms),
            first_seen_ms: now,
            last_seen_ms: now,
            sandbox: Some(sandbox_of(hb.sandbox)),
            paused: hb.paused,
        };
        let key = format!("{org}.{}", hb.runner_id);
        // The record as this scheduler last wrote it saves reading it again: its revision is
        // the update's condition, so a record another scheduler wrote meanwhile fails the update
        // (a conflict) and is read as before.
        if let Some((first_seen_ms, revision)) = self.heard.get(&key, install) {
            rec.first_seen_ms = first_seen_ms;
            if let Ok(revision) = runners.update(&rec, revision).await {
                self.heard.put(key, install, first_seen_ms, revision);
                return Ok(());
            }
        }
        let written = match runners.get(org, &hb.runner_id).await? {
            // A runner id belongs to the install it first spoke for.
            Some(v) if v.value.install != install => return Ok(()),
            Some(v) => {
                rec.first_seen_ms = v.value.first_seen_ms;
                runners.update(&rec, v.revision).await
            }
            None => runners.create(&rec).await,
        };
        match written {
            Ok(revision) => {
                self.heard.put(key, install, rec.first_seen_ms, revision);
                Ok(())
            }
            Err(StoreError::Conflict { .. } | StoreError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Lease renewals: a runner extends the lease of an execution it runs. Anything else (a lost
    /// or finished execution, another install's job) is answered `Lost`, and the runner stops it.
    pub(crate) async fn serve_leases(self) -> Result<(), SchedulerError> {
        let (client, tasks) = (self.client.clone(), self.tasks.clone());
        serve::<LeaseRenewal, _, _>(client, QUEUE, &tasks, move |caller, req| {
            let s = self.clone();
            async move { s.renew(caller, req).await }
        })
        .await?;
        Ok(())
    }

    /// No answer on a store error: the runner asks again, and only its own deadline (the lease's
    /// end) stops the job.
    async fn renew(&self, caller: Caller, req: LeaseRenewal) -> Answer<LeaseReply> {
        let lost = |reason: String| Answer::reply(LeaseReply::Lost { reason });
        let (org, install) = (caller.org.as_str(), caller.install.as_str());
        let lease_ms = self.lease.as_millis() as u64;
        let r = self
            .store
            .repo::<m::Job>()
            .modify(org, &req.job_id, |j| {
                if j.install != install {
                    return Err(format!(
                        "job {} is not a job of install {install}",
                        req.job_id
                    ));
                }
                j.renew(&req.execution_id, m::Timestamp::now(), lease_ms)?;
                Ok(true)
            })
            .await;
        match r {
            Ok(Ok(_)) => Answer::reply(LeaseReply::Renewed {
                lease_ms: lease_ms as u32,
            }),
            Ok(Err(reason)) => {
                warn!(org, install, job = %req.job_id, %reason, "lease not renewed");
                lost(reason)
            }
            Err(StoreError::NotFound { .. }) => lost(format!("no job {}", req.job_id)),
            Err(e) => {
                warn!(org, install, job = %req.job_id, error = %e, "lease renewal failed");
                Answer::none()
            }
        }
    }

    /// Decides a claim; once the answer is sent, the decided job's offers are retired (off the
    /// runner's critical path).
    async fn claim(&self, caller: Caller, req: ClaimRequest) -> Answer<ClaimReply> {
        let refuse = |reason: String| ClaimReply::Refused { reason };
        let claimed_us = m::now_us();
        let (org, install) = (caller.org.as_str(), caller.install.as_str());
        // The random part of a ULID: 80 bits no other install can guess (see `Job::claim`).
        let secret = m::new_id()[10..].to_string();
        let mut offering = self.known.get(org, &req.job_id);
        let known = match offering.as_mut() {
            Some(o) => o.record().await,
            None => None,
        };
        let (known, written_us) = match known {
            Some((v, at)) => (Some(v), at),
            None => (None, 0),
        };
        let claim = Claim {
            org,
            install,
            req: &req,
            secret: &secret,
            written_us,
            claimed_us,
        };
        let mut r = self.try_claim(known, &claim).await;
        if matches!(r, Err(StoreError::NotFound { .. })) && offering.is_none() {
            tokio::time::sleep(RECORD_RACE).await;
            r = self.try_claim(None, &claim).await;
        }
        // Granted or refused for good: the job's offers have served. (Not on a store error: the
        // runner asks again.)
        let retire = matches!(r, Ok(_) | Err(StoreError::NotFound { .. })).then(|| {
            (
                org.to_string(),
                install.to_string(),
                req.job_id.clone(),
                offering,
            )
        });
        let answer = match r {
            Ok(Ok(g)) => {
                self.runners
                    .claimed(org, install, &req.runner_id, &req.job_id);
                info!(org, install, job = %req.job_id, execution = %g.public_id, runner = %req.runner_id, "job claimed");
                ClaimReply::Granted {
                    execution_id: g.execution_id,
                    attempt: g.attempt,
                    lease_ms: self.lease.as_millis() as u32,
                }
            }
            Ok(Err(reason)) => refuse(reason),
            Err(e) => refuse(e.to_string()),
        };
        let Some((org, install, job, offering)) = retire else {
            return Answer::reply(answer);
        };
        self.known.forget(&org, &job);
        let s = self.clone();
        Answer::reply(answer).then(async move {
            if let Some(o) = offering {
                o.published().await;
            }
            s.retire_offers(&org, &install, &job).await;
        })
    }

    /// The claim's compare-and-swap on the job record (`known`: the copy this scheduler wrote,
    /// saving the read).
    async fn try_claim(
        &self,
        known: Option<Versioned<m::Job>>,
        c: &Claim<'_>,
    ) -> Result<Result<m::Granted, String>, StoreError> {
        let Claim {
            org,
            install,
            req,
            secret,
            ..
        } = *c;
        let lease_ms = self.lease.as_millis() as u64;
        let mut granted = None;
        let mut offered_ms = None;
        let r = self
            .store
            .repo::<m::Job>()
            .modify_from(known, org, &req.job_id, |j| {
                offered_ms = j.offered_at.as_deref().and_then(m::ms_of);
                granted = Some(j.claim(
                    install,
                    &req.runner_id,
                    m::Timestamp::now(),
                    lease_ms,
                    secret,
                )?);
                j.time_claim(c.written_us, c.claimed_us, m::now_us());
                Ok(true)
            })
            .await?;
        if r.is_ok()
            && granted.is_some()
            && let Some(t) = offered_ms
        {
            let waited = m::now_ms().saturating_sub(t) as f64 / 1000.0;
            ferry_telemetry::metrics().dispatch_latency.observe(waited);
        }
        Ok(r.and_then(|_| granted.ok_or_else(|| "not granted".to_string())))
    }

    /// Deletes a decided job's offers from `JOBS`: every offer on its subject, which names the
    /// install the claim came from, so a runner cannot retire another install's offers.
    async fn retire_offers(&self, org: &str, install: &str, job_id: &str) {
        let Ok(stream) = self.jobs_stream().await else {
            return;
        };
        if let Err(e) = stream
            .purge()
            .filter(subjects::job(org, install, job_id))
            .await
        {
            warn!(org, install, job = job_id, error = %e, "could not retire a decided offer");
        }
    }
}

/// A claim being decided: who asks, and the points of its timing known so far (`m::Timing`).
#[derive(Clone, Copy)]
struct Claim<'a> {
    org: &'a str,
    install: &'a str,
    req: &'a ClaimRequest,
    secret: &'a str,
    /// When the offer's record write was acknowledged (0: not offered by this scheduler).
    written_us: u64,
    /// When the claim arrived.
    claimed_us: u64,
}

/// The runner records this scheduler last wrote, by `org.runner`: install, first seen, revision.
/// Bounded: past [`HEARD_MAX`] entries it starts over (an entry only saves a read).
#[derive(Clone, Default)]
pub(crate) struct Heard(Arc<std::sync::Mutex<HashMap<String, Written>>>);

/// A runner record as written: its install, when the runner was first seen, its revision.
type Written = (String, u64, u64);

const HEARD_MAX: usize = 100_000;

impl Heard {
    /// First seen and revision of the record of runner `key`, if it was written for `install`.
    fn get(&self, key: &str, install: &str) -> Option<(u64, u64)> {
        let map = self.0.lock().ok()?;
        map.get(key)
            .filter(|(i, ..)| i == install)
            .map(|(_, first, rev)| (*first, *rev))
    }

    fn put(&self, key: String, install: &str, first_seen_ms: u64, revision: u64) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= HEARD_MAX {
                map.clear();
            }
            map.insert(key, (install.to_string(), first_seen_ms, revision));
        }
    }
}

/// The runner's sandbox as its heartbeat says it, as the record keeps it.
fn sandbox_of(s: ferry_protocol::messages::SandboxState) -> m::RunnerSandbox {
    use ferry_protocol::messages::SandboxState as S;
    match s {
        S::BubblewrapJobUser => m::RunnerSandbox::BubblewrapJobUser,
        S::BubblewrapUserNamespace => m::RunnerSandbox::BubblewrapUserNamespace,
        S::Unsandboxed => m::RunnerSandbox::Unsandboxed,
        S::Unavailable => m::RunnerSandbox::Unavailable,
    }
}
