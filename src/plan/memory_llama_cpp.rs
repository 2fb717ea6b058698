//! llama.cpp's memory fit: the bytes llama-server allocates for a GGUF file, as the
//! llama.cpp tree vendored in llama-cpp-python 0.3.36 (ggml-org/llama.cpp@0c1e57098)
//! lays them out. Pure: the caller gives the model, the path and the profile.
//!
//! - **Weights**, tensor by tensor, in the type llama-quantize gives each
//!   (src/llama-quant.cpp `llama_tensor_get_type_impl`): the file type's default type;
//!   the output head, or a tied embedding that doubles as it, in Q6_K (Q8_0 when its
//!   rows are not a multiple of the type's block); in Q4_K_M, Q6_K for `attn_v` and
//!   `ffn_down` in the layers `use_more_bits` picks; a type whose block does not divide
//!   the row falls back (Q4_K to Q5_0, Q6_K to Q8_0, then F16); 1-D tensors (norms) stay
//!   F32 (the converter writes them so, conversion/base.py). Bytes per block from
//!   ggml-common.h. A tied embedding is held twice when the head's copy goes to another
//!   buffer than the embedding's (a repacked or GPU buffer: src/llama-model-loader.cpp).
//! - **KV cache**: `--ctx-size` padded to 256 cells, split into `--parallel` streams of
//!   `ctx / parallel` cells each, padded to 256 (src/llama-context.cpp); per layer
//!   K and V of `n_kv_heads x head_dim` f16 elements per cell (src/llama-kv-cache.cpp);
//!   sliding-window layers hold `min(cells, window + ubatch)` padded to 256 per stream
//!   (src/llama-kv-cache-iswa.cpp).
//! - **Compute buffer**: an estimate (see [`compute_bytes`]).

use super::catalog::PathSpec;
use super::memory::{self, FitRequest, KvDtype, LlamaCppMemory, MemoryFit, WeightBytes};
use crate::contract::gguf::{FileType, GgmlType, Role, tensor_type};
use crate::model::{LayerKind, ModelShape};
use crate::profile::{Arch, HardwareClass, Profile};

/// The micro-batch llama-server runs with (the plan states `--ubatch-size 512`).
pub const UBATCH: u64 = 512;
/// llama.cpp pads the context and each stream's cells to this (llama-context.cpp:290).
const CELL_PAD: u64 = 256;

/// Which weights the CPU backend copies into a repacked (or AMX) buffer at load, on
/// this device's ISA (the build script compiles llama.cpp natively). The copy is the
/// same size as the tensor (repack.cpp `get_alloc_size` is the tensor's); the file's
/// mapping keeps the original, so the copy is memory on top of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repack {
    /// x86 with AVX2: Q4_0 and Q4_K, rows a multiple of 8 (repack.cpp:4974-5031).
    avx2: bool,
    /// AMX-INT8 with AVX512-VNNI: Q4_0, Q8_0, Q4_K, Q6_K with rows a multiple of 32
    /// (amx/common.h:106-115, amx.cpp:139-187), before the AVX2 repack.
    amx: bool,
    /// Arm with dotprod or i8mm: Q4_0 and Q8_0 (rows a multiple of 4), Q4_K and Q6_K
    /// (of 8) (repack.cpp:4974-5125).
    arm: bool,
}

impl Repack {
    /// The CPU of `profile`; none on a GPU plan (weights go to the GPU).
    pub fn of(profile: &Profile, on_gpu: bool) -> Repack {
        let x86 = profile.arch == Arch::X86_64 && !on_gpu;
        let arm = profile.arch == Arch::Aarch64 && !on_gpu;
        Repack {
            avx2: x86 && profile.feature_usable("avx2"),
            amx: x86 && profile.feature_usable("amx_int8") && profile.feature_usable("avx512_vnni"),
            arm: arm && (profile.cpu.has_flag("asimddp") || profile.cpu.has_flag("i8mm")),
        }
    }

    /// Whether a matrix of type `t` with `rows` output rows is copied.
    fn takes(self, t: GgmlType, rows: u64) -> bool {
        use GgmlType::*;
        let amx = self.amx && matches!(t, Q4_0 | Q8_0 | Q4_K | Q6_K) && rows.is_multiple_of(32);
        let avx2 = self.avx2 && matches!(t, Q4_0 | Q4_K) && rows.is_multiple_of(8);
        let arm = self.arm
            && match t {
                Q4_0 | Q8_0 => rows.is_multiple_of(4),
                Q4_K | Q6_K => rows.is_multiple_of(8),
                _ => false,
            };
        amx || avx2 || arm
    }
}

/// A GGUF file's weights: by part, the head's type, and the bytes the CPU backend
/// copies into repacked buffers.
pub struct GgufWeights {
    pub parts: WeightBytes,
    pub head_type: GgmlType,
    pub repacked: u64,
}

/// The weights of a GGUF file of `ft` for `model`, and what `repack` copies at load.
pub fn weight_bytes(model: &ModelShape, ft: FileType, repack: Repack) -> GgufWeights {
    let (h, n) = (model.hidden_size, model.num_hidden_layers);
    let tied = model.tie_word_embeddings;
    let vocab = model.vocab_size;
    let embd_type = tensor_type(ft, Role::TokenEmbd, tied, 0, 1, h);
    let embedding = embd_type.bytes(h, vocab);
    let (lm_head, head_type) = if tied {
        (0, embd_type)
    } else {
        let t = tensor_type(ft, Role::Output, false, 0, 1, h);
        (t.bytes(h, vocab), t)
    };
    // The embedding is read by row lookups and never repacked; the head is a matrix
    // product: a tied head is a second tensor on the embedding's data, copied when taken.
    let mut repacked = if repack.takes(head_type, vocab) {
        head_type.bytes(h, vocab)
    } else {
        0
    };
    let mut linears = 0u64;
    for i in 0..n {
        for l in model.layer_linears() {
            let role = match l.name {
                "v_proj" => Role::AttnV,
                "down_proj" => Role::FfnDown,
                _ => Role::Other,
            };
            let count = match (&model.moe, l.name) {
                (Some(m), "gate_proj" | "up_proj" | "down_proj") if i >= n - m.sparse_layers => {
                    m.num_experts
                }
                _ => 1,
            };
            let t = tensor_type(ft, role, tied, i, n, l.k);
            let bytes = t.bytes(l.k, l.n).saturating_mul(count);
            linears = linears.saturating_add(bytes);
            if repack.takes(t, l.n) {
                repacked = repacked.saturating_add(bytes);
            }
        }
    }
    GgufWeights {
        parts: WeightBytes {
            linears,
            embedding,
            lm_head,
            norms: model.norm_params().saturating_mul(4),
            router: model.router_params().saturating_mul(4),
            // Not split out here: llama.cpp's fit is its own (the GGUF tensors).
            conv1d: 0,
        },
        head_type,
        repacked,
    }
}

/// KV cells per stream and streams for `context` tokens in each of `seqs` slots
/// (`--ctx-size context*seqs --parallel seqs`).
fn cells(context: u64, seqs: u64) -> (u64, u64) {
    let seqs = seqs.max(1);
    let n_ctx = context.saturating_mul(seqs).div_ceil(CELL_PAD) * CELL_PAD;
    let per_stream = (n_ctx / seqs).div_ceil(CELL_PAD) * CELL_PAD;
    (per_stream, seqs)
}

/// The KV cache bytes (f16 K and V) for `context` tokens in each of `seqs` slots.
pub fn kv_bytes(model: &ModelShape, context: u64, seqs: u64) -> u64 {
    let (per_stream, streams) = cells(context, seqs);
    let per_cell = model.kv_bytes_per_token_per_layer(KvDtype::Fp16.bytes());
    let swa_cells = model
        .sliding_window
        .map(|w| ((w + UBATCH).div_ceil(CELL_PAD) * CELL_PAD).min(per_stream));
    model
        .layer_kinds
        .iter()
        .map(|kind| match (kind, swa_cells) {
            (LayerKind::SlidingAttention, Some(c)) => c,
            (LayerKind::LinearAttention, _) => 0,
            _ => per_stream,
        })
        .map(|c| c.saturating_mul(per_cell).saturating_mul(streams))
        .fold(0, u64::saturating_add)
}

/// The compute buffer llama.cpp reserves for one micro-batch, estimated from the
/// graph's largest live set (src/llama-context.cpp `sched_reserve`: the graph of a
/// 512-token micro-batch is reserved with the full KV): the larger of the head's
/// logits (`n_vocab x outputs` f32, outputs = the `--parallel` slots in llama-server)
/// and the MLP's gate and up (`2 x n_ff x ubatch` f32), plus seven `n_embd x ubatch`
/// f32 activations and, with flash attention, the f16 mask (`cells x ubatch`). Fitted
/// on llama.cpp's own report (b11312, CPU, flash attention on) for a Qwen3 of hidden
/// 256 and Qwen3-0.6B's shapes at 4096 to 16384 cells, both within 0.1%; checked again
/// in tests/engine_llama_cpp.rs.
pub fn compute_bytes(model: &ModelShape, seqs: u64, cells_per_stream: u64) -> u64 {
    const F32: u64 = 4;
    let logits = model
        .vocab_size
        .saturating_mul(seqs.max(1))
        .saturating_mul(F32);
    let mlp = (2 * model.intermediate_size)
        .saturating_mul(UBATCH)
        .saturating_mul(F32);
    let residual = (7 * model.hidden_size)
        .saturating_mul(UBATCH)
        .saturating_mul(F32);
    let mask = cells_per_stream.saturating_mul(UBATCH).saturating_mul(2);
    logits
        .max(mlp)
        .saturating_add(residual)
        .saturating_add(mask)
}

/// What a partial offload divides between the GPU and the CPU.
struct Split<'a> {
    weights: &'a WeightBytes,
    duplicated_head_bytes: u64,
    kv: u64,
    compute: u64,
    layers: u64,
}

/// A partial offload that fits: `--n-gpu-layers` (the repeating layers on the GPU plus
/// the head, which llama.cpp counts as one more layer: common/arg.cpp, llama-model.cpp)
/// and the note that says how the model is split.
struct Offload {
    n_gpu_layers: u64,
    note: String,
}

/// On a discrete GPU whose memory cannot hold every layer: the most decoder layers the
/// GPU holds with the head and the compute buffer (each layer with its weights and its
/// KV), the rest and the embedding in the CPU's RAM; `None` when not one layer fits
/// there or the rest does not fit the RAM budget (both less the headroom).
fn partial_offload(profile: &Profile, headroom: f64, split: &Split<'_>) -> Option<Offload> {
    let keep = |b: u64| (b as f64 * (1.0 - headroom)) as u64;
    let gpu = keep(memory::budget(profile).0?);
    let ram = keep(profile.memory.ram_budget()?.bytes());
    let n = split.layers.max(1);
    let per_layer = (split.weights.linears / n).saturating_add(split.kv / n);
    let head = split.weights.lm_head.max(split.duplicated_head_bytes);
    let room = gpu.checked_sub(head.saturating_add(split.compute))?;
    let on_gpu = (room / per_layer.max(1)).min(n - 1);
    if on_gpu == 0 {
        return None;
    }
    let on_cpu = (n - on_gpu).saturating_mul(per_layer);
    let cpu_bytes = on_cpu
        .saturating_add(split.weights.embedding)
        .saturating_add(split.weights.norms);
    (cpu_bytes <= ram).then(|| Offload {
        n_gpu_layers: on_gpu + 1,
        note: format!(
            "the whole model does not fit the GPU: {on_gpu} of {n} layers and the head are offloaded (--n-gpu-layers {}), the other {} layers, their KV and the embedding ({} bytes) stay in RAM, which runs them on the CPU at CPU speed",
            on_gpu + 1,
            n - on_gpu,
            cpu_bytes
        ),
    })
}

/// The fit of `request` on `profile` for the llama.cpp path `path`.
pub fn fit(profile: &Profile, path: &PathSpec, request: &FitRequest) -> MemoryFit {
    let model = &request.model;
    let ft = path
        .gguf_type
        .as_deref()
        .and_then(FileType::parse)
        .unwrap_or(FileType::F16);
    let on_gpu = matches!(
        profile.hardware_class,
        HardwareClass::CudaDiscrete | HardwareClass::Jetson
    );
    let gguf = weight_bytes(model, ft, Repack::of(profile, on_gpu));
    let (weights, head_type) = (gguf.parts, gguf.head_type);
    let file_bytes = weights.total();
    // On a GPU the head (tied or not) is offloaded: a tied embedding is then held
    // twice, on the CPU for the lookup and on the GPU for the head.
    let duplicated_head_bytes = if on_gpu && model.tie_word_embeddings {
        weights.embedding
    } else {
        0
    };
    let weights_bytes = file_bytes
        .saturating_add(duplicated_head_bytes)
        .saturating_add(gguf.repacked);
    let (context, seqs) = (request.context, request.concurrency.max(1));
    let kv = kv_bytes(model, context, seqs);
    let (per_stream, streams) = cells(context, seqs);
    let compute = compute_bytes(model, seqs, per_stream);
    // The mask term grows with the context: the limits count it with the KV.
    let mask_per_cell = UBATCH * 2;
    let need = |ctx: u64, n: u64| {
        kv_bytes(model, ctx, n).saturating_add(cells(ctx, n).0.saturating_mul(mask_per_cell))
    };

    let mut fit = memory::fit_from_parts(
        profile,
        request,
        memory::EngineParts {
            weights: weights.clone(),
            weights_bytes,
            fixed_bytes: compute_bytes(model, seqs, 0),
            kv_bytes: kv,
            need: &need,
        },
    );
    // llama.cpp's cache is f16 unless told (--cache-type-k/v, which plans do not set).
    fit.kv_dtype = KvDtype::Fp16;
    let mut gpu_layers = None;
    if profile.hardware_class == HardwareClass::CudaDiscrete && fit.fits == Some(false) {
        let split = Split {
            weights: &weights,
            duplicated_head_bytes,
            kv,
            compute,
            layers: model.num_hidden_layers,
        };
        if let Some(offload) = partial_offload(profile, request.headroom, &split) {
            fit.fits = Some(true);
            // The limits were searched for the GPU alone; with a split they are not known.
            fit.max_context = None;
            fit.max_concurrency = None;
            fit.notes.push(offload.note);
            gpu_layers = Some(offload.n_gpu_layers);
        }
    }
    fit.llama_cpp = Some(LlamaCppMemory {
        file_type: path.gguf_type.clone().unwrap_or_default(),
        head_type: format!("{head_type:?}"),
        file_bytes,
        repacked_bytes: gguf.repacked,
        duplicated_head_bytes,
        kv_cells_per_stream: per_stream,
        kv_streams: streams,
        kv_bytes: kv,
        compute_bytes: compute,
        compute_source: "estimate from the graph's largest live set (logits of the slots or the MLP of a 512-token micro-batch, activations, the flash-attention mask); checked against llama.cpp's own report in the end-to-end test".into(),
        gpu_layers,
    });
    fit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::gguf::use_more_bits;

    fn qwen3_0_6b() -> ModelShape {
        ModelShape::from_config_json(
            include_str!("../../fixtures/models/real/qwen3-0.6b.json"),
            "qwen3-0.6b.json",
        )
        .unwrap()
    }

    fn avx2_host() -> Profile {
        Profile::from_json(
            include_str!("../../fixtures/profiles/x86-epyc-zen1-avx2.json"),
            "x86-epyc-zen1-avx2.json",
        )
        .unwrap()
    }

    /// Qwen3-0.6B's config against what llama.cpp b11312 wrote and logged on an AVX2
    /// host (2026-12-03, scripts/engines/e2e_llama.sh; random weights of those shapes):
    /// Q4_0 tensors 375,614,464 B in the file (ours lacks the 28,672 B of q/k norms),
    /// CPU_REPACK 236.25 MiB; Q4_K_M tensors 390,753,280 B, CPU_REPACK 204.75 MiB.
    #[test]
    fn qwen3_0_6b_weights_match_the_files_llama_cpp_wrote() {
        let repack = Repack::of(&avx2_host(), false);
        let q4_0 = weight_bytes(&qwen3_0_6b(), FileType::Q4_0, repack);
        assert_eq!(q4_0.parts.total(), 375_585_792);
        assert_eq!(q4_0.repacked, 247_726_080, "236.25 MiB");
        assert_eq!(
            q4_0.head_type,
            GgmlType::Q6_K,
            "the tied embedding gets the head's rule"
        );
        let q4_k_m = weight_bytes(&qwen3_0_6b(), FileType::Q4KM, repack);
        assert_eq!(q4_k_m.parts.total(), 390_724_608);
        assert_eq!(
            q4_k_m.repacked, 214_695_936,
            "204.75 MiB: Q4_K only, Q6_K is not repacked on x86"
        );
        // Without AVX2 nothing is copied; on a GPU neither.
        let none = Repack {
            avx2: false,
            amx: false,
            arm: false,
        };
        assert_eq!(
            weight_bytes(&qwen3_0_6b(), FileType::Q4_0, none).repacked,
            0
        );
    }

    /// The same runs' KV and compute buffers: 448.00 / 1792.00 MiB of KV and 30.01 /
    /// 42.01 MiB of compute at 4096 / 16384 tokens, one slot.
    #[test]
    fn qwen3_0_6b_kv_and_compute_match_llama_cpps_report() {
        let m = qwen3_0_6b();
        assert_eq!(kv_bytes(&m, 4096, 1), 448 << 20);
        assert_eq!(kv_bytes(&m, 16384, 1), 1792 << 20);
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        assert!((mib(compute_bytes(&m, 1, 4096)) - 30.01).abs() < 0.05);
        assert!((mib(compute_bytes(&m, 1, 16384)) - 42.01).abs() < 0.05);
    }

    #[test]
    fn cells_are_padded_per_stream_and_sliding_layers_capped() {
        assert_eq!(cells(4000, 1), (4096, 1));
        assert_eq!(
            cells(1000, 3),
            (1024, 3),
            "3000 -> 3072 cells, 1024 per stream"
        );
        // gemma-3-1b: 26 layers, 22 sliding (window 512), 1 KV head of 256.
        let m = ModelShape::from_config_json(
            include_str!("../../fixtures/models/real/gemma-3-1b-it.json"),
            "gemma",
        )
        .unwrap();
        let per_cell_layer = 2 * 256 * 2;
        // Full layers hold 8192 cells, sliding ones 512 + 512 padded to 1024.
        assert_eq!(
            kv_bytes(&m, 8192, 1),
            (4 * 8192 + 22 * 1024) * per_cell_layer
        );
    }

    #[test]
    fn q4_k_m_promotes_the_use_more_bits_layers() {
        let promoted: Vec<u64> = (0..28).filter(|i| use_more_bits(*i, 28)).collect();
        assert_eq!(
            promoted,
            [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27]
        );
        // A row of 64 cannot hold a 256-block: Q4_K falls back to Q5_0, Q6_K to Q8_0.
        assert_eq!(GgmlType::Q4_K.fitted(64), GgmlType::Q5_0);
        assert_eq!(GgmlType::Q6_K.fitted(64), GgmlType::Q8_0);
        assert_eq!(GgmlType::Q4_0.fitted(48), GgmlType::F16);
    }

    /// Llama 3.1 8B in f16 on a T4 (15.35 GiB): the 16-bit file does not fit the GPU,
    /// so part of it is offloaded and the rest stays in RAM (29 GiB available).
    #[test]
    fn a_gpu_too_small_for_the_file_offloads_part_of_it() {
        let t4 = Profile::from_json(
            include_str!("../../fixtures/profiles/hand-cuda-t4.json"),
            "hand-cuda-t4.json",
        )
        .unwrap();
        let catalog = crate::plan::Catalog::builtin();
        let request = |context| FitRequest {
            model: ModelShape::load("llama-3.1-8b").unwrap(),
            context,
            concurrency: 1,
            kv_dtype: KvDtype::Bf16,
            headroom: memory::DEFAULT_HEADROOM,
        };
        let f16 = catalog.path(crate::plan::catalog::PathId::GgufF16);
        let split = fit(&t4, f16, &request(8192));
        assert_eq!(split.fits, Some(true), "{:?}", split.notes);
        let layers = split.llama_cpp.as_ref().unwrap().gpu_layers.unwrap();
        // 0.9 x 15.35 GiB less the 1 GiB f16 head and the compute buffer, at about
        // 0.47 GiB per layer (weights and 8k of KV): 26 of 32 layers, and the head.
        assert!((20..32).contains(&layers), "{layers}");
        assert!(split.notes.iter().any(|n| n.contains("--n-gpu-layers")));
        // Q4_0 fits whole: no partial offload.
        let q4 = catalog.path(crate::plan::catalog::PathId::GgufQ4_0);
        let whole = fit(&t4, q4, &request(8192));
        assert_eq!(whole.fits, Some(true));
        assert_eq!(whole.llama_cpp.unwrap().gpu_layers, None);
    }
}
