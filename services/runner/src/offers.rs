//! Reading an install's job offers without a consumer, and without reading `JOBS`.
//!
//! Offers are messages in the `JOBS` stream on `ferry.jobs.<org>.<install>.<job>`. A consumer per
//! install made the hub's cost grow with the number of installs (`loadtest dispatch` measured it),
//! and a runner may not read the control plane's streams at all (its permissions stop at its own
//! subjects). So a runner asks the scheduler, on `ferry.rx.<org>.<install>.offers`, for "the next
//! offer after sequence N"; the scheduler answers by direct get from the stream's subject index and
//! deletes an offer once its claim is decided. The hub keeps no state per install for dispatch.

use std::time::Duration;

use ferry_protocol::messages::{Doorbell, OfferQuery, StoredOffer};
use ferry_protocol::rpc::{AskError, ask};
use ferry_protocol::{decode, subjects};

/// What a doorbell carries, if anything: an empty ring means "walk the stream", which holds every
/// offer anyway. A ring that does not decode is counted and walked past the same way.
pub fn rung(payload: &[u8]) -> Option<Doorbell> {
    if payload.is_empty() {
        return None;
    }
    match decode::<Doorbell>(payload) {
        Ok(bell) => Some(bell),
        Err(e) => {
            tracing::warn!(error = %e, "undecodable doorbell; walking the offers instead");
            ferry_telemetry::metrics()
                .messages_rejected
                .get_or_create(&ferry_telemetry::consumer_label("runner-offers"))
                .inc();
            None
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OffersError {
    #[error("asking for offers: {0}")]
    Ask(#[from] AskError),
}

impl OffersError {
    /// Nothing answers yet: the leaf link (or the control plane's scheduler) is not up.
    pub fn nobody_serves(&self) -> bool {
        match self {
            OffersError::Ask(e) => e.nobody_serves(),
        }
    }
}

pub struct Offers {
    client: async_nats::Client,
    subject: String,
}

impl Offers {
    pub fn new(client: &async_nats::Client, org: &str, install: &str) -> Offers {
        Offers {
            client: client.clone(),
            subject: subjects::offers(org, install),
        }
    }

    /// The first offer after sequence `after`, or `None` when there is none.
    pub async fn next(&self, after: u64) -> Result<Option<StoredOffer>, OffersError> {
        let query = OfferQuery { after };
        let reply = ask(
            &self.client,
            self.subject.clone(),
            &query,
            Duration::from_secs(10),
        )
        .await?;
        Ok(reply.next)
    }
}
