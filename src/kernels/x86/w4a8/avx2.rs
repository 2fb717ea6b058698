//! W4A8 panel kernels on 256-bit vectors: AVX2 (`vpmaddubsw` + `vpmaddwd`) and AVX-VNNI
//! (VEX `vpdpbusd`), kernels.md §4.2. Both consume the P64·G128 record one 64-byte chunk at
//! a time as two 32-byte halves (columns 0–7 and 8–15 of a sub-block).
//!
//! Loop: group (record stays in L1) → row pair → column sub-blocks. Per octet `o` the
//! activation dwords `x[8o..8o+4]` / `x[8o+4..8o+8]` are broadcast; codes are `x & 15` and
//! `(x >> 4) & 15`. AVX2 sums up to 8 `maddubs` outputs in int16 (each ≤ 2·15·127 = 3810, so
//! 8·3810 = 30480 < 32767: safe only because codes ≤ 15 and activations are clamped to
//! ±127) before one `madd(·, 1)` to int32. After the group, the zero-point fold runs in f32:
//! `acc += (D − z·A)·(s_w·s_a)`. One row uses 32 columns per pass (8 independent chains);
//! two rows use 16 columns per pass.

use std::arch::x86_64::*;
use std::ops::Range;

use crate::kernels::acts::QuantActs;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{PANEL, PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::w4a8_panels;
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;
use crate::kernels::x86::prefetch::stream_ahead;

/// Up to this many rows per chunk, each row makes its own single pass over the record.
const DECODE_ROWS: usize = 4;

/// AVX2 W4A8 (decode and prefill where nothing better exists).
pub static W4A8_AVX2: Variant = Variant {
    name: "w4a8-avx2",
    isa: "avx2",
    unit: Unit::Avx2Int8,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 10,
    kernel: KernelFn::W4A8(w4a8_avx2::<false>),
};

/// AVX2 W4A8 decode with a fixed software prefetch distance ahead of the one-row stream.
/// Ranked under `w4a8-avx2` (on a Zen 1 it streamed about 20 % faster from DRAM; a
/// prefetch of whole records ahead once made a Zen 2 25 % slower), so `bench`'s race
/// decides per host.
pub static W4A8_AVX2_STREAM: Variant = Variant {
    name: "w4a8-avx2-stream",
    isa: "avx2",
    unit: Unit::Avx2Int8,
    phases: &[Phase::Decode],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 9,
    kernel: KernelFn::W4A8(w4a8_avx2::<true>),
};

/// AVX-VNNI W4A8 (ymm `vpdpbusd`).
pub static W4A8_AVXVNNI: Variant = Variant {
    name: "w4a8-avxvnni",
    isa: "avxvnni",
    unit: Unit::AvxVnni,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma, Feature::AvxVnni],
    rank: 20,
    kernel: KernelFn::W4A8(w4a8_avxvnni),
};

/// `w4a8-avx2` (`STREAM = false`) and `w4a8-avx2-stream`.
///
/// # Safety
/// The CPU supports AVX2 and FMA; shapes as in `registry::W4A8Fn`.
unsafe fn w4a8_avx2<const STREAM: bool>(
    pool: &ThreadPool,
    w: &PackedW4,
    a: &QuantActs,
    out: &mut [f32],
) {
    let kern = |w: &PackedW4, a: &QuantActs, p, gr, rows, acc: &mut [f32]| {
        // SAFETY: this closure only runs inside w4a8_avx2, whose caller guarantees AVX2+FMA.
        unsafe { panel_avx2::<STREAM>(w, a, p, gr, rows, acc) }
    };
    w4a8_panels(pool, w, a, out, &kern);
}

/// # Safety
/// The CPU supports AVX2, FMA and AVX-VNNI; shapes as in `registry::W4A8Fn`.
unsafe fn w4a8_avxvnni(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    let kern = |w: &PackedW4, a: &QuantActs, p, gr, rows, acc: &mut [f32]| {
        // SAFETY: this closure only runs inside w4a8_avxvnni, whose caller guarantees the ISA.
        unsafe { panel_vnni(w, a, p, gr, rows, acc) }
    };
    w4a8_panels(pool, w, a, out, &kern);
}

/// The AVX2 instance of [`panel`]: the register-blocked loops are inlined here, compiled
/// for AVX2 + FMA. `STREAM`: one-row passes prefetch ahead of their reads.
#[target_feature(enable = "avx2,fma")]
fn panel_avx2<const STREAM: bool>(
    w: &PackedW4,
    a: &QuantActs,
    p: usize,
    groups: Range<usize>,
    rows: Range<usize>,
    acc: &mut [f32],
) {
    // SAFETY: AVX2 + FMA are enabled on this function.
    unsafe { panel::<false, STREAM>(w, a, p, groups, rows, acc) }
}

/// The AVX-VNNI instance of [`panel`]. The loops must be inlined into a function that
/// enables AVX-VNNI: compiled for AVX2 alone, every `vpdpbusd` became an out-of-line call
/// with its operands spilled to the stack.
#[target_feature(enable = "avx2,fma,avxvnni")]
fn panel_vnni(
    w: &PackedW4,
    a: &QuantActs,
    p: usize,
    groups: Range<usize>,
    rows: Range<usize>,
    acc: &mut [f32],
) {
    // SAFETY: AVX2, FMA and AVX-VNNI are enabled on this function.
    unsafe { panel::<true, false>(w, a, p, groups, rows, acc) }
}

/// One panel over `groups` for `rows` (see `panel_split::PanelKernel`). `VNNI` selects the
/// `vpdpbusd` inner product; `STREAM` prefetches ahead of one-row passes.
///
/// # Safety
/// AVX2 and FMA (and AVX-VNNI where `VNNI`) are enabled in the caller, into which this
/// function is inlined.
#[inline(always)]
unsafe fn panel<const VNNI: bool, const STREAM: bool>(
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
        assert!(rec.len() == RECORD_BYTES && (rec.as_ptr() as usize).is_multiple_of(32));
        if rows.len() > DECODE_ROWS {
            prefetch_next(rec);
        }
        if rows.len() <= DECODE_ROWS {
            // Decode: one sequential pass per row; rows after the first hit the record in L1.
            for r in rows.clone() {
                // SAFETY: forwarded contract (this function's features).
                unsafe { record_rows::<1, 4, VNNI, STREAM>(rec, 0, a, g, [r], r0, acc) };
            }
            continue;
        }
        let mut r = r0;
        while r < rows.end {
            if !VNNI && rows.end - r >= 4 {
                // SAFETY: the caller enables AVX2 + FMA.
                unsafe { record_rows4(rec, a, g, [r, r + 1, r + 2, r + 3], r0, acc) };
                r += 4;
            } else if rows.end - r >= 2 {
                for j in 0..4 {
                    // SAFETY: forwarded contract (this function's features).
                    unsafe { record_rows::<2, 1, VNNI, false>(rec, j, a, g, [r, r + 1], r0, acc) };
                }
                r += 2;
            } else {
                // SAFETY: forwarded contract (this function's features).
                unsafe { record_rows::<1, 4, VNNI, STREAM>(rec, 0, a, g, [r], r0, acc) };
                r += 1;
            }
        }
    }
}

/// Rows `rows` × sub-blocks `j0..j0+J` of one record: integer dot products then epilogue
/// into `acc[(row − r0)·64 + col]`.
///
/// # Safety
/// As [`panel`]: inlined into a function enabling AVX2 + FMA (+ AVX-VNNI where `VNNI`).
#[inline(always)]
unsafe fn record_rows<const R: usize, const J: usize, const VNNI: bool, const STREAM: bool>(
    rec: &[u8],
    j0: usize,
    a: &QuantActs,
    g: usize,
    rows: [usize; R],
    r0: usize,
    acc: &mut [f32],
) {
    // SAFETY: (whole body) the features are enabled in the caller (this function's
    // contract); the record and tile accesses are bounded as noted at each.
    unsafe {
        let mask = _mm256_set1_epi8(0x0F);
        let ones = _mm256_set1_epi16(1);
        // Fixed-size rows: the per-octet bounds checks of `dword` fold away.
        let xs: [&[i8; GROUP]; R] = rows.map(|r| a.group(r, g));
        let mut acc32 = [[_mm256_setzero_si256(); 8]; R];
        let base = rec.as_ptr();
        for ob in 0..4 {
            let mut acc16 = [[_mm256_setzero_si256(); 8]; R];
            for oo in 0..4 {
                let o = ob * 4 + oo;
                if STREAM && R == 1 && J == 4 {
                    // One row streams the record once: keep the DRAM reads ahead.
                    stream_ahead(base.add(o * 256), 4);
                }
                let alo = xs.map(|x| _mm256_set1_epi32(dword(x, 8 * o)));
                let ahi = xs.map(|x| _mm256_set1_epi32(dword(x, 8 * o + 4)));
                for jj in 0..J {
                    for h in 0..2 {
                        let off = o * 256 + (j0 + jj) * 64 + h * 32;
                        // off + 32 <= 4096 <= rec.len() (asserted by the caller) and rec + off is
                        // 32-byte aligned (records are 64-aligned, off % 32 == 0).
                        let v = _mm256_load_si256(base.add(off).cast::<__m256i>());
                        let lo = _mm256_and_si256(v, mask);
                        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask);
                        let i = jj * 2 + h;
                        for r in 0..R {
                            if VNNI {
                                // VNNI is true only inside `panel_vnni`, which enables AVX-VNNI.
                                acc32[r][i] = dpbusd(dpbusd(acc32[r][i], lo, alo[r]), hi, ahi[r]);
                            } else {
                                let s = _mm256_add_epi16(
                                    _mm256_maddubs_epi16(lo, alo[r]),
                                    _mm256_maddubs_epi16(hi, ahi[r]),
                                );
                                acc16[r][i] = _mm256_add_epi16(acc16[r][i], s);
                            }
                        }
                    }
                }
            }
            if !VNNI {
                for r in 0..R {
                    for i in 0..2 * J {
                        acc32[r][i] =
                            _mm256_add_epi32(acc32[r][i], _mm256_madd_epi16(acc16[r][i], ones));
                    }
                }
            }
        }
        for r in 0..R {
            let va = _mm256_set1_ps(a.sum(rows[r], g) as f32);
            let vs = _mm256_set1_ps(a.scale(rows[r], g));
            let dst_row = &mut acc[(rows[r] - r0) * PANEL..][..PANEL];
            for jj in 0..J {
                for h in 0..2 {
                    let col = (j0 + jj) * 16 + h * 8;
                    let sw = bf16x8(&rec[SCALE_OFFSET + 2 * col..][..16]);
                    let z = bf16x8(&rec[ZERO_OFFSET + 2 * col..][..16]);
                    let d = _mm256_cvtepi32_ps(acc32[r][jj * 2 + h]);
                    let t = _mm256_fnmadd_ps(z, va, d);
                    let dst = &mut dst_row[col..col + 8];
                    // dst holds exactly 8 f32 (unaligned load/store).
                    let prev = _mm256_loadu_ps(dst.as_ptr());
                    _mm256_storeu_ps(
                        dst.as_mut_ptr(),
                        _mm256_fmadd_ps(t, _mm256_mul_ps(sw, vs), prev),
                    );
                }
            }
        }
    }
}

/// Four rows × 64 columns of one record on AVX2, 8 columns per pass. The activation dwords
/// are broadcast once per (row, k-quad) into a 4 KB stack buffer so `vpmaddubsw` reads them
/// as memory operands: per octet and 8 columns, 4 shared µops (load, and, shift, and) plus
/// 4 per row, with 8 int16 + int32 accumulators and no spills.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn record_rows4(rec: &[u8], a: &QuantActs, g: usize, rows: [usize; 4], r0: usize, acc: &mut [f32]) {
    let mut bc = [_mm256_setzero_si256(); 4 * 32];
    for (r, &row) in rows.iter().enumerate() {
        let x = a.group(row, g);
        for q in 0..32 {
            bc[r * 32 + q] = _mm256_set1_epi32(dword(x, 4 * q));
        }
    }
    let mask = _mm256_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    let base = rec.as_ptr();
    let va = rows.map(|r| _mm256_set1_ps(a.sum(r, g) as f32));
    let vs = rows.map(|r| _mm256_set1_ps(a.scale(r, g)));
    for j in 0..4 {
        for h in 0..2 {
            let mut acc32 = [_mm256_setzero_si256(); 4];
            for ob in 0..4 {
                let mut acc16 = [_mm256_setzero_si256(); 4];
                for oo in 0..4 {
                    let o = ob * 4 + oo;
                    // SAFETY: o*256 + j*64 + h*32 + 32 <= 4096 <= rec.len() (asserted by the
                    // caller); 32-byte aligned as records are 64-aligned.
                    let v = unsafe {
                        _mm256_load_si256(base.add(o * 256 + j * 64 + h * 32).cast::<__m256i>())
                    };
                    let lo = _mm256_and_si256(v, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask);
                    for r in 0..4 {
                        let s = _mm256_add_epi16(
                            _mm256_maddubs_epi16(lo, bc[r * 32 + 2 * o]),
                            _mm256_maddubs_epi16(hi, bc[r * 32 + 2 * o + 1]),
                        );
                        acc16[r] = _mm256_add_epi16(acc16[r], s);
                    }
                }
                for r in 0..4 {
                    acc32[r] = _mm256_add_epi32(acc32[r], _mm256_madd_epi16(acc16[r], ones));
                }
            }
            let col = j * 16 + h * 8;
            let sw = bf16x8(&rec[SCALE_OFFSET + 2 * col..][..16]);
            let z = bf16x8(&rec[ZERO_OFFSET + 2 * col..][..16]);
            for r in 0..4 {
                let t = _mm256_fnmadd_ps(z, va[r], _mm256_cvtepi32_ps(acc32[r]));
                let dst = &mut acc[(rows[r] - r0) * PANEL + col..][..8];
                // SAFETY: dst holds exactly 8 f32 (unaligned load/store).
                unsafe {
                    let prev = _mm256_loadu_ps(dst.as_ptr());
                    _mm256_storeu_ps(
                        dst.as_mut_ptr(),
                        _mm256_fmadd_ps(t, _mm256_mul_ps(sw, vs[r]), prev),
                    );
                }
            }
        }
    }
}

/// Prefetch the 68 cache lines of the record that follows `rec` in memory (the next group
/// of the panel, or the next panel's first record). The multi-row paths visit a record in
/// several strided passes, which the hardware prefetchers follow poorly from DRAM.
#[inline(always)]
fn prefetch_next(rec: &[u8]) {
    let next = rec.as_ptr().wrapping_add(RECORD_BYTES);
    for line in 0..RECORD_BYTES / 64 {
        // SAFETY: a prefetch is only a hint and never faults, even past the buffer's end;
        // `wrapping_add` keeps the address computation itself free of UB.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(64 * line).cast::<i8>()) };
    }
}

/// `vpdpbusd ymm` (AVX-VNNI).
///
/// # Safety
/// The CPU supports AVX-VNNI.
#[target_feature(enable = "avx2,avxvnni")]
#[inline]
unsafe fn dpbusd(acc: __m256i, u8s: __m256i, i8s: __m256i) -> __m256i {
    _mm256_dpbusd_avx_epi32(acc, u8s, i8s)
}

/// Four activation bytes at `x[i..i+4]` as one little-endian dword (a plain unaligned load,
/// so the broadcast folds into `vpbroadcastd reg, [mem]`).
#[inline(always)]
fn dword(x: &[i8], i: usize) -> i32 {
    assert!(i + 4 <= x.len());
    // SAFETY: i + 4 <= x.len() (asserted; the check is hoisted for the constant-bound loops).
    unsafe { x.as_ptr().add(i).cast::<i32>().read_unaligned() }
}

/// Eight little-endian bf16 (16 bytes) widened to f32.
#[target_feature(enable = "avx2")]
#[inline]
fn bf16x8(b: &[u8]) -> __m256 {
    assert!(b.len() >= 16);
    // SAFETY: b holds at least 16 bytes (asserted); unaligned load.
    let h = unsafe { _mm_loadu_si128(b.as_ptr().cast::<__m128i>()) };
    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
}
