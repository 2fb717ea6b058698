//! `edgeplan bench`: run the bundled kernels over a model's linear layers on this host,
//! measure the rooflines in the same run, check fidelity, and say whether the plan holds.
//!
//! [`run`] is a pipeline of small stages over a resolved request, a profile, the plan
//! under test (given by the caller: bench never imports `plan`), a [`backend::Backend`]
//! and a [`clock::Clock`]: *select* the paths (the planned one always included);
//! *budget*: refuse a run that cannot fit in memory before allocating; *gate*: check
//! every kernel against the scalar reference (a failure is reported and that kernel is
//! never timed); *bandwidth* and *peaks*: the rooflines; *race*: time each path's decode
//! and prefill kernels, the fastest reported; *fidelity*; *verdict*. The result is a
//! [`report::BenchReport`]; printing it and `--save` are the command's. Timing goes
//! through the clock and kernels through the backend, so everything but the raw numbers
//! is testable with the fake executor (`fake.rs`).

pub mod backend;
pub mod bandwidth;
pub mod clock;
pub mod engine;
pub mod fake;
pub mod fidelity;
pub mod host;
pub mod kernels_backend;
pub mod lock;
pub mod measure;
pub mod paired;
pub mod peaks;
pub mod report;
pub mod request;
pub mod rng;
pub mod rows;
pub mod save;
pub mod stats;
pub mod verdict;
pub mod workload;

mod driver;
mod race;
pub mod rounds;

pub use driver::{Inputs, Outcome, kernel_list, run};
pub use race::Progress;
