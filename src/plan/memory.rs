//! The memory fit: will this model, at this context and concurrency, fit on the device
//! with the planned weight path? Pure arithmetic over a [`ModelShape`], the chosen
//! [`PathSpec`] and the profile's memory facts; docs/memory.md has the formulas and a
//! worked example.
//!
//! - **Weights**: the decoder linears (every expert of a MoE model) at the path's bits
//!   per weight; the embedding, norms and MoE routers at bf16; the lm_head as the path
//!   keeps it (a 4-bit path stores its own quantized copy, untied from the embedding,
//!   so a tied model pays for it on top; a 16-bit path shares a tied embedding and
//!   stores an untied head at 16 bits).
//! - **KV cache, two figures.** The architecture's: `2 (K, V) × kv_heads × head_dim ×
//!   dtype bytes` per token per layer, for `context` tokens on full-attention layers,
//!   `min(context, window)` on sliding ones, none on linear-attention layers, times the
//!   sequences (and a "flat" figure charging every layer the whole context). The
//!   engine's: what vLLM V1 allocates for it (16- or 128-token blocks, a sliding layer
//!   holding `window - 1 + max_num_batched_tokens` tokens plus a block, layers grouped
//!   by kind with padding), given a fraction of a GPU's memory or, on a CPU, whole
//!   GiB of the budget left after weights and headroom (stated to the engine). `fits` is decided on the engine's
//!   figure where the path runs in vLLM, else on the architecture's.
//! - **Budget**: CPU classes (and phones) the usable RAM: MemAvailable, or the cgroup
//!   limit when that is lower; a discrete GPU its memory (one GPU; unknown when the
//!   profile has no figure); a Jetson its unified memory less [`JETSON_OS_RESERVE`].
//!   A headroom fraction (default [`DEFAULT_HEADROOM`]) is kept free.
//! - **Deployment**: the context, sequences, batched tokens, KV bytes (CPU) and GPU
//!   memory fraction the engine figure assumed go into the plan's engine-neutral
//!   deployment (`deploy::apply_fit`); the engine renders them as its flags.
//!
//! Not in here: activations, the allocator's overhead and the engine's own buffers,
//! which the headroom stands in for.

use serde::{Deserialize, Serialize};

use super::catalog::{LmHead, PathSpec};
use super::memory_hybrid::{self, EngineState, StateSetup};
use crate::model::ModelShape;
use crate::profile::{HardwareClass, Profile, RamBudget};

/// Fraction of the budget kept free when `--headroom` is not given.
pub const DEFAULT_HEADROOM: f64 = 0.10;

/// Memory a Jetson's OS, desktop and CUDA context keep out of the model's reach: an
/// assumption (not measured here), documented in docs/memory.md.
pub const JETSON_OS_RESERVE: u64 = 2 << 30;

/// The longest context the search reports; beyond it the answer is "at least this".
pub const MAX_CONTEXT_SEARCHED: u64 = 1 << 24;

const GIB: f64 = (1u64 << 30) as f64;
const GIB_BYTES: u64 = 1 << 30;

/// vLLM's KV block on a GPU (`CacheConfig.block_size` default, vllm/config/cache.py).
pub const GPU_BLOCK_TOKENS: u64 = 16;
/// vLLM's KV block on a CPU (`CpuPlatform.check_and_update_config`, vllm/platforms/cpu.py).
pub const CPU_BLOCK_TOKENS: u64 = 128;
/// `max_num_seqs` is capped at vLLM's `vllm serve` default.
pub const MAX_NUM_SEQS_CAP: u64 = 256;

/// What the fit was asked about.
#[derive(Debug, Clone)]
pub struct FitRequest {
    pub model: ModelShape,
    pub context: u64,
    pub concurrency: u64,
    pub kv_dtype: KvDtype,
    pub headroom: f64,
}

/// The KV cache element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    Bf16,
    Fp16,
    Fp8,
    Int8,
    F32,
}

impl KvDtype {
    /// Parses `--kv-dtype` (vLLM's spellings accepted too).
    pub fn parse(s: &str) -> Option<KvDtype> {
        Some(match s.to_ascii_lowercase().as_str() {
            "bf16" | "bfloat16" | "auto" => KvDtype::Bf16,
            "fp16" | "float16" | "half" => KvDtype::Fp16,
            "fp8" | "fp8_e4m3" | "fp8_e5m2" => KvDtype::Fp8,
            "int8" => KvDtype::Int8,
            "f32" | "fp32" | "float32" => KvDtype::F32,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Int8 => "int8",
            KvDtype::F32 => "f32",
        }
    }

    pub fn bytes(self) -> u64 {
        match self {
            KvDtype::Fp8 | KvDtype::Int8 => 1,
            KvDtype::Bf16 | KvDtype::Fp16 => 2,
            KvDtype::F32 => 4,
        }
    }
}

/// The weights, by part, in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WeightBytes {
    /// The decoder layers' linears, at the path's bits per weight.
    pub linears: u64,
    /// The token embedding, bf16.
    pub embedding: u64,
    /// The output head as the path stores it (0 when it shares a tied embedding).
    pub lm_head: u64,
    /// RMSNorm weights, bf16.
    pub norms: u64,
    /// MoE routers (and shared-expert gates), bf16; 0 for a dense model.
    #[serde(default)]
    pub router: u64,
    /// The state-space and short-convolution mixers' depthwise `conv1d` weights, bf16
    /// (quantizers leave them: they are not linear layers); absent when there are none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub conv1d: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl WeightBytes {
    pub fn total(&self) -> u64 {
        self.linears + self.embedding + self.lm_head + self.norms + self.router + self.conv1d
    }
}

/// The KV cache as vLLM V1 allocates it (`engine` in the plan JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineKv {
    /// Tokens per KV block.
    pub block_size: u64,
    /// The prefill chunk (`max_num_batched_tokens`) a sliding layer holds beyond its window.
    pub max_num_batched_tokens: u64,
    /// Layers per KV cache group (every group of a hybrid model has this many).
    pub group_size: u64,
    /// One entry per layer kind that holds KV.
    pub groups: Vec<EngineGroup>,
    /// KV bytes one sequence of `context` tokens is allocated (a hybrid model's state
    /// pages included).
    pub bytes_per_sequence: u64,
    /// A hybrid model's state layers as vLLM pages them, and the prefix-caching mode
    /// the figure assumes; absent for a model without state layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<EngineState>,
    /// The memory the engine gets for KV (`null` when the budget is unknown).
    pub kv_space_bytes: Option<u64>,
    /// Where that figure came from.
    pub kv_space_source: String,
}

/// One layer kind's KV cache groups, as vLLM lays them out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineGroup {
    pub kind: LayerKindName,
    pub layers: u64,
    /// Groups of `group_size` layers this kind fills.
    pub groups: u64,
    /// Empty slots in the last group, paid for like layers.
    pub padding_layers: u64,
    /// Tokens each layer is allocated per sequence (whole blocks); 0 for state layers.
    pub tokens_per_sequence: u64,
    /// State layers only: the state pages each layer holds per sequence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_per_sequence: Option<u64>,
    /// Bytes per sequence, padding included.
    pub bytes: u64,
}

/// KV cache of one layer kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KvPart {
    pub kind: LayerKindName,
    pub layers: u64,
    /// Tokens each of these layers holds per sequence.
    pub tokens_per_sequence: u64,
    pub bytes: u64,
}

/// Layer kind names as the JSON spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LayerKindName {
    FullAttention,
    SlidingAttention,
    LinearAttention,
}

/// The fit, as `plan` reports it (`memory` in the plan JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryFit {
    pub model: String,
    pub context: u64,
    pub concurrency: u64,
    pub kv_dtype: KvDtype,
    pub weights_bytes: u64,
    pub weights: WeightBytes,
    /// KV cache by layer type (sliding layers capped at the window, linear layers none).
    pub kv_bytes: u64,
    /// KV cache if every layer held the whole context.
    pub kv_flat_bytes: u64,
    /// `kv_flat_bytes - kv_bytes`.
    pub kv_saved_bytes: u64,
    pub kv_by_layer_kind: Vec<KvPart>,
    /// KV cache as vLLM V1 allocates it for these sequences; `null` on a path that
    /// does not run in vLLM. `fits` is decided on this figure when it is there.
    pub kv_engine_bytes: Option<u64>,
    pub engine: Option<EngineKv>,
    /// The model's longest context (`max_position_embeddings`, stretched by YaRN);
    /// `null` when the config does not say.
    pub context_limit: Option<u64>,
    pub context_limit_source: Option<String>,
    /// True when `context` is past `context_limit`: the engine must be told to allow
    /// it (vLLM refuses such a `max_model_len` unless told).
    pub beyond_context_limit: bool,
    /// MoE only: the linear parameters one token passes through (speed), beside the
    /// stored weights of every expert (memory).
    pub active_params_per_token: Option<u64>,
    /// What the device offers the model, before headroom; `null` when unknown.
    pub budget_bytes: Option<u64>,
    /// Where the budget came from.
    pub budget_source: String,
    pub headroom: f64,
    /// `budget_bytes × headroom`, kept free.
    pub headroom_bytes: Option<u64>,
    /// weights + KV ≤ budget − headroom; `null` when the budget is unknown.
    pub fits: Option<bool>,
    /// The longest context that fits at this concurrency (0 when the weights alone do not
    /// fit); `null` when the budget is unknown. Capped at [`MAX_CONTEXT_SEARCHED`].
    pub max_context: Option<u64>,
    /// The most sequences that fit at this context (0 when not one); `null` as above.
    pub max_concurrency: Option<u64>,
    /// For CPU paths that run in an engine: the KV bytes stated to it, whole GiB of
    /// the budget left after weights and headroom; `null` under 1 GiB.
    pub cpu_kv_cache_bytes: Option<u64>,
    /// llama.cpp's own allocation, on a llama.cpp path (memory_llama_cpp.rs); `fits`
    /// and the limits are then decided on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llama_cpp: Option<LlamaCppMemory>,
    pub notes: Vec<String>,
}

/// What llama.cpp allocates for a GGUF file: the plan JSON's `memory.llama_cpp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LlamaCppMemory {
    /// The file's type (`Q4_0`).
    pub file_type: String,
    /// The ggml type llama-quantize gives the output head (or the tied embedding).
    pub head_type: String,
    /// The bytes of the GGUF file's tensors.
    pub file_bytes: u64,
    /// What the CPU backend copies into repacked (or AMX) buffers at load, on top of
    /// the file's mapping (the tied head's copy included).
    pub repacked_bytes: u64,
    /// On a GPU: a tied embedding's second copy, for the offloaded head.
    pub duplicated_head_bytes: u64,
    /// KV cells per stream, and streams (`--parallel`).
    pub kv_cells_per_stream: u64,
    pub kv_streams: u64,
    /// The KV cache (f16 K and V).
    pub kv_bytes: u64,
    /// The compute buffer estimate, and what it rests on.
    pub compute_bytes: u64,
    pub compute_source: String,
    /// On a GPU: decoder layers offloaded (all of them when everything fits).
    pub gpu_layers: Option<u64>,
}

/// Bytes for `params` weights at `bits` each, rounded up.
fn bytes_at(params: u64, bits: f64) -> u64 {
    (params as f64 * bits / 8.0).ceil() as u64
}

/// The weight bytes of `model` stored the way `path` stores them.
pub fn weight_bytes(model: &ModelShape, path: &PathSpec) -> WeightBytes {
    let bits = path.bits_per_weight.unwrap_or(16.0);
    let lm_head_params = model.lm_head().params();
    let lm_head = match path.lm_head {
        LmHead::Quantized => bytes_at(lm_head_params, bits),
        LmHead::ModelDtype if model.tie_word_embeddings => 0,
        LmHead::ModelDtype => lm_head_params * 2,
    };
    let conv1d = model.conv1d_params();
    WeightBytes {
        linears: bytes_at(model.decoder_linear_params() - conv1d, bits),
        embedding: model.embedding_params() * 2,
        lm_head,
        norms: model.norm_params() * 2,
        router: model.router_params() * 2,
        conv1d: conv1d * 2,
    }
}

/// KV bytes per layer kind for `context` tokens and `concurrency` sequences.
pub fn kv_parts(model: &ModelShape, context: u64, concurrency: u64, dtype: KvDtype) -> Vec<KvPart> {
    let per_token = model.kv_bytes_per_token_per_layer(dtype.bytes());
    let window = model.sliding_window.unwrap_or(context);
    let (full, sliding, linear) = model.layer_kind_counts();
    let part = |kind, layers: u64, tokens: u64| KvPart {
        kind,
        layers,
        tokens_per_sequence: tokens,
        bytes: layers
            .saturating_mul(per_token)
            .saturating_mul(tokens)
            .saturating_mul(concurrency),
    };
    vec![
        part(LayerKindName::FullAttention, full, context),
        part(
            LayerKindName::SlidingAttention,
            sliding,
            context.min(window),
        ),
        part(LayerKindName::LinearAttention, linear, 0),
    ]
}

fn kv_total(model: &ModelShape, context: u64, concurrency: u64, dtype: KvDtype) -> u64 {
    kv_parts(model, context, concurrency, dtype)
        .iter()
        .map(|p| p.bytes)
        .fold(0, u64::saturating_add)
}

/// The memory the device offers, and where the figure came from.
pub fn budget(profile: &Profile) -> (Option<u64>, String) {
    match profile.hardware_class {
        HardwareClass::CudaDiscrete => gpu_budget(profile),
        HardwareClass::Jetson => jetson_budget(profile.memory.total_bytes),
        HardwareClass::X86Cpu | HardwareClass::Arm64Cpu | HardwareClass::NpuPhone => {
            // The probe's budget already discounts reclaimable page cache (probe.md §4):
            // profile.rs prefers it over the raw figures it was computed from.
            ram_budget(profile.memory.ram_budget())
        }
    }
}

/// A discrete GPU's budget: the memory of the first NVIDIA GPU (vLLM uses one).
fn gpu_budget(profile: &Profile) -> (Option<u64>, String) {
    let nvidia: Vec<_> = profile
        .gpus
        .iter()
        .filter(|g| g.vendor.eq_ignore_ascii_case("nvidia"))
        .collect();
    let many = if nvidia.len() > 1 {
        format!(
            " (the first of {} GPUs: vLLM's default tensor_parallel_size is 1)",
            nvidia.len()
        )
    } else {
        String::new()
    };
    let Some(gpu) = nvidia.first() else {
        return (
            None,
            "GPU memory unknown: the profile lists no NVIDIA GPU".into(),
        );
    };
    match gpu.memory_bytes {
        Some(bytes) => {
            let name = gpu.name.as_deref().unwrap_or("the GPU");
            let from = gpu
                .sources
                .get("memory_bytes")
                .map(|s| format!(", from the {s}"))
                .unwrap_or_default();
            (Some(bytes), format!("GPU memory of {name}{many}{from}"))
        }
        None => (
            None,
            "GPU memory unknown: the profile has no gpus[].memory_bytes".into(),
        ),
    }
}

/// A Jetson's budget: its unified memory (`MemTotal`) less [`JETSON_OS_RESERVE`].
fn jetson_budget(total_bytes: Option<u64>) -> (Option<u64>, String) {
    match total_bytes {
        Some(total) => (
            Some(total.saturating_sub(JETSON_OS_RESERVE)),
            format!(
                "Jetson unified memory (MemTotal {:.2} GiB) less a {:.0} GiB OS reserve",
                total as f64 / GIB,
                JETSON_OS_RESERVE as f64 / GIB
            ),
        ),
        None => (
            None,
            "unified memory unknown: the profile has no memory.total_bytes".into(),
        ),
    }
}

/// A CPU's (or phone's) budget: the profile's RAM budget, worded by where it came from.
fn ram_budget(budget: Option<RamBudget>) -> (Option<u64>, String) {
    match budget {
        Some(RamBudget::Probe(b)) => (
            Some(b),
            format!(
                "the probe's budget ({:.2} GiB): min(MemAvailable, cgroup limit - (usage - inactive_file))",
                b as f64 / GIB
            ),
        ),
        Some(RamBudget::CgroupLimit { limit, ram, what }) => (
            Some(limit),
            format!(
                "cgroup memory limit ({:.2} GiB, lower than {what} {:.2} GiB)",
                limit as f64 / GIB,
                ram as f64 / GIB
            ),
        ),
        Some(RamBudget::Ram { bytes, what }) => {
            (Some(bytes), format!("{what} (no lower cgroup limit)"))
        }
        Some(RamBudget::LimitOnly(l)) => {
            (Some(l), "cgroup memory limit (MemAvailable unknown)".into())
        }
        None => (
            None,
            "RAM unknown: the profile has no memory figures".into(),
        ),
    }
}

/// Largest n in 1..=hi with ok(n), assuming ok is monotone (true then false); None if !ok(1).
fn largest(hi: u64, ok: impl Fn(u64) -> bool) -> Option<u64> {
    if !ok(1) {
        return None;
    }
    let (mut lo, mut hi) = (1u64, hi);
    if ok(hi) {
        return Some(hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) { lo = mid } else { hi = mid }
    }
    Some(lo)
}

/// How vLLM V1 would be set up on a device: KV block and prefill chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineSetup {
    pub block_size: u64,
    pub max_num_batched_tokens: u64,
    /// The attention backend's smallest kernel block (FlashAttention 16, CPU 32).
    pub kernel_block: u64,
    /// Whether vLLM keeps Mamba-2 / Gated DeltaNet recurrent state in float32 (an x86
    /// CPU with AVX512-BF16: vllm/platforms/cpu.py:301-320).
    pub recurrent_f32: bool,
    /// Prefix caching, vLLM's default (on): a hybrid model's state pages depend on it.
    pub prefix_caching: bool,
}

/// vLLM's setup on this class of device; `None` where vLLM does not run (phones).
/// The prefill chunk is `vllm serve`'s default (`EngineArgs.get_batch_defaults` in
/// vllm/engine/arg_utils.py): 8192 on a GPU of 70 GiB or more that is not an A100,
/// else 2048 (CPUs too).
pub fn engine_setup(profile: &Profile) -> Option<EngineSetup> {
    let big_gpu = |bytes: Option<u64>, name: &str| {
        bytes.is_some_and(|b| b >= 70 * GIB_BYTES) && !name.to_ascii_lowercase().contains("a100")
    };
    let (block_size, max_num_batched_tokens) = match profile.hardware_class {
        HardwareClass::X86Cpu | HardwareClass::Arm64Cpu => (CPU_BLOCK_TOKENS, 2048),
        HardwareClass::CudaDiscrete => {
            let gpu = profile
                .gpus
                .iter()
                .find(|g| g.vendor.eq_ignore_ascii_case("nvidia"));
            let big = gpu.is_some_and(|g| big_gpu(g.memory_bytes, g.name.as_deref().unwrap_or("")));
            (GPU_BLOCK_TOKENS, if big { 8192 } else { 2048 })
        }
        HardwareClass::Jetson => {
            let big = big_gpu(profile.memory.total_bytes, "jetson");
            (GPU_BLOCK_TOKENS, if big { 8192 } else { 2048 })
        }
        HardwareClass::NpuPhone => return None,
    };
    let cpu = block_size == CPU_BLOCK_TOKENS;
    Some(EngineSetup {
        block_size,
        max_num_batched_tokens,
        kernel_block: if cpu {
            memory_hybrid::CPU_KERNEL_BLOCK
        } else {
            memory_hybrid::GPU_KERNEL_BLOCK
        },
        recurrent_f32: profile.hardware_class == HardwareClass::X86Cpu
            && profile.cpu.has_flag("avx512_bf16"),
        prefix_caching: true,
    })
}

/// vLLM's KV layout for one sequence: the group size, the groups by kind, the bytes,
/// the block size (raised for a hybrid model's state page) and the state layers.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineLayout {
    pub group_size: u64,
    pub groups: Vec<EngineGroup>,
    pub bytes_per_sequence: u64,
    pub block_size: u64,
    pub state: Option<EngineState>,
}

/// The KV cache vLLM V1 allocates one sequence of `context` tokens: per layer, whole
/// blocks of the full context (`FullAttentionSpec.max_memory_usage_bytes`) or of
/// `min(window - 1 + max_num_batched_tokens, context)` tokens plus one block
/// (`SlidingWindowSpec.max_memory_usage_bytes`, vllm/v1/kv_cache_interface.py); a
/// hybrid model's state layers a few padded pages each ([`memory_hybrid`]), the block
/// raised to hold one; layers grouped by kind into groups of equal size, the last group
/// of a kind padded (`_get_kv_cache_groups_uniform_page_size`,
/// vllm/v1/core/kv_cache_utils.py:1362-1502), and a sequence paying each group's blocks
/// at one page per layer slot (`_max_memory_usage_bytes_from_groups`, 2337-2366).
pub fn engine_layout(
    model: &ModelShape,
    context: u64,
    dtype: KvDtype,
    setup: EngineSetup,
) -> EngineLayout {
    let per_token = model.kv_bytes_per_token_per_layer(dtype.bytes());
    let hybrid = memory_hybrid::hybrid_state(
        model,
        per_token,
        StateSetup {
            block_size: setup.block_size,
            kernel_block: setup.kernel_block,
            recurrent_f32: setup.recurrent_f32,
            prefix_caching: setup.prefix_caching,
        },
    );
    let block = hybrid.as_ref().map_or(setup.block_size, |h| h.0);
    let page = block.saturating_mul(per_token);
    let (full, sliding, _) = model.layer_kind_counts();
    // (kind, layers, blocks per sequence, pages when a state kind)
    let mut kinds: Vec<(LayerKindName, u64, u64, Option<u64>)> = Vec::new();
    if full > 0 {
        kinds.push((
            LayerKindName::FullAttention,
            full,
            context.div_ceil(block),
            None,
        ));
    }
    if sliding > 0 {
        let window = model.sliding_window.unwrap_or(context);
        let held = (window.saturating_sub(1))
            .saturating_add(setup.max_num_batched_tokens)
            .min(context);
        kinds.push((
            LayerKindName::SlidingAttention,
            sliding,
            held.div_ceil(block) + 1,
            None,
        ));
    }
    if let Some((_, state)) = &hybrid {
        let pages = state.pages_per_sequence;
        kinds.push((
            LayerKindName::LinearAttention,
            state.layers,
            pages,
            Some(pages),
        ));
    }
    let min = kinds.iter().map(|k| k.1).min().unwrap_or(0);
    let max = kinds.iter().map(|k| k.1).max().unwrap_or(0);
    // vLLM takes the smaller count as the group size, or the larger one when it is
    // under 1.5 times the smaller (`max_num_layers < min_num_layers * 1.5`,
    // vllm/v1/core/kv_cache_utils.py:1467-1478).
    let group_size = if 2 * max < 3 * min { max } else { min };
    let mut per_sequence = 0u64;
    let groups = kinds
        .into_iter()
        .map(|(kind, layers, blocks, pages)| {
            let groups = layers.div_ceil(group_size.max(1));
            let slots = groups * group_size;
            let bytes = slots.saturating_mul(blocks).saturating_mul(page);
            per_sequence = per_sequence.saturating_add(bytes);
            EngineGroup {
                kind,
                layers,
                groups,
                padding_layers: slots - layers,
                tokens_per_sequence: if pages.is_some() { 0 } else { blocks * block },
                pages_per_sequence: pages,
                bytes,
            }
        })
        .collect();
    EngineLayout {
        group_size,
        groups,
        bytes_per_sequence: per_sequence,
        block_size: block,
        state: hybrid.map(|h| h.1),
    }
}

/// The fit of `request` on `profile` with `path`.
pub fn fit(profile: &Profile, path: &PathSpec, request: &FitRequest) -> MemoryFit {
    let model = &request.model;
    let (context, seqs, dtype) = (request.context, request.concurrency, request.kv_dtype);
    let weights = weight_bytes(model, path);
    let weights_bytes = weights.total();
    let parts = kv_parts(model, context, seqs, dtype);
    let kv_bytes = parts.iter().map(|p| p.bytes).fold(0, u64::saturating_add);
    let kv_flat_bytes = flat_kv_bytes(model, context, seqs, dtype);
    let room = room(profile, request.headroom, weights_bytes);
    let cpu_vllm = vllm_on_cpu(profile, path);
    // vLLM reads 0 (or unset) as "size it yourself", so under 1 GiB nothing is stated.
    let cpu_kv_cache_bytes = room
        .kv_space
        .map(|s| s / GIB_BYTES * GIB_BYTES)
        .filter(|b| cpu_vllm && *b >= GIB_BYTES);

    let setup = engine_setup(profile).filter(|_| path.runs_in_vllm);
    let engine = setup.map(|setup| engine_kv(request, setup, cpu_vllm, room.kv_space));
    let kv_engine_bytes = engine
        .as_ref()
        .map(|e| e.bytes_per_sequence.saturating_mul(seqs));

    // What decides: the engine's allocation where vLLM runs, else the architecture's.
    let space = match &engine {
        Some(e) => e.kv_space_bytes,
        None => room.kv_space,
    };
    let need = |n: u64, c: u64| kv_needed(model, setup, dtype, n, c);
    let weights_fit = room.usable.map(|u| weights_bytes <= u);
    let fits = weights_fit
        .zip(space)
        .map(|(w, s)| w && need(context, seqs) <= s);
    let context_limit = model.context_limit.as_ref().map(|l| l.tokens);
    let (max_context, max_concurrency) = limits(request, weights_fit, space, &need);
    let beyond_context_limit = context_limit.is_some_and(|l| context > l);

    let mut fit = MemoryFit {
        model: model.name.clone(),
        context,
        concurrency: seqs,
        kv_dtype: dtype,
        weights_bytes,
        weights,
        kv_bytes,
        kv_flat_bytes,
        kv_saved_bytes: kv_flat_bytes.saturating_sub(kv_bytes),
        kv_by_layer_kind: parts,
        kv_engine_bytes,
        engine,
        context_limit,
        context_limit_source: model.context_limit.as_ref().map(|l| l.source.clone()),
        beyond_context_limit,
        active_params_per_token: model.moe.as_ref().map(|_| model.active_params_per_token()),
        budget_bytes: room.budget_bytes,
        budget_source: room.budget_source,
        headroom: request.headroom,
        headroom_bytes: room.headroom_bytes,
        fits,
        max_context,
        max_concurrency,
        cpu_kv_cache_bytes,
        llama_cpp: None,
        notes: Vec::new(),
    };
    fit.notes = fit_notes(profile, path, model, &fit);
    fit
}

/// The figures an engine's own fit (llama.cpp's) hands to [`fit_from_parts`].
pub(super) struct EngineParts<'a> {
    pub weights: WeightBytes,
    /// Resident weight bytes (the file, and any copy the engine makes).
    pub weights_bytes: u64,
    /// Bytes whatever the context (a compute buffer's fixed part).
    pub fixed_bytes: u64,
    /// The KV cache at the asked context and sequences.
    pub kv_bytes: u64,
    /// What grows with `(context, sequences)`: the KV and anything sized like it.
    pub need: &'a dyn Fn(u64, u64) -> u64,
}

/// A fit from an engine's own figures (llama.cpp's): `fits` and the limits are
/// decided on them.
pub(super) fn fit_from_parts(
    profile: &Profile,
    request: &FitRequest,
    parts_in: EngineParts<'_>,
) -> MemoryFit {
    let EngineParts {
        weights,
        weights_bytes,
        fixed_bytes,
        kv_bytes,
        need: kv_need,
    } = parts_in;
    let model = &request.model;
    let (context, seqs, dtype) = (request.context, request.concurrency, request.kv_dtype);
    let parts = kv_parts(model, context, seqs, dtype);
    let kv_flat_bytes = flat_kv_bytes(model, context, seqs, dtype);
    let room = room(
        profile,
        request.headroom,
        weights_bytes.saturating_add(fixed_bytes),
    );
    let weights_fit = room
        .usable
        .map(|u| weights_bytes.saturating_add(fixed_bytes) <= u);
    let fits = weights_fit
        .zip(room.kv_space)
        .map(|(w, s)| w && kv_need(context, seqs) <= s);
    let (max_context, max_concurrency) = limits(request, weights_fit, room.kv_space, kv_need);
    let context_limit = model.context_limit.as_ref().map(|l| l.tokens);
    MemoryFit {
        model: model.name.clone(),
        context,
        concurrency: seqs,
        kv_dtype: dtype,
        weights_bytes,
        weights,
        kv_bytes,
        kv_flat_bytes,
        kv_saved_bytes: kv_flat_bytes.saturating_sub(kv_bytes),
        kv_by_layer_kind: parts,
        kv_engine_bytes: None,
        engine: None,
        context_limit,
        context_limit_source: model.context_limit.as_ref().map(|l| l.source.clone()),
        beyond_context_limit: context_limit.is_some_and(|l| context > l),
        active_params_per_token: model.moe.as_ref().map(|_| model.active_params_per_token()),
        budget_bytes: room.budget_bytes,
        budget_source: room.budget_source,
        headroom: request.headroom,
        headroom_bytes: room.headroom_bytes,
        fits,
        max_context,
        max_concurrency,
        cpu_kv_cache_bytes: None,
        llama_cpp: None,
        notes: model_notes(model, context),
    }
}

/// The KV cache if every attention layer held the whole context ("flat"), for `seqs`
/// sequences; linear-attention layers hold no KV.
fn flat_kv_bytes(model: &ModelShape, context: u64, seqs: u64, dtype: KvDtype) -> u64 {
    let (full, sliding, _) = model.layer_kind_counts();
    (full + sliding)
        .saturating_mul(model.kv_bytes_per_token_per_layer(dtype.bytes()))
        .saturating_mul(context)
        .saturating_mul(seqs)
}

/// The device's budget, the headroom kept free of it, and what is left for the model.
struct Room {
    budget_bytes: Option<u64>,
    budget_source: String,
    headroom_bytes: Option<u64>,
    /// The budget less the headroom.
    usable: Option<u64>,
    /// What `usable` leaves for the KV cache once the weights are in.
    kv_space: Option<u64>,
}

/// The [`Room`] on `profile` for weights of `weights_bytes`, keeping `headroom` free.
fn room(profile: &Profile, headroom: f64, weights_bytes: u64) -> Room {
    let (budget_bytes, budget_source) = budget(profile);
    let headroom_bytes = budget_bytes.map(|b| (b as f64 * headroom) as u64);
    let usable = budget_bytes.zip(headroom_bytes).map(|(b, h)| b - h.min(b));
    Room {
        budget_bytes,
        budget_source,
        headroom_bytes,
        usable,
        kv_space: usable.map(|u| u.saturating_sub(weights_bytes)),
    }
}

/// True when `path` runs in vLLM's CPU backend on this profile.
fn vllm_on_cpu(profile: &Profile, path: &PathSpec) -> bool {
    path.runs_in_vllm
        && matches!(
            profile.hardware_class,
            HardwareClass::X86Cpu | HardwareClass::Arm64Cpu
        )
}

/// The engine's KV figure for `request` under `setup`: its layout per sequence, and
/// the space it gets (whole GiB of `kv_space` on a CPU, all of it on a GPU).
fn engine_kv(
    request: &FitRequest,
    setup: EngineSetup,
    cpu_vllm: bool,
    kv_space: Option<u64>,
) -> EngineKv {
    let layout = engine_layout(&request.model, request.context, request.kv_dtype, setup);
    let mut state = layout.state;
    if let Some(s) = state.as_mut() {
        let off = EngineSetup {
            prefix_caching: false,
            ..setup
        };
        s.bytes_per_sequence_without_prefix_caching =
            engine_layout(&request.model, request.context, request.kv_dtype, off)
                .bytes_per_sequence;
    }
    let (kv_space_bytes, kv_space_source) = if cpu_vllm {
        (
            kv_space.map(|s| s / GIB_BYTES * GIB_BYTES),
            "whole GiB of the budget left after weights and headroom (stated to the engine)"
                .to_string(),
        )
    } else {
        (
            kv_space,
            format!(
                "gpu_memory_utilization {} of the budget, less the weights",
                gpu_utilization(request.headroom)
            ),
        )
    };
    EngineKv {
        block_size: layout.block_size,
        max_num_batched_tokens: setup.max_num_batched_tokens,
        group_size: layout.group_size,
        groups: layout.groups,
        bytes_per_sequence: layout.bytes_per_sequence,
        state,
        kv_space_bytes,
        kv_space_source,
    }
}

/// The KV bytes `c` sequences of `n` tokens need: the engine's allocation under
/// `setup` where vLLM runs, else the architecture's figure.
fn kv_needed(
    model: &ModelShape,
    setup: Option<EngineSetup>,
    dtype: KvDtype,
    n: u64,
    c: u64,
) -> u64 {
    match setup {
        Some(s) => engine_layout(model, n, dtype, s)
            .bytes_per_sequence
            .saturating_mul(c),
        None => kv_total(model, n, c, dtype),
    }
}

/// The longest context at the asked concurrency and the most sequences at the asked
/// context, given whether the weights fit and the KV `space`: (0, 0) when nothing
/// fits, `None`s when the budget is unknown.
fn limits(
    request: &FitRequest,
    weights_fit: Option<bool>,
    space: Option<u64>,
    need: &dyn Fn(u64, u64) -> u64,
) -> (Option<u64>, Option<u64>) {
    let (context, seqs) = (request.context, request.concurrency);
    let context_limit = request.model.context_limit.as_ref().map(|l| l.tokens);
    let search_to = context_limit.map_or(MAX_CONTEXT_SEARCHED, |l| l.min(MAX_CONTEXT_SEARCHED));
    match (weights_fit, space) {
        (Some(true), Some(space)) => {
            let ctx = largest(search_to, |n| need(n, seqs) <= space);
            let per_seq = need(context, 1).max(1);
            let most = (space / per_seq).min(u64::from(u32::MAX));
            (Some(ctx.unwrap_or(0)), Some(most))
        }
        (Some(false), _) | (Some(true), None) => (Some(0), Some(0)),
        (None, _) => (None, None),
    }
}

/// The fit's notes, in the order `plan` prints them: the model's, the engine's, then
/// the device's.
fn fit_notes(
    profile: &Profile,
    path: &PathSpec,
    model: &ModelShape,
    fit: &MemoryFit,
) -> Vec<String> {
    let mut notes = model_notes(model, fit.context);
    if path.lm_head == LmHead::Quantized && model.tie_word_embeddings {
        notes.push(format!(
            "{} ties its lm_head to the embedding; the {} build stores its own quantized lm_head as well ({} bytes)",
            model.name, path.name, fit.weights.lm_head
        ));
    }
    if let Some(e) = &fit.engine {
        notes.extend(engine_notes(model, e));
    }
    if vllm_on_cpu(profile, path) && fit.kv_dtype.bytes() < 2 {
        notes.push("vLLM's CPU backend ignores a quantized KV cache dtype and stores it as the model dtype; the figures use the dtype asked for".into());
    }
    if profile.hardware_class == HardwareClass::NpuPhone {
        notes.push("the exported QNN graph has a fixed context length: fitting means choosing the artifact to export, and RAM is shared with the phone's apps".into());
    }
    if fit.max_context == Some(MAX_CONTEXT_SEARCHED) {
        notes.push(format!(
            "the largest context is at least {MAX_CONTEXT_SEARCHED} tokens (the search stops there)"
        ));
    }
    notes
}

/// Notes on what the model's config implies: defaulted fields, a multimodal config,
/// latent attention, experts, and a context past the model's limit.
fn model_notes(model: &ModelShape, context: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if !model.defaulted.is_empty() {
        let family = model.model_type.as_deref().unwrap_or("the family");
        let class = model
            .model_type
            .as_deref()
            .and_then(crate::model::defaults_class)
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        notes.push(format!(
            "the config leaves out {}: {family}'s transformers defaults{class} were used",
            model.defaulted.join(", ")
        ));
    }
    notes.extend(model.assumed.iter().cloned());
    if model.multimodal {
        notes.push("a multimodal config: only the language model is sized; the vision (or audio) encoder's weights are not counted".into());
    }
    if let Some(q) = &model.quantized {
        notes.push(format!(
            "the config describes an already-quantized checkpoint ({q}): each path's weights are sized from the model's shape, and the build script quantizes from bf16 weights, so give it the original (unquantized) model"
        ));
    }
    if let Some(m) = &model.mla {
        notes.push(format!(
            "latent attention: the KV cache holds one compressed latent of {} values per token and layer (kv_lora_rank + qk_rope_head_dim), as vLLM caches it; transformers' own cache holds the decompressed K and V",
            m.kv_lora_rank + m.qk_rope_head_dim
        ));
    }
    if let Some(m) = &model.moe {
        notes.push(format!(
            "mixture of experts: {} experts ({} per token) in {} of {} layers; the weights hold every expert ({} linear parameters), a token passes through {} (decode speed follows the active parameters, memory the total)",
            m.num_experts,
            m.experts_per_token,
            m.sparse_layers,
            model.num_hidden_layers,
            model.decoder_linear_params(),
            model.active_params_per_token()
        ));
    }
    if let Some(l) = model.context_limit.as_ref().filter(|l| context > l.tokens) {
        notes.push(format!(
            "--context {context} is past the model's limit of {} tokens ({}): vLLM refuses a longer max_model_len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, and quality past the trained length is not assured",
            l.tokens, l.source
        ));
    }
    notes
}

/// Notes on the engine's layout: padding layers, and linear-attention state it leaves out.
fn engine_notes(model: &ModelShape, engine: &EngineKv) -> Vec<String> {
    let mut notes = Vec::new();
    let padding: u64 = engine.groups.iter().map(|g| g.padding_layers).sum();
    if padding > 0 {
        notes.push(format!(
            "vLLM groups the layers {} at a time and pads the last group of a kind: {padding} padding layer(s) are allocated like real ones",
            engine.group_size
        ));
    }
    match &engine.state {
        Some(s) => notes.push(state_note(s, engine.block_size)),
        None if model.linear_mixer_layers() > 0 => notes.push(
            "the linear-attention layers' mixer is not described, so their fixed-size state is not counted in either KV figure".into(),
        ),
        None => {}
    }
    notes
}

/// What the engine figure assumes for a hybrid model's state layers.
fn state_note(s: &EngineState, block: u64) -> String {
    let raised = if block > s.default_block_size {
        format!(
            "vLLM raises the KV block from {} to {block} tokens so that one block's KV page ({} bytes) holds one state page ({} bytes: conv state plus {} recurrent state), pads the state page to it and gives",
            s.default_block_size,
            s.page_bytes,
            s.state_bytes,
            s.recurrent_state_dtype.as_deref().unwrap_or("no")
        )
    } else {
        format!(
            "vLLM pads each state page ({} bytes) to one KV block's page ({} bytes) and gives",
            s.state_bytes, s.page_bytes
        )
    };
    format!(
        "hybrid model: {raised} each of the {} state layers {} page(s) per sequence; the figures assume prefix caching on (vLLM's default for hybrid models, mamba_cache_mode 'align'); with --no-enable-prefix-caching ('none') it keeps {} page and a sequence takes {} bytes",
        s.layers,
        s.pages_per_sequence,
        s.pages_per_sequence_without_prefix_caching,
        s.bytes_per_sequence_without_prefix_caching
    )
}

/// `gpu_memory_utilization` for a headroom fraction: the share vLLM may take.
pub(super) fn gpu_utilization(headroom: f64) -> f64 {
    ((1.0 - headroom) * 10_000.0).round() / 10_000.0
}

/// The one line `plan` prints on stderr when nothing fits (exit 3).
pub fn does_not_fit_line(device: &str, fit: &MemoryFit) -> String {
    let kv = fit.kv_engine_bytes.unwrap_or(fit.kv_bytes);
    let need = fit.weights_bytes.saturating_add(kv);
    let room = fit.budget_bytes.unwrap_or(0)
        - fit
            .headroom_bytes
            .unwrap_or(0)
            .min(fit.budget_bytes.unwrap_or(0));
    let which = if fit.kv_engine_bytes.is_some() {
        " as vLLM allocates it"
    } else {
        ""
    };
    let space = match &fit.engine {
        Some(e) if fit.cpu_kv_cache_bytes.is_some() || e.kv_space_bytes == Some(0) => {
            format!(
                " ({:.2} GiB of it for the KV cache)",
                e.kv_space_bytes.unwrap_or(0) as f64 / GIB
            )
        }
        _ => String::new(),
    };
    let head = format!(
        "{device}: {} at {} tokens x {} sequence(s) needs {:.2} GiB (weights {:.2} + KV {:.2}{which}) but {:.2} GiB is usable ({:.0}% headroom kept){space}",
        fit.model,
        fit.context,
        fit.concurrency,
        need as f64 / GIB,
        fit.weights_bytes as f64 / GIB,
        kv as f64 / GIB,
        room as f64 / GIB,
        fit.headroom * 100.0
    );
    let weights_fit = fit.weights_bytes <= room;
    let advice = match (
        fit.max_context.unwrap_or(0),
        fit.max_concurrency.unwrap_or(0),
    ) {
        _ if !weights_fit => {
            "; the weights alone do not fit: a smaller model or a lower-bit path is needed"
                .to_string()
        }
        (0, 0) => "; not one token of KV cache fits next to the weights".to_string(),
        (0, seqs) => format!(
            "; what fits: --concurrency {seqs} at {} tokens (no context fits {} sequences)",
            fit.context, fit.concurrency
        ),
        (ctx, 0) => format!(
            "; what fits: --context {ctx} (not one sequence at {} tokens)",
            fit.context
        ),
        (ctx, seqs) => format!(
            "; what fits: --context {ctx} at {} sequence(s), or --concurrency {seqs} at {} tokens",
            fit.concurrency, fit.context
        ),
    };
    format!("{head}{advice}")
}

/// `EDGEPLAN_*` variables for the fit.
pub fn env_vars(fit: &MemoryFit) -> Vec<(&'static str, String)> {
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let fits = match fit.fits {
        Some(true) => "1",
        Some(false) => "0",
        None => "",
    };
    let vars = vec![
        ("EDGEPLAN_MEMORY_FITS", fits.to_string()),
        ("EDGEPLAN_WEIGHTS_BYTES", fit.weights_bytes.to_string()),
        ("EDGEPLAN_KV_BYTES", fit.kv_bytes.to_string()),
        ("EDGEPLAN_KV_ENGINE_BYTES", opt(fit.kv_engine_bytes)),
        ("EDGEPLAN_BUDGET_BYTES", opt(fit.budget_bytes)),
        ("EDGEPLAN_MAX_CONTEXT", opt(fit.max_context)),
        ("EDGEPLAN_CONTEXT_LIMIT", opt(fit.context_limit)),
    ];
    vars
}

/// Rows for the one-device table.
pub fn rows(fit: &MemoryFit) -> Vec<(String, String)> {
    let mut rows = vec![
        model_row(fit),
        (
            "context x sequences".into(),
            format!(
                "{} x {}, KV {}",
                fit.context,
                fit.concurrency,
                fit.kv_dtype.as_str()
            ),
        ),
    ];
    rows.extend(weight_rows(fit));
    rows.extend(kv_rows(fit));
    rows.push(context_limit_row(fit));
    rows.extend(verdict_rows(fit));
    rows
}

/// The model's row: its name and how many layers of each kind it has.
fn model_row(fit: &MemoryFit) -> (String, String) {
    let layers = |kind| {
        let parts = fit.kv_by_layer_kind.iter().filter(|p| p.kind == kind);
        parts.map(|p| p.layers).sum::<u64>()
    };
    let (full, sliding, linear) = (
        layers(LayerKindName::FullAttention),
        layers(LayerKindName::SlidingAttention),
        layers(LayerKindName::LinearAttention),
    );
    (
        "model".into(),
        format!(
            "{} ({} layers: {} full, {} sliding, {} linear attention)",
            fit.model,
            full + sliding + linear,
            full,
            sliding,
            linear
        ),
    )
}

/// The weights' rows: the total, its parts, and for MoE the active parameters.
fn weight_rows(fit: &MemoryFit) -> Vec<(String, String)> {
    let gib = crate::output::gib_exact;
    let mut rows = vec![
        ("weights".into(), gib(fit.weights_bytes)),
        ("  linears".into(), gib(fit.weights.linears)),
        ("  embedding (bf16)".into(), gib(fit.weights.embedding)),
        ("  lm_head".into(), gib(fit.weights.lm_head)),
        ("  norms (bf16)".into(), gib(fit.weights.norms)),
    ];
    if fit.weights.router > 0 {
        rows.push(("  MoE routers (bf16)".into(), gib(fit.weights.router)));
    }
    if fit.weights.conv1d > 0 {
        rows.push(("  conv1d (bf16)".into(), gib(fit.weights.conv1d)));
    }
    if let Some(active) = fit.active_params_per_token {
        rows.push((
            "active params/token".into(),
            format!("{active} (of the weights above, per decoded token)"),
        ));
    }
    rows
}

/// The KV cache's rows: by layer type, flat, and where vLLM runs its allocation and
/// the space it gets.
fn kv_rows(fit: &MemoryFit) -> Vec<(String, String)> {
    let gib = crate::output::gib_exact;
    let mut rows = vec![
        ("KV cache by layer type".into(), gib(fit.kv_bytes)),
        (
            "KV cache, flat".into(),
            format!(
                "{} (per-layer-type saves {})",
                gib(fit.kv_flat_bytes),
                gib(fit.kv_saved_bytes)
            ),
        ),
    ];
    if let Some(l) = &fit.llama_cpp {
        rows.push((
            "llama.cpp allocates".into(),
            format!(
                "weights {} ({} file {}{}{}), KV {} ({} cells x {} stream(s), f16), compute {} (estimate)",
                gib(fit.weights_bytes),
                l.file_type,
                gib(l.file_bytes),
                if l.repacked_bytes > 0 {
                    format!(" + repacked copies {}", gib(l.repacked_bytes))
                } else {
                    String::new()
                },
                if l.duplicated_head_bytes > 0 {
                    format!(" + tied head copy {}", gib(l.duplicated_head_bytes))
                } else {
                    String::new()
                },
                gib(l.kv_bytes),
                l.kv_cells_per_stream,
                l.kv_streams,
                gib(l.compute_bytes)
            ),
        ));
    }
    if let (Some(bytes), Some(e)) = (fit.kv_engine_bytes, &fit.engine) {
        let kinds: Vec<String> = e
            .groups
            .iter()
            .map(|g| {
                let kind = match g.kind {
                    LayerKindName::FullAttention => "full",
                    LayerKindName::SlidingAttention => "sliding",
                    LayerKindName::LinearAttention => "linear",
                };
                match g.pages_per_sequence {
                    Some(pages) => format!("{} state x {pages} page(s)", g.groups * e.group_size),
                    None => format!(
                        "{} {kind} x {} tokens",
                        g.groups * e.group_size,
                        g.tokens_per_sequence
                    ),
                }
            })
            .collect();
        let mode = match &e.state {
            Some(s) if s.prefix_caching => "; prefix caching on (mamba_cache_mode align)",
            Some(_) => "; prefix caching off (mamba_cache_mode none)",
            None => "",
        };
        rows.push((
            "KV cache, vLLM allocates".into(),
            format!(
                "{} ({}; {}-token blocks, prefill chunk {}{mode})",
                gib(bytes),
                kinds.join(", "),
                e.block_size,
                e.max_num_batched_tokens
            ),
        ));
        if let Some(space) = e.kv_space_bytes {
            rows.push((
                "KV space for vLLM".into(),
                format!("{}: {}", gib(space), e.kv_space_source),
            ));
        }
    }
    rows
}

/// The model's context limit, flagged when `--context` is past it.
fn context_limit_row(fit: &MemoryFit) -> (String, String) {
    (
        "context limit".into(),
        match (&fit.context_limit, &fit.context_limit_source) {
            (Some(l), Some(src)) if fit.beyond_context_limit => {
                format!("{l} tokens ({src}): --context {} IS PAST IT", fit.context)
            }
            (Some(l), Some(src)) => format!("{l} tokens ({src})"),
            _ => "unknown (the config has no max_position_embeddings)".into(),
        },
    )
}

/// The verdict's rows: budget, headroom, whether it fits, the limits found.
fn verdict_rows(fit: &MemoryFit) -> Vec<(String, String)> {
    let pct = |v: f64| format!("{:.0}%", v * 100.0);
    vec![
        (
            "budget".into(),
            match fit.budget_bytes {
                Some(b) => format!("{}: {}", crate::output::gib_exact(b), fit.budget_source),
                None => format!("unknown: {}", fit.budget_source),
            },
        ),
        (
            "headroom".into(),
            match fit.headroom_bytes {
                Some(h) => format!("{} = {}", pct(fit.headroom), crate::output::gib_exact(h)),
                None => pct(fit.headroom),
            },
        ),
        (
            "fits".into(),
            match fit.fits {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "unknown (no budget)".into(),
            },
        ),
        (
            "largest context".into(),
            fit.max_context
                .map(|c| format!("{c} tokens at {} sequence(s)", fit.concurrency))
                .unwrap_or_else(|| "unknown".into()),
        ),
        (
            "most sequences".into(),
            fit.max_concurrency
                .map(|c| format!("{c} at {} tokens", fit.context))
                .unwrap_or_else(|| "unknown".into()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::catalog::{Catalog, PathId};

    fn qwen() -> ModelShape {
        ModelShape::load("qwen3-1.7b").unwrap()
    }

    #[test]
    fn qwen3_1_7b_weights_by_hand() {
        let c = Catalog::builtin();
        // Linears: 28 x 50,331,648 params; at 4.25 bits = x 17/32.
        let w = weight_bytes(&qwen(), c.path(PathId::W4a8Amx));
        assert_eq!(
            w,
            WeightBytes {
                linears: 748_683_264,
                embedding: 622_329_856,
                lm_head: 165_306_368,
                norms: 233_472,
                router: 0,
                conv1d: 0
            }
        );
        // bf16: 2 bytes per weight and the tied head shares the embedding.
        let w = weight_bytes(&qwen(), c.path(PathId::Bf16));
        assert_eq!(
            w,
            WeightBytes {
                linears: 2_818_572_288,
                embedding: 622_329_856,
                lm_head: 0,
                norms: 233_472,
                router: 0,
                conv1d: 0
            }
        );
    }

    fn shape(text: &str) -> ModelShape {
        ModelShape::from_config_json(text, "t.json").unwrap()
    }

    #[test]
    fn engine_layout_pads_the_last_group_of_a_kind() {
        // gemma-3-1b: 26 layers, every 6th global: 4 full, 22 sliding (window 512);
        // 1 KV head of 256: 1,024 B per token per layer.
        let m = shape(
            r#"{"model_type": "gemma3_text", "num_hidden_layers": 26, "num_key_value_heads": 1,
            "sliding_window": 512}"#,
        );
        let setup = EngineSetup {
            block_size: 16,
            max_num_batched_tokens: 8192,
            kernel_block: 16,
            recurrent_f32: false,
            prefix_caching: true,
        };
        let EngineLayout {
            group_size: g,
            groups,
            bytes_per_sequence: bytes,
            ..
        } = engine_layout(&m, 32768, KvDtype::Bf16, setup);
        assert_eq!(g, 4, "the smaller count: 22 is not under 1.5 x 4");
        assert_eq!((groups[0].groups, groups[0].padding_layers), (1, 0));
        // 22 sliding layers fill 6 groups of 4: 2 padding layers.
        assert_eq!((groups[1].groups, groups[1].padding_layers), (6, 2));
        // min(511 + 8192, 32768) = 8703 tokens: 544 blocks, plus one = 8,720 tokens.
        assert_eq!(groups[1].tokens_per_sequence, 8720);
        assert_eq!(bytes, 1024 * (4 * 32768 + 24 * 8720));
        // Short contexts: a sliding layer holds the whole context, plus a block.
        let EngineLayout { groups, .. } = engine_layout(&m, 100, KvDtype::Bf16, setup);
        assert_eq!(groups[0].tokens_per_sequence, 112);
        assert_eq!(groups[1].tokens_per_sequence, 128);
    }

    #[test]
    fn engine_groups_take_the_larger_count_when_close() {
        // gpt-oss style, 25 layers alternating: 13 sliding, 12 full. 13 < 1.5 x 12, so
        // groups of 13 and one padding layer among the full ones (vLLM's own example).
        let m = shape(r#"{"model_type": "gpt_oss", "num_hidden_layers": 25}"#);
        let setup = EngineSetup {
            block_size: 16,
            max_num_batched_tokens: 2048,
            kernel_block: 16,
            recurrent_f32: false,
            prefix_caching: true,
        };
        let EngineLayout {
            group_size: g,
            groups,
            ..
        } = engine_layout(&m, 4096, KvDtype::Bf16, setup);
        assert_eq!(g, 13);
        assert_eq!(groups[0].padding_layers, 1);
        assert_eq!(groups[1].padding_layers, 0);
        // 5 full and 7 sliding: 7 < 1.5 x 5 = 7.5, so one group of 7 per kind (the
        // 1.25 rule vLLM no longer uses would have made groups of 5 and padded 3).
        let m = shape(
            r#"{"model_type": "gemma3_text", "num_hidden_layers": 12, "sliding_window": 512,
            "layer_types": ["full_attention", "sliding_attention", "full_attention",
            "sliding_attention", "full_attention", "sliding_attention", "full_attention",
            "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
            "sliding_attention"]}"#,
        );
        let EngineLayout {
            group_size: g,
            groups,
            ..
        } = engine_layout(&m, 4096, KvDtype::Bf16, setup);
        assert_eq!(g, 7);
        assert_eq!((groups[0].layers, groups[0].padding_layers), (5, 2));
        assert_eq!((groups[1].layers, groups[1].padding_layers), (7, 0));
        // 10 full and 15 sliding: 15 is not under 15, so groups of 10.
        let mut types = vec!["\"full_attention\""; 10];
        types.extend(vec!["\"sliding_attention\""; 15]);
        let m = shape(&format!(
            r#"{{"model_type": "gemma3_text", "num_hidden_layers": 25, "sliding_window": 512,
            "layer_types": [{}]}}"#,
            types.join(",")
        ));
        assert_eq!(engine_layout(&m, 4096, KvDtype::Bf16, setup).group_size, 10);
    }

    #[test]
    fn a_parallel_mamba_mixer_is_a_state_layer_beside_every_attention_layer() {
        // A Falcon-H1-0.5B shape: 36 layers, each attention (2 KV heads of 64) and a
        // Mamba-2 mixer (d_ssm 1536, 24 heads of 64, state 128): 36 + 36 layers, groups
        // of 36. vLLM's classes: state 403,968 B, block 16 x 50 = 800, page 409,600.
        let m = shape(
            r#"{"model_type": "falcon_h1", "hidden_size": 1024, "num_hidden_layers": 36,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "intermediate_size": 2048, "vocab_size": 32784, "mamba_d_ssm": 1536,
            "mamba_n_heads": 24, "mamba_d_head": 64, "mamba_d_state": 128,
            "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 2}"#,
        );
        let setup = EngineSetup {
            block_size: 16,
            max_num_batched_tokens: 8192,
            kernel_block: 16,
            recurrent_f32: false,
            prefix_caching: true,
        };
        let l = engine_layout(&m, 4096, KvDtype::Bf16, setup);
        assert_eq!((l.block_size, l.group_size), (800, 36));
        assert_eq!(l.state.as_ref().map(|s| s.layers), Some(36));
        // (ceil(4096 / 800) + 3 pages) x 36 layers x 409,600 B.
        assert_eq!(l.bytes_per_sequence, 132_710_400);
        let off = EngineSetup {
            prefix_caching: false,
            ..setup
        };
        assert_eq!(
            engine_layout(&m, 4096, KvDtype::Bf16, off).bytes_per_sequence,
            103_219_200
        );
    }

    #[test]
    fn engine_setup_per_class() {
        let g = 1u64 << 30;
        let cpu = profile(HardwareClass::X86Cpu, (Some(64 * g), Some(60 * g), None));
        assert_eq!(
            engine_setup(&cpu),
            Some(EngineSetup {
                block_size: 128,
                max_num_batched_tokens: 2048,
                kernel_block: 32,
                recurrent_f32: false,
                prefix_caching: true,
            })
        );
        // An AVX512-BF16 x86 CPU keeps the Mamba recurrent state in float32.
        let mut bf16_cpu = cpu.clone();
        bf16_cpu.cpu.flags.push("avx512_bf16".into());
        assert!(engine_setup(&bf16_cpu).unwrap().recurrent_f32);
        let mut gpu = profile(HardwareClass::CudaDiscrete, (None, None, None));
        gpu.gpus.push(crate::profile::Gpu {
            vendor: "nvidia".into(),
            name: Some("NVIDIA A100-SXM4-80GB".into()),
            memory_bytes: Some(80 * g),
            ..Default::default()
        });
        assert_eq!(
            engine_setup(&gpu).map(|s| s.max_num_batched_tokens),
            Some(2048),
            "vLLM keeps the small chunk on an A100"
        );
        gpu.gpus[0].name = Some("NVIDIA H100 80GB HBM3".into());
        assert_eq!(
            engine_setup(&gpu).map(|s| (s.block_size, s.max_num_batched_tokens)),
            Some((16, 8192))
        );
        let phone = profile(HardwareClass::NpuPhone, (Some(12 * g), Some(8 * g), None));
        assert_eq!(engine_setup(&phone), None);
    }

    #[test]
    fn kv_dtype_sizes() {
        assert_eq!(KvDtype::parse("fp8").map(KvDtype::bytes), Some(1));
        assert_eq!(KvDtype::parse("INT8").map(KvDtype::bytes), Some(1));
        assert_eq!(KvDtype::parse("bf16").map(KvDtype::bytes), Some(2));
        assert_eq!(KvDtype::parse("fp16").map(KvDtype::bytes), Some(2));
        assert_eq!(KvDtype::parse("f32").map(KvDtype::bytes), Some(4));
        assert_eq!(KvDtype::parse("fp4"), None);
    }

    #[test]
    fn largest_finds_the_boundary() {
        assert_eq!(largest(1000, |n| n <= 377), Some(377));
        assert_eq!(largest(1000, |_| true), Some(1000));
        assert_eq!(largest(1000, |_| false), None);
        assert_eq!(largest(1, |n| n <= 1), Some(1));
    }

    fn profile(class: HardwareClass, mem: (Option<u64>, Option<u64>, Option<u64>)) -> Profile {
        let mut p = Profile::from_json(
            r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
                "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
                "cpu": {"vendor": null, "model_name": null, "logical_cpus": 4, "usable_threads": 4,
                        "flags": [], "features": {}},
                "memory": {"total_bytes": null, "available_bytes": null, "limit_bytes": null}}"#,
            "t",
        )
        .unwrap();
        p.hardware_class = class;
        (
            p.memory.total_bytes,
            p.memory.available_bytes,
            p.memory.limit_bytes,
        ) = mem;
        p
    }

    #[test]
    fn cpu_budget_is_the_lower_of_available_and_the_cgroup_limit() {
        let g = 1u64 << 30;
        let b = |m| budget(&profile(HardwareClass::X86Cpu, m)).0;
        assert_eq!(b((Some(64 * g), Some(60 * g), Some(8 * g))), Some(8 * g));
        assert_eq!(b((Some(64 * g), Some(60 * g), Some(100 * g))), Some(60 * g));
        assert_eq!(
            b((Some(64 * g), None, None)),
            Some(64 * g),
            "MemTotal when MemAvailable is unknown"
        );
        assert_eq!(b((None, None, Some(4 * g))), Some(4 * g));
        assert_eq!(b((None, None, None)), None);
    }

    #[test]
    fn gpu_and_jetson_budgets() {
        let g = 1u64 << 30;
        let mut p = profile(
            HardwareClass::CudaDiscrete,
            (Some(512 * g), Some(500 * g), None),
        );
        assert_eq!(
            budget(&p).0,
            None,
            "no GPU listed: unknown, never the host RAM"
        );
        for mem in [Some(80 * g), Some(40 * g)] {
            p.gpus.push(crate::profile::Gpu {
                vendor: "nvidia".into(),
                memory_bytes: mem,
                ..Default::default()
            });
        }
        let (bytes, source) = budget(&p);
        assert_eq!(bytes, Some(80 * g));
        assert!(source.contains("the first of 2 GPUs"), "{source}");
        let jetson = profile(HardwareClass::Jetson, (Some(32 * g), Some(20 * g), None));
        assert_eq!(budget(&jetson).0, Some(32 * g - JETSON_OS_RESERVE));
    }

    #[test]
    fn fit_reports_zero_when_the_weights_alone_overflow() {
        let c = Catalog::builtin();
        let tiny = profile(HardwareClass::X86Cpu, (Some(1 << 30), Some(1 << 30), None));
        let req = FitRequest {
            model: qwen(),
            context: 1024,
            concurrency: 1,
            kv_dtype: KvDtype::Bf16,
            headroom: 0.1,
        };
        let f = fit(&tiny, c.path(PathId::W4a16), &req);
        assert_eq!(
            (f.fits, f.max_context, f.max_concurrency),
            (Some(false), Some(0), Some(0))
        );
        assert!(does_not_fit_line("d", &f).contains("the weights alone do not fit"));
        assert_eq!(
            f.cpu_kv_cache_bytes, None,
            "0 would tell vLLM to size it itself"
        );
    }
}
