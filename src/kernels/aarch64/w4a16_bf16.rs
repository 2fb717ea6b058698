//! W4A16 with the bf16 extension (FEAT_BF16): `bfdot` for decode, `bfmmla` for prefill.
//!
//! Codes 0..15 are exact in bf16, so dequantization is a table lookup: two `tbl` (low and
//! high byte of bf16(c)) and a `zip` turn a 16-byte record quarter (4 columns × 4 k, byte
//! `4c + t`) into `[c0 k0..3, c1 k0..3]` and `[c2 k0..3, c3 k0..3]` for the low nibbles
//! (k0..k0+3) and the same for the high nibbles (k0+4..k0+7). The activations are the
//! flushed (and, for huge groups, power-of-two scaled) bf16 values of `bf16_act`, so the
//! zero fold `y += s·(Σ q·a − z·Σa)` is the same as the f32 path's.
//!
//! - `bfdot` (vector form) with the activation quad repeated, `[a0..a3, a0..a3]`: lane i
//!   gets one column's k pair, and a final `faddp` of the two accumulators of a quarter
//!   gives its 4 columns. 2 quarters × ≤ 4 rows × 2 accumulators per pass.
//! - `bfmmla`: the zipped weights are already the 2 columns × 4 k operand; the activation
//!   operand is 2 rows × the same 4 k. `[r0c0, r0c1, r1c0, r1c1]` accumulators are split
//!   per row with `zip1`/`zip2` (64-bit) at the group's end. An odd last row is paired
//!   with zeros.
//!
//! `bfdot`/`bfmmla` round differently from f32 FMA (Arm: products and sums without
//! intermediate IEEE rounding steps, denormals flushed), well within the path's tolerance.

use std::arch::aarch64::*;
use std::ops::Range;

use super::ops::{CODE_BF16_HI, CODE_BF16_LO, bfdot, bfmmla, codes_to_bf16};
use super::w4a16_neon::{fold, in_bounds, run_w4a16};
use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16_act::ActF32;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{PackedW4, RECORD_BYTES};
use crate::kernels::panel_split::{PANEL, Tile};
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;

/// `bfdot` W4A16 (decode; prefill fallback).
pub static GEMV_BFDOT: Variant = Variant {
    name: "w4a16-gemv-neon-bfdot",
    isa: "bf16",
    unit: Unit::NeonBfdot,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Neon, Feature::Bf16],
    rank: 20,
    kernel: KernelFn::W4A16(gemv_bfdot),
};

/// `bfmmla` W4A16 prefill.
pub static GEMM_BFMMLA: Variant = Variant {
    name: "w4a16-gemm-neon-bfmmla",
    isa: "bf16",
    unit: Unit::NeonBfmmla,
    phases: &[Phase::Prefill],
    requires: &[Feature::Neon, Feature::Bf16],
    rank: 30,
    kernel: KernelFn::W4A16(gemm_bfmmla),
};

/// # Safety
/// The CPU supports Advanced SIMD and FEAT_BF16; shapes as in `registry::W4A16Fn`.
unsafe fn gemv_bfdot(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    run_w4a16(pool, w, x, out, &|panel, groups, act, r0, mr, tile| {
        // SAFETY: only reached through gemv_bfdot, whose caller guarantees the features.
        unsafe { block_bfdot(panel, groups, act, r0, mr, tile) }
    });
}

/// # Safety
/// The CPU supports Advanced SIMD and FEAT_BF16; shapes as in `registry::W4A16Fn`.
unsafe fn gemm_bfmmla(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    run_w4a16(pool, w, x, out, &|panel, groups, act, r0, mr, tile| {
        // SAFETY: only reached through gemm_bfmmla, whose caller guarantees the features.
        unsafe { block_bfmmla(panel, groups, act, r0, mr, tile) }
    });
}

#[target_feature(enable = "neon,bf16")]
fn block_bfdot(
    panel: &[u8],
    groups: Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &groups, act, r0, mr) {
        return false;
    }
    match mr {
        1 => micro_bfdot::<1>(panel, groups, act, r0, tile),
        2 => micro_bfdot::<2>(panel, groups, act, r0, tile),
        3 => micro_bfdot::<3>(panel, groups, act, r0, tile),
        _ => micro_bfdot::<4>(panel, groups, act, r0, tile),
    }
    true
}

#[target_feature(enable = "neon,bf16")]
fn block_bfmmla(
    panel: &[u8],
    groups: Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &groups, act, r0, mr) {
        return false;
    }
    match mr {
        1 => micro_bfmmla::<1, 1>(panel, groups, act, r0, tile),
        2 => micro_bfmmla::<2, 1>(panel, groups, act, r0, tile),
        3 => micro_bfmmla::<3, 2>(panel, groups, act, r0, tile),
        _ => micro_bfmmla::<4, 2>(panel, groups, act, r0, tile),
    }
    true
}

/// The two code → bf16 tables as registers.
#[target_feature(enable = "neon")]
#[inline]
fn luts() -> (uint8x16_t, uint8x16_t) {
    // SAFETY: each table holds 16 bytes.
    unsafe {
        (
            vld1q_u8(CODE_BF16_LO.as_ptr()),
            vld1q_u8(CODE_BF16_HI.as_ptr()),
        )
    }
}

/// Four bf16 activations at `row[i..i+4]` (bits).
#[target_feature(enable = "neon")]
#[inline]
fn quad4(row: &[u16], i: usize) -> uint16x4_t {
    let q = &row[i..i + 4];
    // SAFETY: q holds exactly 4 u16.
    unsafe { vld1_u16(q.as_ptr()) }
}

#[target_feature(enable = "neon,bf16")]
#[inline]
#[allow(clippy::needless_range_loop)] // indices mirror the register blocking
fn micro_bfdot<const MR: usize>(
    panel: &[u8],
    groups: Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let (k, ng) = (act.k, act.groups());
    let mask = vdupq_n_u8(0x0F);
    let (lut_lo, lut_hi) = luts();
    tile[..MR * PANEL].fill(0.0);
    for g in groups.clone() {
        let rec = &panel[g * RECORD_BYTES..][..RECORD_BYTES];
        let rows: [&[u16]; MR] =
            core::array::from_fn(|m| &act.ab[(r0 + m) * k + g * GROUP..][..GROUP]);
        for j in 0..4 {
            for qp in 0..2 {
                // Per row and quarter: columns (0, 1) and (2, 3), two lanes per column.
                let mut acc = [[[vdupq_n_f32(0.0); 2]; 2]; MR];
                for o in 0..16 {
                    let al: [uint16x8_t; MR] = rows.map(|x| {
                        let q = quad4(x, 8 * o);
                        vcombine_u16(q, q)
                    });
                    let ah: [uint16x8_t; MR] = rows.map(|x| {
                        let q = quad4(x, 8 * o + 4);
                        vcombine_u16(q, q)
                    });
                    for qi in 0..2 {
                        let off = o * 256 + j * 64 + qp * 32 + qi * 16;
                        // SAFETY: off + 16 ≤ 4096 ≤ rec.len().
                        let v = unsafe { vld1q_u8(rec.as_ptr().add(off)) };
                        let (wl01, wl23) = codes_to_bf16(vandq_u8(v, mask), lut_lo, lut_hi);
                        let (wh01, wh23) = codes_to_bf16(vshrq_n_u8::<4>(v), lut_lo, lut_hi);
                        for m in 0..MR {
                            let [c01, c23] = acc[m][qi];
                            acc[m][qi] = [
                                bfdot(bfdot(c01, wl01, al[m]), wh01, ah[m]),
                                bfdot(bfdot(c23, wl23, al[m]), wh23, ah[m]),
                            ];
                        }
                    }
                }
                let d: [[float32x4_t; 2]; MR] = core::array::from_fn(|m| {
                    core::array::from_fn(|qi| vpaddq_f32(acc[m][qi][0], acc[m][qi][1]))
                });
                fold(rec, 16 * j + 8 * qp, act, r0, g, ng, &d, tile);
            }
        }
    }
}

/// MR rows in RP = ⌈MR/2⌉ row pairs.
#[target_feature(enable = "neon,bf16")]
#[inline]
#[allow(clippy::needless_range_loop)] // indices mirror the register blocking
fn micro_bfmmla<const MR: usize, const RP: usize>(
    panel: &[u8],
    groups: Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let (k, ng) = (act.k, act.groups());
    let mask = vdupq_n_u8(0x0F);
    let (lut_lo, lut_hi) = luts();
    let zeros = [0u16; GROUP];
    tile[..MR * PANEL].fill(0.0);
    for g in groups.clone() {
        let rec = &panel[g * RECORD_BYTES..][..RECORD_BYTES];
        let row = |m: usize| -> &[u16] {
            if m < MR {
                &act.ab[(r0 + m) * k + g * GROUP..][..GROUP]
            } else {
                &zeros
            }
        };
        let rows: [[&[u16]; 2]; RP] = core::array::from_fn(|i| [row(2 * i), row(2 * i + 1)]);
        for j in 0..4 {
            for qp in 0..2 {
                // Per row pair and quarter: columns (0, 1) and (2, 3) as 2 × 2 blocks.
                let mut acc = [[[vdupq_n_f32(0.0); 2]; 2]; RP];
                for o in 0..16 {
                    // Plain loops, not `map`: a closure here is not inlined into this
                    // `#[target_feature]` function and would cost a call per octet.
                    let (mut al, mut ah) = ([vdupq_n_u16(0); RP], [vdupq_n_u16(0); RP]);
                    for (i, [x, y]) in rows.iter().enumerate() {
                        al[i] = vcombine_u16(quad4(x, 8 * o), quad4(y, 8 * o));
                        ah[i] = vcombine_u16(quad4(x, 8 * o + 4), quad4(y, 8 * o + 4));
                    }
                    for qi in 0..2 {
                        let off = o * 256 + j * 64 + qp * 32 + qi * 16;
                        // SAFETY: off + 16 ≤ 4096 ≤ rec.len().
                        let v = unsafe { vld1q_u8(rec.as_ptr().add(off)) };
                        let (wl01, wl23) = codes_to_bf16(vandq_u8(v, mask), lut_lo, lut_hi);
                        let (wh01, wh23) = codes_to_bf16(vshrq_n_u8::<4>(v), lut_lo, lut_hi);
                        for i in 0..RP {
                            let [c01, c23] = acc[i][qi];
                            acc[i][qi] = [
                                bfmmla(bfmmla(c01, al[i], wl01), ah[i], wh01),
                                bfmmla(bfmmla(c23, al[i], wl23), ah[i], wh23),
                            ];
                        }
                    }
                }
                let d: [[float32x4_t; 2]; MR] = core::array::from_fn(|m| {
                    core::array::from_fn(|qi| {
                        let [c01, c23] = acc[m / 2][qi];
                        let (c01, c23) = (vreinterpretq_f64_f32(c01), vreinterpretq_f64_f32(c23));
                        vreinterpretq_f32_f64(if m % 2 == 0 {
                            vzip1q_f64(c01, c23)
                        } else {
                            vzip2q_f64(c01, c23)
                        })
                    })
                });
                fold(rec, 16 * j + 8 * qp, act, r0, g, ng, &d, tile);
            }
        }
    }
}
