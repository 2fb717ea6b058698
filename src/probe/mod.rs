//! `edgeplan probe`: live or sysroot detection into a [`crate::profile::Profile`].
//! (Skeleton: filled in by the probe work.)

use crate::cli::ProbeArgs;
use crate::error::Exit;

pub fn run(_args: ProbeArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("probe is not built yet")
}
