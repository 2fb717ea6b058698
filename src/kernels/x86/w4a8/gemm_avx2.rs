//! W4A8 prefill GEMM on AVX2 (`w4a8-gemm-avx2`), for x86 hosts without AVX-512 VNNI.
//!
//! As `w4a8-gemm-avx512vnni`, each (panel, group) record is unpacked once per M chunk into
//! an 8 KB block of u8 codes (row `q` = the codes k = 4q..4q+3 of all 64 columns, four bytes
//! per column) that stays in L1 while every row of the chunk passes over it, and the next
//! record is prefetched meanwhile. The register block is `R` rows × 16 columns (two ymm):
//! per quad, `vpmaddubsw` (u8 codes × s8 activations, two products per i16) adds into i16
//! accumulators; every 8 quads `vpmaddwd` against ones folds them into i32. The i16 sums
//! stay exact: 8 quads × 2 products × 15 × 127 = 30 480 < 32 767 (codes ≤ 15, activations
//! clamped to ±127). After the group, the f32 zero fold `c (+)= (D − z·A)·(s_w·s_a)`.
//! Below [`GEMM_MIN_M`] rows it runs the AVX2 GEMV (`w4a8-avx2`). Two variants share this
//! code: `w4a8-gemm-avx2` with the inner loop in intrinsics, and `w4a8-gemm-avx2-asm` with
//! the 2-row inner loop in `asm!`.

use std::arch::x86_64::*;

use super::avx2::W4A8_AVX2;
use super::avx512vnni::{QUADS, Unpacked};
use crate::kernels::acts::QuantActs;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{PANEL, PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::run_grid;
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;
use crate::kernels::x86::prefetch::NextBlock;

/// AVX2 W4A8 prefill GEMM.
pub static W4A8_GEMM_AVX2: Variant = Variant {
    name: "w4a8-gemm-avx2",
    isa: "avx2",
    unit: Unit::Avx2Int8,
    phases: &[Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 12,
    kernel: KernelFn::W4A8(w4a8_gemm_avx2::<false>),
};

/// The same GEMM with its 2-row inner loop written out in `asm!` ([`two_rows`]): each
/// quad's products go straight into their accumulator, in the order written. From the
/// intrinsics LLVM regroups the eight quads' adds into trees that keep more products live,
/// runs out of the 16 ymm registers and reloads the ones vector at every fold. Measured on
/// an AVX2-only Zen 1 (AMD EPYC family 23 model 1, 2 threads, `edgeplan bench`, runs
/// alternated three times): prefill 75-78 % of the `avx2-int8` peak against 71-72 %.
/// Ranked above the intrinsics version; `bench` races the two on each host.
pub static W4A8_GEMM_AVX2_ASM: Variant = Variant {
    name: "w4a8-gemm-avx2-asm",
    isa: "avx2",
    unit: Unit::Avx2Int8,
    phases: &[Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 13,
    kernel: KernelFn::W4A8(w4a8_gemm_avx2::<true>),
};

/// Below this many rows the GEMV runs instead (paired A/B, 6144 × 2048, 2 threads, Zen 4:
/// the GEMV took 0.66 and 0.73 of the GEMM's time at M = 2 and 4; the GEMM 0.61 of the
/// GEMV's at 5, 0.57 at 6, 0.59 at 8 and 0.74 at 128).
pub(crate) const GEMM_MIN_M: usize = 5;
/// Rows per register block: 2 × 2 i16 and 2 × 2 i32 accumulators, two weight vectors,
/// one broadcast and the ones vector: 12 of the 16 ymm registers (3 rows, all 16, ran
/// 7 % slower on Zen 4).
const MR: usize = 2;
/// Rows per M chunk handed to one task.
const ROWS: usize = 96;
/// Quads summed in i16 before widening (8 × 3810 ≤ 32 767).
const I16_QUADS: usize = 8;

/// # Safety
/// The CPU supports AVX2 and FMA; shapes as in `registry::W4A8Fn`.
unsafe fn w4a8_gemm_avx2<const ASM: bool>(
    pool: &ThreadPool,
    w: &PackedW4,
    a: &QuantActs,
    out: &mut [f32],
) {
    let (m, k) = (a.m(), w.k());
    if m < GEMM_MIN_M {
        let KernelFn::W4A8(gemv) = W4A8_AVX2.kernel else {
            return;
        };
        // SAFETY: the GEMV needs AVX2 + FMA, this function's contract, and the same shapes.
        return unsafe { gemv(pool, w, a, out) };
    }
    run_grid(
        pool,
        m,
        w.n(),
        w.panels(),
        w.groups(),
        1,
        ROWS,
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
                // SAFETY: (both calls) the caller guarantees AVX2 + FMA; rows r0..r0+mr exist
                // in `a` with K = w.k() ≥ 128(g+1) codes, and the tile holds mr ≤ ROWS rows
                // of 64 f32 (run_grid).
                unsafe {
                    unpack(w.record(p, g), &mut blk);
                    gemm_rows::<ASM>(&blk, a, k, g, r0, mr, i > 0, tile, next);
                }
            }
        },
    );
}

/// Unpacks one record into `dst` (codes `& 15` and `>> 4 & 15`, scales and zeros to f32).
#[target_feature(enable = "avx2")]
fn unpack(rec: &[u8], dst: &mut Unpacked) {
    assert!(rec.len() == RECORD_BYTES);
    let mask = _mm256_set1_epi8(0x0F);
    let base = rec.as_ptr();
    let out = dst.codes.as_mut_ptr();
    for o in 0..16 {
        for half in 0..8 {
            // SAFETY: reads o·256 + 32·half + 32 ≤ 4096 bytes of the record (asserted);
            // writes rows 2o and 2o+1 (< 32) at byte 32·half of the 8 KB code block.
            unsafe {
                let v = _mm256_loadu_si256(base.add(o * 256 + half * 32).cast());
                let lo = _mm256_and_si256(v, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask);
                _mm256_store_si256(out.add(2 * o * 256 + half * 32).cast(), lo);
                _mm256_store_si256(out.add((2 * o + 1) * 256 + half * 32).cast(), hi);
            }
        }
    }
    for (c, (s, z)) in dst.scale.iter_mut().zip(dst.zero.iter_mut()).enumerate() {
        let bf = |off: usize| {
            let bits = u16::from_le_bytes([rec[off + 2 * c], rec[off + 2 * c + 1]]);
            f32::from_bits((bits as u32) << 16)
        };
        *s = bf(SCALE_OFFSET);
        *z = bf(ZERO_OFFSET);
    }
}

/// Rows `r0..r0+mr` of group `g` against the unpacked record, into `tile` rows `0..mr`
/// (`add`: accumulate onto earlier groups), prefetching `next` meanwhile.
///
/// # Safety
/// AVX2 and FMA; rows `r0..r0+mr` of `a` exist with `k` codes each and `k ≥ 128(g+1)`;
/// `tile` holds `mr` rows of 64 f32.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_rows<const ASM: bool>(
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
    let mut next = NextBlock::new(next);
    let per_block = next.lines().div_ceil(mr.div_ceil(MR).max(1));
    let mut r = 0;
    while r < mr {
        next.advance(per_block);
        let rows = MR.min(mr - r);
        let x = a.codes()[(r0 + r) * k + g * GROUP..].as_ptr();
        let c = &mut tile[r * PANEL..(r + rows) * PANEL];
        for cp in 0..PANEL / 16 {
            // SAFETY: `rows` rows of ≥ 128 codes at stride k from x (asserted above);
            // column pair cp < 4 of the block and of the tile rows.
            unsafe {
                match (rows, add) {
                    (1, false) => micro::<1, false, ASM>(blk, x, k, a, r0 + r, g, cp, c),
                    (1, true) => micro::<1, true, ASM>(blk, x, k, a, r0 + r, g, cp, c),
                    (_, false) => micro::<MR, false, ASM>(blk, x, k, a, r0 + r, g, cp, c),
                    (_, true) => micro::<MR, true, ASM>(blk, x, k, a, r0 + r, g, cp, c),
                }
            }
        }
        r += rows;
    }
    next.finish();
}

/// R rows × 16 columns (column pair `cp`: columns 16cp..16cp+16) of one group, then the
/// f32 epilogue into `c` (R rows of 64 f32).
///
/// # Safety
/// AVX2 and FMA enabled; `x` holds R rows of ≥ 128 codes at stride `lda`; rows
/// `row0..row0+R` exist in `a`; `c` holds R rows of 64 f32; `cp < 4`.
#[inline(always)]
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
unsafe fn micro<const R: usize, const ADD: bool, const ASM: bool>(
    blk: &Unpacked,
    x: *const i8,
    lda: usize,
    a: &QuantActs,
    row0: usize,
    g: usize,
    cp: usize,
    c: &mut [f32],
) {
    // SAFETY: (whole body) c holds R·64 f32 and the block's scales and zeros 64 (contract).
    unsafe {
        let d = group_sums::<R, ASM>(blk.codes.as_ptr().add(64 * cp), x, lda);
        for r in 0..R {
            let va = _mm256_set1_ps(a.sum(row0 + r, g) as f32);
            let vs = _mm256_set1_ps(a.scale(row0 + r, g));
            for h in 0..2 {
                let col = 16 * cp + 8 * h;
                let sw = _mm256_loadu_ps(blk.scale.as_ptr().add(col));
                let z = _mm256_loadu_ps(blk.zero.as_ptr().add(col));
                let t = _mm256_fnmadd_ps(z, va, _mm256_cvtepi32_ps(d[r][h]));
                let dst = c.as_mut_ptr().add(r * PANEL + col);
                let prev = if ADD {
                    _mm256_loadu_ps(dst)
                } else {
                    _mm256_setzero_ps()
                };
                _mm256_storeu_ps(dst, _mm256_fmadd_ps(t, _mm256_mul_ps(sw, vs), prev));
            }
        }
    }
}

/// i32 sums of R rows × 16 columns (`[row][half]`) over one group: `w` is the code block
/// at the column pair's byte offset, `x` the first row's codes of the group.
///
/// # Safety
/// AVX2 enabled; quads q < 32 read 64 bytes at `w + 256q`, `w` 32-byte aligned; `x` holds
/// R rows of ≥ 128 codes at stride `lda`.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
unsafe fn group_sums<const R: usize, const ASM: bool>(
    w: *const u8,
    x: *const i8,
    lda: usize,
) -> [[__m256i; 2]; R] {
    // SAFETY: (whole body) reads within the block and rows as the contract states.
    unsafe {
        let mut d = [[_mm256_setzero_si256(); 2]; R];
        if ASM && R == 2 {
            let [d0, d1] = two_rows(w, x, lda);
            d[0] = d0;
            d[R - 1] = d1;
            return d;
        }
        let ones = _mm256_set1_epi16(1);
        for q8 in 0..QUADS / I16_QUADS {
            let mut s = [[_mm256_setzero_si256(); 2]; R];
            for u in 0..I16_QUADS {
                let q = q8 * I16_QUADS + u;
                let row = w.add(q * 256);
                let wv = [
                    _mm256_load_si256(row.cast()),
                    _mm256_load_si256(row.add(32).cast()),
                ];
                for r in 0..R {
                    let xv =
                        _mm256_set1_epi32(x.add(r * lda + 4 * q).cast::<i32>().read_unaligned());
                    for h in 0..2 {
                        s[r][h] = _mm256_add_epi16(s[r][h], _mm256_maddubs_epi16(wv[h], xv));
                    }
                }
            }
            for r in 0..R {
                for h in 0..2 {
                    d[r][h] = _mm256_add_epi32(d[r][h], _mm256_madd_epi16(s[r][h], ones));
                }
            }
        }
        d
    }
}

/// Two rows × 16 columns over one group: i32 sums `[row][half]`. Per quad: two weight
/// loads, one broadcast per row, four `vpmaddubsw` each added into its i16 accumulator;
/// every 8 quads the four are folded into i32 with `vpmaddwd` against ones (a
/// sign-extending fold, `vextracti128` + `vpmovsxwd`, measured 11 % slower on Zen 1).
///
/// # Safety
/// As [`group_sums`] with R = 2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn two_rows(w: *const u8, x: *const i8, lda: usize) -> [[__m256i; 2]; 2] {
    let ones = _mm256_set1_epi16(1);
    let (mut d00, mut d01, mut d10, mut d11) = (
        _mm256_setzero_si256(),
        _mm256_setzero_si256(),
        _mm256_setzero_si256(),
        _mm256_setzero_si256(),
    );
    // SAFETY: reads 32 quads × 64 bytes of the code block from w (rows at 256-byte stride;
    // `vmovdqa` needs w 32-byte aligned: the block is 64-aligned and w is at a multiple of 64
    // in it) and 128 bytes of each of the two activation rows x, x + lda (the caller's
    // contract); AVX2 is enabled on this function; no memory is written, the stack is untouched.
    unsafe {
        core::arch::asm!(
            "2:",
            "vpxor {s00}, {s00}, {s00}",
            "vpxor {s01}, {s01}, {s01}",
            "vpxor {s10}, {s10}, {s10}",
            "vpxor {s11}, {s11}, {s11}",
            ".irp u,0,1,2,3,4,5,6,7",
            "vmovdqa {w0}, ymmword ptr [{w} + 256*\\u]",
            "vmovdqa {w1}, ymmword ptr [{w} + 256*\\u + 32]",
            "vpbroadcastd {b0}, dword ptr [{x0} + 4*\\u]",
            "vpbroadcastd {b1}, dword ptr [{x1} + 4*\\u]",
            "vpmaddubsw {t0}, {w0}, {b0}",
            "vpaddw {s00}, {s00}, {t0}",
            "vpmaddubsw {t1}, {w1}, {b0}",
            "vpaddw {s01}, {s01}, {t1}",
            "vpmaddubsw {t0}, {w0}, {b1}",
            "vpaddw {s10}, {s10}, {t0}",
            "vpmaddubsw {t1}, {w1}, {b1}",
            "vpaddw {s11}, {s11}, {t1}",
            ".endr",
            "vpmaddwd {t0}, {s00}, {ones}",
            "vpaddd {d00}, {d00}, {t0}",
            "vpmaddwd {t1}, {s01}, {ones}",
            "vpaddd {d01}, {d01}, {t1}",
            "vpmaddwd {t0}, {s10}, {ones}",
            "vpaddd {d10}, {d10}, {t0}",
            "vpmaddwd {t1}, {s11}, {ones}",
            "vpaddd {d11}, {d11}, {t1}",
            "add {w}, 2048",
            "add {x0}, 32",
            "add {x1}, 32",
            "dec {n:e}",
            "jnz 2b",
            w = inout(reg) w => _,
            x0 = inout(reg) x => _,
            x1 = inout(reg) x.add(lda) => _,
            n = inout(reg) (QUADS / I16_QUADS) as u32 => _,
            ones = in(ymm_reg) ones,
            d00 = inout(ymm_reg) d00,
            d01 = inout(ymm_reg) d01,
            d10 = inout(ymm_reg) d10,
            d11 = inout(ymm_reg) d11,
            s00 = out(ymm_reg) _,
            s01 = out(ymm_reg) _,
            s10 = out(ymm_reg) _,
            s11 = out(ymm_reg) _,
            w0 = out(ymm_reg) _,
            w1 = out(ymm_reg) _,
            b0 = out(ymm_reg) _,
            b1 = out(ymm_reg) _,
            t0 = out(ymm_reg) _,
            t1 = out(ymm_reg) _,
            options(nostack, readonly),
        );
    }
    [[d00, d01], [d10, d11]]
}
