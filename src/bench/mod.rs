//! `edgeplan bench`: run the bundled kernels over a model's linear layers on this host,
//! measure the rooflines in the same run, check fidelity, and say whether the plan holds.
//!
//! The run reads as a story (see [`run`]): resolve the request; load the profile, the
//! model and the plan; choose the paths (the planned one always included); refuse a run
//! that cannot fit in memory before allocating; check every kernel against the scalar
//! reference (a failure is reported and that kernel is never timed); measure memory read
//! bandwidth and compute peaks; time each path's decode and prefill steps; measure
//! fidelity; decide the verdict; print the table or JSON; optionally save the figures
//! into a copy of the profile. Timing goes through a [`clock::Clock`] and kernels
//! through a [`backend::Backend`], so everything but the raw numbers is testable with
//! the fake executor (`fake.rs`).

pub mod backend;
pub mod bandwidth;
pub mod clock;
pub mod fake;
pub mod fidelity;
pub mod host;
pub mod kernels_backend;
pub mod measure;
pub mod peaks;
pub mod report;
pub mod request;
pub mod rng;
pub mod save;
pub mod stats;
pub mod verdict;
pub mod workload;

mod driver;

use crate::cli::BenchArgs;
use crate::error::Exit;

pub use save::{MeasuredSummary, measured_summary};

/// The planned path name for `profile` at `priority`, from the built-in catalog.
fn planned_path(
    profile: &crate::profile::Profile,
    priority: crate::cli::Priority,
) -> Result<String, String> {
    let catalog = crate::plan::Catalog::builtin();
    Ok(crate::plan::decide(profile, priority, &catalog).path.name)
}

/// Runs `edgeplan bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<Exit> {
    let request = request::BenchRequest::from_args(args)?;
    driver::run(request)
}
