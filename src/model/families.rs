//! Hugging Face config-class defaults, per `model_type`, and each family's rule for
//! which layers slide.
//!
//! A `config.json` written by `save_pretrained` leaves out every key equal to its
//! config class's default (Gemma 3's `text_config` is the best-known case: no head
//! counts, no `head_dim`, no vocabulary size), so a reader must know the defaults to get
//! the shape transformers and vLLM build. The table below is edgeplan's own, written
//! from the `__init__` defaults (or dataclass fields) of transformers'
//! `src/transformers/models/<family>/configuration_<family>.py` for each family; only the
//! keys edgeplan reads are listed. A key whose class default is `None` (for example
//! `num_key_value_heads` in `LlamaConfig`, which then means "as many as the attention
//! heads") is left out, so the reader's own fallback applies. docs/memory.md lists the
//! families.

use serde_json::{Map, Value};

/// How a family decides which layers use the sliding window when the config has no
/// `layer_types` list (a `layer_types` list always wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlidingRule {
    /// Every layer slides when `sliding_window` is set (not null): Mistral, Mixtral,
    /// Phi-3, Starcoder2 and any family without a rule of its own.
    AllWhenSet,
    /// Layers alternate, sliding first: layer `i` slides when `(i + 1) % 2 != 0`
    /// (Gemma 2, gpt-oss: `configuration_gemma2.py`, `configuration_gpt_oss.py`).
    Alternating,
    /// Every `sliding_window_pattern`-th layer is global, the others slide: layer `i`
    /// slides when `(i + 1) % pattern != 0` (Gemma 3, `configuration_gemma3.py`).
    EveryNthGlobal,
    /// Qwen: only with `use_sliding_window: true`, and then the layers from
    /// `max_window_layers` on (`configuration_qwen2.py`).
    QwenSwitch,
    /// No window; without `layer_types` every layer is a Mamba-2 mixer
    /// (`GraniteMoeHybridConfig.layers_block_type`).
    AllMamba,
}

/// One family: its `model_type`, the transformers class the defaults come from, the
/// defaults (a JSON object), its sliding rule and whether its MLP is gated.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub model_type: &'static str,
    /// The transformers config class (in `configuration_<family>.py`).
    pub class: &'static str,
    /// Defaults for the keys edgeplan reads, as JSON object text.
    pub defaults: &'static str,
    pub sliding: SlidingRule,
    /// gate + up + down (SwiGLU/GeGLU) when true; up + down (`c_fc`, `c_proj`) when false.
    pub gated_mlp: bool,
    /// The family's own names for the keys edgeplan reads, as (edgeplan's key, the
    /// family's key): GPT-2's `n_embd` is `hidden_size` (the `attribute_map` of the
    /// config class, or the names its `__init__` takes).
    pub aliases: &'static [(&'static str, &'static str)],
    /// When the MLP width is left out (or null), it is this many times `hidden_size`
    /// (GPT-2's `n_inner: null` is 4 × `n_embd`); `None` when the defaults state it.
    pub ffn_mult: Option<u64>,
}

/// The fields most families share: no other key names, the MLP width stated.
const PLAIN: Family = Family {
    model_type: "",
    class: "",
    defaults: "{}",
    sliding: SlidingRule::AllWhenSet,
    gated_mlp: true,
    aliases: &[],
    ffn_mult: None,
};

/// GPT-2's key names, shared by GPT-J, GPT-BigCode and Phi-1/2's remote-code configs.
const GPT2_NAMES: &[(&str, &str)] = &[
    ("hidden_size", "n_embd"),
    ("num_hidden_layers", "n_layer"),
    ("num_attention_heads", "n_head"),
    ("intermediate_size", "n_inner"),
    ("max_position_embeddings", "n_positions"),
];

/// Families whose config classes edgeplan knows. A multimodal config is read through
/// its `text_config`, whose own `model_type` (or the mapping in [`text_family_of`])
/// picks the row.
pub const FAMILIES: &[Family] = &[
    Family {
        model_type: "llama",
        class: "LlamaConfig",
        defaults: r#"{"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
            "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
            "tie_word_embeddings": false}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "mistral",
        class: "MistralConfig",
        defaults: r#"{"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "max_position_embeddings": 131072, "tie_word_embeddings": false,
            "sliding_window": 4096}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "mixtral",
        class: "MixtralConfig",
        defaults: r#"{"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "max_position_embeddings": 131072, "tie_word_embeddings": false,
            "num_experts_per_tok": 2, "num_local_experts": 8}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "qwen2",
        class: "Qwen2Config",
        defaults: r#"{"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
            "max_position_embeddings": 32768, "tie_word_embeddings": false,
            "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28}"#,
        sliding: SlidingRule::QwenSwitch,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "qwen2_moe",
        class: "Qwen2MoeConfig",
        defaults: r#"{"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
            "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
            "max_position_embeddings": 32768, "tie_word_embeddings": false,
            "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28,
            "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
            "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4,
            "num_experts": 60, "mlp_only_layers": []}"#,
        sliding: SlidingRule::QwenSwitch,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "qwen3",
        class: "Qwen3Config",
        defaults: r#"{"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
            "head_dim": 128, "max_position_embeddings": 32768, "tie_word_embeddings": false,
            "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28}"#,
        sliding: SlidingRule::QwenSwitch,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "qwen3_moe",
        class: "Qwen3MoeConfig",
        defaults: r#"{"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
            "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 4,
            "max_position_embeddings": 32768, "tie_word_embeddings": false,
            "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28,
            "decoder_sparse_step": 1, "moe_intermediate_size": 768,
            "num_experts_per_tok": 8, "num_experts": 128, "mlp_only_layers": []}"#,
        sliding: SlidingRule::QwenSwitch,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "gemma",
        class: "GemmaConfig",
        defaults: r#"{"vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
            "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
            "head_dim": 256, "max_position_embeddings": 8192, "tie_word_embeddings": true}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "gemma2",
        class: "Gemma2Config",
        defaults: r#"{"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
            "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
            "head_dim": 256, "max_position_embeddings": 8192, "tie_word_embeddings": true,
            "sliding_window": 4096}"#,
        sliding: SlidingRule::Alternating,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "gemma3_text",
        class: "Gemma3TextConfig",
        defaults: r#"{"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
            "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
            "head_dim": 256, "max_position_embeddings": 131072, "tie_word_embeddings": true,
            "sliding_window": 4096, "sliding_window_pattern": 6}"#,
        sliding: SlidingRule::EveryNthGlobal,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "phi3",
        class: "Phi3Config",
        defaults: r#"{"vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192,
            "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 4096,
            "original_max_position_embeddings": 4096, "tie_word_embeddings": false}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "phimoe",
        class: "PhimoeConfig",
        defaults: r#"{"vocab_size": 32064, "hidden_size": 4096, "intermediate_size": 6400,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "max_position_embeddings": 131072, "tie_word_embeddings": false,
            "num_experts_per_tok": 2, "num_local_experts": 16}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "starcoder2",
        class: "Starcoder2Config (tie_word_embeddings: PretrainedConfig's default)",
        defaults: r#"{"vocab_size": 49152, "hidden_size": 3072, "intermediate_size": 12288,
            "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2,
            "max_position_embeddings": 4096, "tie_word_embeddings": true}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: false,
        ..PLAIN
    },
    Family {
        model_type: "olmoe",
        class: "OlmoeConfig",
        defaults: r#"{"vocab_size": 50304, "hidden_size": 2048, "intermediate_size": 2048,
            "num_hidden_layers": 16, "num_attention_heads": 16, "max_position_embeddings": 4096,
            "tie_word_embeddings": false, "num_experts_per_tok": 8, "num_experts": 64}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "gpt_oss",
        class: "GptOssConfig",
        defaults: r#"{"vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880,
            "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
            "head_dim": 64, "max_position_embeddings": 131072, "tie_word_embeddings": false,
            "sliding_window": 128, "num_local_experts": 128, "num_experts_per_tok": 4}"#,
        sliding: SlidingRule::Alternating,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "smollm3",
        class: "SmolLM3Config",
        defaults: r#"{"vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
            "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
            "max_position_embeddings": 32768, "tie_word_embeddings": true,
            "use_sliding_window": false, "max_window_layers": 28}"#,
        sliding: SlidingRule::QwenSwitch,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "granite",
        class: "GraniteConfig",
        defaults: r#"{"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
            "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
            "tie_word_embeddings": false}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "olmo2",
        class: "Olmo2Config",
        defaults: r#"{"vocab_size": 50304, "hidden_size": 4096, "intermediate_size": 11008,
            "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
            "tie_word_embeddings": false}"#,
        sliding: SlidingRule::AllWhenSet,
        gated_mlp: true,
        ..PLAIN
    },
    Family {
        model_type: "gpt2",
        class: "GPT2Config",
        defaults: r#"{"vocab_size": 50257, "hidden_size": 768, "num_hidden_layers": 12,
            "num_attention_heads": 12, "max_position_embeddings": 1024,
            "tie_word_embeddings": true}"#,
        gated_mlp: false,
        aliases: GPT2_NAMES,
        ffn_mult: Some(4),
        ..PLAIN
    },
    Family {
        model_type: "gpt_bigcode",
        class: "GPTBigCodeConfig (multi_query: one KV head)",
        defaults: r#"{"vocab_size": 50257, "hidden_size": 768, "num_hidden_layers": 12,
            "num_attention_heads": 12, "max_position_embeddings": 1024,
            "tie_word_embeddings": true}"#,
        gated_mlp: false,
        aliases: GPT2_NAMES,
        ffn_mult: Some(4),
        ..PLAIN
    },
    Family {
        model_type: "gptj",
        class: "GPTJConfig",
        defaults: r#"{"vocab_size": 50400, "hidden_size": 4096, "num_hidden_layers": 28,
            "num_attention_heads": 16, "max_position_embeddings": 2048,
            "tie_word_embeddings": false}"#,
        gated_mlp: false,
        aliases: GPT2_NAMES,
        ffn_mult: Some(4),
        ..PLAIN
    },
    Family {
        model_type: "gpt_neox",
        class: "GPTNeoXConfig",
        defaults: r#"{"vocab_size": 50432, "hidden_size": 6144, "intermediate_size": 24576,
            "num_hidden_layers": 44, "num_attention_heads": 64, "max_position_embeddings": 2048,
            "tie_word_embeddings": false}"#,
        gated_mlp: false,
        ..PLAIN
    },
    Family {
        model_type: "phi",
        class: "PhiConfig",
        defaults: r#"{"vocab_size": 51200, "hidden_size": 2048, "intermediate_size": 8192,
            "num_hidden_layers": 24, "num_attention_heads": 32, "max_position_embeddings": 2048,
            "tie_word_embeddings": false}"#,
        gated_mlp: false,
        ..PLAIN
    },
    Family {
        model_type: "falcon",
        class: "FalconConfig (multi_query: one KV head unless new_decoder_architecture)",
        defaults: r#"{"vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32,
            "num_attention_heads": 71, "max_position_embeddings": 2048,
            "tie_word_embeddings": true}"#,
        gated_mlp: false,
        aliases: &[
            ("hidden_size", "n_embed"),
            ("num_hidden_layers", "n_layer"),
            ("num_attention_heads", "n_head"),
            ("intermediate_size", "ffn_hidden_size"),
        ],
        ffn_mult: Some(4),
        ..PLAIN
    },
    Family {
        model_type: "mpt",
        class: "MptConfig (MLP: expansion_ratio x d_model)",
        defaults: r#"{"vocab_size": 50368, "hidden_size": 2048, "num_hidden_layers": 24,
            "num_attention_heads": 16, "max_position_embeddings": 2048,
            "tie_word_embeddings": true}"#,
        gated_mlp: false,
        aliases: &[
            ("hidden_size", "d_model"),
            ("num_hidden_layers", "n_layers"),
            ("num_attention_heads", "n_heads"),
            ("max_position_embeddings", "max_seq_len"),
        ],
        ..PLAIN
    },
    Family {
        model_type: "bloom",
        class: "BloomConfig (ALiBi: no position limit)",
        defaults: r#"{"vocab_size": 250880, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 8, "tie_word_embeddings": true}"#,
        gated_mlp: false,
        aliases: &[
            ("hidden_size", "n_embed"),
            ("num_hidden_layers", "n_layer"),
            ("num_attention_heads", "n_head"),
        ],
        ffn_mult: Some(4),
        ..PLAIN
    },
    Family {
        model_type: "chatglm",
        class: "ChatGLMConfig (THUDM's remote code)",
        defaults: r#"{"vocab_size": 65024, "hidden_size": 4096, "intermediate_size": 13696,
            "num_hidden_layers": 28, "num_attention_heads": 32, "head_dim": 128,
            "max_position_embeddings": 2048, "tie_word_embeddings": false}"#,
        aliases: &[
            ("num_hidden_layers", "num_layers"),
            ("intermediate_size", "ffn_hidden_size"),
            ("vocab_size", "padded_vocab_size"),
            ("max_position_embeddings", "seq_length"),
            ("head_dim", "kv_channels"),
        ],
        ..PLAIN
    },
    Family {
        model_type: "glm",
        class: "GlmConfig",
        defaults: r#"{"vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 13696,
            "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
            "head_dim": 128, "max_position_embeddings": 131072, "tie_word_embeddings": false}"#,
        ..PLAIN
    },
    Family {
        model_type: "glm4",
        class: "Glm4Config",
        defaults: r#"{"vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 13696,
            "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
            "head_dim": 128, "max_position_embeddings": 131072, "tie_word_embeddings": false}"#,
        ..PLAIN
    },
    Family {
        model_type: "exaone",
        class: "ExaoneConfig (LG's remote code; num_layers)",
        defaults: r#"{"vocab_size": 102400, "hidden_size": 2048, "num_hidden_layers": 32,
            "num_attention_heads": 32, "max_position_embeddings": 2048,
            "tie_word_embeddings": true}"#,
        aliases: &[("num_hidden_layers", "num_layers")],
        ffn_mult: Some(4),
        ..PLAIN
    },
    Family {
        model_type: "granitemoehybrid",
        class: "GraniteMoeHybridConfig (Granite 4.0, 4.0-H)",
        defaults: r#"{"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
            "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
            "tie_word_embeddings": false, "num_local_experts": 8, "num_experts_per_tok": 2,
            "shared_intermediate_size": 1024, "mamba_n_heads": 128, "mamba_n_groups": 1,
            "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2}"#,
        sliding: SlidingRule::AllMamba,
        ..PLAIN
    },
    Family {
        model_type: "qwen3_next",
        class: "Qwen3NextConfig (Gated DeltaNet + gated attention, MoE)",
        defaults: r#"{"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
            "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
            "head_dim": 256, "max_position_embeddings": 32768, "tie_word_embeddings": false,
            "full_attention_interval": 4, "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32,
            "decoder_sparse_step": 1, "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10,
            "num_experts": 512, "mlp_only_layers": []}"#,
        ..PLAIN
    },
    Family {
        model_type: "qwen3_5_text",
        class: "Qwen3_5TextConfig (Gated DeltaNet + gated attention)",
        defaults: r#"{"vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288,
            "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 4,
            "head_dim": 256, "max_position_embeddings": 32768, "tie_word_embeddings": false,
            "full_attention_interval": 4, "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32}"#,
        ..PLAIN
    },
    Family {
        model_type: "falcon_h1",
        class: "FalconH1Config (a Mamba-2 mixer beside attention in every layer)",
        defaults: r#"{"vocab_size": 128000, "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "max_position_embeddings": 8192, "tie_word_embeddings": false,
            "mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_n_groups": 1,
            "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2}"#,
        ..PLAIN
    },
    Family {
        model_type: "lfm2",
        class: "Lfm2Config (LFM2: short-convolution and attention layers)",
        defaults: r#"{"vocab_size": 65536, "hidden_size": 2560, "intermediate_size": 12288,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "max_position_embeddings": 128000, "tie_word_embeddings": true,
            "conv_L_cache": 3, "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0,
            "block_auto_adjust_ff_dim": true}"#,
        aliases: &[
            ("intermediate_size", "block_ff_dim"),
            ("num_attention_heads", "num_heads"),
            ("tie_word_embeddings", "tie_embedding"),
        ],
        ..PLAIN
    },
];

/// The family row for a `model_type`, or for the family another name belongs to: a
/// vision-language model's text model (`qwen2_5_vl_text`, or `qwen2_5_vl` itself when
/// its language keys sit at the top level) and Falcon's remote-code names.
pub fn family(model_type: &str) -> Option<&'static Family> {
    let row = |t: &str| FAMILIES.iter().find(|f| f.model_type == t);
    row(model_type).or_else(|| {
        let same = match model_type {
            "qwen2_vl" | "qwen2_5_vl" | "qwen2_vl_text" | "qwen2_5_vl_text" => "qwen2",
            "qwen3_vl_text" => "qwen3",
            "qwen3_vl_moe_text" => "qwen3_moe",
            "RefinedWeb" | "RefinedWebModel" => "falcon",
            _ => return None,
        };
        row(same)
    })
}

/// The language model's family inside a multimodal wrapper when its `text_config` has
/// no `model_type` of its own: Gemma 3's `gemma3` holds a `gemma3_text` model.
pub fn text_family_of(wrapper_type: &str) -> Option<&'static str> {
    Some(match wrapper_type {
        "gemma3" => "gemma3_text",
        "mistral3" => "mistral",
        "llava" | "llava_next" | "mllama" => "llama",
        "qwen2_vl" | "qwen2_5_vl" => "qwen2",
        "qwen3_5" => "qwen3_5_text",
        "qwen3_5_moe" => "qwen3_5_moe_text",
        "lfm2_vl" => "lfm2",
        _ => return None,
    })
}

/// The defaults of `family` as a JSON map.
pub fn defaults(family: &Family) -> Map<String, Value> {
    match serde_json::from_str(family.defaults) {
        Ok(Value::Object(map)) => map,
        // The table is tested to parse; an empty map keeps a bug from panicking.
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_row_parses_and_is_unique() {
        for (i, f) in FAMILIES.iter().enumerate() {
            let map = defaults(f);
            if f.ffn_mult.is_none() && f.model_type != "mpt" {
                assert!(map.contains_key("intermediate_size"), "{}", f.model_type);
            }
            for (canon, alias) in f.aliases {
                let derived = *canon == "intermediate_size" && f.ffn_mult.is_some();
                assert!(
                    derived || map.contains_key(*canon),
                    "{}: {alias}",
                    f.model_type
                );
            }
            for key in [
                "vocab_size",
                "hidden_size",
                "num_hidden_layers",
                "num_attention_heads",
                "tie_word_embeddings",
            ] {
                assert!(map.contains_key(key), "{}: {key}", f.model_type);
            }
            assert!(
                FAMILIES[..i].iter().all(|g| g.model_type != f.model_type),
                "{} twice",
                f.model_type
            );
        }
        for wrapper in ["gemma3", "mistral3", "llava", "qwen2_vl"] {
            assert!(
                family(text_family_of(wrapper).unwrap()).is_some(),
                "{wrapper}"
            );
        }
    }
}
