//! The AVX-512-BF16 prefill GEMM shared by W4A16 and bf16 (kernels.md §4.5–4.6, non-AMX
//! prefill): a register-blocked `vdpbf16ps` microkernel over blocks of bf16 pairs.
//!
//! A **block** is one 128-k group of one 64-column panel in VNNI-2 order: 64 rows of 256
//! bytes, row `p` holding for each column `c` the pair `(w[k0+2p][c], w[k0+2p+1][c])` at
//! bytes `4c..4c+4` (the [`PackedBf16`](crate::kernels::pack::PackedBf16) panel layout, so
//! bf16 weights are used in place; W4A16 dequantizes each record once into a 16 KB block on
//! the stack, which then stays in L1 for every row of the M chunk).
//!
//! Microkernel: [`MR`] = 6 rows × 64 columns = 24 zmm accumulators; per pair row, 4 weight
//! loads and one `vdpbf16ps` per (row, 16 columns) against the broadcast activation pair
//! (`k0+2p`, `k0+2p+1`) of the row, which LLVM folds into an embedded `{1to16}` broadcast.
//! 24 independent chains cover the instruction's latency; 28 of the 32 zmm registers are
//! live. Accumulators run over one block, then are stored (first block) or added into the
//! f32 `[rows][64]` tile of the work splitter, so each row's sum runs over the whole K
//! range of its task in f32.
//!
//! While the rows of one block run, the bytes the next block comes from (the W4 record or
//! the bf16 block) are prefetched into L1, spread over the register blocks: without it the
//! first touch of each block waited for DRAM (4–5 % of the time, paired A/B on Zen 4).
//!
//! Activations are read straight from the caller's bf16 rows: `vdpbf16ps` treats denormal
//! inputs as zero and rounds nothing (bf16 × bf16 products are exact in f32).

use core::arch::x86_64::*;

use crate::kernels::acts::Bf16Rows;
use crate::kernels::panel_split::{PANEL, run_grid};
use crate::kernels::pool::ThreadPool;
use crate::kernels::weights::GROUP;
use crate::kernels::x86::prefetch::NextBlock;

/// Rows per register block.
pub(crate) const MR: usize = 6;
/// Rows per M chunk handed to one task by the splitter (a multiple of [`MR`]); the weights
/// of a panel are prepared once per chunk.
const ROWS: usize = 32 * MR;
/// Bytes of one pair row of a block (64 columns × 2 bf16).
pub(crate) const ROW_BYTES: usize = 256;
/// Pair rows per block (one 128-k group).
pub(crate) const PAIRS: usize = GROUP / 2;
/// Bytes of one block.
pub(crate) const BLOCK_BYTES: usize = PAIRS * ROW_BYTES;

/// One block's storage, cache-line aligned.
#[repr(C, align(64))]
pub(crate) struct Block(pub(crate) [u8; BLOCK_BYTES]);

/// `c[r][0..64] (+)= Σ_p a[r][2p..2p+2] · b[p][..]` for `R` rows.
///
/// # Safety
///
/// AVX-512 F/BW/BF16 enabled in the caller; `b` holds [`PAIRS`] rows of [`ROW_BYTES`]
/// bytes, 64-byte aligned; `a` holds `R` rows of at least `GROUP` bf16 at stride `lda`
/// elements; `c` holds `R` rows of 64 f32 at stride 64.
// Index loops mirror the register blocking (rows × column blocks) on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn micro<const R: usize, const ADD: bool>(
    b: *const u8,
    a: *const u16,
    lda: usize,
    c: *mut f32,
) {
    // SAFETY: (whole body) offsets stay inside the block, the R activation rows and the R
    // tile rows (contract above).
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); 4]; R];
        for p in 0..PAIRS {
            let row = b.add(p * ROW_BYTES);
            let w: [__m512bh; 4] = core::array::from_fn(|j| {
                core::mem::transmute::<__m512i, __m512bh>(_mm512_load_si512(row.add(64 * j).cast()))
            });
            for r in 0..R {
                let pair = a.add(r * lda + 2 * p).cast::<i32>().read_unaligned();
                let x: __m512bh = core::mem::transmute(_mm512_set1_epi32(pair));
                for j in 0..4 {
                    acc[r][j] = _mm512_dpbf16_ps(acc[r][j], w[j], x);
                }
            }
        }
        for r in 0..R {
            for j in 0..4 {
                let dst = c.add(r * PANEL + 16 * j);
                let v = if ADD {
                    _mm512_add_ps(_mm512_loadu_ps(dst), acc[r][j])
                } else {
                    acc[r][j]
                };
                _mm512_storeu_ps(dst, v);
            }
        }
    }
}

/// Rows `0..rows` of one block into `tile` (`ADD`: accumulate, else overwrite).
///
/// # Safety
///
/// As [`micro`], for `rows` rows (any count; blocks of [`MR`] then the rest).
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn block_rows<const ADD: bool>(
    b: *const u8,
    a: *const u16,
    lda: usize,
    rows: usize,
    c: *mut f32,
    next: &mut NextBlock<'_>,
) {
    let mut r = 0;
    let per_block = next.lines().div_ceil(rows.div_ceil(MR).max(1));
    // SAFETY: each call covers rows r..r+R < rows (contract).
    unsafe {
        while r < rows {
            next.advance(per_block);
            let (a, c) = (a.add(r * lda), c.add(r * PANEL));
            r += match rows - r {
                1 => {
                    micro::<1, ADD>(b, a, lda, c);
                    1
                }
                2 => {
                    micro::<2, ADD>(b, a, lda, c);
                    2
                }
                3 => {
                    micro::<3, ADD>(b, a, lda, c);
                    3
                }
                4 => {
                    micro::<4, ADD>(b, a, lda, c);
                    4
                }
                5 => {
                    micro::<5, ADD>(b, a, lda, c);
                    5
                }
                _ => {
                    micro::<MR, ADD>(b, a, lda, c);
                    MR
                }
            };
        }
    }
}

/// Where a task finds the block of (panel, group): either prepared into the task's
/// [`Block`] (W4A16 dequantizes) or in place (bf16 weights). Returns a pointer to
/// [`BLOCK_BYTES`] readable, 64-byte aligned bytes.
pub(crate) trait BlockSource: Sync {
    /// The block of `panel`, `group`; may fill and return `scratch`.
    fn block(&self, panel: usize, group: usize, scratch: &mut Block) -> *const u8;
    /// The packed bytes `block(panel, group, ..)` reads (prefetched one block ahead).
    fn source(&self, panel: usize, group: usize) -> &[u8];
}

/// The whole GEMM `out[M][N] = x · Wᵀ` over `panels` 64-column panels and K/128 blocks,
/// on the one work splitter ([`run_grid`]: panels × split-K, M chunks of 192 rows).
///
/// # Safety
///
/// The CPU runs AVX-512 F/BW/BF16; `src` returns valid blocks for every panel < `panels`
/// and group < `x.k / 128`; `out.len() == x.m · n` with `n ≤ 64 · panels`.
pub(crate) unsafe fn gemm<S: BlockSource>(
    pool: &ThreadPool,
    x: Bf16Rows<'_>,
    n: usize,
    panels: usize,
    src: &S,
    out: &mut [f32],
) {
    let (m, k) = (x.m, x.k);
    run_grid(
        pool,
        m,
        n,
        panels,
        k / GROUP,
        1,
        ROWS,
        out,
        |p, groups, r0, mr, tile| {
            let base = x.data.as_ptr().cast::<u16>();
            let mut scratch = Block([0; BLOCK_BYTES]);
            let end = groups.end;
            for (i, g) in groups.enumerate() {
                let b = src.block(p, g, &mut scratch);
                let mut next = NextBlock::new((g + 1 < end).then(|| src.source(p, g + 1)));
                // SAFETY: rows r0..r0+mr of x exist and hold K ≥ 128(g+1) values; the tile
                // holds ≥ mr rows of 64 f32 (run_grid); the block is the source's contract;
                // the features are this function's contract.
                unsafe {
                    let a = base.add(r0 * k + g * GROUP);
                    if i == 0 {
                        block_rows::<false>(b, a, k, mr, tile.as_mut_ptr(), &mut next);
                    } else {
                        block_rows::<true>(b, a, k, mr, tile.as_mut_ptr(), &mut next);
                    }
                    next.finish();
                }
            }
        },
    );
}
