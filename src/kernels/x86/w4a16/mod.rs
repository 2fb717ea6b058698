//! W4A16 entry points on x86 and their registry entries.
//!
//! | variant | kernel | phases |
//! |---|---|---|
//! | `w4a16-gemv-avx512` | f32 FMA, `vpermps` LUT dequant ([`w4a16_fma`](crate::kernels::x86::w4a16::fma)) | decode, prefill fallback |
//! | `w4a16-gemv-avx512bf16` | `vdpbf16ps` on LUT'd bf16 codes ([`w4a16_dpbf16`](crate::kernels::x86::w4a16::avx512bf16)) | decode |
//! | `w4a16-gemm-avx512bf16` | records dequantized once into 16 KB bf16-pair blocks, 6 × 64 `vdpbf16ps` microkernel ([`dpbf16`]) | prefill |
//! | `w4a16-gemv-avx2` | f32 FMA, shift/and/convert dequant | decode, prefill fallback |
//! | `w4a16-gemm-avx2` | record halves dequantized once into 16 KB f32 blocks, 6 × 16 FMA microkernel ([`fma_gemm`]) | prefill |
//! | `w4a16-gemv-avx2-i16` | `vpmaddwd` on shifted/masked codes × block-FP i16 activations ([`avx2_i16`]) | decode |
//! | `w4a16-gemv-avx512-i16` | the same on 64-byte vectors with `vpdpwssd` ([`avx512_i16`]) | decode |
//! | `w4a16-gemm-amx` | dequantized half-panels × `TDPBF16PS` ([`w4a16_amx`](crate::kernels::x86::amx::w4a16)) | prefill |
//!
//! The GEMV-style kernels split work by 64-column panels (split-K over groups when there are
//! fewer panels than threads) and take up to 4 rows per weight pass; larger M loops over
//! row blocks of 4. Each entry point is an `unsafe fn` with the registry's `W4A16Fn`
//! signature: the caller (the registry's `Ready`) has checked CPU support and shapes.

pub(crate) mod avx2_i16;
mod avx512_i16;
pub(crate) mod avx512bf16;
mod bfp16;
pub(crate) mod fma;

use core::ops::Range;

use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16_act::{ActF32, with_act};
use crate::kernels::cpu::Feature;
use crate::kernels::pack::PackedW4;
use crate::kernels::panel_split::{Tile, run_panels};
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::x86::amx::bf16_engine::AmxBf16;
use crate::kernels::x86::amx::w4a16 as w4a16_amx;
use crate::kernels::x86::dpbf16;
use crate::kernels::x86::fma_gemm;
use crate::kernels::x86::lanes::{Avx2, Avx512};
use avx512bf16 as w4a16_dpbf16;
use fma as w4a16_fma;

/// Below this many rows `w4a16-gemm-avx512bf16` runs the `vdpbf16ps` GEMV instead: with
/// few rows, dequantizing each record to a 16 KB bf16 block costs more than re-reading it
/// (paired A/B, 6144 × 2048, 2 threads, Zen 4: the GEMV took 0.54 of the GEMM's time at
/// M = 4 and 0.93 at 16, 1.02 at 20; the GEMM 0.94 of the GEMV's at 24).
pub(crate) const GEMM_MIN_M: usize = 20;

/// Smallest K split (in groups of 128) worth a separate task.
const MIN_SPLIT_GROUPS: usize = 2;

/// The FMA/dot driver shared by the GEMV variants: `block(panel, groups, act, r0, mr, tile)`.
fn run_gemv<B>(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32], block: B)
where
    B: Fn(&[u8], core::ops::Range<usize>, &ActF32, usize, usize, &mut Tile) -> bool + Sync,
{
    if x.k != w.k() {
        return;
    }
    with_act(x, true, |act| {
        run_panels(
            pool,
            x.m,
            w.n(),
            w.panels(),
            w.groups(),
            MIN_SPLIT_GROUPS,
            out,
            |p, groups, r0, mr, tile| {
                let done = block(w.panel(p), groups, act, r0, mr, tile);
                debug_assert!(done, "W4A16 block refused its operands");
            },
        );
    });
}

/// `w4a16-gemv-avx2`.
///
/// # Safety
///
/// The CPU runs AVX2 and FMA; shapes agree (`x.k == w.k()`, `out.len() == x.m·w.n()`).
pub unsafe fn gemv_avx2(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    let Some(v) = Avx2::new() else { return };
    run_gemv(pool, w, x, out, |panel, g, act, r0, mr, tile| {
        // SAFETY: `v` proves AVX2 + FMA.
        unsafe { w4a16_fma::block_avx2(v, panel, g, act, r0, mr, tile) }
    });
}

/// `w4a16-gemm-avx2`: record halves dequantized to f32 blocks, FMA GEMM.
///
/// # Safety
///
/// The CPU runs AVX2 and FMA; shapes agree (`x.k == w.k()`, `out.len() == x.m·w.n()`).
pub unsafe fn gemm_avx2(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    if x.m < fma_gemm::W4A16_MIN_M {
        // SAFETY: the GEMV needs the same features (AVX2 + FMA) and shapes.
        return unsafe { gemv_avx2(pool, w, x, out) };
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
        &fma_gemm::Dequant::new(v, w),
        out,
    );
}

/// The block-FP i16 GEMVs' common entry: the activations to block FP once per call, then
/// `block` on every panel task. `false` (nothing written) when the activations hold a NaN or
/// an infinity, which have no block-FP form.
fn run_bfp16(
    v: Avx2,
    pool: &ThreadPool,
    w: &PackedW4,
    x: Bf16Rows<'_>,
    out: &mut [f32],
    block: impl Fn(&[u8], Range<usize>, &bfp16::ActBfp16, usize, usize, &mut Tile) -> bool + Sync,
) -> bool {
    if x.k != w.k() {
        return true;
    }
    bfp16::with_bfp(v, x, |act| {
        run_panels(
            pool,
            x.m,
            w.n(),
            w.panels(),
            w.groups(),
            MIN_SPLIT_GROUPS,
            out,
            |p, groups, r0, mr, tile| {
                let done = block(w.panel(p), groups, act, r0, mr, tile);
                debug_assert!(done, "W4A16 block refused its operands");
            },
        );
    })
    .is_some()
}

/// `w4a16-gemv-avx2-i16`: activations as block-FP i16 per group, `vpmaddwd` GEMV. A call
/// whose activations hold a NaN or an infinity (no block-FP form) runs `w4a16-gemv-avx2`,
/// which propagates them like the reference.
///
/// # Safety
///
/// The CPU runs AVX2 and FMA; shapes agree.
pub unsafe fn gemv_avx2_i16(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    let Some(v) = Avx2::new() else { return };
    let block = |panel: &[u8], groups, act: &_, r0, mr, tile: &mut Tile| {
        // SAFETY: `v` proves AVX2 + FMA.
        unsafe { avx2_i16::block(v, panel, groups, act, r0, mr, tile) }
    };
    if !run_bfp16(v, pool, w, x, out, block) {
        // SAFETY: the same features and shapes.
        unsafe { gemv_avx2(pool, w, x, out) };
    }
}

/// `w4a16-gemv-avx512-i16`: the block-FP i16 GEMV on AVX-512 VNNI (`vpdpwssd`). A call
/// whose activations hold a NaN or an infinity runs `w4a16-gemv-avx512`.
///
/// # Safety
///
/// The CPU runs AVX2, FMA and AVX-512 F/BW/BF16/VNNI; shapes agree.
pub unsafe fn gemv_avx512_i16(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    let Some(v) = Avx2::new() else { return };
    let block = |panel: &[u8], groups, act: &_, r0, mr, tile: &mut Tile| {
        // SAFETY: the caller guarantees AVX-512 F/BW/VNNI and FMA.
        unsafe { avx512_i16::block(panel, groups, act, r0, mr, tile) }
    };
    if !run_bfp16(v, pool, w, x, out, block) {
        // SAFETY: the same features and shapes.
        unsafe { gemv_avx512(pool, w, x, out) };
    }
}

/// `w4a16-gemv-avx512` (FMA with `vpermps` LUT dequantization).
///
/// # Safety
///
/// The CPU runs AVX-512 F/BW/BF16; shapes agree.
pub unsafe fn gemv_avx512(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    let Some(v) = Avx512::new() else { return };
    run_gemv(pool, w, x, out, |panel, g, act, r0, mr, tile| {
        // SAFETY: `v` proves the AVX-512 features.
        unsafe { w4a16_fma::block_avx512(v, panel, g, act, r0, mr, tile) }
    });
}

/// `w4a16-gemv-avx512bf16` (`vdpbf16ps`).
///
/// # Safety
///
/// The CPU runs AVX-512 F/BW/BF16; shapes agree.
pub unsafe fn gemv_dpbf16(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    let Some(d) = w4a16_dpbf16::DpBf16::new() else {
        return;
    };
    run_gemv(pool, w, x, out, |panel, g, act, r0, mr, tile| {
        // SAFETY: `d` proves the AVX-512 features.
        unsafe { w4a16_dpbf16::block(d, panel, g, act, r0, mr, tile) }
    });
}

/// `w4a16-gemm-avx512bf16`: records dequantized to bf16-pair blocks, `vdpbf16ps` GEMM.
///
/// # Safety
///
/// The CPU runs AVX-512 F/BW/BF16; shapes agree.
pub unsafe fn gemm_dpbf16(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    if x.m < GEMM_MIN_M {
        // SAFETY: the GEMV needs the same features (AVX-512 F/BW/BF16) and shapes.
        return unsafe { gemv_dpbf16(pool, w, x, out) };
    }
    let Some(v) = Avx512::new() else { return };
    if x.k != w.k() {
        return;
    }
    let src = w4a16_dpbf16::Dequant::new(v, w);
    // SAFETY: `v` proves the features; the source dequantizes any (panel, group) of `w`;
    // the registry checked `out.len() == x.m·w.n()`.
    unsafe { dpbf16::gemm(pool, x, w.n(), w.panels(), &src, out) };
}

/// `w4a16-gemm-amx`.
///
/// # Safety
///
/// AMX-BF16 is usable by this process (CPU, OS, permission) and the CPU runs AVX-512
/// F/BW/BF16; shapes agree.
pub unsafe fn gemm_amx(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    let (Some(engine), Some(v)) = (AmxBf16::new(), Avx512::new()) else {
        return;
    };
    w4a16_amx::gemm(
        engine,
        &|panel, groups, half, dst| {
            // SAFETY: `v` proves the AVX-512 features.
            unsafe { w4a16_amx::dequant_avx512(v, panel, groups, half, dst) }
        },
        pool,
        w,
        x,
        out,
    );
}

#[cfg(test)]
/// The AMX driver with emulated tiles and the AVX2 dequantizer: the test double of
/// [`gemm_amx`] on hosts without AMX (not registered).
///
/// # Safety
///
/// The CPU runs AVX2 and FMA; shapes agree.
pub unsafe fn gemm_amx_emulated(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
    let Some(v) = Avx2::new() else { return };
    w4a16_amx::gemm(
        crate::kernels::x86::amx::bf16_engine::EmulatedTiles,
        &|panel, groups, half, dst| {
            // SAFETY: `v` proves AVX2 + FMA.
            unsafe { w4a16_amx::dequant_avx2(v, panel, groups, half, dst) }
        },
        pool,
        w,
        x,
        out,
    );
}

/// AVX-512 F/BW/BF16, needed by every AVX-512 W4A16 variant.
const AVX512_BF16: &[Feature] = &[Feature::Avx512f, Feature::Avx512bw, Feature::Avx512bf16];

/// Registry entry: AVX2 FMA GEMV (and the non-AVX-512 prefill).
pub static GEMV_AVX2: Variant = Variant {
    name: "w4a16-gemv-avx2",
    isa: "avx2",
    unit: Unit::Avx2Fma,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 10,
    kernel: KernelFn::W4A16(gemv_avx2),
};

/// Registry entry: AVX2 FMA prefill GEMM on dequantized f32 blocks.
pub static GEMM_AVX2: Variant = Variant {
    name: "w4a16-gemm-avx2",
    isa: "avx2",
    unit: Unit::Avx2Fma,
    phases: &[Phase::Prefill],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 12,
    kernel: KernelFn::W4A16(gemm_avx2),
};

/// Registry entry: AVX2 `vpmaddwd` GEMV on block-FP activations (decode). Its unit is the
/// W4A16 path's AVX2 one (`avx2-fma`): the registry keeps the int8 units for the W4A8
/// kernels, and at M ≤ 4 the roofline that matters is bandwidth.
pub static GEMV_AVX2_I16: Variant = Variant {
    name: "w4a16-gemv-avx2-i16",
    isa: "avx2",
    unit: Unit::Avx2Fma,
    phases: &[Phase::Decode],
    requires: &[Feature::Avx2, Feature::Fma],
    rank: 11,
    kernel: KernelFn::W4A16(gemv_avx2_i16),
};

/// Registry entry: AVX-512 FMA GEMV with LUT dequantization (also the non-AMX prefill).
pub static GEMV_AVX512: Variant = Variant {
    name: "w4a16-gemv-avx512",
    isa: "avx512",
    unit: Unit::Avx512Fma,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: AVX512_BF16,
    rank: 30,
    kernel: KernelFn::W4A16(gemv_avx512),
};

/// Registry entry: AVX-512 VNNI `vpdpwssd` GEMV on block-FP activations (decode). Its unit
/// is the W4A16 path's AVX-512 one, as for the AVX2 form.
pub static GEMV_AVX512_I16: Variant = Variant {
    name: "w4a16-gemv-avx512-i16",
    isa: "avx512vnni",
    unit: Unit::Avx512Fma,
    phases: &[Phase::Decode],
    requires: &[
        Feature::Avx2,
        Feature::Fma,
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Avx512bf16,
        Feature::Avx512vnni,
    ],
    rank: 34,
    kernel: KernelFn::W4A16(gemv_avx512_i16),
};

/// Registry entry: AVX-512 `vdpbf16ps` GEMV.
pub static GEMV_AVX512BF16: Variant = Variant {
    name: "w4a16-gemv-avx512bf16",
    isa: "avx512bf16",
    unit: Unit::Avx512Bf16,
    phases: &[Phase::Decode],
    requires: AVX512_BF16,
    rank: 32,
    kernel: KernelFn::W4A16(gemv_dpbf16),
};

/// Registry entry: AVX-512-BF16 prefill GEMM (`vdpbf16ps` on dequantized bf16 blocks).
pub static GEMM_AVX512BF16: Variant = Variant {
    name: "w4a16-gemm-avx512bf16",
    isa: "avx512bf16",
    unit: Unit::Avx512Bf16,
    phases: &[Phase::Prefill],
    requires: AVX512_BF16,
    rank: 35,
    kernel: KernelFn::W4A16(gemm_dpbf16),
};

/// Registry entry: AMX-BF16 prefill on dequantized half-panels.
pub static GEMM_AMX: Variant = Variant {
    name: "w4a16-gemm-amx",
    isa: "amx",
    unit: Unit::AmxBf16,
    phases: &[Phase::Prefill],
    requires: &[
        Feature::AmxBf16,
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Avx512bf16,
    ],
    rank: 40,
    kernel: KernelFn::W4A16(gemm_amx),
};
