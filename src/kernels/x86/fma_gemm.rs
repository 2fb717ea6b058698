//! The AVX2 + FMA prefill GEMM shared by W4A16 and bf16 (`w4a16-gemm-avx2`,
//! `bf16-gemm-avx2`): the counterpart of `x86/dpbf16.rs` for hosts without AVX-512, where
//! prefill otherwise ran the GEMVs once per 4-row block and re-prepared every weight chunk.
//!
//! A **block** is one (panel, half-group): 64 k × 64 columns of f32 = 16 KB, row-major
//! `[k][64]`, 64-byte aligned on the stack, so it fits next to the activations in a 32 KB L1.
//! Each task prepares a block once per M chunk of [`ROWS`] rows ([`F32Source::fill`]): W4A16
//! dequantizes the record half, `w = fma(q, s, −z·s)` ([`Dequant`]); bf16 widens its packed
//! pair rows (`x << 16` even k, `x & 0xFFFF0000` odd k, [`Widen`]). Then every row of the
//! chunk passes over it.
//!
//! Microkernel: [`MR`] = 6 rows × 16 columns = 12 ymm accumulators; per k two aligned
//! 32-byte weight loads and six `vbroadcastss` of the rows' f32 activations, 12 FMAs. Loop
//! order per block: row blocks of 6 outer, the four 16-column blocks inner (the 6 rows'
//! 64 activations stay in L1 across them). The sums over the block's 64 k are stored (first
//! block of the task) or added into the f32 `[rows][64]` tile of the work splitter. Left-over
//! rows run as blocks of 1..5 (7 as 4 + 3); 1- to 3-row blocks rotate 4 or 2 accumulator
//! sets over consecutive k for more independent FMA chains.
//!
//! While the rows of one block run, the source bytes of the next block (the W4 record, or
//! the 8 KB of bf16 pair rows) are prefetched into L1, spread over the row blocks
//! ([`NextBlock`], as in `dpbf16.rs`).
//!
//! Activations are converted once per call to f32 with denormals flushed (as everywhere on
//! the float paths; no rescaling: the weights are dequantized, there is no zero fold here),
//! in block-major order so that a register block's rows are adjacent ([`with_packed`]).
//!
//! Small M: preparing each block pays only over enough rows, so below [`W4A16_MIN_M`] /
//! [`BF16_MIN_M`] the entry points run their path's AVX2 GEMV instead. Measured with the
//! GEMM forced at every M (paired A/B, `kernels_ab 2 <gemv>,<gemm> 6144x2048 M`, 2 threads,
//! Zen 2 EPYC family 23 model 49, 2026-12-01), the GEMM's time / the GEMV's:
//!
//! | M | 2 | 3 | 4 | 8 | 9 | 10 | 12 | 16 | 24 | 32 | 128 |
//! |---|---|---|---|---|---|---|---|---|---|---|---|
//! | W4A16 | | | 1.49 | 1.01 | 0.89 | 0.93 | 0.91 | 0.89 | 0.81 | 0.79 | 0.74 |
//! | bf16 | 0.99 | 0.74 | 0.79 | 0.77 | | | 0.72 | 0.76 | 0.68 | 0.66 | 0.66 |
//!
//! (M ≤ 4 is decode, served by the GEMVs anyway unless a GEMM is forced.)

use core::arch::x86_64::*;
use std::cell::RefCell;

use crate::kernels::acts::Bf16Rows;
use crate::kernels::buf::AlignedBuf;
use crate::kernels::pack::{PackedBf16, PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::{PANEL, run_grid};
use crate::kernels::pool::ThreadPool;
use crate::kernels::x86::lanes::{Avx2, Lanes16};
use crate::kernels::x86::prefetch::NextBlock;

/// Rows below which `w4a16-gemm-avx2` runs `w4a16-gemv-avx2` (module docs: the GEMM took
/// 1.01 of the GEMV's time at M = 8, 0.89 at 9).
pub(crate) const W4A16_MIN_M: usize = 9;
/// Rows below which `bf16-gemm-avx2` runs `bf16-gemv-avx2` (0.99 at M = 2, 0.74 at 3).
pub(crate) const BF16_MIN_M: usize = 3;

/// k per block (half a 128-group).
pub(crate) const KB: usize = 64;
/// Rows per register block.
const MR: usize = 6;
/// Rows per M chunk handed to one task (a multiple of [`MR`]); each block is prepared once
/// per chunk.
const ROWS: usize = 32 * MR;
/// Smallest K split (in blocks) worth a separate task.
const MIN_SPLIT_BLOCKS: usize = 2;
/// f32 values of one block.
const BLOCK_F32: usize = KB * PANEL;

/// One block's storage, cache-line aligned.
#[repr(C, align(64))]
pub(crate) struct Block(pub(crate) [f32; BLOCK_F32]);

/// Where a task gets the f32 block of (panel, half-group).
pub(crate) trait F32Source: Sync {
    /// Fills `dst` with block `half` of `panel`: row `kk` = weights of k = 64·half + kk for
    /// the panel's 64 columns.
    fn fill(&self, panel: usize, half: usize, dst: &mut Block);
    /// The packed bytes to prefetch before `fill(panel, half, ..)` (may be empty when an
    /// earlier block's prefetch covered them).
    fn source(&self, panel: usize, half: usize) -> &[u8];
}

/// The whole GEMM `out[M][N] = x · Wᵀ` over `panels` 64-column panels and K/64 blocks, on
/// the one work splitter ([`run_grid`]: panels × split-K, M chunks of [`ROWS`] rows).
/// Computes nothing unless `out.len() == x.m · n` and K is a multiple of [`KB`].
pub(crate) fn gemm<S: F32Source>(
    v: Avx2,
    pool: &ThreadPool,
    x: Bf16Rows<'_>,
    n: usize,
    panels: usize,
    src: &S,
    out: &mut [f32],
) {
    let (m, k) = (x.m, x.k);
    if !k.is_multiple_of(KB) {
        return;
    }
    with_packed(v, x, |act| {
        run_grid(
            pool,
            m,
            n,
            panels,
            k / KB,
            MIN_SPLIT_BLOCKS,
            ROWS,
            out,
            |p, blocks, r0, mr, tile| {
                let mut blk = Block([0.0; BLOCK_F32]);
                let end = blocks.end;
                for (i, h) in blocks.enumerate() {
                    src.fill(p, h, &mut blk);
                    let mut next = NextBlock::new((h + 1 < end).then(|| src.source(p, h + 1)));
                    let a = &act[(h * m + r0) * KB..];
                    // SAFETY: `v` proves AVX2 + FMA; the slices are bounds-checked inside.
                    unsafe { block_rows(v, &blk, a, KB, mr, i > 0, tile, &mut next) };
                    next.finish();
                }
            },
        );
    });
}

thread_local! {
    static PACKED: RefCell<AlignedBuf<f32>> = RefCell::new(AlignedBuf::zeroed(0));
}

/// Runs `f` on the activations of `x` as f32 in block-major order (`[K/64][M][64]`: the
/// 64 k of block `h` for row `r` at `(h·M + r)·64`), in a per-thread buffer kept across
/// calls. A register block's rows are then adjacent 256-byte runs: with the rows K f32
/// apart (K = 2048: 8 KB, a multiple of the 4 KB L1 set stride), the six rows of a block
/// fell into the same four L1 sets and the GEMM ran 4 % slower per MAC than at K = 1920 or
/// 2176 (M = 128, 1 thread, 6144 columns). And this one AVX2 pass takes 29 µs at 128 × 2048,
/// the general `with_act` preparation (Σa, bf16 copies) 478 µs, 2.6 % of the GEMM's time
/// on the calling thread alone; the GEMM needs only the flush.
fn with_packed<R>(v: Avx2, x: Bf16Rows<'_>, f: impl FnOnce(&[f32]) -> R) -> R {
    let len = x.m * x.k;
    let run = |buf: &mut AlignedBuf<f32>| {
        buf.ensure_len(len);
        // SAFETY: `v` proves AVX2.
        unsafe { pack_acts(v, x, &mut buf[..len]) };
        f(&buf[..len])
    };
    PACKED.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => run(&mut buf),
        Err(_) => run(&mut AlignedBuf::zeroed(len)),
    })
}

/// bf16 rows → f32 in block-major order, denormals flushed to signed zero (as
/// [`bf16_to_f32_daz`](crate::kernels::bf16_act::bf16_to_f32_daz), kernels.md pitfall 7).
#[target_feature(enable = "avx2")]
fn pack_acts(_v: Avx2, x: Bf16Rows<'_>, dst: &mut [f32]) {
    let (m, k) = (x.m, x.k);
    assert!(k.is_multiple_of(KB) && x.data.len() == m * k && dst.len() == m * k);
    let (src, out) = (x.data.as_ptr().cast::<u16>(), dst.as_mut_ptr());
    let exp = _mm256_set1_epi32(0x7F80_0000);
    let sign = _mm256_set1_epi32(i32::MIN);
    for r in 0..m {
        for h in 0..k / KB {
            for e in 0..KB / 8 {
                // SAFETY: reads 8 bf16 at r·k + 64h + 8e < m·k, writes 8 f32 at
                // (h·m + r)·64 + 8e < m·k (asserted lengths); AVX2 is enabled here.
                unsafe {
                    let raw = _mm_loadu_si128(src.add(r * k + h * KB + 8 * e).cast());
                    let bits = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(raw));
                    let denormal =
                        _mm256_cmpeq_epi32(_mm256_and_si256(bits, exp), _mm256_setzero_si256());
                    let flushed = _mm256_blendv_epi8(bits, _mm256_and_si256(bits, sign), denormal);
                    _mm256_storeu_si256(out.add((h * m + r) * KB + 8 * e).cast(), flushed);
                }
            }
        }
    }
}

/// Rows `0..rows` of one block into `tile` (`add`: accumulate, else overwrite); `a` starts
/// at the block's first k of row 0, rows `lda` apart.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
fn block_rows(
    _v: Avx2,
    b: &Block,
    a: &[f32],
    lda: usize,
    rows: usize,
    add: bool,
    tile: &mut [f32],
    next: &mut NextBlock<'_>,
) {
    if rows == 0 {
        return;
    }
    assert!(a.len() >= (rows - 1) * lda + KB && tile.len() >= rows * PANEL);
    let per_block = next.lines().div_ceil(rows.div_ceil(MR));
    let (b, a, c) = (b.0.as_ptr(), a.as_ptr(), tile.as_mut_ptr());
    let mut r = 0;
    while r < rows {
        next.advance(per_block);
        // 7 rows as 4 + 3 (6 + 1 would leave a load-bound single row).
        let take = match rows - r {
            7 => 4,
            left => left.min(MR),
        };
        // SAFETY: rows r..r+take < rows of `a` (KB values each) and of the tile exist
        // (asserted); the block is 64-byte aligned with KB rows of PANEL f32; the features
        // are enabled on this function.
        unsafe {
            let (a, c) = (a.add(r * lda), c.add(r * PANEL));
            match take {
                1 => micro::<1>(b, a, lda, c, add),
                2 => micro::<2>(b, a, lda, c, add),
                3 => micro::<3>(b, a, lda, c, add),
                4 => micro::<4>(b, a, lda, c, add),
                5 => micro::<5>(b, a, lda, c, add),
                _ => micro::<MR>(b, a, lda, c, add),
            }
        }
        r += take;
    }
}

/// `c[r][0..64] (+)= Σ_kk a[r][kk] · b[kk][0..64]` for `R` rows, one 16-column block at a
/// time (the `R` rows' activations stay in L1 across the four).
///
/// # Safety
///
/// AVX2 and FMA enabled in the caller; `b` holds [`KB`] rows of [`PANEL`] f32, 32-byte
/// aligned; `a` holds `R` rows of at least [`KB`] f32 at stride `lda`; `c` holds `R` rows
/// of [`PANEL`] f32.
// Index loops mirror the register blocking (rows × halves) on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn micro<const R: usize>(b: *const f32, a: *const f32, lda: usize, c: *mut f32, add: bool) {
    // Small blocks rotate accumulator sets over consecutive k for more independent FMA
    // chains (Zen 2: 5-cycle FMA latency × 2 pipes wants 10): 1 row 4 sets (8 chains),
    // 2 and 3 rows 2 sets (8 and 12 chains).
    let sets = match R {
        1 => 4,
        2 | 3 => 2,
        _ => 1,
    };
    // SAFETY: (whole body) offsets stay inside the block, the R activation rows and the R
    // tile rows (contract above).
    unsafe {
        for j in 0..PANEL / 16 {
            let bj = b.add(16 * j);
            let mut acc = [[[_mm256_setzero_ps(); 2]; R]; 4];
            for k4 in 0..KB / 4 {
                for u in 0..4 {
                    let kk = 4 * k4 + u;
                    let s = u % sets;
                    let row = bj.add(kk * PANEL);
                    let w = [_mm256_load_ps(row), _mm256_load_ps(row.add(8))];
                    for r in 0..R {
                        let x = _mm256_broadcast_ss(&*a.add(r * lda + kk));
                        for h in 0..2 {
                            acc[s][r][h] = _mm256_fmadd_ps(w[h], x, acc[s][r][h]);
                        }
                    }
                }
            }
            for r in 0..R {
                for h in 0..2 {
                    let mut sum = acc[0][r][h];
                    for set in &acc[1..sets] {
                        sum = _mm256_add_ps(sum, set[r][h]);
                    }
                    let dst = c.add(r * PANEL + 16 * j + 8 * h);
                    let v = if add {
                        _mm256_add_ps(_mm256_loadu_ps(dst), sum)
                    } else {
                        sum
                    };
                    _mm256_storeu_ps(dst, v);
                }
            }
        }
    }
}

/// Bytes of codes per octet (8 k) of a W4 record: 4 sub-blocks × 64 B.
const OCTET_BYTES: usize = 256;
/// Octets per block (64 k).
const BLOCK_OCTETS: usize = KB / 8;

/// W4A16 blocks: each record half dequantized to f32, `w = fma(q, s, −z·s)`.
pub(crate) struct Dequant<'a> {
    v: Avx2,
    w: &'a PackedW4,
}

impl<'a> Dequant<'a> {
    pub(crate) fn new(v: Avx2, w: &'a PackedW4) -> Self {
        Dequant { v, w }
    }
}

impl F32Source for Dequant<'_> {
    fn fill(&self, panel: usize, half: usize, dst: &mut Block) {
        let rec = self.w.record(panel, half / 2);
        // SAFETY: `self.v` proves AVX2 + FMA.
        unsafe { dequant_half(self.v, rec, half % 2, dst) };
    }
    /// The whole record before its first half (its scales and zeros included), nothing
    /// before the second.
    fn source(&self, panel: usize, half: usize) -> &[u8] {
        let rec = self.w.record(panel, half / 2);
        if half.is_multiple_of(2) {
            rec
        } else {
            &rec[..0]
        }
    }
}

/// Half `half` (k = 64·half..64·half + 64 of the group) of one P64·G128 record into `dst`:
/// octet `o` holds k = 8o + t as `code(x, t)` for t in 0..8, 16 columns per 64-byte chunk.
#[target_feature(enable = "avx2,fma")]
fn dequant_half(v: Avx2, rec: &[u8], half: usize, dst: &mut Block) {
    assert!(rec.len() >= RECORD_BYTES && half < 2);
    let (src, out) = (rec.as_ptr(), dst.0.as_mut_ptr());
    // SAFETY: reads stay inside the record (asserted: octets 8·half..8·half + 8 < 16 and the
    // scale/zero rows), writes inside the block (row 8o' + t < 64, 16 f32 at column 16j);
    // the features are enabled here.
    unsafe {
        for j in 0..PANEL / 16 {
            let s = v.load_bf16(src.add(SCALE_OFFSET + 32 * j).cast());
            let z = v.load_bf16(src.add(ZERO_OFFSET + 32 * j).cast());
            let neg_zs = v.sub(v.zero(), v.mul(z, s));
            for o in 0..BLOCK_OCTETS {
                let chunk = src.add((BLOCK_OCTETS * half + o) * OCTET_BYTES + 64 * j);
                let x = v.prep(v.load_i(chunk));
                for t in 0..8 {
                    let w = v.fma(v.code(x, t), s, neg_zs);
                    v.store_f(out.add((8 * o + t) * PANEL + 16 * j), w);
                }
            }
        }
    }
}

/// Bytes of one packed bf16 pair row (64 columns × 2 bf16).
const PAIR_ROW_BYTES: usize = 256;
/// Packed bf16 bytes of one block (32 pair rows).
const BF16_BLOCK_BYTES: usize = KB / 2 * PAIR_ROW_BYTES;

/// bf16 blocks: 32 packed pair rows widened to 64 f32 rows.
pub(crate) struct Widen<'a> {
    v: Avx2,
    w: &'a PackedBf16,
}

impl<'a> Widen<'a> {
    pub(crate) fn new(v: Avx2, w: &'a PackedBf16) -> Self {
        Widen { v, w }
    }
}

impl F32Source for Widen<'_> {
    fn fill(&self, panel: usize, half: usize, dst: &mut Block) {
        // SAFETY: `self.v` proves AVX2 + FMA.
        unsafe { widen(self.v, self.source(panel, half), dst) };
    }
    fn source(&self, panel: usize, half: usize) -> &[u8] {
        let k = self.w.k();
        let start = panel * PANEL * k + half * BF16_BLOCK_BYTES / 2;
        let blk = &self.w.as_slice()[start..start + BF16_BLOCK_BYTES / 2];
        // SAFETY: `Bf16` is `repr(transparent)` over `u16`, so the block's values are
        // BF16_BLOCK_BYTES readable bytes with the same lifetime.
        unsafe { core::slice::from_raw_parts(blk.as_ptr().cast::<u8>(), BF16_BLOCK_BYTES) }
    }
}

/// 32 pair rows (row p: `(w[2p], w[2p+1])` per column) into 64 f32 rows.
#[target_feature(enable = "avx2,fma")]
fn widen(v: Avx2, rows: &[u8], dst: &mut Block) {
    assert!(rows.len() >= BF16_BLOCK_BYTES);
    let (src, out) = (rows.as_ptr(), dst.0.as_mut_ptr());
    // SAFETY: reads pair row p < 32 at 64-byte chunk j < 4 (asserted length), writes rows
    // 2p and 2p + 1 < 64 of the block at column 16j; the features are enabled here.
    unsafe {
        for p in 0..KB / 2 {
            for j in 0..PANEL / 16 {
                let x = v.load_i(src.add(p * PAIR_ROW_BYTES + 64 * j));
                v.store_f(out.add(2 * p * PANEL + 16 * j), v.bf16_lo(x));
                v.store_f(out.add((2 * p + 1) * PANEL + 16 * j), v.bf16_hi(x));
            }
        }
    }
}
