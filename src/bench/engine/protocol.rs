//! What edgeplan and an engine harness say to each other: the request (one JSON
//! argument), and the JSON lines the harness writes (`hello`, one `round` per paired
//! round, `done`, or `error`). The vLLM harness (`vllm_harness.py`) speaks it; the
//! llama.cpp runner and the fake engine produce the same messages in Rust.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One linear layer of a decoder layer as the engine holds it (`y = x · Wᵀ`, `n` rows of
/// `k`): vLLM fuses q/k/v and gate/up, so these are its merged shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shape {
    pub name: String,
    pub n: usize,
    pub k: usize,
}

/// The model's dimensions, for an engine that builds a whole model file of its shapes
/// (llama.cpp's GGUF) rather than single layers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelDims {
    /// The config's `model_type` (`qwen3`, `llama`), when known.
    pub family: Option<String>,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub layers: usize,
    pub attention_heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub vocab_size: usize,
    pub tie_word_embeddings: bool,
}

/// The harness's argument.
#[derive(Debug, Clone, Serialize)]
pub struct HarnessRequest {
    pub model: ModelDims,
    pub threads: usize,
    pub seed: u64,
    pub shapes: Vec<Shape>,
    pub lm_head: Shape,
    /// The engine builds to time (`w4a16`, `bf16`, `w4a8`).
    pub paths: Vec<String>,
    /// Distinct decoder layers walked by one decode sample.
    pub layers: usize,
    /// Decoder layers of one prefill sample.
    pub prefill_layers: usize,
    pub prefill_tokens: usize,
    /// Rounds run before the harness starts asking whether to go on.
    pub min_rounds: usize,
    pub max_rounds: usize,
}

/// The kernel the engine picked for one build, and its check against a reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineKernel {
    /// The engine's class or type (`CPUWNA16LinearKernel`, `UnquantizedLinearMethod`,
    /// `Q4_0`).
    pub kernel_class: String,
    /// The op a forward call runs (`cpu_gemm_wna16`, `int4_scaled_mm_cpu`, `onednn_mm`).
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa_hint: Option<String>,
    /// Relative error of one small layer against a dequantized float reference.
    #[serde(default)]
    pub rel_error: Option<f64>,
    /// `passed` or `failed` (a failed kernel is never timed).
    pub check: String,
}

/// The harness's first line: who it is and what it will time.
#[derive(Debug, Clone, Deserialize)]
pub struct Hello {
    pub engine: String,
    pub version: String,
    #[serde(default)]
    pub torch: Option<String>,
    #[serde(default)]
    pub python: Option<String>,
    /// The engine's build description (llama.cpp's `build_commit` and number).
    #[serde(default)]
    pub build: Option<String>,
    pub threads: usize,
    pub kernels: BTreeMap<String, EngineKernel>,
    /// Builds not timed, each with why (e.g. vLLM routes W4A8 only with AMX).
    #[serde(default)]
    pub skipped: BTreeMap<String, String>,
    /// The builds every round times, in the request's order.
    pub timed: Vec<String>,
    /// Bytes of one decoder layer per build, as the engine holds it.
    pub layer_weight_bytes: BTreeMap<String, u64>,
    /// Bytes of the lm_head (the same matrix on every build).
    pub head_weight_bytes: u64,
    pub layers_timed_decode: usize,
    pub layers_timed_prefill: usize,
    pub setup_s: f64,
    /// The times are of the whole model (attention, norms, sampling included), as
    /// `llama-bench` reports them, not of the linear layers alone.
    #[serde(default)]
    pub whole_model: bool,
}

/// One build's timings in one round, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct BuildTimes {
    /// M = 1 over `layers_timed_decode` decoder layers.
    pub decode_layers_s: f64,
    /// M = 1 through the lm_head.
    pub head_s: f64,
    /// M = prefill tokens over `layers_timed_prefill` decoder layers.
    pub prefill_layers_s: f64,
}

/// One paired round: every timed build, in a random order.
#[derive(Debug, Clone, Deserialize)]
pub struct Round {
    /// 1-based; the rounds arrive in order.
    pub round: usize,
    pub times: BTreeMap<String, BuildTimes>,
}

/// One line of the harness's output.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    Hello(Box<Hello>),
    Round(Round),
    Done {},
    Error { message: String },
}

/// A running harness.
pub trait Session {
    /// The harness's `hello`.
    fn hello(&self) -> &Hello;
    /// The next round, or `None` when the harness has finished.
    fn next_round(&mut self) -> anyhow::Result<Option<Round>>;
    /// After a round at or past `min_rounds`: whether to run another.
    fn answer(&mut self, more: bool) -> anyhow::Result<()>;
    /// Waits for the harness to end; an error when it failed.
    fn finish(self: Box<Self>) -> anyhow::Result<()>;
}

/// Starts an engine's harness.
pub trait Launcher {
    /// The engine's name as the report gives it (`vllm`, `llama.cpp`).
    fn engine(&self) -> &'static str;
    /// The program that runs it (the Python interpreter, `llama-bench`), for the report.
    fn program(&self) -> String;
    fn start(&self, request: &HarnessRequest) -> anyhow::Result<Box<dyn Session>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_lines_parse() {
        let round: Message = serde_json::from_str(
            r#"{"kind": "round", "round": 2, "order": ["bf16", "w4a16"], "times": {"bf16": {"decode_layers_s": 0.1, "head_s": 0.02, "prefill_layers_s": 0.3}}}"#,
        )
        .unwrap();
        let Message::Round(r) = round else {
            panic!("not a round")
        };
        assert_eq!(r.round, 2);
        assert_eq!(r.times["bf16"].head_s, 0.02);
        let err: Message =
            serde_json::from_str(r#"{"kind": "error", "message": "ModuleNotFoundError: vllm"}"#)
                .unwrap();
        assert!(matches!(err, Message::Error { message } if message.contains("vllm")));
    }
}
