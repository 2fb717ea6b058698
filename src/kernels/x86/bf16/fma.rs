//! bf16 baseline GEMV / small-M GEMM with f32 FMA over VNNI-2 packed panels
//! (kernels.md §4.6, the non-AMX paths).
//!
//! A packed panel ([`PackedBf16`](crate::kernels::pack::PackedBf16)) is K/2 rows of 256
//! bytes; row r holds, for each of 64 columns, the bf16 pair `(w[2r], w[2r+1])`. One 64-byte
//! load covers 16 columns × 2 k: `x << 16` is the even k as f32, `x & 0xFFFF0000` the odd
//! one, so each load feeds 2·MR FMAs with no other conversion. Decode (MR = 1) streams the
//! panel once; the non-AMX prefill runs row blocks of 4 against the same panel (register
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
/// `r0..r0+MR` with `2·pairs.end ≤ k`. `PF`: prefetch [`STREAM_AHEAD`] bytes ahead of each
/// row read (for a block that streams its panel once).
///
/// [`STREAM_AHEAD`]: crate::kernels::x86::prefetch::STREAM_AHEAD
// Index loops mirror the register blocking (rows × column blocks) on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn micro<V: Lanes16, const MR: usize, const JB: usize, const SPLIT: bool, const PF: bool>(
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
                if PF {
                    // Decode streams the panel once: keep the DRAM reads ahead.
                    stream_ahead(row, ROW_BYTES / 64);
                }
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
            (true, 1) => micro::<V, 1, 4, true, false>(v, panel, pairs, act, r0, tile),
            (true, 2) => micro::<V, 2, 4, true, false>(v, panel, pairs, act, r0, tile),
            (true, 3) => micro::<V, 3, 4, false, false>(v, panel, pairs, act, r0, tile),
            (true, _) => micro::<V, 4, 4, false, false>(v, panel, pairs, act, r0, tile),
            (false, 1) if stream => micro::<V, 1, 4, false, true>(v, panel, pairs, act, r0, tile),
            (false, 1) => micro::<V, 1, 4, false, false>(v, panel, pairs, act, r0, tile),
            (false, 2) => micro::<V, 2, 2, false, false>(v, panel, pairs, act, r0, tile),
            (false, 3) => micro::<V, 3, 1, true, false>(v, panel, pairs, act, r0, tile),
            (false, _) => micro::<V, 4, 1, false, false>(v, panel, pairs, act, r0, tile),
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
/// `stream`: a one-row block prefetches ahead of its reads (`bf16-gemv-avx2-stream`).
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
