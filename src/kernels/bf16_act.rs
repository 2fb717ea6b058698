//! Activation preparation for the float-accumulating kernels (W4A16 and bf16).
//!
//! The FMA kernels read activations as f32, once per call: bf16 → f32 is a shift, and bf16
//! denormals are flushed to zero here (kernels.md pitfall 7). The flush keeps the FMA
//! paths free of microcode assists and makes them agree with `vdpbf16ps`/`TDPBF16PS`,
//! which treat denormal inputs as zero anyway. The W4A16 zero fold also needs Σa per
//! (token, 128-group), computed here from the flushed values so that `Σ q·a − z·Σa`
//! cancels consistently.
//!
//! The fold forms `Σ q·a` over a group in f32 before the scale is applied, which would
//! overflow for activations near bf16's maximum (15·128·3.4e38). So a group whose largest
//! magnitude exceeds 2⁶⁴ is scaled by an exact power of two 2⁻ᵉ here and its contribution is
//! multiplied back by `gscale = 2ᵉ` in the epilogue; ordinary groups have `gscale = 1`
//! (no change in results). `ab` holds the same (flushed, scaled) values as bf16 bits for the
//! `vdpbf16ps` kernel.
//!
//! Not here: int8 activation quantization (W4A8), which lives with K1's foundation.

use std::cell::RefCell;

use super::acts::Bf16Rows;
use super::bf16::Bf16;
use super::weights::GROUP;

/// bf16 bits → f32, flushing denormals (and keeping the sign of zero).
#[inline]
pub fn bf16_to_f32_daz(b: u16) -> f32 {
    if b & 0x7F80 == 0 {
        f32::from_bits(((b & 0x8000) as u32) << 16)
    } else {
        f32::from_bits((b as u32) << 16)
    }
}

/// [`bf16_to_f32_daz`] without a branch, so that the conversion loop vectorizes.
#[inline]
fn flush_branchless(b: u16) -> f32 {
    let bits = (b as u32) << 16;
    let keep = if b & 0x7F80 == 0 {
        0x8000_0000
    } else {
        u32::MAX
    };
    f32::from_bits(bits & keep)
}

/// Largest |a| of a group, NaNs ignored (as `f32::max` does), in 8 independent lanes so
/// that the loop vectorizes on the x86-64 baseline (`maxps`; a `u32` or `f32::max` fold
/// stayed scalar and was the preparation's main cost, 1.8 ns per value).
fn group_amax(group: &[f32]) -> f32 {
    let abs = |v: f32| {
        let m = v.to_bits() & 0x7FFF_FFFF;
        f32::from_bits(if m > 0x7F80_0000 { 0 } else { m })
    };
    let mut lanes = [0.0f32; 8];
    let mut chunks = group.chunks_exact(8);
    for chunk in &mut chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            let a = abs(v);
            *lane = if a > *lane { a } else { *lane };
        }
    }
    for (lane, &v) in lanes.iter_mut().zip(chunks.remainder()) {
        let a = abs(v);
        *lane = if a > *lane { a } else { *lane };
    }
    lanes.into_iter().fold(0.0, f32::max)
}

/// Σ of a group in 8 interleaved f32 lanes, then pairwise: vectorizes where a single
/// running sum is a chain of dependent adds, and rounds no worse.
fn group_sum(group: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let mut chunks = group.chunks_exact(8);
    for chunk in &mut chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    for (lane, v) in lanes.iter_mut().zip(chunks.remainder()) {
        *lane += v;
    }
    let quad = [
        lanes[0] + lanes[4],
        lanes[1] + lanes[5],
        lanes[2] + lanes[6],
        lanes[3] + lanes[7],
    ];
    (quad[0] + quad[2]) + (quad[1] + quad[3])
}

/// Activations `[m][k]` as flushed f32, plus Σa per (row, 128-group) when `k` is a
/// multiple of 128 (empty otherwise).
#[derive(Debug, Clone, Default)]
pub struct ActF32 {
    /// Rows.
    pub m: usize,
    /// Columns (reduction length).
    pub k: usize,
    /// `[m][k]` f32 values, denormals flushed.
    pub a: Vec<f32>,
    /// `[m][k / 128]` sums of `a` over each group (f32, in 8 interleaved lanes).
    pub sums: Vec<f32>,
    /// `[m][k / 128]` power-of-two factor by which a group's `a` was divided (1 normally).
    pub gscale: Vec<f32>,
    /// `[m][k]` the values of `a` as bf16 bits (exact: flushing and power-of-two scaling
    /// keep bf16 values representable).
    pub ab: Vec<u16>,
    /// `ab` with each octet `k0..k0+8` stored as `a0 a2 a4 a6 a1 a3 a5 a7`: the activation
    /// pairs that match the code pairs a shift of the packed record yields (empty when
    /// K is not a multiple of 8).
    pub ab_oct: Vec<u16>,
}

/// Position in an octet of `ab_oct` of the value at octet offset `i`.
pub const OCT_ORDER: [usize; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

/// Groups whose largest |a| exceeds this are rescaled (see the module docs).
const HUGE: f32 = 18_446_744_073_709_551_616.0; // 2^64

impl ActF32 {
    /// Converts the rows of `x`; `rescale` enables the power-of-two rescaling of huge
    /// groups (for the W4A16 fold; the bf16 path, which has no fold, passes `false`).
    pub fn new(x: Bf16Rows<'_>, rescale: bool) -> ActF32 {
        let mut out = ActF32::default();
        out.refill(x, rescale);
        out
    }

    /// Refills this holder from `x` (no allocation once it has held as many values).
    pub fn refill(&mut self, x: Bf16Rows<'_>, rescale: bool) {
        self.m = x.m;
        self.k = x.k;
        self.a.clear();
        self.a
            .extend(x.data.iter().map(|&b: &Bf16| flush_branchless(b.0)));
        self.sums.clear();
        self.gscale.clear();
        if self.k.is_multiple_of(GROUP) && self.k > 0 {
            for group in self.a.chunks_exact_mut(GROUP) {
                let amax = group_amax(group);
                let mut scale = 1.0f32;
                if rescale && amax > HUGE {
                    // amax ≤ 3.4e38 < 2^128, so the exponent is 64..=127 and 2^-e is normal.
                    let e = (amax.to_bits() >> 23) as i32 - 127 - 64;
                    scale = f32::from_bits(((e + 127) as u32) << 23);
                    let inv = f32::from_bits(((127 - e) as u32) << 23);
                    for v in group.iter_mut() {
                        let scaled = *v * inv;
                        *v = if scaled.abs() < f32::MIN_POSITIVE {
                            0.0
                        } else {
                            scaled
                        };
                    }
                }
                self.gscale.push(scale);
                self.sums.push(group_sum(group));
            }
        }
        self.ab.clear();
        self.ab
            .extend(self.a.iter().map(|v| (v.to_bits() >> 16) as u16));
        self.ab_oct.clear();
        if self.k.is_multiple_of(8) {
            self.ab_oct.resize(self.ab.len(), 0);
            for (src, dst) in self.ab.chunks_exact(8).zip(self.ab_oct.chunks_exact_mut(8)) {
                // dst[OCT_ORDER[i]] = src[i], spelled out so that it compiles to shuffles.
                let s: &[u16; 8] = src.try_into().expect("chunks of 8");
                dst.copy_from_slice(&[s[0], s[2], s[4], s[6], s[1], s[3], s[5], s[7]]);
            }
        }
    }

    /// Number of 128-groups per row (0 when K is not a multiple of 128).
    pub fn groups(&self) -> usize {
        self.k / GROUP
    }
}

thread_local! {
    static CACHE: RefCell<ActF32> = RefCell::new(ActF32::default());
}

/// Runs `f` on the prepared form of `x`, reusing a per-thread holder so that a steady
/// decode loop does not allocate.
pub fn with_act<R>(x: Bf16Rows<'_>, rescale: bool, f: impl FnOnce(&ActF32) -> R) -> R {
    CACHE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut act) => {
            act.refill(x, rescale);
            f(&act)
        }
        Err(_) => f(&ActF32::new(x, rescale)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushes_denormals_keeps_normals() {
        assert_eq!(bf16_to_f32_daz(0x0001), 0.0);
        assert!(bf16_to_f32_daz(0x8001).is_sign_negative());
        assert_eq!(bf16_to_f32_daz(0x8001), 0.0);
        assert_eq!(bf16_to_f32_daz(0x3F80), 1.0);
        assert_eq!(bf16_to_f32_daz(0xC000), -2.0);
        assert_eq!(bf16_to_f32_daz(0x0080), f32::MIN_POSITIVE);
    }

    #[test]
    fn group_sums_per_row() {
        let k = 256;
        let a: Vec<Bf16> = (0..2 * k)
            .map(|i| Bf16(if i < k { 0x3F80 } else { 0x4000 }))
            .collect();
        let x = Bf16Rows::new(&a, 2, k).expect("shape matches");
        let act = ActF32::new(x, true);
        assert_eq!(act.sums, vec![128.0, 128.0, 256.0, 256.0]);
        assert_eq!(with_act(x, false, |a| a.sums.clone()), act.sums);
        assert_eq!(act.gscale, vec![1.0; 4]);
        assert_eq!(act.ab, a.iter().map(|b| b.0).collect::<Vec<_>>());
    }

    #[test]
    fn octet_order_pairs_the_codes_a_shift_yields() {
        let k = 128;
        let a: Vec<Bf16> = (0..k).map(|i| Bf16::from_f32(i as f32)).collect();
        let act = ActF32::new(Bf16Rows::new(&a, 1, k).expect("shape"), true);
        let first: Vec<f32> = act.ab_oct[8..16]
            .iter()
            .map(|&b| bf16_to_f32_daz(b))
            .collect();
        assert_eq!(first, [8.0, 10.0, 12.0, 14.0, 9.0, 11.0, 13.0, 15.0]);
    }

    #[test]
    fn branchless_flush_and_group_helpers_match_the_plain_forms() {
        for b in [
            0u16, 0x8000, 0x0001, 0x807F, 0x0080, 0x3F80, 0xC000, 0x7F7F, 0x7F80, 0x7FC1,
        ] {
            assert_eq!(
                flush_branchless(b).to_bits(),
                bf16_to_f32_daz(b).to_bits(),
                "bits {b:#06x}"
            );
        }
        let mut group: Vec<f32> = (0..128).map(|i| (i as f32 - 60.0) * 0.37).collect();
        assert_eq!(group_amax(&group), 67.0 * 0.37);
        group[5] = f32::NAN;
        group[9] = -1e30;
        assert_eq!(group_amax(&group), 1e30, "NaN ignored, sign dropped");
        let ints: Vec<f32> = (0..128).map(|i| i as f32).collect();
        assert_eq!(group_sum(&ints), 8128.0);
        assert_eq!(
            group_sum(&ints[..13]),
            78.0,
            "a remainder shorter than 8 lanes"
        );
    }

    #[test]
    fn huge_groups_are_rescaled_exactly() {
        let k = 256;
        let max = Bf16(0x7F7F); // largest finite bf16, ≈ 3.39e38
        let a: Vec<Bf16> = (0..k)
            .map(|i| if i < 128 { max } else { Bf16::ONE })
            .collect();
        let rows = Bf16Rows::new(&a, 1, k).expect("shape");
        assert_eq!(ActF32::new(rows, false).gscale, vec![1.0, 1.0]);
        let act = ActF32::new(rows, true);
        assert_eq!(act.gscale[1], 1.0);
        let g = act.gscale[0];
        assert!(g > 1.0 && g.log2().fract() == 0.0);
        assert_eq!(act.a[0] * g, max.to_f32());
        assert!(act.sums[0].is_finite() && act.sums[0] * g == 128.0 * max.to_f32());
        assert_eq!(act.ab[0], (act.a[0].to_bits() >> 16) as u16);
    }
}
