//! Built-in model presets, written as the Hugging Face `config.json` fields edgeplan
//! reads, so presets and user configs go through the same reader.
//!
//! Values are those of the public configs of the named models. `qwen3-1.7b` is the
//! shape edgeplan assumes for the study's 1.7B model (the study's checkpoint itself is
//! not public).

/// (name, config.json text).
pub const PRESETS: &[(&str, &str)] = &[
    (
        "qwen3-1.7b",
        r#"{"model_type": "qwen3", "hidden_size": 2048, "intermediate_size": 6144,
            "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
            "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": true,
            "max_position_embeddings": 40960, "use_sliding_window": false,
            "sliding_window": null}"#,
    ),
    (
        "qwen2.5-0.5b",
        r#"{"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
            "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
            "vocab_size": 151936, "tie_word_embeddings": true,
            "max_position_embeddings": 32768, "use_sliding_window": false,
            "sliding_window": 32768, "max_window_layers": 24}"#,
    ),
    (
        "llama-3.1-8b",
        r#"{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "vocab_size": 128256, "tie_word_embeddings": false,
            "max_position_embeddings": 131072}"#,
    ),
];
