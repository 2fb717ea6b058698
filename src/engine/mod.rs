//! Engines: a plan's engine-neutral [`Deployment`] in one engine's dialect.
//!
//! The plan decides what any engine is asked to run (weight format, activations,
//! kernel family, threads and CPUs, KV budget, context, sequences); an engine module
//! turns that into its own constructor kwargs, command-line flags, environment
//! variables, serve command and build script, each checked against the engine releases
//! it names. vLLM is the one engine today (`vllm.rs`, its script in `vllm_script.rs`);
//! another engine is a new file here plus an [`Engine`] variant. Nothing in `plan/`
//! names an engine's flag or variable, and nothing here decides.
//!
//! [`Deployment`]: crate::plan::schema::Deployment

pub mod vllm;
pub mod vllm_script;

use crate::plan::Plan;
use crate::profile::Profile;

/// The engines edgeplan renders for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Vllm,
}

/// Renders `plan` for `engine` and stores it in the plan: `engine` and the contract's
/// `engine_kwargs` (the same list the flags come from).
pub fn attach(plan: &mut Plan, engine: Engine) {
    let (rendering, kwargs) = match engine {
        Engine::Vllm => vllm::render_with_kwargs(plan),
    };
    plan.engine_kwargs = kwargs;
    plan.engine = Some(rendering);
}

/// The build-and-serve script for `plan` (rendered for `engine`) on `profile`'s device.
pub fn script(plan: &Plan, profile: &Profile, engine: Engine) -> anyhow::Result<String> {
    match engine {
        Engine::Vllm => vllm_script::script(plan, profile),
    }
}
