//! W4A16 decode GEMV on AVX-512 VNNI (`w4a16-gemv-avx512-i16`): the AVX2 kernel's
//! arithmetic ([`avx2_i16`](super::avx2_i16): 4-bit codes as i16 pairs by shift and mask,
//! block-FP i16 activations from [`bfp16`](super::bfp16), the zero point folded per group
//! in f32, a second pass over the rounding residue where a group needs it) on 64-byte
//! vectors, with `vpdpwssd` fusing each multiply-add pair into the accumulator.
//!
//! Per octet (8 k) a record's 256 bytes are four 16-column vectors; per vector three
//! shifts, three ands and four `vpdpwssd` against the broadcast activation pairs: half the
//! AVX2 kernel's instructions per weight. Up to four rows share one pass over the record
//! (16 int32 accumulators); their pairs come as broadcast memory operands.
//!
//! Why: on the first AMX host (Intel Xeon, AVX-512) the AVX2 i16 GEMV read 21.5 GB/s per
//! thread with the weights in L2 and decode reached 56-65 % of the DRAM bandwidth on two
//! threads; a GEMV needs several times the per-thread DRAM share in compute headroom to
//! stream near the wall (bf16 at 79 GB/s in L2 reached 85-88 %).

use core::arch::x86_64::*;
use core::ops::Range;

use super::avx2_i16::walk_groups;
use super::bfp16::{ActBfp16, Form};
use crate::kernels::pack::{SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::{MR_MAX, PANEL, Tile};
use crate::kernels::weights::GROUP;
use crate::kernels::x86::prefetch::NextBlock;

/// Bytes of codes per octet (8 k) of a record: 64 columns × 4 bytes.
const OCTET_BYTES: usize = 256;
/// 16-column vectors per octet.
const VECS: usize = 4;

/// The zero fold of one group into 16 outputs: `dst += (s·f)·(D − z·Σq)` for columns
/// `col..col+16` of the record at `rec`.
///
/// # Safety
///
/// `rec` is a whole record, `col + 16 ≤ 64`, 64 bytes are writable at `dst`; AVX-512 F and
/// FMA are enabled in the caller.
#[inline(always)]
unsafe fn fold(rec: *const u8, col: usize, d: __m512i, sum: f32, f: f32, dst: *mut f32) {
    // SAFETY: the caller's contract (scales and zeros of columns col..col+16 are inside the
    // record); unaligned loads and store.
    unsafe {
        let bf16 = |at: usize| {
            let h = _mm256_loadu_si256(rec.add(at).cast::<__m256i>());
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
        };
        let s = bf16(SCALE_OFFSET + 2 * col);
        let z = bf16(ZERO_OFFSET + 2 * col);
        let t = _mm512_fnmadd_ps(z, _mm512_set1_ps(sum), _mm512_cvtepi32_ps(d));
        let sf = _mm512_mul_ps(s, _mm512_set1_ps(f));
        _mm512_storeu_ps(dst, _mm512_fmadd_ps(sf, t, _mm512_loadu_ps(dst)));
    }
}

/// One group of rows `r0..r0+MR` against record `rec` in activation form `form`, added to
/// `tile`; `next` (main pass only) streams the panel's next record in.
///
/// # Safety
///
/// AVX-512 F/BW/VNNI and FMA are enabled in the caller; `rec` is a whole record; `form`'s
/// arrays hold rows `r0..r0+MR` and group `g` with `k` columns and `ng` groups; `tile`
/// holds MR·64 values.
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)] // index loops mirror the register blocking
#[inline(always)]
unsafe fn group_pass<const MR: usize>(
    rec: *const u8,
    form: Form<'_>,
    k: usize,
    ng: usize,
    r0: usize,
    g: usize,
    tile: &mut Tile,
    mut next: Option<&mut NextBlock<'_>>,
) {
    // SAFETY: (whole body) the features are enabled in the caller; record offsets stay below
    // RECORD_BYTES, activation offsets inside rows r0..r0+MR and group g, tile offsets below
    // MR·64 (this function's contract).
    unsafe {
        let mask = _mm512_set1_epi16(0x000F);
        let rows: [*const i32; MR] =
            core::array::from_fn(|m| form.q.as_ptr().add((r0 + m) * k + g * GROUP).cast::<i32>());
        let mut acc = [[_mm512_setzero_si512(); VECS]; MR];
        for o in 0..GROUP / 8 {
            if let Some(next) = next.as_deref_mut() {
                next.advance(5); // 16 octets × 5 ≥ 68 lines
            }
            for h in 0..VECS {
                let x = _mm512_loadu_si512(rec.add(o * OCTET_BYTES + h * 64).cast());
                let c0 = _mm512_and_si512(x, mask);
                let c1 = _mm512_and_si512(_mm512_srli_epi16::<4>(x), mask);
                let c2 = _mm512_and_si512(_mm512_srli_epi16::<8>(x), mask);
                let c3 = _mm512_srli_epi16::<12>(x);
                for m in 0..MR {
                    let p = |i: usize| _mm512_set1_epi32(rows[m].add(4 * o + i).read_unaligned());
                    let mut a = acc[m][h];
                    a = _mm512_dpwssd_epi32(a, c0, p(0));
                    a = _mm512_dpwssd_epi32(a, c1, p(1));
                    a = _mm512_dpwssd_epi32(a, c2, p(2));
                    a = _mm512_dpwssd_epi32(a, c3, p(3));
                    acc[m][h] = a;
                }
            }
        }
        for h in 0..VECS {
            let col = h * 16;
            for m in 0..MR {
                let i = (r0 + m) * ng + g;
                let dst = tile.as_mut_ptr().add(m * PANEL + col);
                fold(rec, col, acc[m][h], form.sums[i], form.factor[i], dst);
            }
        }
    }
}

/// Rows `r0..r0+MR` of one panel over `groups` into `tile[m][64]`.
///
/// # Safety
///
/// As [`group_pass`] for every group of `groups`; `panel` holds records `0..groups.end`.
#[inline(always)]
unsafe fn micro<const MR: usize>(
    panel: *const u8,
    groups: Range<usize>,
    act: &ActBfp16,
    r0: usize,
    tile: &mut Tile,
) {
    let ng = act.groups();
    tile[..MR * PANEL].fill(0.0);
    // The closure must be inlined: on its own it lacks the caller's target features and its
    // intrinsics become calls (30x slower, measured).
    // SAFETY: forwarded contract (records `0..groups.end` in `panel`; rows and groups of `act`).
    unsafe {
        walk_groups(
            panel,
            groups,
            act,
            r0..r0 + MR,
            #[inline(always)]
            |rec, form, g, next| group_pass::<MR>(rec, form, act.k, ng, r0, g, tile, next),
        )
    }
}

/// Rows `r0..r0+mr` of one panel over `groups`, into `tile` (overwritten). Returns `false`
/// (and computes nothing) if the slices do not cover the request.
///
/// # Safety
///
/// The CPU runs AVX-512 F/BW/VNNI and FMA.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
pub(crate) unsafe fn block(
    panel: &[u8],
    groups: Range<usize>,
    act: &ActBfp16,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !super::avx2_i16::in_bounds(panel, &groups, act, r0, mr) || mr > MR_MAX {
        return false;
    }
    let p = panel.as_ptr();
    // SAFETY: the features are enabled on this fn; bounds checked above.
    unsafe {
        match mr {
            1 => micro::<1>(p, groups, act, r0, tile),
            2 => micro::<2>(p, groups, act, r0, tile),
            3 => micro::<3>(p, groups, act, r0, tile),
            _ => micro::<4>(p, groups, act, r0, tile),
        }
    }
    true
}
