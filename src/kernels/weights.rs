//! GPTQ-style int4 weights before packing: codes, per-(column, group) bf16 scale and zero,
//! the round-to-nearest quantizer that makes them from f32, and dequantization.
//!
//! Model (kernels.md §0): W[N][K], K a multiple of [`GROUP`] = 128; each output column n and
//! group g carry one bf16 scale s and one bf16 zero z; a weight is `(q − z)·s` with q ∈ 0..=15.
//! 4 + 32/128 = 4.25 bits per weight.
//!
//! Schemes:
//! - [`Scheme::Symmetric`]: z = 8, s = 2·amax/15 (GPTQ `sym=True`); code = clamp(round(w/s) + 8).
//! - [`Scheme::Asymmetric`]: range [min(w,0), max(w,0)], s = range/15, z = round(−min/s), an
//!   **integer** as in GPTQ checkpoints. The kernels also accept fractional zeros (AWQ-style
//!   or converted checkpoints); build those with [`QuantWeights::from_parts`].
//!
//! Codes are computed against the bf16-rounded scale, so dequantization uses exactly the
//! stored values. This module does not pack; see [`super::pack`].

use super::bf16::Bf16;
use super::error::KernelError;

/// Quantization group size along K.
pub const GROUP: usize = 128;

/// How zeros are chosen by [`quantize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// z = 8 for every group.
    Symmetric,
    /// Per-group integer zero fitted to the group's range.
    Asymmetric,
}

impl Scheme {
    /// Lower-case name used in reports (`"sym"`, `"asym"`).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Symmetric => "sym",
            Scheme::Asymmetric => "asym",
        }
    }

    /// The full name, as bench's fidelity rows spell it (`"symmetric"`, `"asymmetric"`).
    pub fn full_name(self) -> &'static str {
        match self {
            Scheme::Symmetric => "symmetric",
            Scheme::Asymmetric => "asymmetric",
        }
    }
}

/// Unpacked int4 weights: row-major codes `[N][K]` (one code per byte, 0..=15) and
/// `[N][K/128]` bf16 scales and zeros.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantWeights {
    /// Output columns.
    pub n: usize,
    /// Input features (multiple of 128).
    pub k: usize,
    /// `codes[n*k + k]`, each 0..=15.
    pub codes: Vec<u8>,
    /// `scales[n*(k/128) + g]`.
    pub scales: Vec<Bf16>,
    /// `zeros[n*(k/128) + g]`; may be fractional.
    pub zeros: Vec<Bf16>,
}

/// Check the (N, K) shape every int4 weight must have.
pub fn check_shape(n: usize, k: usize) -> Result<(), KernelError> {
    if n == 0 || k == 0 {
        return Err(KernelError::Shape(format!("empty weight matrix {n}x{k}")));
    }
    if !k.is_multiple_of(GROUP) {
        return Err(KernelError::Shape(format!(
            "K = {k} is not a multiple of the group size {GROUP}"
        )));
    }
    Ok(())
}

impl QuantWeights {
    /// Groups per column (K / 128).
    pub fn groups(&self) -> usize {
        self.k / GROUP
    }

    /// Assemble from raw parts, validating lengths and code range.
    pub fn from_parts(
        n: usize,
        k: usize,
        codes: Vec<u8>,
        scales: Vec<Bf16>,
        zeros: Vec<Bf16>,
    ) -> Result<Self, KernelError> {
        check_shape(n, k)?;
        let g = k / GROUP;
        if codes.len() != n * k || scales.len() != n * g || zeros.len() != n * g {
            return Err(KernelError::Shape(format!(
                "weight parts for {n}x{k}: codes {}, scales {}, zeros {} (want {}, {g}·{n}, {g}·{n})",
                codes.len(),
                scales.len(),
                zeros.len(),
                n * k
            )));
        }
        if let Some(bad) = codes.iter().position(|&c| c > 15) {
            return Err(KernelError::Data(format!(
                "code {} at index {bad} is not a 4-bit value",
                codes[bad]
            )));
        }
        Ok(Self {
            n,
            k,
            codes,
            scales,
            zeros,
        })
    }

    /// Scale of (column, group) as f32.
    #[inline]
    pub fn scale(&self, n: usize, g: usize) -> f32 {
        self.scales[n * self.groups() + g].to_f32()
    }

    /// Zero of (column, group) as f32.
    #[inline]
    pub fn zero(&self, n: usize, g: usize) -> f32 {
        self.zeros[n * self.groups() + g].to_f32()
    }

    /// True when every zero is exactly 8 (a symmetric layer).
    pub fn is_symmetric(&self) -> bool {
        self.zeros.iter().all(|z| z.to_f32() == 8.0)
    }

    /// Dequantized weights `[N][K]`, `(q − z)·s` in f32.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = vec![0.0f32; self.n * self.k];
        for n in 0..self.n {
            for k in 0..self.k {
                let g = k / GROUP;
                let q = self.codes[n * self.k + k] as f32;
                out[n * self.k + k] = (q - self.zero(n, g)) * self.scale(n, g);
            }
        }
        out
    }
}

/// Quantize f32 weights `[N][K]` (row n = output column n) to int4 codes, group 128,
/// round-to-nearest (no GPTQ error feedback). Non-finite weights are rejected.
pub fn quantize(
    w: &[f32],
    n: usize,
    k: usize,
    scheme: Scheme,
) -> Result<QuantWeights, KernelError> {
    check_shape(n, k)?;
    if w.len() != n * k {
        return Err(KernelError::Shape(format!(
            "weights hold {} values, {n}x{k} needs {}",
            w.len(),
            n * k
        )));
    }
    if let Some(i) = w.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::Data(format!(
            "weight {i} is not finite ({})",
            w[i]
        )));
    }
    let groups = k / GROUP;
    let mut codes = vec![0u8; n * k];
    let mut scales = vec![Bf16::ZERO; n * groups];
    let mut zeros = vec![Bf16::ZERO; n * groups];
    for col in 0..n {
        for g in 0..groups {
            let src = &w[col * k + g * GROUP..col * k + (g + 1) * GROUP];
            let (s, z) = fit_group(src, scheme);
            let sf = s.to_f32();
            let zf = z.to_f32();
            for (i, &v) in src.iter().enumerate() {
                let q = (v / sf).round_ties_even() + zf;
                codes[col * k + g * GROUP + i] = q.clamp(0.0, 15.0) as u8;
            }
            scales[col * groups + g] = s;
            zeros[col * groups + g] = z;
        }
    }
    Ok(QuantWeights {
        n,
        k,
        codes,
        scales,
        zeros,
    })
}

/// Scale and zero for one group (bf16-rounded scale; never zero or non-finite).
fn fit_group(v: &[f32], scheme: Scheme) -> (Bf16, Bf16) {
    let lo = v.iter().fold(0.0f32, |a, &b| a.min(b));
    let hi = v.iter().fold(0.0f32, |a, &b| a.max(b));
    let usable = |s: f32| {
        let b = Bf16::from_f32(s);
        let f = b.to_f32();
        if f > 0.0 && f.is_finite() {
            b
        } else {
            Bf16::ONE
        }
    };
    match scheme {
        Scheme::Symmetric => {
            let amax = hi.max(-lo);
            (usable(2.0 * amax / 15.0), Bf16::from_f32(8.0))
        }
        Scheme::Asymmetric => {
            let s = usable((hi - lo) / 15.0);
            let z = (-lo / s.to_f32()).round_ties_even().clamp(0.0, 15.0);
            (s, Bf16::from_f32(z))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_shapes_and_values() {
        assert!(quantize(&[0.0; 100], 1, 100, Scheme::Symmetric).is_err());
        assert!(quantize(&[0.0; 128], 2, 128, Scheme::Symmetric).is_err());
        let mut w = vec![0.0; 128];
        w[3] = f32::NAN;
        assert!(quantize(&w, 1, 128, Scheme::Asymmetric).is_err());
        assert!(
            QuantWeights::from_parts(1, 128, vec![16; 128], vec![Bf16::ONE], vec![Bf16::ONE])
                .is_err()
        );
    }

    #[test]
    fn error_within_half_step() {
        let k = 256;
        let w: Vec<f32> = (0..2 * k)
            .map(|i| ((i * 37 % 101) as f32 - 40.0) / 17.0)
            .collect();
        for scheme in [Scheme::Symmetric, Scheme::Asymmetric] {
            let q = quantize(&w, 2, k, scheme).unwrap();
            let d = q.dequantize();
            for (i, (&a, &b)) in w.iter().zip(&d).enumerate() {
                let s = q.scale(i / k, (i % k) / GROUP);
                // Half a step, plus symmetric clipping of the top code (one more half step).
                let tol = if scheme == Scheme::Symmetric {
                    s
                } else {
                    0.5 * s + 1e-6
                };
                assert!(
                    (a - b).abs() <= tol * 1.01,
                    "{scheme:?} i={i}: {a} vs {b} (s={s})"
                );
            }
            assert_eq!(q.is_symmetric(), scheme == Scheme::Symmetric);
        }
    }

    #[test]
    fn all_zero_group_is_exact() {
        let q = quantize(&[0.0; 128], 1, 128, Scheme::Asymmetric).unwrap();
        assert!(q.dequantize().iter().all(|&x| x == 0.0));
    }
}
