//! Portable scalar W4A16 and bf16 variants (`w4a16-scalar`, `bf16-scalar`): the scalar twins
//! of the SIMD kernels, compiled on every target so that `registry::select` always finds a
//! variant for these paths.
//!
//! They read the same packed layouts and follow the same arithmetic as the FMA kernels
//! (f32 accumulation; W4A16 folds the zero point per group, `y += s·(Σ q·a − z·Σa)`;
//! activations with denormals flushed, see `bf16_act`), one column at a time. They are not
//! the oracle: `reference` (f64, no fold) is.

use super::acts::Bf16Rows;
use super::bf16_act::{ActF32, with_act};
use super::pack::{PackedBf16, PackedW4, record_code, record_scale, record_zero};
use super::panel_split::{PANEL, Tile, run_panels};
use super::pool::ThreadPool;
use super::registry::{KernelFn, Phase, Unit, Variant};
use super::weights::GROUP;

/// The portable W4A16 variant.
pub static W4A16_SCALAR: Variant = Variant {
    name: "w4a16-scalar",
    isa: "scalar",
    unit: Unit::Scalar,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[],
    rank: 0,
    kernel: KernelFn::W4A16(w4a16_scalar),
};

/// The portable bf16 variant.
pub static BF16_SCALAR: Variant = Variant {
    name: "bf16-scalar",
    isa: "scalar",
    unit: Unit::Scalar,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[],
    rank: 0,
    kernel: KernelFn::Bf16(bf16_scalar),
};

/// Rows `r0..r0+mr` × the 64 columns of panel `p` over `groups`, into `tile`.
fn w4a16_block(
    w: &PackedW4,
    p: usize,
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) {
    let ng = act.groups();
    for m in 0..mr {
        let row = &act.a[(r0 + m) * act.k..(r0 + m + 1) * act.k];
        for c in 0..PANEL {
            let mut tot = 0.0f32;
            for g in groups.clone() {
                let rec = w.record(p, g);
                let a = &row[g * GROUP..(g + 1) * GROUP];
                let d: f32 = a
                    .iter()
                    .enumerate()
                    .map(|(kk, &x)| record_code(rec, c, kk) as f32 * x)
                    .sum();
                let (s, z) = (record_scale(rec, c).to_f32(), record_zero(rec, c).to_f32());
                let i = (r0 + m) * ng + g;
                tot += s * act.gscale[i] * (d - z * act.sums[i]);
            }
            tile[m * PANEL + c] = tot;
        }
    }
}

/// # Safety
/// Shapes as in [`super::registry::W4A16Fn`]; no CPU feature needed.
unsafe fn w4a16_scalar(pool: &ThreadPool, w: &PackedW4, x: Bf16Rows<'_>, out: &mut [f32]) {
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
            2,
            out,
            |p, g, r0, mr, tile| w4a16_block(w, p, g, act, r0, mr, tile),
        )
    });
}

/// Rows `r0..r0+mr` × the 64 columns of panel `p` over k-pairs `pairs`, into `tile`.
fn bf16_block(
    w: &PackedBf16,
    p: usize,
    pairs: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) {
    let k = w.k();
    let data = w.as_slice();
    for m in 0..mr {
        let row = &act.a[(r0 + m) * k..(r0 + m + 1) * k];
        for c in 0..PANEL {
            let col = p * PANEL + c;
            let mut acc = 0.0f32;
            for r in pairs.clone() {
                for kk in [2 * r, 2 * r + 1] {
                    acc += data[PackedBf16::index(k, col, kk)].to_f32() * row[kk];
                }
            }
            tile[m * PANEL + c] = acc;
        }
    }
}

/// # Safety
/// Shapes as in [`super::registry::Bf16Fn`]; no CPU feature needed.
unsafe fn bf16_scalar(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
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
            128,
            out,
            |p, pairs, r0, mr, tile| bf16_block(w, p, pairs, act, r0, mr, tile),
        )
    });
}
