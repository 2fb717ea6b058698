//! W4A8 panel kernel on AVX-512 VNNI (kernels.md §4.1): one 64-byte chunk is one zmm of
//! 16 columns × 4 k; `x & 15` and `(x >> 4) & 15` feed two `vpdpbusd` (u8 codes × s8
//! activations) against the broadcast activation dwords of the octet. The int32 sums are
//! exact (≤ 245 760 per group), flushed to f32 once per group with the zero fold
//! `acc += (D − z·A)·(s_w·s_a)`.
//!
//! Rows are processed 4, 2 or 1 at a time per weight load: 4 column blocks × R rows of
//! int32 accumulators (4–16 independent `vpdpbusd` chains), the record staying in L1 for all
//! rows of the chunk. Also serves prefill on hosts without AMX (the "VNNI GEMM").

use std::arch::x86_64::*;
use std::ops::Range;

use crate::kernels::acts::QuantActs;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{PANEL, PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::w4a8_panels;
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Variant};
use crate::kernels::weights::GROUP;

/// AVX-512 VNNI W4A8 (decode GEMV; prefill GEMM where AMX is absent).
pub static W4A8_AVX512VNNI: Variant = Variant {
    name: "w4a8-avx512vnni",
    isa: "avx512vnni",
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Avx512vnni,
        Feature::Fma,
    ],
    rank: 30,
    kernel: KernelFn::W4A8(w4a8_avx512vnni),
};

/// # Safety
/// The CPU supports AVX-512 F/BW/VNNI and FMA; shapes as in `registry::W4A8Fn`.
unsafe fn w4a8_avx512vnni(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    let kern = |w: &PackedW4, a: &QuantActs, p, gr, rows, acc: &mut [f32]| {
        // SAFETY: only reached through w4a8_avx512vnni, whose caller guarantees the ISA.
        unsafe { panel(w, a, p, gr, rows, acc) }
    };
    w4a8_panels(pool, w, a, out, &kern);
}

/// One panel over `groups` for `rows` (see `panel_split::PanelKernel`).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
pub(crate) fn panel(
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
        assert!(rec.len() == RECORD_BYTES && (rec.as_ptr() as usize).is_multiple_of(64));
        let mut r = r0;
        while r < rows.end {
            match rows.end - r {
                1 => {
                    record_rows::<1>(rec, a, g, [r], r0, acc);
                    r += 1;
                }
                2 | 3 => {
                    record_rows::<2>(rec, a, g, [r, r + 1], r0, acc);
                    r += 2;
                }
                _ => {
                    record_rows::<4>(rec, a, g, [r, r + 1, r + 2, r + 3], r0, acc);
                    r += 4;
                }
            }
        }
    }
}

/// R rows × 64 columns of one record: `vpdpbusd` sums, then the per-group epilogue into
/// `acc[(row − r0)·64 + col]`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
#[inline]
#[allow(clippy::needless_range_loop)] // j indexes accumulators, chunks and scales alike
fn record_rows<const R: usize>(
    rec: &[u8],
    a: &QuantActs,
    g: usize,
    rows: [usize; R],
    r0: usize,
    acc: &mut [f32],
) {
    let mask = _mm512_set1_epi8(0x0F);
    let xs: [&[i8]; R] = rows.map(|r| &a.row(r)[g * GROUP..][..GROUP]);
    let mut d = [[_mm512_setzero_si512(); 4]; R];
    let base = rec.as_ptr();
    for o in 0..16 {
        let alo = xs.map(|x| _mm512_set1_epi32(dword(x, 8 * o)));
        let ahi = xs.map(|x| _mm512_set1_epi32(dword(x, 8 * o + 4)));
        for j in 0..4 {
            // SAFETY: o*256 + j*64 + 64 <= 4096 <= rec.len() (asserted by the caller), and
            // the address is 64-byte aligned (records are 64-aligned).
            let v = unsafe { _mm512_load_si512(base.add(o * 256 + j * 64).cast()) };
            let lo = _mm512_and_si512(v, mask);
            let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(v), mask);
            for r in 0..R {
                d[r][j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(d[r][j], lo, alo[r]), hi, ahi[r]);
            }
        }
    }
    for r in 0..R {
        let va = _mm512_set1_ps(a.sum(rows[r], g) as f32);
        let vs = _mm512_set1_ps(a.scale(rows[r], g));
        let dst_row = &mut acc[(rows[r] - r0) * PANEL..][..PANEL];
        for j in 0..4 {
            let sw = bf16x16(&rec[SCALE_OFFSET + 32 * j..][..32]);
            let z = bf16x16(&rec[ZERO_OFFSET + 32 * j..][..32]);
            let t = _mm512_fnmadd_ps(z, va, _mm512_cvtepi32_ps(d[r][j]));
            let dst = &mut dst_row[16 * j..16 * j + 16];
            // SAFETY: dst holds exactly 16 f32 (unaligned load/store).
            unsafe {
                let prev = _mm512_loadu_ps(dst.as_ptr());
                _mm512_storeu_ps(
                    dst.as_mut_ptr(),
                    _mm512_fmadd_ps(t, _mm512_mul_ps(sw, vs), prev),
                );
            }
        }
    }
}

/// Four activation bytes at `x[i..i+4]` as one little-endian dword (a plain unaligned load,
/// so the broadcast folds into `vpbroadcastd reg, [mem]`).
#[inline(always)]
fn dword(x: &[i8], i: usize) -> i32 {
    assert!(i + 4 <= x.len());
    // SAFETY: i + 4 <= x.len() (asserted; the check is hoisted for the constant-bound loops).
    unsafe { x.as_ptr().add(i).cast::<i32>().read_unaligned() }
}

/// Sixteen little-endian bf16 (32 bytes) widened to f32.
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn bf16x16(b: &[u8]) -> __m512 {
    assert!(b.len() >= 32);
    // SAFETY: b holds at least 32 bytes (asserted); unaligned load.
    let h = unsafe { _mm256_loadu_si256(b.as_ptr().cast::<__m256i>()) };
    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
}
