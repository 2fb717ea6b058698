//! bf16 baseline GEMV / small-M GEMM with f32 FMA over VNNI-2 packed panels
//! (kernels.md §4.6, the non-AMX paths).
//!
//! A packed panel ([`PackedBf16`](crate::kernels::pack::PackedBf16)) is K/2 rows of 256
//! bytes; row r holds, for each of 64 columns, the bf16 pair `(w[2r], w[2r+1])`. One 64-byte
//! load covers 16 columns × 2 k: `x << 16` is the even k as f32, `x & 0xFFFF0000` the odd
//! one, so each load feeds 2·MR FMAs with no other conversion. Decode (MR = 1) streams the
//! panel once (`bf16-gemv-avx2-stream`: as [`STREAMS`] interleaved streams, each prefetched
//! ahead); the non-AMX prefill runs row blocks of 4 against the same panel (register
//! blocking 4 rows × 64 columns on AVX-512, 4 × 16 on AVX2), re-reading it from L2.

use crate::kernels::bf16_act::ActF32;
use crate::kernels::panel_split::{MR_MAX, Tile};
use crate::kernels::x86::lanes::{Avx2, Avx512, Lanes16};
use crate::kernels::x86::prefetch::stream_ahead;

/// Bytes of one packed row (64 columns × 2 bf16).
pub(crate) const ROW_BYTES: usize = 256;

/// One panel, rows `r0..r0+MR`, k-pairs `pairs`, into `tile[m][64]`.
///
/// # Safety
///
/// `V`'s features are enabled; `panel` holds rows `0..pairs.end`; `act` holds rows
/// `r0..r0+MR` with `2·pairs.end ≤ k`.
// Index loops mirror the register blocking (rows × column blocks) on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn micro<V: Lanes16, const MR: usize, const JB: usize, const SPLIT: bool>(
    v: V,
    panel: *const u8,
    pairs: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let k = act.k;
    let a = act.a.as_ptr();
    // SAFETY: (whole body) row r < pairs.end of the panel, columns < 64, activations < k.
    unsafe {
        let mut jb = 0;
        while jb < 4 {
            let mut acc = [[[v.zero(); JB]; MR]; 2];
            let odd = SPLIT as usize;
            for r in pairs.clone() {
                let row = panel.add(r * ROW_BYTES);
                for jj in 0..JB {
                    let x = v.load_i(row.add((jb + jj) * 64));
                    let we = v.bf16_lo(x);
                    let wo = v.bf16_hi(x);
                    for m in 0..MR {
                        let ar = a.add((r0 + m) * k + 2 * r);
                        acc[0][m][jj] = v.fma(we, v.splat(*ar), acc[0][m][jj]);
                        acc[odd][m][jj] = v.fma(wo, v.splat(*ar.add(1)), acc[odd][m][jj]);
                    }
                }
            }
            for m in 0..MR {
                for jj in 0..JB {
                    let sum = if SPLIT {
                        v.add(acc[0][m][jj], acc[1][m][jj])
                    } else {
                        acc[0][m][jj]
                    };
                    v.store_f(tile.as_mut_ptr().add(m * 64 + (jb + jj) * 16), sum);
                }
            }
            jb += JB;
        }
    }
}

/// Concurrent read streams of a one-row [`streams`] pass. On an AVX2-only Zen 1 (AMD EPYC
/// family 23 model 1, 2 threads, `kernels_ab` 6144 × 2048 and 2048 × 6144, M = 1, weights
/// from DRAM) against one prefetched stream: 2 streams 0.93 of its time, 4 streams
/// 0.84-0.86, 8 streams 1.08 (8 × 4 KB prefetched ahead fills the 32 KB L1).
const STREAMS: usize = 4;

/// One row, 64 columns: the k-pair range is cut into [`STREAMS`] equal parts read side by
/// side, one packed row of each in turn, each stream prefetched [`STREAM_AHEAD`] bytes
/// ahead; all of them add into the same 64 column sums, the leftover rows last. A single
/// sequential stream per core arrives slower than the memory system delivers to several.
///
/// # Safety
///
/// As [`micro`] with MR = 1.
///
/// [`STREAM_AHEAD`]: crate::kernels::x86::prefetch::STREAM_AHEAD
#[inline(always)]
unsafe fn streams<V: Lanes16>(
    v: V,
    panel: *const u8,
    pairs: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let a = act.a.as_ptr().wrapping_add(r0 * act.k);
    let part = pairs.len() / STREAMS;
    let whole = pairs.start + STREAMS * part;
    // SAFETY: (whole body) every row read is < pairs.end of the panel and its two
    // activations are < 2·pairs.end ≤ k in row r0 (the caller's contract).
    unsafe {
        let mut acc = [v.zero(); 4];
        // Rounds 0..part take row i of each part; round `part` takes the leftover rows.
        for i in 0..=part {
            for s in 0..STREAMS {
                let r = if i < part {
                    pairs.start + s * part + i
                } else {
                    whole + s
                };
                if r >= pairs.end {
                    break;
                }
                let row = panel.add(r * ROW_BYTES);
                if i < part {
                    stream_ahead(row, ROW_BYTES / 64);
                }
                let ar = a.add(2 * r);
                let (even, odd) = (v.splat(*ar), v.splat(*ar.add(1)));
                for (jj, sum) in acc.iter_mut().enumerate() {
                    let x = v.load_i(row.add(jj * 64));
                    *sum = v.fma(v.bf16_lo(x), even, *sum);
                    *sum = v.fma(v.bf16_hi(x), odd, *sum);
                }
            }
        }
        for (jj, sum) in acc.into_iter().enumerate() {
            v.store_f(tile.as_mut_ptr().add(jj * 16), sum);
        }
    }
}

/// Register blocking per vector width and row count.
///
/// # Safety
///
/// As [`micro`], with `mr ∈ 1..=4`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn block<V: Lanes16>(
    v: V,
    wide: bool,
    stream: bool,
    panel: *const u8,
    pairs: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) {
    // SAFETY: forwarded contract.
    unsafe {
        match (wide, mr) {
            (true, 1) => micro::<V, 1, 4, true>(v, panel, pairs, act, r0, tile),
            (true, 2) => micro::<V, 2, 4, true>(v, panel, pairs, act, r0, tile),
            (true, 3) => micro::<V, 3, 4, false>(v, panel, pairs, act, r0, tile),
            (true, _) => micro::<V, 4, 4, false>(v, panel, pairs, act, r0, tile),
            (false, 1) if stream => streams::<V>(v, panel, pairs, act, r0, tile),
            (false, 1) => micro::<V, 1, 4, false>(v, panel, pairs, act, r0, tile),
            (false, 2) => micro::<V, 2, 2, false>(v, panel, pairs, act, r0, tile),
            (false, 3) => micro::<V, 3, 1, true>(v, panel, pairs, act, r0, tile),
            (false, _) => micro::<V, 4, 1, false>(v, panel, pairs, act, r0, tile),
        }
    }
}

fn in_bounds(
    panel: &[u8],
    pairs: &core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
) -> bool {
    (1..=MR_MAX).contains(&mr)
        && 2 * pairs.end <= act.k
        && panel.len() >= pairs.end * ROW_BYTES
        && r0 + mr <= act.m
        && act.a.len() == act.m * act.k
}

/// AVX2 block: rows `r0..r0+mr` of one packed panel over k-pairs `pairs`, into `tile`;
/// `stream`: a one-row block reads the panel as interleaved, prefetched streams
/// (`bf16-gemv-avx2-stream`).
/// Returns `false` (and computes nothing) if the slices do not cover the request.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn block_avx2(
    v: Avx2,
    stream: bool,
    panel: &[u8],
    pairs: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &pairs, act, r0, mr) {
        return false;
    }
    // SAFETY: `v` proves avx2+fma, enabled here; bounds checked above.
    unsafe { block(v, false, stream, panel.as_ptr(), pairs, act, r0, mr, tile) };
    true
}

/// AVX-512 block; same contract as [`block_avx2`].
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) fn block_avx512(
    v: Avx512,
    panel: &[u8],
    pairs: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &pairs, act, r0, mr) {
        return false;
    }
    // SAFETY: `v` proves the AVX-512 features enabled here; bounds checked above.
    unsafe { block(v, true, false, panel.as_ptr(), pairs, act, r0, mr, tile) };
    true
}
