//! W4A16 with `vdpbf16ps` (kernels.md §4.5): the decode GEMV (exact codes, per-group fold)
//! and the prefill GEMM's weight preparation ([`Dequant`], for `x86/dpbf16.rs`).
//!
//! **GEMV** (`w4a16-gemv-avx512bf16`).
//! Per 64-byte chunk (16 columns × 8 k of one octet) each 16-bit word holds four codes; a
//! word shift (<<3, >>1, >>5 or >>9) brings one of them to mantissa bits 3..6 and one
//! `vpternlogd` keeps those bits and sets the exponent of 16.0, so every word is exactly
//! bf16(16 + q): four shift + or pairs per chunk instead of a table lookup. One `vdpbf16ps`
//! per code pair and row adds `(16 + q[k])·a[k] + (16 + q[k'])·a[k']` for 16 columns
//! against the broadcast activation pair (the activations are stored in the matching octet
//! order, [`ActF32::ab_oct`]). The offset joins the zero point in the per-group fold,
//! `y += s·(Σ (16 + q)·a − (z + 16)·Σa)`. In L2 this runs 12–23 % faster than the
//! `vpshufb` + `vpermw` table lookup it replaced (M = 4 and 1, Zen 4, paired A/B).
//!
//! `vdpbf16ps` treats denormal inputs as zero (pitfall 7), and so does Σa (computed from
//! flushed activations in [`ActF32`]). Needs AVX-512 F, BW and BF16; there is no AVX2 form.
//!
//! **GEMM** (`w4a16-gemm-avx512bf16`): each record is dequantized once per M chunk into a
//! 16 KB block of bf16 pairs, `(q − z)·s` rounded to bf16 as the AMX kernel does, so the
//! inner loop is the plain bf16 microkernel with no per-group epilogue.

use core::arch::x86_64::*;

use crate::kernels::bf16_act::ActF32;
use crate::kernels::pack::{PackedW4, RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::{MR_MAX, Tile};
use crate::kernels::x86::dpbf16::{Block, BlockSource, ROW_BYTES};
use crate::kernels::x86::lanes::{Avx512, Lanes16};

/// Proof of AVX-512 F/BW/BF16 (the GEMV needs nothing else).
#[derive(Clone, Copy)]
pub(crate) struct DpBf16(());

impl DpBf16 {
    /// `Some` only when the CPU runs AVX-512 F, BW and BF16.
    pub(crate) fn new() -> Option<DpBf16> {
        let ok = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512bf16");
        ok.then_some(DpBf16(()))
    }
}

/// bf16 bits of 16.0: a code q placed at mantissa bits 3..6 reads as exactly 16 + q.
const OFFSET_BITS: i32 = 0x4180;
/// The code offset those bf16 values carry, folded into the zero point.
const CODE_OFFSET: f32 = 16.0;

/// One panel, rows `r0..r0+MR`, groups `groups`, into `tile[m][64]`; the codes are made
/// bf16 by shift and or: for each 16-bit word of a chunk
/// (nibbles q[t], q[4+t], q[t+1], q[5+t] from low to high), a word shift brings one nibble
/// to mantissa bits 3..6 and one `vpternlogd` keeps those bits and sets the exponent of 16,
/// so each word holds bf16(16 + q). The four shifts (<<3, >>1, >>5, >>9) give the code pairs
/// (q0,q2), (q4,q6), (q1,q3), (q5,q7), matched by the activation octets of `act.ab_oct`; the
/// offset is folded with the zero point: `y += s·(Σ(16 + q)·a − (z + 16)·Σa)`.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn micro<const MR: usize>(
    panel: *const u8,
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let k = act.k;
    let xa = act.ab_oct.as_ptr();
    let ng = act.groups();
    // SAFETY: (whole body) offsets stay inside the records, rows and sums (contract).
    unsafe {
        let keep = _mm512_set1_epi16(0x0078);
        let exp = _mm512_set1_epi16(OFFSET_BITS as i16);
        let off = _mm512_set1_ps(CODE_OFFSET);
        let mut tot = [[_mm512_setzero_ps(); 4]; MR];
        for g in groups {
            let rec = panel.add(g * RECORD_BYTES);
            // Independent accumulators per (row, column block): 4 chains of `vdpbf16ps`
            // per octet would otherwise run one after another for a single row.
            let chains = (4 / MR).max(1);
            let mut accs = [[[_mm512_setzero_ps(); 4]; 4]; MR];
            for o in 0..16 {
                let k0 = g * 128 + o * 8;
                let mut ap = [[_mm512_setzero_si512(); 4]; MR];
                for (m, apm) in ap.iter_mut().enumerate() {
                    let row = xa.add((r0 + m) * k + k0).cast::<i32>();
                    for (p, slot) in apm.iter_mut().enumerate() {
                        *slot = _mm512_set1_epi32(row.add(p).read_unaligned());
                    }
                }
                for j in 0..4 {
                    let x = _mm512_loadu_si512(rec.add(o * 256 + j * 64).cast());
                    let parts = [
                        _mm512_slli_epi16::<3>(x),
                        _mm512_srli_epi16::<1>(x),
                        _mm512_srli_epi16::<5>(x),
                        _mm512_srli_epi16::<9>(x),
                    ];
                    for (p, part) in parts.into_iter().enumerate() {
                        // (part & keep) | exp
                        let wq: __m512bh = core::mem::transmute(_mm512_ternarylogic_epi32::<0xEA>(
                            part, keep, exp,
                        ));
                        for m in 0..MR {
                            let a: __m512bh = core::mem::transmute(ap[m][p]);
                            let c = p % chains;
                            accs[m][j][c] = _mm512_dpbf16_ps(accs[m][j][c], wq, a);
                        }
                    }
                }
            }
            let mut acc = [[_mm512_setzero_ps(); 4]; MR];
            for m in 0..MR {
                for j in 0..4 {
                    acc[m][j] = accs[m][j][0];
                    for c in 1..chains {
                        acc[m][j] = _mm512_add_ps(acc[m][j], accs[m][j][c]);
                    }
                }
            }
            for j in 0..4 {
                let ld = |o: usize| {
                    let w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(rec.add(o + 32 * j).cast()));
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(w))
                };
                let (s, z) = (ld(SCALE_OFFSET), _mm512_add_ps(ld(ZERO_OFFSET), off));
                for m in 0..MR {
                    let i = (r0 + m) * ng + g;
                    let sa = _mm512_set1_ps(*act.sums.as_ptr().add(i));
                    let sg = _mm512_mul_ps(s, _mm512_set1_ps(*act.gscale.as_ptr().add(i)));
                    let t = _mm512_fnmadd_ps(z, sa, acc[m][j]);
                    tot[m][j] = _mm512_fmadd_ps(sg, t, tot[m][j]);
                }
            }
        }
        for (m, row) in tot.iter().enumerate() {
            for (j, &val) in row.iter().enumerate() {
                _mm512_storeu_ps(tile.as_mut_ptr().add(m * 64 + j * 16), val);
            }
        }
    }
}

/// Rows `r0..r0+mr` (mr ≤ 4) of one panel over `groups` into `tile`, reading the prepared
/// activations (`act.ab_oct`, flushed and group-scaled bf16 in octet order, with Σa and
/// group scales). Returns `false` (and computes nothing) when the slices do not cover the
/// request.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) fn block(
    _d: DpBf16,
    panel: &[u8],
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    let ok = (1..=MR_MAX).contains(&mr)
        && groups.end <= act.groups()
        && panel.len() >= groups.end * RECORD_BYTES
        && r0 + mr <= act.m
        && act.ab_oct.len() == act.m * act.k
        && act.sums.len() == act.m * act.groups()
        && act.gscale.len() == act.sums.len();
    if !ok {
        return false;
    }
    let p = panel.as_ptr();
    // SAFETY: `_d` proves the features enabled here; bounds checked above.
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

/// The W4A16 prefill GEMM's block source: each (panel, group) record dequantized once into
/// a bf16-pair block, `w = q·s − z·s` in f32 (one FMA) rounded to bf16 nearest-even
/// (`vcvtne2ps2bf16`), the weights the AMX-BF16 kernel multiplies up to an f32 ulp.
pub(crate) struct Dequant<'a> {
    v: Avx512,
    w: &'a PackedW4,
}

impl<'a> Dequant<'a> {
    pub(crate) fn new(v: Avx512, w: &'a PackedW4) -> Self {
        Dequant { v, w }
    }
}

impl BlockSource for Dequant<'_> {
    fn block(&self, panel: usize, group: usize, scratch: &mut Block) -> *const u8 {
        // SAFETY: `self.v` proves AVX-512 F/BW/BF16.
        unsafe { dequant_record(self.v, self.w.record(panel, group), scratch) };
        scratch.0.as_ptr()
    }
    fn source(&self, panel: usize, group: usize) -> &[u8] {
        self.w.record(panel, group)
    }
}

/// One P64·G128 record → 64 pair rows of 256 bytes (row `4o + u` holds k = 8o+2u, 8o+2u+1).
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
fn dequant_record(v: Avx512, rec: &[u8], dst: &mut Block) {
    assert!(rec.len() >= RECORD_BYTES);
    let (src, out) = (rec.as_ptr(), dst.0.as_mut_ptr());
    // SAFETY: reads stay inside the record (asserted), writes inside the 16 KB block
    // (row 4o + u < 64, 64 bytes at column block j < 4); the features are enabled here.
    unsafe {
        for j in 0..4 {
            let s = v.load_bf16(src.add(SCALE_OFFSET + 32 * j).cast());
            let z = v.load_bf16(src.add(ZERO_OFFSET + 32 * j).cast());
            // q·s − z·s in one rounding (z·s rounded once per column): within an f32 ulp
            // of (q − z)·s, far below the bf16 rounding that follows.
            let neg_zs = v.sub(v.zero(), v.mul(z, s));
            for o in 0..16 {
                let x = v.prep(v.load_i(src.add(o * 256 + j * 64)));
                for u in 0..4 {
                    let w0 = v.fma(v.code(x, 2 * u), s, neg_zs);
                    let w1 = v.fma(v.code(x, 2 * u + 1), s, neg_zs);
                    v.store_bf16_pairs(out.add((4 * o + u) * ROW_BYTES + 64 * j), w0, w1);
                }
            }
        }
    }
}
