//! edgeplan as a library: the modules behind the `edgeplan` binary.
//!
//! Data flows one way: `probe` -> [`profile::Profile`] -> `plan`; `kernels` <- `bench`.
//! `arch` holds the native CPU primitives (XGETBV, the AMX `arch_prctl`) that `probe`
//! and `kernels` share. The binary (`main.rs`) only parses arguments, dispatches and maps errors to exit codes.

// What the binary, tests/ and examples/ use is public; the rest is crate-private.
pub mod cli;
pub mod error;
pub mod kernels;
pub mod profile;

pub(crate) mod arch;
pub(crate) mod bench;
pub(crate) mod commands;
pub(crate) mod model;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod probe;

/// Runs one parsed command line to its exit code: `cli::resolve` into the command's
/// request, then the command.
pub fn run(cli: cli::Cli) -> anyhow::Result<error::Exit> {
    cli::resolve(cli).and_then(commands::run)
}
