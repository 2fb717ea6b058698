//! Fidelity: how far each path's output drifts from the f32 product with the unquantized
//! weights, for symmetric and asymmetric int4 weights.
//!
//! Two measurements per path and scheme, on seeded random data (Gaussian weights and
//! hidden states: real checkpoints have outlier channels this does not model):
//! - one decoder layer's output for a few tokens: relative error ‖y − y_f32‖/‖y_f32‖
//!   and cosine similarity;
//! - greedy top-1 agreement: the argmax of a random lm_head projection over a few hundred
//!   hidden states, quantized path against f32. The vocabulary is cut to a few thousand
//!   rows to keep the f32 reference fast; the report says how many.
//!
//! The f32 reference is computed once and shared by every path; the quantized side runs
//! the path's real kernel on weights packed by the real quantizer.

use super::backend::{Backend, KernelInfo, KernelPath, Parallel, Phase, Scheme};
use super::request::Effort;
use super::rng::Rng;
use super::rows::FidelityRow;
use super::workload::Gemm;

/// Sizes of the fidelity check.
#[derive(Debug, Clone, Copy)]
pub struct FidelitySize {
    /// Tokens through the layer.
    pub tokens: usize,
    /// lm_head rows used for the top-1 check.
    pub vocab: usize,
    /// Hidden states scored.
    pub states: usize,
}

impl FidelitySize {
    pub fn for_run(vocab: usize, effort: Effort) -> FidelitySize {
        if effort.is_quick() {
            FidelitySize {
                tokens: 8,
                vocab: vocab.min(2048),
                states: 128,
            }
        } else {
            FidelitySize {
                tokens: 16,
                vocab: vocab.min(4096),
                states: 256,
            }
        }
    }
}

/// The f32 side, computed once.
pub struct Reference {
    layer: Gemm,
    w: Vec<f32>,
    x: Vec<f32>,
    y: Vec<f32>,
    head: Gemm,
    head_w: Vec<f32>,
    states: Vec<f32>,
    argmax: Vec<usize>,
    size: FidelitySize,
}

/// `y[m][n] = Σ_k x[m][k] · w[n][k]` in f32 with eight partial sums, rows split over the pool.
pub fn matmul_f32(
    pool: &dyn Parallel,
    x: &[f32],
    w: &[f32],
    m: usize,
    n: usize,
    k: usize,
) -> Vec<f32> {
    let out: Vec<std::sync::Mutex<Vec<f32>>> =
        (0..pool.workers()).map(|_| Default::default()).collect();
    pool.run(&|wk, nw| {
        let per = n.div_ceil(nw);
        let rows = (wk * per).min(n)..((wk + 1) * per).min(n);
        let mut part = Vec::with_capacity(m * rows.len());
        for mi in 0..m {
            let xr = &x[mi * k..(mi + 1) * k];
            for ni in rows.clone() {
                part.push(dot(xr, &w[ni * k..(ni + 1) * k]));
            }
        }
        if let Ok(mut slot) = out[wk].lock() {
            *slot = part;
        }
    });
    let parts: Vec<Vec<f32>> = out
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_default())
        .collect();
    let per = n.div_ceil(pool.workers());
    let mut y = vec![0.0f32; m * n];
    for (wk, part) in parts.iter().enumerate() {
        let start = (wk * per).min(n);
        let len = ((wk + 1) * per).min(n) - start;
        for mi in 0..m {
            if len > 0 {
                y[mi * n + start..mi * n + start + len]
                    .copy_from_slice(&part[mi * len..(mi + 1) * len]);
            }
        }
    }
    y
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((a, &xi), &yi) in acc.iter_mut().zip(x).zip(y) {
            *a += xi * yi;
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn argmax_rows(y: &[f32], n: usize) -> Vec<usize> {
    y.chunks(n)
        .map(|row| {
            row.iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(0, |(i, _)| i)
        })
        .collect()
}

/// Relative L2 error and cosine similarity of `y` against `r`.
pub fn compare(y: &[f32], r: &[f32]) -> (f64, f64) {
    let (mut diff, mut rr, mut yy, mut yr) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (&a, &b) in y.iter().zip(r) {
        let (a, b) = (f64::from(a), f64::from(b));
        diff += (a - b) * (a - b);
        rr += b * b;
        yy += a * a;
        yr += a * b;
    }
    let rel = if rr > 0.0 {
        (diff / rr).sqrt()
    } else {
        diff.sqrt()
    };
    let cos = if yy > 0.0 && rr > 0.0 {
        yr / (yy.sqrt() * rr.sqrt())
    } else {
        0.0
    };
    (rel, cos)
}

impl Reference {
    pub fn new(
        pool: &dyn Parallel,
        layer: &Gemm,
        hidden: usize,
        size: FidelitySize,
        seed: u64,
    ) -> Reference {
        let mut rng = Rng::new(seed);
        let w = rng.normals(layer.n * layer.k, 0.02);
        let x = rng.normals(size.tokens * layer.k, 1.0);
        let y = matmul_f32(pool, &x, &w, size.tokens, layer.n, layer.k);
        let head = Gemm {
            name: "lm_head".into(),
            n: size.vocab,
            k: hidden,
        };
        let head_w = rng.normals(head.n * head.k, 0.02);
        let states = rng.normals(size.states * hidden, 1.0);
        let logits = matmul_f32(pool, &states, &head_w, size.states, head.n, head.k);
        let argmax = argmax_rows(&logits, head.n);
        Reference {
            layer: layer.clone(),
            w,
            x,
            y,
            head,
            head_w,
            states,
            argmax,
            size,
        }
    }

    /// Runs `kernel` with `scheme`-quantized weights and returns the row.
    pub fn measure<B: Backend>(
        &self,
        backend: &B,
        path: KernelPath,
        kernel: &KernelInfo,
        scheme: Scheme,
    ) -> anyhow::Result<FidelityRow> {
        let y = run(
            backend,
            path,
            kernel,
            scheme,
            &self.w,
            &self.x,
            &self.layer,
            self.size.tokens,
        )?;
        let (rel_error, cosine) = compare(&y, &self.y);
        let logits = run(
            backend,
            path,
            kernel,
            scheme,
            &self.head_w,
            &self.states,
            &self.head,
            self.size.states,
        )?;
        let argmax = argmax_rows(&logits, self.head.n);
        let agree = argmax
            .iter()
            .zip(&self.argmax)
            .filter(|(a, b)| a == b)
            .count();
        Ok(FidelityRow {
            path,
            scheme: if path == KernelPath::Bf16 {
                "bf16".into()
            } else {
                scheme.full_name().into()
            },
            kernel: kernel.name.clone(),
            rel_error,
            cosine,
            top1_agreement: agree as f64 / self.argmax.len().max(1) as f64,
            top1_vocab: self.head.n,
            top1_states: self.size.states,
            layer: format!("{} {}x{}", self.layer.name, self.layer.n, self.layer.k),
        })
    }
}

/// `x · wᵀ` through the backend; row by row when the kernel serves decode only.
#[allow(clippy::too_many_arguments)]
fn run<B: Backend>(
    backend: &B,
    path: KernelPath,
    kernel: &KernelInfo,
    scheme: Scheme,
    w: &[f32],
    x: &[f32],
    g: &Gemm,
    m: usize,
) -> anyhow::Result<Vec<f32>> {
    let packed = backend.pack(path, w, g.n, g.k, scheme)?;
    let mut y = vec![0.0f32; m * g.n];
    if kernel.serves(Phase::Prefill) {
        let input = backend.input(path, x, m, g.k)?;
        backend.gemm(kernel, &packed, &input, &mut y)?;
    } else {
        for (row, out) in x.chunks(g.k).zip(y.chunks_mut(g.n)) {
            let input = backend.input(path, row, 1, g.k)?;
            backend.gemm(kernel, &packed, &input, out)?;
        }
    }
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fake::ScopedPool;

    #[test]
    fn compare_is_zero_for_equal_and_detects_scale() {
        let r = [1.0f32, -2.0, 3.0];
        assert_eq!(compare(&r, &r), (0.0, 1.0));
        let (rel, cos) = compare(&[2.0, -4.0, 6.0], &r);
        assert!((rel - 1.0).abs() < 1e-12);
        assert!((cos - 1.0).abs() < 1e-12);
        let (_, cos) = compare(&[-1.0, 2.0, -3.0], &r);
        assert!((cos + 1.0).abs() < 1e-12);
    }

    #[test]
    fn parallel_matmul_matches_a_triple_loop() {
        let mut rng = Rng::new(3);
        let (m, n, k) = (3, 37, 20);
        let x = rng.normals(m * k, 1.0);
        let w = rng.normals(n * k, 1.0);
        let y = matmul_f32(&ScopedPool::new(3), &x, &w, m, n, k);
        for mi in 0..m {
            for ni in 0..n {
                let r: f32 = (0..k).map(|ki| x[mi * k + ki] * w[ni * k + ki]).sum();
                assert!((y[mi * n + ni] - r).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn argmax_per_row() {
        assert_eq!(argmax_rows(&[0.0, 2.0, 1.0, 5.0, 4.0, 3.0], 3), vec![1, 0]);
    }
}
