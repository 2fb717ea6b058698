//! W4A8 panel kernel on AVX-512 VNNI (kernels.md §4.1): one 64-byte chunk is one zmm of
//! 16 columns × 4 k; `x & 15` and `(x >> 4) & 15` feed two `vpdpbusd` (u8 codes × s8
//! activations) against the broadcast activation dwords of the octet. The int32 sums are
//! exact (≤ 245 760 per group), flushed to f32 once per group with the zero fold
//! `acc += (D − z·A)·(s_w·s_a)`.
//!
//! Rows are processed 4, 2 or 1 at a time per weight load: 4 column blocks × R rows of
//! int32 accumulators (4–16 independent `vpdpbusd` chains), the record staying in L1 for all
//! rows of the chunk. Serves decode, and prefill where nothing better is registered.
//!
//! `w4a8-gemm-avx512vnni` (prefill): each record is unpacked once per M chunk into an 8 KB
//! block of u8 codes (row q = the 4 codes k = 4q..4q+3 of all 64 columns, one `vpdpbusd`
//! operand per 16 columns) plus f32 scales and zeros, so the inner loop is only 4 aligned
//! loads, one broadcast per row and `vpdpbusd`: a 6 × 64 register block (24 int32
//! accumulators, 32 quads per group), then the per-group f32 epilogue into the splitter's
//! tile. The block stays in L1 while every row of the chunk passes over it, and the next
//! record is prefetched into L1, spread evenly over the chunk's register blocks, while it
//! does. Below [`GEMM_MIN_M`] rows it runs the GEMV's panel kernel.

use std::arch::x86_64::*;
use std::ops::Range;

use crate::kernels::acts::QuantActs;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{PANEL, PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::{run_grid, w4a8_panels};
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;
use crate::kernels::x86::prefetch::NextBlock;

/// AVX-512 VNNI W4A8 (decode GEMV; prefill GEMM where AMX is absent).
pub static W4A8_AVX512VNNI: Variant = Variant {
    name: "w4a8-avx512vnni",
    isa: "avx512vnni",
    unit: Unit::Avx512Vnni,
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
    let xs: [&[i8; GROUP]; R] = rows.map(|r| a.group(r, g));
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

/// AVX-512 VNNI W4A8 prefill GEMM: nibbles unpacked once per record, 6 × 64 `vpdpbusd`
/// register block.
pub static W4A8_GEMM_AVX512VNNI: Variant = Variant {
    name: "w4a8-gemm-avx512vnni",
    isa: "avx512vnni",
    unit: Unit::Avx512Vnni,
    phases: &[Phase::Prefill],
    requires: &[
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Avx512vnni,
        Feature::Fma,
    ],
    rank: 35,
    kernel: KernelFn::W4A8(w4a8_gemm_avx512vnni),
};

/// Below this many rows the GEMM runs the GEMV's panel kernel instead: with few 6-row
/// blocks per record, unpacking it costs more than re-reading it (paired A/B, 6144 × 2048,
/// 2 threads, Zen 4: the GEMV took 0.63 of the GEMM's time at M = 4 and 8, 0.99 at 12;
/// the GEMM took 0.90 of the GEMV's at 16 and 0.88 at 24).
pub(crate) const GEMM_MIN_M: usize = 12;
/// Rows per register block of the GEMM.
const GEMM_MR: usize = 6;
/// Rows per M chunk handed to one task (a multiple of [`GEMM_MR`]).
const GEMM_ROWS: usize = 32 * GEMM_MR;
/// k-quads per group: one unpacked row per quad.
pub(crate) const QUADS: usize = GROUP / 4;

/// One record unpacked: row `q` holds, for each of the 64 columns, the four u8 codes
/// k = 4q..4q+3 of the group (a `vpdpbusd` operand for 16 columns per 64 bytes); then the
/// 64 weight scales and zeros as f32. The AVX2 GEMM unpacks into the same block.
#[repr(C, align(64))]
pub(crate) struct Unpacked {
    pub(crate) codes: [u8; QUADS * 256],
    pub(crate) scale: [f32; PANEL],
    pub(crate) zero: [f32; PANEL],
}

/// # Safety
/// The CPU supports AVX-512 F/BW/VNNI and FMA; shapes as in `registry::W4A8Fn`.
unsafe fn w4a8_gemm_avx512vnni(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    let (m, k) = (a.m(), w.k());
    if m < GEMM_MIN_M {
        // SAFETY: same features and contract as the GEMV.
        return unsafe { w4a8_avx512vnni(pool, w, a, out) };
    }
    run_grid(
        pool,
        m,
        w.n(),
        w.panels(),
        w.groups(),
        1,
        GEMM_ROWS,
        out,
        |p, groups, r0, mr, tile| {
            let mut blk = Unpacked {
                codes: [0; QUADS * 256],
                scale: [0.0; PANEL],
                zero: [0.0; PANEL],
            };
            let end = groups.end;
            for (i, g) in groups.enumerate() {
                let next = (g + 1 < end).then(|| w.record(p, g + 1));
                // SAFETY: (both calls) the caller of w4a8_gemm_avx512vnni guarantees the ISA;
                // rows r0..r0+mr exist in `a` with K = w.k() ≥ 128(g+1) codes, and the tile
                // holds mr ≤ GEMM_ROWS rows of 64 f32 (run_grid).
                unsafe {
                    unpack(w.record(p, g), &mut blk);
                    gemm_rows(&blk, a, k, g, r0, mr, i > 0, tile, next);
                }
            }
        },
    );
}

/// Unpacks one record into `dst` (codes `& 15` and `>> 4 & 15`, scales and zeros to f32).
#[target_feature(enable = "avx512f,avx512bw")]
fn unpack(rec: &[u8], dst: &mut Unpacked) {
    assert!(rec.len() == RECORD_BYTES);
    let mask = _mm512_set1_epi8(0x0F);
    let base = rec.as_ptr();
    let out = dst.codes.as_mut_ptr();
    for o in 0..16 {
        for j in 0..4 {
            // SAFETY: reads o·256 + j·64 + 64 ≤ 4096 bytes of the record (asserted); writes
            // rows 2o and 2o+1 (< 32) at byte 64j of the 8 KB code block, 64-byte aligned.
            unsafe {
                let v = _mm512_loadu_si512(base.add(o * 256 + j * 64).cast());
                let lo = _mm512_and_si512(v, mask);
                let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(v), mask);
                _mm512_store_si512(out.add(2 * o * 256 + j * 64).cast(), lo);
                _mm512_store_si512(out.add((2 * o + 1) * 256 + j * 64).cast(), hi);
            }
        }
    }
    for j in 0..4 {
        let s = bf16x16(&rec[SCALE_OFFSET + 32 * j..][..32]);
        let z = bf16x16(&rec[ZERO_OFFSET + 32 * j..][..32]);
        // SAFETY: 16 f32 at column 16j < 64 of each array.
        unsafe {
            _mm512_storeu_ps(dst.scale.as_mut_ptr().add(16 * j), s);
            _mm512_storeu_ps(dst.zero.as_mut_ptr().add(16 * j), z);
        }
    }
}

/// Rows `r0..r0+mr` of group `g` against the unpacked record, into `tile` rows `0..mr`
/// (`add`: accumulate onto earlier groups, else overwrite). Meanwhile the next record of the
/// panel (`next`), which `unpack` reads from DRAM once these rows are done, is prefetched a
/// few lines per register block: without it, each record's unpack waits for DRAM with no
/// work to overlap (the blocks need the unpacked codes), 7 % of the kernel's time at
/// 1 and 2 threads on Zen 4 (6144 × 2048, M = 128, paired A/B).
///
/// # Safety
/// AVX-512 F/BW/VNNI and FMA; rows `r0..r0+mr` of `a` exist with `k` codes each and
/// `k ≥ 128(g+1)`; `tile` holds `mr` rows of 64 f32.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_rows(
    blk: &Unpacked,
    a: &QuantActs,
    k: usize,
    g: usize,
    r0: usize,
    mr: usize,
    add: bool,
    tile: &mut [f32],
    next: Option<&[u8]>,
) {
    assert!(tile.len() >= mr * PANEL && (r0 + mr) * k <= a.codes().len());
    let mut r = 0;
    let mut next = NextBlock::new(next);
    let per_block = next.lines().div_ceil(mr.div_ceil(GEMM_MR).max(1));
    while r < mr {
        next.advance(per_block);
        let rows = GEMM_MR.min(mr - r);
        let x = a.codes()[(r0 + r) * k + g * GROUP..].as_ptr();
        let c = &mut tile[r * PANEL..(r + rows) * PANEL];
        let rr = r0 + r;
        // SAFETY: `rows` rows of ≥ 128 codes at stride k from x (asserted bounds above).
        unsafe {
            match (rows, add) {
                (1, false) => micro_vnni::<1, false>(blk, x, k, a, rr, g, c),
                (1, true) => micro_vnni::<1, true>(blk, x, k, a, rr, g, c),
                (2, false) => micro_vnni::<2, false>(blk, x, k, a, rr, g, c),
                (2, true) => micro_vnni::<2, true>(blk, x, k, a, rr, g, c),
                (3, false) => micro_vnni::<3, false>(blk, x, k, a, rr, g, c),
                (3, true) => micro_vnni::<3, true>(blk, x, k, a, rr, g, c),
                (4, false) => micro_vnni::<4, false>(blk, x, k, a, rr, g, c),
                (4, true) => micro_vnni::<4, true>(blk, x, k, a, rr, g, c),
                (5, false) => micro_vnni::<5, false>(blk, x, k, a, rr, g, c),
                (5, true) => micro_vnni::<5, true>(blk, x, k, a, rr, g, c),
                (_, false) => micro_vnni::<GEMM_MR, false>(blk, x, k, a, rr, g, c),
                (_, true) => micro_vnni::<GEMM_MR, true>(blk, x, k, a, rr, g, c),
            }
        }
        r += rows;
    }
    next.finish();
}

/// R rows × 64 columns of one group: 32 quads of broadcast + `vpdpbusd`, then the f32
/// epilogue `c (+)= (D − z·A)·(s_w·s_a)`.
///
/// # Safety
/// AVX-512 F/BW/VNNI and FMA enabled; `x` holds R rows of ≥ 128 codes at stride `lda`;
/// rows `row0..row0+R` exist in `a`; `c` holds R rows of 64 f32.
#[inline(always)]
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
unsafe fn micro_vnni<const R: usize, const ADD: bool>(
    blk: &Unpacked,
    x: *const i8,
    lda: usize,
    a: &QuantActs,
    row0: usize,
    g: usize,
    c: &mut [f32],
) {
    let w = blk.codes.as_ptr();
    // SAFETY: (whole body) quads q < 32 read rows of the 8 KB block and dwords 4q < 128 of
    // each activation row; c holds R·64 f32 (contract).
    unsafe {
        let mut d = [[_mm512_setzero_si512(); 4]; R];
        for q in 0..QUADS {
            let row = w.add(q * 256);
            let wv: [__m512i; 4] =
                core::array::from_fn(|j| _mm512_load_si512(row.add(64 * j).cast()));
            for r in 0..R {
                let xv = _mm512_set1_epi32(x.add(r * lda + 4 * q).cast::<i32>().read_unaligned());
                for j in 0..4 {
                    d[r][j] = _mm512_dpbusd_epi32(d[r][j], wv[j], xv);
                }
            }
        }
        for r in 0..R {
            let va = _mm512_set1_ps(a.sum(row0 + r, g) as f32);
            let vs = _mm512_set1_ps(a.scale(row0 + r, g));
            for j in 0..4 {
                let sw = _mm512_loadu_ps(blk.scale.as_ptr().add(16 * j));
                let z = _mm512_loadu_ps(blk.zero.as_ptr().add(16 * j));
                let t = _mm512_fnmadd_ps(z, va, _mm512_cvtepi32_ps(d[r][j]));
                let dst = c.as_mut_ptr().add(r * PANEL + 16 * j);
                let prev = if ADD {
                    _mm512_loadu_ps(dst)
                } else {
                    _mm512_setzero_ps()
                };
                _mm512_storeu_ps(dst, _mm512_fmadd_ps(t, _mm512_mul_ps(sw, vs), prev));
            }
        }
    }
}
