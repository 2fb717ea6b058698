//! The one integration-test binary: it runs the built `edgeplan` as users do.

mod architecture;
mod bench;
mod cli;
mod deploy;
mod engine_llama_cpp;
mod engine_vllm;
mod gpu_4bit;
mod hostile;
mod integrations;
mod memory;
mod plan;
mod plan_measured;
mod probe;
mod schema;
mod script;
mod snippets;
mod terminal;
mod util;
mod width;
