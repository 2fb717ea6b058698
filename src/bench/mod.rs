//! `edgeplan bench`: run the bundled kernels over a model's shapes on this host.
//! (Skeleton: filled in by the bench work.)

use crate::cli::BenchArgs;
use crate::error::Exit;

pub fn run(_args: BenchArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("bench is not built yet")
}
