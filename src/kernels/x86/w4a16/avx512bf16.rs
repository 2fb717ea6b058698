//! W4A16 with `vdpbf16ps` (kernels.md §4.5): the decode GEMV (SGLang-style, exact codes,
//! per-group fold) and the prefill GEMM's weight preparation ([`Dequant`], for
//! `x86/dpbf16.rs`).
//!
//! **GEMV** (`w4a16-gemv-avx512bf16`).
//! Per 64-byte chunk (16 columns × 8 k of one octet): one `vpsrlw` gives the high nibbles;
//! for each of the 4 k-pairs a `vpshufb` gathers the two code bytes of every column into
//! the low bytes of a word pair, and a `vpermw` on a 32-word table maps each code to its
//! exact bf16 value (the table repeats 0..15 twice, because `vpermw` reads 5 index bits and
//! the stray bit 4 is the neighbouring nibble). One `vdpbf16ps` per k-pair and row then
//! adds `q[k]·a[k] + q[k+1]·a[k+1]` for 16 columns against the broadcast activation pair.
//! The zero point is folded per group exactly as in the FMA kernel:
//! `y += s·(Σ q·a − z·Σa)`.
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

/// Proof of AVX-512 F/BW/BF16 plus the two constant vectors of the kernel.
#[derive(Clone, Copy)]
pub(crate) struct DpBf16 {
    lut: __m512i,
    pick: [__m512i; 2],
}

impl DpBf16 {
    /// `Some` only when the CPU runs AVX-512 F, BW and BF16.
    pub(crate) fn new() -> Option<DpBf16> {
        let ok = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512bf16");
        if !ok {
            return None;
        }
        // bf16(i & 15) for i in 0..32.
        let lut: [u16; 32] =
            core::array::from_fn(|i| ((i & 15) as f32).to_bits().wrapping_shr(16) as u16);
        // pick[u]: in every dword c of a 128-bit lane, bytes (4c+2u, zero, 4c+2u+1, zero).
        let pick: [[u8; 64]; 2] = core::array::from_fn(|u| {
            core::array::from_fn(|i| {
                let (c, b) = ((i % 16) / 4, i % 4);
                match b {
                    0 => (4 * c + 2 * u) as u8,
                    2 => (4 * c + 2 * u + 1) as u8,
                    _ => 0x80,
                }
            })
        });
        // SAFETY: avx512f was detected just above; the loads read 64-byte local arrays.
        let (lut, p0, p1) = unsafe { load3(&lut, &pick[0], &pick[1]) };
        Some(DpBf16 {
            lut,
            pick: [p0, p1],
        })
    }
}

#[target_feature(enable = "avx512f")]
fn load3(lut: &[u16; 32], p0: &[u8; 64], p1: &[u8; 64]) -> (__m512i, __m512i, __m512i) {
    // SAFETY: each array is exactly 64 bytes.
    unsafe {
        (
            _mm512_loadu_si512(lut.as_ptr().cast()),
            _mm512_loadu_si512(p0.as_ptr().cast()),
            _mm512_loadu_si512(p1.as_ptr().cast()),
        )
    }
}

/// One panel, rows `r0..r0+MR`, groups `groups`, into `tile[m][64]`.
///
/// # Safety
///
/// AVX-512 F/BW/BF16 enabled in the caller; `panel` holds records `0..groups.end`; `act`
/// holds rows `r0..r0+MR` (bf16 form `ab`, Σa, group scales).
// Index loops mirror the register blocking (rows × column blocks) on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn micro<const MR: usize>(
    d: DpBf16,
    panel: *const u8,
    groups: core::ops::Range<usize>,
    act: &ActF32,
    r0: usize,
    tile: &mut Tile,
) {
    let k = act.k;
    let xa = act.ab.as_ptr();
    let ng = act.groups();
    // SAFETY: (whole body) offsets stay inside the records, rows and sums (contract).
    unsafe {
        let mut tot = [[_mm512_setzero_ps(); 4]; MR];
        for g in groups {
            let rec = panel.add(g * RECORD_BYTES);
            let mut acc = [[_mm512_setzero_ps(); 4]; MR];
            for o in 0..16 {
                let k0 = g * 128 + o * 8;
                // Activation pairs (k0+2u, k0+2u+1), u = 0..3, broadcast per row.
                let mut ap = [[_mm512_setzero_si512(); 4]; MR];
                for (m, apm) in ap.iter_mut().enumerate() {
                    let row = xa.add((r0 + m) * k + k0).cast::<i32>();
                    for (u, slot) in apm.iter_mut().enumerate() {
                        *slot = _mm512_set1_epi32(row.add(u).read_unaligned());
                    }
                }
                for j in 0..4 {
                    let x = _mm512_loadu_si512(rec.add(o * 256 + j * 64).cast());
                    let xh = _mm512_srli_epi16::<4>(x);
                    for (u, src) in [(0, x), (1, x), (2, xh), (3, xh)] {
                        let words = _mm512_shuffle_epi8(src, d.pick[u % 2]);
                        let wq: __m512bh =
                            core::mem::transmute(_mm512_permutexvar_epi16(words, d.lut));
                        for m in 0..MR {
                            let a: __m512bh = core::mem::transmute(ap[m][u]);
                            acc[m][j] = _mm512_dpbf16_ps(acc[m][j], wq, a);
                        }
                    }
                }
            }
            for j in 0..4 {
                let ld = |off: usize| {
                    let w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(rec.add(off + 32 * j).cast()));
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(w))
                };
                let (s, z) = (ld(SCALE_OFFSET), ld(ZERO_OFFSET));
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
/// activations (`act.ab`, flushed and group-scaled bf16, with Σa and group scales).
/// Returns `false` (and computes nothing) when the slices do not cover the request.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) fn block(
    d: DpBf16,
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
        && act.ab.len() == act.m * act.k
        && act.sums.len() == act.m * act.groups()
        && act.gscale.len() == act.sums.len();
    if !ok {
        return false;
    }
    let p = panel.as_ptr();
    // SAFETY: `d` proves the features enabled here; bounds checked above.
    unsafe {
        match mr {
            1 => micro::<1>(d, p, groups, act, r0, tile),
            2 => micro::<2>(d, p, groups, act, r0, tile),
            3 => micro::<3>(d, p, groups, act, r0, tile),
            _ => micro::<4>(d, p, groups, act, r0, tile),
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
