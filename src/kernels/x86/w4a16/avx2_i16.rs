//! W4A16 decode GEMV on AVX2 integer multiply-adds (`w4a16-gemv-avx2-i16`): 4-bit codes
//! × 16-bit block-FP activations ([`bfp16`](super::bfp16)) with `vpmaddwd`, the zero point
//! folded per group in f32.
//!
//! Why: the f32 GEMV (`w4a16-gemv-avx2`) needs at least three vector µops per 8 weights
//! (code to f32, convert, FMA) and is compute-bound on AVX2 hosts. Here the packed codes
//! become i16 operands with shifts and masks only. Per octet (8 k) and 32-byte half
//! (8 columns) `x` of a P64·G128 record, each 16-bit word of column c holds two bytes
//! `t, t+1` (t = 0, 2), i.e. codes k t, k t+4, k t+1, k t+5 in its four nibbles, so
//!
//! | operand | per column dword (two i16) | activation pair (dword of the octet) |
//! |---|---|---|
//! | `x & 0x000F` | q0, q2 | a0, a2 |
//! | `(x >> 4) & 0x000F` | q4, q6 | a4, a6 |
//! | `(x >> 8) & 0x000F` | q1, q3 | a1, a3 |
//! | `x >> 12` | q5, q7 | a5, a7 |
//!
//! and one `vpmaddwd` per operand against the broadcast pair gives each column's partial
//! sum in its own dword, in column order (no horizontal adds). That is 3 shifts, 3 ands,
//! 4 `vpmaddwd` and 4 adds per 64 weights, against 8 `vpshufb`/convert/FMA triples on the
//! f32 path (on a Zen 2 the loop runs about 5.4 cycles per 64 weights and row with the
//! record in L2; the `vpmaddwd`s bound it, so more rows per pass barely help).
//!
//! Exactness: the int32 dot product `D = Σ q_w·q_a` of a (column, group) is exact
//! (|D| ≤ 128 · 15 · 32 640 < 2^26); it is rounded once to f32 (relative 2^-24), and the
//! fold `y += (s·f)·(D − z·Σq_a)` (f = 2^(e−14), the group's activation factor) rounds as the
//! FMA kernel's does. The only other error is the activation rounding of the block-FP form:
//! values within 2^7 of the group's largest are exact, smaller ones are off by at most
//! 2^-15 of the largest (see `bfp16`). Where the sum of those roundings could break
//! `verify`'s W4A16 bound for some weights (Σ|ρ| > 2^-16·Σ|a| in `bfp16`'s units: outlier
//! groups, values just under rounding midpoints), the group gets a second pass over the
//! rounding residue in block FP of its own, leaving at most 2^-30 of the largest per value.
//!
//! One row (decode) uses a cheaper mix ([`one_row_pass`]): `x & 0x00F0` and
//! `(x >> 4) & 0x00F0` keep their nibbles 16 times too large in an accumulator of their own,
//! so a half costs 2 shifts and 3 ands.
//!
//! Register blocking: one row takes 32 columns per pass over the octets (two accumulators
//! per 8 columns, 8 in all; two passes) and broadcasts its 4 activation pairs per octet
//! straight from the prepared row; two rows take 32 columns (two passes), three or four rows
//! 16 (four passes; the record is in L1 after the first), reading pairs broadcast once per
//! (row, group) into a stack block as memory operands (as `w4a8-avx2`'s four-row path does).
//! The next record of the panel is prefetched while this one is read (from DRAM the hardware
//! alone left the GEMV at about 20 GB/s with 2 threads on the Zen 2, against 24-26 with it);
//! the one-row path spreads it over both passes (on the Zen 1, prefetching it all in the
//! first pass left the two-pass loop 4 % slower from DRAM than the old one-pass loop,
//! spreading it made it 3-4 % faster).

use core::arch::x86_64::*;
use core::ops::Range;

use super::bfp16::{ActBfp16, Form};
use crate::kernels::pack::{RECORD_BYTES, SCALE_OFFSET, ZERO_OFFSET};
use crate::kernels::panel_split::{MR_MAX, PANEL, Tile};
use crate::kernels::weights::GROUP;
use crate::kernels::x86::lanes::Avx2;
use crate::kernels::x86::prefetch::NextBlock;

/// Bytes of codes per octet (8 k) of a record: 64 columns × 4 bytes.
const OCTET_BYTES: usize = 256;
/// 8-column halves (32 bytes of an octet) per record.
const HALVES: usize = 8;
/// Activation pairs (dwords) per group and row.
const PAIRS: usize = GROUP / 2;

/// Eight little-endian bf16 at `p` widened to f32.
///
/// # Safety
///
/// 16 bytes are readable at `p`; AVX2 is enabled in the caller.
#[inline(always)]
unsafe fn bf16x8(p: *const u8) -> __m256 {
    // SAFETY: the caller's contract; unaligned load.
    unsafe {
        let h = _mm_loadu_si128(p.cast());
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
    }
}

/// The zero fold of one group into 8 outputs: `dst += (s·f)·(D − z·Σq)` for columns
/// `col..col+8` of the record at `rec`.
///
/// # Safety
///
/// `rec` is a whole record, `col + 8 ≤ 64`, 32 bytes are writable at `dst`; AVX2 + FMA are
/// enabled in the caller.
#[inline(always)]
unsafe fn fold(rec: *const u8, col: usize, d: __m256i, sum: f32, f: f32, dst: *mut f32) {
    // SAFETY: the caller's contract (scales and zeros of columns col..col+8 are inside the
    // record); unaligned loads and store.
    unsafe {
        let s = bf16x8(rec.add(SCALE_OFFSET + 2 * col));
        let z = bf16x8(rec.add(ZERO_OFFSET + 2 * col));
        let t = _mm256_fnmadd_ps(z, _mm256_set1_ps(sum), _mm256_cvtepi32_ps(d));
        let sf = _mm256_mul_ps(s, _mm256_set1_ps(f));
        _mm256_storeu_ps(dst, _mm256_fmadd_ps(sf, t, _mm256_loadu_ps(dst)));
    }
}

/// Rows `r0..r0+MR` of one panel over `groups`, `J` halves (8 columns each) per pass, into
/// `tile[m][64]`; groups whose activations need it get a second pass over their rounding
/// residue (`bfp16`'s `lo_*`), which keeps every input within the W4A16 bound.
///
/// # Safety
///
/// Called from a function with AVX2 + FMA enabled; `panel` holds records `0..groups.end`;
/// `act` holds rows `r0..r0+MR` and groups `0..groups.end` (checked by [`in_bounds`]).
#[inline(always)]
unsafe fn micro<const MR: usize, const J: usize>(
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
            |rec, form, g, next| {
                if MR == 1 {
                    one_row_pass(rec, form, act.k, ng, r0, g, tile, next)
                } else {
                    group_pass::<MR, J>(rec, form, act.k, ng, r0, g, tile, next)
                }
            },
        )
    }
}

/// The group walk both i16 GEMVs share: per group of the panel, `pass` over the main form
/// while the panel's next record streams in (a task's first record and the next panel's are
/// left to the hardware), then over the rounding residue where any of `rows` needs it.
///
/// # Safety
///
/// `panel` holds records `0..groups.end`; `pass` is sound for each (record, form, group) it
/// gets.
#[inline(always)]
pub(super) unsafe fn walk_groups(
    panel: *const u8,
    groups: Range<usize>,
    act: &ActBfp16,
    rows: Range<usize>,
    mut pass: impl FnMut(*const u8, Form<'_>, usize, Option<&mut NextBlock<'_>>),
) {
    let (main, residue) = (act.main(), act.residue());
    let end = groups.end;
    for g in groups {
        // SAFETY: record g of the panel exists (this function's contract).
        let rec = unsafe { panel.add(g * RECORD_BYTES) };
        // SAFETY: record g + 1 < end exists too.
        let mut next =
            NextBlock::new((g + 1 < end).then(|| unsafe {
                core::slice::from_raw_parts(rec.add(RECORD_BYTES), RECORD_BYTES)
            }));
        pass(rec, main, g, Some(&mut next));
        if act.needs_residue(rows.clone(), g) {
            pass(rec, residue, g, None);
        }
    }
}

/// One group of rows `r0..r0+MR` against record `rec` in activation form `form`, added to
/// `tile`.
///
/// # Safety
///
/// As [`micro`]; `form`'s arrays have the shapes of `ActBfp16`'s with `k` columns and `ng`
/// groups.
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)] // index loops mirror the register blocking
#[inline(always)]
unsafe fn group_pass<const MR: usize, const J: usize>(
    rec: *const u8,
    form: Form<'_>,
    k: usize,
    ng: usize,
    r0: usize,
    g: usize,
    tile: &mut Tile,
    mut next: Option<&mut NextBlock<'_>>,
) {
    // SAFETY: (whole body) AVX2 + FMA are enabled in the caller; record offsets stay below
    // RECORD_BYTES, activation offsets inside rows r0..r0+MR and group g, tile offsets below
    // MR·64 (this function's contract).
    unsafe {
        let mask = _mm256_set1_epi16(0x000F);
        let mut pairs = [[_mm256_setzero_si256(); PAIRS]; MR];
        let row0 = form.q.as_ptr().add(r0 * k + g * GROUP).cast::<i32>();
        // One row broadcasts its pairs per octet straight from `form` (no stack block).
        for m in 0..MR {
            if MR == 1 {
                break;
            }
            let row = form.q.as_ptr().add((r0 + m) * k + g * GROUP).cast::<i32>();
            for d in 0..PAIRS {
                pairs[m][d] = _mm256_set1_epi32(row.add(d).read_unaligned());
            }
        }
        let mut pass = 0;
        while pass < HALVES {
            let mut acc = [[_mm256_setzero_si256(); J]; MR];
            for o in 0..GROUP / 8 {
                let direct: [__m256i; 4] = core::array::from_fn(|i| {
                    _mm256_set1_epi32(row0.add(4 * o + i).read_unaligned())
                });
                if pass == 0
                    && let Some(next) = next.as_deref_mut()
                {
                    next.advance(5); // 16 octets × 5 ≥ 68 lines
                }
                for h in 0..J {
                    let x = _mm256_loadu_si256(
                        rec.add(o * OCTET_BYTES + (pass + h) * 32).cast::<__m256i>(),
                    );
                    let c0 = _mm256_and_si256(x, mask);
                    let c1 = _mm256_and_si256(_mm256_srli_epi16::<4>(x), mask);
                    let c2 = _mm256_and_si256(_mm256_srli_epi16::<8>(x), mask);
                    let c3 = _mm256_srli_epi16::<12>(x);
                    for m in 0..MR {
                        let p = if MR == 1 {
                            &direct[..]
                        } else {
                            &pairs[m][4 * o..4 * o + 4]
                        };
                        let s01 = _mm256_add_epi32(
                            _mm256_madd_epi16(c0, p[0]),
                            _mm256_madd_epi16(c1, p[1]),
                        );
                        let s23 = _mm256_add_epi32(
                            _mm256_madd_epi16(c2, p[2]),
                            _mm256_madd_epi16(c3, p[3]),
                        );
                        acc[m][h] = _mm256_add_epi32(acc[m][h], _mm256_add_epi32(s01, s23));
                    }
                }
            }
            for h in 0..J {
                let col = (pass + h) * 8;
                for m in 0..MR {
                    let i = (r0 + m) * ng + g;
                    let dst = tile.as_mut_ptr().add(m * PANEL + col);
                    fold(rec, col, acc[m][h], form.sums[i], form.factor[i], dst);
                }
            }
            pass += J;
        }
    }
}

/// Columns per pass of [`one_row_pass`]: 4 halves.
const ONE_ROW_J: usize = 4;

/// One group of row `r0` against record `rec` in activation form `form`, added to `tile`
/// (the decode case). Two of the four operands keep their nibble in place, 16 times too
/// large: `x & 0x00F0` (q4, q6) and `(x >> 4) & 0x00F0` (q1, q3), summed into their own
/// accumulator, which is shifted right by 4 (exactly: every term is a multiple of 16) before
/// the fold. That is 2 shifts and 3 ands per 32 bytes instead of 3 and 3. On a Zen 1 core,
/// timed standalone in `asm`, this mix runs at the `vpmaddwd` bound (7.9 cycles per 64
/// weights, the same as the multiplies and adds alone) where the three-shift mix takes 9.8;
/// in the kernel, one row from L2 went from 40.5 to 37.9 µs (256 × 2048). Two
/// accumulators per half leave room for 4 halves per pass (two passes over the octets; the
/// record is in L1 for the second).
///
/// Range: per dword and octet the scaled accumulator gains at most 2 · 2 · 240 · 32 640 <
/// 2^25, so 16 octets stay below 2^29.
///
/// # Safety
///
/// As [`group_pass`] with `MR = 1`.
#[allow(clippy::too_many_arguments)] // the same arguments as `group_pass`
#[inline(always)]
unsafe fn one_row_pass(
    rec: *const u8,
    form: Form<'_>,
    k: usize,
    ng: usize,
    r0: usize,
    g: usize,
    tile: &mut Tile,
    mut next: Option<&mut NextBlock<'_>>,
) {
    // SAFETY: (whole body) AVX2 + FMA are enabled in the caller; record offsets stay below
    // RECORD_BYTES, activation offsets inside row r0 and group g, tile offsets below 64
    // (this function's contract).
    unsafe {
        let low = _mm256_set1_epi16(0x000F);
        let high = _mm256_set1_epi16(0x00F0);
        let row = form.q.as_ptr().add(r0 * k + g * GROUP).cast::<i32>();
        let i = r0 * ng + g;
        for pass in (0..HALVES).step_by(ONE_ROW_J) {
            let mut ones = [_mm256_setzero_si256(); ONE_ROW_J];
            let mut sixteens = [_mm256_setzero_si256(); ONE_ROW_J];
            for o in 0..GROUP / 8 {
                let p: [__m256i; 4] = core::array::from_fn(|d| {
                    _mm256_set1_epi32(row.add(4 * o + d).read_unaligned())
                });
                if let Some(next) = next.as_deref_mut() {
                    next.advance(3); // 2 passes × 16 octets × 3 ≥ 68 lines
                }
                for h in 0..ONE_ROW_J {
                    let x = _mm256_loadu_si256(
                        rec.add(o * OCTET_BYTES + (pass + h) * 32).cast::<__m256i>(),
                    );
                    let c0 = _mm256_and_si256(x, low);
                    let c1 = _mm256_and_si256(x, high);
                    let c2 = _mm256_and_si256(_mm256_srli_epi16::<4>(x), high);
                    let c3 = _mm256_srli_epi16::<12>(x);
                    let one =
                        _mm256_add_epi32(_mm256_madd_epi16(c0, p[0]), _mm256_madd_epi16(c3, p[3]));
                    let sixteen =
                        _mm256_add_epi32(_mm256_madd_epi16(c1, p[1]), _mm256_madd_epi16(c2, p[2]));
                    ones[h] = _mm256_add_epi32(ones[h], one);
                    sixteens[h] = _mm256_add_epi32(sixteens[h], sixteen);
                }
            }
            for h in 0..ONE_ROW_J {
                let col = (pass + h) * 8;
                let d = _mm256_add_epi32(ones[h], _mm256_srai_epi32::<4>(sixteens[h]));
                let dst = tile.as_mut_ptr().add(col);
                fold(rec, col, d, form.sums[i], form.factor[i], dst);
            }
        }
    }
}

/// Checks the slice bounds the microkernel relies on.
pub(super) fn in_bounds(
    panel: &[u8],
    groups: &Range<usize>,
    act: &ActBfp16,
    r0: usize,
    mr: usize,
) -> bool {
    (1..=MR_MAX).contains(&mr)
        && groups.end <= act.groups()
        && panel.len() >= groups.end * RECORD_BYTES
        && r0 + mr <= act.m
        && act.q.len() == act.m * act.k
        && act.sums.len() == act.m * act.groups()
        && act.factor.len() == act.sums.len()
        && act.lo_q.len() == act.q.len()
        && act.lo_sums.len() == act.sums.len()
        && act.lo_factor.len() == act.sums.len()
}

/// Rows `r0..r0+mr` of one panel over `groups`, into `tile` (overwritten). Returns `false`
/// (and computes nothing) if the slices do not cover the request.
#[target_feature(enable = "avx2,fma")]
pub(crate) fn block(
    _v: Avx2,
    panel: &[u8],
    groups: Range<usize>,
    act: &ActBfp16,
    r0: usize,
    mr: usize,
    tile: &mut Tile,
) -> bool {
    if !in_bounds(panel, &groups, act, r0, mr) {
        return false;
    }
    let p = panel.as_ptr();
    // SAFETY: `_v` proves AVX2 + FMA, enabled on this fn; bounds checked above.
    unsafe {
        match mr {
            1 => micro::<1, ONE_ROW_J>(p, groups, act, r0, tile),
            2 => micro::<2, 4>(p, groups, act, r0, tile),
            3 => micro::<3, 2>(p, groups, act, r0, tile),
            _ => micro::<4, 2>(p, groups, act, r0, tile),
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::kernels::acts::Bf16Rows;
    use crate::kernels::bf16::Bf16;
    use crate::kernels::pack::PackedW4;
    use crate::kernels::registry::by_name;
    use crate::kernels::tests::pool;
    use crate::kernels::verify::Expected;
    use crate::kernels::weights::{GROUP, QuantWeights, Scheme, quantize};

    /// The worst case of the block-FP rounding (docs/kernels.md): one group whose max has
    /// code 0 while 127 values just under half a unit (they round to 0) meet code 15; with
    /// activations alone that misses the W4A16 bound by about 28×. The other groups small
    /// Gaussians, one with a 1000× outlier, one with a zero point of −40; M = 1..4 exercises
    /// every row path, N = 70 a partial panel.
    #[test]
    fn adversarial_rounding_stays_within_the_w4a16_bound() {
        for name in ["w4a16-gemv-avx2-i16", "w4a16-gemv-avx512-i16"] {
            match by_name(name).and_then(|v| v.ready()) {
                Ok(kernel) => adversarial_case(name, kernel),
                Err(e) => eprintln!("SKIPPED {name} adversarial case: {e}"),
            }
        }
    }

    fn adversarial_case(name: &str, i16: crate::kernels::registry::Ready) {
        let (n, k) = (70, 4 * GROUP);
        let groups = k / GROUP;
        let mut rng = crate::kernels::fidelity::Rng::new(5);
        let codes: Vec<u8> = (0..n * k)
            .map(|i| match (i % k, (i / k) % 3) {
                (0, _) => 0,
                (c, 0) if c < GROUP => 15,
                _ => rng.below(16) as u8,
            })
            .collect();
        let scales = vec![Bf16::from_f32(1.0); n * groups];
        let zeros: Vec<Bf16> = (0..n * groups)
            .map(|i| Bf16::from_f32(if i % groups == 3 { -40.0 } else { 0.0 }))
            .collect();
        let w = QuantWeights::from_parts(n, k, codes, scales, zeros).expect("parts");
        let packed = PackedW4::pack(&w);
        let just_under_half_unit = Bf16::from_f32(2f32.powi(-15) * 255.0 / 256.0);
        // The other groups small enough that their share of the bound does not hide group 0.
        const TINY: f32 = 1.0 / 4096.0;
        for m in 1..=4 {
            let x: Vec<Bf16> = (0..m * k)
                .map(|i| match (i % k, i % k / GROUP) {
                    (0, _) => Bf16::from_f32(1.0),
                    (_, 0) => just_under_half_unit,
                    (c, 2) if c % GROUP == 7 => Bf16::from_f32(1000.0 * TINY),
                    _ => Bf16::from_f32(rng.normal() as f32 * TINY),
                })
                .collect();
            let rows = Bf16Rows::new(&x, m, k).expect("shape");
            let want = Expected::w4a16(&w, rows);
            let mut got = vec![f32::NAN; m * n];
            i16.w4a16(pool(2), &packed, rows, &mut got).expect("shapes");
            if let Err(e) = want.check(&got) {
                panic!("{name}, M = {m}: {e}");
            }
        }
    }

    /// NaN and ±Inf have no block-FP form: the call runs the f32 GEMV, which propagates
    /// them as the reference does, bit for bit.
    #[test]
    fn non_finite_activations_run_the_f32_gemv() {
        let (Ok(i16), Ok(f32)) = (
            by_name("w4a16-gemv-avx2-i16").and_then(|v| v.ready()),
            by_name("w4a16-gemv-avx2").and_then(|v| v.ready()),
        ) else {
            eprintln!("SKIPPED w4a16-gemv-avx2-i16: no AVX2 + FMA");
            return;
        };
        let (m, n, k) = (2, 70, 256);
        let w: Vec<f32> = (0..n * k)
            .map(|i| ((i * 7919) % 41) as f32 - 20.0)
            .collect();
        let packed = PackedW4::pack(&quantize(&w, n, k, Scheme::Asymmetric).expect("finite"));
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut x: Vec<Bf16> = (0..m * k)
                .map(|i| Bf16::from_f32(i as f32 / 64.0))
                .collect();
            x[k + 130] = Bf16::from_f32(bad);
            let rows = Bf16Rows::new(&x, m, k).expect("shape");
            let mut got = vec![0.0f32; m * n];
            let mut want = vec![1.0f32; m * n];
            i16.w4a16(pool(2), &packed, rows, &mut got).expect("shapes");
            f32.w4a16(pool(2), &packed, rows, &mut want)
                .expect("shapes");
            assert!(
                got[..n].iter().all(|v| v.is_finite()),
                "{bad}: row 0 is finite"
            );
            assert!(
                got[n..].iter().any(|v| !v.is_finite()),
                "{bad}: row 1 propagates"
            );
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{bad}");
        }
    }
}
