//! Running what this runner was granted: a claim's grant, or a grant the doorbell carried (the
//! job granted at its offer, `ferry_model::pregrants`: the install had this one runner, so the
//! scheduler decided the claim before anyone asked). Either way the job holds its lease from the
//! grant, renewed here, until its result is at the hub.
//!
//! A grant never waits in a queue that may drop it: a runner whose slots are all taken (its
//! heartbeat said otherwise a moment ago) keeps the granted job's lease while the job waits for
//! a slot, rather than let the lease run out and the job be run again elsewhere.

use std::sync::Arc;
use std::time::Duration;

use std::collections::HashMap;

use ferry_protocol::messages::{
    BellGrant, JobOffer, LeaseRenewal, LeaseReply, PreGrant, RunnerTiming,
};
use ferry_protocol::rpc::ask;
use ferry_protocol::subjects;
use tracing::{debug, info, warn};

use super::Runner;
use crate::exec::Stop;

/// How long a job prepared for a grant that was announced waits for the grant itself; past it
/// (the record's write failed, and the job was offered to all instead) its directory is removed.
const COMING_EXPIRES: Duration = Duration::from_secs(10);

/// Jobs being granted to this runner, prepared while their record is written: by job id.
type Coming = HashMap<String, Announced>;

/// A grant announced: when (to expire it; and µs, the execution's `offer_seen_us`), and the work
/// directory being prepared.
struct Announced {
    since: tokio::time::Instant,
    seen_us: u64,
    staging: Option<crate::staging::Staging>,
}

impl Runner {
    /// Takes the doorbells of jobs granted at their offer, in the order they rang
    /// (`route_pushes`): a grant announced is prepared, a grant made is started.
    pub(super) async fn serve_grants(
        &self,
        mut grants: tokio::sync::mpsc::UnboundedReceiver<(JobOffer, BellGrant)>,
    ) {
        let mut coming = Coming::new();
        let mut sweep = tokio::time::interval(COMING_EXPIRES);
        loop {
            let (offer, grant) = tokio::select! {
                g = grants.recv() => match g {
                    Some(g) => g,
                    None => return,
                },
                _ = sweep.tick() => {
                    self.expire_coming(&mut coming);
                    continue;
                }
            };
            let seen_us = ferry_model::now_us();
            if offer.org != self.cfg.org || offer.install != self.cfg.install {
                warn!(job = %offer.job_id, "grant for another install; ignoring");
                continue;
            }
            match grant {
                BellGrant::Coming { runner_id } if runner_id == self.id => {
                    let announced = Announced {
                        since: tokio::time::Instant::now(),
                        seen_us,
                        staging: self.executor.stage(&offer),
                    };
                    if let Some(old) = coming.insert(offer.job_id.clone(), announced) {
                        self.discard(old.staging);
                    }
                }
                BellGrant::Made(g) if g.runner_id == self.id => {
                    let announced = coming.remove(&offer.job_id);
                    self.start_granted(offer, g, announced, seen_us).await;
                }
                _ => debug!(job = %offer.job_id, "job granted to another runner of the install"),
            }
        }
    }

    /// Removes the work directories of grants announced long ago and never made.
    fn expire_coming(&self, coming: &mut Coming) {
        let now = tokio::time::Instant::now();
        let old: Vec<String> = coming
            .iter()
            .filter(|(_, a)| now.duration_since(a.since) >= COMING_EXPIRES)
            .map(|(job, _)| job.clone())
            .collect();
        for job in old {
            if let Some(a) = coming.remove(&job) {
                debug!(job, "a grant announced never came; its directory removed");
                self.discard(a.staging);
            }
        }
    }

    /// Starts a job granted at its offer (its grant seen at `seen_us`), in the work directory
    /// prepared when the grant was announced, if it was.
    async fn start_granted(
        &self,
        offer: JobOffer,
        g: PreGrant,
        announced: Option<Announced>,
        seen_us: u64,
    ) {
        let (offer_seen_us, staged) = match announced {
            Some(a) => (a.seen_us, a.staging),
            None => (seen_us, None),
        };
        let timing = RunnerTiming {
            // No claim was sent: its spans are left out, not shown as nothing.
            offer_seen_us,
            granted_us: seen_us,
            grant_written_us: g.written_us,
            ..Default::default()
        };
        let staging = match staged {
            Some(s) => Some(s),
            None => self.executor.stage(&offer),
        };
        let grant = Grant {
            execution_id: g.execution_id,
            attempt: g.attempt,
            lease_ms: g.lease_ms,
            asked: tokio::time::Instant::now(),
            timing,
            staging,
        };
        self.start_job(offer, grant).await;
    }

    /// Runs a granted job in its own task, holding a slot (waiting for one if all are taken) and
    /// keeping its lease (counted from `asked`) from now until it ends.
    pub(super) async fn start_job(&self, offer: JobOffer, grant: Grant) {
        let Grant {
            execution_id,
            attempt,
            lease_ms,
            asked,
            timing,
            staging,
        } = grant;
        // Taken here when free, so a claim that follows sees it taken.
        let permit = self.slots.clone().try_acquire_owned().ok();
        let exec = self.executor.clone();
        let public_id = ferry_model::execution_public_id(&offer.job_id, attempt);
        info!(job = %offer.job_id, execution = %public_id, attempt, kind = offer.spec.label(), component = offer.spec.component(), "job claimed");
        let stop = Arc::new(Stop::default());
        if let Ok(mut r) = self.running.lock() {
            r.insert(offer.job_id.clone(), stop.clone());
        }
        let lease = Duration::from_millis(u64::from(lease_ms.max(300)));
        let keeper = tokio::spawn(keep_lease(
            self.client.clone(),
            subjects::lease(&self.cfg.org, &self.cfg.install),
            LeaseRenewal {
                job_id: offer.job_id.clone(),
                execution_id: execution_id.clone(),
            },
            asked,
            lease,
            stop.clone(),
        ));
        let (running, outbox, slots) = (
            self.running.clone(),
            self.outbox.clone(),
            self.slots.clone(),
        );
        self.jobs.spawn(async move {
            let job_id = offer.job_id.clone();
            let permit = match permit {
                Some(p) => Ok(p),
                None => slots.acquire_owned().await,
            };
            let Ok(permit) = permit else {
                // The slots are closed: the runner is stopping, and the lease will end.
                if let Some(s) = staging {
                    crate::staging::discard(s).await;
                }
                if let Ok(mut r) = running.lock() {
                    r.remove(&job_id);
                }
                keeper.abort();
                return;
            };
            let reported = exec
                .run(offer, execution_id, attempt, stop, timing, staging)
                .await;
            if let Ok(mut r) = running.lock() {
                r.remove(&job_id);
            }
            drop(permit);
            // The lease holds until the hub has the result, not only the spool: while a cut link
            // or a hub failover keeps it here, the scheduler would otherwise see a lease nobody
            // renews and run the job again. Bounded: past a lease the scheduler decides anyway.
            let _ = tokio::time::timeout(lease, outbox.forwarded(reported)).await;
            keeper.abort();
        });
    }
}

/// A claim granted: the execution, its lease and the points of its timing so far.
pub(super) struct Grant {
    pub(super) execution_id: String,
    pub(super) attempt: u32,
    pub(super) lease_ms: u32,
    /// When the claim was sent: the lease counts from here.
    pub(super) asked: tokio::time::Instant,
    pub(super) timing: RunnerTiming,
    /// Its work directory, prepared while the claim was out (`staging.rs`).
    pub(super) staging: Option<crate::staging::Staging>,
}

/// Keeps an execution's lease: renews it every third of its length. When the scheduler answers
/// that the execution is lost, or no renewal has succeeded for two thirds of the lease (cut off from
/// the hub), the job is killed: before the lease ends by the scheduler's count, so another runner
/// never starts it while this one still runs it. While the hub says no scheduler runs at all, the
/// lease holds.
async fn keep_lease(
    client: async_nats::Client,
    subject: String,
    renewal: LeaseRenewal,
    granted: tokio::time::Instant,
    lease: Duration,
    stop: Arc<Stop>,
) {
    let every = lease / 3;
    let mut held_until = granted + lease - every;
    loop {
        tokio::time::sleep(every).await;
        let sent = tokio::time::Instant::now();
        match ask(&client, subject.clone(), &renewal, every).await {
            Ok(LeaseReply::Renewed { lease_ms }) => {
                let lease = Duration::from_millis(u64::from(lease_ms));
                held_until = sent + lease - lease / 3;
            }
            Ok(LeaseReply::Lost { reason }) => {
                warn!(job = %renewal.job_id, %reason, "lease lost; stopping the job");
                stop.lost.notify_one();
                return;
            }
            // Connected, and no scheduler is running at all: nobody can give the job to another
            // runner (a scheduler that starts grants runners a full lease to renew first), so the
            // job goes on. An install keeps working while its control plane is down.
            Err(e) if e.nobody_serves() => {
                debug!(job = %renewal.job_id, "no scheduler is running; the lease holds");
                held_until = sent + lease - every;
            }
            Err(e) => debug!(job = %renewal.job_id, error = %e, "lease renewal not answered"),
        }
        if tokio::time::Instant::now() >= held_until {
            warn!(job = %renewal.job_id, "lease not renewed in time; stopping the job");
            stop.lost.notify_one();
            return;
        }
    }
}
