//! Timing one path: build the rotation of per-layer weight buffers, then time decode
//! and prefill steps with a chosen kernel and turn the samples into report rows.
//!
//! Activations are prepared (quantized for W4A8) once per distinct K before timing: the
//! figures are the GEMMs alone, which is also what the study's "GEMM/step" counted.

use super::backend::{Backend, KernelInfo, KernelPath, Phase, Unit};
use super::clock::{Clock, Sampling, Seconds};
use super::rng::Rng;
use super::rows::ResultRow;
use super::stats::Summary;
use super::workload::{DecodePlan, Workload};

/// Distinct weight buffers for a path: `layers[i][j]` is GEMM `j` of layer instance `i`.
/// W4A8 and W4A16 share one packed layout, so one rotation serves both.
pub struct Rotation<W> {
    /// The path it was packed for.
    pub path: KernelPath,
    pub layers: Vec<Vec<W>>,
    pub head: W,
}

impl<W> Rotation<W> {
    /// Builds `instances` layers: the first from synthetic weights, the others copies in
    /// fresh memory, so no two instances share a buffer.
    pub fn build<B: Backend<Weights = W>>(
        backend: &B,
        path: KernelPath,
        w: &Workload,
        instances: usize,
        seed: u64,
    ) -> anyhow::Result<Rotation<W>> {
        let first: Vec<W> = w
            .per_layer
            .iter()
            .enumerate()
            .map(|(j, g)| backend.synthetic(path, g.n, g.k, seed + j as u64))
            .collect::<anyhow::Result<_>>()?;
        let mut layers = Vec::with_capacity(instances);
        for _ in 1..instances {
            layers.push(first.iter().map(|x| backend.duplicate(x)).collect());
        }
        layers.insert(0, first);
        let head = backend.synthetic(path, w.lm_head.n, w.lm_head.k, seed + 100)?;
        Ok(Rotation { path, layers, head })
    }

    /// Whether this rotation can serve `path` with `instances` layers.
    pub fn serves(&self, path: KernelPath, instances: usize) -> bool {
        self.path.shares_layout(path) && self.layers.len() == instances
    }

    pub fn layer_bytes<B: Backend<Weights = W>>(&self, backend: &B, instance: usize) -> u64 {
        self.layers[instance]
            .iter()
            .map(|x| backend.weight_bytes(x) as u64)
            .sum()
    }
}

/// Inputs for every distinct K of the workload, `m` tokens each.
struct Inputs<I> {
    by_k: Vec<(usize, I)>,
}

impl<I> Inputs<I> {
    fn new<B: Backend<Input = I>>(
        backend: &B,
        path: KernelPath,
        w: &Workload,
        m: usize,
        seed: u64,
    ) -> anyhow::Result<Self> {
        let mut ks: Vec<usize> = w
            .per_layer
            .iter()
            .map(|g| g.k)
            .chain([w.lm_head.k])
            .collect();
        ks.sort_unstable();
        ks.dedup();
        let mut rng = Rng::new(seed);
        let by_k = ks
            .into_iter()
            .map(|k| Ok((k, backend.input(path, &rng.normals(m * k, 1.0), m, k)?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Inputs { by_k })
    }

    fn get(&self, k: usize) -> anyhow::Result<&I> {
        self.by_k
            .iter()
            .find(|(kk, _)| *kk == k)
            .map(|(_, i)| i)
            .ok_or_else(|| anyhow::anyhow!("no input prepared for K = {k}"))
    }
}

fn timed_gemm<B: Backend>(
    backend: &B,
    clock: &dyn Clock,
    kernel: &KernelInfo,
    w: &B::Weights,
    x: &B::Input,
    out: &mut [f32],
) -> anyhow::Result<Seconds> {
    let mut result = Ok(());
    let t = clock.time(&mut || result = backend.gemm(kernel, w, x, out));
    result.map(|()| t)
}

/// Timing context shared by both phases of a path.
pub struct Timer<'a, B: Backend> {
    pub backend: &'a B,
    pub clock: &'a dyn Clock,
    pub workload: &'a Workload,
    pub sampling: Sampling,
}

impl<B: Backend> Timer<'_, B> {
    /// Decode step samples (seconds): every instance once, then the lm_head; the layers'
    /// time scaled to the model's layer count.
    pub fn decode(
        &self,
        kernel: &KernelInfo,
        rot: &Rotation<B::Weights>,
        plan: DecodePlan,
    ) -> anyhow::Result<Vec<Seconds>> {
        let w = self.workload;
        let inputs = Inputs::new(self.backend, kernel.path, w, 1, 11)?;
        let widest = w
            .per_layer
            .iter()
            .map(|g| g.n)
            .chain([w.lm_head.n])
            .max()
            .unwrap_or(0);
        let mut out = vec![0.0f32; widest];
        self.sampling.collect(self.clock, &mut || {
            let mut layers = 0.0;
            for inst in &rot.layers {
                for (g, wt) in w.per_layer.iter().zip(inst) {
                    layers += timed_gemm(
                        self.backend,
                        self.clock,
                        kernel,
                        wt,
                        inputs.get(g.k)?,
                        &mut out[..g.n],
                    )?;
                }
            }
            let head = timed_gemm(
                self.backend,
                self.clock,
                kernel,
                &rot.head,
                inputs.get(w.lm_head.k)?,
                &mut out[..w.lm_head.n],
            )?;
            Ok(layers * plan.scale + head)
        })
    }

    /// Prefill step samples (seconds): the first `layers` instances at `tokens` rows,
    /// scaled to the model's layer count (the lm_head is not part of a prefill step).
    pub fn prefill(
        &self,
        kernel: &KernelInfo,
        rot: &Rotation<B::Weights>,
        layers: usize,
        tokens: usize,
    ) -> anyhow::Result<Vec<Seconds>> {
        let w = self.workload;
        let layers = layers.clamp(1, rot.layers.len());
        let inputs = Inputs::new(self.backend, kernel.path, w, tokens, 13)?;
        let widest = w.per_layer.iter().map(|g| g.n).max().unwrap_or(0);
        let mut out = vec![0.0f32; widest * tokens];
        let scale = w.layers as f64 / layers as f64;
        self.sampling.collect(self.clock, &mut || {
            let mut t = 0.0;
            for inst in &rot.layers[..layers] {
                for (g, wt) in w.per_layer.iter().zip(inst) {
                    t += timed_gemm(
                        self.backend,
                        self.clock,
                        kernel,
                        wt,
                        inputs.get(g.k)?,
                        &mut out[..g.n * tokens],
                    )?;
                }
            }
            Ok(t * scale)
        })
    }
}

/// The rooflines a row is judged against.
pub struct Roofs<'a> {
    pub bandwidth_gbps: Option<f64>,
    pub peak_tmacs: &'a dyn Fn(Unit) -> Option<f64>,
}

/// What a row describes besides its samples.
pub struct RowSpec<'a> {
    pub path: KernelPath,
    pub phase: Phase,
    pub tokens: usize,
    pub kernel: &'a KernelInfo,
    /// Weight bytes and MACs of one whole step.
    pub weight_bytes: u64,
    pub macs: u64,
    pub layers_measured: usize,
    pub working_set_bytes: u64,
}

/// Turns step samples into a report row.
pub fn row(spec: RowSpec<'_>, samples: &[Seconds], roofs: &Roofs<'_>) -> anyhow::Result<ResultRow> {
    let s = Summary::of(samples)
        .ok_or_else(|| anyhow::anyhow!("no samples for {} {}", spec.path, spec.phase.name()))?;
    let step = s.median.max(1e-12);
    let ms = s.scaled(1e3);
    let weight_gbps = spec.weight_bytes as f64 / step / 1e9;
    let tmacs = spec.macs as f64 / step / 1e12;
    let bandwidth_pct = match spec.phase {
        Phase::Decode => roofs
            .bandwidth_gbps
            .filter(|b| *b > 0.0)
            .map(|b| weight_gbps / b * 100.0),
        Phase::Prefill => None,
    };
    let peak_pct = (roofs.peak_tmacs)(spec.kernel.unit)
        .filter(|p| *p > 0.0)
        .map(|p| tmacs / p * 100.0);
    Ok(ResultRow {
        path: spec.path,
        phase: spec.phase,
        tokens: spec.tokens,
        kernel: spec.kernel.name.clone(),
        step_ms: ms.median,
        step_ms_min: ms.min,
        step_ms_max: ms.max,
        step_ms_mad: ms.mad,
        repeats: s.n,
        tokens_per_s: spec.tokens as f64 / step,
        weight_bytes: spec.weight_bytes,
        weight_gbps,
        bandwidth_pct,
        bandwidth_pct_paired: None,
        peak_pct_paired: None,
        rounds: 0,
        macs: spec.macs,
        tmacs,
        peak_unit: spec.kernel.unit,
        peak_pct,
        layers_measured: spec.layers_measured,
        working_set_bytes: spec.working_set_bytes,
        alternatives: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::backend::Scheme;
    use crate::bench::clock::FakeClock;
    use crate::bench::fake::FakeBackend;
    use crate::bench::workload::Gemm;
    use std::sync::Arc;

    fn tiny() -> Workload {
        let g = |name: &str, n, k| Gemm {
            name: name.into(),
            n,
            k,
        };
        Workload {
            model: "tiny".into(),
            layers: 4,
            hidden_size: 256,
            intermediate_size: 512,
            vocab_size: 1024,
            per_layer: vec![g("q_proj", 256, 256), g("down_proj", 256, 512)],
            lm_head: g("lm_head", 1024, 256),
        }
    }

    #[test]
    fn decode_time_is_extrapolated_from_the_rotation() {
        let clock = Arc::new(FakeClock::new(0.0));
        let b = FakeBackend::new(1, clock.clone());
        let w = tiny();
        let kernel = b
            .kernels()
            .into_iter()
            .find(|k| k.name == "w4a8-fake")
            .unwrap();
        let plan = DecodePlan {
            instances: 2,
            scale: 2.0,
            working_set_bytes: 0,
        };
        let rot = Rotation::build(&b, KernelPath::W4A8, &w, 2, 1).unwrap();
        assert_eq!(rot.layers.len(), 2);
        let timer = Timer {
            backend: &b,
            clock: clock.as_ref(),
            workload: &w,
            sampling: Sampling {
                warmup: 1,
                min_repeats: 3,
                max_repeats: 3,
                budget: 0.0,
            },
        };
        let samples = timer.decode(&kernel, &rot, plan).unwrap();
        assert_eq!(samples.len(), 3);
        // Fake W4A8: bytes / 20 GB/s + MACs / 400 GMAC/s per GEMM.
        let cost = |g: &Gemm| g.bytes(KernelPath::W4A8) as f64 / 20e9 + g.params() as f64 / 400e9;
        let layer: f64 = w.per_layer.iter().map(cost).sum();
        let expect = 4.0 * layer + cost(&w.lm_head);
        assert!(
            (samples[0] - expect).abs() < 1e-8,
            "{} vs {expect}",
            samples[0]
        );
        let _ = Scheme::Symmetric;
    }

    #[test]
    fn rows_carry_rooflines() {
        let kernel = KernelInfo {
            name: "k".into(),
            path: KernelPath::W4A8,
            phases: vec![Phase::Decode],
            unit: Unit::Avx2Int8,
            unavailable: None,
            rank: 0,
        };
        let peak = |u: Unit| (u == Unit::Avx2Int8).then_some(1.0);
        let roofs = Roofs {
            bandwidth_gbps: Some(20.0),
            peak_tmacs: &peak,
        };
        let spec = RowSpec {
            path: KernelPath::W4A8,
            phase: Phase::Decode,
            tokens: 1,
            kernel: &kernel,
            weight_bytes: 1_000_000_000,
            macs: 2_000_000_000,
            layers_measured: 28,
            working_set_bytes: 0,
        };
        let r = row(spec, &[0.1, 0.1, 0.2], &roofs).unwrap();
        assert_eq!(r.step_ms, 100.0);
        assert!((r.weight_gbps - 10.0).abs() < 1e-9);
        assert_eq!(r.bandwidth_pct, Some(50.0));
        assert!((r.tmacs - 0.02).abs() < 1e-12);
        assert!((r.peak_pct.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(r.tokens_per_s, 10.0);
    }
}
