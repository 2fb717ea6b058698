//! W4A8 on plain NEON (ARMv8.0, every arm64 CPU): `smull`/`smlal` into int16, `sadalp`
//! into int32 (the AVX2 `maddubs` idea of kernels.md §4.2 in NEON form).
//!
//! A 16-byte quarter of a record chunk is 4 columns × 4 k (byte `4c + t`); `x & 15` holds
//! k0..k0+3 and `x >> 4` k0+4..k0+7 (codes 0..15 are valid s8). Multiplied byte-wise by the
//! activation quad repeated four times, each int16 lane gets `lo·a + hi·a'` ≤ 2·15·127 =
//! 3 810 per octet, so 8 octets (30 480 < 32 767) accumulate in int16 before one `sadalp`
//! widens them. The two int32 lanes per column are added at the end of the group and the
//! zero point folded in f32 (kernels.md §2).

use std::arch::aarch64::*;
use std::ops::Range;

use super::ops::w4a8_epilogue4;
use crate::kernels::acts::QuantActs;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{CODES_BYTES, PANEL, PackedW4};
use crate::kernels::panel_split::w4a8_panels;
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;

/// Plain-NEON W4A8 (decode and prefill on CPUs without dotprod).
pub static W4A8_NEON: Variant = Variant {
    name: "w4a8-neon",
    isa: "neon",
    unit: Unit::NeonInt8,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Neon],
    rank: 10,
    kernel: KernelFn::W4A8(w4a8_neon),
};

/// # Safety
/// The CPU supports Advanced SIMD; shapes as in `registry::W4A8Fn`.
unsafe fn w4a8_neon(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    let kern = |w: &PackedW4, a: &QuantActs, p, gr, rows, acc: &mut [f32]| {
        // SAFETY: only reached through w4a8_neon, whose caller guarantees NEON.
        unsafe { panel(w, a, p, gr, rows, acc) }
    };
    w4a8_panels(pool, w, a, out, &kern);
}

/// One panel over `groups` for `rows` (see `panel_split::PanelKernel`).
#[target_feature(enable = "neon")]
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
        for r in rows.clone() {
            let x = a.group(r, g);
            let dst = &mut acc[(r - r0) * PANEL..][..PANEL];
            record_row(rec, x, a.sum(r, g) as f32, a.scale(r, g), dst);
        }
    }
}

/// One row × the 64 columns of one record, added into `dst[0..64]`.
#[target_feature(enable = "neon")]
#[inline]
fn record_row(rec: &[u8], x: &[i8], big_a: f32, sa: f32, dst: &mut [f32]) {
    assert!(rec.len() >= CODES_BYTES + 256 && x.len() >= GROUP && dst.len() >= PANEL);
    let mask = vdupq_n_u8(0x0F);
    for j in 0..4 {
        // Per quarter q: [2q] columns 4q, 4q+1 (two int32 lanes each), [2q+1] 4q+2, 4q+3.
        let mut d32 = [vdupq_n_s32(0); 8];
        for half in 0..2 {
            let mut d16 = [vdupq_n_s16(0); 8];
            for o in 8 * half..8 * half + 8 {
                let alo = vreinterpretq_s8_s32(vdupq_n_s32(quad(x, 8 * o)));
                let ahi = vreinterpretq_s8_s32(vdupq_n_s32(quad(x, 8 * o + 4)));
                // SAFETY: o·256 + j·64 + 64 ≤ 4096 ≤ rec.len() (asserted above).
                let v = unsafe { vld1q_u8_x4(rec.as_ptr().add(o * 256 + j * 64)) };
                for (q, vq) in [v.0, v.1, v.2, v.3].into_iter().enumerate() {
                    let lo = vreinterpretq_s8_u8(vandq_u8(vq, mask));
                    let hi = vreinterpretq_s8_u8(vshrq_n_u8::<4>(vq));
                    let l = vmlal_s8(
                        vmlal_s8(d16[2 * q], vget_low_s8(lo), vget_low_s8(alo)),
                        vget_low_s8(hi),
                        vget_low_s8(ahi),
                    );
                    let h = vmlal_high_s8(vmlal_high_s8(d16[2 * q + 1], lo, alo), hi, ahi);
                    d16[2 * q] = l;
                    d16[2 * q + 1] = h;
                }
            }
            for (d, s) in d32.iter_mut().zip(d16) {
                *d = vpadalq_s16(*d, s);
            }
        }
        for q in 0..4 {
            let d = vpaddq_s32(d32[2 * q], d32[2 * q + 1]);
            let col = 16 * j + 4 * q;
            w4a8_epilogue4(d, rec, col, big_a, sa, &mut dst[col..col + 4]);
        }
    }
}

/// Four activation bytes `x[i..i+4]` as one little-endian word.
#[inline(always)]
pub(super) fn quad(x: &[i8], i: usize) -> i32 {
    let b = &x[i..i + 4];
    i32::from_le_bytes([b[0] as u8, b[1] as u8, b[2] as u8, b[3] as u8])
}
