//! Activations: the bf16 row view the kernels take, and the W4A8 activation quantizer
//! (kernels.md §3): bf16 `[M][K]` → symmetric int8 per (token, 128-group).
//!
//! Per row m and group g: `s_a = amax/127` (1 when the group is all zero), `q = round_ne(x/s_a)`
//! clamped to [−127, 127] (never −128), and `A = Σq`, the group sum the zero-point fold needs
//! (`y = Σ_g s_w·s_a·(D − z·A)`). The int8 rows are stored with stride K in a 64-aligned buffer
//! whose row count is padded to a multiple of 16 with **zero rows**, so an AMX A tile (16 rows)
//! can always be loaded without a copy; padded rows have `s_a = 0`, `A = 0`.
//! Non-finite activations are rejected; a group whose `amax/127` underflows to 0 is treated as
//! all zero.

use super::bf16::Bf16;
use super::buf::AlignedBuf;
use super::error::KernelError;
use super::weights::GROUP;

/// Row padding of [`QuantActs`] (one AMX tile of rows).
pub const ROW_PAD: usize = 16;

/// A borrowed row-major bf16 matrix `[M][K]` (the activations of W4A16 and bf16 kernels).
#[derive(Clone, Copy, Debug)]
pub struct Bf16Rows<'a> {
    /// Rows (tokens).
    pub m: usize,
    /// Columns (input features).
    pub k: usize,
    /// `m*k` values, row-major.
    pub data: &'a [Bf16],
}

impl<'a> Bf16Rows<'a> {
    /// Validate `data.len() == m*k`, K a multiple of 128 and M > 0.
    pub fn new(data: &'a [Bf16], m: usize, k: usize) -> Result<Self, KernelError> {
        if m == 0 || k == 0 || !k.is_multiple_of(GROUP) || data.len() != m * k {
            return Err(KernelError::Shape(format!(
                "activations: {} values for {m}x{k} (K must be a non-zero multiple of {GROUP})",
                data.len()
            )));
        }
        Ok(Self { m, k, data })
    }

    /// Row m.
    #[inline]
    pub fn row(&self, m: usize) -> &'a [Bf16] {
        &self.data[m * self.k..][..self.k]
    }
}

/// Int8 activations with per-(row, group) scale and code sum.
#[derive(Clone, Debug)]
pub struct QuantActs {
    m: usize,
    k: usize,
    q: AlignedBuf<i8>,
    scale: AlignedBuf<f32>,
    sum: AlignedBuf<i32>,
}

impl QuantActs {
    /// Empty holder; [`QuantActs::quantize_into`] sizes it.
    pub fn new() -> Self {
        Self {
            m: 0,
            k: 0,
            q: AlignedBuf::zeroed(0),
            scale: AlignedBuf::zeroed(0),
            sum: AlignedBuf::zeroed(0),
        }
    }

    /// Quantize bf16 rows into a fresh holder.
    pub fn quantize(x: Bf16Rows<'_>) -> Result<Self, KernelError> {
        let mut a = Self::new();
        a.quantize_into(x)?;
        Ok(a)
    }

    /// Quantize into this holder, reusing its buffers when large enough (no allocation in a
    /// steady decode loop). Rows past M up to the 16-row padding are zero.
    pub fn quantize_into(&mut self, x: Bf16Rows<'_>) -> Result<(), KernelError> {
        if let Some(i) = x.data.iter().position(|v| !v.to_f32().is_finite()) {
            return Err(KernelError::Data(format!(
                "activation {i} (row {}, column {}) is not finite",
                i / x.k,
                i % x.k
            )));
        }
        let (m, k) = (x.m, x.k);
        let groups = k / GROUP;
        let rows = m.div_ceil(ROW_PAD) * ROW_PAD;
        self.q.ensure_len(rows * k);
        self.scale.ensure_len(rows * groups);
        self.sum.ensure_len(rows * groups);
        self.m = m;
        self.k = k;
        for r in 0..m {
            let src = x.row(r);
            for g in 0..groups {
                let xs = &src[g * GROUP..][..GROUP];
                let dst = &mut self.q[r * k + g * GROUP..][..GROUP];
                let amax = xs.iter().fold(0.0f32, |a, v| a.max(v.to_f32().abs()));
                let s = amax / 127.0;
                let (s, total) = if s > 0.0 {
                    let mut total = 0i32;
                    for (d, v) in dst.iter_mut().zip(xs) {
                        let q = (v.to_f32() / s).round_ties_even().clamp(-127.0, 127.0) as i8;
                        *d = q;
                        total += q as i32;
                    }
                    (s, total)
                } else {
                    dst.fill(0);
                    (1.0, 0)
                };
                self.scale[r * groups + g] = s;
                self.sum[r * groups + g] = total;
            }
        }
        // Padding rows stay zero even when the holder is reused for a smaller M.
        self.q[m * k..rows * k].fill(0);
        self.scale[m * groups..rows * groups].fill(0.0);
        self.sum[m * groups..rows * groups].fill(0);
        Ok(())
    }

    /// Rows (tokens).
    pub fn m(&self) -> usize {
        self.m
    }
    /// Rows including the zero padding (multiple of 16).
    pub fn m_padded(&self) -> usize {
        self.m.div_ceil(ROW_PAD) * ROW_PAD
    }
    /// Input features.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Groups per row.
    pub fn groups(&self) -> usize {
        self.k / GROUP
    }
    /// Int8 codes, `m_padded() * k` values, row stride K.
    #[inline]
    pub fn codes(&self) -> &[i8] {
        &self.q[..self.m_padded() * self.k]
    }
    /// Codes of row m.
    #[inline]
    pub fn row(&self, m: usize) -> &[i8] {
        &self.q[m * self.k..][..self.k]
    }
    /// Codes of row m, group g: a fixed-size array, so index checks on it fold away.
    #[inline]
    pub fn group(&self, m: usize, g: usize) -> &[i8; GROUP] {
        self.row(m)[g * GROUP..][..GROUP]
            .try_into()
            .expect("a group holds GROUP codes")
    }
    /// Scale of (row, group).
    #[inline]
    pub fn scale(&self, m: usize, g: usize) -> f32 {
        self.scale[m * self.groups() + g]
    }
    /// Code sum A of (row, group).
    #[inline]
    pub fn sum(&self, m: usize, g: usize) -> i32 {
        self.sum[m * self.groups() + g]
    }
    /// All scales, `[m_padded][groups]`.
    pub fn scales(&self) -> &[f32] {
        &self.scale[..self.m_padded() * self.groups()]
    }
    /// All sums, `[m_padded][groups]`.
    pub fn sums(&self) -> &[i32] {
        &self.sum[..self.m_padded() * self.groups()]
    }
    /// Build directly from codes (tests use this for extreme codes). Codes must be in
    /// [−127, 127]; `codes.len() == m*k`; scales `m*(k/128)`.
    pub fn from_codes(
        codes: &[i8],
        scales: &[f32],
        m: usize,
        k: usize,
    ) -> Result<Self, KernelError> {
        let groups = k / GROUP;
        if m == 0
            || !k.is_multiple_of(GROUP)
            || k == 0
            || codes.len() != m * k
            || scales.len() != m * groups
        {
            return Err(KernelError::Shape(format!(
                "int8 activations {m}x{k}: bad lengths"
            )));
        }
        if codes.contains(&i8::MIN) {
            return Err(KernelError::Data(
                "int8 activation code -128 is not allowed".into(),
            ));
        }
        let rows = m.div_ceil(ROW_PAD) * ROW_PAD;
        let mut a = Self {
            m,
            k,
            q: AlignedBuf::zeroed(rows * k),
            scale: AlignedBuf::zeroed(rows * groups),
            sum: AlignedBuf::zeroed(rows * groups),
        };
        a.q[..m * k].copy_from_slice(codes);
        a.scale[..m * groups].copy_from_slice(scales);
        for r in 0..m {
            for g in 0..groups {
                a.sum[r * groups + g] = codes[r * k + g * GROUP..][..GROUP]
                    .iter()
                    .map(|&c| c as i32)
                    .sum();
            }
        }
        Ok(a)
    }
}

impl Default for QuantActs {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::bf16::to_bf16_vec;

    #[test]
    fn quantizes_symmetric_and_pads() {
        let k = 256;
        let mut x = vec![0.0f32; 3 * k];
        for (i, v) in x.iter_mut().enumerate() {
            *v = (i as f32 - 300.0) * 0.37;
        }
        x[5] = -1000.0; // group amax → code -127, never -128
        let xb = to_bf16_vec(&x);
        let a = QuantActs::quantize(Bf16Rows::new(&xb, 3, k).unwrap()).unwrap();
        assert_eq!(a.m_padded(), 16);
        assert_eq!(a.row(0)[5], -127);
        assert!(a.codes().iter().all(|&c| c != i8::MIN));
        assert!(a.codes()[3 * k..].iter().all(|&c| c == 0));
        for r in 0..3 {
            for g in 0..2 {
                let s: i32 = a.row(r)[g * 128..][..128].iter().map(|&c| c as i32).sum();
                assert_eq!(a.sum(r, g), s);
                // Dequantized within half a step.
                for i in 0..128 {
                    let orig = xb[r * k + g * 128 + i].to_f32();
                    let back = a.row(r)[g * 128 + i] as f32 * a.scale(r, g);
                    assert!((orig - back).abs() <= 0.5 * a.scale(r, g) * 1.0001);
                }
            }
        }
    }

    #[test]
    fn zero_and_nonfinite_rows() {
        let xb = vec![Bf16::ZERO; 128];
        let a = QuantActs::quantize(Bf16Rows::new(&xb, 1, 128).unwrap()).unwrap();
        assert_eq!(a.scale(0, 0), 1.0);
        assert_eq!(a.sum(0, 0), 0);
        let mut bad = vec![Bf16::ONE; 128];
        bad[7] = Bf16::from_f32(f32::INFINITY);
        assert!(QuantActs::quantize(Bf16Rows::new(&bad, 1, 128).unwrap()).is_err());
        assert!(Bf16Rows::new(&bad, 2, 128).is_err());
    }

    #[test]
    fn reuse_keeps_padding_zero() {
        let big = vec![Bf16::ONE; 20 * 128];
        let small = vec![Bf16::ONE; 128];
        let mut a = QuantActs::quantize(Bf16Rows::new(&big, 20, 128).unwrap()).unwrap();
        a.quantize_into(Bf16Rows::new(&small, 1, 128).unwrap())
            .unwrap();
        assert_eq!(a.m(), 1);
        assert!(a.codes()[128..].iter().all(|&c| c == 0));
    }
}
