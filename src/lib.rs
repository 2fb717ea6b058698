//! edgeplan as a library: the modules behind the `edgeplan` binary.
//!
//! A request flows one way: `main` parses the command line ([`cli::Cli`]);
//! `cli::resolve` turns it into the command's request (domain types, usage errors
//! raised there); `commands::{probe, plan, check, bench}` run it and return the
//! [`error::Exit`]. Below the commands: `probe` (a [`profile::Profile`] from the host or a
//! captured tree), `plan` (the pure decision over the catalog, the memory fit, rendering),
//! `bench` (the kernels timed in stages against the plan under test), `kernels`, `model`,
//! `output` (tables, JSON, number formatting), `profile`, `timestamp` (RFC 3339 dates of
//! saved measurements), `arch` and `error`, and at the bottom `fsx` (files reached
//! relative to a directory descriptor, never through a planted link) and `sanitize`
//! (terminal-safe text).
//!
//! The rules (docs/architecture.md; `tests/architecture.rs` checks the first four):
//! - `plan` never imports `bench` and `bench` never imports `plan`; they meet in
//!   `commands` and in the profile's typed [`profile::Measurements`].
//! - Nothing below `cli` and `commands` imports clap.
//! - No import cycles between top-level modules, nor between the files above `kernels`.
//! - Only `commands` writes stdout/stderr and picks exit codes.
//! - One source for each fact (priority, table preset, byte formatting, the executor).
//! - Only what the binary, tests and examples use is public; the rest is `pub(crate)`.
//! - Every `unsafe` block carries a `// SAFETY:` comment (a denied clippy lint).

// What the binary, tests/ and examples/ use is public; the rest is crate-private.
pub mod cli;
pub mod error;
pub mod kernels;
pub mod profile;

pub(crate) mod arch;
pub(crate) mod bench;
pub(crate) mod commands;
pub(crate) mod contract;
pub(crate) mod engine;
pub(crate) mod fsx;
pub(crate) mod model;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod probe;
#[cfg(test)]
mod proptests;
pub(crate) mod sanitize;
pub(crate) mod timestamp;

/// Runs one parsed command line to its exit code: `cli::resolve` into the command's
/// request, then the command.
pub fn run(cli: cli::Cli) -> anyhow::Result<error::Exit> {
    cli::resolve(cli).and_then(commands::run)
}
