//! W4A16 prefill on AMX-BF16 (kernels.md §4.4): per 32-column half-panel, dequantize the
//! whole K to bf16 VNNI-2 rows once, then run every 32-row block of the activations through
//! `TDPBF16PS` with full-K accumulation in four C tiles (no per-group epilogue).
//!
//! Dequantization: `w = (q − z)·s` in f32 (fractional zeros are fine), rounded to bf16
//! nearest-even with `vcvtne2ps2bf16` and interleaved into k-pairs. The slab buffer is
//! `K/2` rows × 128 bytes (K·64 B: 128 KB at K = 2048, 384 KB at K = 6144, in L2) and lives
//! in the worker's scratch, reused across slabs and calls.
//!
//! The driver is generic over the tile engine and the dequantizer so the identical code runs
//! with `bf16_engine::EmulatedTiles` and the AVX2 dequantizer in tests
//! on hosts without AMX.

use crate::kernels::acts::Bf16Rows;
use crate::kernels::buf::carve;
use crate::kernels::pack::{PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::OutSink;
use crate::kernels::pool::{ThreadPool, split_range};
use crate::kernels::x86::amx::bf16_engine::{CTile, TileEngine};
use crate::kernels::x86::amx::drive::{Slab, TailRows, slab_rows};
use crate::kernels::x86::lanes::{Avx512, Lanes16};

/// Bytes of one dequantized VNNI-2 row (32 columns × 2 bf16).
const SLAB_ROW: usize = 128;

/// Dequantizes half-panel `half` (sub-blocks 2·half, 2·half+1) of `panel` into `dst`.
///
/// # Safety
///
/// `V`'s features are enabled; `panel` holds `groups` records; `dst` holds
/// `groups·64` rows of [`SLAB_ROW`] bytes.
#[inline(always)]
unsafe fn dequant<V: Lanes16>(v: V, panel: *const u8, groups: usize, half: usize, dst: *mut u8) {
    // SAFETY: (whole body) offsets stay inside record g (< 4352 B) and inside dst row
    // (g·128 + 8·o)/2 + u < groups·64.
    unsafe {
        for g in 0..groups {
            let rec = panel.add(g * RECORD_BYTES);
            for jj in 0..2 {
                let j = 2 * half + jj;
                let s = v.load_bf16(rec.add(SCALE_OFFSET + 32 * j).cast());
                let z = v.load_bf16(rec.add(ZERO_OFFSET + 32 * j).cast());
                for o in 0..16 {
                    let x = v.prep(v.load_i(rec.add(o * 256 + j * 64)));
                    let pair0 = (g * 128 + o * 8) / 2;
                    for u in 0..4 {
                        let w0 = v.mul(v.sub(v.code(x, 2 * u), z), s);
                        let w1 = v.mul(v.sub(v.code(x, 2 * u + 1), z), s);
                        v.store_bf16_pairs(dst.add((pair0 + u) * SLAB_ROW + jj * 64), w0, w1);
                    }
                }
            }
        }
    }
}

/// Signature of a slab dequantizer: (panel records, groups, half, destination).
pub(crate) type DequantFn<'a> = dyn Fn(&[u8], usize, usize, &mut [u8]) + Sync + 'a;

fn dequant_fits(panel: &[u8], groups: usize, half: usize, dst: &[u8]) -> bool {
    half < 2 && panel.len() >= groups * RECORD_BYTES && dst.len() >= groups * 64 * SLAB_ROW
}

/// AVX-512 dequantizer (the one the real AMX kernel uses). Does nothing if the slices
/// are too short for the request.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) fn dequant_avx512(v: Avx512, panel: &[u8], groups: usize, half: usize, dst: &mut [u8]) {
    if dequant_fits(panel, groups, half, dst) {
        // SAFETY: `v` proves the features enabled here; sizes checked above.
        unsafe { dequant(v, panel.as_ptr(), groups, half, dst.as_mut_ptr()) }
    }
}

#[cfg(test)]
/// AVX2 dequantizer: the same algorithm, used with the emulated tiles in tests.
#[target_feature(enable = "avx2,fma")]
pub(crate) fn dequant_avx2(
    v: crate::kernels::x86::lanes::Avx2,
    panel: &[u8],
    groups: usize,
    half: usize,
    dst: &mut [u8],
) {
    if dequant_fits(panel, groups, half, dst) {
        // SAFETY: `v` proves the features enabled here; sizes checked above.
        unsafe { dequant(v, panel.as_ptr(), groups, half, dst.as_mut_ptr()) }
    }
}

/// The whole W4A16 AMX GEMM: `out[M][N]` (overwritten). Shapes were validated by the
/// registry (`x.k == w.k()`, `out.len() == x.m·w.n()`); on a mismatch nothing is written.
pub(crate) fn gemm<T: TileEngine>(
    engine: T,
    deq: &DequantFn<'_>,
    pool: &ThreadPool,
    w: &PackedW4,
    x: Bf16Rows<'_>,
    out: &mut [f32],
) {
    let Some(sink) = OutSink::new(out, x.m, w.n()) else {
        return;
    };
    if x.k != w.k() || !x.k.is_multiple_of(32) {
        return;
    }
    let slabs = 2 * w.panels();
    let groups = w.groups();
    let slab_bytes = groups * 64 * SLAB_ROW;
    let tail_bytes = TailRows::bytes(x.k);
    pool.run(|wk| {
        let mine = split_range(slabs, wk.threads, wk.index);
        if mine.is_empty() {
            return;
        }
        let mut rest = wk.scratch(slab_bytes + tail_bytes + 128);
        let buf: &mut [u8] = carve(&mut rest, slab_bytes);
        let tail_buf: &mut [u8] = carve(&mut rest, tail_bytes);
        let tail = TailRows::prepare(x, tail_buf);
        let mut c = CTile::new();
        engine.begin();
        for s in mine {
            let (p, half) = (s / 2, s % 2);
            deq(w.panel(p), groups, half, buf);
            let slab = Slab {
                b: buf.as_ptr(),
                ldb: SLAB_ROW,
                bstep: 16 * SLAB_ROW,
            };
            // SAFETY: begin() ran; the slab buffer holds K/32 steps of 16 rows of 128 B;
            // the tail came from x; slab s owns output columns 32·s..32·s+32.
            unsafe { slab_rows(&engine, x, &tail, slab, &sink, 32 * s, &mut c) };
        }
        engine.end();
    });
}
