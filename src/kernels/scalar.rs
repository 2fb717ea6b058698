//! Portable scalar W4A8 kernel on the packed layout (`w4a8-scalar`): the fallback on every
//! target and the "scalar twin" that mirrors the SIMD kernels' arithmetic exactly — integer
//! D per (column, group), then the f32 epilogue `acc += (D − z·A)·(s_w·s_a)` with fused
//! multiply-adds. It runs through the same work splitter (`panel_split`) as the SIMD kernels.

use std::ops::Range;

use super::acts::QuantActs;
use super::pack::{CODES_BYTES, PANEL, PackedW4, record_scale, record_zero};
use super::panel_split::w4a8_panels;
use super::pool::ThreadPool;
use super::registry::{KernelFn, Phase, Unit, Variant};

/// The portable W4A8 variant.
pub static W4A8_SCALAR: Variant = Variant {
    name: "w4a8-scalar",
    isa: "scalar",
    unit: Unit::Scalar,
    phases: &[Phase::Decode, Phase::Prefill],
    requires: &[],
    rank: 0,
    kernel: KernelFn::W4A8(w4a8_scalar),
};

/// # Safety
/// Shapes as in [`super::registry::W4A8Fn`]; no CPU feature needed.
unsafe fn w4a8_scalar(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    w4a8_panels(pool, w, a, out, &panel);
}

/// The scalar panel microkernel (see `panel_split::PanelKernel`).
pub fn panel(
    w: &PackedW4,
    a: &QuantActs,
    p: usize,
    groups: Range<usize>,
    rows: Range<usize>,
    acc: &mut [f32],
) {
    let r0 = rows.start;
    acc[..rows.len() * PANEL].fill(0.0);
    for g in groups {
        let rec = w.record(p, g);
        for r in rows.clone() {
            let x = a.group(r, g);
            let (sa, big_a) = (a.scale(r, g), a.sum(r, g) as f32);
            // D for the 64 columns, walking the record in storage order: chunk (o, j), byte
            // 4c + t holds k = 8o + t (low nibble) and 8o + 4 + t (high nibble) of column 16j + c.
            let mut dsum = [0i32; PANEL];
            for (o, octet) in rec[..CODES_BYTES].chunks_exact(256).enumerate() {
                let (xlo, xhi) = (&x[8 * o..8 * o + 4], &x[8 * o + 4..8 * o + 8]);
                for (j, chunk) in octet.chunks_exact(64).enumerate() {
                    for (c, quad) in chunk.chunks_exact(4).enumerate() {
                        let mut s = 0i32;
                        for t in 0..4 {
                            s += (quad[t] & 0x0F) as i32 * xlo[t] as i32
                                + (quad[t] >> 4) as i32 * xhi[t] as i32;
                        }
                        dsum[16 * j + c] += s;
                    }
                }
            }
            for (c, &d) in dsum.iter().enumerate() {
                let (sw, z) = (record_scale(rec, c).to_f32(), record_zero(rec, c).to_f32());
                let t = (-z).mul_add(big_a, d as f32);
                let o = &mut acc[(r - r0) * PANEL + c];
                *o = t.mul_add(sw * sa, *o);
            }
        }
    }
}
