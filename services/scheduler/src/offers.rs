//! Offering jobs to runners, on the shortest path the record's safety allows.
//!
//! Offering a job is three writes: the job's record (`available`), its offer on `JOBS`, and the
//! install's doorbell carrying the offer itself (`Doorbell`), so the runner claims at once without
//! reading the stream. They are sent together, not one after another's acknowledgement: the
//! doorbell's trip to the runner and the claim's trip back overlap the two JetStream writes, and
//! the claim waits for the record instead (`KnownJobs`). Nothing is granted before the record is
//! durably written — the claim's compare-and-swap is on the revision the create returned — so this
//! costs no safety, only the order of waiting. `loadtest dispatch` measures the path.
//!
//! The stream stays the source of truth: a runner that missed the doorbell finds the offer by walking
//! `JOBS`, and a crash between the record and the publish (an `available` job with no offer) is found
//! by the reconcile pass (`reoffer_if_lost`), which queues the job again to be offered anew.
//!
//! An install with one runner gets its jobs granted at the offer instead (`pregrants.rs`); a grant
//! nobody heard is taken back here (`serve_unheard`) and its job offered to all. A claim
//! decided (granted, or refused for good) retires the job's offers by their subject, once the
//! publish is acknowledged, so a retire never runs ahead of the offer it retires.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::StatusCode;
use async_nats::jetstream::stream::DirectGetErrorKind;
use ferry_appconfig::jobs;
use ferry_model::{self as m, Workflow};
use ferry_protocol::messages::{
    Doorbell, JobOffer, JobSpec, OfferQuery, OfferReply, StoredOffer, Timeouts,
};
use ferry_protocol::{encode, subjects};
use ferry_store::serve::Answer;
use ferry_store::{StoreError, Versioned};
use futures_util::StreamExt;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::claims::QUEUE;
use crate::work::Work;
use crate::{Scheduler, SchedulerError};

/// The record of a job being offered, as its claim will find it.
#[derive(Clone)]
enum Written {
    /// The create is on its way.
    Pending,
    /// Written at this revision, acknowledged at this time (µs, for `m::Timing`).
    Record(Box<Versioned<m::Job>>, u64),
    /// Not written by this offer (an error, or the job was not offerable): the claim reads it.
    Unknown,
}

/// Jobs this scheduler is offering, by `org.job`, for the claim that usually follows: it waits for
/// the record's write instead of reading it, and its retire waits for the offer's publish (the
/// offering's sender is dropped once the publish is acknowledged).
#[derive(Clone, Default)]
pub(crate) struct KnownJobs(Arc<Mutex<HashMap<String, watch::Receiver<Written>>>>);

/// Offerings kept at most; past it the map starts over (an unclaimed job's entry is only an
/// optimisation, never needed).
const KNOWN_JOBS_MAX: usize = 10_000;

/// How long a claim waits for its job's record to be written by the offer in flight; past it, it
/// reads the record like any other claim.
const WRITE_WAIT: Duration = Duration::from_secs(5);

impl KnownJobs {
    fn offering(&self, org: &str, job_id: &str) -> watch::Sender<Written> {
        let (tx, rx) = watch::channel(Written::Pending);
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= KNOWN_JOBS_MAX {
                map.clear();
            }
            map.insert(format!("{org}.{job_id}"), rx);
        }
        tx
    }

    /// The offering of a job, for a claim. It stays until the job is decided
    /// ([`KnownJobs::forget`]): when two runners claim at once, both claims find the record
    /// written and when, whichever of them wins the compare-and-swap.
    pub(crate) fn get(&self, org: &str, job_id: &str) -> Option<Offering> {
        self.0
            .lock()
            .ok()?
            .get(&format!("{org}.{job_id}"))
            .cloned()
            .map(Offering)
    }

    /// Drops the offering of a job decided for good.
    pub(crate) fn forget(&self, org: &str, job_id: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(&format!("{org}.{job_id}"));
        }
    }
}

/// A job being offered by this scheduler, as its claim sees it.
pub(crate) struct Offering(watch::Receiver<Written>);

impl Offering {
    /// The record the offer wrote, once written, and when its write was acknowledged (µs);
    /// `None` when the claim must read it.
    pub(crate) async fn record(&mut self) -> Option<(Versioned<m::Job>, u64)> {
        let written = async {
            let w = self.0.wait_for(|w| !matches!(w, Written::Pending)).await;
            w.ok().map(|w| w.clone())
        };
        match tokio::time::timeout(WRITE_WAIT, written).await {
            Ok(Some(Written::Record(v, at))) => Some((*v, at)),
            _ => None,
        }
    }

    /// Returns once the offer's publish is acknowledged (or failed), so that retiring it cannot
    /// run ahead of it.
    pub(crate) async fn published(mut self) {
        let closed = async { while self.0.changed().await.is_ok() {} };
        let _ = tokio::time::timeout(WRITE_WAIT, closed).await;
    }
}

/// The approved plan an apply carries, and the runner that made it (if known), to which the
/// apply is granted at its offer if it can be (`ferry_model::pregrant_to`).
pub(crate) struct Planned {
    pub(crate) digest: String,
    pub(crate) runner: Option<String>,
}

impl Scheduler {
    /// Records the job (once) and offers it to the install's runner (see `offers.rs`).
    pub(crate) async fn dispatch(
        &self,
        wf: &Workflow,
        step: &m::Step,
        kind: m::JobKind,
        spec: JobSpec,
        plan: Option<Planned>,
    ) -> Result<Vec<Work>, SchedulerError> {
        let Some(job_id) = step.job_id.clone() else {
            return Ok(vec![]);
        };
        let mut job = m::Job::queued(
            job_id.clone(),
            wf.org.clone(),
            wf.install.clone(),
            wf.id.clone(),
            step.index,
            kind,
            step.component.clone(),
            m::Timestamp::now(),
        );
        let (plan_digest, planner) = match plan {
            Some(p) => (Some(p.digest), p.runner),
            None => (None, None),
        };
        job.plan_digest = plan_digest;
        let cfg = self.config(&wf.org, &wf.app_config_id).await?;
        if let Some(secs) = jobs::execution_timeout(&cfg, kind, &step.component) {
            job.timeouts.execution_secs = secs;
        }
        if let Some(available) = self.available {
            job.timeouts.available_secs = available.as_secs();
        }
        let offer = JobOffer {
            job_id,
            org: wf.org.clone(),
            install: wf.install.clone(),
            workflow_id: wf.id.clone(),
            spec,
            timeouts: Timeouts {
                execution_secs: u32::try_from(job.timeouts.execution_secs).unwrap_or(u32::MAX),
            },
        };
        self.offer_job_to(job, offer, planner.as_deref()).await?;
        Ok(vec![])
    }

    /// The `JOBS` stream, where offers wait for their runners.
    pub(crate) async fn jobs_stream(
        &self,
    ) -> Result<async_nats::jetstream::stream::Stream<()>, SchedulerError> {
        self.store
            .js
            .get_stream_no_info(ferry_protocol::resources::JOBS.name)
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))
    }

    /// Offers a job to its install's runners: the record (created `available`, or a queued one —
    /// again after a lost execution — marked so), the offer on `JOBS`, the doorbell carrying it,
    /// all sent at once (see the module's doc). The loadtest dispatches through this.
    pub async fn offer_job(&self, job: m::Job, offer: JobOffer) -> Result<(), SchedulerError> {
        self.offer_job_to(job, offer, None).await
    }

    /// [`Scheduler::offer_job`], for an apply whose plan `planner` made.
    async fn offer_job_to(
        &self,
        mut job: m::Job,
        offer: JobOffer,
        planner: Option<&str>,
    ) -> Result<(), SchedulerError> {
        let now = m::Timestamp::now();
        job.offered_us = m::now_us();
        // The install's one runner (an apply's planner) gets it without a claim (`pregrants.rs`).
        if self.offer_granted(&job, &offer, now, planner).await? {
            return Ok(());
        }
        job.offered(now);
        let (org, install, id) = (job.org.clone(), job.install.clone(), job.id.clone());
        let offering = self.known.offering(&org, &id);
        // One message id per time it is offered: a re-offer is not a duplicate of the first.
        let msg_id = format!("{id}-{now}");
        let bus = self.store.bus();
        // `join!` polls in order, so the record's create, the offer and the doorbell leave on the
        // connection in that order. Boxed: `join!` holds all three futures at once, and inline
        // they overflowed a test thread's stack (debug build).
        let (written, published, ()) = tokio::join!(
            Box::pin(self.write_offered(job, now, &offering)),
            Box::pin(bus.publish_msg(subjects::job(&org, &install, &id), &msg_id, &offer)),
            self.ring(&org, &install, &offer),
        );
        drop(offering);
        if !written? {
            // Already offered, running or ended: a claim of this extra offer is decided like any
            // other (granted only if the job is still unclaimed), and its decision retires it.
            return Ok(());
        }
        let seq = published?;
        ferry_telemetry::metrics().jobs_dispatched.inc();
        debug!(org, install, job = id, seq, "job offered");
        Ok(())
    }

    /// Writes a job's record `available`; false when it was not offerable (already offered,
    /// running or ended). The claim waiting on `offering` gets the record as written.
    async fn write_offered(
        &self,
        job: m::Job,
        now: m::Timestamp,
        offering: &watch::Sender<Written>,
    ) -> Result<bool, SchedulerError> {
        let jobs = self.store.repo::<m::Job>();
        let (org, id, offered_us) = (job.org.clone(), job.id.clone(), job.offered_us);
        let written = match jobs.create(&job).await {
            Ok(revision) => Ok(Some(Versioned {
                value: job,
                revision,
            })),
            // Queued again after a lost execution (or a dispatch retried after a crash).
            Err(StoreError::AlreadyExists { .. }) => {
                let mut marked = false;
                let v = jobs
                    .modify_from(None, &org, &id, |j| {
                        marked = j.offered(now);
                        j.offered_us = offered_us;
                        Ok::<bool, ()>(marked)
                    })
                    .await;
                match v {
                    Ok(Ok(v)) if marked => Ok(Some(v)),
                    Ok(_) => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        let (state, result) = match written {
            Ok(Some(v)) => (Written::Record(Box::new(v), m::now_us()), Ok(true)),
            Ok(None) => (Written::Unknown, Ok(false)),
            Err(e) => (Written::Unknown, Err(e.into())),
        };
        offering.send_replace(state);
        result
    }

    /// Rings an install's doorbell with its new offer; an offer too large for a core message rings
    /// an empty doorbell (the runner then walks the offers). A failed ring only delays the runner
    /// to its next walk, so it is logged, not returned.
    pub(crate) async fn ring(&self, org: &str, install: &str, offer: &JobOffer) {
        let subject = subjects::wake(org, install);
        let bell = encode(&Doorbell {
            offer: offer.clone(),
            grant: None,
        });
        let bell = if bell.len() <= self.client.server_info().max_payload {
            bell
        } else {
            Vec::new()
        };
        if let Err(e) = self.client.publish(subject, bell.into()).await {
            debug!(org, install, error = %e, "could not ring a doorbell");
        }
    }
}

impl Scheduler {
    /// Answers runners' "next offer after N" (`OfferQuery`) from `JOBS`, for the install the
    /// subject names: a runner may not read the stream itself, and gets only its own install's
    /// offers.
    pub(crate) async fn serve_offer_queries(self) -> Result<(), SchedulerError> {
        let (client, tasks) = (self.client.clone(), self.tasks.clone());
        ferry_store::serve::serve::<OfferQuery, _, _>(client, QUEUE, &tasks, move |caller, q| {
            let s = self.clone();
            async move {
                match s.next_offer(&caller.org, &caller.install, q.after).await {
                    Ok(next) => Answer::reply(OfferReply { next }),
                    Err(e) => {
                        tracing::warn!(error = %e, "reading offers failed");
                        Answer::none()
                    }
                }
            }
        })
        .await?;
        Ok(())
    }

    /// The install's first decodable offer after sequence `after`.
    async fn next_offer(
        &self,
        org: &str,
        install: &str,
        mut after: u64,
    ) -> Result<Option<StoredOffer>, SchedulerError> {
        let stream = self.jobs_stream().await?;
        let filter = subjects::jobs_of_install(org, install);
        loop {
            let msg = match stream
                .direct_get_next_for_subject(&filter, Some(after + 1))
                .await
            {
                Ok(m) => m,
                Err(e) if e.kind() == DirectGetErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(SchedulerError::Nats(Box::new(e))),
            };
            after = msg.sequence;
            match ferry_protocol::decode::<JobOffer>(&msg.payload) {
                Ok(offer) => return Ok(Some(StoredOffer { seq: after, offer })),
                Err(e) => debug!(seq = after, error = %e, "skipping an undecodable offer"),
            }
        }
    }
}

impl Scheduler {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Two runners claiming one job at once: each claim finds the record the offer wrote (and
    /// when), not only the first to ask, so whichever wins has its timing whole.
    #[tokio::test]
    async fn every_claim_of_a_job_finds_its_offering_until_the_job_is_decided() {
        let known = KnownJobs::default();
        let tx = known.offering("o", "j1");
        let (mut first, mut second) =
            (known.get("o", "j1").unwrap(), known.get("o", "j1").unwrap());
        let job = m::Job::queued(
            "j1".into(),
            "o".into(),
            "i".into(),
            "w".into(),
            1,
            m::JobKind::Plan,
            "c".into(),
            m::Timestamp::from_ms(1),
        );
        let record = Versioned {
            value: job,
            revision: 7,
        };
        tx.send_replace(Written::Record(Box::new(record), 1234));
        for claim in [&mut first, &mut second] {
            let (v, at) = claim.record().await.expect("the record the offer wrote");
            assert_eq!((v.revision, at), (7, 1234));
        }
        known.forget("o", "j1");
        assert!(known.get("o", "j1").is_none(), "a decided job is forgotten");
    }
}
