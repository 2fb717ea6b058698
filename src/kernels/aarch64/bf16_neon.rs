//! bf16-baseline GEMV / small-M GEMM with f32 `fmla` on plain NEON (every arm64 CPU).
//!
//! The packed bf16 panel is K/2 rows of 64 columns × (k even, k odd) (`PackedBf16`). Eight
//! bf16 of a row, `[c0e, c0o, c1e, c1o, ...]`, widen to f32 with `shll #16` in two halves of
//! 2 columns × 2 k, and `fmla` with the activation pair repeated, `[a_e, a_o, a_e, a_o]`;
//! one `faddp` per 4 columns at the end merges the even and odd lanes. Blocking: ≤ 4 rows ×
//! 8 columns, 16 accumulators, over chunks of 32 k-pairs (8 KB of weights, read from memory
//! once per call). Activations are the flushed f32 of `bf16_act`.
//!
//! Also holds the bf16 driver the bf16-extension kernels share ([`run_bf16`]).

use std::arch::aarch64::*;
use std::ops::Range;

use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16_act::{ActF32, with_act};
use crate::kernels::cpu::Feature;
use crate::kernels::pack::PackedBf16;
use crate::kernels::panel_split::{MR_MAX, PANEL, Tile, run_panels};
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};

/// f32 `fmla` bf16 (decode; prefill without the bf16 extension).
pub static GEMV_NEON: Variant = Variant {
    name: "bf16-gemv-neon",
    isa: "neon",
    unit: Unit::NeonFma,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Neon],
    rank: 10,
    kernel: KernelFn::Bf16(gemv_neon),
};

/// Bytes of one packed row (64 columns × 2 bf16).
pub(super) const ROW_BYTES: usize = PANEL * 4;
/// k-pairs per chunk: 32 packed rows (8 KB of weights) stay in L1 while every column block
/// of the panel passes over them, so each weight byte comes from memory once per call.
pub(super) const PAIR_CHUNK: usize = 32;
/// Smallest K split (in k-pairs) worth a separate task.
const MIN_SPLIT_PAIRS: usize = 128;

/// A bf16 block: `(panel bytes, k-pairs, act, r0, mr, tile)`, false if the operands do not
/// cover the request (then nothing was computed).
pub(super) type Bf16Block<'a> =
    &'a (dyn Fn(&[u8], Range<usize>, &ActF32, usize, usize, &mut Tile) -> bool + Sync);

/// The packed bytes of panel `p` (K/2 rows of 256 B).
fn panel_bytes(w: &PackedBf16, p: usize) -> &[u8] {
    let all = w.as_slice();
    let len = PANEL * w.k();
    let panel = &all[(p * len).min(all.len())..((p + 1) * len).min(all.len())];
    // SAFETY: Bf16 is a transparent u16; the byte view covers exactly the same memory.
    unsafe { core::slice::from_raw_parts(panel.as_ptr().cast(), panel.len() * 2) }
}

/// The bf16 panel driver of the aarch64 kernels: activations prepared once (flushed f32 and
/// bf16 bits), panels split over the pool (split-K over k-pairs when panels are scarce),
/// `block` per (panel, ≤ 4 rows).
pub(super) fn run_bf16(
    pool: &ThreadPool,
    w: &PackedBf16,
    x: Bf16Rows<'_>,
    out: &mut [f32],
    block: Bf16Block<'_>,
) {
    if x.k != w.k() {
        return;
    }
    with_act(x, false, |act| {
        run_panels(
            pool,
            x.m,
            w.n(),
            w.panels(),
            w.k() / 2,
            MIN_SPLIT_PAIRS,
            out,
            |p, pairs, r0, mr, tile| {
                let done = block(panel_bytes(w, p), pairs, act, r0, mr, tile);
                debug_assert!(done, "bf16 block refused its operands");
            },
        );
    });
}

/// The slice bounds the bf16 blocks rely on.
pub(super) fn in_bounds(
    panel: &[u8],
    pairs: &Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
) -> bool {
    (1..=MR_MAX).contains(&mr)
        && pairs.end <= act.k / 2
        && panel.len() >= pairs.end * ROW_BYTES
        && r0 + mr <= act.m
        && act.a.len() == act.m * act.k
        && act.ab.len() == act.a.len()
}

/// # Safety
/// The CPU supports Advanced SIMD; shapes as in `registry::Bf16Fn`.
unsafe fn gemv_neon(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
    run_bf16(pool, w, x, out, &|panel, pairs, act, r0, mr, tile| {
        // SAFETY: only reached through gemv_neon, whose caller guarantees NEON.
        unsafe { block(panel, pairs, act, r0, mr, tile) }
    });
}

#[target_feature(enable = "neon")]
fn block(
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
        1 => micro::<1>(panel, pairs, act, r0, tile),
        2 => micro::<2>(panel, pairs, act, r0, tile),
        3 => micro::<3>(panel, pairs, act, r0, tile),
        _ => micro::<4>(panel, pairs, act, r0, tile),
    }
    true
}

#[target_feature(enable = "neon")]
#[inline]
#[allow(clippy::needless_range_loop)] // indices mirror the register blocking
fn micro<const MR: usize>(
    panel: &[u8],
    pairs: Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let k = act.k;
    let rows: [&[f32]; MR] = core::array::from_fn(|m| &act.a[(r0 + m) * k..][..k]);
    // Per row and 8-column block: columns (0,1), (2,3), (4,5), (6,7), (even, odd) lanes each.
    let mut acc = [[[vdupq_n_f32(0.0); 4]; 8]; MR];
    let mut c0 = pairs.start;
    while c0 < pairs.end {
        let c1 = (c0 + PAIR_CHUNK).min(pairs.end);
        for cb in 0..8 {
            let mut s: [[float32x4_t; 4]; MR] = core::array::from_fn(|m| acc[m][cb]);
            for pr in c0..c1 {
                // SAFETY: pr < pairs.end, so pr·256 + cb·32 + 32 ≤ panel.len() (in_bounds).
                let w =
                    unsafe { vld1q_u16_x2(panel.as_ptr().add(pr * ROW_BYTES + cb * 32).cast()) };
                let f = [
                    vreinterpretq_f32_u32(vshll_n_u16::<16>(vget_low_u16(w.0))),
                    vreinterpretq_f32_u32(vshll_high_n_u16::<16>(w.0)),
                    vreinterpretq_f32_u32(vshll_n_u16::<16>(vget_low_u16(w.1))),
                    vreinterpretq_f32_u32(vshll_high_n_u16::<16>(w.1)),
                ];
                for m in 0..MR {
                    // SAFETY: 2·pr + 2 ≤ k = row length.
                    let a2 = unsafe { vld1_f32(rows[m].as_ptr().add(2 * pr)) };
                    let av = vcombine_f32(a2, a2);
                    for i in 0..4 {
                        s[m][i] = vfmaq_f32(s[m][i], f[i], av);
                    }
                }
            }
            for m in 0..MR {
                acc[m][cb] = s[m];
            }
        }
        c0 = c1;
    }
    for m in 0..MR {
        for cb in 0..8 {
            let dst = &mut tile[m * PANEL + cb * 8..][..8];
            // SAFETY: dst holds exactly 8 f32.
            unsafe {
                vst1q_f32(dst.as_mut_ptr(), vpaddq_f32(acc[m][cb][0], acc[m][cb][1]));
                vst1q_f32(
                    dst.as_mut_ptr().add(4),
                    vpaddq_f32(acc[m][cb][2], acc[m][cb][3]),
                );
            }
        }
    }
}
