//! W4A16 with f32 `fmla` on plain NEON (every arm64 CPU): decode GEMV and the prefill
//! fallback where the bf16 extension is absent (kernels.md §4.5 in NEON form).
//!
//! A 16-byte record quarter is 4 columns × 4 k (byte `4c + t`). After `x & 15` / `x >> 4`,
//! one `tbl` per t gathers bytes `t, 4+t, 8+t, 12+t` into the low byte of four u32 lanes
//! (index 255 zero-fills the rest), `ucvtf` makes 4 f32 codes of 4 columns, and `fmla` by
//! element multiplies them by activation k0+t (lo) or k0+4+t (hi). The zero point is folded
//! per group, `y += s·(Σ q·a − z·Σa)` (kernels.md §2), with Σa and the denormal flush from
//! `bf16_act`. Per record (read once, in order): MR ≤ 4 rows × 8 columns (two quarters) at a
//! time, 8 accumulators; the per-group totals accumulate in the output tile (L1).
//!
//! Also holds the W4A16 driver the bf16-extension kernels share ([`run_w4a16`]).

use std::arch::aarch64::*;
use std::ops::Range;

use super::ops::bf16x4;
use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16_act::{ActF32, with_act};
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::{MR_MAX, PANEL, Tile, run_panels};
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;

/// f32 `fmla` W4A16 (decode; prefill without the bf16 extension).
pub static GEMV_NEON: Variant = Variant {
    name: "w4a16-gemv-neon",
    isa: "neon",
    unit: Unit::NeonFma,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Neon],
    rank: 10,
    kernel: KernelFn::W4A16(gemv_neon),
};

/// Smallest K split (in groups of 128) worth a separate task.
const MIN_SPLIT_GROUPS: usize = 2;

/// A W4A16 block: `(panel bytes, groups, act, r0, mr, tile)`, false if the operands do not
/// cover the request (then nothing was computed).
pub(super) type W4A16Block<'a> =
    &'a (dyn Fn(&[u8], Range<usize>, &ActF32, usize, usize, &mut Tile) -> bool + Sync);

/// The W4A16 panel driver of the aarch64 kernels: activations prepared once (flushed f32,
/// Σa and bf16 bits), panels split over the pool, `block` per (panel, ≤ 4 rows).
pub(super) fn run_w4a16(
    pool: &ThreadPool,
    w: &PackedW4,
    x: Bf16Rows<'_>,
    out: &mut [f32],
    block: W4A16Block<'_>,
) {
    if x.k != w.k() {
        return;
    }
    with_act(x, true, |act| {
        run_panels(
            pool,
            x.m,
            w.n(),
            w.panels(),
            w.groups(),
            MIN_SPLIT_GROUPS,
            out,
            |p, groups, r0, mr, tile| {
                let done = block(w.panel(p), groups, act, r0, mr, tile);
                debug_assert!(done, "W4A16 block refused its operands");
            },
        );
    });
}

/// The slice bounds the W4A16 blocks rely on.
pub(super) fn in_bounds(
    panel: &[u8],
    groups: &Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
) -> bool {
    (1..=MR_MAX).contains(&mr)
        && groups.end <= act.groups()
        && panel.len() >= groups.end * RECORD_BYTES
        && r0 + mr <= act.m
        && act.a.len() == act.m * act.k
        && act.ab.len() == act.a.len()
        && act.sums.len() == act.m * act.groups()
        && act.gscale.len() == act.sums.len()
}

/// # Safety
/// The CPU supports Advanced SIMD; shapes as in `registry::W4A16Fn`.
unsafe fn gemv_neon(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    run_w4a16(pool, w, x, out, &|panel, groups, act, r0, mr, tile| {
        // SAFETY: only reached through gemv_neon, whose caller guarantees NEON.
        unsafe { block(panel, groups, act, r0, mr, tile) }
    });
}

/// Rows `r0..r0+mr` × the 64 columns of one panel over `groups`, into `tile[m][64]`.
#[target_feature(enable = "neon")]
fn block(
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
        1 => micro::<1>(panel, groups, act, r0, tile),
        2 => micro::<2>(panel, groups, act, r0, tile),
        3 => micro::<3>(panel, groups, act, r0, tile),
        _ => micro::<4>(panel, groups, act, r0, tile),
    }
    true
}

/// `tbl` indices putting byte `4c + t` of a quarter into the low byte of u32 lane c.
const fn gather_t(t: u8) -> [u8; 16] {
    let mut out = [255u8; 16];
    let mut c = 0;
    while c < 4 {
        out[4 * c] = 4 * c as u8 + t;
        c += 1;
    }
    out
}
const GATHER: [[u8; 16]; 4] = [gather_t(0), gather_t(1), gather_t(2), gather_t(3)];

#[target_feature(enable = "neon")]
#[inline]
#[allow(clippy::needless_range_loop)] // indices mirror the register blocking
fn micro<const MR: usize>(
    panel: &[u8],
    groups: Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let (k, ng) = (act.k, act.groups());
    let mask = vdupq_n_u8(0x0F);
    // SAFETY: GATHER holds 4 × 16 bytes.
    let idx: [uint8x16_t; 4] = core::array::from_fn(|t| unsafe { vld1q_u8(GATHER[t].as_ptr()) });
    tile[..MR * PANEL].fill(0.0);
    for g in groups.clone() {
        let rec = &panel[g * RECORD_BYTES..][..RECORD_BYTES];
        let rows: [&[f32]; MR] =
            core::array::from_fn(|m| &act.a[(r0 + m) * k + g * GROUP..][..GROUP]);
        for j in 0..4 {
            for qp in 0..2 {
                let mut d = [[vdupq_n_f32(0.0); 2]; MR];
                for o in 0..16 {
                    // SAFETY: 8·o + 8 ≤ 128 = row length.
                    let al: [float32x4_t; MR] =
                        rows.map(|x| unsafe { vld1q_f32(x.as_ptr().add(8 * o)) });
                    let ah: [float32x4_t; MR] =
                        // SAFETY: 8·o + 8 ≤ 128 = row length.
                        rows.map(|x| unsafe { vld1q_f32(x.as_ptr().add(8 * o + 4)) });
                    for qi in 0..2 {
                        // SAFETY: o·256 + j·64 + qp·32 + qi·16 + 16 ≤ 4096 ≤ rec.len().
                        let v = unsafe {
                            vld1q_u8(rec.as_ptr().add(o * 256 + j * 64 + qp * 32 + qi * 16))
                        };
                        let lo = vandq_u8(v, mask);
                        let hi = vshrq_n_u8::<4>(v);
                        let wl: [float32x4_t; 4] = core::array::from_fn(|t| {
                            vcvtq_f32_u32(vreinterpretq_u32_u8(vqtbl1q_u8(lo, idx[t])))
                        });
                        let wh: [float32x4_t; 4] = core::array::from_fn(|t| {
                            vcvtq_f32_u32(vreinterpretq_u32_u8(vqtbl1q_u8(hi, idx[t])))
                        });
                        for m in 0..MR {
                            let mut s = d[m][qi];
                            s = vfmaq_laneq_f32::<0>(s, wl[0], al[m]);
                            s = vfmaq_laneq_f32::<1>(s, wl[1], al[m]);
                            s = vfmaq_laneq_f32::<2>(s, wl[2], al[m]);
                            s = vfmaq_laneq_f32::<3>(s, wl[3], al[m]);
                            s = vfmaq_laneq_f32::<0>(s, wh[0], ah[m]);
                            s = vfmaq_laneq_f32::<1>(s, wh[1], ah[m]);
                            s = vfmaq_laneq_f32::<2>(s, wh[2], ah[m]);
                            s = vfmaq_laneq_f32::<3>(s, wh[3], ah[m]);
                            d[m][qi] = s;
                        }
                    }
                }
                fold(rec, 16 * j + 8 * qp, act, r0, g, ng, &d, tile);
            }
        }
    }
}

/// The per-group fold of the 8 columns `col0..col0+8` (two quarters) into the tile:
/// `tile += s·gscale·(d − z·Σa)`, groups in K order.
#[target_feature(enable = "neon")]
#[inline]
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
pub(super) fn fold<const MR: usize>(
    rec: &[u8],
    col0: usize,
    act: &ActF32,
    r0: usize,
    g: usize,
    ng: usize,
    d: &[[float32x4_t; 2]; MR],
    tile: &mut Tile,
) {
    for qi in 0..2 {
        let col = col0 + 4 * qi;
        let s = bf16x4(&rec[SCALE_OFFSET + 2 * col..]);
        let z = bf16x4(&rec[ZERO_OFFSET + 2 * col..]);
        for m in 0..MR {
            let i = (r0 + m) * ng + g;
            let t = vfmsq_f32(d[m][qi], z, vdupq_n_f32(act.sums[i]));
            let dst = &mut tile[m * PANEL + col..][..4];
            // SAFETY: dst holds exactly 4 f32; unaligned NEON load/store.
            unsafe {
                let tot = vld1q_f32(dst.as_ptr());
                vst1q_f32(
                    dst.as_mut_ptr(),
                    vfmaq_f32(tot, vmulq_n_f32(s, act.gscale[i]), t),
                );
            }
        }
    }
}
