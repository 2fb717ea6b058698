//! `plan --engine llama.cpp --format script` (placeholder while being written).
use crate::plan::Plan;
use crate::profile::Profile;

pub fn script(_plan: &Plan, _profile: &Profile) -> anyhow::Result<String> {
    anyhow::bail!("not yet")
}
