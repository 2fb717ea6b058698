//! W4A16 GEMV / small-M GEMM with f32 FMA over P64·G128 records (kernels.md §4.5).
//!
//! Per record (64 columns × 128 k) and 16-column sub-block: one 64-byte load gives 8 code
//! vectors (`lo`/`hi` nibbles of the 4 bytes per column); each becomes 16 f32 by
//! [`Lanes16::code`] (`vpermps` on a 16-float table on AVX-512; on AVX2 two masks per
//! chunk, then `vpshufb` + convert per code) and is FMA'd against the broadcast activation of up to 4 rows. The zero point is
//! folded once per group in f32: `y += s·(Σ q·a − z·Σa)` (kernels.md §2), so fractional
//! zeros cost nothing extra.
//!
//! The same generic microkernel serves decode (MR = 1..4 rows per weight pass) and the
//! non-AMX prefill (row blocks of 4, the panel re-read from L1/L2 per block).
//! Activations arrive as [`ActF32`] (denormals already flushed, Σa per group).

use crate::kernels::bf16_act::ActF32;
use crate::kernels::pack::{RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::{MR_MAX, Tile};
use crate::kernels::x86::lanes::{Avx2, Avx512, Lanes16};

/// Bytes of codes per octet (8 k) of a record: 4 sub-blocks × 64 B.
const OCTET_BYTES: usize = 256;

/// One panel, rows `r0..r0+MR`, groups `g0..g1`, into `tile[m][64]`.
///
/// JB sub-blocks (of 16 columns) are processed per pass over a record's octets; SPLIT keeps
/// separate accumulators for the low and high nibbles (more independent FMA chains).
///
/// # Safety
///
/// `V`'s features are enabled in the caller; `panel` holds records `0..g1`; `act` holds
/// rows `r0..r0+MR` and groups `0..g1`.
// Index loops mirror the register blocking (rows × column blocks) on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn micro<V: Lanes16, const MR: usize, const JB: usize, const SPLIT: bool>(
    v: V,
    panel: *const u8,
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let k = act.k;
    let ng = act.groups();
    let a = act.a.as_ptr();
    let sums = act.sums.as_ptr();
    let gscale = act.gscale.as_ptr();
    // SAFETY: (whole body) every pointer offset below stays inside the record (< 4352 B),
    // the activation row (< k) or the sums row (< ng), per this function's contract.
    unsafe {
        let mut tot = [[v.zero(); 4]; MR];
        for g in groups {
            let rec = panel.add(g * RECORD_BYTES);
            let mut jb = 0;
            while jb < 4 {
                let mut acc = [[[v.zero(); JB]; MR]; 2];
                let hi = SPLIT as usize;
                for o in 0..16 {
                    let k0 = g * 128 + o * 8;
                    for jj in 0..JB {
                        let x = v.prep(v.load_i(rec.add(o * OCTET_BYTES + (jb + jj) * 64)));
                        for t in 0..4 {
                            let wl = v.code(x, t);
                            let wh = v.code(x, t + 4);
                            for m in 0..MR {
                                let row = a.add((r0 + m) * k + k0);
                                let al = v.splat(*row.add(t));
                                let ah = v.splat(*row.add(4 + t));
                                acc[0][m][jj] = v.fma(wl, al, acc[0][m][jj]);
                                acc[hi][m][jj] = v.fma(wh, ah, acc[hi][m][jj]);
                            }
                        }
                    }
                }
                for jj in 0..JB {
                    let col = (jb + jj) * 16;
                    let s = v.load_bf16(rec.add(SCALE_OFFSET + 2 * col).cast());
                    let z = v.load_bf16(rec.add(ZERO_OFFSET + 2 * col).cast());
                    for m in 0..MR {
                        let d = if SPLIT {
                            v.add(acc[0][m][jj], acc[1][m][jj])
                        } else {
                            acc[0][m][jj]
                        };
                        let sa = v.splat(*sums.add((r0 + m) * ng + g));
                        let sg = v.mul(s, v.splat(*gscale.add((r0 + m) * ng + g)));
                        let t = v.sub(d, v.mul(z, sa));
                        tot[m][jb + jj] = v.fma(sg, t, tot[m][jb + jj]);
                    }
                }
                jb += JB;
            }
        }
        for (m, row) in tot.iter().enumerate() {
            for (j, &val) in row.iter().enumerate() {
                v.store_f(tile.as_mut_ptr().add(m * 64 + j * 16), val);
            }
        }
    }
}

/// Dispatches on the row count with register blocking suited to the vector width.
///
/// # Safety
///
/// As [`micro`], with `mr ∈ 1..=4`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn block<V: Lanes16>(
    v: V,
    wide: bool,
    panel: *const u8,
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) {
    // SAFETY: forwarded contract.
    unsafe {
        match (wide, mr) {
            (true, 1) => micro::<V, 1, 4, true>(v, panel, groups, act, r0, tile),
            (true, 2) => micro::<V, 2, 4, true>(v, panel, groups, act, r0, tile),
            (true, 3) => micro::<V, 3, 4, false>(v, panel, groups, act, r0, tile),
            (true, _) => micro::<V, 4, 4, false>(v, panel, groups, act, r0, tile),
            (false, 1) => micro::<V, 1, 4, false>(v, panel, groups, act, r0, tile),
            (false, 2) => micro::<V, 2, 2, false>(v, panel, groups, act, r0, tile),
            (false, 3) => micro::<V, 3, 1, false>(v, panel, groups, act, r0, tile),
            (false, _) => micro::<V, 4, 1, false>(v, panel, groups, act, r0, tile),
        }
    }
}

/// Checks the slice bounds the microkernel relies on.
fn in_bounds(
    panel: &[u8],
    groups: &core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
) -> bool {
    (1..=MR_MAX).contains(&mr)
        && groups.end <= act.groups()
        && panel.len() >= groups.end * RECORD_BYTES
        && r0 + mr <= act.m
        && act.a.len() == act.m * act.k
        && act.sums.len() == act.m * act.groups()
        && act.gscale.len() == act.sums.len()
}

/// AVX2 + FMA block: rows `r0..r0+mr` of one panel over `groups`, into `tile`.
/// Returns `false` (and computes nothing) if the slices do not cover the request.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn block_avx2(
    v: Avx2,
    panel: &[u8],
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &groups, act, r0, mr) {
        return false;
    }
    // SAFETY: `v` proves avx2+fma, enabled on this fn; bounds checked above.
    unsafe { block(v, false, panel.as_ptr(), groups, act, r0, mr, tile) };
    true
}

/// AVX-512 block (LUT dequant with `vpermps`); same contract as [`block_avx2`].
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) fn block_avx512(
    v: Avx512,
    panel: &[u8],
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &groups, act, r0, mr) {
        return false;
    }
    // SAFETY: `v` proves avx512f/bw/bf16, enabled on this fn; bounds checked above.
    unsafe { block(v, true, panel.as_ptr(), groups, act, r0, mr, tile) };
    true
}
