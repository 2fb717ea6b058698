//! Scalar references: the oracle every kernel variant is checked against. Always compiled,
//! written for clarity, never for speed. Outputs are row-major `[M][N]` in f64.
//!
//! - [`w4a8`]: the exact integer identity `y = Σ_g s_w·s_a·(D − z·A)` with D and A exact
//!   integers and everything else in f64. A correct kernel differs only by its f32 epilogue.
//! - [`w4a16`]: Σ_k (q − z)·s · x in f64, over the dequantized weights and bf16 activations.
//! - [`bf16`]: Σ_k w·x in f64 over bf16 weights and activations.
//! - [`matmul_f32`]: a plain f32 triple loop, used to check the references themselves and to
//!   measure quantization fidelity against the original weights.

use super::acts::{Bf16Rows, QuantActs};
use super::bf16::Bf16;
use super::weights::{GROUP, QuantWeights};

/// W4A8 exact integer identity. `w.k == a.k()` is the caller's responsibility (asserted).
pub fn w4a8(w: &QuantWeights, a: &QuantActs) -> Vec<f64> {
    assert_eq!(w.k, a.k(), "reference w4a8: K mismatch");
    let (m_rows, n_cols, k) = (a.m(), w.n, w.k);
    let mut y = vec![0.0f64; m_rows * n_cols];
    for m in 0..m_rows {
        let row = a.row(m);
        for n in 0..n_cols {
            let codes = &w.codes[n * k..][..k];
            let mut acc = 0.0f64;
            for g in 0..k / GROUP {
                let d: i64 = (g * GROUP..(g + 1) * GROUP)
                    .map(|i| codes[i] as i64 * row[i] as i64)
                    .sum();
                let big_a = a.sum(m, g) as f64;
                let sw = w.scale(n, g) as f64;
                let sa = a.scale(m, g) as f64;
                acc += sw * sa * (d as f64 - w.zero(n, g) as f64 * big_a);
            }
            y[m * n_cols + n] = acc;
        }
    }
    y
}

/// W4A16: dequantized weights × bf16 activations, accumulated in f64.
#[allow(clippy::needless_range_loop)] // the index form mirrors the formula
pub fn w4a16(w: &QuantWeights, x: Bf16Rows<'_>) -> Vec<f64> {
    assert_eq!(w.k, x.k, "reference w4a16: K mismatch");
    let (m_rows, n_cols, k) = (x.m, w.n, w.k);
    let mut y = vec![0.0f64; m_rows * n_cols];
    for m in 0..m_rows {
        let row = x.row(m);
        for n in 0..n_cols {
            let mut acc = 0.0f64;
            for i in 0..k {
                let g = i / GROUP;
                let wq = (w.codes[n * k + i] as f64 - w.zero(n, g) as f64) * w.scale(n, g) as f64;
                acc += wq * row[i].to_f32() as f64;
            }
            y[m * n_cols + n] = acc;
        }
    }
    y
}

/// bf16 baseline: row-major bf16 weights `[N][K]` × bf16 activations, f64 accumulation.
pub fn bf16(w: &[Bf16], n_cols: usize, x: Bf16Rows<'_>) -> Vec<f64> {
    let k = x.k;
    assert_eq!(w.len(), n_cols * k, "reference bf16: weight length");
    let mut y = vec![0.0f64; x.m * n_cols];
    for m in 0..x.m {
        let row = x.row(m);
        for n in 0..n_cols {
            y[m * n_cols + n] = w[n * k..][..k]
                .iter()
                .zip(row)
                .map(|(a, b)| a.to_f32() as f64 * b.to_f32() as f64)
                .sum();
        }
    }
    y
}

/// Plain f32 matmul: `y[m][n] = Σ_k w[n][k]·x[m][k]`.
pub fn matmul_f32(w: &[f32], x: &[f32], m_rows: usize, n_cols: usize, k: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; m_rows * n_cols];
    for m in 0..m_rows {
        for n in 0..n_cols {
            y[m * n_cols + n] = w[n * k..][..k]
                .iter()
                .zip(&x[m * k..][..k])
                .map(|(a, b)| a * b)
                .sum();
        }
    }
    y
}

/// Relative Frobenius error `‖got − want‖ / ‖want‖` (0 when both are zero).
pub fn rel_error<A: Copy + Into<f64>, B: Copy + Into<f64>>(got: &[A], want: &[B]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        let (g, w) = (g.into(), w.into());
        num += (g - w) * (g - w);
        den += w * w;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::bf16::to_bf16_vec;
    use crate::kernels::weights::{Scheme, quantize};

    fn data(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
            .collect()
    }

    /// The W4A16 reference equals a plain f32 matmul of the dequantized weights.
    #[test]
    fn w4a16_reference_matches_dequantized_matmul() {
        let (m, n, k) = (3, 70, 256);
        let q = quantize(&data(n * k, 1), n, k, Scheme::Asymmetric).unwrap();
        let xb = to_bf16_vec(&data(m * k, 2));
        let x = Bf16Rows::new(&xb, m, k).unwrap();
        let xf: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
        let want = matmul_f32(&q.dequantize(), &xf, m, n, k);
        let got = w4a16(&q, x);
        assert!(rel_error(&got, &want) < 1e-6, "{}", rel_error(&got, &want));
    }

    /// The W4A8 identity equals a plain f32 matmul of dequantized weights and dequantized
    /// int8 activations (so the zero fold is algebraically right).
    #[test]
    fn w4a8_identity_matches_dequantized_matmul() {
        let (m, n, k) = (2, 65, 384);
        for scheme in [Scheme::Symmetric, Scheme::Asymmetric] {
            let q = quantize(&data(n * k, 3), n, k, scheme).unwrap();
            let xb = to_bf16_vec(&data(m * k, 4));
            let a = QuantActs::quantize(Bf16Rows::new(&xb, m, k).unwrap()).unwrap();
            let xa: Vec<f32> = (0..m * k)
                .map(|i| a.row(i / k)[i % k] as f32 * a.scale(i / k, (i % k) / GROUP))
                .collect();
            let want = matmul_f32(&q.dequantize(), &xa, m, n, k);
            let got = w4a8(&q, &a);
            assert!(
                rel_error(&got, &want) < 1e-5,
                "{scheme:?}: {}",
                rel_error(&got, &want)
            );
        }
    }

    #[test]
    fn bf16_reference_matches_f32() {
        let (m, n, k) = (2, 5, 128);
        let wb = to_bf16_vec(&data(n * k, 5));
        let xb = to_bf16_vec(&data(m * k, 6));
        let wf: Vec<f32> = wb.iter().map(|v| v.to_f32()).collect();
        let xf: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
        let got = bf16(&wb, n, Bf16Rows::new(&xb, m, k).unwrap());
        assert!(rel_error(&got, &matmul_f32(&wf, &xf, m, n, k)) < 1e-6);
    }
}
