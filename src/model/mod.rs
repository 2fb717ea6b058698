//! Model shapes: what `bench` runs and what `plan --model` sizes.
//!
//! A [`ModelShape`] comes from a preset name or a Hugging Face `config.json`. The keys
//! that decide the linear layers and the KV cache are read (`hidden_size`,
//! `intermediate_size`, `num_hidden_layers`, `num_attention_heads`,
//! `num_key_value_heads`, `head_dim`, `vocab_size`, `tie_word_embeddings`, the layer
//! kinds, `max_position_embeddings` with `rope_scaling`, the mixture-of-experts keys and
//! DeepSeek's latent-attention ranks), each one from the config when it is there and else from the family's
//! transformers default (`families.rs`), as transformers itself does. Multimodal configs
//! are read through their `text_config`. Which layers slide follows the family's own
//! rule when the config has no `layer_types`. A malformed field is exit 65 naming it; a
//! config of an unknown `model_type` that lacks required keys is exit 65 naming every
//! missing key at once. Gemma 3n (`gemma3n`, `gemma3n_text`) is exit 65 by name: its
//! per-layer embeddings, AltUp/LAuReL blocks and cross-layer KV sharing are not modelled.

mod families;
mod hub;
mod presets;
mod resolve;

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::data_error;

pub use families::SlidingRule;

/// The transformers config class whose defaults edgeplan uses for `model_type`.
pub fn defaults_class(model_type: &str) -> Option<&'static str> {
    families::family(model_type).map(|f| f.class)
}

/// How one decoder layer attends, which decides its KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    /// Holds K and V for the whole context.
    FullAttention,
    /// Holds at most `sliding_window` tokens.
    SlidingAttention,
    /// Linear attention / state-space: a fixed-size state, no per-token KV.
    LinearAttention,
}

/// The experts of a mixture-of-experts model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub num_experts: u64,
    /// Experts each token is routed to.
    pub experts_per_token: u64,
    /// MLP size of one expert.
    pub expert_intermediate_size: u64,
    /// MLP size of the always-on shared expert (0 when there is none).
    pub shared_expert_intermediate_size: u64,
    /// Layers with experts; the others have a dense MLP of `intermediate_size`.
    pub sparse_layers: u64,
    /// Whether the shared expert has its own one-output gate (Qwen-MoE).
    pub shared_expert_gate: bool,
}

/// Multi-head latent attention (DeepSeek-V2/V3): K and V are cached as one compressed
/// latent per token and layer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mla {
    pub kv_lora_rank: u64,
    /// `None` when queries are projected directly (DeepSeek-V2-Lite).
    pub q_lora_rank: Option<u64>,
    pub qk_nope_head_dim: u64,
    pub qk_rope_head_dim: u64,
    pub v_head_dim: u64,
}

/// The token mixer of a linear-attention layer, when the config describes one
/// edgeplan can size.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinearMixer {
    /// Qwen3-Next's and Qwen3.5's Gated DeltaNet (`linear_*` keys): `in_proj_qkvz`
    /// (Qwen3.5 splits it into `in_proj_qkv` and `in_proj_z`), `in_proj_ba` (`in_proj_b`,
    /// `in_proj_a`), a depthwise `conv1d` over q, k and v, and `out_proj`
    /// (`Qwen3NextGatedDeltaNet`, transformers' `modeling_qwen3_next.py`).
    GatedDeltaNet {
        num_key_heads: u64,
        num_value_heads: u64,
        key_head_dim: u64,
        value_head_dim: u64,
        conv_kernel: u64,
    },
    /// LFM2's gated short convolution (`conv_L_cache`): `in_proj` to B, C and x, a
    /// depthwise `conv1d` of `conv_L_cache` taps, and `out_proj` (`Lfm2ShortConv`).
    ShortConv { kernel: u64 },
    /// A Mamba-2 mixer (Granite 4.0-H: `mamba_*` keys): `in_proj` to the gate, x, B, C
    /// and dt, a depthwise `conv1d` over x, B and C, and `out_proj`
    /// (`BambaMixer`, transformers' `modeling_bamba.py`).
    Mamba2 {
        /// `mamba_expand × hidden_size` (= heads × head size).
        inner: u64,
        heads: u64,
        groups: u64,
        state: u64,
        conv_kernel: u64,
    },
}

/// The longest context the model is built for, and how it was derived.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ContextLimit {
    pub tokens: u64,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelShape {
    /// Preset name or the config file's path.
    pub name: String,
    /// The family the defaults came from (`null` when unknown).
    pub model_type: Option<String>,
    pub hidden_size: u64,
    pub intermediate_size: u64,
    pub num_hidden_layers: u64,
    pub num_attention_heads: u64,
    pub num_key_value_heads: u64,
    pub head_dim: u64,
    pub vocab_size: u64,
    pub tie_word_embeddings: bool,
    /// gate + up + down when true; up + down (Starcoder2's `c_fc`, `c_proj`) when false.
    pub gated_mlp: bool,
    /// One entry per decoder layer.
    pub layer_kinds: Vec<LayerKind>,
    /// Window of the sliding-attention layers, when there are any.
    pub sliding_window: Option<u64>,
    /// `None` for a dense model.
    pub moe: Option<Moe>,
    /// `None` unless the attention is multi-head latent attention (`kv_lora_rank`).
    pub mla: Option<Mla>,
    /// The linear-attention layers' mixer; `None` when there are none or the config
    /// does not describe them (they are then sized as attention layers).
    pub linear_mixer: Option<LinearMixer>,
    /// Whether every layer runs the linear mixer beside its attention (Falcon-H1), rather
    /// than in place of it.
    pub parallel_linear_mixer: bool,
    /// Whether `q_proj` also produces a per-head output gate (twice the outputs):
    /// Qwen3-Next's and Qwen3.5's gated attention.
    pub attention_output_gate: bool,
    /// True for a multimodal config (a `text_config`, or a `vision_config` or
    /// `audio_config` beside the language keys): the vision or audio encoder is not part
    /// of the shape.
    pub multimodal: bool,
    /// `None` when the config states no `max_position_embeddings`.
    pub context_limit: Option<ContextLimit>,
    /// Keys the config left out and the family's default filled in.
    pub defaulted: Vec<String>,
    /// What edgeplan assumed where the config does not say, one sentence each (a family
    /// it has no table for: a gated MLP, an untied head; linear-attention layers it
    /// sizes as attention). The plan prints them as notes.
    pub assumed: Vec<String>,
    /// The config's `quantization_config`, summarised (`gptq, 4-bit, group 128`), when
    /// it describes an already-quantized checkpoint; the shape is the same, the weights
    /// on disk are not bf16.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantized: Option<String>,
}

/// One linear layer as a GEMM: `y[M][n] = x[M][k] · W[n][k]ᵀ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Linear {
    pub name: &'static str,
    /// Output features (rows of W).
    pub n: u64,
    /// Input features (columns of W).
    pub k: u64,
}

impl Linear {
    pub fn params(&self) -> u64 {
        self.n * self.k
    }
}

/// The keys a default may fill, in the order a note lists them.
const READ_KEYS: &[&str] = &[
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "tie_word_embeddings",
    "max_position_embeddings",
    "sliding_window",
    "sliding_window_pattern",
    "use_sliding_window",
    "max_window_layers",
    "num_experts",
    "num_local_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "decoder_sparse_step",
    "shared_intermediate_size",
    "mamba_n_heads",
    "mamba_n_groups",
    "mamba_d_state",
    "mamba_d_conv",
    "mamba_expand",
];

/// The largest width, head count, vocabulary or expert count edgeplan accepts (2^20):
/// far past any real model, and small enough that one layer's parameters fit in u64.
const MAX_DIM: u64 = 1 << 20;

/// Counts that may exceed [`MAX_DIM`]: token lengths (and the layer count, bounded on
/// its own).
const UNBOUNDED_KEYS: &[&str] = &[
    "max_position_embeddings",
    "original_max_position_embeddings",
    "sliding_window",
    "num_hidden_layers",
    "max_window_layers",
];

/// The most parameters a config may describe (10^14, a hundred times the largest
/// published models): past it the figures would overflow.
const MAX_PARAMS: f64 = 1e14;

/// Keys that hold a multimodal model's encoder config beside the language keys.
const MULTIMODAL_KEYS: &[&str] = &["vision_config", "audio_config", "speech_config"];

/// Architectures whose layers are not the attention + MLP stack these formulas size,
/// refused by `model_type` with the reason (a wrapper's or its text model's type).
const UNMODELLED: &[(&[&str], &str)] = &[
    (
        &["bamba"],
        "Bamba places its attention layers by attn_layer_indices among Mamba-2 layers",
    ),
    (
        &["nemotron_h"],
        "Nemotron-H's hybrid_override_pattern stacks separate Mamba-2, attention and MLP blocks",
    ),
    (
        &["jamba"],
        "Jamba places Mamba layers and experts by attn_layer_period and expert_layer_period",
    ),
    (
        &["mamba", "mamba2", "falcon_mamba"],
        "it is a state-space model with no attention layers",
    ),
    (
        &["zamba", "zamba2"],
        "Zamba's Mamba layers share attention blocks across the stack",
    ),
    (
        &["lfm2_moe"],
        "LFM2-MoE's dense and expert layers are placed by num_dense_layers",
    ),
    (
        &["kimi_linear", "minimax", "minimax_m1"],
        "its linear-attention layers (Kimi Delta Attention, lightning attention) are placed and shaped by keys edgeplan does not model",
    ),
    (
        &["recurrent_gemma"],
        "RecurrentGemma's RG-LRU layers are recurrent, not attention",
    ),
    (
        &["rwkv", "rwkv5", "rwkv6", "rwkv7"],
        "it is a recurrent (RWKV) model with no attention layers",
    ),
    (
        &["openelm"],
        "OpenELM gives every layer its own head counts and MLP width (num_query_heads, num_kv_heads and ffn_multipliers lists)",
    ),
    (
        &["llama4", "llama4_text"],
        "Llama 4 adds a shared expert to each MoE layer, places them by interleave_moe_layer_step with dense layers of intermediate_size_mlp, and chunks the attention of three layers in four",
    ),
];

/// Keys that mark a state-space or convolution mixer: a config of a family edgeplan
/// does not know that has one is refused rather than sized as attention layers.
const UNMODELLED_KEYS: &[&str] = &[
    "mamba_d_state",
    "mamba_expand",
    "mamba_d_ssm",
    "ssm_cfg",
    "hybrid_override_pattern",
    "attn_layer_period",
    "conv_L_cache",
    "block_ff_dim",
    "ssm_state_size",
    "mamba_num_heads",
    "linear_attn_config",
    "attn_type_list",
];

/// Key names other families give the shape; named when such a config lacks edgeplan's.
const FOREIGN_SHAPE_KEYS: &[&str] = &[
    "n_embd",
    "n_embed",
    "d_model",
    "n_layer",
    "n_layers",
    "num_layers",
    "n_head",
    "n_heads",
    "n_inner",
    "ffn_hidden_size",
];

/// Gemma 3n's wrapper and text model types: refused by name (see `from_config_json`).
const GEMMA3N_TYPES: &[&str] = &["gemma3n", "gemma3n_text"];

/// Keys with no usable default: an unknown family must state them all.
const REQUIRED: &[&str] = &[
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "vocab_size",
];

impl ModelShape {
    /// What `--model` takes: an existing path (a `config.json` or the directory holding
    /// one), a preset name, or a Hugging Face `ORG/NAME` read from the local Hugging Face
    /// cache (else the preset of that repository). A missing path or uncached repository
    /// is exit 66 saying how to get it; an unknown name is exit 65 naming the closest
    /// presets.
    pub fn load(spec: &str) -> anyhow::Result<ModelShape> {
        resolve::load(spec, &hub::HubEnv::from_process())
    }

    /// Reads a Hugging Face `config.json`.
    /// A directory (a downloaded Hugging Face snapshot) stands for its `config.json`.
    pub fn from_config_file(path: &Path) -> anyhow::Result<ModelShape> {
        use crate::fsx::Source;
        const MAX: u64 = hub::MAX_CONFIG_BYTES;
        if !path.is_dir() {
            let text = crate::error::read_text_capped(path, "model config", MAX, Source::Named)?;
            return ModelShape::from_config_json(&text, &path.display().to_string());
        }
        // The directory was named; the config.json in it was found, so a FIFO or device
        // planted there is refused, not waited on.
        let joined = path.join("config.json");
        let text = crate::fsx::read_text(&joined, MAX, Source::Found).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                crate::error::no_input(format!(
                    "{}: a directory without a config.json; give the model's config.json or the directory that holds it",
                    path.display()
                ))
            } else {
                crate::error::capped_read_error(&joined, "model config", MAX, &e)
            }
        })?;
        ModelShape::from_config_json(&text, &joined.display().to_string())
    }

    /// Parses `config.json` text; `origin` names it in errors.
    pub fn from_config_json(text: &str, origin: &str) -> anyhow::Result<ModelShape> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| data_error(format!("{origin}: not valid JSON: {e}")))?;
        let Some(top) = value.as_object() else {
            return Err(data_error(format!(
                "{origin}: a model config must be a JSON object"
            )));
        };
        let top_type = str_of(top, "model_type");
        let (cfg, model_type) = language_config(top, top_type.as_deref());
        let types = [top_type.as_deref(), model_type.as_deref()];
        refuse_gemma3n(origin, &types)?;
        refuse_unmodelled(origin, &types, cfg)?;
        let family = model_type.as_deref().and_then(families::family);
        let (mut merged, mut defaulted, renamed) = merge_defaults(family, cfg, top);
        family_rules(family, &mut merged, &mut defaulted, origin)?;
        let field = Fields {
            cfg: &merged,
            origin,
            renamed,
        };
        // A key stated with a bad value is named as such, not as "missing" because a
        // width derived from it could not be formed.
        for key in REQUIRED {
            field.opt_u64(key)?;
        }
        require_keys(&merged, family, model_type.as_deref(), cfg, origin)?;
        let dims = field.dims()?;
        let rule = family.map(|f| f.sliding);
        let (layer_kinds, sliding_window) =
            field.layer_kinds(dims.num_hidden_layers as usize, rule)?;
        let moe = field.moe(dims.num_hidden_layers, dims.intermediate_size)?;
        let mla = field.mla()?;
        // Falcon-H1 runs a Mamba-2 mixer beside the attention of every layer.
        let parallel_linear_mixer = model_type.as_deref() == Some("falcon_h1");
        let linear_mixer =
            if parallel_linear_mixer || layer_kinds.contains(&LayerKind::LinearAttention) {
                field.linear_mixer()?
            } else {
                None
            };
        // Only the defaults that changed the shape are worth a note.
        let has_mamba = matches!(linear_mixer, Some(LinearMixer::Mamba2 { .. }));
        defaulted.retain(|k| default_shaped(k, sliding_window.is_some(), moe.is_some(), has_mamba));
        let context_limit = field.context_limit()?;
        // Qwen3-Next and Qwen3.5 gate each attention head's output from q_proj.
        let attention_output_gate = matches!(
            model_type.as_deref(),
            Some("qwen3_next" | "qwen3_5_text" | "qwen3_5_moe_text")
        );
        let assumed = unknown_family_assumptions(
            family,
            model_type.as_deref(),
            &merged,
            moe.as_ref(),
            dims.num_hidden_layers,
        );
        let mut shape = ModelShape {
            name: name_of(top, origin),
            model_type: family.map(|f| f.model_type.to_owned()).or(model_type),
            hidden_size: dims.hidden_size,
            intermediate_size: dims.intermediate_size,
            num_hidden_layers: dims.num_hidden_layers,
            num_attention_heads: dims.num_attention_heads,
            num_key_value_heads: dims.num_key_value_heads,
            head_dim: dims.head_dim,
            vocab_size: dims.vocab_size,
            tie_word_embeddings: dims.tie_word_embeddings,
            gated_mlp: family.is_none_or(|f| f.gated_mlp),
            layer_kinds,
            sliding_window,
            moe,
            mla,
            linear_mixer,
            parallel_linear_mixer,
            attention_output_gate,
            multimodal: !std::ptr::eq(cfg, top)
                || MULTIMODAL_KEYS
                    .iter()
                    .any(|k| top.get(*k).is_some_and(Value::is_object)),
            context_limit,
            defaulted,
            assumed,
            quantized: quantization_summary(top).or_else(|| quantization_summary(cfg)),
        };
        shape.note_linear_layers();
        shape.check_plausible(origin)?;
        Ok(shape)
    }

    /// The model's parameter count, estimated in floating point before any u64 sum
    /// over the layers is formed: exit 65 past [`MAX_PARAMS`], so no figure overflows.
    fn check_plausible(&self, origin: &str) -> anyhow::Result<()> {
        let per = |l: Vec<Linear>| Self::params_of(&l) as f64;
        let mut layer = per(self.attention_linears())
            + per(self.linear_layer_linears())
            + per(self.mlp_linears(self.intermediate_size));
        if let Some(m) = &self.moe {
            layer += m.num_experts as f64 * per(self.mlp_linears(m.expert_intermediate_size))
                + per(self.mlp_linears(m.shared_expert_intermediate_size));
        }
        let total = self.num_hidden_layers as f64 * layer
            + 2.0 * self.vocab_size as f64 * self.hidden_size as f64;
        if total > MAX_PARAMS {
            return Err(data_error(format!(
                "{origin}: the config describes about {total:.1e} parameters, which is not a plausible model"
            )));
        }
        Ok(())
    }

    /// What the plan should say about the linear-attention layers: their state's size
    /// (not in the KV figures), or that their mixer is sized as attention.
    fn note_linear_layers(&mut self) {
        let layers = self.linear_mixer_layers();
        if layers == 0 {
            return;
        }
        self.assumed.push(match self.linear_state_elements_per_layer() {
            Some(elements) if self.parallel_linear_mixer => format!(
                "the Mamba-2 mixers beside the attention of all {layers} layers keep a fixed state of {} bytes per sequence at 16 bits ({elements} values a layer: the convolution's last inputs and the recurrent state): not in the architecture's KV figure; the engine figure holds it as vLLM pages it",
                elements * 2 * layers
            ),
            Some(elements) => format!(
                "the {layers} linear-attention layers keep a fixed state of {} bytes per sequence at 16 bits ({elements} values a layer: the convolution's last inputs and the recurrent state): not in the architecture's KV figure; the engine figure holds it as vLLM pages it",
                elements * 2 * layers
            ),
            None => format!(
                "the config does not describe its {layers} linear-attention layers' mixer: they are sized with the attention layers' q, k, v and o projections (an approximation)"
            ),
        });
    }

    /// The attention projections of one decoder layer: q, k, v, o (for latent attention
    /// q (or q_a, q_b), kv_a, kv_b, o).
    fn attention_linears(&self) -> Vec<Linear> {
        let h = self.hidden_size;
        let heads = self.num_attention_heads;
        let lin = |name, n, k| Linear { name, n, k };
        if let Some(m) = &self.mla {
            let qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
            let mut all = match m.q_lora_rank {
                Some(r) => vec![lin("q_a_proj", r, h), lin("q_b_proj", heads * qk, r)],
                None => vec![lin("q_proj", heads * qk, h)],
            };
            all.push(lin("kv_a_proj", m.kv_lora_rank + m.qk_rope_head_dim, h));
            all.push(lin(
                "kv_b_proj",
                heads * (m.qk_nope_head_dim + m.v_head_dim),
                m.kv_lora_rank,
            ));
            all.push(lin("o_proj", h, heads * m.v_head_dim));
            return all;
        }
        let q_out = heads * self.head_dim;
        let kv_out = self.num_key_value_heads * self.head_dim;
        let gate = if self.attention_output_gate { 2 } else { 1 };
        vec![
            lin("q_proj", q_out * gate, h),
            lin("k_proj", kv_out, h),
            lin("v_proj", kv_out, h),
            lin("o_proj", h, q_out),
        ]
    }

    /// The projections of one linear-attention layer: its mixer's when the config
    /// describes it, else the attention shapes (an approximation).
    fn linear_layer_linears(&self) -> Vec<Linear> {
        let h = self.hidden_size;
        let lin = |name, n, k| Linear { name, n, k };
        match &self.linear_mixer {
            Some(LinearMixer::GatedDeltaNet {
                num_key_heads,
                num_value_heads,
                key_head_dim,
                value_head_dim,
                conv_kernel,
            }) => {
                let key_dim = num_key_heads * key_head_dim;
                let value_dim = num_value_heads * value_head_dim;
                vec![
                    lin("in_proj_qkvz", 2 * key_dim + 2 * value_dim, h),
                    lin("in_proj_ba", 2 * num_value_heads, h),
                    lin("conv1d", 2 * key_dim + value_dim, *conv_kernel),
                    lin("out_proj", h, value_dim),
                ]
            }
            Some(LinearMixer::ShortConv { kernel }) => vec![
                lin("in_proj", 3 * h, h),
                lin("conv1d", h, *kernel),
                lin("out_proj", h, h),
            ],
            Some(LinearMixer::Mamba2 {
                inner,
                heads,
                groups,
                state,
                conv_kernel,
            }) => {
                let conv_dim = inner + 2 * groups * state;
                vec![
                    lin("in_proj", inner + conv_dim + heads, h),
                    lin("conv1d", conv_dim, *conv_kernel),
                    lin("out_proj", h, *inner),
                ]
            }
            None => self.attention_linears(),
        }
    }

    /// The token-mixer parameters of all layers: attention in full and sliding layers,
    /// the linear mixer in linear-attention layers.
    fn mixer_params(&self) -> u64 {
        let (full, sliding, linear) = self.layer_kind_counts();
        let beside = if self.parallel_linear_mixer {
            full + sliding
        } else {
            0
        };
        Self::params_of(&self.attention_linears()) * (full + sliding)
            + Self::params_of(&self.linear_layer_linears()) * (linear + beside)
    }

    /// The fixed-size state one sequence keeps in each linear-attention layer, in
    /// elements: the convolution's last `kernel - 1` inputs and the recurrent state
    /// (Gated DeltaNet: value heads × key head size × value head size; Mamba-2:
    /// heads × head size × state size). `None` when the mixer is not described.
    pub fn linear_state_elements_per_layer(&self) -> Option<u64> {
        self.linear_state_parts()
            .map(|(conv, recurrent)| conv + recurrent)
    }

    /// One linear-attention layer's state per sequence, in elements, as vLLM shapes it
    /// (`MambaStateShapeCalculator`, vllm/model_executor/layers/mamba/mamba_utils.py:
    /// `mamba2_state_shape` 194-220, `short_conv_state_shape` 256-266,
    /// `gated_delta_net_state_shape` 279-301): (the convolution state, the recurrent
    /// state; 0 for the short convolution, which has none).
    pub fn linear_state_parts(&self) -> Option<(u64, u64)> {
        Some(match self.linear_mixer.as_ref()? {
            LinearMixer::GatedDeltaNet {
                num_key_heads,
                num_value_heads,
                key_head_dim,
                value_head_dim,
                conv_kernel,
            } => {
                let conv_dim = 2 * num_key_heads * key_head_dim + num_value_heads * value_head_dim;
                (
                    (conv_kernel - 1) * conv_dim,
                    num_value_heads * key_head_dim * value_head_dim,
                )
            }
            LinearMixer::Mamba2 {
                inner,
                heads: _,
                groups,
                state,
                conv_kernel,
            } => (
                (conv_kernel - 1) * (inner + 2 * groups * state),
                inner * state,
            ),
            LinearMixer::ShortConv { kernel } => ((kernel - 1) * self.hidden_size, 0),
        })
    }

    /// Layers that run the linear mixer: the linear-attention layers, or every layer
    /// when it runs beside the attention (Falcon-H1).
    pub fn linear_mixer_layers(&self) -> u64 {
        if self.parallel_linear_mixer {
            self.num_hidden_layers
        } else {
            self.layer_kind_counts().2
        }
    }

    /// The depthwise `conv1d` weights of every linear mixer: quantizers leave them at 16
    /// bits (they are not `nn.Linear`), so the weights count them apart.
    pub fn conv1d_params(&self) -> u64 {
        if self.linear_mixer.is_none() {
            return 0;
        }
        let per_layer: u64 = self
            .linear_layer_linears()
            .iter()
            .filter(|l| l.name == "conv1d")
            .map(Linear::params)
            .sum();
        per_layer * self.linear_mixer_layers()
    }

    /// The MLP linears at width `i`: gate, up, down (or up, down when not gated).
    fn mlp_linears(&self, i: u64) -> Vec<Linear> {
        let h = self.hidden_size;
        let mut mlp = Vec::with_capacity(3);
        if self.gated_mlp {
            mlp.push(Linear {
                name: "gate_proj",
                n: i,
                k: h,
            });
        }
        mlp.push(Linear {
            name: "up_proj",
            n: i,
            k: h,
        });
        mlp.push(Linear {
            name: "down_proj",
            n: h,
            k: i,
        });
        mlp
    }

    /// The linear layers of one dense decoder layer, in execution order (what `bench`
    /// times; a MoE model's layer is shown with its dense `intermediate_size`).
    pub fn layer_linears(&self) -> Vec<Linear> {
        let mut all = self.attention_linears();
        all.extend(self.mlp_linears(self.intermediate_size));
        all
    }

    /// The output projection (always a separate, untied matrix on the 4-bit paths).
    pub fn lm_head(&self) -> Linear {
        Linear {
            name: "lm_head",
            n: self.vocab_size,
            k: self.hidden_size,
        }
    }

    fn params_of(linears: &[Linear]) -> u64 {
        linears.iter().map(Linear::params).sum()
    }

    /// Parameters in the decoder layers' linears (what the 4-bit paths quantize besides
    /// the lm_head): attention in every layer, a dense MLP in dense layers, and in MoE
    /// layers every expert plus any shared expert. Linear-attention layers are counted
    /// with their mixer's projections when the config describes it (Qwen3-Next's Gated
    /// DeltaNet), else with the same q/k/v/o shapes: an approximation.
    pub fn decoder_linear_params(&self) -> u64 {
        let attention = self.mixer_params();
        let dense_mlp = Self::params_of(&self.mlp_linears(self.intermediate_size));
        match &self.moe {
            None => attention + dense_mlp * self.num_hidden_layers,
            Some(m) => {
                let expert = Self::params_of(&self.mlp_linears(m.expert_intermediate_size));
                let shared = self.shared_mlp_params(m);
                attention
                    + dense_mlp * (self.num_hidden_layers - m.sparse_layers)
                    + (m.num_experts * expert + shared) * m.sparse_layers
            }
        }
    }

    fn shared_mlp_params(&self, m: &Moe) -> u64 {
        if m.shared_expert_intermediate_size == 0 {
            0
        } else {
            Self::params_of(&self.mlp_linears(m.shared_expert_intermediate_size))
        }
    }

    /// Parameters of the MoE routers (and shared-expert gates), kept at 16 bits.
    pub fn router_params(&self) -> u64 {
        match &self.moe {
            None => 0,
            Some(m) => {
                let shared_gate = if m.shared_expert_gate {
                    self.hidden_size
                } else {
                    0
                };
                (m.num_experts * self.hidden_size + shared_gate) * m.sparse_layers
            }
        }
    }

    /// Linear parameters one token passes through (decoder and lm_head): all of them
    /// for a dense model; for a MoE model only the routed experts and the shared one.
    pub fn active_params_per_token(&self) -> u64 {
        let head = self.lm_head().params();
        match &self.moe {
            None => self.decoder_linear_params() + head,
            Some(m) => {
                let attention = self.mixer_params();
                let dense_mlp = Self::params_of(&self.mlp_linears(self.intermediate_size));
                let expert = Self::params_of(&self.mlp_linears(m.expert_intermediate_size));
                attention
                    + dense_mlp * (self.num_hidden_layers - m.sparse_layers)
                    + (m.experts_per_token * expert + self.shared_mlp_params(m)) * m.sparse_layers
                    + self.router_params()
                    + head
            }
        }
    }

    /// Parameters of the token embedding table.
    pub fn embedding_params(&self) -> u64 {
        self.vocab_size * self.hidden_size
    }

    /// Parameters of the RMSNorm weights: two per layer plus the final norm.
    pub fn norm_params(&self) -> u64 {
        (2 * self.num_hidden_layers + 1) * self.hidden_size
    }

    /// KV cache bytes one layer holds per token: K and V for every KV head.
    /// With latent attention, the one latent (`kv_lora_rank + qk_rope_head_dim`).
    pub fn kv_bytes_per_token_per_layer(&self, bytes_per_element: u64) -> u64 {
        match &self.mla {
            Some(m) => (m.kv_lora_rank + m.qk_rope_head_dim) * bytes_per_element,
            None => 2 * self.num_key_value_heads * self.head_dim * bytes_per_element,
        }
    }

    /// How many layers of each kind: (full, sliding, linear).
    pub fn layer_kind_counts(&self) -> (u64, u64, u64) {
        let count = |kind| self.layer_kinds.iter().filter(|k| **k == kind).count() as u64;
        (
            count(LayerKind::FullAttention),
            count(LayerKind::SlidingAttention),
            count(LayerKind::LinearAttention),
        )
    }
}

/// `layers` kinds: full attention where `full(i)` holds for layer `i`, else `other`.
fn kinds_by(layers: usize, full: impl Fn(usize) -> bool, other: LayerKind) -> Vec<LayerKind> {
    (0..layers)
        .map(|i| {
            if full(i) {
                LayerKind::FullAttention
            } else {
                other
            }
        })
        .collect()
}

/// The string at `key` in `map`, if it is one.
fn str_of(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A one-line summary of `quantization_config` (method, bits, group size), when the
/// config has one: `gptq, 4-bit, group 128`; `None` without it. The bits and group come
/// from `bits` (GPTQ, AWQ), `w_bit`/`q_group_size` (AutoAWQ's own names), bitsandbytes'
/// `load_in_4bit`/`load_in_8bit`, or the first of compressed-tensors' `config_groups`.
fn quantization_summary(cfg: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let q = cfg.get("quantization_config")?.as_object()?;
    let method = q
        .get("quant_method")
        .and_then(|m| m.as_str())
        .unwrap_or("unknown method");
    let mut parts = vec![method.to_string()];
    // compressed-tensors states the scheme per group of layers.
    let group_weights = q
        .get("config_groups")
        .and_then(Value::as_object)
        .and_then(|g| g.values().next())
        .and_then(|g| g.get("weights"))
        .and_then(Value::as_object);
    let first = |keys: &[&str]| {
        keys.iter().find_map(|k| {
            q.get(*k)
                .or_else(|| group_weights.and_then(|w| w.get(*k)))
                .filter(|v| !v.is_null())
        })
    };
    let flag = |k: &str| q.get(k).and_then(Value::as_bool) == Some(true);
    let bits = first(&["bits", "w_bit", "weight_bits", "num_bits"])
        .and_then(Value::as_u64)
        .or(if flag("load_in_4bit") {
            Some(4)
        } else if flag("load_in_8bit") {
            Some(8)
        } else {
            None
        });
    if let Some(bits) = bits {
        parts.push(format!("{bits}-bit"));
    }
    if let Some(g) = first(&["group_size", "q_group_size"]).and_then(Value::as_i64) {
        parts.push(if g > 0 {
            format!("group {g}")
        } else {
            "per channel".into()
        });
    }
    Some(parts.join(", "))
}

/// The part of the config that holds the language model's shape, and its
/// `model_type`: a multimodal config's `text_config` (when the top level has no
/// `hidden_size` of its own, or is a wrapper whose text family is known), else the top.
fn language_config<'a>(
    top: &'a Map<String, Value>,
    top_type: Option<&str>,
) -> (&'a Map<String, Value>, Option<String>) {
    let text_family = top_type.and_then(families::text_family_of);
    // `text_config` for most; InternVL names it `llm_config`, DeepSeek-VL2 `language_config`.
    let inner = ["text_config", "llm_config", "language_config"]
        .iter()
        .find_map(|k| top.get(*k).filter(|v| v.is_object()));
    match inner {
        Some(Value::Object(text_cfg))
            if !top.contains_key("hidden_size") || text_family.is_some() =>
        {
            let inner = str_of(text_cfg, "model_type").or_else(|| text_family.map(str::to_owned));
            (text_cfg, inner.or(top_type.map(str::to_owned)))
        }
        _ => (top, top_type.map(str::to_owned)),
    }
}

/// Gemma 3n's decoder is not a stack of plain layers: refused by name rather than
/// sized wrong (its intermediate_size is even a per-layer list).
fn refuse_gemma3n(origin: &str, types: &[Option<&str>]) -> anyhow::Result<()> {
    match types.iter().flatten().find(|t| GEMMA3N_TYPES.contains(t)) {
        Some(t) => Err(data_error(format!(
            "{origin}: Gemma 3n (model_type \"{t}\") is not supported: its per-layer embeddings (a vocab_size_per_layer_input x hidden_size_per_layer_input table for every layer), AltUp and LAuReL blocks, per-layer intermediate sizes and KV cache shared across the last num_kv_shared_layers layers are outside edgeplan's weight and KV formulas (vLLM serves it; edgeplan cannot size it yet)"
        ))),
        None => Ok(()),
    }
}

/// What edgeplan assumes for a family it has no table for: attention and a gated MLP in
/// every layer (in a MoE model, the experts the config describes in its sparse layers),
/// and an untied head when the config does not state the tie.
fn unknown_family_assumptions(
    family: Option<&families::Family>,
    model_type: Option<&str>,
    merged: &Map<String, Value>,
    moe: Option<&Moe>,
    layers: u64,
) -> Vec<String> {
    if family.is_some() {
        return Vec::new();
    }
    let which = match model_type {
        Some(t) => format!("model_type \"{t}\" is not a family edgeplan has a table for"),
        None => "the config names no model_type".into(),
    };
    let mlp = match moe {
        None => {
            "its layers are taken as attention + a gated MLP (gate, up, down) of intermediate_size"
                .to_string()
        }
        Some(m) => {
            let dense = layers - m.sparse_layers;
            let shared = if m.shared_expert_intermediate_size > 0 {
                format!(
                    " plus a shared MLP of {}",
                    m.shared_expert_intermediate_size
                )
            } else {
                String::new()
            };
            format!(
                "its layers are taken as attention + gated MLPs (gate, up, down): {} expert layer(s) of {} experts of {}{shared}, and {dense} dense layer(s) of intermediate_size",
                m.sparse_layers, m.num_experts, m.expert_intermediate_size
            )
        }
    };
    let mut assumed = vec![format!("{which}: {mlp}")];
    if merged.get("tie_word_embeddings").is_none_or(Value::is_null) {
        assumed.push("the config does not state tie_word_embeddings: the head is taken as untied, so a 16-bit path counts its vocab_size x hidden_size x 2 bytes (transformers' own default is tied)".into());
    }
    assumed
}

/// Architectures outside the formulas, by `model_type` ([`UNMODELLED`]) or, for a
/// family edgeplan does not know, by a state-space key ([`UNMODELLED_KEYS`]): exit 65
/// with the reason, rather than a stack of attention layers sized wrong.
fn refuse_unmodelled(
    origin: &str,
    types: &[Option<&str>],
    cfg: &Map<String, Value>,
) -> anyhow::Result<()> {
    for t in types.iter().flatten() {
        if let Some((_, why)) = UNMODELLED.iter().find(|(names, _)| names.contains(t)) {
            return Err(data_error(format!(
                "{origin}: model_type \"{t}\" is not supported ({why}): edgeplan's weight and KV formulas size a stack of attention and MLP layers, and would size this one wrong"
            )));
        }
    }
    if types
        .iter()
        .flatten()
        .any(|t| families::family(t).is_some())
    {
        return Ok(());
    }
    if let Some(key) = UNMODELLED_KEYS.iter().find(|k| cfg.contains_key(**k)) {
        let which = match types.iter().flatten().next() {
            Some(t) => format!("model_type \"{t}\""),
            None => "the config".into(),
        };
        return Err(data_error(format!(
            "{origin}: {which} has a state-space or convolution mixer (key \"{key}\"), which is outside edgeplan's weight and KV formulas; read as a plain attention stack it would be sized wrong"
        )));
    }
    Ok(())
}

/// Rules of a family that a default cannot state: how many KV heads multi-query
/// Falcon, GPT-BigCode, ChatGLM and MPT have, MPT's MLP width, and the MLP width a
/// family derives from `hidden_size` when the config leaves it out (or null).
fn family_rules(
    family: Option<&families::Family>,
    merged: &mut Map<String, Value>,
    defaulted: &mut Vec<String>,
    origin: &str,
) -> anyhow::Result<()> {
    let Some(family) = family else {
        return Ok(());
    };
    if family.model_type == "chatglm" && merged.contains_key("inner_hidden_size") {
        return Err(data_error(format!(
            "{origin}: model_type \"chatglm\" with inner_hidden_size is the first ChatGLM-6B, which is not supported (a GELU MLP of inner_hidden_size, 2D positions, and a vocabulary and head tie its config does not state the way ChatGLM2 and later do): edgeplan would size it wrong"
        )));
    }
    let flag = |m: &Map<String, Value>, key: &str, default: bool| {
        m.get(key).and_then(Value::as_bool).unwrap_or(default)
    };
    let count = |m: &Map<String, Value>, key: &str| m.get(key).and_then(Value::as_u64);
    let heads = count(merged, "num_attention_heads");
    let kv_heads = match family.model_type {
        "falcon" if flag(merged, "new_decoder_architecture", false) => {
            count(merged, "num_kv_heads")
                .or(count(merged, "n_head_kv"))
                .or(heads)
        }
        "falcon" | "gpt_bigcode" if flag(merged, "multi_query", true) => Some(1),
        "falcon" | "gpt_bigcode" => heads,
        "chatglm" if flag(merged, "multi_query_attention", false) => {
            Some(count(merged, "multi_query_group_num").unwrap_or(1))
        }
        "chatglm" => heads,
        "mpt" => {
            let attn = merged.get("attn_config").and_then(Value::as_object);
            let attn_type = attn
                .and_then(|a| a.get("attn_type"))
                .and_then(Value::as_str)
                .unwrap_or("multihead_attention");
            match attn_type {
                "multiquery_attention" => Some(1),
                "grouped_query_attention" => attn
                    .and_then(|a| a.get("kv_n_heads"))
                    .and_then(Value::as_u64)
                    .or(heads),
                _ => heads,
            }
        }
        _ => None,
    };
    if let Some(kv) = kv_heads {
        merged.insert("num_key_value_heads".into(), kv.into());
    }
    if family.model_type == "lfm2" {
        lfm2_mlp_width(merged, origin)?;
    }
    // Granite 4.0 without experts runs only its shared MLP, of shared_intermediate_size.
    if family.model_type == "granitemoehybrid"
        && count(merged, "num_local_experts") == Some(0)
        && let Some(shared) = merged.get("shared_intermediate_size").cloned()
    {
        merged.insert("intermediate_size".into(), shared);
    }
    let hidden = count(merged, "hidden_size");
    if family.model_type == "mpt"
        && let Some(h) = hidden
    {
        mpt_mlp_width(merged, h, origin)?;
    }
    let ffn_missing = merged.get("intermediate_size").is_none_or(Value::is_null);
    if let (Some(mult), Some(h), true) = (family.ffn_mult, hidden, ffn_missing) {
        merged.insert("intermediate_size".into(), mult.saturating_mul(h).into());
        defaulted.push("intermediate_size".into());
    }
    Ok(())
}

/// MPT's MLP width: `expansion_ratio` (4 when unstated) × `d_model`, refused past
/// [`MAX_DIM`] naming the ratio the config stated.
fn mpt_mlp_width(merged: &mut Map<String, Value>, h: u64, origin: &str) -> anyhow::Result<()> {
    let (ratio, stated) = match merged.get("expansion_ratio") {
        None | Some(Value::Null) => (4.0, "4".to_owned()),
        Some(v) => (
            v.as_f64().ok_or_else(|| {
                data_error(format!(
                    "{origin}: field \"expansion_ratio\" must be a number, got {v}"
                ))
            })?,
            v.to_string(),
        ),
    };
    let width = h as f64 * ratio;
    if !(1.0..=MAX_DIM as f64).contains(&width) {
        return Err(data_error(format!(
            "{origin}: field \"expansion_ratio\" ({stated}) times d_model ({h}) is not a plausible MLP width (1 to {MAX_DIM})"
        )));
    }
    merged.insert("intermediate_size".into(), (width as u64).into());
    Ok(())
}

/// LFM2's MLP width, as `Lfm2MLP` derives it from `intermediate_size` (`block_ff_dim`)
/// when `block_auto_adjust_ff_dim` is set: two thirds, times `block_ffn_dim_multiplier`
/// (when set), rounded up to a multiple of `block_multiple_of` (LFM2-1.2B: 12288 → 8192).
fn lfm2_mlp_width(merged: &mut Map<String, Value>, origin: &str) -> anyhow::Result<()> {
    if merged
        .get("block_auto_adjust_ff_dim")
        .and_then(Value::as_bool)
        != Some(true)
    {
        return Ok(());
    }
    let bad = |key: &str, v: &Value| {
        data_error(format!(
            "{origin}: field \"{key}\" must be a positive number giving an MLP width of at most {MAX_DIM}, got {v}"
        ))
    };
    // Missing or implausible: the field checks that follow name it.
    let Some(width) = merged
        .get("intermediate_size")
        .and_then(Value::as_u64)
        .filter(|w| *w <= MAX_DIM)
    else {
        return Ok(());
    };
    let mut width = 2 * width / 3;
    match merged.get("block_ffn_dim_multiplier") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let m = v
                .as_f64()
                .filter(|m| *m > 0.0 && m * width as f64 <= MAX_DIM as f64)
                .ok_or_else(|| bad("block_ffn_dim_multiplier", v))?;
            width = (m * width as f64) as u64;
            let multiple = match merged.get("block_multiple_of") {
                Some(v) => v
                    .as_u64()
                    .filter(|m| (1..=MAX_DIM).contains(m))
                    .ok_or_else(|| bad("block_multiple_of", v))?,
                None => 1,
            };
            width = width.div_ceil(multiple) * multiple;
        }
    }
    merged.insert("intermediate_size".into(), width.into());
    Ok(())
}

/// (edgeplan's key, the config's own name for it), where a family's key name was used.
type Renamed = Vec<(&'static str, &'static str)>;

/// The family's defaults with the config's own keys over them (a key the config sets
/// to null stays null: "no sliding window" overrides a default window), the
/// [`READ_KEYS`] that came from the defaults, and the family key names the config used
/// (edgeplan's key, the config's key), so that errors name what the user wrote.
fn merge_defaults(
    family: Option<&families::Family>,
    cfg: &Map<String, Value>,
    top: &Map<String, Value>,
) -> (Map<String, Value>, Vec<String>, Renamed) {
    let mut merged = family.map(families::defaults).unwrap_or_default();
    let mut defaulted: Vec<String> = READ_KEYS
        .iter()
        .filter(|k| merged.contains_key(**k) && !cfg.contains_key(**k))
        .map(|k| k.to_string())
        .collect();
    for (k, v) in cfg {
        merged.insert(k.clone(), v.clone());
    }
    // The family's own name for a key wins, as it is what the family's class reads
    // (ChatGLM's embedding has padded_vocab_size rows).
    let mut renamed = Vec::new();
    for (canon, alias) in family.map(|f| f.aliases).unwrap_or_default() {
        if let Some(v) = cfg.get(*alias).filter(|v| !v.is_null()) {
            merged.insert(canon.to_string(), v.clone());
            defaulted.retain(|k| k != canon);
            renamed.push((*canon, *alias));
        }
    }
    // A wrapper may state the tie at its top level rather than in text_config.
    if !std::ptr::eq(cfg, top)
        && !cfg.contains_key("tie_word_embeddings")
        && let Some(tie) = top.get("tie_word_embeddings")
    {
        merged.insert("tie_word_embeddings".into(), tie.clone());
        defaulted.retain(|k| k != "tie_word_embeddings");
    }
    (merged, defaulted, renamed)
}

/// Every [`REQUIRED`] key missing (or null) in `merged`, named at once in one error.
fn require_keys(
    merged: &Map<String, Value>,
    family: Option<&families::Family>,
    model_type: Option<&str>,
    cfg: &Map<String, Value>,
    origin: &str,
) -> anyhow::Result<()> {
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|k| merged.get(*k).is_none_or(Value::is_null))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let them = if missing.len() == 1 { "it" } else { "them" };
    let mut which = match (family, model_type) {
        (Some(f), _)
            if missing
                .iter()
                .all(|k| cfg.get(*k).is_some_and(Value::is_null)) =>
        {
            format!("the config sets {them} to null, over {}'s default", f.class)
        }
        (Some(f), _) => format!("{} has no default for {them}", f.class),
        (None, Some(t)) => format!("model_type \"{t}\" is not a family edgeplan has defaults for"),
        (None, None) => "the config names no model_type, so no family defaults apply".into(),
    };
    let foreign: Vec<String> = FOREIGN_SHAPE_KEYS
        .iter()
        .filter(|k| cfg.contains_key(**k))
        .map(|k| format!("\"{k}\""))
        .collect();
    if !foreign.is_empty() {
        which.push_str(&format!(
            "; it names its shape with {}, key names whose meaning depends on the family",
            foreign.join(", ")
        ));
    }
    let quoted: Vec<String> = missing.iter().map(|k| format!("\"{k}\"")).collect();
    Err(data_error(if missing.len() == 1 {
        format!("{origin}: field {} is missing ({which})", quoted[0])
    } else {
        format!(
            "{origin}: fields {} are missing ({which})",
            quoted.join(", ")
        )
    }))
}

/// Whether a defaulted key changed the shape, given whether the model slides, has
/// experts and Mamba-2 layers: those keys matter only then, the others always.
fn default_shaped(key: &str, slides: bool, has_experts: bool, has_mamba: bool) -> bool {
    match key {
        "use_sliding_window"
        | "max_window_layers"
        | "sliding_window_pattern"
        | "sliding_window" => slides,
        "num_experts"
        | "num_local_experts"
        | "num_experts_per_tok"
        | "moe_intermediate_size"
        | "shared_expert_intermediate_size"
        | "decoder_sparse_step" => has_experts,
        k if k.starts_with("mamba_") => has_mamba,
        _ => true,
    }
}

/// The model's name: the config's `_name_or_path`, else `origin`.
fn name_of(top: &Map<String, Value>, origin: &str) -> String {
    top.get("_name_or_path")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| origin.to_owned())
}

/// The dense dimensions of a config, checked.
struct Dims {
    hidden_size: u64,
    intermediate_size: u64,
    num_hidden_layers: u64,
    num_attention_heads: u64,
    num_key_value_heads: u64,
    head_dim: u64,
    vocab_size: u64,
    tie_word_embeddings: bool,
}

/// Field access with errors that name the field.
struct Fields<'a> {
    cfg: &'a Map<String, Value>,
    origin: &'a str,
    /// Where the config used the family's own key name.
    renamed: Renamed,
}

impl Fields<'_> {
    /// `key` as the config wrote it: `"n_embd" (read as "hidden_size")` for a family
    /// name, else `"hidden_size"`.
    fn name(&self, key: &str) -> String {
        match self.renamed.iter().find(|(canon, _)| *canon == key) {
            Some((_, alias)) => format!("\"{alias}\" (read as \"{key}\")"),
            None => format!("\"{key}\""),
        }
    }

    fn bad(&self, key: &str, what: &str) -> anyhow::Error {
        data_error(format!("{}: field {} {what}", self.origin, self.name(key)))
    }

    fn opt_u64(&self, key: &str) -> anyhow::Result<Option<u64>> {
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > MAX_DIM && !UNBOUNDED_KEYS.contains(&key) => Err(self.bad(
                    key,
                    &format!("({n}) is not a plausible size (at most {MAX_DIM})"),
                )),
                Some(n) => Ok(Some(n)),
                None => Err(self.bad(key, &format!("must be a non-negative integer, got {v}"))),
            },
        }
    }

    fn req_u64(&self, key: &str) -> anyhow::Result<u64> {
        match self.opt_u64(key)? {
            Some(0) => Err(self.bad(key, "must be positive, got 0")),
            Some(n) => Ok(n),
            None => Err(self.bad(key, "is missing")),
        }
    }

    fn opt_bool(&self, key: &str) -> anyhow::Result<Option<bool>> {
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.bad(key, &format!("must be true or false, got {v}"))),
        }
    }

    /// The first of `keys` that is set, as a positive count.
    fn first_u64(&self, keys: &[&str]) -> anyhow::Result<Option<(u64, String)>> {
        for key in keys {
            if let Some(n) = self.opt_u64(key)? {
                return Ok(Some((n, key.to_string())));
            }
        }
        Ok(None)
    }

    /// The dense dimensions, with Hugging Face's own fallbacks (no GQA, and
    /// `head_dim = hidden / heads`); implausible counts are errors naming the field.
    fn dims(&self) -> anyhow::Result<Dims> {
        let origin = self.origin;
        let hidden_size = self.req_u64("hidden_size")?;
        let intermediate_size = self.req_u64("intermediate_size")?;
        let num_hidden_layers = self.req_u64("num_hidden_layers")?;
        let num_attention_heads = self.req_u64("num_attention_heads")?;
        let num_key_value_heads = self
            .opt_u64("num_key_value_heads")?
            .unwrap_or(num_attention_heads);
        let head_dim = match self.opt_u64("head_dim")? {
            Some(d) => d,
            None if hidden_size % num_attention_heads == 0 => hidden_size / num_attention_heads,
            None => {
                return Err(data_error(format!(
                    "{origin}: field \"head_dim\" is missing and {} {hidden_size} is not a multiple of {} {num_attention_heads}",
                    self.name("hidden_size"),
                    self.name("num_attention_heads")
                )));
            }
        };
        let vocab_size = self.req_u64("vocab_size")?;
        // PretrainedConfig's default is true, but edgeplan's reading of a config of an
        // unknown family has always been "untied unless stated": kept, and documented.
        let tie_word_embeddings = self.opt_bool("tie_word_embeddings")?.unwrap_or(false);
        if num_key_value_heads > num_attention_heads {
            return Err(data_error(format!(
                "{origin}: field {} ({num_key_value_heads}) exceeds {} ({num_attention_heads})",
                self.name("num_key_value_heads"),
                self.name("num_attention_heads")
            )));
        }
        if num_hidden_layers > 10_000 {
            return Err(data_error(format!(
                "{origin}: field {} ({num_hidden_layers}) is not a plausible layer count",
                self.name("num_hidden_layers")
            )));
        }
        Ok(Dims {
            hidden_size,
            intermediate_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            vocab_size,
            tie_word_embeddings,
        })
    }

    /// Resolves each layer's kind: `layer_types` first, then `full_attention_interval`,
    /// then the family's rule (`rule`; `None` for an unknown family, which gets the
    /// rule its keys imply).
    fn layer_kinds(
        &self,
        layers: usize,
        rule: Option<SlidingRule>,
    ) -> anyhow::Result<(Vec<LayerKind>, Option<u64>)> {
        let window = self.opt_u64("sliding_window")?.filter(|w| *w > 0);
        let kinds = if let Some(types) = self.cfg.get("layer_types").filter(|v| !v.is_null()) {
            self.listed_kinds(types, layers)?
        } else if let Some(idxs) = self.cfg.get("full_attn_idxs").filter(|v| !v.is_null()) {
            // LFM2's older configs: the attention layers' indices, the others convolutions.
            let Some(idxs) = idxs.as_array() else {
                return Err(self.bad("full_attn_idxs", "must be a list of layer indices"));
            };
            let mut full = Vec::with_capacity(idxs.len());
            for v in idxs {
                match v.as_u64() {
                    Some(i) => full.push(i),
                    None => {
                        return Err(self.bad("full_attn_idxs", "must be a list of layer indices"));
                    }
                }
            }
            kinds_by(
                layers,
                |i| full.contains(&(i as u64)),
                LayerKind::LinearAttention,
            )
        } else if let Some(interval) = self.opt_u64("full_attention_interval")? {
            if interval == 0 {
                return Err(self.bad("full_attention_interval", "must be positive, got 0"));
            }
            kinds_by(
                layers,
                |i| (i as u64 + 1).is_multiple_of(interval),
                LayerKind::LinearAttention,
            )
        } else {
            self.ruled_kinds(layers, rule, window)?
        };
        let has_sliding = kinds.contains(&LayerKind::SlidingAttention);
        if has_sliding && window.is_none() {
            return Err(self.bad(
                "sliding_window",
                "is missing but some layers use a sliding window",
            ));
        }
        Ok((kinds, if has_sliding { window } else { None }))
    }

    /// The kinds a `layer_types` list states, one entry per layer.
    fn listed_kinds(&self, types: &Value, layers: usize) -> anyhow::Result<Vec<LayerKind>> {
        let Some(types) = types.as_array() else {
            return Err(self.bad("layer_types", "must be a list of strings"));
        };
        if types.len() != layers {
            return Err(self.bad(
                "layer_types",
                &format!(
                    "has {} entries but num_hidden_layers is {layers}",
                    types.len()
                ),
            ));
        }
        let mut kinds = Vec::with_capacity(layers);
        for (i, t) in types.iter().enumerate() {
            kinds.push(match t.as_str() {
                Some("full_attention" | "attention" | "global_attention") => {
                    LayerKind::FullAttention
                }
                Some("sliding_attention" | "sliding_window_attention" | "local_attention") => {
                    LayerKind::SlidingAttention
                }
                Some("linear_attention" | "mamba" | "conv" | "recurrent") => {
                    LayerKind::LinearAttention
                }
                _ => {
                    return Err(self.bad(
                        &format!("layer_types[{i}]"),
                        &format!("is not a known layer type: {t}"),
                    ));
                }
            });
        }
        Ok(kinds)
    }

    /// The kinds a sliding rule gives: the family's `rule`, or for an unknown family
    /// the rule its keys imply; every layer full when there is no `window`.
    fn ruled_kinds(
        &self,
        layers: usize,
        rule: Option<SlidingRule>,
        window: Option<u64>,
    ) -> anyhow::Result<Vec<LayerKind>> {
        let rule = match rule {
            Some(rule) => rule,
            None if self.cfg.contains_key("sliding_window_pattern") => SlidingRule::EveryNthGlobal,
            None if self.cfg.contains_key("use_sliding_window") => SlidingRule::QwenSwitch,
            None => SlidingRule::AllWhenSet,
        };
        let sliding = LayerKind::SlidingAttention;
        Ok(match (rule, window) {
            (SlidingRule::AllMamba, _) => vec![LayerKind::LinearAttention; layers],
            (_, None) => vec![LayerKind::FullAttention; layers],
            (SlidingRule::AllWhenSet, Some(_)) => vec![sliding; layers],
            (SlidingRule::Alternating, Some(_)) => {
                kinds_by(layers, |i| (i + 1).is_multiple_of(2), sliding)
            }
            (SlidingRule::EveryNthGlobal, Some(_)) => {
                let pattern = self.global_layer_pattern()?;
                kinds_by(layers, |i| (i + 1).is_multiple_of(pattern), sliding)
            }
            (SlidingRule::QwenSwitch, Some(_)) => {
                if self.opt_bool("use_sliding_window")? == Some(true) {
                    let first = self.opt_u64("max_window_layers")?.unwrap_or(0) as usize;
                    kinds_by(layers, |i| i < first, sliding)
                } else {
                    vec![LayerKind::FullAttention; layers]
                }
            }
        })
    }

    /// Gemma 3's `sliding_window_pattern` (or the older `_sliding_window_pattern`):
    /// every how many layers one is global.
    fn global_layer_pattern(&self) -> anyhow::Result<usize> {
        match self.first_u64(&["sliding_window_pattern", "_sliding_window_pattern"])? {
            Some((0, key)) => Err(self.bad(&key, "must be positive, got 0")),
            Some((n, _)) => Ok(n as usize),
            None => Err(self.bad(
                "sliding_window_pattern",
                "is missing but the family puts a global layer every N layers",
            )),
        }
    }

    /// The experts, when the config has more than one.
    fn moe(&self, layers: u64, intermediate_size: u64) -> anyhow::Result<Option<Moe>> {
        let Some((num_experts, _)) = self.first_u64(&[
            "num_experts",
            "num_local_experts",
            "n_routed_experts",
            "moe_num_experts",
        ])?
        else {
            return Ok(None);
        };
        if num_experts <= 1 {
            return Ok(None);
        }
        let Some((experts_per_token, key)) = self.first_u64(&[
            "num_experts_per_tok",
            "experts_per_token",
            "moe_topk",
            "moe_k",
        ])?
        else {
            return Err(self.bad(
                "num_experts_per_tok",
                "is missing but the model has experts",
            ));
        };
        if experts_per_token == 0 || experts_per_token > num_experts {
            return Err(self.bad(
                &key,
                &format!("({experts_per_token}) must be between 1 and the {num_experts} experts"),
            ));
        }
        let expert_intermediate_size = self
            .opt_u64("moe_intermediate_size")?
            .unwrap_or(intermediate_size);
        let gated_shared = self.opt_u64("shared_expert_intermediate_size")?;
        let shared_expert_intermediate_size = match gated_shared {
            Some(s) => s,
            // Granite's shared MLP (`shared_intermediate_size`) has no gate of its own.
            None => match self.opt_u64("shared_intermediate_size")? {
                Some(s) => s,
                None => self.opt_u64("n_shared_experts")?.unwrap_or(0) * expert_intermediate_size,
            },
        };
        let step = self.opt_u64("decoder_sparse_step")?.unwrap_or(1).max(1);
        let freq = self.opt_u64("moe_layer_freq")?.unwrap_or(1).max(1);
        let first_sparse = self.opt_u64("first_k_dense_replace")?.unwrap_or(0);
        let dense_only: Vec<u64> = match self.cfg.get("mlp_only_layers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => {
                let mut out = Vec::with_capacity(list.len());
                for v in list {
                    match v.as_u64() {
                        Some(i) => out.push(i),
                        None => {
                            return Err(
                                self.bad("mlp_only_layers", "must be a list of layer indices")
                            );
                        }
                    }
                }
                out
            }
            Some(_) => return Err(self.bad("mlp_only_layers", "must be a list of layer indices")),
        };
        let sparse_layers = (0..layers)
            .filter(|i| {
                !dense_only.contains(i)
                    && (i + 1).is_multiple_of(step)
                    && i.is_multiple_of(freq)
                    && *i >= first_sparse
            })
            .count() as u64;
        Ok(Some(Moe {
            num_experts,
            experts_per_token,
            expert_intermediate_size,
            shared_expert_intermediate_size,
            sparse_layers,
            shared_expert_gate: gated_shared.is_some_and(|s| s > 0),
        }))
    }

    /// The linear-attention mixer the config describes: Qwen3-Next's Gated DeltaNet
    /// (`linear_num_key_heads` and the other `linear_*` keys), else `None`.
    fn linear_mixer(&self) -> anyhow::Result<Option<LinearMixer>> {
        if self.opt_u64("mamba_n_heads")?.is_some() {
            return self.mamba2().map(Some);
        }
        if self.opt_u64("conv_L_cache")?.is_some() {
            let kernel = self.req_u64("conv_L_cache")?;
            return Ok(Some(LinearMixer::ShortConv { kernel }));
        }
        if self.opt_u64("linear_num_key_heads")?.is_none() {
            return Ok(None);
        }
        Ok(Some(LinearMixer::GatedDeltaNet {
            num_key_heads: self.req_u64("linear_num_key_heads")?,
            num_value_heads: self.req_u64("linear_num_value_heads")?,
            key_head_dim: self.req_u64("linear_key_head_dim")?,
            value_head_dim: self.req_u64("linear_value_head_dim")?,
            conv_kernel: self.req_u64("linear_conv_kernel_dim")?,
        }))
    }

    /// A Mamba-2 mixer from the `mamba_*` keys, checked the way
    /// `GraniteMoeHybridConfig` and `FalconH1Config` check them (the heads divide the
    /// inner size: `mamba_d_ssm`, else `mamba_expand × hidden`).
    fn mamba2(&self) -> anyhow::Result<LinearMixer> {
        let hidden = self.req_u64("hidden_size")?;
        let heads = self.req_u64("mamba_n_heads")?;
        // Falcon-H1 may state the inner size itself (mamba_d_ssm).
        let inner = match self.opt_u64("mamba_d_ssm")? {
            Some(d) => d,
            None => self.req_u64("mamba_expand")? * hidden,
        };
        if !inner.is_multiple_of(heads) {
            return Err(self.bad(
                "mamba_n_heads",
                &format!("({heads}) must divide the Mamba-2 inner size ({inner})"),
            ));
        }
        if let Some(d) = self.opt_u64("mamba_d_head")?
            && d * heads != inner
        {
            return Err(self.bad(
                "mamba_d_head",
                &format!(
                    "({d}) x mamba_n_heads ({heads}) must be mamba_expand x hidden_size ({inner})"
                ),
            ));
        }
        Ok(LinearMixer::Mamba2 {
            inner,
            heads,
            groups: self.req_u64("mamba_n_groups")?,
            state: self.req_u64("mamba_d_state")?,
            conv_kernel: self.req_u64("mamba_d_conv")?,
        })
    }

    /// Latent attention, when the config has a `kv_lora_rank`.
    fn mla(&self) -> anyhow::Result<Option<Mla>> {
        let Some(kv_lora_rank) = self.opt_u64("kv_lora_rank")? else {
            return Ok(None);
        };
        Ok(Some(Mla {
            kv_lora_rank,
            q_lora_rank: self.opt_u64("q_lora_rank")?,
            qk_nope_head_dim: self.req_u64("qk_nope_head_dim")?,
            qk_rope_head_dim: self.req_u64("qk_rope_head_dim")?,
            v_head_dim: self.req_u64("v_head_dim")?,
        }))
    }

    /// `max_position_embeddings`, stretched the way vLLM 0.32 derives its limit
    /// (`_get_and_verify_max_len`, vllm/config/model.py:2583-2616): a `rope_scaling`
    /// (or `rope_parameters`) `factor` multiplies `max_position_embeddings` unless the
    /// type is `su`, `longrope`, `llama3`, `yarn`, `deepseek_yarn` or
    /// `deepseek_llama_scaling` (those configs already state the extended length), and
    /// never for a Gemma 3 config (its limit is already scaled).
    fn context_limit(&self) -> anyhow::Result<Option<ContextLimit>> {
        let Some(max_pos) = self.opt_u64("max_position_embeddings")? else {
            return Ok(None);
        };
        let rope = ["rope_scaling", "rope_parameters"]
            .iter()
            .find_map(|k| self.cfg.get(*k).and_then(Value::as_object));
        let plain = ContextLimit {
            tokens: max_pos,
            source: "max_position_embeddings".into(),
        };
        let Some(rope) = rope else {
            return Ok(Some(plain));
        };
        let kind = ["rope_type", "type"]
            .iter()
            .find_map(|k| rope.get(*k).and_then(Value::as_str))
            .unwrap_or("default");
        const PRESCALED: &[&str] = &[
            "su",
            "longrope",
            "llama3",
            "yarn",
            "deepseek_yarn",
            "deepseek_llama_scaling",
        ];
        let gemma3 = self
            .cfg
            .get("model_type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.contains("gemma3"));
        let factor = rope.get("factor").and_then(Value::as_f64).unwrap_or(1.0);
        if PRESCALED.contains(&kind) || gemma3 || factor <= 1.0 {
            return Ok(Some(plain));
        }
        let scaled = (max_pos as f64 * factor) as u64;
        Ok(Some(ContextLimit {
            tokens: scaled,
            source: format!("max_position_embeddings {max_pos} x {kind} rope factor {factor}"),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Exit, exit_for};

    #[test]
    fn qwen3_1_7b_is_the_study_shape() {
        let m = ModelShape::load("qwen3-1.7b").unwrap();
        let shapes: Vec<(u64, u64)> = m.layer_linears().iter().map(|l| (l.n, l.k)).collect();
        assert_eq!(
            shapes,
            [
                (2048, 2048),
                (1024, 2048),
                (1024, 2048),
                (2048, 2048),
                (6144, 2048),
                (6144, 2048),
                (2048, 6144)
            ]
        );
        assert_eq!((m.lm_head().n, m.lm_head().k), (151936, 2048));
        assert!(m.tie_word_embeddings);
        assert_eq!(m.layer_kind_counts(), (28, 0, 0));
        // 28 layers x (4.19M + 2x2.10M + 4.19M + 3x12.58M) = 1.409 G decoder params.
        assert_eq!(
            m.decoder_linear_params(),
            28 * (2 * 4_194_304 + 2 * 2_097_152 + 3 * 12_582_912)
        );
        // bf16 KV: 2 x 8 heads x 128 x 2 bytes = 4096 bytes per token per layer.
        assert_eq!(m.kv_bytes_per_token_per_layer(2), 4096);
    }

    #[test]
    fn qwen2_5_derives_head_dim_and_keeps_full_attention() {
        let m = ModelShape::load("qwen2.5-0.5b").unwrap();
        assert_eq!(m.head_dim, 64);
        assert_eq!(m.layer_kind_counts(), (24, 0, 0));
        assert_eq!(m.sliding_window, None);
    }

    #[test]
    fn layer_types_and_intervals_give_hybrid_layouts() {
        let cfg = r#"{"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
            "num_attention_heads": 4, "vocab_size": 1000, "sliding_window": 128,
            "layer_types": ["sliding_attention", "full_attention", "linear_attention", "full_attention"]}"#;
        let m = ModelShape::from_config_json(cfg, "h.json").unwrap();
        assert_eq!(m.layer_kind_counts(), (2, 1, 1));
        assert_eq!(m.sliding_window, Some(128));

        let next = r#"{"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 8,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
            "full_attention_interval": 4}"#;
        let m = ModelShape::from_config_json(next, "n.json").unwrap();
        assert_eq!(m.layer_kind_counts(), (2, 0, 6));
        assert_eq!(m.layer_kinds[3], LayerKind::FullAttention);

        let mistral = r#"{"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 1000, "sliding_window": 4096}"#;
        let m = ModelShape::from_config_json(mistral, "m.json").unwrap();
        assert_eq!(m.layer_kind_counts(), (0, 2, 0));
    }

    #[test]
    fn an_already_quantized_checkpoint_is_named() {
        let with = |q: &str| {
            format!(
                r#"{{"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
                "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000{q}}}"#
            )
        };
        let quantized = |q: &str| {
            ModelShape::from_config_json(&with(q), "c.json")
                .unwrap()
                .quantized
        };
        assert_eq!(quantized(""), None);
        assert_eq!(
            quantized(
                r#", "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}"#
            )
            .as_deref(),
            Some("gptq, 4-bit, group 128")
        );
        assert_eq!(
            quantized(
                r#", "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": -1}"#
            )
            .as_deref(),
            Some("awq, 4-bit, per channel")
        );
        assert_eq!(
            quantized(r#", "quantization_config": {"load_in_8bit": true}"#).as_deref(),
            Some("unknown method, 8-bit")
        );
        assert_eq!(
            quantized(
                r#", "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "group_size": 128, "type": "int"}}}}"#
            )
            .as_deref(),
            Some("compressed-tensors, 4-bit, group 128")
        );
        assert_eq!(
            quantized(
                r#", "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4"}"#
            )
            .as_deref(),
            Some("bitsandbytes, 4-bit")
        );
        // The shape is the model's either way.
        let plain = ModelShape::from_config_json(&with(""), "c.json").unwrap();
        let gptq = ModelShape::from_config_json(
            &with(r#", "quantization_config": {"quant_method": "gptq", "bits": 4}"#),
            "c.json",
        )
        .unwrap();
        assert_eq!(plain.decoder_linear_params(), gptq.decoder_linear_params());
    }

    #[test]
    fn text_config_is_read_for_multimodal_configs() {
        let cfg = r#"{"model_type": "vl", "text_config": {"hidden_size": 256,
            "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
            "vocab_size": 1000}}"#;
        assert_eq!(
            ModelShape::from_config_json(cfg, "vl.json")
                .unwrap()
                .hidden_size,
            256
        );
    }

    fn parse(text: &str) -> ModelShape {
        ModelShape::from_config_json(text, "t.json").unwrap()
    }

    #[test]
    fn gemma2_without_layer_types_alternates_sliding_first() {
        // gemma-2-2b's keys: no layer_types, only the window.
        let m = parse(
            r#"{"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216,
            "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
            "head_dim": 256, "vocab_size": 256000, "sliding_window": 4096}"#,
        );
        assert_eq!(m.layer_kind_counts(), (13, 13, 0));
        assert_eq!(m.layer_kinds[0], LayerKind::SlidingAttention);
        assert_eq!(m.layer_kinds[1], LayerKind::FullAttention);
        assert!(m.tie_word_embeddings, "Gemma's default is tied");
        assert_eq!(m.context_limit.unwrap().tokens, 8192);
    }

    #[test]
    fn gemma3_text_config_gets_the_class_defaults() {
        // gemma-3-4b-it: text_config states only what differs from Gemma3TextConfig.
        let m = parse(
            r#"{"model_type": "gemma3", "text_config": {"hidden_size": 2560,
            "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}}"#,
        );
        assert_eq!(
            (m.num_attention_heads, m.num_key_value_heads, m.head_dim),
            (8, 4, 256)
        );
        assert_eq!(m.vocab_size, 262_208);
        assert!(m.tie_word_embeddings);
        // Every 6th layer is global: layers 5, 11, 17, 23, 29.
        assert_eq!(m.layer_kind_counts(), (5, 29, 0));
        assert_eq!(m.layer_kinds[5], LayerKind::FullAttention);
        assert_eq!(m.sliding_window, Some(1024));
        assert_eq!(
            m.context_limit.unwrap().tokens,
            131_072,
            "linear rope is not stretched"
        );
        assert!(m.defaulted.contains(&"num_attention_heads".to_string()));
        // No model_type in text_config: the wrapper's mapping picks the family.
        let m = parse(r#"{"model_type": "gemma3", "text_config": {"num_hidden_layers": 12}}"#);
        assert_eq!(m.layer_kind_counts(), (2, 10, 0));
    }

    #[test]
    fn family_sliding_rules() {
        let mistral = parse(r#"{"model_type": "mistral", "num_hidden_layers": 4}"#);
        assert_eq!(
            mistral.layer_kind_counts(),
            (0, 4, 0),
            "MistralConfig defaults to a 4096 window"
        );
        let v03 =
            parse(r#"{"model_type": "mistral", "num_hidden_layers": 4, "sliding_window": null}"#);
        assert_eq!(
            v03.layer_kind_counts(),
            (4, 0, 0),
            "an explicit null has no window"
        );
        let qwen = parse(
            r#"{"model_type": "qwen2", "num_hidden_layers": 6, "use_sliding_window": true,
            "sliding_window": 1024, "max_window_layers": 4}"#,
        );
        assert_eq!(qwen.layer_kind_counts(), (4, 2, 0));
        let qwen_off = parse(r#"{"model_type": "qwen2", "sliding_window": 32768}"#);
        assert_eq!(qwen_off.layer_kind_counts(), (32, 0, 0));
        let phi = parse(r#"{"model_type": "phi3", "sliding_window": 2047}"#);
        assert_eq!(phi.layer_kind_counts(), (0, 32, 0));
        let oss = parse(r#"{"model_type": "gpt_oss", "num_hidden_layers": 4}"#);
        assert_eq!(oss.layer_kind_counts(), (2, 2, 0));
        let star = parse(r#"{"model_type": "starcoder2"}"#);
        assert_eq!(star.layer_linears().len(), 6, "c_fc and c_proj, no gate");
    }

    #[test]
    fn moe_counts_every_expert_and_the_active_ones() {
        // Qwen3-30B-A3B's shape (defaults fill the rest).
        let m = parse(
            r#"{"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
            "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
            "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8}"#,
        );
        let moe = m.moe.clone().unwrap();
        assert_eq!(
            (moe.num_experts, moe.experts_per_token, moe.sparse_layers),
            (128, 8, 48)
        );
        let attention = 2048 * 4096 * 2 + 2 * 512 * 2048; // q, o; k, v
        let expert = 3 * 768 * 2048;
        assert_eq!(m.decoder_linear_params(), 48 * (attention + 128 * expert));
        assert_eq!(m.router_params(), 48 * 128 * 2048);
        assert_eq!(
            m.active_params_per_token(),
            48 * (attention + 8 * expert) + 48 * 128 * 2048 + 151_936 * 2048
        );
        // Qwen1.5-MoE: a shared expert and its gate; mlp_only_layers stay dense.
        let m =
            parse(r#"{"model_type": "qwen2_moe", "num_hidden_layers": 4, "mlp_only_layers": [0]}"#);
        let moe = m.moe.clone().unwrap();
        assert_eq!(
            (moe.sparse_layers, moe.shared_expert_intermediate_size),
            (3, 5632)
        );
        assert_eq!(m.router_params(), 3 * (60 * 2048 + 2048));
    }

    #[test]
    fn context_limit_follows_vllm_rope_rule() {
        // yarn: max_position_embeddings is already the extended length (vLLM 0.32
        // vllm/config/model.py:2591-2601), whatever original_max_position_embeddings says.
        let m = parse(
            r#"{"model_type": "qwen3", "max_position_embeddings": 40960,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}"#,
        );
        assert_eq!(m.context_limit.unwrap().tokens, 40_960);
        let m = parse(
            r#"{"model_type": "llama", "max_position_embeddings": 131072,
            "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}"#,
        );
        assert_eq!(m.context_limit.unwrap().tokens, 131_072);
        // dynamic (and linear): max_position_embeddings x factor, not the original length.
        let m = parse(
            r#"{"model_type": "llama", "max_position_embeddings": 4096,
            "original_max_position_embeddings": 2048,
            "rope_scaling": {"type": "dynamic", "factor": 2.0}}"#,
        );
        let limit = m.context_limit.unwrap();
        assert_eq!(limit.tokens, 8192);
        assert!(limit.source.contains("dynamic"), "{}", limit.source);
        let m = parse(
            r#"{"model_type": "llama", "max_position_embeddings": 4096,
            "rope_scaling": {"rope_type": "linear", "factor": 4.0}}"#,
        );
        assert_eq!(m.context_limit.unwrap().tokens, 16_384);
        // Gemma 3's limit is already scaled.
        let m = parse(
            r#"{"model_type": "gemma3_text", "max_position_embeddings": 131072,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0}}"#,
        );
        assert_eq!(m.context_limit.unwrap().tokens, 131_072);
    }

    #[test]
    fn bad_fields_are_65_and_named() {
        let cases = [
            (
                r#"{"intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1}"#,
                "\"hidden_size\" is missing",
            ),
            (
                r#"{"model_type": "llama", "hidden_size": -5}"#,
                "\"hidden_size\" must be a non-negative integer",
            ),
            (
                r#"{"model_type": "llama", "hidden_size": 0}"#,
                "\"hidden_size\" must be positive",
            ),
            // A family's own key name is quoted as the config wrote it; a bad value is
            // named as such, not as a missing width that could not be derived from it.
            (
                r#"{"model_type": "gpt2", "n_embd": -768, "n_layer": 12, "n_head": 12}"#,
                "field \"n_embd\" (read as \"hidden_size\") must be a non-negative integer, got -768",
            ),
            (
                r#"{"model_type": "gpt2", "n_embd": 770, "n_layer": 12, "n_head": 12}"#,
                "\"n_embd\" (read as \"hidden_size\") 770 is not a multiple of \"n_head\"",
            ),
            (
                r#"{"model_type": "llama", "hidden_size": null}"#,
                "field \"hidden_size\" is missing (the config sets it to null, over LlamaConfig's default)",
            ),
            (
                r#"{"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 2, "vocab_size": 8, "expansion_ratio": 1e30}"#,
                "field \"expansion_ratio\" (1e+30) times d_model (4096) is not a plausible MLP width",
            ),
            (
                r#"{"model_type": "mystery", "hidden_size": 8, "num_attention_heads": 2}"#,
                "fields \"intermediate_size\", \"num_hidden_layers\", \"vocab_size\" are missing (model_type \"mystery\" is not a family edgeplan has defaults for)",
            ),
            (
                r#"{"model_type": "deepseek_v2", "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 4, "kv_lora_rank": 4}"#,
                "\"qk_nope_head_dim\" is missing",
            ),
            (
                r#"{"model_type": "gemma3", "text_config": {"sliding_window_pattern": 0}}"#,
                "\"sliding_window_pattern\" must be positive",
            ),
            (
                r#"{"model_type": "qwen3_moe", "num_experts_per_tok": 500}"#,
                "\"num_experts_per_tok\" (500) must be between 1 and the 128 experts",
            ),
            (
                r#"{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 4, "layer_types": ["full_attention"]}"#,
                "\"layer_types\" has 1 entries",
            ),
            (
                r#"{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 4, "layer_types": ["weird"]}"#,
                "\"layer_types[0]\"",
            ),
            (
                r#"{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 4, "num_experts": 8}"#,
                "\"num_experts_per_tok\" is missing but the model has experts",
            ),
            (
                r#"{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 3, "vocab_size": 4}"#,
                "\"head_dim\" is missing",
            ),
            (
                r#"{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 4, "tie_word_embeddings": "yes"}"#,
                "\"tie_word_embeddings\" must be true or false",
            ),
            (
                r#"{"model_type": "gemma3n", "text_config": {"model_type": "gemma3n_text", "hidden_size": 2048, "intermediate_size": [8192, 8192], "num_hidden_layers": 2}}"#,
                "Gemma 3n (model_type \"gemma3n\") is not supported: its per-layer embeddings",
            ),
            (
                r#"{"model_type": "gemma3n_text", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 262400}"#,
                "num_kv_shared_layers layers are outside edgeplan's weight and KV formulas",
            ),
            (
                r#"{"model_type": "llama", "hidden_size": 100000000000}"#,
                "\"hidden_size\" (100000000000) is not a plausible size",
            ),
            (
                r#"{"model_type": "llama", "hidden_size": 1048576, "intermediate_size": 1048576, "num_hidden_layers": 9000, "num_attention_heads": 1}"#,
                "parameters, which is not a plausible model",
            ),
            ("[1, 2]", "must be a JSON object"),
            ("{", "not valid JSON"),
        ];
        for (text, expected) in cases {
            let err = ModelShape::from_config_json(text, "c.json").unwrap_err();
            assert_eq!(exit_for(&err), Exit::DataErr, "{text}");
            assert!(err.to_string().contains(expected), "{text}: {err}");
            assert!(err.to_string().starts_with("c.json: "), "{err}");
        }
    }

    #[test]
    fn old_key_names_are_read_per_family() {
        // GPT-2: n_embd, n_layer, n_head; n_inner null is 4 x n_embd; c_fc and c_proj.
        let m = parse(
            r#"{"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
            "n_inner": null, "n_positions": 1024, "vocab_size": 50257}"#,
        );
        assert_eq!(
            (m.hidden_size, m.num_hidden_layers, m.num_attention_heads),
            (768, 12, 12)
        );
        assert_eq!(m.intermediate_size, 3072);
        assert!(!m.gated_mlp && m.tie_word_embeddings);
        assert_eq!(
            m.decoder_linear_params(),
            12 * (4 * 768 * 768 + 2 * 768 * 3072)
        );
        assert_eq!(m.context_limit.unwrap().tokens, 1024);
        // Falcon-7B: multi_query gives one KV head; the MLP is 4 x hidden, not gated.
        let m = parse(
            r#"{"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
            "num_hidden_layers": 32, "multi_query": true, "new_decoder_architecture": false,
            "vocab_size": 65024}"#,
        );
        assert_eq!((m.num_key_value_heads, m.head_dim), (1, 64));
        assert_eq!((m.intermediate_size, m.gated_mlp), (18176, false));
        // Falcon-40B's new decoder architecture states its KV heads.
        let m = parse(
            r#"{"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128,
            "num_hidden_layers": 60, "new_decoder_architecture": true, "num_kv_heads": 8}"#,
        );
        assert_eq!(m.num_key_value_heads, 8);
        // ChatGLM / GLM-4 (remote code): its own names, padded vocabulary, grouped KV.
        let m = parse(
            r#"{"model_type": "chatglm", "num_layers": 40, "padded_vocab_size": 151552,
            "vocab_size": 151329, "hidden_size": 4096, "ffn_hidden_size": 13696,
            "kv_channels": 128, "num_attention_heads": 32, "seq_length": 131072,
            "multi_query_attention": true, "multi_query_group_num": 2}"#,
        );
        assert_eq!(
            (m.num_hidden_layers, m.vocab_size, m.intermediate_size),
            (40, 151_552, 13_696)
        );
        assert_eq!((m.num_key_value_heads, m.head_dim), (2, 128));
        assert!(m.gated_mlp && !m.tie_word_embeddings);
        assert_eq!(m.context_limit.unwrap().tokens, 131_072);
        // MPT: d_model, n_heads, n_layers, expansion_ratio, max_seq_len.
        let m = parse(
            r#"{"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
            "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432,
            "attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 8}}"#,
        );
        assert_eq!(
            (m.intermediate_size, m.num_key_value_heads, m.gated_mlp),
            (16384, 8, false)
        );
        // BLOOM: n_embed; ALiBi, so no position limit.
        let m = parse(
            r#"{"model_type": "bloom", "n_embed": 1024, "n_layer": 24,
            "num_attention_heads": 16, "vocab_size": 250880}"#,
        );
        assert_eq!((m.hidden_size, m.intermediate_size), (1024, 4096));
        assert!(m.context_limit.is_none());
        // Phi-2 and GPT-NeoX: standard names, fc1/fc2 (not gated).
        assert!(!parse(r#"{"model_type": "phi"}"#).gated_mlp);
        assert!(!parse(r#"{"model_type": "gpt_neox"}"#).gated_mlp);
    }

    #[test]
    fn gated_deltanet_layers_are_sized_as_their_projections() {
        // Qwen3-Next-80B-A3B's shape: 36 Gated DeltaNet layers, 12 gated attention.
        let m = parse(
            r#"{"model_type": "qwen3_next", "hidden_size": 2048, "intermediate_size": 5120,
            "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
            "head_dim": 256, "vocab_size": 151936, "full_attention_interval": 4,
            "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32,
            "linear_value_head_dim": 128, "num_experts": 512, "num_experts_per_tok": 10,
            "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512}"#,
        );
        assert_eq!(m.layer_kind_counts(), (12, 0, 36));
        let attention = 2 * 4096 * 2048 + 2 * 512 * 2048 + 2048 * 4096; // gated q, k, v, o
        let gdn = 12288 * 2048 + 64 * 2048 + 8192 * 4 + 2048 * 4096;
        let experts = 512 * 3 * 512 * 2048 + 3 * 512 * 2048;
        assert_eq!(
            m.decoder_linear_params(),
            12 * attention + 36 * gdn + 48 * experts
        );
        // A GDN key without the others is named (a family without Qwen3-Next's defaults).
        let err = ModelShape::from_config_json(
            r#"{"model_type": "mystery_next", "hidden_size": 8, "intermediate_size": 8,
            "num_hidden_layers": 4, "num_attention_heads": 2, "vocab_size": 4,
            "full_attention_interval": 4, "linear_num_key_heads": 2}"#,
            "c.json",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("\"linear_num_value_heads\" is missing"),
            "{err}"
        );
    }

    #[test]
    fn unmodelled_architectures_are_refused_by_name_or_key() {
        for (text, expected) in [
            (
                r#"{"model_type": "bamba", "hidden_size": 8}"#,
                "model_type \"bamba\" is not supported (Bamba places",
            ),
            (
                r#"{"model_type": "llama4", "text_config": {"model_type": "llama4_text"}}"#,
                "model_type \"llama4\" is not supported (Llama 4 adds a shared expert",
            ),
            (
                r#"{"model_type": "openelm", "model_dim": 1280}"#,
                "OpenELM gives every layer its own head counts",
            ),
            (
                r#"{"model_type": "lfm2_moe", "hidden_size": 2048}"#,
                "LFM2-MoE's dense and expert layers",
            ),
            (
                r#"{"model_type": "mystery", "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 4, "mamba_d_state": 16}"#,
                "model_type \"mystery\" has a state-space or convolution mixer (key \"mamba_d_state\")",
            ),
            (
                r#"{"model_type": "chatglm", "hidden_size": 4096, "inner_hidden_size": 16384, "num_layers": 28, "num_attention_heads": 32, "vocab_size": 130528}"#,
                "with inner_hidden_size is the first ChatGLM-6B, which is not supported",
            ),
            (
                r#"{"model_type": "mixformer-sequential", "n_embd": 2560, "n_layer": 32, "n_head": 32, "vocab_size": 51200}"#,
                "it names its shape with \"n_embd\", \"n_layer\", \"n_head\"",
            ),
        ] {
            let err = ModelShape::from_config_json(text, "c.json").unwrap_err();
            assert_eq!(exit_for(&err), Exit::DataErr, "{text}");
            assert!(err.to_string().contains(expected), "{text}: {err}");
            assert!(err.to_string().starts_with("c.json: "), "{err}");
        }
    }

    #[test]
    fn a_vision_config_beside_the_language_keys_is_multimodal() {
        // Qwen2.5-VL's config.json (transformers 4.4x): the language keys at the top.
        let m = parse(
            r#"{"model_type": "qwen2_5_vl", "hidden_size": 2048, "intermediate_size": 11008,
            "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2,
            "vocab_size": 151936, "tie_word_embeddings": true, "sliding_window": 32768,
            "use_sliding_window": false, "vision_config": {"depth": 32}}"#,
        );
        assert!(m.multimodal);
        assert_eq!(m.layer_kind_counts(), (36, 0, 0));
        assert_eq!(m.model_type.as_deref(), Some("qwen2"));
        assert!(!parse(r#"{"model_type": "qwen2"}"#).multimodal);
    }

    #[test]
    fn what_an_unknown_family_leaves_open_is_stated() {
        let m = parse(
            r#"{"model_type": "mystery", "hidden_size": 8, "intermediate_size": 8,
            "num_hidden_layers": 4, "num_attention_heads": 2, "vocab_size": 4,
            "full_attention_interval": 2}"#,
        );
        let all = m.assumed.join("\n");
        assert!(
            all.contains("model_type \"mystery\" is not a family"),
            "{all}"
        );
        assert!(all.contains("the head is taken as untied"), "{all}");
        assert!(
            all.contains("its 2 linear-attention layers' mixer"),
            "{all}"
        );
        // A DeepSeek-V3 style MoE (a family edgeplan has no table for): the note names
        // the experts it sized, not one MLP of intermediate_size in every layer.
        let m = parse(
            r#"{"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 192,
            "moe_intermediate_size": 32, "num_hidden_layers": 4, "num_attention_heads": 2,
            "vocab_size": 16, "n_routed_experts": 8, "num_experts_per_tok": 2,
            "n_shared_experts": 1, "first_k_dense_replace": 1, "tie_word_embeddings": false}"#,
        );
        let all = m.assumed.join("\n");
        assert!(
            all.contains("3 expert layer(s) of 8 experts of 32 plus a shared MLP of 32, and 1 dense layer(s) of intermediate_size"),
            "{all}"
        );
        assert!(
            !all.contains("a gated MLP (gate, up, down) of intermediate_size"),
            "{all}"
        );
        // A known family with its keys stated assumes nothing.
        let m = parse(r#"{"model_type": "llama", "tie_word_embeddings": true}"#);
        assert!(m.assumed.is_empty(), "{:?}", m.assumed);
        // EXAONE names its layer count num_layers.
        let m = parse(
            r#"{"model_type": "exaone", "hidden_size": 2560, "num_layers": 30,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 7168,
            "vocab_size": 102400, "tie_word_embeddings": true}"#,
        );
        assert_eq!((m.num_hidden_layers, m.intermediate_size), (30, 7168));
        assert!(m.assumed.is_empty(), "{:?}", m.assumed);
        // InternVL keeps its language model in llm_config.
        let m = parse(
            r#"{"model_type": "internvl_chat", "llm_config": {"model_type": "qwen2",
            "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
            "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151674},
            "vision_config": {"hidden_size": 1024}}"#,
        );
        assert_eq!((m.hidden_size, m.num_hidden_layers), (896, 24));
        assert!(m.multimodal);
    }

    #[test]
    fn mamba2_layers_are_sized_as_their_projections() {
        // A Granite 4.0-H-Tiny shape: 36 Mamba-2 layers, 4 attention, 64 experts of 512
        // and an ungated shared MLP of 1024 in every layer.
        let mut types = vec!["\"mamba\""; 40];
        for i in [5, 15, 25, 35] {
            types[i] = "\"attention\"";
        }
        let cfg = format!(
            r#"{{"model_type": "granitemoehybrid", "hidden_size": 1536, "num_hidden_layers": 40,
            "num_attention_heads": 12, "num_key_value_heads": 4, "vocab_size": 100352,
            "num_local_experts": 64, "num_experts_per_tok": 6, "intermediate_size": 512,
            "shared_intermediate_size": 1024, "mamba_expand": 2, "mamba_n_heads": 48,
            "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4,
            "tie_word_embeddings": true, "layer_types": [{}]}}"#,
            types.join(", ")
        );
        let m = parse(&cfg);
        assert_eq!(m.layer_kind_counts(), (4, 0, 36));
        let attention = 2 * 1536 * 1536 + 2 * 512 * 1536;
        let conv_dim = 3072 + 2 * 128;
        let mamba = (3072 + conv_dim + 48) * 1536 + conv_dim * 4 + 1536 * 3072;
        let mlp = 64 * 3 * 512 * 1536 + 3 * 1024 * 1536;
        assert_eq!(
            m.decoder_linear_params(),
            4 * attention + 36 * mamba + 40 * mlp
        );
        let moe = m.moe.clone().unwrap();
        assert!(!moe.shared_expert_gate);
        assert_eq!(
            m.linear_state_elements_per_layer(),
            Some(3 * conv_dim + 3072 * 128)
        );
        assert!(
            m.assumed
                .iter()
                .any(|a| a.contains("36 linear-attention layers keep"))
        );
        // Without experts (Granite 4.0-H-Micro) the shared MLP is the layer's MLP.
        let dense = cfg.replace("\"num_local_experts\": 64", "\"num_local_experts\": 0");
        let m = parse(&dense);
        assert!(m.moe.is_none());
        assert_eq!(m.intermediate_size, 1024);
        // Heads that do not divide the inner size are named.
        let bad = cfg.replace("\"mamba_n_heads\": 48", "\"mamba_n_heads\": 50");
        let err = ModelShape::from_config_json(&bad, "c.json").unwrap_err();
        assert!(
            err.to_string()
                .contains("\"mamba_n_heads\" (50) must divide"),
            "{err}"
        );
    }

    #[test]
    fn lfm2_short_convolutions_and_its_adjusted_mlp_width() {
        // LFM2-1.2B's original key names: block_ff_dim 12288 becomes an MLP of 8192.
        let m = parse(
            r#"{"model_type": "lfm2", "hidden_size": 2048, "block_ff_dim": 12288,
            "num_hidden_layers": 16, "num_heads": 32, "num_key_value_heads": 8,
            "vocab_size": 65536, "conv_L_cache": 3, "block_auto_adjust_ff_dim": true,
            "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256,
            "full_attn_idxs": [2, 5, 8, 10, 12, 14], "tie_embedding": true}"#,
        );
        assert_eq!(m.intermediate_size, 8192);
        assert_eq!(m.layer_kind_counts(), (6, 0, 10));
        assert!(m.tie_word_embeddings);
        let attention = 2 * 2048 * 2048 + 2 * 512 * 2048;
        let conv = 3 * 2048 * 2048 + 2048 * 3 + 2048 * 2048;
        assert_eq!(
            m.decoder_linear_params(),
            6 * attention + 10 * conv + 16 * 3 * 8192 * 2048
        );
        assert_eq!(m.linear_state_elements_per_layer(), Some(2 * 2048));
    }

    #[test]
    fn qwen3_5_is_read_through_its_text_config_with_gated_attention() {
        let m = parse(
            r#"{"model_type": "qwen3_5", "tie_word_embeddings": false,
            "text_config": {"model_type": "qwen3_5_text", "hidden_size": 1024,
            "intermediate_size": 3072, "num_hidden_layers": 8, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 248320,
            "linear_num_key_heads": 16, "linear_num_value_heads": 16},
            "vision_config": {"depth": 12}}"#,
        );
        assert_eq!(
            m.layer_kind_counts(),
            (2, 0, 6),
            "full_attention_interval 4"
        );
        assert!(m.attention_output_gate && m.multimodal);
        let attention = 2 * 2048 * 1024 + 2 * 512 * 1024 + 1024 * 2048;
        let gdn = (2 * 2048 + 2 * 2048) * 1024 + 32 * 1024 + 3 * 2048 * 4 + 1024 * 2048;
        assert_eq!(
            m.decoder_linear_params(),
            2 * attention + 6 * gdn + 8 * 3 * 3072 * 1024
        );
    }

    #[test]
    fn unknown_preset_names_the_closest_and_missing_file_is_66() {
        let err = ModelShape::load("qwen3-1.7").unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert!(err.to_string().contains("qwen3-1.7b"), "{err}");
        let err = ModelShape::load("/no/such/config.json").unwrap_err();
        assert_eq!(exit_for(&err), Exit::NoInput);
    }
}
