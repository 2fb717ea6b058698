//! The plan as data: the serde structs behind `plan --format json|jsonl`.
//!
//! One [`Plan`] per device; every output format (table, JSON, env, args) renders from it.
//! The keys are contract.md's (`schema_version`, `hardware_class`, `priority`, `path`,
//! `engine_kwargs`, `explain`) plus additive extensions (`device`, `threads`,
//! `alternatives`, `memory`, `measured`). Nothing here decides or prints anything.

use serde::{Deserialize, Serialize};

use super::catalog::{DType, KernelFamily, LmHead};
use super::memory::MemoryFit;
use crate::profile::HardwareClass;

/// Major version of the plan JSON.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

pub use crate::profile::Priority;

/// The plan for one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    pub schema_version: u32,
    /// The device's label, or the name of the input it came from.
    pub device: Option<String>,
    pub hardware_class: HardwareClass,
    pub priority: Priority,
    pub path: PlannedPath,
    /// What goes into the engine's constructor (vLLM's `LLM(...)`), as the engine
    /// rendering gives it: the same list as `engine.flags`. `{}` before rendering.
    pub engine_kwargs: serde_json::Map<String, serde_json::Value>,
    /// Threads the engine should use (the profile's usable threads), when known.
    pub threads: Option<u32>,
    /// What the plan decides, whatever the engine: weights, activations, kernel family,
    /// threads and CPUs, KV budget, context and sequences.
    pub deploy: Deployment,
    /// The deployment in one engine's dialect (flags, env, serve command), with the
    /// engine versions it was checked against; absent until rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineRendering>,
    /// The rule trace: each step with the profile facts it used.
    pub explain: Vec<Step>,
    /// The paths that lost, each with the reason.
    pub alternatives: Vec<Alternative>,
    /// The memory fit, when `--model` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryFit>,
    /// The path to deploy when this one does not fit in memory: set when the path was
    /// chosen for speed over a smaller one (`plan --model` switches to it by itself and
    /// says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_fallback: Option<String>,
    /// The figures `bench --save` stored in the profile, set beside the catalog's;
    /// absent when the profile carries none. They never change the decision (a saved
    /// `bench --engine` run does: see the `measured_engine` step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
}

/// What a saved bench run says about this plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Measured {
    /// `real`, or `fake` (the simulated test executor: not measurements).
    pub executor: Option<String>,
    /// When the bench run started (RFC 3339 UTC), as saved; `null` in profiles saved
    /// before edgeplan recorded it.
    #[serde(default)]
    pub measured_at: Option<String>,
    /// Seconds from `measured_at` to when this plan was made (negative when the saved
    /// time is ahead of this clock); `null` when `measured_at` is absent or unreadable.
    #[serde(default)]
    pub age_s: Option<i64>,
    /// The version of the edgeplan that measured.
    #[serde(default)]
    pub edgeplan_version: Option<String>,
    /// The CPU model of the host the figures came from.
    #[serde(default)]
    pub host_cpu: Option<String>,
    /// Whether that CPU is the one the profile describes (`null` when either is unknown).
    /// A run on another CPU never makes the plan `verified: measured`.
    #[serde(default)]
    pub host_matches_profile: Option<bool>,
    pub model: Option<String>,
    pub threads: Option<u64>,
    /// The host's measured read bandwidth (GB/s).
    pub memory_bandwidth_gbps: Option<f64>,
    /// Per bench path: kernel, decode and prefill speed, step time, fidelity.
    pub paths: Vec<MeasuredPath>,
    /// The bench path that measures this plan's path (`w4a8` for `w4a8-amx`), if any.
    pub plan_bench_path: Option<String>,
    /// The path and priority the bench run checked.
    pub bench_planned: Option<String>,
    pub bench_priority: Option<String>,
    /// The bench verdict (`confirmed`, `contradicted`, `inconclusive`, `not_applicable`)
    /// and its reason, as saved.
    pub bench_verdict: Option<String>,
    pub bench_reason: Option<String>,
    /// True when the bench run checked this plan's path at this plan's priority, so its
    /// verdict speaks to this plan.
    pub applies: bool,
    /// True when the verdict applies and says the measurements contradict the plan.
    pub contradicts_plan: bool,
    /// True when the verdict applies and confirms the plan.
    pub confirms_plan: bool,
    /// One sentence: what the measurements mean for this plan.
    pub reason: String,
}

pub use crate::profile::MeasuredPath;

/// The chosen path as the contract spells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlannedPath {
    pub name: String,
    pub quantization: Option<String>,
    pub group_size: Option<u32>,
    pub bits_per_weight: Option<f64>,
    pub fused_cpu_norms: bool,
    pub runs_in_vllm: bool,
    /// What the choice rests on: `measured`, `inferred` or `flags-only`.
    pub verified: Verified,
    /// The measurement (who measured what, where) or the assumption it rests on.
    pub verified_basis: String,
    pub rationale: String,
    pub build_with: Option<String>,
    /// In the order shown: what edgeplan read in this device's profile, the notes
    /// measured on the plan's class (and the catalog's notes for that class), facts that
    /// hold on any hardware, then figures measured on other classes, each labelled.
    pub notes: Vec<PlanNote>,
}

/// One note of a plan, with where its figures were measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanNote {
    pub text: String,
    /// Where the note holds: a hardware class its figures were measured on; `any` (a
    /// fact about the format or the engine, or a figure that does not depend on the
    /// device); `this_device` (edgeplan read it in this device's profile); `null` when
    /// the catalog does not say (a plain-string note of a `--catalog` file).
    pub measured_on: Option<String>,
    /// The machine the figures came from, when the catalog names it.
    pub hardware: Option<String>,
    /// Shown before the text in the table (`measured on x86_cpu: Intel Xeon Platinum
    /// 8480C, 24 threads`) when the note was measured on another class than the plan's;
    /// `null` otherwise.
    pub label: Option<String>,
}

impl PlanNote {
    /// A note about this device, from its profile.
    pub fn device(text: String) -> PlanNote {
        PlanNote {
            text,
            measured_on: Some(THIS_DEVICE.into()),
            hardware: None,
            label: None,
        }
    }

    /// The note as the table shows it: `[label] text`.
    pub fn shown(&self) -> String {
        match &self.label {
            Some(label) => format!("[{label}] {}", self.text),
            None => self.text.clone(),
        }
    }
}

/// `measured_on` of a note edgeplan derived from the device's profile.
pub const THIS_DEVICE: &str = "this_device";

/// How far a plan's path is backed by measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Verified {
    /// The study, or a `bench --save` on this device that confirmed the plan, measured
    /// this exact path on this class of hardware.
    #[serde(rename = "measured")]
    Measured,
    /// Chosen by rules from facts, not measured on this class: an assumption stands in.
    #[serde(rename = "inferred")]
    Inferred,
    /// The decision rests on `/proc/cpuinfo` flags without the OS facts behind them.
    #[serde(rename = "flags-only")]
    FlagsOnly,
}

impl Verified {
    pub fn as_str(self) -> &'static str {
        match self {
            Verified::Measured => "measured",
            Verified::Inferred => "inferred",
            Verified::FlagsOnly => "flags-only",
        }
    }
}

/// One rule of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    /// Short rule id, e.g. `amx_int8_usable`.
    pub rule: String,
    /// What the rule concluded, in a sentence.
    pub outcome: String,
    /// The profile facts the rule read.
    pub facts: Vec<Fact>,
}

impl Step {
    /// The step that records the priority and what it decided.
    pub fn priority(priority: Priority, outcome: &str) -> Step {
        Step {
            rule: "priority".into(),
            outcome: outcome.into(),
            facts: vec![Fact::new(
                "priority",
                serde_json::json!(priority.as_str()),
                "--priority (default speed)".into(),
            )],
        }
    }
}

/// One profile fact, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fact {
    /// The profile field, e.g. `cpu.features.amx_int8.usable`.
    pub field: String,
    pub value: serde_json::Value,
    /// How the profile got it, e.g. `CPUID + XCR0 + arch_prctl (live probe)`.
    pub source: String,
}

impl Fact {
    pub fn new(field: &str, value: serde_json::Value, source: String) -> Fact {
        Fact {
            field: field.into(),
            value,
            source,
        }
    }
}

/// A path that was not chosen, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Alternative {
    pub path: String,
    pub reason: String,
}

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Cpu,
    Gpu,
    Npu,
}

/// The engine-neutral deployment: what any engine is asked to run. Engines render it
/// (src/engine/); nothing here names an engine's flag or variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Deployment {
    pub target: Target,
    /// The kernel family the path expects the engine to run.
    pub kernel: KernelFamily,
    pub weights: WeightFormat,
    /// The activation dtype the kernel computes with.
    pub activations: DType,
    /// The threads to run (usable threads of the profile), when known.
    pub threads: Option<u32>,
    /// The CPUs those threads run on, as a kernel cpulist (`0-3,6`), when known: the
    /// first `threads` of the usable CPU set (cgroup cpuset and affinity).
    pub cpus: Option<String>,
    /// Bytes the engine may give its KV cache, when a budget is known.
    pub kv_cache_bytes: Option<u64>,
    /// Where `kv_cache_bytes` comes from.
    pub kv_cache_source: String,
    /// The context each sequence may hold (`--model` fits set it).
    pub max_context: Option<u64>,
    /// The sequences served at once (`--model` fits set it).
    pub max_sequences: Option<u64>,
    /// Tokens per scheduler step the memory fit assumed.
    pub max_batched_tokens: Option<u64>,
    /// The share of a GPU's memory the engine may take (GPU plans with a fit).
    pub gpu_memory_fraction: Option<f64>,
    /// Decoder layers offloaded to the GPU when not all of them fit there (llama.cpp
    /// GPU plans with a fit); `null` = all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_layers: Option<u64>,
    /// True when `max_context` is past the model's own limit (the engine must be told).
    pub beyond_context_limit: bool,
}

/// The checkpoint the path builds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WeightFormat {
    /// The quantization format (`gptq`; `gguf` for a llama.cpp file), or `null` for
    /// the model's own 16-bit weights in their checkpoint.
    pub format: Option<String>,
    /// For a GGUF file: its type as llama.cpp's tools name it (`Q4_0`, `Q4_K_M`, `BF16`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gguf_type: Option<String>,
    pub bits: u32,
    pub group_size: Option<u32>,
    /// Symmetric grid (no zero points), for a quantized checkpoint.
    pub symmetric: Option<bool>,
    /// Act-order (GPTQ `desc_act`): always false, the CPU W4A8 gate needs it off.
    pub act_order: bool,
    pub lm_head: LmHead,
    /// The dtype of what stays 16-bit (embedding, norms; all weights of a dense path).
    pub dtype: DType,
}

/// A deployment in one engine's dialect. Strings at the edge: every flag, variable and
/// command word here is checked against the engine versions in `checked_against`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineRendering {
    /// The engine (`vllm`).
    pub name: String,
    /// The engine releases whose parser, registry and config accepted this rendering.
    pub checked_against: Vec<String>,
    /// Whether the path runs in this engine at all; when not, everything below is empty.
    pub runs: bool,
    /// The package to install to serve (a pip requirement), when it runs.
    pub package: Option<String>,
    /// The serve command before the model argument (`python3 -m ... serve`).
    pub command: Vec<String>,
    /// The command-line flags, one token per element, from the same list as
    /// `engine_kwargs`.
    pub flags: Vec<String>,
    /// Environment variables the engine reads, in order.
    pub env: Vec<EnvVar>,
    /// What the rendering chose and why, one sentence each.
    pub notes: Vec<String>,
}

impl EngineRendering {
    /// The environment as `NAME=value` words, for `env` on a command line (values are
    /// plain tokens by construction).
    pub fn env_words(&self) -> String {
        self.env
            .iter()
            .map(|v| format!("{}={}", v.name, v.value))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One environment variable of a rendering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}
