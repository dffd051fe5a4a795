//! The dispatch benchmark's lightweight runners: one task per install that does what
//! `ferry-runner` does with a job's offer, and nothing with the job.
//!
//! Each says it is there with a heartbeat, as a runner does when it connects (one that runs any
//! number of jobs at once: these run none), so the scheduler grants its install's jobs at their
//! offer as it does a real install's (`ferry_scheduler`'s `pregrants.rs`); a job offered to all
//! (an empty doorbell, or one carrying an offer) is claimed as `ferry-runner` claims it. Each
//! reports the jobs it was granted, and whether at their offer.

use std::time::{Duration, Instant};

use anyhow::Result;
use ferry_protocol::messages::{BellGrant, ClaimReply, ClaimRequest, Heartbeat, JobOffer};
use ferry_protocol::{decode, encode, subjects};
use ferry_runner::offers;
use futures_util::StreamExt;

use crate::{Install, ORG};

/// A job granted to a lightweight runner: its id, when, and whether at its offer.
pub(crate) type Granted = (String, Instant, bool);

/// A doorbell that carries no offer and asks for nothing: a runner answers that it is listening.
const PROBE: &[u8] = b"probe";

/// How often these runners say they send heartbeats: they send one, and a measurement ends
/// well within two and a half of these (the scheduler's "active").
const INTERVAL_MS: u32 = 600_000;

/// Starts the lightweight runners of `installs`, and returns once each hears its doorbell and the
/// scheduler has recorded each one's heartbeat.
pub(crate) async fn runners(
    hub: &async_nats::Client,
    installs: &[Install],
    granted: tokio::sync::mpsc::UnboundedSender<Granted>,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let recorded = runner_records(hub).await?;
    let mut tasks = Vec::with_capacity(installs.len());
    let (ready_tx, mut ready) = tokio::sync::mpsc::unbounded_channel();
    for Install { name, client } in installs {
        let wake = client.subscribe(subjects::wake(ORG, name)).await?;
        let runner_id = format!("runner-{name}");
        let hb = Heartbeat {
            runner_id: runner_id.clone(),
            version: "loadtest".into(),
            running_jobs: 0,
            at_ms: ferry_model::now_ms(),
            interval_ms: INTERVAL_MS,
            max_jobs: u32::MAX,
            sandbox: ferry_protocol::messages::SandboxState::Unsandboxed,
            paused: false,
        };
        client
            .publish(subjects::heartbeat(ORG, name), encode(&hb).into())
            .await?;
        let runner = Light {
            client: client.clone(),
            name: name.clone(),
            runner_id,
            granted: granted.clone(),
        };
        tasks.push(tokio::spawn(runner.serve(wake, ready_tx.clone())));
    }
    // Through a leaf, a doorbell subscription reaches the hub some time after it is made: ring
    // each install's bell from the hub until its runner hears it, so no dispatched job's
    // doorbell is lost to an interest not there yet.
    let mut waiting: std::collections::BTreeSet<&str> =
        installs.iter().map(|i| i.name.as_str()).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !waiting.is_empty() {
        for name in &waiting {
            hub.publish(subjects::wake(ORG, name), PROBE.into()).await?;
        }
        hub.flush().await?;
        let tick = tokio::time::sleep(Duration::from_millis(50));
        tokio::pin!(tick);
        loop {
            tokio::select! {
                _ = &mut tick => break,
                Some(name) = ready.recv() => { waiting.remove(name.as_str()); }
            }
        }
        if Instant::now() > deadline {
            anyhow::bail!("{} runners never heard their doorbell", waiting.len());
        }
    }
    // The heartbeats' records written (by the scheduler, one at a time), so their writes are not
    // in what is measured next; the scheduler heard each before it wrote it.
    while runner_records(hub).await? < recorded + installs.len() as u64 {
        if Instant::now() > deadline {
            anyhow::bail!("the scheduler did not record the runners' heartbeats");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(tasks)
}

/// How many runner records were ever written (the bucket's last sequence).
async fn runner_records(hub: &async_nats::Client) -> Result<u64> {
    let js = async_nats::jetstream::new(hub.clone());
    let name = format!("KV_{}", ferry_protocol::resources::buckets::RUNNERS);
    let mut stream = js.get_stream(name).await?;
    Ok(stream.info().await?.state.last_sequence)
}

/// One install's lightweight runner.
struct Light {
    client: async_nats::Client,
    name: String,
    runner_id: String,
    granted: tokio::sync::mpsc::UnboundedSender<Granted>,
}

impl Light {
    async fn serve(
        self,
        mut wake: async_nats::Subscriber,
        ready: tokio::sync::mpsc::UnboundedSender<String>,
    ) {
        let offers = offers::Offers::new(&self.client, ORG, &self.name);
        while let Some(bell) = wake.next().await {
            if bell.payload.as_ref() == PROBE {
                let _ = ready.send(self.name.clone());
                continue;
            }
            // As `ferry-runner` does: a grant made to it starts the job; the doorbell's own
            // offer is claimed at once; only an empty ring walks the stream.
            if let Some(bell) = offers::rung(&bell.payload) {
                match bell.grant {
                    Some(BellGrant::Made(g)) if g.runner_id == self.runner_id => {
                        let _ = self.granted.send((bell.offer.job_id, Instant::now(), true));
                    }
                    Some(_) => {}
                    None => self.claim(bell.offer).await,
                }
                continue;
            }
            let mut after = 0;
            while let Ok(Some(next)) = offers.next(after).await {
                after = next.seq;
                self.claim(next.offer).await;
            }
        }
    }

    async fn claim(&self, o: JobOffer) {
        let req = ClaimRequest {
            job_id: o.job_id.clone(),
            runner_id: self.runner_id.clone(),
        };
        let reply = self
            .client
            .request(subjects::claim(ORG, &self.name), encode(&req).into())
            .await;
        if let Ok(r) = reply
            && let Ok(ClaimReply::Granted { .. }) = decode::<ClaimReply>(&r.payload)
        {
            let _ = self.granted.send((o.job_id, Instant::now(), false));
        }
    }
}
