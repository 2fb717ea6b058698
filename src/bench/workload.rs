//! What one model step asks of the GEMM kernels, and how much of it `bench` times.
//!
//! A [`Workload`] is the list of linear layers of one decoder layer, the layer count and
//! the lm_head (always a separate, quantized matrix: the study unties it). From it come
//! the bytes and multiply-accumulates of a step, and the two timing plans:
//! - decode ([`DecodePlan`]): M = 1 over distinct per-layer buffers whose total exceeds
//!   twice the L3, so every weight comes from DRAM as in real decode; when fewer layers
//!   are timed than the model has, the step time is extrapolated from them;
//! - prefill: M = `--prefill-tokens` over one or two layers (it is compute-bound, so
//!   cache residency changes little), extrapolated to every layer; the lm_head is left out
//!   because a prefill needs the logits of the last position only.
//!
//! It also sizes the memory a run will hold, so a model that cannot fit is refused
//! before anything is allocated.

use serde::Serialize;

use super::backend::KernelPath;
use super::request::Effort;
use crate::error::data_error;
use crate::model::ModelShape;

/// The int4 group size along K (kernels.md §1).
pub const GROUP: usize = 128;

/// One linear layer: `y[M][n] = x[M][k] · W[n][k]ᵀ`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Gemm {
    pub name: String,
    pub n: usize,
    pub k: usize,
}

impl Gemm {
    pub fn params(&self) -> u64 {
        self.n as u64 * self.k as u64
    }

    /// Bytes of this matrix on `path` (N padded to a 64-column panel for int4).
    pub fn bytes(&self, path: KernelPath) -> u64 {
        match path {
            KernelPath::Bf16 => self.params() * 2,
            KernelPath::W4A8 | KernelPath::W4A16 => {
                let n = self.n.div_ceil(64) as u64 * 64;
                // 64 columns x 128 k per 4352-byte record.
                n / 64 * (self.k / GROUP) as u64 * 4352
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Workload {
    pub model: String,
    pub layers: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub vocab_size: usize,
    pub per_layer: Vec<Gemm>,
    pub lm_head: Gemm,
}

/// How decode is timed: `instances` distinct layer buffers (copies of the model's layers
/// in order, wrapping around when the model is small) plus the lm_head, walked once per
/// sample; the layers' time is scaled by `scale` to the model's layer count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DecodePlan {
    pub instances: usize,
    pub scale: f64,
    pub working_set_bytes: u64,
}

fn to_usize(v: u64, field: &str, origin: &str) -> anyhow::Result<usize> {
    usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
        data_error(format!(
            "{origin}: field \"{field}\" ({v}) must be a positive size"
        ))
    })
}

impl Workload {
    /// The GEMMs of a model shape. Every K must be a multiple of the 128-weight group.
    pub fn from_model(shape: &ModelShape) -> anyhow::Result<Workload> {
        let origin = shape.name.as_str();
        let mut per_layer = Vec::new();
        for lin in shape.layer_linears() {
            per_layer.push(Gemm {
                name: lin.name.to_string(),
                n: to_usize(lin.n, lin.name, origin)?,
                k: to_usize(lin.k, lin.name, origin)?,
            });
        }
        let head = shape.lm_head();
        let w = Workload {
            model: shape.name.clone(),
            layers: to_usize(shape.num_hidden_layers, "num_hidden_layers", origin)?,
            hidden_size: to_usize(shape.hidden_size, "hidden_size", origin)?,
            intermediate_size: to_usize(shape.intermediate_size, "intermediate_size", origin)?,
            vocab_size: to_usize(shape.vocab_size, "vocab_size", origin)?,
            per_layer,
            lm_head: Gemm {
                name: "lm_head".into(),
                n: to_usize(head.n, "vocab_size", origin)?,
                k: to_usize(head.k, "hidden_size", origin)?,
            },
        };
        w.validate()?;
        Ok(w)
    }

    /// Refuses shapes the packed layout cannot hold, naming the config field.
    pub fn validate(&self) -> anyhow::Result<()> {
        for g in self.per_layer.iter().chain(std::iter::once(&self.lm_head)) {
            if !g.k.is_multiple_of(GROUP) {
                let field = match g.name.as_str() {
                    "down_proj" => "intermediate_size",
                    "o_proj" => "num_attention_heads x head_dim",
                    _ => "hidden_size",
                };
                return Err(data_error(format!(
                    "{}: field \"{field}\": {} has K = {}, not a multiple of the {GROUP}-weight quantization group",
                    self.model, g.name, g.k
                )));
            }
            if g.params() > (1u64 << 34) {
                return Err(data_error(format!(
                    "{}: {} is {}x{}, too large for one GEMM",
                    self.model, g.name, g.n, g.k
                )));
            }
        }
        Ok(())
    }

    pub fn layer_params(&self) -> u64 {
        self.per_layer.iter().map(Gemm::params).sum()
    }

    pub fn layer_bytes(&self, path: KernelPath) -> u64 {
        self.per_layer.iter().map(|g| g.bytes(path)).sum()
    }

    /// Weights of a whole decode step: every layer plus the lm_head.
    pub fn step_params(&self) -> u64 {
        self.layer_params() * self.layers as u64 + self.lm_head.params()
    }

    #[cfg(test)]
    pub fn step_bytes(&self, path: KernelPath) -> u64 {
        self.layer_bytes(path) * self.layers as u64 + self.lm_head.bytes(path)
    }

    /// The decode rotation: all layers (quick: at most 4), and more copies when needed
    /// so the working set is at least twice the L3.
    ///
    /// The rule: a weight byte is read again only after at least 2 x L3 of other bytes
    /// have been read, so none of it can still be cached when it comes round. An LRU
    /// cache already misses at 1 x; the factor 2 covers other replacement policies and
    /// the private L2s (an AMD L3 is their victim cache: on the Zen 4 VM, 32 MiB L3 plus
    /// 2 x 1 MiB L2 is under the 64 MiB floor). Measured there: bf16 decode at 30 x the
    /// L3 and int4 at 8 x read the same share of the bandwidth probe, so the rotation
    /// is not hitting a cache (docs/lab/bench-runs.md).
    pub fn decode_plan(&self, path: KernelPath, l3_bytes: u64, effort: Effort) -> DecodePlan {
        let layer = self.layer_bytes(path).max(1);
        let head = self.lm_head.bytes(path);
        let target = 2 * l3_bytes;
        let needed = target.saturating_sub(head).div_ceil(layer) as usize;
        let base = if effort.is_quick() {
            self.layers.min(4)
        } else {
            self.layers
        };
        let instances = base.max(needed).max(1);
        DecodePlan {
            instances,
            scale: self.layers as f64 / instances as f64,
            working_set_bytes: instances as u64 * layer + head,
        }
    }

    /// Layers timed in prefill: one (every layer has the same shapes, and prefill is
    /// compute-bound, so more layers add time, not information).
    pub fn prefill_layers(&self, _effort: Effort) -> usize {
        1
    }

    /// The most bytes a run holds at once for `path`: the decode rotation (the larger
    /// of the two phases), the unpacked staging of the largest matrix while it is packed
    /// (two bytes per bf16 weight; int4 weights are generated packed), activations and
    /// outputs.
    pub fn path_bytes(
        &self,
        path: KernelPath,
        l3_bytes: u64,
        effort: Effort,
        tokens: usize,
    ) -> u64 {
        let decode = self.decode_plan(path, l3_bytes, effort).working_set_bytes;
        let largest = self
            .per_layer
            .iter()
            .chain([&self.lm_head])
            .map(Gemm::params)
            .max()
            .unwrap_or(0);
        let staging = if path == KernelPath::Bf16 {
            largest * 2
        } else {
            0
        };
        let widest = self
            .per_layer
            .iter()
            .map(|g| g.n.max(g.k))
            .max()
            .unwrap_or(0) as u64;
        let acts = tokens as u64 * widest * 4 * 3;
        decode + staging + acts
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Qwen3-1.7B's shapes, written out so these tests do not depend on the presets.
    pub(crate) fn qwen3_17b() -> Workload {
        let g = |name: &str, n, k| Gemm {
            name: name.into(),
            n,
            k,
        };
        Workload {
            model: "qwen3-1.7b".into(),
            layers: 28,
            hidden_size: 2048,
            intermediate_size: 6144,
            vocab_size: 151_936,
            per_layer: vec![
                g("q_proj", 2048, 2048),
                g("k_proj", 1024, 2048),
                g("v_proj", 1024, 2048),
                g("o_proj", 2048, 2048),
                g("gate_proj", 6144, 2048),
                g("up_proj", 6144, 2048),
                g("down_proj", 2048, 6144),
            ],
            lm_head: g("lm_head", 151_936, 2048),
        }
    }

    #[test]
    fn int4_bytes_are_4_25_bits_per_weight() {
        let g = Gemm {
            name: "q".into(),
            n: 2048,
            k: 2048,
        };
        assert_eq!(g.bytes(KernelPath::W4A8) * 8, g.params() * 17 / 4);
        assert_eq!(g.bytes(KernelPath::Bf16), g.params() * 2);
        // N is padded to a 64-column panel.
        let odd = Gemm {
            name: "x".into(),
            n: 65,
            k: 128,
        };
        assert_eq!(odd.bytes(KernelPath::W4A16), 2 * 4352);
    }

    #[test]
    fn qwen3_step_is_about_0_9_gb_in_int4() {
        let w = qwen3_17b();
        assert_eq!(w.layer_params(), 50_331_648);
        let gb = w.step_bytes(KernelPath::W4A8) as f64 / 1e9;
        assert!((0.90..0.92).contains(&gb), "{gb}");
    }

    #[test]
    fn decode_working_set_always_exceeds_twice_the_l3() {
        let w = qwen3_17b();
        for l3 in [32u64 << 20, 300 << 20, 2 << 30] {
            for quick in [Effort::Full, Effort::Quick] {
                for path in KernelPath::ALL {
                    let plan = w.decode_plan(path, l3, quick);
                    assert!(plan.working_set_bytes >= 2 * l3, "{path} {l3} {quick:?}");
                    let timed = plan.instances as f64 * plan.scale;
                    assert!((timed - 28.0).abs() < 1e-9);
                }
            }
        }
        // A 32 MiB L3: the whole model in the default run, four layers in quick.
        assert_eq!(
            w.decode_plan(KernelPath::W4A8, 32 << 20, Effort::Full)
                .instances,
            28
        );
        assert_eq!(
            w.decode_plan(KernelPath::W4A8, 32 << 20, Effort::Quick)
                .instances,
            4
        );
        // A 300 MB L3 needs 17 int4 layers besides the head even in quick mode.
        assert_eq!(
            w.decode_plan(KernelPath::W4A8, 300 << 20, Effort::Quick)
                .instances,
            18
        );
    }

    #[test]
    fn a_small_model_is_copied_past_the_l3() {
        let mut w = qwen3_17b();
        w.layers = 2;
        w.lm_head.n = 1024;
        let plan = w.decode_plan(KernelPath::W4A8, 300 << 20, Effort::Full);
        assert!(plan.instances > 2);
        assert!(plan.scale < 1.0);
    }

    #[test]
    fn k_must_be_a_multiple_of_the_group() {
        let mut w = qwen3_17b();
        w.per_layer[6].k = 6000;
        let err = w.validate().unwrap_err();
        assert!(err.to_string().contains("\"intermediate_size\""), "{err}");
        assert_eq!(crate::error::exit_for(&err), crate::error::Exit::DataErr);
    }
}
