//! Engines: a plan's engine-neutral [`Deployment`] in one engine's dialect.
//!
//! The plan decides what any engine is asked to run (weight format, activations,
//! kernel family, threads and CPUs, KV budget, context, sequences); an engine module
//! turns that into its own constructor kwargs, command-line flags, environment
//! variables, serve command and build script, each checked against the engine releases
//! it names: vLLM (`vllm.rs`, its script in `vllm_script.rs`) and llama.cpp
//! (`llama_cpp.rs`, `llama_cpp_script.rs`). The plan is made for an engine (the rules
//! differ: what each engine can run on the device), but nothing in `plan/` names an
//! engine's flag or variable, and nothing here decides.
//!
//! [`Deployment`]: crate::plan::schema::Deployment

mod common;
pub mod llama_cpp;
pub mod llama_cpp_script;
pub mod vllm;
pub mod vllm_script;

pub use crate::contract::Engine;
use crate::plan::Plan;
use crate::profile::Profile;

/// Renders `plan` for `engine` and stores it in the plan: `engine` and the contract's
/// `engine_kwargs` (the same list the flags come from).
pub fn attach(plan: &mut Plan, engine: Engine) {
    let (rendering, kwargs) = match engine {
        Engine::Vllm => vllm::render_with_kwargs(plan),
        Engine::LlamaCpp => llama_cpp::render_with_kwargs(plan),
    };
    plan.engine_kwargs = kwargs;
    plan.engine = Some(rendering);
}

/// The build-and-serve script for `plan` (rendered for `engine`) on `profile`'s device.
pub fn script(plan: &Plan, profile: &Profile, engine: Engine) -> anyhow::Result<String> {
    match engine {
        Engine::Vllm => vllm_script::script(plan, profile),
        Engine::LlamaCpp => llama_cpp_script::script(plan, profile),
    }
}
