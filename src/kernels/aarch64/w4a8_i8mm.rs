//! W4A8 prefill with `smmla` (FEAT_I8MM, kernels.md §4.7).
//!
//! `smmla` multiplies a 2 × 8 s8 matrix by the transpose of another into 2 × 2 int32. The
//! activation operand is two rows × 8 consecutive k (one octet of each row: `zip1`/`zip2`
//! of two 16-byte row loads give octets o and o+1). The weight operand is two columns × 8
//! consecutive k: in a record quarter (4 columns × 4 k, byte `4c + t`) `lo = x & 15` holds
//! k0..k0+3 and `hi = x >> 4` k0+4..k0+7, so `zip1q_s32(lo, hi)` is columns 0, 1 × k0..k0+7
//! and `zip2q_s32(lo, hi)` columns 2, 3 (the `vzip` of kernels.md §1). Each accumulator
//! is `[r0c0, r0c1, r1c0, r1c1]`; `zip1q_s64`/`zip2q_s64` of the two accumulators of a
//! quarter give each row's 4 columns for the f32 epilogue.
//!
//! Rows go in pairs; an odd last row is paired with a zero row of the activation padding
//! (`QuantActs` pads rows to 16 with zeros) and its results are dropped. Blocking: 2 row
//! pairs × 16 columns or 1 pair × 32 columns, 16 accumulators.

use std::arch::aarch64::*;
use std::ops::Range;

use super::ops::{smmla, w4a8_epilogue4};
use crate::kernels::acts::QuantActs;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{CODES_BYTES, PANEL, PackedW4};
use crate::kernels::panel_split::w4a8_panels;
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;

/// `smmla` W4A8 prefill.
pub static W4A8_I8MM: Variant = Variant {
    name: "w4a8-neon-i8mm",
    isa: "i8mm",
    unit: Unit::NeonI8mm,
    phases: &[Phase::Prefill],
    requires: &[Feature::Neon, Feature::I8mm],
    rank: 30,
    kernel: KernelFn::W4A8(w4a8_i8mm),
};

/// # Safety
/// The CPU supports Advanced SIMD and the int8 matrix-multiply extension; shapes as in
/// `registry::W4A8Fn`.
unsafe fn w4a8_i8mm(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    let kern = |w: &PackedW4, a: &QuantActs, p, gr, rows, acc: &mut [f32]| {
        // SAFETY: only reached through w4a8_i8mm, whose caller guarantees the features.
        unsafe { panel(w, a, p, gr, rows, acc) }
    };
    w4a8_panels(pool, w, a, out, &kern);
}

/// One panel over `groups` for `rows` (see `panel_split::PanelKernel`).
#[target_feature(enable = "neon,i8mm")]
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
            if rows.end - r > 2 {
                for j0 in 0..4 {
                    record_pairs::<2, 1>(rec, a, g, r, rows.end, r0, j0, acc);
                }
                r += 4;
            } else {
                for j0 in [0, 2] {
                    record_pairs::<1, 2>(rec, a, g, r, rows.end, r0, j0, acc);
                }
                r += 2;
            }
        }
    }
}

/// Group `g` codes of row `r` (zeros past the activation padding).
#[inline]
fn row_codes(a: &QuantActs, r: usize, g: usize) -> &[i8] {
    static ZERO: [i8; GROUP] = [0; GROUP];
    if r < a.m_padded() {
        a.group(r, g)
    } else {
        &ZERO
    }
}

/// Row pairs `r..r+2·RP` (only rows below `end` are stored) × sub-blocks `j0..j0+JB` of one
/// record: `smmla` sums, then the per-group epilogue.
#[target_feature(enable = "neon,i8mm")]
#[inline]
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
fn record_pairs<const RP: usize, const JB: usize>(
    rec: &[u8],
    a: &QuantActs,
    g: usize,
    r: usize,
    end: usize,
    r0: usize,
    j0: usize,
    acc: &mut [f32],
) {
    assert!(rec.len() >= CODES_BYTES + 256 && j0 + JB <= 4);
    let mask = vdupq_n_u8(0x0F);
    // Per row pair, per (jj, quarter, column pair): [r0c0, r0c1, r1c0, r1c1].
    let mut d = [[vdupq_n_s32(0); 16]; RP]; // 8·JB ≤ 16 used
    let xs: [[&[i8]; 2]; RP] =
        core::array::from_fn(|i| [row_codes(a, r + 2 * i, g), row_codes(a, r + 2 * i + 1, g)]);
    for pair in 0..8 {
        let mut act = [[vdupq_n_s8(0); 2]; RP];
        for (i, x) in xs.iter().enumerate() {
            // SAFETY: 16·pair + 16 ≤ 128 = row length.
            let (ra, rb) = unsafe {
                (
                    vreinterpretq_s64_s8(vld1q_s8(x[0].as_ptr().add(16 * pair))),
                    vreinterpretq_s64_s8(vld1q_s8(x[1].as_ptr().add(16 * pair))),
                )
            };
            act[i] = [
                vreinterpretq_s8_s64(vzip1q_s64(ra, rb)),
                vreinterpretq_s8_s64(vzip2q_s64(ra, rb)),
            ];
        }
        for half in 0..2 {
            let o = 2 * pair + half;
            for jj in 0..JB {
                // SAFETY: o·256 + (j0 + jj)·64 + 64 ≤ 4096 ≤ rec.len() (asserted above).
                let v = unsafe { vld1q_u8_x4(rec.as_ptr().add(o * 256 + (j0 + jj) * 64)) };
                for (q, vq) in [v.0, v.1, v.2, v.3].into_iter().enumerate() {
                    let lo = vreinterpretq_s32_u8(vandq_u8(vq, mask));
                    let hi = vreinterpretq_s32_u8(vshrq_n_u8::<4>(vq));
                    let b01 = vreinterpretq_s8_s32(vzip1q_s32(lo, hi));
                    let b23 = vreinterpretq_s8_s32(vzip2q_s32(lo, hi));
                    for i in 0..RP {
                        let k = 8 * jj + 2 * q;
                        d[i][k] = smmla(d[i][k], act[i][half], b01);
                        d[i][k + 1] = smmla(d[i][k + 1], act[i][half], b23);
                    }
                }
            }
        }
    }
    for i in 0..RP {
        for (sub, row) in [r + 2 * i, r + 2 * i + 1].into_iter().enumerate() {
            if row >= end {
                continue;
            }
            let (big_a, sa) = (a.sum(row, g) as f32, a.scale(row, g));
            let dst = &mut acc[(row - r0) * PANEL..][..PANEL];
            for jj in 0..JB {
                for q in 0..4 {
                    let k = 8 * jj + 2 * q;
                    let (c01, c23) = (
                        vreinterpretq_s64_s32(d[i][k]),
                        vreinterpretq_s64_s32(d[i][k + 1]),
                    );
                    let both = if sub == 0 {
                        vzip1q_s64(c01, c23)
                    } else {
                        vzip2q_s64(c01, c23)
                    };
                    let col = 16 * (j0 + jj) + 4 * q;
                    w4a8_epilogue4(
                        vreinterpretq_s32_s64(both),
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
}
