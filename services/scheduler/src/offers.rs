//! Offering jobs to runners, on the shortest path the record's safety allows.
//!
//! A job's record is written `available` first, then its offer is published on `JOBS`, then the
//! install's doorbell rings carrying the offer itself (`Doorbell`): the runner claims at once,
//! without reading the stream. The scheduler keeps the record it just wrote (with its revision), so
//! the claim's compare-and-swap needs no read either (`Repo::modify_from`; a stale copy — another
//! replica wrote since — costs one lost swap and a read). `loadtest dispatch` measures this path.
//!
//! The stream stays the source of truth: a runner that missed the doorbell finds the offer by walking
//! `JOBS`, and a crash between the record and the publish (an `available` job with no offer) is found
//! by the reconcile pass (`reoffer_if_lost`), which queues the job again to be offered anew.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_nats::jetstream::stream::DirectGetErrorKind;
use ferry_model as m;
use ferry_protocol::messages::{Doorbell, JobOffer, OfferQuery, OfferReply};
use ferry_protocol::{encode, subjects};
use ferry_store::{StoreError, Versioned};
use tracing::debug;

use crate::{RECONCILE_INTERVAL, Scheduler, SchedulerError};

/// Job records this scheduler wrote last, by `org.job`, for the claim that usually follows.
#[derive(Clone, Default)]
pub(crate) struct KnownJobs(Arc<Mutex<HashMap<String, Versioned<m::Job>>>>);

/// Records kept at most; past it the map starts over (an unclaimed job's entry is only an
/// optimisation, never needed).
const KNOWN_JOBS_MAX: usize = 10_000;

impl KnownJobs {
    fn remember(&self, v: Versioned<m::Job>) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= KNOWN_JOBS_MAX {
                map.clear();
            }
            map.insert(format!("{}.{}", v.value.org, v.value.id), v);
        }
    }

    /// The copy kept of a job, taken out (a claim uses it once).
    pub(crate) fn take(&self, org: &str, job_id: &str) -> Option<Versioned<m::Job>> {
        self.0.lock().ok()?.remove(&format!("{org}.{job_id}"))
    }
}

impl Scheduler {
    /// Offers a job to its install's runners: the record (created `available`, or a queued one —
    /// again after a lost execution — marked so), the offer on `JOBS`, the doorbell carrying it. A
    /// job already offered, running or ended is left alone. The loadtest dispatches through this.
    pub async fn offer_job(&self, mut job: m::Job, offer: JobOffer) -> Result<(), SchedulerError> {
        let jobs = self.store.repo::<m::Job>();
        let now = m::now();
        job.offered(&now);
        let (org, install, id) = (job.org.clone(), job.install.clone(), job.id.clone());
        // The record first: a runner that finds the offer (by the doorbell or by walking the
        // stream) always finds its record. (Writing both at once measured no faster here, and
        // would let a walking runner's claim retire an offer whose record is not there yet.)
        let stored = match jobs.create(&job).await {
            Ok(revision) => Versioned {
                value: job,
                revision,
            },
            // Queued again after a lost execution (or a dispatch retried after a crash).
            Err(StoreError::AlreadyExists { .. }) => {
                let mut marked = false;
                let v = jobs
                    .modify_from(None, &org, &id, |j| {
                        marked = j.offered(&now);
                        Ok::<bool, ()>(marked)
                    })
                    .await?;
                match v {
                    Ok(v) if marked => v,
                    _ => return Ok(()),
                }
            }
            Err(e) => return Err(e.into()),
        };
        self.known.remember(stored);
        // One message id per time it is offered: a re-offer is not a duplicate of the first.
        let seq = self
            .store
            .bus()
            .publish_msg(
                subjects::job(&org, &install, &id),
                &format!("{id}-{now}"),
                &offer,
            )
            .await?;
        self.ring(&org, &install, seq, offer).await?;
        debug!(org, install, job = id, seq, "job offered");
        Ok(())
    }

    /// Rings an install's doorbell with its new offer; an offer too large for a core message rings
    /// an empty doorbell (the runner then reads the offer from `JOBS`).
    async fn ring(
        &self,
        org: &str,
        install: &str,
        seq: u64,
        offer: JobOffer,
    ) -> Result<(), SchedulerError> {
        let subject = subjects::wake(org, install);
        let bell = encode(&Doorbell { seq, offer });
        if bell.len() <= self.client.server_info().max_payload
            && self
                .client
                .publish(subject.clone(), bell.into())
                .await
                .is_ok()
        {
            return Ok(());
        }
        self.client
            .publish(subject, Default::default())
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))
    }

    /// An `available` job whose offer is not in `JOBS` (the scheduler stopped between writing the
    /// record and publishing): queued again, to be offered anew. Looked at only once the offer has
    /// had time to be published.
    pub(crate) async fn reoffer_if_lost(
        &self,
        wf: &m::Workflow,
        job: &m::Job,
    ) -> Result<(), SchedulerError> {
        let settled = job
            .offered_at
            .as_deref()
            .and_then(m::ms_of)
            .is_some_and(|t| m::now_ms() >= t + 2 * RECONCILE_INTERVAL.as_millis() as u64);
        if !settled {
            return Ok(());
        }
        let stream = self
            .store
            .js
            .get_stream_no_info("JOBS")
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))?;
        let subject = subjects::job(&job.org, &job.install, &job.id);
        match stream.direct_get_last_for_subject(&subject).await {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == DirectGetErrorKind::NotFound => {}
            Err(e) => return Err(SchedulerError::Nats(Box::new(e))),
        }
        let mut requeued = false;
        self.store
            .repo::<m::Job>()
            .modify(&job.org, &job.id, |j| {
                requeued = j.offer_lost();
                Ok::<bool, ()>(requeued)
            })
            .await?
            .ok();
        if requeued {
            tracing::warn!(org = %job.org, install = %job.install, job = %job.id, "an available job had no offer; offering it again");
            self.start_step(wf, job.step).await?;
        }
        Ok(())
    }
}

impl Scheduler {
    /// Answers runners' "next offer after N" (`OfferQuery`) from `JOBS`, for the install the
    /// subject names: a runner may not read the stream itself, and gets only its own install's
    /// offers.
    pub(crate) async fn serve_offer_queries(self) -> Result<(), SchedulerError> {
        use futures_util::StreamExt;
        let mut sub = self
            .client
            .queue_subscribe(subjects::OFFERS_ALL, "scheduler".into())
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))?;
        while let Some(msg) = sub.next().await {
            let s = self.clone();
            tokio::spawn(async move {
                let (Some(reply), Some((org, install))) =
                    (msg.reply.clone(), subjects::org_install(&msg.subject))
                else {
                    return;
                };
                let Ok(q) = ferry_protocol::decode::<OfferQuery>(&msg.payload) else {
                    debug!(subject = %msg.subject, "undecodable offer query");
                    return;
                };
                match s.next_offer(org, install, q.after).await {
                    Ok(next) => {
                        let answer = encode(&OfferReply { next });
                        if let Err(e) = s.client.publish(reply, answer.into()).await {
                            debug!(error = %e, "could not answer an offer query");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "reading offers failed"),
                }
            });
        }
        Err(SchedulerError::SubscriptionEnded("offers"))
    }

    /// The install's first decodable offer after sequence `after`.
    async fn next_offer(
        &self,
        org: &str,
        install: &str,
        mut after: u64,
    ) -> Result<Option<Doorbell>, SchedulerError> {
        let stream = self
            .store
            .js
            .get_stream_no_info(ferry_protocol::resources::JOBS.name)
            .await
            .map_err(|e| SchedulerError::Nats(Box::new(e)))?;
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
                Ok(offer) => return Ok(Some(Doorbell { seq: after, offer })),
                Err(e) => debug!(seq = after, error = %e, "skipping an undecodable offer"),
            }
        }
    }
}
