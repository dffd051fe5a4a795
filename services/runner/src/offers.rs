//! Reading an install's job offers without a consumer.
//!
//! Offers are messages in the `JOBS` stream on `ferry.jobs.<org>.<install>.<job>`. A consumer per
//! install made the hub's cost grow with the number of installs (each creation a JetStream API round
//! trip, and in a cluster a metadata proposal; `loadtest dispatch` measured it). Instead a runner
//! reads its install's offers by direct get — "the next message on this subject filter after
//! sequence N", answered from the stream's subject index — and the scheduler deletes an offer once
//! its claim is decided. The hub keeps no state per install for dispatch.

use async_nats::jetstream::{self, stream::DirectGetErrorKind};
use ferry_protocol::messages::{Doorbell, JobOffer};
use ferry_protocol::{decode, subjects};

/// One offer read: its sequence in `JOBS` (the claim names it) and its decoded body.
pub struct Next {
    pub seq: u64,
    pub offer: Result<JobOffer, ferry_protocol::CodecError>,
}

/// The offer a doorbell carries, if it carries one: an empty ring (or one that does not decode)
/// means "walk the stream", which holds every offer anyway.
pub fn rung(payload: &[u8]) -> Option<Next> {
    let bell = decode::<Doorbell>(payload).ok()?;
    Some(Next {
        seq: bell.seq,
        offer: Ok(bell.offer),
    })
}

pub struct Offers {
    js: jetstream::Context,
    filter: String,
}

impl Offers {
    pub fn new(js: &jetstream::Context, org: &str, install: &str) -> Offers {
        Offers {
            js: js.clone(),
            filter: subjects::jobs_of_install(org, install),
        }
    }

    /// The first offer after sequence `after`, or `None` when there is none.
    pub async fn next(&self, after: u64) -> Result<Option<Next>, async_nats::Error> {
        let stream = self.js.get_stream_no_info("JOBS").await?;
        match stream
            .direct_get_next_for_subject(&self.filter, Some(after + 1))
            .await
        {
            Ok(msg) => Ok(Some(Next {
                seq: msg.sequence,
                offer: decode::<JobOffer>(&msg.payload),
            })),
            Err(e) if e.kind() == DirectGetErrorKind::NotFound => Ok(None),
            Err(e) => Err(Box::new(e)),
        }
    }
}
