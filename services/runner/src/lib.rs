//! `ferry-runner`, the install runner.
//!
//! It listens on no port and keeps no state of record. It holds one NATS connection (to the install's
//! leaf server, or directly to the hub), over mTLS with its install's certificate; the hub admits
//! that certificate with exactly its install's permissions (`ferry_protocol::permissions::
//! install`): everything it sends is under `ferry.rx.<org>.<install>.>`, and it
//! receives only its doorbell, its cancels and replies in its own inbox. It:
//!
//! 1. waits for its install's doorbell (`ferry.push.<org>.<install>.wake`, which carries the offer) or a
//!    slow timer, then asks the scheduler for its install's open offers (`offers.rs`) — no consumer
//!    per install, so the hub's cost stays flat in the number of installs;
//! 2. claims each offer from the scheduler (`ferry.rx.<org>.<install>.claim`): exactly one runner
//!    process wins a job;
//! 3. runs the job — artifact syncs itself, everything else as a child process `ferry-runner plugin`
//!    in its own process group — streaming stdout/stderr as log batches and reporting the result on
//!    `ferry.rx.<org>.<install>.{log,event}.<job>`.
//!
//! Kill it at any moment: offers it had not claimed are redelivered to the next runner.

pub mod artifacts;
pub mod bootstrap;
pub mod breakglass;
pub mod exec;
pub mod leaf;
pub mod link;
pub mod logsink;
pub mod offers;
pub mod orphans;
pub mod outbox;
pub mod pause;
pub mod plans;
pub mod plugin;
pub mod registry;
pub mod roles;
pub mod rotate;
pub mod runner;
pub mod sandbox;
pub mod secrets;
pub mod stack;
pub(crate) mod staging;
pub mod stats;

pub use runner::{Runner, RunnerConfig};
