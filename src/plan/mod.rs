//! `edgeplan plan` and `edgeplan check`: the weight-path decision.
//! (Skeleton: filled in by the plan work.)

use crate::cli::{CheckArgs, PlanArgs};
use crate::error::Exit;

pub fn run(_args: PlanArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("plan is not built yet")
}

pub fn check(_args: CheckArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("check is not built yet")
}
