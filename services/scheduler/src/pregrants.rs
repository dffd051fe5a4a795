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
//!   One that stops first leaves the job to its lease and the reconcile pass. (Taking a grant back
//!   offers the job to all: `offers.rs`, `serve_unheard`.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ferry_model as m;
use ferry_protocol::messages::{BellGrant, Doorbell, Heartbeat, JobOffer, PreGrant};
use ferry_protocol::{encode, subjects};
use ferry_store::StoreError;
use tracing::{debug, info, warn};

use crate::{Scheduler, SchedulerError};

/// Runners kept per install: past one, only an apply is granted at its offer (to its planner),
/// so a few suffice; an install that sends more heartbeats under new ids cannot grow the map (the
/// oldest known goes, and its applies are claimed as before).
const RUNNERS_PER_INSTALL: usize = 4;
/// Installs kept; past it the map starts over.
const INSTALLS_MAX: usize = 100_000;
/// Grants awaiting a possible "no responders"; past it the map starts over.
const UNHEARD_MAX: usize = 10_000;

/// Each install's runners, by `org.install`: alive by their heartbeats, busy by the jobs this
/// replica granted them and has not seen end.
#[derive(Clone, Default)]
pub(crate) struct Heard(Arc<Mutex<HashMap<String, Vec<Known>>>>);

/// A runner as [`Heard`] keeps it.
struct Known {
    heard: m::HeardRunner,
    /// Its jobs this replica granted (at the offer or on a claim) and has not seen end, with
    /// when (ms).
    open: HashMap<String, u64>,
}

/// Open jobs kept per runner: past it the set starts over (a count too low costs a granted job
/// a wait for a slot, never the job).
const OPEN_MAX: usize = 1_000;

impl Heard {
    fn heartbeat(&self, org: &str, install: &str, hb: &Heartbeat, now: m::Timestamp) {
        let Ok(mut map) = self.0.lock() else { return };
        if map.len() >= INSTALLS_MAX {
            map.clear();
        }
        let runners = map.entry(format!("{org}.{install}")).or_default();
        runners.retain(|k| {
            k.heard.id == hb.runner_id
                || m::health_of(k.heard.last_seen_ms, k.heard.interval_ms, now)
                    != m::RunnerHealth::Offline
        });
        let at = match runners.iter().position(|k| k.heard.id == hb.runner_id) {
            Some(at) => at,
            None => {
                if runners.len() >= RUNNERS_PER_INSTALL {
                    runners.remove(0);
                }
                runners.push(Known {
                    heard: m::HeardRunner {
                        id: hb.runner_id.clone(),
                        last_seen_ms: 0,
                        interval_ms: 0,
                        max_jobs: 0,
                        open_jobs: 0,
                    },
                    open: HashMap::new(),
                });
                runners.len() - 1
            }
        };
        let k = &mut runners[at];
        k.open
            .retain(|_, at| m::still_open(*at, hb.running_jobs, now.ms()));
        let h = &mut k.heard;
        h.last_seen_ms = now.ms();
        h.interval_ms = u64::from(hb.interval_ms);
        // A runner its customer paused takes nothing: no slot to grant a job into.
        h.max_jobs = if hb.paused { 0 } else { hb.max_jobs };
    }

    /// The runner to grant the install's job `job` (an apply: whose plan `planner` made) to at
    /// its offer, counting the job as its own.
    fn take_slot(
        &self,
        org: &str,
        install: &str,
        job: &str,
        planner: Option<&str>,
        now: m::Timestamp,
    ) -> Option<String> {
        let mut map = self.0.lock().ok()?;
        let runners = map.get_mut(&format!("{org}.{install}"))?;
        let known: Vec<m::HeardRunner> = runners
            .iter()
            .map(|k| m::HeardRunner {
                open_jobs: k.open.len() as u32,
                ..k.heard.clone()
            })
            .collect();
        let id = m::pregrant_to(&known, now, planner)?.to_string();
        opened(runners, &id, job, now.ms());
        Some(id)
    }

    /// A claim of `job` by `runner` was granted: it has the job until its end.
    pub(crate) fn claimed(&self, org: &str, install: &str, runner: &str, job: &str) {
        let Ok(mut map) = self.0.lock() else { return };
        if let Some(runners) = map.get_mut(&format!("{org}.{install}")) {
            opened(runners, runner, job, m::now_ms());
        }
    }

    /// Forgets an install's runners: none listened to its doorbell.
    pub(crate) fn forget(&self, org: &str, install: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(&format!("{org}.{install}"));
        }
    }

    /// `job` of `runner` ended (or was never granted after all): a slot of it is free again.
    pub(crate) fn ended(&self, org: &str, install: &str, runner: &str, job: &str) {
        let Ok(mut map) = self.0.lock() else { return };
        let known = map
            .get_mut(&format!("{org}.{install}"))
            .and_then(|rs| rs.iter_mut().find(|k| k.heard.id == runner));
        if let Some(k) = known {
            k.open.remove(job);
        }
    }
}

/// Counts `job` as `runner`'s since `at_ms`.
fn opened(runners: &mut [Known], runner: &str, job: &str, at_ms: u64) {
    if let Some(k) = runners.iter_mut().find(|k| k.heard.id == runner) {
        if k.open.len() >= OPEN_MAX {
            k.open.clear();
        }
        k.open.insert(job.to_string(), at_ms);
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

    pub(crate) fn take(&self, reply: &str) -> Option<JobOffer> {
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
        planner: Option<&str>,
    ) -> Result<bool, SchedulerError> {
        // The grant adds its ids and a few numbers to the doorbell; a doorbell that could not
        // carry it is left to the ordinary offer.
        let size = encode(&Doorbell {
            offer: offer.clone(),
            grant: None,
        })
        .len();
        if size + 256 > self.client.server_info().max_payload {
            return Ok(false);
        }
        let (org, install, id) = (job.org.as_str(), job.install.as_str(), job.id.as_str());
        let Some(runner) = self.runners.take_slot(org, install, id, planner, now) else {
            return Ok(false);
        };
        // The runner prepares the job while its record is written (`BellGrant::Coming`).
        // `join!` polls in order: the write leaves first.
        let coming = Doorbell {
            offer: offer.clone(),
            grant: Some(BellGrant::Coming {
                runner_id: runner.clone(),
            }),
        };
        let subject = subjects::wake(org, install);
        let (written, rung) = tokio::join!(
            Box::pin(self.write_granted(job, &runner, now)),
            self.client.publish(subject.clone(), encode(&coming).into()),
        );
        if let Err(e) = rung {
            debug!(org, install, job = id, error = %e, "could not ring a coming grant's doorbell");
        }
        let grant = match written {
            Ok(Some(g)) => g,
            not => {
                self.runners.ended(org, install, &runner, id);
                return not.map(|_| false);
            }
        };
        let written_us = m::now_us();
        let waited = written_us.saturating_sub(job.offered_us) as f64 / 1e6;
        ferry_telemetry::metrics().dispatch_latency.observe(waited);
        ferry_telemetry::metrics().jobs_dispatched.inc();
        let reply = subjects::unheard(org, install, id, &runner);
        self.unheard.put(&reply, offer);
        let made = Doorbell {
            offer: offer.clone(),
            grant: Some(BellGrant::Made(PreGrant {
                runner_id: runner.clone(),
                execution_id: grant.execution_id,
                attempt: grant.attempt,
                lease_ms: self.lease.as_millis() as u32,
                written_us,
            })),
        };
        if let Err(e) = self
            .client
            .publish_with_reply(subject, reply, encode(&made).into())
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
}
