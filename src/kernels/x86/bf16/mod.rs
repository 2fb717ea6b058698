//! bf16-baseline entry points on x86 and their registry entries.
//!
//! | variant | kernel | phases |
//! |---|---|---|
//! | `bf16-gemv-avx512` | f32 FMA over VNNI-2 rows ([`fma`]), 4 × 64 register block | decode, prefill fallback |
//! | `bf16-gemm-avx512bf16` | 6 × 64 `vdpbf16ps` microkernel on the packed panel in place ([`avx512bf16`], `x86/dpbf16.rs`) | prefill |
//! | `bf16-gemv-avx2` | the same on ymm pairs | decode, prefill fallback |
//! | `bf16-gemm-avx2` | pair rows widened once into 16 KB f32 blocks, 6 × 16 FMA microkernel (`x86/fma_gemm.rs`) | prefill |
//! | `bf16-gemm-amx` | `TDPBF16PS` straight from the packed rows (no repack: a panel row is a B-tile row) | prefill |
//!
//! Work split: 64-column panels (split-K over k-pairs when panels are scarce) for the FMA
//! variants, 32-column half-panels for AMX. Entry points have the registry's `Bf16Fn`
//! signature; the registry's `Ready` checked CPU support and shapes.

pub(crate) mod avx512bf16;
pub(crate) mod fma;

use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16_act::{ActF32, with_act};
use crate::kernels::buf::carve;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::PackedBf16;
use crate::kernels::panel_split::{OutSink, PANEL, Tile, run_panels};
use crate::kernels::pool::{ThreadPool, split_range};
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;
use crate::kernels::x86::amx::bf16_engine::{AmxBf16, CTile, TileEngine};
use crate::kernels::x86::amx::drive::{Slab, TailRows, slab_rows};
use crate::kernels::x86::fma_gemm;
use crate::kernels::x86::lanes::{Avx2, Avx512};
use fma::{self as bf16_fma, ROW_BYTES};

/// Smallest K split (in k-pairs) worth a separate task.
const MIN_SPLIT_PAIRS: usize = 128;

/// The packed bytes of panel `p` (K/2 rows of 256 B).
fn panel_bytes(w: &PackedBf16, p: usize) -> &[u8] {
    let all = w.as_slice();
    let len = PANEL * w.k();
    let panel = &all[(p * len).min(all.len())..((p + 1) * len).min(all.len())];
    // SAFETY: Bf16 is a transparent u16; the byte view covers exactly the same memory.
    unsafe { core::slice::from_raw_parts(panel.as_ptr().cast(), panel.len() * 2) }
}

fn run_fma<B>(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32], block: B)
where
    B: Fn(&[u8], core::ops::Range<usize>, &ActF32, usize, usize, &mut Tile) -> bool + Sync,
{
    if x.k != w.k() {
        return;
    }
    with_act(x, false, |act| {
        run_panels(
            pool,
            x.m,
            w.n(),
            w.panels(),
            w.k() / 2,
            MIN_SPLIT_PAIRS,
            out,
            |p, pairs, r0, mr, tile| {
                let done = block(panel_bytes(w, p), pairs, act, r0, mr, tile);
                debug_assert!(done, "bf16 block refused its operands");
            },
        );
    });
}

/// `bf16-gemv-avx2` (`STREAM = false`) and `bf16-gemv-avx2-stream` (one-row blocks read as
/// interleaved, prefetched streams).
///
/// # Safety
///
/// The CPU runs AVX2 and FMA; shapes agree (`x.k == w.k()`, `out.len() == x.m·w.n()`).
pub unsafe fn gemv_avx2<const STREAM: bool>(
    pool: &ThreadPool,
    w: &PackedBf16,
    x: Bf16Rows<'_>,
    out: &mut [f32],
) {
    let Some(v) = Avx2::new() else { return };
    run_fma(pool, w, x, out, |panel, pairs, act, r0, mr, tile| {
        // SAFETY: `v` proves AVX2 + FMA.
        unsafe { bf16_fma::block_avx2(v, STREAM, panel, pairs, act, r0, mr, tile) }
    });
}

/// `bf16-gemm-avx2`: pair rows widened to f32 blocks, FMA GEMM.
///
/// # Safety
///
/// The CPU runs AVX2 and FMA; shapes agree (`x.k == w.k()`, `out.len() == x.m·w.n()`).
pub unsafe fn gemm_avx2(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
    if x.m < fma_gemm::BF16_MIN_M || !x.k.is_multiple_of(GROUP) {
        // SAFETY: the GEMV needs the same features (AVX2 + FMA) and shapes, and takes any
        // even K.
        return unsafe { gemv_avx2::<false>(pool, w, x, out) };
    }
    let Some(v) = Avx2::new() else { return };
    if x.k != w.k() {
        return;
    }
    fma_gemm::gemm(
        v,
        pool,
        x,
        w.n(),
        w.panels(),
        &fma_gemm::Widen::new(v, w),
        out,
    );
}

/// `bf16-gemv-avx512`.
///
/// # Safety
///
/// The CPU runs AVX-512 F/BW/BF16; shapes agree.
pub unsafe fn gemv_avx512(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
    let Some(v) = Avx512::new() else { return };
    run_fma(pool, w, x, out, |panel, pairs, act, r0, mr, tile| {
        // SAFETY: `v` proves the AVX-512 features.
        unsafe { bf16_fma::block_avx512(v, panel, pairs, act, r0, mr, tile) }
    });
}

/// The AMX driver over half-panels, generic over the tile engine.
fn run_amx<T: TileEngine>(
    engine: T,
    pool: &ThreadPool,
    w: &PackedBf16,
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
    let tail_bytes = TailRows::bytes(x.k);
    pool.run(|wk| {
        let mine = split_range(slabs, wk.threads, wk.index);
        if mine.is_empty() {
            return;
        }
        let mut rest = wk.scratch(tail_bytes + 64);
        let tail = TailRows::prepare(x, carve(&mut rest, tail_bytes));
        let mut c = CTile::new();
        engine.begin();
        for s in mine {
            let panel = panel_bytes(w, s / 2);
            let slab = Slab {
                b: panel[(s % 2) * 128..].as_ptr(),
                ldb: ROW_BYTES,
                bstep: 16 * ROW_BYTES,
            };
            // SAFETY: begin() ran; the panel holds K/2 rows of 256 B, so K/32 steps of 16
            // rows with 128 readable bytes from offset (s % 2)·128; slab s owns output
            // columns 32·s..32·s+32.
            unsafe { slab_rows(&engine, x, &tail, slab, &sink, 32 * s, &mut c) };
        }
        engine.end();
    });
}

/// `bf16-gemm-amx`.
///
/// # Safety
///
/// AMX-BF16 is usable by this process; shapes agree.
pub unsafe fn gemm_amx(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
    if let Some(engine) = AmxBf16::new() {
        run_amx(engine, pool, w, x, out);
    }
}

#[cfg(test)]
/// [`gemm_amx`] with emulated tiles: its test double on hosts without AMX (not registered).
///
/// # Safety
///
/// Shapes agree.
pub unsafe fn gemm_amx_emulated(
    pool: &ThreadPool,
    w: &PackedBf16,
    x: Bf16Rows<'_>,
    out: &mut [f32],
) {
    run_amx(
        crate::kernels::x86::amx::bf16_engine::EmulatedTiles,
        pool,
        w,
        x,
        out,
    );
}

/// Registry entry: AVX2 FMA GEMV (and the non-AVX-512 prefill).
pub static GEMV_AVX2: Variant = Variant {
    name: "bf16-gemv-avx2",
    isa: "avx2",
    unit: Unit::Avx2Fma,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 10,
    kernel: KernelFn::Bf16(gemv_avx2::<false>),
};

/// Registry entry: the AVX2 FMA GEMV for decode reading each panel as four interleaved
/// streams, each with a fixed software prefetch distance. Ranked under the plain GEMV (on
/// a Zen 1 it took 0.65-0.69 of its time from DRAM; on other CPUs prefetch has cost more
/// than it gave), so `bench`'s race decides per host.
pub static GEMV_AVX2_STREAM: Variant = Variant {
    name: "bf16-gemv-avx2-stream",
    isa: "avx2",
    unit: Unit::Avx2Fma,
    phases: &[Phase::Decode],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 9,
    kernel: KernelFn::Bf16(gemv_avx2::<true>),
};

/// Registry entry: AVX2 FMA prefill GEMM on widened f32 blocks.
pub static GEMM_AVX2: Variant = Variant {
    name: "bf16-gemm-avx2",
    isa: "avx2",
    unit: Unit::Avx2Fma,
    phases: &[Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 12,
    kernel: KernelFn::Bf16(gemm_avx2),
};

/// Registry entry: AVX-512 FMA GEMV (also the non-AMX prefill).
pub static GEMV_AVX512: Variant = Variant {
    name: "bf16-gemv-avx512",
    isa: "avx512",
    unit: Unit::Avx512Fma,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Avx512f, Feature::Avx512bw, Feature::Avx512bf16],
    rank: 30,
    kernel: KernelFn::Bf16(gemv_avx512),
};

/// Registry entry: AVX-512-BF16 prefill GEMM (`vdpbf16ps` on the packed panel in place).
pub static GEMM_AVX512BF16: Variant = Variant {
    name: "bf16-gemm-avx512bf16",
    isa: "avx512bf16",
    unit: Unit::Avx512Bf16,
    phases: &[Phase::Prefill],
    requires: &[Feature::Avx512f, Feature::Avx512bw, Feature::Avx512bf16],
    rank: 35,
    kernel: KernelFn::Bf16(avx512bf16::gemm),
};

/// Registry entry: AMX-BF16 prefill on the packed rows.
pub static GEMM_AMX: Variant = Variant {
    name: "bf16-gemm-amx",
    isa: "amx",
    unit: Unit::AmxBf16,
    phases: &[Phase::Prefill],
    requires: &[Feature::AmxBf16],
    rank: 40,
    kernel: KernelFn::Bf16(gemm_amx),
};
