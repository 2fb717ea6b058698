//! Activations as 16-bit block floating point, for the `vpmaddwd` W4A16 GEMV
//! (`w4a16-gemv-avx2-i16`, [`avx2_i16`](super::avx2_i16)).
//!
//! Per (row, 128-group), with `e` the exponent of the group's largest |a| (bf16 denormals
//! flushed to zero first, as [`bf16_act`](crate::kernels::bf16_act) does for the FMA paths):
//! `q = round_ne(a · 2^(14 − e))`, so the largest magnitude maps into [2^14, 2^15) and every
//! q fits an i16 (at most 255 · 2^7 = 32 640). A bf16 value has 8 significant bits, so every
//! |a| ≥ 2^(e − 7) (in particular every |a| ≥ amax · 2^-7) is an exact integer at this
//! scale; smaller values are rounded to the nearest multiple of 2^(e − 14), an error of at
//! most 2^(e − 15) ≤ 2^-15 · amax each. The scaling is done by exact power-of-two
//! multiplications (split in two when 2^(14 − e) would overflow f32), so the rounding to
//! integer is the only inexact step.
//!
//! Stored per row: the q of each octet `k0..k0+8` in the pair order
//! [`OCT_ORDER`](crate::kernels::bf16_act::OCT_ORDER) (`a0 a2 a4 a6 a1 a3 a5 a7`: dword `i`
//! is the activation pair that matches one shift-and-mask of the packed codes, see the
//! kernel), and per group `Σq` (an exact integer below 2^22, held as f32) and the factor
//! `2^(e − 14)` (exact in f32, subnormal for groups whose amax is below 2^-112; 0 for an
//! all-zero group), so that `a ≈ q · factor`.
//!
//! Exactness: with `r = a − q·factor`, the GEMV's error on one (column, group) is at most
//! `s·(Σ q_w·|r| + |z|·|Σ r|)`, and `verify`'s W4A16 bound grants at least
//! `2⁻¹⁴·s·(32 + |z|)·Σ|a|` whatever the weights. `Σ|r| ≤ 2⁻¹⁵·Σ|a|` keeps the error under
//! half of that. Groups where it may fail (tested as Σ|ρ| > 2⁻¹⁶·Σ|a|, ρ = r / factor, with a
//! factor 2 of margin for the f32 sums: Gaussian groups pass with room to spare, a group with
//! a 1000× outlier or one built of values just under half a unit does not) also store their
//! residue `ρ` in block FP (`lo_q`, `lo_sums`, `lo_factor`), whose own rounding is at most
//! 2^-30 of the group's largest value: far inside the bound for every input.
//!
//! NaN and ±Inf have no block-FP form: [`with_bfp`] reports them and the caller runs a
//! float kernel instead. Preparation uses AVX2 (one `vcvtps2dq` rounds 8 values).

use core::arch::x86_64::*;
use std::cell::RefCell;

use crate::kernels::acts::Bf16Rows;
use crate::kernels::weights::GROUP;
use crate::kernels::x86::lanes::Avx2;

/// Activations `[m][k]` as block-FP i16 per 128-group (module docs).
#[derive(Debug, Clone, Default)]
pub struct ActBfp16 {
    /// Rows.
    pub m: usize,
    /// Columns (reduction length, a multiple of 128).
    pub k: usize,
    /// `[m][k]` integer activations, each octet in `OCT_ORDER` pair order.
    pub q: Vec<i16>,
    /// `[m][k / 128]` Σq of each group (exact integers).
    pub sums: Vec<f32>,
    /// `[m][k / 128]` the power of two `2^(e − 14)` with `a ≈ q · factor` (0 for zero groups).
    pub factor: Vec<f32>,
    /// `[m][k]` the rounding residue `a − q·factor` of the groups that need it (module docs,
    /// "Exactness"), as block FP again in the same order; 0 elsewhere.
    pub lo_q: Vec<i16>,
    /// `[m][k / 128]` Σ of `lo_q` per group.
    pub lo_sums: Vec<f32>,
    /// `[m][k / 128]` the residue's factor; 0 for groups that need no residue pass.
    pub lo_factor: Vec<f32>,
}

/// `2^n` for `n` in −149..=127 (exact; subnormal below −126).
fn pow2(n: i32) -> f32 {
    debug_assert!((-149..=127).contains(&n));
    if n >= -126 {
        f32::from_bits(((n + 127) as u32) << 23)
    } else {
        f32::from_bits(1 << (n + 149))
    }
}

/// One block-FP form of the activations, as the GEMVs read it: the main one or the
/// rounding residue.
#[derive(Clone, Copy)]
pub(crate) struct Form<'a> {
    /// `[m][k]` i16 values in pair order.
    pub q: &'a [i16],
    /// `[m][groups]` Σq per group.
    pub sums: &'a [f32],
    /// `[m][groups]` factor per group.
    pub factor: &'a [f32],
}

impl ActBfp16 {
    /// Number of 128-groups per row.
    pub fn groups(&self) -> usize {
        self.k / GROUP
    }

    /// The main block-FP form.
    pub(crate) fn main(&self) -> Form<'_> {
        Form {
            q: &self.q,
            sums: &self.sums,
            factor: &self.factor,
        }
    }

    /// The rounding residue's block-FP form (zero where a group needs none).
    pub(crate) fn residue(&self) -> Form<'_> {
        Form {
            q: &self.lo_q,
            sums: &self.lo_sums,
            factor: &self.lo_factor,
        }
    }

    /// Whether any of `rows` needs the residue pass in group `g`.
    pub(crate) fn needs_residue(&self, rows: core::ops::Range<usize>, g: usize) -> bool {
        let ng = self.groups();
        rows.into_iter().any(|r| self.lo_factor[r * ng + g] != 0.0)
    }

    /// Refills this holder from `x` (no allocation once it has held as many values).
    /// Returns `false` when an activation is NaN or infinite (the contents are then
    /// unspecified).
    pub fn refill(&mut self, v: Avx2, x: Bf16Rows<'_>) -> bool {
        let groups = x.k / GROUP;
        self.m = x.m;
        self.k = x.k;
        self.q.resize(x.m * x.k, 0);
        self.sums.resize(x.m * groups, 0.0);
        self.factor.resize(x.m * groups, 0.0);
        self.lo_q.resize(x.m * x.k, 0);
        self.lo_sums.resize(x.m * groups, 0.0);
        self.lo_factor.resize(x.m * groups, 0.0);
        let src = x.data.chunks_exact(GROUP);
        let dst = self
            .q
            .chunks_exact_mut(GROUP)
            .zip(self.lo_q.chunks_exact_mut(GROUP));
        let per_group = self.sums.iter_mut().zip(self.factor.iter_mut());
        let lo_per_group = self.lo_sums.iter_mut().zip(self.lo_factor.iter_mut());
        for ((s, (d, lo)), ((sum, f), (lo_sum, lo_f))) in
            src.zip(dst).zip(per_group.zip(lo_per_group))
        {
            let (Ok(s), Ok(d), Ok(lo)) = (s.try_into(), d.try_into(), lo.try_into()) else {
                return false;
            };
            // SAFETY: `v` proves AVX2.
            match unsafe { quantize_group(v, s, d, lo) } {
                Some(g) => ((*sum, *f), (*lo_sum, *lo_f)) = (g.hi, g.lo),
                None => return false,
            }
        }
        true
    }
}

/// (Σq, factor) of one block-FP group.
type SumFactor = (f32, f32);

/// A quantized group: its block-FP form and that of its rounding residue ((0, 0) when the
/// group needs no residue pass).
struct GroupBfp {
    hi: SumFactor,
    lo: SumFactor,
}

/// `x · 2^n` exactly for the scalings here (split in two when `2^n` would overflow f32).
fn scale_pow2(n: i32) -> (f32, f32) {
    if n > 100 {
        (pow2(n - 64), pow2(64))
    } else {
        (pow2(n), 1.0)
    }
}

/// Rounds the 128 values `vals` (already scaled so the largest magnitude is in
/// [2^14, 2^15)) to i16 in pair order into `dst`; returns Σq and, per value, the residue
/// `val − q` (exact: both have few significant bits).
#[target_feature(enable = "avx2")]
fn round_to_pairs(
    _v: Avx2,
    vals: &[__m256; 16],
    dst: &mut [i16; GROUP],
    rho: &mut [__m256; 16],
) -> f32 {
    let pairs = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    let mut sum = _mm256_setzero_si256();
    let out = dst.as_mut_ptr().cast::<__m256i>();
    for i in 0..8 {
        // `vcvtps2dq` rounds to nearest even (default MXCSR).
        let lo = _mm256_cvtps_epi32(vals[2 * i]);
        let hi = _mm256_cvtps_epi32(vals[2 * i + 1]);
        rho[2 * i] = _mm256_sub_ps(vals[2 * i], _mm256_cvtepi32_ps(lo));
        rho[2 * i + 1] = _mm256_sub_ps(vals[2 * i + 1], _mm256_cvtepi32_ps(hi));
        sum = _mm256_add_epi32(sum, _mm256_add_epi32(lo, hi));
        // Per octet: dwords reordered to a0 a2 a4 a6 | a1 a3 a5 a7, packed lane-wise to
        // i16 (no saturation: |q| ≤ 32 768 − 128), then the two octets' halves regrouped.
        let lo = _mm256_permutevar8x32_epi32(lo, pairs);
        let hi = _mm256_permutevar8x32_epi32(hi, pairs);
        let packed = _mm256_permute4x64_epi64::<0xD8>(_mm256_packs_epi32(lo, hi));
        // SAFETY: `dst` is 128 i16 = 8 × 32 bytes; unaligned store.
        unsafe { _mm256_storeu_si256(out.add(i), packed) };
    }
    let s = _mm_add_epi32(
        _mm256_castsi256_si128(sum),
        _mm256_extracti128_si256::<1>(sum),
    );
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s) as f32
}

/// Σ of the 8 lanes of each of `v` after `|·|`, in f32.
#[target_feature(enable = "avx2")]
fn sum_abs(_v: Avx2, v: &[__m256; 16]) -> f32 {
    let mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFF_FFFF));
    let t = v.iter().fold(_mm256_setzero_ps(), |t, &x| {
        _mm256_add_ps(t, _mm256_and_ps(x, mask))
    });
    let t = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps::<1>(t));
    let t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)))
}

/// One group: `dst` gets the q values in pair order, and `lo` the residue's when the group
/// needs it (else zeros); `None` when the group holds a NaN or infinity.
#[target_feature(enable = "avx2")]
fn quantize_group(
    v: Avx2,
    src: &[crate::kernels::bf16::Bf16; GROUP],
    dst: &mut [i16; GROUP],
    lo: &mut [i16; GROUP],
) -> Option<GroupBfp> {
    let p = src.as_ptr().cast::<__m256i>();
    // SAFETY: `src` is 128 bf16 (`Bf16` is `repr(transparent)` over u16) = 8 × 32 bytes;
    // unaligned loads.
    let raw: [__m256i; 8] = core::array::from_fn(|i| unsafe { _mm256_loadu_si256(p.add(i)) });
    let mag = _mm256_set1_epi16(0x7FFF);
    let top = raw.iter().fold(_mm256_setzero_si256(), |t, &r| {
        _mm256_max_epu16(t, _mm256_and_si256(r, mag))
    });
    let top = _mm_max_epu16(
        _mm256_castsi256_si128(top),
        _mm256_extracti128_si256::<1>(top),
    );
    // max over u16 = NOT(min over NOT x); `phminposuw` finds the min.
    let ones = _mm_set1_epi16(-1);
    let top = !(_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(top, ones))) as u16);
    if top >= 0x7F80 {
        return None;
    }
    let emax = (top >> 7) as i32;
    lo.fill(0);
    if emax == 0 {
        dst.fill(0);
        return Some(GroupBfp {
            hi: (0.0, 0.0),
            lo: (0.0, 0.0),
        });
    }
    let e = emax - 127;
    let (s1, s2) = scale_pow2(14 - e); // 14 − e in −113..=140
    let (s1, s2) = (_mm256_set1_ps(s1), _mm256_set1_ps(s2));
    let exp = _mm256_set1_epi32(0x7F80_0000);
    let widen = |h: __m128i| {
        let bits = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h));
        let denormal = _mm256_cmpeq_epi32(_mm256_and_si256(bits, exp), _mm256_setzero_si256());
        let a = _mm256_castsi256_ps(_mm256_andnot_si256(denormal, bits));
        // Exact power-of-two scaling.
        _mm256_mul_ps(_mm256_mul_ps(a, s1), s2)
    };
    let vals: [__m256; 16] = core::array::from_fn(|i| {
        let r = raw[i / 2];
        widen(if i % 2 == 0 {
            _mm256_castsi256_si128(r)
        } else {
            _mm256_extracti128_si256::<1>(r)
        })
    });
    let mut rho = [_mm256_setzero_ps(); 16];
    let sum = round_to_pairs(v, &vals, dst, &mut rho);
    let hi = (sum, pow2(e - 14));
    // The residue pass is needed when Σ|ρ| may exceed 2^-15·Σ|a| (module docs), with a
    // factor 2 of margin for the f32 sums.
    let (rho_abs, a_abs) = (sum_abs(v, &rho), sum_abs(v, &vals));
    if rho_abs <= a_abs * 2f32.powi(-16) {
        return Some(GroupBfp { hi, lo: (0.0, 0.0) });
    }
    // |ρ| ≤ 1/2, and ρ ≠ 0 only for values below 2^7 units: its exponent is in −113..=−1.
    let rho_max = rho.iter().fold(0f32, |m, r| {
        let mut lanes = [0f32; 8];
        // SAFETY: 8 f32 into an 8-element array.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *r) };
        lanes.iter().fold(m, |m, x| m.max(x.abs()))
    });
    let e_rho = ((rho_max.to_bits() >> 23) as i32) - 127;
    let lo_exp = e - 14 + e_rho - 14;
    if lo_exp < -149 {
        // A residue below the smallest f32: it is far under the bound's absolute floor.
        return Some(GroupBfp { hi, lo: (0.0, 0.0) });
    }
    let (t1, t2) = scale_pow2(14 - e_rho);
    let (t1, t2) = (_mm256_set1_ps(t1), _mm256_set1_ps(t2));
    let scaled_rho: [__m256; 16] =
        core::array::from_fn(|i| _mm256_mul_ps(_mm256_mul_ps(rho[i], t1), t2));
    let mut rest = [_mm256_setzero_ps(); 16];
    let lo_sum = round_to_pairs(v, &scaled_rho, lo, &mut rest);
    Some(GroupBfp {
        hi,
        lo: (lo_sum, pow2(lo_exp)),
    })
}

thread_local! {
    static CACHE: RefCell<ActBfp16> = RefCell::new(ActBfp16::default());
}

/// Runs `f` on the block-FP form of `x`, reusing a per-thread holder so that a steady
/// decode loop does not allocate; `None` (without calling `f`) when `x` holds a NaN or an
/// infinity.
pub fn with_bfp<R>(v: Avx2, x: Bf16Rows<'_>, f: impl FnOnce(&ActBfp16) -> R) -> Option<R> {
    CACHE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut act) => act.refill(v, x).then(|| f(&act)),
        Err(_) => {
            let mut act = ActBfp16::default();
            act.refill(v, x).then(|| f(&act))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::bf16::Bf16;
    use crate::kernels::bf16_act::{OCT_ORDER, bf16_to_f32_daz};

    /// The block-FP form of one row, by the definition in f64: (q in natural order, Σq,
    /// factor).
    fn model(a: &[Bf16]) -> (Vec<i16>, f32, f32) {
        let vals: Vec<f64> = a.iter().map(|b| bf16_to_f32_daz(b.0) as f64).collect();
        let amax = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if amax == 0.0 {
            return (vec![0; a.len()], 0.0, 0.0);
        }
        let e = amax.log2().floor() as i32;
        let q: Vec<i16> = vals
            .iter()
            .map(|v| (v * 2f64.powi(14 - e)).round_ties_even() as i16)
            .collect();
        let sum = q.iter().map(|&v| v as i32).sum::<i32>() as f32;
        (q, sum, 2f64.powi(e - 14) as f32)
    }

    fn prepare(a: &[Bf16], m: usize) -> Option<ActBfp16> {
        let v = Avx2::new()?;
        let rows = Bf16Rows::new(a, m, a.len() / m).expect("shape");
        let mut act = ActBfp16::default();
        assert!(act.refill(v, rows), "finite input");
        Some(act)
    }

    /// Natural-order q of group `g` of row 0.
    fn natural(act: &ActBfp16, g: usize) -> Vec<i16> {
        let mut out = vec![0; GROUP];
        for (i, o) in out.iter_mut().enumerate() {
            *o = act.q[g * GROUP + (i / 8) * 8 + OCT_ORDER[i % 8]];
        }
        out
    }

    #[test]
    fn values_near_the_max_are_exact_and_small_ones_round_to_nearest_even() {
        // Group 0: max 1.5 (e = 0, factor 2^-14); group 1: max −3·2^100.
        let mut a = vec![Bf16::ZERO; 2 * GROUP];
        a[5] = Bf16::from_f32(1.5);
        a[6] = Bf16::from_f32(-1.5 * 2f32.powi(-7)); // within 2^7: exact
        a[7] = Bf16::from_f32(255.0 * 2f32.powi(-14)); // 2^-7 · 1.99…: exact
        a[8] = Bf16::from_f32(3.0 * 2f32.powi(-15)); // 1.5 units → 2
        a[9] = Bf16::from_f32(5.0 * 2f32.powi(-15)); // 2.5 units → 2
        a[10] = Bf16::from_f32(-7.0 * 2f32.powi(-15)); // −3.5 units → −4
        a[11] = Bf16::from_f32(2f32.powi(-15)); // 0.5 units → 0
        a[12] = Bf16::from_f32(1e-30);
        a[13] = Bf16(0x0001); // denormal: flushed
        a[GROUP] = Bf16::from_f32(-3.0 * 2f32.powi(100));
        a[GROUP + 1] = Bf16::from_f32(2f32.powi(94)); // exact: exponent e − 7
        a[GROUP + 2] = Bf16::from_f32(1.0);
        let Some(act) = prepare(&a, 1) else {
            eprintln!("SKIPPED bfp16 preparation: no AVX2 + FMA");
            return;
        };
        let g0 = natural(&act, 0);
        assert_eq!(
            &g0[5..14],
            &[24576, -192, 255, 2, 2, -4, 0, 0, 0],
            "{:?}",
            &g0[..16]
        );
        assert_eq!(act.factor[0], 2f32.powi(-14));
        assert_eq!(act.sums[0], (24576 - 192 + 255 + 2 + 2 - 4) as f32);
        let g1 = natural(&act, 1);
        assert_eq!(&g1[..3], &[-24576, 1 << 7, 0]);
        assert_eq!(act.factor[1], 2f32.powi(101 - 14));
        for (i, &b) in a.iter().enumerate().take(GROUP) {
            let x = bf16_to_f32_daz(b.0);
            if x.abs() >= 2f32.powi(-7) {
                assert_eq!(g0[i] as f32 * act.factor[0], x, "value {i} exact");
            }
        }
    }

    #[test]
    fn random_groups_match_the_definition() {
        let mut rng = crate::kernels::fidelity::Rng::new(7);
        let (m, k) = (3, 4 * GROUP);
        // Magnitudes over 2^-40..2^40 within each group, and whole groups at extremes.
        let a: Vec<Bf16> = (0..m * k)
            .map(|i| match (i / GROUP) % 6 {
                4 => Bf16(0x7F7F ^ ((i as u16 & 1) << 15) ^ (i as u16 & 0x3F)),
                5 => Bf16(0x0080 + (i as u16 & 0x3FF)),
                _ => Bf16::from_f32((rng.normal() * 2f64.powi((i % 81) as i32 - 40)) as f32),
            })
            .collect();
        let Some(act) = prepare(&a, m) else {
            eprintln!("SKIPPED bfp16 preparation: no AVX2 + FMA");
            return;
        };
        for (g, chunk) in a.chunks_exact(GROUP).enumerate() {
            let (q, sum, factor) = model(chunk);
            let got: Vec<i16> = (0..GROUP)
                .map(|i| act.q[g * GROUP + (i / 8) * 8 + OCT_ORDER[i % 8]])
                .collect();
            assert_eq!(got, q, "group {g}");
            assert_eq!(act.sums[g], sum, "group {g}");
            assert_eq!(act.factor[g], factor, "group {g}");
            let amax = chunk
                .iter()
                .fold(0f32, |m, b| m.max(bf16_to_f32_daz(b.0).abs()));
            for (i, b) in chunk.iter().enumerate() {
                let x = bf16_to_f32_daz(b.0) as f64;
                let err = (q[i] as f64 * factor as f64 - x).abs();
                assert!(err <= 2f64.powi(-15) * amax as f64, "group {g} value {i}");
                if x.abs() >= amax as f64 * 2f64.powi(-7) {
                    assert_eq!(err, 0.0, "group {g} value {i} within 2^7 of the max");
                }
            }
        }
    }

    /// The residue form: absent for Gaussian groups, present for a group with a 1000×
    /// outlier and for values just under half a unit; main + residue reproduce every value
    /// within 2^-30 of the group's max.
    #[test]
    fn residue_only_where_the_rounding_could_matter_and_then_nearly_exact() {
        let mut rng = crate::kernels::fidelity::Rng::new(11);
        let mut a: Vec<Bf16> = (0..3 * GROUP)
            .map(|_| Bf16::from_f32(rng.normal() as f32))
            .collect();
        a[GROUP + 17] = Bf16::from_f32(1000.0);
        a[2 * GROUP] = Bf16::from_f32(1.0);
        for x in &mut a[2 * GROUP + 1..] {
            *x = Bf16::from_f32(2f32.powi(-15) * 255.0 / 256.0);
        }
        let Some(act) = prepare(&a, 1) else {
            eprintln!("SKIPPED bfp16 preparation: no AVX2 + FMA");
            return;
        };
        assert_eq!(act.lo_factor[0], 0.0, "Gaussian group: no residue pass");
        assert!(act.lo_q[..GROUP].iter().all(|&q| q == 0));
        for g in 1..3 {
            assert!(act.lo_factor[g] > 0.0, "group {g} needs its residue");
            let amax = a[g * GROUP..(g + 1) * GROUP]
                .iter()
                .fold(0f64, |m, b| m.max(bf16_to_f32_daz(b.0).abs() as f64));
            let main = natural(&act, g);
            let mut lo = vec![0i16; GROUP];
            for (i, o) in lo.iter_mut().enumerate() {
                *o = act.lo_q[g * GROUP + (i / 8) * 8 + OCT_ORDER[i % 8]];
            }
            let lo_sum: i32 = lo.iter().map(|&q| q as i32).sum();
            assert_eq!(act.lo_sums[g], lo_sum as f32);
            for i in 0..GROUP {
                let x = bf16_to_f32_daz(a[g * GROUP + i].0) as f64;
                let got =
                    main[i] as f64 * act.factor[g] as f64 + lo[i] as f64 * act.lo_factor[g] as f64;
                assert!(
                    (got - x).abs() <= amax * 2f64.powi(-30),
                    "group {g} value {i}"
                );
            }
        }
    }

    #[test]
    fn zero_tiny_and_non_finite_groups() {
        let Some(v) = Avx2::new() else {
            eprintln!("SKIPPED bfp16 preparation: no AVX2 + FMA");
            return;
        };
        let mut a = vec![Bf16(0x0003); 3 * GROUP]; // group 0: denormals only
        a[GROUP] = Bf16(0x0080); // group 1: amax = 2^-126, factor 2^-140 (subnormal)
        a[GROUP + 1] = Bf16(0x8081);
        let rows = Bf16Rows::new(&a, 1, 3 * GROUP).expect("shape");
        let mut act = ActBfp16::default();
        assert!(act.refill(v, rows));
        assert_eq!((act.sums[0], act.factor[0]), (0.0, 0.0));
        assert!(act.q[..GROUP].iter().all(|&q| q == 0));
        assert_eq!(act.factor[1], 2f32.powi(-126) * 2f32.powi(-14));
        assert_eq!(&natural(&act, 1)[..2], &[1 << 14, -(129 << 7)]);
        for bad in [0x7F80u16, 0xFF80, 0x7FC1] {
            let mut b = a.clone();
            b[2 * GROUP + 9] = Bf16(bad);
            let rows = Bf16Rows::new(&b, 1, 3 * GROUP).expect("shape");
            assert!(!act.refill(v, rows), "{bad:#x}");
            assert_eq!(with_bfp(v, rows, |_| ()), None);
        }
        assert_eq!(
            with_bfp(v, rows, |x| x.sums.clone()),
            Some(act.sums.clone())
        );
    }
}
