//! The app package format (DESIGN.md §6): a directory of TOML files, laid out like Nuon's v2 app
//! configs. This crate parses a package, validates it (every error with file, line and column),
//! extracts the dependency graph (explicit `dependencies` plus references to other components' outputs
//! in templates) and renders templates against an install's state.
//!
//! It works on a [`Package`] (the files in memory), not on a directory, so the CLI (before upload) and
//! the control plane (after upload) run exactly the same validation over exactly the same bytes.

mod check;
pub mod cluster;
mod diagnostics;
mod generate;
mod graph;
pub mod jobs;
pub mod lint;
pub mod operations;
mod package;
mod parse;
pub mod schema;
pub mod stack;
pub mod state;
pub mod template;
mod tree;

pub use check::{Reference, Remote, did_you_mean, reference, remote_path};
pub use diagnostics::{Diagnostic, Diagnostics, Severity};
pub use generate::{json_schema, markdown_reference};
pub use graph::deploy_stages;
pub use package::{MAX_FILE_BYTES, Package, PackageError, repository_root};
pub use parse::{
    Action, ActionInput, ActionStep, AppConfig, CloudRole, Component, ComponentType, Input,
    InstallDecl, InstallStack, KubeTarget, Metadata, NestedStack, OperationRule, Policy, Rendered,
    Report, RolePolicy, RoleUse, Runbook, RunbookStep, RunbookStepKind, Secret, Trigger, load,
    validate,
};
