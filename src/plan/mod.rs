//! `edgeplan plan` and `edgeplan check`: the weight-path decision, end to end.
//!
//! The pipeline (driven by `commands::plan`): load the catalog (`catalog.rs`: built-in,
//! or `--catalog FILE`), get the profiles (`input.rs`: files, stdin, directories, JSON
//! Lines; the command probes for `--sysroot` and the live host), decide each one
//! (`rules.rs`, pure, into an engine-neutral deployment; `notes.rs` orders and labels the
//! path's notes by where they were measured), render them (`render.rs`; the
//! engine's flags, env and build script come from src/engine/, which the command calls). In a fleet run a bad profile is reported on stderr and the rest are
//! still planned; the exit code is then the first error's (65 bad data, 66 missing).
//! `--expect` and `check` (`check.rs`) exit 1 on a mismatch. With `--model`, each plan
//! also gets a memory fit (`memory.rs`), and a device the model does not fit exits 3.
//! A profile saved by `bench --save` also gets its measured figures beside the
//! catalog's (`measured.rs`); they are reported, never decided on. A saved
//! `bench --engine` run on the same device steers the choice (`measured_choice.rs`).
//!
//! Other modules call [`decide`] (pure) with a [`Catalog`] (usually
//! [`Catalog::builtin`]); the [`Plan`] it returns is the JSON contract's plan object.

pub mod catalog;
pub mod check;
pub mod deploy;
pub mod input;
pub mod measured;
mod measured_choice;
pub mod memory;
pub mod memory_hybrid;
pub mod memory_llama_cpp;
mod notes;
#[cfg(test)]
mod odd_inputs;
pub mod render;
pub mod rules;
mod rules_llama_cpp;
pub mod schema;

use std::path::Path;

pub use catalog::{Catalog, Engine};
pub use rules::{decide, decide_for};
pub use schema::{Plan, Priority};

use input::Loaded;

/// The built-in catalog, or the one at `path` (`--catalog FILE`).
pub fn load_catalog(path: Option<&Path>) -> anyhow::Result<Catalog> {
    match path {
        Some(path) => Catalog::from_file(path),
        None => Ok(Catalog::builtin()),
    }
}

/// Plans one loaded profile for `engine`, naming the device by its label.
pub fn plan_one(one: &Loaded, priority: Priority, catalog: &Catalog, engine: Engine) -> Plan {
    plan_one_with(one, priority, catalog, engine, rules::Options::default())
}

/// [`plan_one`] with decision [`rules::Options`] (re-planning for memory).
pub fn plan_one_with(
    one: &Loaded,
    priority: Priority,
    catalog: &Catalog,
    engine: Engine,
    options: rules::Options,
) -> Plan {
    let mut plan = rules::decide_with(&one.profile, priority, catalog, engine, options);
    plan.device = Some(one.label.clone());
    measured::attach(&one.profile, &mut plan, catalog);
    plan
}
