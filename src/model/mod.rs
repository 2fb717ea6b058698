//! Model shapes: what `bench` runs and what `plan --model` sizes.
//!
//! A [`ModelShape`] comes from a preset name or a Hugging Face `config.json`. Only the
//! fields that decide the linear layers and the KV cache are read: `hidden_size`,
//! `intermediate_size`, `num_hidden_layers`, `num_attention_heads`,
//! `num_key_value_heads`, `head_dim`, `vocab_size`, `tie_word_embeddings`, and the layer
//! kinds (`layer_types`, `full_attention_interval`, `sliding_window_pattern`,
//! `sliding_window` with `use_sliding_window` / `max_window_layers`). Multimodal configs
//! are read through their `text_config`. A missing or malformed required field is exit 65
//! naming the field. Mixture-of-experts configs are refused (their expert layers are not
//! dense linears).

mod presets;

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{data_error, read_error};

pub use presets::PRESETS;

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

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelShape {
    /// Preset name or the config file's path.
    pub name: String,
    pub hidden_size: u64,
    pub intermediate_size: u64,
    pub num_hidden_layers: u64,
    pub num_attention_heads: u64,
    pub num_key_value_heads: u64,
    pub head_dim: u64,
    pub vocab_size: u64,
    pub tie_word_embeddings: bool,
    /// One entry per decoder layer.
    pub layer_kinds: Vec<LayerKind>,
    /// Window of the sliding-attention layers, when there are any.
    pub sliding_window: Option<u64>,
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

impl ModelShape {
    /// The preset names, in the order `--help` lists them.
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|(name, _)| *name).collect()
    }

    /// A preset by name, or `None`.
    pub fn preset(name: &str) -> Option<ModelShape> {
        let (_, text) = PRESETS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        // The presets are tested to parse; a failure here is a bug, reported as such.
        ModelShape::from_config_json(text, name).ok()
    }

    /// A preset name or a path to a `config.json`. A name that is neither an existing
    /// file nor a preset is exit 65 listing the presets (66 when it looks like a path).
    pub fn load(spec: &str) -> anyhow::Result<ModelShape> {
        if let Some(shape) = ModelShape::preset(spec) {
            return Ok(shape);
        }
        let looks_like_path = spec.contains('/') || spec.ends_with(".json");
        if looks_like_path || Path::new(spec).exists() {
            return ModelShape::from_config_file(Path::new(spec));
        }
        Err(data_error(format!(
            "unknown model preset {spec:?}: use one of {} or a path to a config.json",
            ModelShape::preset_names().join(", ")
        )))
    }

    /// Reads a Hugging Face `config.json`.
    pub fn from_config_file(path: &Path) -> anyhow::Result<ModelShape> {
        let text = std::fs::read_to_string(path).map_err(|e| read_error(path, &e))?;
        ModelShape::from_config_json(&text, &path.display().to_string())
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
        // Multimodal configs keep the language model's shape in `text_config`.
        let cfg = match (top.get("hidden_size"), top.get("text_config")) {
            (None, Some(Value::Object(text_cfg))) => text_cfg,
            _ => top,
        };
        let field = Fields { cfg, origin };
        for moe_key in ["num_experts", "num_local_experts", "n_routed_experts"] {
            if field.opt_u64(moe_key)?.is_some_and(|n| n > 1) {
                return Err(data_error(format!(
                    "{origin}: field \"{moe_key}\": mixture-of-experts models are not supported (their experts are not dense linear layers)"
                )));
            }
        }

        let hidden_size = field.req_u64("hidden_size")?;
        let intermediate_size = field.req_u64("intermediate_size")?;
        let num_hidden_layers = field.req_u64("num_hidden_layers")?;
        let num_attention_heads = field.req_u64("num_attention_heads")?;
        // Hugging Face's own defaults: no GQA, and head_dim = hidden / heads.
        let num_key_value_heads = field
            .opt_u64("num_key_value_heads")?
            .unwrap_or(num_attention_heads);
        let head_dim = match field.opt_u64("head_dim")? {
            Some(d) => d,
            None if hidden_size % num_attention_heads == 0 => hidden_size / num_attention_heads,
            None => {
                return Err(data_error(format!(
                    "{origin}: field \"head_dim\" is missing and hidden_size {hidden_size} is not a multiple of num_attention_heads {num_attention_heads}"
                )));
            }
        };
        let vocab_size = field.req_u64("vocab_size")?;
        let tie_word_embeddings = field.opt_bool("tie_word_embeddings")?.unwrap_or(false);
        if num_key_value_heads > num_attention_heads {
            return Err(data_error(format!(
                "{origin}: field \"num_key_value_heads\" ({num_key_value_heads}) exceeds num_attention_heads ({num_attention_heads})"
            )));
        }
        if num_hidden_layers > 10_000 {
            return Err(data_error(format!(
                "{origin}: field \"num_hidden_layers\" ({num_hidden_layers}) is not a plausible layer count"
            )));
        }
        let (layer_kinds, sliding_window) = field.layer_kinds(num_hidden_layers as usize)?;
        let name = top
            .get("_name_or_path")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| origin.to_owned());
        Ok(ModelShape {
            name,
            hidden_size,
            intermediate_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            vocab_size,
            tie_word_embeddings,
            layer_kinds,
            sliding_window,
        })
    }

    /// The linear layers of one decoder layer, in execution order.
    pub fn layer_linears(&self) -> [Linear; 7] {
        let q_out = self.num_attention_heads * self.head_dim;
        let kv_out = self.num_key_value_heads * self.head_dim;
        [
            Linear {
                name: "q_proj",
                n: q_out,
                k: self.hidden_size,
            },
            Linear {
                name: "k_proj",
                n: kv_out,
                k: self.hidden_size,
            },
            Linear {
                name: "v_proj",
                n: kv_out,
                k: self.hidden_size,
            },
            Linear {
                name: "o_proj",
                n: self.hidden_size,
                k: q_out,
            },
            Linear {
                name: "gate_proj",
                n: self.intermediate_size,
                k: self.hidden_size,
            },
            Linear {
                name: "up_proj",
                n: self.intermediate_size,
                k: self.hidden_size,
            },
            Linear {
                name: "down_proj",
                n: self.hidden_size,
                k: self.intermediate_size,
            },
        ]
    }

    /// The output projection (always a separate, untied matrix on the 4-bit paths).
    pub fn lm_head(&self) -> Linear {
        Linear {
            name: "lm_head",
            n: self.vocab_size,
            k: self.hidden_size,
        }
    }

    /// Parameters in the decoder layers' linears (what the 4-bit paths quantize besides
    /// the lm_head). Linear-attention layers are counted with the same q/k/v/o shapes:
    /// an approximation, since their projections differ by architecture.
    pub fn decoder_linear_params(&self) -> u64 {
        let per_layer: u64 = self.layer_linears().iter().map(Linear::params).sum();
        per_layer * self.num_hidden_layers
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
    pub fn kv_bytes_per_token_per_layer(&self, bytes_per_element: u64) -> u64 {
        2 * self.num_key_value_heads * self.head_dim * bytes_per_element
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

/// Field access with errors that name the field.
struct Fields<'a> {
    cfg: &'a Map<String, Value>,
    origin: &'a str,
}

impl Fields<'_> {
    fn bad(&self, key: &str, what: &str) -> anyhow::Error {
        data_error(format!("{}: field \"{key}\" {what}", self.origin))
    }

    fn opt_u64(&self, key: &str) -> anyhow::Result<Option<u64>> {
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
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

    /// Resolves each layer's kind, most explicit source first.
    fn layer_kinds(&self, layers: usize) -> anyhow::Result<(Vec<LayerKind>, Option<u64>)> {
        let window = self.opt_u64("sliding_window")?;
        let kinds = if let Some(types) = self.cfg.get("layer_types").filter(|v| !v.is_null()) {
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
            kinds
        } else if let Some(interval) = self.opt_u64("full_attention_interval")? {
            if interval == 0 {
                return Err(self.bad("full_attention_interval", "must be positive, got 0"));
            }
            (0..layers as u64)
                .map(|i| {
                    if (i + 1) % interval == 0 {
                        LayerKind::FullAttention
                    } else {
                        LayerKind::LinearAttention
                    }
                })
                .collect()
        } else if let Some(pattern) = self.opt_u64("sliding_window_pattern")? {
            if pattern == 0 {
                return Err(self.bad("sliding_window_pattern", "must be positive, got 0"));
            }
            (0..layers as u64)
                .map(|i| {
                    if (i + 1) % pattern == 0 {
                        LayerKind::FullAttention
                    } else {
                        LayerKind::SlidingAttention
                    }
                })
                .collect()
        } else {
            match (self.opt_bool("use_sliding_window")?, window) {
                // Qwen2-style: layers from max_window_layers on use the window.
                (Some(true), Some(_)) => {
                    let first = self.opt_u64("max_window_layers")?.unwrap_or(0) as usize;
                    (0..layers)
                        .map(|i| {
                            if i >= first {
                                LayerKind::SlidingAttention
                            } else {
                                LayerKind::FullAttention
                            }
                        })
                        .collect()
                }
                // Mistral-style: a window and no switch means every layer slides.
                (None, Some(_)) => vec![LayerKind::SlidingAttention; layers],
                _ => vec![LayerKind::FullAttention; layers],
            }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Exit, exit_for};

    #[test]
    fn every_preset_parses() {
        for name in ModelShape::preset_names() {
            let shape = ModelShape::preset(name).expect(name);
            assert_eq!(
                shape.layer_kinds.len() as u64,
                shape.num_hidden_layers,
                "{name}"
            );
        }
    }

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

    #[test]
    fn bad_fields_are_65_and_named() {
        let cases = [
            (
                r#"{"intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1}"#,
                "\"hidden_size\" is missing",
            ),
            (
                r#"{"hidden_size": -5}"#,
                "\"hidden_size\" must be a non-negative integer",
            ),
            (r#"{"hidden_size": 0}"#, "\"hidden_size\" must be positive"),
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
                "\"num_experts\"",
            ),
            (
                r#"{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 3, "vocab_size": 4}"#,
                "\"head_dim\" is missing",
            ),
            (
                r#"{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 4, "tie_word_embeddings": "yes"}"#,
                "\"tie_word_embeddings\" must be true or false",
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
    fn unknown_preset_lists_the_presets_and_missing_file_is_66() {
        let err = ModelShape::load("gpt-9").unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert!(err.to_string().contains("qwen3-1.7b"), "{err}");
        let err = ModelShape::load("/no/such/config.json").unwrap_err();
        assert_eq!(exit_for(&err), Exit::NoInput);
    }
}
