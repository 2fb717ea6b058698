//! W4A8 with `sdot` (FEAT_DotProd, kernels.md §4.7): decode GEMV and, on CPUs without i8mm,
//! prefill.
//!
//! A 16-byte quarter of a record chunk is 4 columns × 4 k, exactly an `sdot` operand: the
//! by-element form multiplies it by one activation quad, so 16 activation bytes (two octets:
//! quads k0..3, k0+4..7, k0+8..11, k0+12..15) serve four `sdot` per quarter without any
//! broadcast. Codes 0..15 are valid s8 (no XOR trick). Per row and 4 columns one int32
//! accumulator holds D exactly; the zero point is folded per group in f32 (kernels.md §2).
//!
//! Register blocking: R rows × JB sub-blocks of 16 columns with R·JB·4 = 16 accumulators
//! (4 × 1, 2 × 2, 1 × 4), the record staying in L1 across the passes.

use std::arch::aarch64::*;
use std::ops::Range;

use super::ops::{sdot_lane, w4a8_epilogue4};
use crate::kernels::acts::QuantActs;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{CODES_BYTES, PANEL, PackedW4};
use crate::kernels::panel_split::w4a8_panels;
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;

/// `sdot` W4A8 (decode; prefill where i8mm is absent).
pub static W4A8_DOTPROD: Variant = Variant {
    name: "w4a8-neon-dotprod",
    isa: "dotprod",
    unit: Unit::NeonDotprod,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Neon, Feature::Dotprod],
    rank: 20,
    kernel: KernelFn::W4A8(w4a8_dotprod),
};

/// # Safety
/// The CPU supports Advanced SIMD and the dot-product extension; shapes as in
/// `registry::W4A8Fn`.
unsafe fn w4a8_dotprod(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    let kern = |w: &PackedW4, a: &QuantActs, p, gr, rows, acc: &mut [f32]| {
        // SAFETY: only reached through w4a8_dotprod, whose caller guarantees the features.
        unsafe { panel(w, a, p, gr, rows, acc) }
    };
    w4a8_panels(pool, w, a, out, &kern);
}

/// One panel over `groups` for `rows` (see `panel_split::PanelKernel`).
#[target_feature(enable = "neon,dotprod")]
fn panel(
    w: &PackedW4,
    a: &QuantActs,
    p: usize,
    groups: Range<usize>,
    rows: Range<usize>,
    acc: &mut [f32],
) {
    let r0 = rows.start;
    acc[..rows.len() * PANEL].fill(0.0);
    for g in groups {
        let rec = w.record(p, g);
        let mut r = r0;
        while r < rows.end {
            match rows.end - r {
                1 => {
                    record_rows::<1, 4>(rec, a, g, [r], r0, 0, acc);
                    r += 1;
                }
                2 | 3 => {
                    for j0 in [0, 2] {
                        record_rows::<2, 2>(rec, a, g, [r, r + 1], r0, j0, acc);
                    }
                    r += 2;
                }
                _ => {
                    for j0 in 0..4 {
                        record_rows::<4, 1>(rec, a, g, [r, r + 1, r + 2, r + 3], r0, j0, acc);
                    }
                    r += 4;
                }
            }
        }
    }
}

/// R rows × sub-blocks `j0..j0+JB` (16 columns each) of one record: `sdot` sums, then the
/// per-group epilogue into `acc[(row − r0)·64 + col]`.
#[target_feature(enable = "neon,dotprod")]
#[inline]
#[allow(clippy::needless_range_loop)] // indices mirror the register blocking
fn record_rows<const R: usize, const JB: usize>(
    rec: &[u8],
    a: &QuantActs,
    g: usize,
    rows: [usize; R],
    r0: usize,
    j0: usize,
    acc: &mut [f32],
) {
    assert!(rec.len() >= CODES_BYTES + 256 && j0 + JB <= 4);
    let mask = vdupq_n_u8(0x0F);
    let xs: [&[i8; GROUP]; R] = rows.map(|r| a.group(r, g));
    let mut d = [[vdupq_n_s32(0); 16]; R];
    for pair in 0..8 {
        // Activation bytes k = 16·pair .. 16·pair + 16 of the group: quads (lo, hi) of
        // octet 2·pair in lanes 0, 1 and of octet 2·pair + 1 in lanes 2, 3.
        // SAFETY: 16·pair + 16 ≤ 128 = x.len().
        let act: [int8x16_t; R] = xs.map(|x| unsafe { vld1q_s8(x.as_ptr().add(16 * pair)) });
        for half in 0..2 {
            let o = 2 * pair + half;
            for jj in 0..JB {
                // SAFETY: o·256 + (j0 + jj)·64 + 64 ≤ 4096 ≤ rec.len() (asserted above).
                let v = unsafe { vld1q_u8_x4(rec.as_ptr().add(o * 256 + (j0 + jj) * 64)) };
                for (q, vq) in [v.0, v.1, v.2, v.3].into_iter().enumerate() {
                    let lo = vreinterpretq_s8_u8(vandq_u8(vq, mask));
                    let hi = vreinterpretq_s8_u8(vshrq_n_u8::<4>(vq));
                    for r in 0..R {
                        let s = &mut d[r][4 * jj + q];
                        *s = if half == 0 {
                            sdot_lane::<1>(sdot_lane::<0>(*s, lo, act[r]), hi, act[r])
                        } else {
                            sdot_lane::<3>(sdot_lane::<2>(*s, lo, act[r]), hi, act[r])
                        };
                    }
                }
            }
        }
    }
    for r in 0..R {
        let (big_a, sa) = (a.sum(rows[r], g) as f32, a.scale(rows[r], g));
        let dst = &mut acc[(rows[r] - r0) * PANEL..][..PANEL];
        for jj in 0..JB {
            for q in 0..4 {
                let col = 16 * (j0 + jj) + 4 * q;
                w4a8_epilogue4(
                    d[r][4 * jj + q],
                    rec,
                    col,
                    big_a,
                    sa,
                    &mut dst[col..col + 4],
                );
            }
        }
    }
}
