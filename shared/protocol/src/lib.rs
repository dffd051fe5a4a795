//! The contract between Ferry's processes: NATS subjects, the streams, consumers, KV buckets and object
//! stores that carry them, the wire messages, and the one codec that encodes them.
//!
//! Everything that crosses a process boundary is defined here and nowhere else, so that a reader can
//! check one crate to learn what a runner may say to the control plane and what one service may say to
//! another — and what each may do on the hub (`permissions`). This crate imports no other workspace crate: the runner, the services and the CLI all depend
//! on it, never the other way round.

pub mod codec;
pub mod kinds;
pub mod messages;
pub mod permissions;
pub mod resources;
pub mod rpc;
pub mod subjects;

pub use codec::{CodecError, Message, PROTOCOL_VERSION, decode, encode};
pub use messages::Control;
