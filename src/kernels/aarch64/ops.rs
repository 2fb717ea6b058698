//! Small building blocks shared by the aarch64 kernels: the four instructions without stable
//! intrinsics in Rust 1.95 (`sdot` by element, `smmla`, `bfdot`, `bfmmla`) as `asm!`
//! wrappers, bf16 → f32 widening, the 16-entry code → bf16 table and the W4A8 per-group
//! epilogue.
//!
//! Each wrapper is a safe `#[target_feature]` function: callers must enable the same
//! feature, which the registry's `Ready` proves at run time (HWCAP). The asm blocks touch
//! only the registers named as operands (`pure, nomem, nostack`).

use std::arch::aarch64::*;

/// `acc.4s += sdot(w.16b, a.4b[L])`: lane `i` of `acc` gains Σₜ w[4i+t]·a[4L+t] (s8 × s8).
#[target_feature(enable = "neon,dotprod")]
#[inline]
pub fn sdot_lane<const L: i32>(mut acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
    // SAFETY: one register-only instruction of FEAT_DotProd, enabled on this function (its
    // callers hold a `Ready` proving HWCAP asimddp); no memory, stack or flags touched.
    unsafe {
        core::arch::asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {a:v}.4b[{l}]",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            a = in(vreg) a,
            l = const L,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// `acc.4s += smmla(a.16b, b.16b)`: `a` is 2 rows × 8 s8, `b` 2 columns × 8 s8, `acc` the
/// 2 × 2 int32 product `[r0c0, r0c1, r1c0, r1c1]`.
#[target_feature(enable = "neon,i8mm")]
#[inline]
pub fn smmla(mut acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    // SAFETY: one register-only instruction of FEAT_I8MM, enabled on this function (callers
    // hold a `Ready` proving HWCAP2 i8mm); no memory, stack or flags touched.
    unsafe {
        core::arch::asm!(
            "smmla {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// `acc.4s += bfdot(w.8h, a.8h)`: lane `i` gains w[2i]·a[2i] + w[2i+1]·a[2i+1] (bf16 pairs).
#[target_feature(enable = "neon,bf16")]
#[inline]
pub fn bfdot(mut acc: float32x4_t, w: uint16x8_t, a: uint16x8_t) -> float32x4_t {
    // SAFETY: one register-only instruction of FEAT_BF16, enabled on this function (callers
    // hold a `Ready` proving HWCAP2 bf16); no memory, stack or flags touched.
    unsafe {
        core::arch::asm!(
            "bfdot {acc:v}.4s, {w:v}.8h, {a:v}.8h",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            a = in(vreg) a,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// `acc.4s += bfdot(w.8h, a.2h[L])`: lane `i` gains w[2i]·a[2L] + w[2i+1]·a[2L+1].
#[target_feature(enable = "neon,bf16")]
#[inline]
pub fn bfdot_lane<const L: i32>(mut acc: float32x4_t, w: uint16x8_t, a: uint16x8_t) -> float32x4_t {
    // SAFETY: as `bfdot`.
    unsafe {
        core::arch::asm!(
            "bfdot {acc:v}.4s, {w:v}.8h, {a:v}.2h[{l}]",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            a = in(vreg) a,
            l = const L,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// `acc.4s += bfmmla(a.8h, b.8h)`: `a` is 2 rows × 4 bf16, `b` 2 columns × 4 bf16, `acc`
/// the 2 × 2 f32 product `[r0c0, r0c1, r1c0, r1c1]`.
#[target_feature(enable = "neon,bf16")]
#[inline]
pub fn bfmmla(mut acc: float32x4_t, a: uint16x8_t, b: uint16x8_t) -> float32x4_t {
    // SAFETY: as `bfdot`.
    unsafe {
        core::arch::asm!(
            "bfmmla {acc:v}.4s, {a:v}.8h, {b:v}.8h",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// Four little-endian bf16 at `b[0..8]` widened to f32.
#[target_feature(enable = "neon")]
#[inline]
pub fn bf16x4(b: &[u8]) -> float32x4_t {
    assert!(b.len() >= 8);
    // SAFETY: b holds at least 8 bytes (asserted); vld1 has no alignment requirement.
    let h = unsafe { vld1_u16(b.as_ptr().cast()) };
    vreinterpretq_f32_u32(vshll_n_u16::<16>(h))
}

/// The W4A8 epilogue for 4 columns of one row (kernels.md §2):
/// `dst += (D − z·A)·(s_w·s_a)` with `s_w`, `z` the bf16 scale and zero of record columns
/// `col..col+4`.
#[target_feature(enable = "neon")]
#[inline]
pub fn w4a8_epilogue4(d: int32x4_t, rec: &[u8], col: usize, big_a: f32, sa: f32, dst: &mut [f32]) {
    use crate::kernels::pack::{SCALE_OFFSET, ZERO_OFFSET};
    let sw = bf16x4(&rec[SCALE_OFFSET + 2 * col..]);
    let z = bf16x4(&rec[ZERO_OFFSET + 2 * col..]);
    let t = vfmsq_f32(vcvtq_f32_s32(d), z, vdupq_n_f32(big_a));
    let dst = &mut dst[..4];
    // SAFETY: dst holds exactly 4 f32 (sliced above); unaligned NEON load/store.
    unsafe {
        let prev = vld1q_f32(dst.as_ptr());
        vst1q_f32(dst.as_mut_ptr(), vfmaq_f32(prev, t, vmulq_n_f32(sw, sa)));
    }
}

/// bf16 bits of the integers 0..=15 (exact), split into low and high bytes for `tbl`.
const fn code_bf16_bytes(high: bool) -> [u8; 16] {
    let mut out = [0u8; 16];
    let mut c = 0;
    while c < 16 {
        let bits = ((c as f32).to_bits() >> 16) as u16;
        out[c] = if high { (bits >> 8) as u8 } else { bits as u8 };
        c += 1;
    }
    out
}

/// Low bytes of bf16(c), c = 0..15.
pub const CODE_BF16_LO: [u8; 16] = code_bf16_bytes(false);
/// High bytes of bf16(c), c = 0..15.
pub const CODE_BF16_HI: [u8; 16] = code_bf16_bytes(true);

/// Sixteen codes (0..15, one per byte) as bf16: `(codes 0..8, codes 8..16)`, 8 × u16 each.
#[target_feature(enable = "neon")]
#[inline]
pub fn codes_to_bf16(
    codes: uint8x16_t,
    lut_lo: uint8x16_t,
    lut_hi: uint8x16_t,
) -> (uint16x8_t, uint16x8_t) {
    let lo = vqtbl1q_u8(lut_lo, codes);
    let hi = vqtbl1q_u8(lut_hi, codes);
    (
        vreinterpretq_u16_u8(vzip1q_u8(lo, hi)),
        vreinterpretq_u16_u8(vzip2q_u8(lo, hi)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cpu::{Feature, has};

    fn i8s(seed: i32) -> [i8; 16] {
        core::array::from_fn(|i| ((i as i32 * 37 + seed * 11) % 255 - 127) as i8)
    }

    fn bf16s(seed: u32) -> [u16; 8] {
        // Small integers and halves: every product and sum below is exact in f32.
        core::array::from_fn(|i| {
            let x = ((i as u32 * 5 + seed) % 9) as f32 * 0.5 - 2.0;
            (x.to_bits() >> 16) as u16
        })
    }

    fn f(b: u16) -> f32 {
        f32::from_bits((b as u32) << 16)
    }

    #[test]
    fn int8_wrappers_match_their_definitions() {
        let (w, a) = (i8s(1), i8s(2));
        // SAFETY: plain 16-byte loads from arrays.
        let (vw, va) = unsafe { (vld1q_s8(w.as_ptr()), vld1q_s8(a.as_ptr())) };
        // SAFETY: Advanced SIMD is part of every aarch64 target.
        let zero = unsafe { vdupq_n_s32(0) };
        let lanes = |v: int32x4_t| {
            let mut o = [0i32; 4];
            // SAFETY: o holds 4 i32.
            unsafe { vst1q_s32(o.as_mut_ptr(), v) };
            o
        };
        if has(Feature::Dotprod) {
            // SAFETY: dotprod checked just above.
            let got = lanes(unsafe { sdot_lane::<2>(zero, vw, va) });
            let want: [i32; 4] = core::array::from_fn(|i| {
                (0..4).map(|t| w[4 * i + t] as i32 * a[8 + t] as i32).sum()
            });
            assert_eq!(got, want);
        } else {
            eprintln!("SKIPPED sdot wrapper: missing dotprod");
        }
        if has(Feature::I8mm) {
            // SAFETY: i8mm checked just above.
            let got = lanes(unsafe { smmla(zero, va, vw) });
            let dot = |r: usize, c: usize| {
                (0..8)
                    .map(|t| a[8 * r + t] as i32 * w[8 * c + t] as i32)
                    .sum::<i32>()
            };
            assert_eq!(got, [dot(0, 0), dot(0, 1), dot(1, 0), dot(1, 1)]);
        } else {
            eprintln!("SKIPPED smmla wrapper: missing i8mm");
        }
    }

    #[test]
    fn bf16_wrappers_match_their_definitions() {
        if !has(Feature::Bf16) {
            eprintln!("SKIPPED bf16 wrappers: missing bf16");
            return;
        }
        let (w, a) = (bf16s(1), bf16s(4));
        assert!(w.iter().chain(&a).filter(|&&b| b != 0).count() > 12);
        // SAFETY: plain 8 × u16 loads from arrays.
        let (vw, va) = unsafe { (vld1q_u16(w.as_ptr()), vld1q_u16(a.as_ptr())) };
        // SAFETY: Advanced SIMD is part of every aarch64 target.
        let zero = unsafe { vdupq_n_f32(0.0) };
        let lanes = |v: float32x4_t| {
            let mut o = [0f32; 4];
            // SAFETY: o holds 4 f32.
            unsafe { vst1q_f32(o.as_mut_ptr(), v) };
            o
        };
        let pair =
            |i: usize, j: usize| f(w[2 * i]) * f(a[2 * j]) + f(w[2 * i + 1]) * f(a[2 * j + 1]);
        // SAFETY: bf16 checked above.
        let got = lanes(unsafe { bfdot(zero, vw, va) });
        assert_eq!(got, core::array::from_fn(|i| pair(i, i)));
        // SAFETY: bf16 checked above.
        let got = lanes(unsafe { bfdot_lane::<3>(zero, vw, va) });
        assert_eq!(got, core::array::from_fn(|i| pair(i, 3)));
        // SAFETY: bf16 checked above.
        let got = lanes(unsafe { bfmmla(zero, va, vw) });
        let dot = |r: usize, c: usize| {
            (0..4)
                .map(|t| f(a[4 * r + t]) * f(w[4 * c + t]))
                .sum::<f32>()
        };
        assert_eq!(got, [dot(0, 0), dot(0, 1), dot(1, 0), dot(1, 1)]);
    }

    #[test]
    fn code_table_is_exact() {
        for c in 0..16usize {
            let bits = (CODE_BF16_HI[c] as u32) << 24 | (CODE_BF16_LO[c] as u32) << 16;
            assert_eq!(f32::from_bits(bits), c as f32);
        }
    }
}
