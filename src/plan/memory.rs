//! The memory fit: will this model, at this context and concurrency, fit on the device
//! with the planned weight path? Pure arithmetic over a [`ModelShape`], the chosen
//! [`PathSpec`] and the profile's memory facts; docs/memory.md has the formulas and a
//! worked example.
//!
//! - **Weights**: the decoder linears at the path's bits per weight; the embedding and
//!   norms at bf16; the lm_head as the path keeps it (a 4-bit path stores its own
//!   quantized copy, untied from the embedding, so a tied model pays for it on top; a
//!   16-bit path shares a tied embedding and stores an untied head at 16 bits).
//! - **KV cache**: `2 (K, V) × kv_heads × head_dim × dtype bytes` per token per layer,
//!   for `context` tokens on full-attention layers, `min(context, window)` on sliding
//!   ones, none on linear-attention layers, times the concurrent sequences. The "flat"
//!   figure charges every layer the whole context (what an engine without hybrid-cache
//!   support allocates); both are reported, and their difference.
//! - **Budget**: CPU classes (and phones) the usable RAM: MemAvailable, or the cgroup
//!   limit when that is lower; a discrete GPU its memory (one GPU; unknown when the
//!   profile has no figure); a Jetson its unified memory less [`JETSON_OS_RESERVE`].
//!   A headroom fraction (default [`DEFAULT_HEADROOM`]) is kept free.
//!
//! Not in here: activations, the allocator's overhead and the engine's own buffers,
//! which the headroom stands in for.

use serde::{Deserialize, Serialize};

use super::catalog::{LmHead, PathSpec};
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
    /// For CPU paths in vLLM: `VLLM_CPU_KVCACHE_SPACE` in GiB (floor) from the budget;
    /// `null` under 1 GiB, since vLLM reads 0 as "choose for me".
    pub vllm_cpu_kvcache_space_gib: Option<u64>,
    pub notes: Vec<String>,
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
    WeightBytes {
        linears: bytes_at(model.decoder_linear_params(), bits),
        embedding: model.embedding_params() * 2,
        lm_head,
        norms: model.norm_params() * 2,
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
    let m = &profile.memory;
    match profile.hardware_class {
        HardwareClass::CudaDiscrete => {
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
            match nvidia.first() {
                Some(gpu) => match gpu.memory_bytes {
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
                },
                None => (
                    None,
                    "GPU memory unknown: the profile lists no NVIDIA GPU".into(),
                ),
            }
        }
        HardwareClass::Jetson => match m.total_bytes {
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
        },
        HardwareClass::X86Cpu | HardwareClass::Arm64Cpu | HardwareClass::NpuPhone => {
            // The probe's budget already discounts reclaimable page cache (probe.md §4):
            // profile.rs prefers it over the raw figures it was computed from.
            match m.ram_budget() {
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

/// The fit of `request` on `profile` with `path`.
pub fn fit(profile: &Profile, path: &PathSpec, request: &FitRequest) -> MemoryFit {
    let model = &request.model;
    let weights = weight_bytes(model, path);
    let weights_bytes = weights.linears + weights.embedding + weights.lm_head + weights.norms;
    let parts = kv_parts(
        model,
        request.context,
        request.concurrency,
        request.kv_dtype,
    );
    let kv_bytes = parts.iter().map(|p| p.bytes).fold(0, u64::saturating_add);
    let kv_flat_bytes = model
        .num_hidden_layers
        .saturating_mul(model.kv_bytes_per_token_per_layer(request.kv_dtype.bytes()))
        .saturating_mul(request.context)
        .saturating_mul(request.concurrency);
    let (budget_bytes, budget_source) = budget(profile);
    let headroom_bytes = budget_bytes.map(|b| (b as f64 * request.headroom) as u64);
    let usable = budget_bytes.zip(headroom_bytes).map(|(b, h)| b - h.min(b));
    let kv_space = usable.map(|u| u.saturating_sub(weights_bytes));
    let fits = usable.map(|u| weights_bytes.saturating_add(kv_bytes) <= u);
    let (max_context, max_concurrency) = match (usable, kv_space) {
        (Some(room), Some(space)) if weights_bytes <= room => {
            let kv = |n, c| kv_total(model, n, c, request.kv_dtype);
            let ctx = largest(MAX_CONTEXT_SEARCHED, |n| {
                kv(n, request.concurrency) <= space
            });
            let seqs = largest(u64::from(u32::MAX), |c| kv(request.context, c) <= space);
            (Some(ctx.unwrap_or(0)), Some(seqs.unwrap_or(0)))
        }
        (Some(_), _) => (Some(0), Some(0)),
        (None, _) => (None, None),
    };
    let cpu_vllm = path.runs_in_vllm
        && matches!(
            profile.hardware_class,
            HardwareClass::X86Cpu | HardwareClass::Arm64Cpu
        );
    // vLLM reads 0 (or unset) as "size it yourself", so under 1 GiB nothing is stated.
    let vllm_cpu_kvcache_space_gib = kv_space
        .map(|s| (s as f64 / GIB).floor() as u64)
        .filter(|g| cpu_vllm && *g >= 1);

    let mut notes = Vec::new();
    if path.lm_head == LmHead::Quantized && model.tie_word_embeddings {
        notes.push(format!(
            "{} ties its lm_head to the embedding; the {} build stores its own quantized lm_head as well ({} bytes)",
            model.name, path.name, weights.lm_head
        ));
    }
    if cpu_vllm && request.kv_dtype.bytes() < 2 {
        notes.push("vLLM's CPU backend ignores a quantized KV cache dtype and stores it as the model dtype; the figures use the dtype asked for".into());
    }
    if profile.hardware_class == HardwareClass::NpuPhone {
        notes.push("the exported QNN graph has a fixed context length: fitting means choosing the artifact to export, and RAM is shared with the phone's apps".into());
    }
    if max_context == Some(MAX_CONTEXT_SEARCHED) {
        notes.push(format!(
            "the largest context is at least {MAX_CONTEXT_SEARCHED} tokens (the search stops there)"
        ));
    }
    MemoryFit {
        model: model.name.clone(),
        context: request.context,
        concurrency: request.concurrency,
        kv_dtype: request.kv_dtype,
        weights_bytes,
        weights,
        kv_bytes,
        kv_flat_bytes,
        kv_saved_bytes: kv_flat_bytes.saturating_sub(kv_bytes),
        kv_by_layer_kind: parts,
        budget_bytes,
        budget_source,
        headroom: request.headroom,
        headroom_bytes,
        fits,
        max_context,
        max_concurrency,
        vllm_cpu_kvcache_space_gib,
        notes,
    }
}

/// Bytes as GiB with two decimals, plus the exact count.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB ({bytes} B)", bytes as f64 / GIB)
}

/// The one line `plan` prints on stderr when nothing fits (exit 3).
pub fn does_not_fit_line(device: &str, fit: &MemoryFit) -> String {
    let need = fit.weights_bytes.saturating_add(fit.kv_bytes);
    let room = fit.budget_bytes.unwrap_or(0)
        - fit
            .headroom_bytes
            .unwrap_or(0)
            .min(fit.budget_bytes.unwrap_or(0));
    let head = format!(
        "{device}: {} at {} tokens x {} sequence(s) needs {:.2} GiB (weights {:.2} + KV {:.2}) but {:.2} GiB is usable ({:.0}% headroom kept)",
        fit.model,
        fit.context,
        fit.concurrency,
        need as f64 / GIB,
        fit.weights_bytes as f64 / GIB,
        fit.kv_bytes as f64 / GIB,
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
        (0, _) => "; not one token of KV cache fits next to the weights".to_string(),
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
    let mut vars = vec![
        ("EDGEPLAN_MEMORY_FITS", fits.to_string()),
        ("EDGEPLAN_WEIGHTS_BYTES", fit.weights_bytes.to_string()),
        ("EDGEPLAN_KV_BYTES", fit.kv_bytes.to_string()),
        ("EDGEPLAN_BUDGET_BYTES", opt(fit.budget_bytes)),
        ("EDGEPLAN_MAX_CONTEXT", opt(fit.max_context)),
    ];
    if let Some(gib) = fit.vllm_cpu_kvcache_space_gib {
        vars.push(("EDGEPLAN_VLLM_CPU_KVCACHE_SPACE", gib.to_string()));
    }
    vars
}

/// Rows for the one-device table.
pub fn rows(fit: &MemoryFit) -> Vec<(String, String)> {
    let layers = |kind| {
        let parts = fit.kv_by_layer_kind.iter().filter(|p| p.kind == kind);
        parts.map(|p| p.layers).sum::<u64>()
    };
    let (full, sliding, linear) = (
        layers(LayerKindName::FullAttention),
        layers(LayerKindName::SlidingAttention),
        layers(LayerKindName::LinearAttention),
    );
    let pct = |v: f64| format!("{:.0}%", v * 100.0);
    let mut rows = vec![
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
        ),
        (
            "context x sequences".into(),
            format!(
                "{} x {}, KV {}",
                fit.context,
                fit.concurrency,
                fit.kv_dtype.as_str()
            ),
        ),
        ("weights".into(), gib(fit.weights_bytes)),
        ("  linears".into(), gib(fit.weights.linears)),
        ("  embedding (bf16)".into(), gib(fit.weights.embedding)),
        ("  lm_head".into(), gib(fit.weights.lm_head)),
        ("  norms (bf16)".into(), gib(fit.weights.norms)),
        ("KV cache by layer type".into(), gib(fit.kv_bytes)),
        (
            "KV cache, flat".into(),
            format!(
                "{} (per-layer-type saves {})",
                gib(fit.kv_flat_bytes),
                gib(fit.kv_saved_bytes)
            ),
        ),
        (
            "budget".into(),
            match fit.budget_bytes {
                Some(b) => format!("{}: {}", gib(b), fit.budget_source),
                None => format!("unknown: {}", fit.budget_source),
            },
        ),
        (
            "headroom".into(),
            match fit.headroom_bytes {
                Some(h) => format!("{} = {}", pct(fit.headroom), gib(h)),
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
    ];
    if let Some(g) = fit.vllm_cpu_kvcache_space_gib {
        rows.push((
            "VLLM_CPU_KVCACHE_SPACE".into(),
            format!("{g} (GiB, floor of the budget left after weights and headroom)"),
        ));
    }
    rows
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
                norms: 233_472
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
                norms: 233_472
            }
        );
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
        let f = fit(&tiny, c.path(PathId::W4a16Tinygemm), &req);
        assert_eq!(
            (f.fits, f.max_context, f.max_concurrency),
            (Some(false), Some(0), Some(0))
        );
        assert!(does_not_fit_line("d", &f).contains("the weights alone do not fit"));
        assert_eq!(
            f.vllm_cpu_kvcache_space_gib, None,
            "0 would tell vLLM to size it itself"
        );
    }
}
