//! Quantization fidelity as a measured quantity: how far the W4A8 and W4A16 outputs are from
//! the f32 product of the **original** (unquantized) weights. `bench` reports these numbers;
//! tests assert sane bounds and that the asymmetric scheme is no worse than the symmetric one.
//!
//! This separates "is the quantization good enough" from "is the kernel correct" (which the
//! kernel tests check against the exact references on identical quantized inputs).

use super::acts::{Bf16Rows, QuantActs};
use super::bf16::{Bf16, to_bf16_vec};
use super::error::KernelError;
use super::reference::{self, matmul_f32, rel_error};
use super::weights::{Scheme, quantize};

/// Relative errors of one (weights, activations, scheme) case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fidelity {
    /// Quantization scheme used for the weights.
    pub scheme: Scheme,
    /// ‖y_w4a8 − y_f32‖ / ‖y_f32‖ (int4 weights, int8 activations).
    pub w4a8: f64,
    /// ‖y_w4a16 − y_f32‖ / ‖y_f32‖ (int4 weights, bf16 activations).
    pub w4a16: f64,
    /// ‖y_bf16 − y_f32‖ / ‖y_f32‖ (bf16 weights): the floor any 16-bit path has.
    pub bf16: f64,
}

/// Measure fidelity for f32 weights `[N][K]` and f32 activations `[M][K]` (activations are
/// rounded to bf16 first, as the kernels see them; the f32 product uses those same values).
pub fn measure(
    w: &[f32],
    n: usize,
    k: usize,
    x: &[f32],
    m: usize,
    scheme: Scheme,
) -> Result<Fidelity, KernelError> {
    let xb: Vec<Bf16> = to_bf16_vec(x);
    let rows = Bf16Rows::new(&xb, m, k)?;
    let xf: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
    let want = matmul_f32(w, &xf, m, n, k);
    let q = quantize(w, n, k, scheme)?;
    let a = QuantActs::quantize(rows)?;
    let y8 = reference::w4a8(&q, &a);
    let y16 = reference::w4a16(&q, rows);
    let wb = to_bf16_vec(w);
    let yb = reference::bf16(&wb, n, rows);
    Ok(Fidelity {
        scheme,
        w4a8: rel_error(&y8, &want),
        w4a16: rel_error(&y16, &want),
        bf16: rel_error(&yb, &want),
    })
}

/// Synthetic weight distributions for fidelity runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// Standard normal.
    Gaussian,
    /// Student-t with 3 degrees of freedom (heavy tails, like real LLM weights' outliers).
    StudentT3,
}

impl Dist {
    /// `"gaussian"` / `"student-t3"`.
    pub fn name(self) -> &'static str {
        match self {
            Dist::Gaussian => "gaussian",
            Dist::StudentT3 => "student-t3",
        }
    }

    /// `len` samples scaled by `scale`, from a seeded generator.
    pub fn sample(self, len: usize, scale: f32, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..len)
            .map(|_| {
                let z = rng.normal();
                let v = match self {
                    Dist::Gaussian => z,
                    Dist::StudentT3 => {
                        let chi2: f64 = (0..3).map(|_| rng.normal().powi(2)).sum();
                        z / (chi2 / 3.0).sqrt()
                    }
                };
                (v as f32) * scale
            })
            .collect()
    }
}

/// A tiny seeded PRNG (SplitMix64), shared by fidelity runs, tests and benches.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asymmetric ≤ symmetric (+ slack), errors in sane int4 bounds, W4A8 close to W4A16.
    #[test]
    fn fidelity_bounds_and_ordering() {
        let (m, n, k) = (4, 96, 512);
        for dist in [Dist::Gaussian, Dist::StudentT3] {
            let w = dist.sample(n * k, 0.02, 11);
            let x = Dist::Gaussian.sample(m * k, 1.0, 12);
            let sym = measure(&w, n, k, &x, m, Scheme::Symmetric).unwrap();
            let asym = measure(&w, n, k, &x, m, Scheme::Asymmetric).unwrap();
            eprintln!(
                "fidelity {}: sym {sym:?}\n            asym {asym:?}",
                dist.name()
            );
            for f in [sym, asym] {
                assert!(f.w4a16 > 0.01 && f.w4a16 < 0.3, "{dist:?} {f:?}");
                assert!(
                    f.w4a8 >= f.w4a16 * 0.9 && f.w4a8 < f.w4a16 * 1.5 + 0.01,
                    "{dist:?} {f:?}"
                );
                assert!(f.bf16 < 0.01, "{dist:?} {f:?}");
            }
            assert!(
                asym.w4a16 <= sym.w4a16 * 1.05,
                "{dist:?}: asym {asym:?} vs sym {sym:?}"
            );
        }
    }

    #[test]
    fn rng_is_deterministic() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::new(7);
        assert!(a.iter().all(|&v| v == r.next_u64()));
    }
}
