//! edgeplan as a library: the modules behind the `edgeplan` binary.
//!
//! Data flows one way: `probe` -> [`profile::Profile`] -> `plan`; `kernels` <- `bench`.
//! The binary (`main.rs`) only parses arguments, dispatches and maps errors to exit codes.

pub mod bench;
pub mod cli;
pub mod error;
pub mod kernels;
pub mod model;
pub mod plan;
pub mod probe;
pub mod profile;
