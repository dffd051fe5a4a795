//! Ferry's end-to-end tests, one module per area, built as ONE test binary: each of the 39
//! areas as its own binary linked every dependency again (about 25 MB apiece, a gigabyte in
//! all, and a CI build ran out of disk). cargo-nextest still runs every test in its own process,
//! so the tests share nothing but the binary.

mod actions;
mod api;
mod approvals;
mod archive;
mod audit;
mod auth;
mod bootstrap;
mod bounds;
mod cli;
mod client;
mod cluster;
mod dashboard;
mod deploy;
mod dev;
mod drift;
mod events;
mod habits;
mod history;
mod isolation;
mod jobs;
mod kube;
mod lifecycle;
mod metrics;
mod openapi;
mod permissions;
mod policies;
mod portal;
mod production;
mod reach;
mod readme;
mod recovery;
mod registries;
mod releases;
mod responses;
mod revocation;
mod runners;
mod sandbox;
mod scripts;
mod shape;
mod spool;
mod stack;
mod userdata;
