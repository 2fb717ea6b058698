//! One verification of kernel output against the scalar reference, with one tolerance per
//! path. The test harness (`kernels/tests/`), the bench's correctness gate and the timing
//! harnesses all check through [`Expected`]; [`gate`] is the seeded small-shape check they
//! run before timing a variant.
//!
//! Tolerances are per output element, derived from the magnitudes involved:
//! - **W4A8**: `1e-5 · Σ_g |s_w·s_a|·(|D| + |z·A|)`. D and A are exact integers, so only the
//!   kernel's f32 epilogue may differ from the exact identity.
//! - **W4A16**: `2⁻¹⁴ · Σ_g |s|·(Σ (q + c)·|a| + (|z| + c)·Σ|a|)` with `c = 16` (f32 rounding
//!   of the fold's two terms; `c` is the largest code offset a kernel folds into the zero
//!   point: `w4a16-gemv-avx512bf16` multiplies bf16(16 + q), so both of its terms are that
//!   much larger, and an all-zero weight (q = z = 0) is then exact only to this bound)
//!   `+ 2⁻⁶ · √Σ(w·a)²` for kernels that round the dequantized weight `(q − z)·s` to bf16
//!   (AMX, and any bf16-tile GEMM). Each such rounding is at most `2⁻⁹·|w|` and independent,
//!   so their sum stays within a few standard deviations of `2⁻⁹·√Σ(w·a)²`; the bound is
//!   8σ-ish and deterministic for fixed seeds. One bound serves every W4A16 variant.
//! - **bf16**: `2⁻¹²·Σ|w·a|` (exact bf16 products, long f32 sums).
//! - plus `1e-30` absolute everywhere, for flushed denormals.
//!
//! An indexing or layout bug moves an output by about `√Σ(w·a)²` (a whole wrong term set),
//! 64× above the loosest of these bounds.

use super::acts::{Bf16Rows, QuantActs};
use super::bf16::{Bf16, to_bf16_vec};
use super::error::KernelError;
use super::fidelity::Rng;
use super::pack::{PackedBf16, PackedW4};
use super::pool::ThreadPool;
use super::reference;
use super::registry::{KernelPath, Phase, Ready};
use super::weights::{self, GROUP, QuantWeights};

/// The largest code offset a W4A16 kernel folds into its zero point (module docs).
const CODE_OFFSET_BOUND: f64 = 16.0;

/// The reference output of one case and the tolerance of each element.
#[derive(Clone, Debug)]
pub struct Expected {
    /// Reference `[M][N]` in f64.
    pub want: Vec<f64>,
    /// Allowed `|got − want|` per element.
    pub tol: Vec<f64>,
}

/// Absolute slack for flushed denormals.
const FLOOR: f64 = 1e-30;

impl Expected {
    /// W4A8: the exact integer identity and its epilogue bound.
    pub fn w4a8(w: &QuantWeights, a: &QuantActs) -> Expected {
        let want = reference::w4a8(w, a);
        let (m, n, k) = (a.m(), w.n, w.k);
        let mut tol = vec![0.0f64; m * n];
        for r in 0..m {
            let row = a.row(r);
            for c in 0..n {
                let codes = &w.codes[c * k..][..k];
                let mut b = 0.0f64;
                for g in 0..k / GROUP {
                    let d: i64 = (g * GROUP..(g + 1) * GROUP)
                        .map(|i| codes[i] as i64 * row[i] as i64)
                        .sum();
                    let za = (w.zero(c, g) as f64 * a.sum(r, g) as f64).abs();
                    b +=
                        (w.scale(c, g) as f64 * a.scale(r, g) as f64).abs() * (d.abs() as f64 + za);
                }
                tol[r * n + c] = 1e-5 * b + FLOOR;
            }
        }
        Expected { want, tol }
    }

    /// W4A16: dequantized weights × bf16 activations, the fold bound plus the bf16
    /// weight-rounding term (module docs).
    #[allow(clippy::needless_range_loop)] // the index form mirrors the formula
    pub fn w4a16(w: &QuantWeights, x: Bf16Rows<'_>) -> Expected {
        let want = reference::w4a16(w, x);
        let k = w.k;
        let mut tol = Vec::with_capacity(x.m * w.n);
        for r in 0..x.m {
            let row = x.row(r);
            for c in 0..w.n {
                let (mut fold, mut sq) = (0.0f64, 0.0f64);
                for g in 0..k / GROUP {
                    let (s, z) = (w.scale(c, g) as f64, w.zero(c, g) as f64);
                    let (mut qa, mut sa) = (0.0f64, 0.0f64);
                    for i in g * GROUP..(g + 1) * GROUP {
                        let a = row[i].to_f32().abs() as f64;
                        let q = w.codes[c * k + i] as f64;
                        qa += q * a;
                        sa += a;
                        sq += ((q - z) * s * a).powi(2);
                    }
                    fold += s.abs()
                        * (qa + CODE_OFFSET_BOUND * sa + (z.abs() + CODE_OFFSET_BOUND) * sa);
                }
                tol.push(2f64.powi(-14) * fold + 2f64.powi(-6) * sq.sqrt() + FLOOR);
            }
        }
        Expected { want, tol }
    }

    /// bf16: row-major `[N][K]` bf16 weights × bf16 activations.
    pub fn bf16(w: &[Bf16], n: usize, x: Bf16Rows<'_>) -> Expected {
        let want = reference::bf16(w, n, x);
        let k = x.k;
        let tol = (0..x.m * n)
            .map(|i| {
                let (r, c) = (i / n, i % n);
                let abs: f64 = w[c * k..][..k]
                    .iter()
                    .zip(x.row(r))
                    .map(|(a, b)| (a.to_f32() as f64 * b.to_f32() as f64).abs())
                    .sum();
                2f64.powi(-12) * abs + FLOOR
            })
            .collect();
        Expected { want, tol }
    }

    /// `Ok` when every element of `got` is within its tolerance; else the first offender
    /// (index, values, error and bound) as text.
    pub fn check(&self, got: &[f32]) -> Result<(), String> {
        if got.len() != self.want.len() {
            return Err(format!(
                "{} outputs, the reference has {}",
                got.len(),
                self.want.len()
            ));
        }
        for (i, ((&g, &w), &t)) in got.iter().zip(&self.want).zip(&self.tol).enumerate() {
            let err = (g as f64 - w).abs();
            if err.is_nan() || err > t {
                return Err(format!(
                    "output {i} = {g}, reference {w}, |err| {err:.3e} > tol {t:.3e}"
                ));
            }
        }
        Ok(())
    }
}

/// Runs `r` on one seeded random case of `m × n × k` (Gaussian weights through the
/// asymmetric quantizer or rounded to bf16, Gaussian activations) and checks it.
pub fn check_case(
    r: &Ready,
    pool: &ThreadPool,
    m: usize,
    n: usize,
    k: usize,
    seed: u64,
) -> Result<(), KernelError> {
    let mut rng = Rng::new(seed);
    let w: Vec<f32> = (0..n * k).map(|_| (rng.normal() * 0.05) as f32).collect();
    let x: Vec<f32> = (0..m * k).map(|_| rng.normal() as f32).collect();
    let xb = to_bf16_vec(&x);
    let rows = Bf16Rows::new(&xb, m, k)?;
    let mut out = vec![f32::NAN; m * n];
    let expected = match r.variant().path() {
        KernelPath::W4A8 => {
            let q = weights::quantize(&w, n, k, weights::Scheme::Asymmetric)?;
            let a = QuantActs::quantize(rows)?;
            r.w4a8(pool, &PackedW4::pack(&q), &a, &mut out)?;
            Expected::w4a8(&q, &a)
        }
        KernelPath::W4A16 => {
            let q = weights::quantize(&w, n, k, weights::Scheme::Asymmetric)?;
            r.w4a16(pool, &PackedW4::pack(&q), rows, &mut out)?;
            Expected::w4a16(&q, rows)
        }
        KernelPath::Bf16 => {
            let wb = to_bf16_vec(&w);
            r.bf16(pool, &PackedBf16::pack(&wb, n, k), rows, &mut out)?;
            Expected::bf16(&wb, n, rows)
        }
    };
    expected
        .check(&out)
        .map_err(|detail| KernelError::Mismatch {
            name: r.name().to_string(),
            detail: format!("M={m} N={n} K={k} seed {seed}: {detail}"),
        })
}

/// The shapes [`gate`] checks for a variant: N off the 64-column panel, several groups, M in
/// the decode range and, for prefill variants, above it (partial row blocks included).
pub fn gate_shapes(r: &Ready) -> Vec<(usize, usize, usize)> {
    let v = r.variant();
    let mut cases = Vec::new();
    if v.serves(Phase::Decode) {
        cases.extend([(1, 130, 256), (3, 64, 384)]);
    }
    if v.serves(Phase::Prefill) {
        cases.extend([(17, 130, 256), (40, 192, 512), (129, 70, 256)]);
    }
    cases
}

/// The correctness gate before timing: [`check_case`] over [`gate_shapes`].
pub fn gate(r: &Ready, pool: &ThreadPool) -> Result<(), KernelError> {
    for (i, (m, n, k)) in gate_shapes(r).into_iter().enumerate() {
        check_case(r, pool, m, n, k, 1000 + i as u64)?;
    }
    Ok(())
}
