//! ferry-appconfig's integration tests, one module per area, built as one test binary (one
//! binary per file linked the crate and its dependencies again for each: disk and link time CI
//! does not have to spare).

mod common;
mod corpus;
mod example;
mod fuzz;
mod gotemplate;
mod jobs;
mod nuon_functions;
mod operations;
mod secrets;
mod stack;
