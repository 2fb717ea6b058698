//! bf16 baseline with the bf16 extension (FEAT_BF16): `bfdot` for decode, `bfmmla` for
//! prefill, straight from the packed rows (no repack).
//!
//! A packed row holds, per column, the pair (k even, k odd): 8 bf16 `[c0e, c0o, ..., c3o]`
//! are exactly a `bfdot` operand for 4 columns, and the by-element form takes the matching
//! activation pair from a register holding 4 consecutive pairs, so one activation load
//! serves 4 rows of weights. For `bfmmla`, two consecutive rows zipped as 32-bit elements
//! give `[c0 k0..3, c1 k0..3]` and `[c2 k0..3, c3 k0..3]` (2 columns × 4 k), against 2
//! activation rows × the same 4 k. Blocking: 16 columns × ≤ 4 rows (2 row pairs), over
//! chunks of 32 k-pairs (8 KB of weights, read from memory once per call).

use std::arch::aarch64::*;
use std::ops::Range;

use super::bf16_neon::{PAIR_CHUNK, ROW_BYTES, in_bounds, run_bf16};
use super::ops::{bfdot_lane, bfmmla};
use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16_act::ActF32;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::PackedBf16;
use crate::kernels::panel_split::{PANEL, Tile};
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};

/// `bfdot` bf16 (decode; prefill fallback).
pub static GEMV_BFDOT: Variant = Variant {
    name: "bf16-gemv-neon-bfdot",
    isa: "bf16",
    unit: Unit::NeonBfdot,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Neon, Feature::Bf16],
    rank: 20,
    kernel: KernelFn::Bf16(gemv_bfdot),
};

/// `bfmmla` bf16 prefill.
pub static GEMM_BFMMLA: Variant = Variant {
    name: "bf16-gemm-neon-bfmmla",
    isa: "bf16",
    unit: Unit::NeonBfmmla,
    phases: &[Phase::Prefill],
    requires: &[Feature::Neon, Feature::Bf16],
    rank: 30,
    kernel: KernelFn::Bf16(gemm_bfmmla),
};

/// # Safety
/// The CPU supports Advanced SIMD and FEAT_BF16; shapes as in `registry::Bf16Fn`.
unsafe fn gemv_bfdot(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
    run_bf16(pool, w, x, out, &|panel, pairs, act, r0, mr, tile| {
        // SAFETY: only reached through gemv_bfdot, whose caller guarantees the features.
        unsafe { block_bfdot(panel, pairs, act, r0, mr, tile) }
    });
}

/// # Safety
/// The CPU supports Advanced SIMD and FEAT_BF16; shapes as in `registry::Bf16Fn`.
unsafe fn gemm_bfmmla(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
    run_bf16(pool, w, x, out, &|panel, pairs, act, r0, mr, tile| {
        // SAFETY: only reached through gemm_bfmmla, whose caller guarantees the features.
        unsafe { block_bfmmla(panel, pairs, act, r0, mr, tile) }
    });
}

#[target_feature(enable = "neon,bf16")]
fn block_bfdot(
    panel: &[u8],
    pairs: Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &pairs, act, r0, mr) {
        return false;
    }
    match mr {
        1 => micro_bfdot::<1>(panel, pairs, act, r0, tile),
        2 => micro_bfdot::<2>(panel, pairs, act, r0, tile),
        3 => micro_bfdot::<3>(panel, pairs, act, r0, tile),
        _ => micro_bfdot::<4>(panel, pairs, act, r0, tile),
    }
    true
}

#[target_feature(enable = "neon,bf16")]
fn block_bfmmla(
    panel: &[u8],
    pairs: Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &pairs, act, r0, mr) {
        return false;
    }
    match mr {
        1 => micro_bfmmla::<1, 1>(panel, pairs, act, r0, tile),
        2 => micro_bfmmla::<2, 1>(panel, pairs, act, r0, tile),
        3 => micro_bfmmla::<3, 2>(panel, pairs, act, r0, tile),
        _ => micro_bfmmla::<4, 2>(panel, pairs, act, r0, tile),
    }
    true
}

/// 16 columns (4 × 8 bf16) of packed row `pr`, starting at column `16·cb`.
#[target_feature(enable = "neon")]
#[inline]
fn row16(panel: &[u8], pr: usize, cb: usize) -> [uint16x8_t; 4] {
    let bytes = &panel[pr * ROW_BYTES + cb * 64..][..64];
    // SAFETY: bytes holds exactly 64 bytes (4 × 16); vld1 has no alignment requirement.
    let w = unsafe { vld1q_u16_x4(bytes.as_ptr().cast()) };
    [w.0, w.1, w.2, w.3]
}

/// Activation pair `pr` of a row (bf16 bits) in both halves of every 32-bit lane.
#[target_feature(enable = "neon")]
#[inline]
fn pair_dup(row: &[u16], pr: usize) -> uint16x8_t {
    let bits = row[2 * pr] as u32 | (row[2 * pr + 1] as u32) << 16;
    vreinterpretq_u16_u32(vdupq_n_u32(bits))
}

#[target_feature(enable = "neon,bf16")]
#[inline]
#[allow(clippy::needless_range_loop)] // indices mirror the register blocking
fn micro_bfdot<const MR: usize>(
    panel: &[u8],
    pairs: Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let k = act.k;
    let rows: [&[u16]; MR] = core::array::from_fn(|m| &act.ab[(r0 + m) * k..][..k]);
    // Per row, 16-column block and 4-column quad: 4 columns, one per lane.
    let mut acc = [[[vdupq_n_f32(0.0); 4]; 4]; MR];
    let mut c0 = pairs.start;
    while c0 < pairs.end {
        let c1 = (c0 + PAIR_CHUNK).min(pairs.end);
        for cb in 0..4 {
            let mut s: [[float32x4_t; 4]; MR] = core::array::from_fn(|m| acc[m][cb]);
            let mut pr = c0;
            while pr + 4 <= c1 {
                let av: [uint16x8_t; MR] = rows.map(|x| {
                    let q = &x[2 * pr..2 * pr + 8];
                    // SAFETY: q holds exactly 8 u16.
                    unsafe { vld1q_u16(q.as_ptr()) }
                });
                let w = [
                    row16(panel, pr, cb),
                    row16(panel, pr + 1, cb),
                    row16(panel, pr + 2, cb),
                    row16(panel, pr + 3, cb),
                ];
                for m in 0..MR {
                    for q in 0..4 {
                        let mut v = s[m][q];
                        v = bfdot_lane::<0>(v, w[0][q], av[m]);
                        v = bfdot_lane::<1>(v, w[1][q], av[m]);
                        v = bfdot_lane::<2>(v, w[2][q], av[m]);
                        v = bfdot_lane::<3>(v, w[3][q], av[m]);
                        s[m][q] = v;
                    }
                }
                pr += 4;
            }
            while pr < c1 {
                let w = row16(panel, pr, cb);
                for m in 0..MR {
                    let av = pair_dup(rows[m], pr);
                    for q in 0..4 {
                        s[m][q] = bfdot_lane::<0>(s[m][q], w[q], av);
                    }
                }
                pr += 1;
            }
            for m in 0..MR {
                acc[m][cb] = s[m];
            }
        }
        c0 = c1;
    }
    for m in 0..MR {
        for cb in 0..4 {
            let dst = &mut tile[m * PANEL + cb * 16..][..16];
            for (q, &v) in acc[m][cb].iter().enumerate() {
                // SAFETY: dst holds 16 f32; 4q + 4 ≤ 16.
                unsafe { vst1q_f32(dst.as_mut_ptr().add(4 * q), v) };
            }
        }
    }
}

/// Activations k = 2·pr .. 2·pr + 4 of a row (bf16 bits); with `tail`, only the first pair
/// (the rest zero); zeros for an absent row.
#[target_feature(enable = "neon")]
#[inline]
fn act4(row: Option<&[u16]>, pr: usize, tail: bool) -> uint16x4_t {
    let Some(row) = row else {
        return vdup_n_u16(0);
    };
    if tail {
        let bits = row[2 * pr] as u64 | (row[2 * pr + 1] as u64) << 16;
        vcreate_u16(bits)
    } else {
        let q = &row[2 * pr..2 * pr + 4];
        // SAFETY: q holds exactly 4 u16.
        unsafe { vld1_u16(q.as_ptr()) }
    }
}

/// MR rows in RP = ⌈MR/2⌉ row pairs; an odd last row is paired with zeros.
#[target_feature(enable = "neon,bf16")]
#[inline]
#[allow(clippy::needless_range_loop)] // indices mirror the register blocking
fn micro_bfmmla<const MR: usize, const RP: usize>(
    panel: &[u8],
    pairs: Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let k = act.k;
    let row = |m: usize| (m < MR).then(|| &act.ab[(r0 + m) * k..][..k]);
    let rows: [[Option<&[u16]>; 2]; RP] = core::array::from_fn(|i| [row(2 * i), row(2 * i + 1)]);
    // Per row pair, 16-column block and quad: columns (0, 1) and (2, 3) as 2 × 2 blocks.
    let mut acc = [[[[vdupq_n_f32(0.0); 2]; 4]; 4]; RP];
    let mut c0 = pairs.start;
    while c0 < pairs.end {
        // Chunks are even-sized, so only the last pair of the range can be a lone tail.
        let c1 = (c0 + PAIR_CHUNK).min(pairs.end);
        for cb in 0..4 {
            let mut s: [[[float32x4_t; 2]; 4]; RP] = core::array::from_fn(|i| acc[i][cb]);
            let mut pr = c0;
            while pr < c1 {
                let tail = pr + 1 == c1;
                let w0 = row16(panel, pr, cb);
                let w1 = if tail {
                    [vdupq_n_u16(0); 4]
                } else {
                    row16(panel, pr + 1, cb)
                };
                // A plain loop, not `map`: the closure would not be inlined here.
                let mut a = [vdupq_n_u16(0); RP];
                for (i, &[x, y]) in rows.iter().enumerate() {
                    a[i] = vcombine_u16(act4(x, pr, tail), act4(y, pr, tail));
                }
                for q in 0..4 {
                    let (e, o) = (vreinterpretq_u32_u16(w0[q]), vreinterpretq_u32_u16(w1[q]));
                    let b01 = vreinterpretq_u16_u32(vzip1q_u32(e, o));
                    let b23 = vreinterpretq_u16_u32(vzip2q_u32(e, o));
                    for i in 0..RP {
                        s[i][q] = [bfmmla(s[i][q][0], a[i], b01), bfmmla(s[i][q][1], a[i], b23)];
                    }
                }
                pr += 2;
            }
            for i in 0..RP {
                acc[i][cb] = s[i];
            }
        }
        c0 = c1;
    }
    for m in 0..MR {
        for cb in 0..4 {
            let dst = &mut tile[m * PANEL + cb * 16..][..16];
            for q in 0..4 {
                let [c01, c23] = acc[m / 2][cb][q];
                let (c01, c23) = (vreinterpretq_f64_f32(c01), vreinterpretq_f64_f32(c23));
                let v = vreinterpretq_f32_f64(if m % 2 == 0 {
                    vzip1q_f64(c01, c23)
                } else {
                    vzip2q_f64(c01, c23)
                });
                // SAFETY: dst holds 16 f32; 4q + 4 ≤ 16.
                unsafe { vst1q_f32(dst.as_mut_ptr().add(4 * q), v) };
            }
        }
    }
}
