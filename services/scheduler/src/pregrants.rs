//! Granting a job as it is offered (the decision and its safety: `ferry_model::pregrants`).
//!
//! What the scheduler keeps for it, in memory (an entry only saves a trip; losing it costs the
//! ordinary claim, never a job):
//!
//! * [`Heard`]: each install's runners as their heartbeats say. Every replica hears every
//!   heartbeat (outside the queue group that records them), so each knows when an install has
//!   one runner, whichever replica its heartbeats were recorded by.
//! * [`Unheard`]: the offers this replica granted at once, until the hub's "no responders" to
//!   their doorbell comes back or the entry is pushed out. The hub answers only the connection that
//!   published (`subjects::UNHEARD_ALL`), so only the replica that granted a job withdraws it.
//!   One that stops first leaves the job to its lease and the reconcile pass.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_nats::StatusCode;
use ferry_model as m;
use ferry_protocol::messages::{Doorbell, Heartbeat, JobOffer, PreGrant};
use ferry_protocol::{encode, subjects};
use ferry_store::StoreError;
use futures_util::StreamExt;
use tracing::{debug, info, warn};

use crate::{Scheduler, SchedulerError};

/// Runners kept per install: more than one already means no grant at the offer, so a few
/// suffice; an install that sends more heartbeats under new ids cannot grow the map.
const RUNNERS_PER_INSTALL: usize = 4;
/// Installs kept; past it the map starts over.
const INSTALLS_MAX: usize = 100_000;
/// Grants awaiting a possible "no responders"; past it the map starts over.
const UNHEARD_MAX: usize = 10_000;

/// Each install's runners, by `org.install`, as their heartbeats say.
#[derive(Clone, Default)]
pub(crate) struct Heard(Arc<Mutex<HashMap<String, Vec<m::HeardRunner>>>>);

impl Heard {
    fn heartbeat(&self, org: &str, install: &str, hb: &Heartbeat, now: m::Timestamp) {
        let Ok(mut map) = self.0.lock() else { return };
        if map.len() >= INSTALLS_MAX {
            map.clear();
        }
        let runners = map.entry(format!("{org}.{install}")).or_default();
        runners.retain(|r| {
            r.id != hb.runner_id
                && m::health_of(r.last_seen_ms, r.interval_ms, now) != m::RunnerHealth::Offline
        });
        if runners.len() >= RUNNERS_PER_INSTALL {
            runners.remove(0);
        }
        runners.push(m::HeardRunner {
            id: hb.runner_id.clone(),
            last_seen_ms: now.ms(),
            interval_ms: u64::from(hb.interval_ms),
            running_jobs: hb.running_jobs,
            max_jobs: hb.max_jobs,
            granted_since: 0,
        });
    }

    /// The runner to grant the install's next job to at its offer, counted as granted one more.
    fn take_slot(&self, org: &str, install: &str, now: m::Timestamp) -> Option<String> {
        let mut map = self.0.lock().ok()?;
        let runners = map.get_mut(&format!("{org}.{install}"))?;
        let id = m::pregrant_to(runners, now)?.to_string();
        if let Some(r) = runners.iter_mut().find(|r| r.id == id) {
            r.granted_since += 1;
        }
        Some(id)
    }

    /// A job of `runner` ended: one slot more is free than its last heartbeat (and the grants
    /// since) say. Heard only by the replica that records the result; the others learn it from
    /// the next heartbeat.
    pub(crate) fn freed(&self, org: &str, install: &str, runner: &str) {
        let Ok(mut map) = self.0.lock() else { return };
        let Some(r) = map
            .get_mut(&format!("{org}.{install}"))
            .and_then(|rs| rs.iter_mut().find(|r| r.id == runner))
        else {
            return;
        };
        if r.granted_since > 0 {
            r.granted_since -= 1;
        } else {
            r.running_jobs = r.running_jobs.saturating_sub(1);
        }
    }

    /// Forgets an install's runners: none listened to its doorbell.
    fn forget(&self, org: &str, install: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(&format!("{org}.{install}"));
        }
    }
}

/// Offers granted at once by this replica, by their doorbell's reply subject.
#[derive(Clone, Default)]
pub(crate) struct Unheard(Arc<Mutex<HashMap<String, JobOffer>>>);

impl Unheard {
    fn put(&self, reply: &str, offer: &JobOffer) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= UNHEARD_MAX {
                map.clear();
            }
            map.insert(reply.to_string(), offer.clone());
        }
    }

    fn take(&self, reply: &str) -> Option<JobOffer> {
        self.0.lock().ok()?.remove(reply)
    }
}

impl Scheduler {
    /// Hears every runner's heartbeats (beside the queue group that records them).
    pub(crate) async fn hear_heartbeats(self) -> Result<(), SchedulerError> {
        let client = self.client.clone();
        ferry_store::serve::hear::<Heartbeat, _, _>(client, |caller, hb| {
            if subjects::is_valid_token(&hb.runner_id) {
                self.runners
                    .heartbeat(&caller.org, &caller.install, &hb, m::Timestamp::now());
            }
            std::future::ready(())
        })
        .await?;
        Ok(())
    }

    /// Grants `job` at its offer when its install has one runner to grant it to: the record
    /// written granted, then the doorbell carrying the grant. `Ok(false)`: not granted (no
    /// such runner, the offer too large to carry, or the job not queued), offer it to all.
    pub(crate) async fn offer_granted(
        &self,
        job: &m::Job,
        offer: &JobOffer,
        now: m::Timestamp,
    ) -> Result<bool, SchedulerError> {
        // The grant adds its ids and a few numbers to the doorbell; a doorbell that could not
        // carry it is left to the ordinary offer.
        let bell = Doorbell {
            offer: offer.clone(),
            grant: None,
        };
        if encode(&bell).len() + 256 > self.client.server_info().max_payload {
            return Ok(false);
        }
        let (org, install, id) = (job.org.as_str(), job.install.as_str(), job.id.as_str());
        let Some(runner) = self.runners.take_slot(org, install, now) else {
            return Ok(false);
        };
        let Some(grant) = self.write_granted(job, &runner, now).await? else {
            return Ok(false);
        };
        let written_us = m::now_us();
        let waited = written_us.saturating_sub(job.offered_us) as f64 / 1e6;
        ferry_telemetry::metrics().dispatch_latency.observe(waited);
        ferry_telemetry::metrics().jobs_dispatched.inc();
        let reply = subjects::unheard(org, install, id, &runner);
        self.unheard.put(&reply, offer);
        let bell = Doorbell {
            grant: Some(PreGrant {
                runner_id: runner.clone(),
                execution_id: grant.execution_id,
                attempt: grant.attempt,
                lease_ms: self.lease.as_millis() as u32,
                written_us,
            }),
            ..bell
        };
        let subject = subjects::wake(org, install);
        if let Err(e) = self
            .client
            .publish_with_reply(subject, reply, encode(&bell).into())
            .await
        {
            // Not sent: the runner never hears of it, and its lease ends; then the reconcile
            // pass offers the job again, as for any runner gone silent.
            warn!(org, install, job = id, error = %e, "could not ring a granted job's doorbell");
        }
        info!(org, install, job = id, execution = %grant.public_id, %runner, "job granted at its offer");
        Ok(true)
    }

    /// Writes the job's record granted to `runner`: created so, or (queued again after a lost
    /// execution) changed so. `None` when it was not queued.
    async fn write_granted(
        &self,
        job: &m::Job,
        runner: &str,
        now: m::Timestamp,
    ) -> Result<Option<m::Granted>, SchedulerError> {
        // The random part of a ULID: 80 bits no other install can guess (see `Job::claim`).
        let secret = m::new_id()[10..].to_string();
        let lease_ms = self.lease.as_millis() as u64;
        let jobs = self.store.repo::<m::Job>();
        let mut granted = job.clone();
        let Ok(g) = granted.pregrant(runner, now, lease_ms, &secret, m::now_us()) else {
            return Ok(None);
        };
        match jobs.create(&granted).await {
            Ok(_) => return Ok(Some(g)),
            Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let mut g = None;
        let offered_us = job.offered_us;
        let r = jobs
            .modify(&job.org, &job.id, |j| {
                j.offered_us = offered_us;
                g = Some(j.pregrant(runner, now, lease_ms, &secret, m::now_us())?);
                Ok::<bool, String>(true)
            })
            .await?;
        Ok(r.ok().and(g))
    }

    /// Withdraws the grants whose doorbell nobody heard (the hub's "no responders" on its reply
    /// subject) and offers their jobs to all.
    pub(crate) async fn serve_unheard(self) -> Result<(), SchedulerError> {
        let mut sub = self
            .client
            .subscribe(subjects::UNHEARD_ALL)
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))?;
        while let Some(msg) = sub.next().await {
            if msg.status != Some(StatusCode::NO_RESPONDERS) {
                continue;
            }
            let Some(offer) = self.unheard.take(msg.subject.as_str()) else {
                continue;
            };
            let Some((_, runner)) = subjects::unheard_grant(&msg.subject) else {
                continue;
            };
            let (s, runner) = (self.clone(), runner.to_string());
            self.tasks.spawn(async move {
                if let Err(e) = s.withdraw(offer, &runner).await {
                    warn!(error = %e, "could not withdraw an unheard grant; its lease will end");
                }
            });
        }
        Err(SchedulerError::SubscriptionEnded("unheard grants"))
    }

    async fn withdraw(&self, offer: JobOffer, runner: &str) -> Result<(), SchedulerError> {
        let (org, install, id) = (&offer.org, &offer.install, &offer.job_id);
        self.runners.forget(org, install);
        let mut withdrawn = false;
        let r = self
            .store
            .repo::<m::Job>()
            .modify(org, id, |j| {
                withdrawn = j.withdraw_grant(install, runner);
                Ok::<bool, ()>(withdrawn)
            })
            .await;
        match r {
            Ok(_) if withdrawn => {}
            Ok(_) | Err(StoreError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        info!(org, install, job = id, %runner, "no runner heard the job's grant; offered to all");
        self.publish_offer(&offer).await
    }

    /// Offers an `available` job whose record is already written: the offer on `JOBS` and the
    /// doorbell carrying it.
    async fn publish_offer(&self, offer: &JobOffer) -> Result<(), SchedulerError> {
        let (org, install, id) = (&offer.org, &offer.install, &offer.job_id);
        let msg_id = format!("{id}-{}", m::new_id());
        let bus = self.store.bus();
        bus.publish_msg(subjects::job(org, install, id), &msg_id, offer)
            .await?;
        self.ring(org, install, offer).await;
        debug!(org, install, job = id, "job offered");
        Ok(())
    }
}
