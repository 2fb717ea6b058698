//! `edgeplan probe`: live or sysroot detection into a [`crate::profile::Profile`].
//! (Skeleton: filled in by the probe work.)

use std::path::Path;

use crate::cli::ProbeArgs;
use crate::error::Exit;
use crate::profile::Profile;

pub fn run(_args: ProbeArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("probe is not built yet")
}

/// Probes the live host (CPUID, XGETBV, arch_prctl, /proc, /sys).
pub fn live() -> anyhow::Result<Profile> {
    anyhow::bail!("probe is not built yet")
}

/// Probes a captured tree; nothing live is read. Exit 66 when `dir` does not exist.
pub fn from_sysroot(_dir: &Path) -> anyhow::Result<Profile> {
    anyhow::bail!("probe is not built yet")
}
