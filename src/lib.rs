//! edgeplan as a library: the modules behind the `edgeplan` binary.
//!
//! Data flows one way: `probe` -> [`profile::Profile`] -> `plan`; `kernels` <- `bench`.
//! `arch` holds the native CPU primitives (XGETBV, the AMX `arch_prctl`) that `probe`
//! and `kernels` share. The binary (`main.rs`) only parses arguments, dispatches and maps errors to exit codes.

pub mod arch;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod error;
pub mod kernels;
pub mod model;
pub mod output;
pub mod plan;
pub mod probe;
pub mod profile;
