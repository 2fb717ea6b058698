//! W4A8 prefill on AMX-INT8 (kernels.md §4.3): per (M-chunk, half-panel, group), the four B
//! tiles (32 columns × 128 k) are unpacked from the P64·G128 record and loaded into tile
//! registers once; then every 16-row block of the chunk loads its two A tiles and runs four
//! `tdpbsud` into two C tiles (A = int8 activations, B = u8 codes 0..15), stored per group,
//! and an f32 epilogue `acc += (D − z·A)·(s_w·s_a)` runs on the **previous** block's C buffer
//! while the current block's TDPs are in flight (two C buffers, ggml-style).
//!
//! Why B stays resident: tile registers are not renamed, so a tile load waits for every TDP
//! that still reads the register. The earlier 2×2 block (A and B reloaded for each 32-row
//! block) spent 187 ns per 32 × 32 × 128 on the first AMX host with its operands in L1, the
//! TDPs alone 43 ns; with B resident two 16-row blocks take 88 ns.
//!
//! A tiles are read in place from the quantized activations (16 rows K bytes apart): a per-call
//! copy in tile order (1 KB per tile) measured faster on single shapes but 5-12 % slower in
//! `edgeplan bench`'s whole layer on the first AMX host. B is unpacked with AVX-512; the records
//! come in by the hardware prefetchers (software prefetch of the next record, all 34 lines at
//! once, made the kernel slower; spread over the row blocks, no faster).
//!
//! Tile config (palette 1): tmm0/1 = A (k-steps 0/1, 16 rows × 64 B), tmm2–5 = B (columns
//! 0–15 k-steps 0/1, columns 16–31 k-steps 0/1; 16 k-quads × 64 B), tmm6/7 = C (16 × 16
//! int32). Tiles 8–15 and reserved bytes are zero. Each worker loads the config itself at
//! the start of every call (the shared static in `tile.rs`, `tile::load`) and releases the
//! tiles at the end. Rows past M come from [`QuantActs`]' zero padding (to a
//! multiple of 16), so partial M needs no reconfiguration.
//!
//! The tile operations sit behind the [`Tiles`] trait: [`Amx`] issues the instructions,
//! [`Emulated`] computes the same TDPBSUD semantics in scalar code. The emulator lets the
//! whole driver (unpack, padding, double buffering, threading, epilogue indexing) be tested
//! on hosts without AMX; the `asm!` blocks themselves only run where AMX is available.

use std::arch::asm;
use std::arch::x86_64::*;

use crate::kernels::acts::QuantActs;
use crate::kernels::buf::carve;
use crate::kernels::cpu::Feature;
use crate::kernels::pack::{PANEL, PackedW4, SCALE_OFFSET, ZERO_OFFSET, record_scale, record_zero};
use crate::kernels::panel_split::OutSink;
use crate::kernels::pool::{ThreadPool, split_range};
use crate::kernels::registry::{KernelFn, Phase, Unit, Variant};
use crate::kernels::weights::GROUP;

use crate::kernels::x86::amx::tile;

/// AMX-INT8 W4A8 prefill.
pub static W4A8_AMX: Variant = Variant {
    name: "w4a8-amx",
    isa: "amx-int8",
    unit: Unit::AmxInt8,
    phases: &[Phase::Prefill],
    requires: &[
        Feature::AmxTile,
        Feature::AmxInt8,
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Fma,
    ],
    rank: 40,
    kernel: KernelFn::W4A8(w4a8_amx),
};

/// Rows per M-chunk (the A chunk stays in L2; the f32 accumulator is 128 × 32 × 4 = 16 KB).
const M_CHUNK: usize = 128;
/// Columns per half-panel (two 16-column C tiles).
const HALF: usize = 32;
/// Bytes of one tile (16 rows × 64 B).
const TILE: usize = 1024;
/// Rows of one block: one A tile.
const BLOCK_ROWS: usize = 16;
/// int32 values of one block's C (two 16 × 16 tiles).
const C_LEN: usize = 2 * 256;

/// What the driver needs from a tile engine.
pub(super) trait Tiles: Sync {
    /// Called by each worker before its first block in a call.
    fn begin(&self);
    /// Called by each worker after its last block in a call.
    fn end(&self);
    /// Unpacks the 4 B tiles of half-panel `h` of a record into `b` (as [`unpack_b`]).
    fn unpack_b(&self, rec: &[u8], h: usize, b: &mut [u8; 4 * TILE]);
    /// Makes `b` the B operand of the blocks that follow: the 4 tiles of one half-panel and
    /// group, tile (jj, s) at `b[(2·jj + s)·1024..]` (16 k-quads × 64 B). The hardware keeps
    /// them in tile registers for every row block of the group.
    fn load_b(&self, b: &[u8; 4 * TILE]);
    /// `C[jj] = Σ_{s<2} A[s] · B[jj][s]` for one 16-row block: A tile s at `a + 64·s`
    /// (16 rows of 64 B, `lda` bytes apart), C tile jj stored at `c[jj·256..]` (16 × 16
    /// int32). `b` is what the last [`Tiles::load_b`] received (the emulator reads it from
    /// here). `between` runs after the block's TDPs are issued and before its C tiles are
    /// stored: the previous block's epilogue then overlaps these TDPs. It must not touch `c`.
    ///
    /// # Safety
    /// `a` is valid for reads of 16 rows of 128 bytes, `lda` apart; on this thread `begin` ran
    /// and `load_b(b)` was the last B load.
    unsafe fn block(
        &self,
        a: *const i8,
        lda: usize,
        b: &[u8; 4 * TILE],
        c: &mut [i32; C_LEN],
        between: &mut dyn FnMut(),
    );
    /// `acc[r][jj·16 + col] += (D − z·A_r)·(s_w·s_a,r)` for `r < rows` of a stored C block,
    /// with `ctx` giving the per-row activation scale and sum and the per-column scale/zero.
    fn epilogue(&self, c: &[i32; C_LEN], ctx: &EpilogueCtx<'_>, acc: &mut [f32]);
}

/// Per-block epilogue inputs.
pub(super) struct EpilogueCtx<'a> {
    /// Live rows of the block (≤ 16).
    pub rows: usize,
    /// Activation scale per live row.
    pub sa: &'a [f32],
    /// Activation code sum per live row.
    pub big_a: &'a [f32],
    /// The record (scales/zeros are read for the 32 columns at `col0`).
    pub rec: &'a [u8],
    /// First column (within the panel) of the half-panel: 0 or 32.
    pub col0: usize,
}

/// The hardware engine. Holding one proves AMX-INT8 (CPU, OS, permission), AVX-512 F/BW and
/// FMA are usable, which is what makes its safe methods sound.
pub(super) struct Amx {
    _proof: (),
}

impl Amx {
    /// # Safety
    /// The host supports everything `W4A8_AMX.requires` lists.
    unsafe fn new_unchecked() -> Self {
        Amx { _proof: () }
    }
}

impl Tiles for Amx {
    fn begin(&self) {
        // SAFETY: an `Amx` exists only when AMX is usable (CPU, OS and permission; see
        // `new_unchecked`). The config is valid (palette 1, tiles 0–7 ≤ 16 × 64, rest zero).
        unsafe { tile::load(&tile::PALETTE1_16X64) }
    }

    fn end(&self) {
        // SAFETY: AMX is usable (an `Amx` exists).
        unsafe { tile::release() }
    }

    fn unpack_b(&self, rec: &[u8], h: usize, b: &mut [u8; 4 * TILE]) {
        // SAFETY: an `Amx` exists only where AVX-512 F/BW are usable (`new_unchecked`).
        unsafe { unpack_b_avx512(rec, h, b) }
    }

    fn load_b(&self, b: &[u8; 4 * TILE]) {
        // SAFETY: AMX usable (an `Amx` exists); the driver calls `begin` before any B load;
        // the four loads read the 4 KB of `b` (stride in the index register, pitfall 2).
        // tmm2 = (jj 0, s 0), tmm3 = (0, 1), tmm4 = (1, 0), tmm5 = (1, 1).
        unsafe {
            asm!(
                "tileloadd tmm2, [{b} + {ld}*1]",
                "tileloadd tmm3, [{b} + {ld}*1 + 1024]",
                "tileloadd tmm4, [{b} + {ld}*1 + 2048]",
                "tileloadd tmm5, [{b} + {ld}*1 + 3072]",
                b = in(reg) b.as_ptr(),
                ld = in(reg) 64usize,
                out("tmm2") _, out("tmm3") _, out("tmm4") _, out("tmm5") _,
                options(nostack, preserves_flags),
            );
        }
    }

    unsafe fn block(
        &self,
        a: *const i8,
        lda: usize,
        _b: &[u8; 4 * TILE],
        c: &mut [i32; C_LEN],
        between: &mut dyn FnMut(),
    ) {
        // SAFETY: AMX usable (an `Amx` exists); `begin` configured the tiles and `load_b` put
        // B in tmm2–5 on this thread (caller's contract); A reads stay in the 16 rows of 128
        // bytes at `a` (stride `lda`, in the index register), the stores in the 2 KB of `c`.
        // Tile registers keep their contents between the two `asm!` blocks: the compiler
        // never allocates them and `between` runs AVX-512 code.
        unsafe {
            asm!(
                "tilezero tmm6",
                "tilezero tmm7",
                "tileloadd tmm0, [{a} + {lda}*1]",
                "tileloadd tmm1, [{a} + {lda}*1 + 64]",
                "tdpbsud tmm6, tmm0, tmm2",
                "tdpbsud tmm7, tmm0, tmm4",
                "tdpbsud tmm6, tmm1, tmm3",
                "tdpbsud tmm7, tmm1, tmm5",
                a = in(reg) a,
                lda = in(reg) lda,
                out("tmm0") _, out("tmm1") _, out("tmm6") _, out("tmm7") _,
                options(nostack, preserves_flags),
            );
            between();
            asm!(
                "tilestored [{c} + {ld}*1], tmm6",
                "tilestored [{c} + {ld}*1 + 1024], tmm7",
                c = in(reg) c.as_mut_ptr(),
                ld = in(reg) 64usize,
                options(nostack, preserves_flags),
            );
        }
    }

    fn epilogue(&self, c: &[i32; C_LEN], ctx: &EpilogueCtx<'_>, acc: &mut [f32]) {
        // SAFETY: an `Amx` exists only when AVX-512 F and FMA are usable (`new_unchecked`).
        unsafe { epilogue_avx512(c, ctx, acc) }
    }
}

#[target_feature(enable = "avx512f,fma")]
fn epilogue_avx512(c: &[i32; C_LEN], ctx: &EpilogueCtx<'_>, acc: &mut [f32]) {
    let rows = ctx.rows.min(BLOCK_ROWS);
    if ctx.sa.len() < rows || ctx.big_a.len() < rows || acc.len() < rows * HALF {
        return;
    }
    let (cp, ap) = (c.as_ptr(), acc.as_mut_ptr());
    for jj in 0..2 {
        let col = ctx.col0 + 16 * jj;
        let sw = crate::kernels::x86::w4a8::avx512vnni::bf16x16(
            &ctx.rec[SCALE_OFFSET + 2 * col..][..32],
        );
        let z =
            crate::kernels::x86::w4a8::avx512vnni::bf16x16(&ctx.rec[ZERO_OFFSET + 2 * col..][..32]);
        for r in 0..rows {
            // SAFETY: r < rows ≤ 16, so C tile jj's row r (16 values at jj·256 + 16r < 512),
            // sa[r], big_a[r] and acc's 16 values at r·32 + 16·jj are in bounds (lengths
            // checked above); unaligned loads and stores.
            unsafe {
                let d = _mm512_cvtepi32_ps(_mm512_loadu_si512(cp.add(jj * 256 + r * 16).cast()));
                let t = _mm512_fnmadd_ps(z, _mm512_set1_ps(*ctx.big_a.get_unchecked(r)), d);
                let s = _mm512_mul_ps(sw, _mm512_set1_ps(*ctx.sa.get_unchecked(r)));
                let o = ap.add(r * HALF + 16 * jj);
                _mm512_storeu_ps(o, _mm512_fmadd_ps(t, s, _mm512_loadu_ps(o)));
            }
        }
    }
}

/// Scalar model of the tile operations (TDPBSUD semantics), for testing the driver.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) struct Emulated;

impl Tiles for Emulated {
    fn begin(&self) {}
    fn end(&self) {}
    fn unpack_b(&self, rec: &[u8], h: usize, b: &mut [u8; 4 * TILE]) {
        unpack_b(rec, h, b)
    }
    fn load_b(&self, _b: &[u8; 4 * TILE]) {}

    unsafe fn block(
        &self,
        a: *const i8,
        lda: usize,
        b: &[u8; 4 * TILE],
        c: &mut [i32; C_LEN],
        between: &mut dyn FnMut(),
    ) {
        for jj in 0..2 {
            for r in 0..16 {
                for n in 0..16 {
                    let mut sum = 0i32;
                    for s in 0..2 {
                        for kq in 0..16 {
                            for t in 0..4 {
                                // SAFETY: within the A rows the caller guarantees.
                                let av = unsafe { *a.add(r * lda + 64 * s + 4 * kq + t) } as i32;
                                let bv = b[(2 * jj + s) * TILE + kq * 64 + 4 * n + t] as i32;
                                sum += av * bv;
                            }
                        }
                    }
                    c[jj * 256 + r * 16 + n] = sum;
                }
            }
        }
        between();
    }

    fn epilogue(&self, c: &[i32; C_LEN], ctx: &EpilogueCtx<'_>, acc: &mut [f32]) {
        for jj in 0..2 {
            for n in 0..16 {
                let col = ctx.col0 + 16 * jj + n;
                let (sw, z) = (
                    record_scale(ctx.rec, col).to_f32(),
                    record_zero(ctx.rec, col).to_f32(),
                );
                for r in 0..ctx.rows {
                    let d = c[jj * 256 + r * 16 + n] as f32;
                    let t = (-z).mul_add(ctx.big_a[r], d);
                    let o = &mut acc[r * HALF + 16 * jj + n];
                    *o = t.mul_add(sw * ctx.sa[r], *o);
                }
            }
        }
    }
}

#[cfg_attr(not(test), allow(dead_code))] // the emulator's; the hardware uses the AVX-512 form
/// Unpack the 4 B tiles of one half-panel `h` (columns 32h..32h+32) of a record:
/// tile (jj, s) row 2o' / 2o'+1 = low / high nibbles of chunk (8s + o', 2h + jj).
fn unpack_b(rec: &[u8], h: usize, b: &mut [u8; 4 * TILE]) {
    for jj in 0..2 {
        for s in 0..2 {
            for o2 in 0..8 {
                let src = &rec[(8 * s + o2) * 256 + (2 * h + jj) * 64..][..64];
                let dst = &mut b[(2 * jj + s) * TILE + 2 * o2 * 64..][..128];
                let (lo, hi) = dst.split_at_mut(64);
                for i in 0..64 {
                    lo[i] = src[i] & 0x0F;
                    hi[i] = src[i] >> 4;
                }
            }
        }
    }
}

/// [`unpack_b`] with AVX-512 BW: one 64-byte load, a mask and a shift per chunk.
///
/// # Safety
/// AVX-512 F/BW are usable.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn unpack_b_avx512(rec: &[u8], h: usize, b: &mut [u8; 4 * TILE]) {
    let mask = _mm512_set1_epi8(0x0F);
    for jj in 0..2 {
        for s in 0..2 {
            for o2 in 0..8 {
                let src = &rec[(8 * s + o2) * 256 + (2 * h + jj) * 64..][..64];
                let dst = &mut b[(2 * jj + s) * TILE + 2 * o2 * 64..][..128];
                // SAFETY: `src` holds 64 bytes and `dst` 128 (slices checked above);
                // unaligned loads and stores.
                unsafe {
                    let x = _mm512_loadu_si512(src.as_ptr().cast());
                    let lo = _mm512_and_si512(x, mask);
                    let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(x), mask);
                    _mm512_storeu_si512(dst.as_mut_ptr().cast(), lo);
                    _mm512_storeu_si512(dst.as_mut_ptr().add(64).cast(), hi);
                }
            }
        }
    }
}

/// # Safety
/// The CPU supports AMX-INT8 (with OS support and permission), AVX-512 F/BW and FMA; shapes
/// as in `registry::W4A8Fn`.
unsafe fn w4a8_amx(pool: &ThreadPool, w: &PackedW4, a: &QuantActs, out: &mut [f32]) {
    // SAFETY: the caller guarantees the variant's features (registry::W4A8Fn contract).
    let amx = unsafe { Amx::new_unchecked() };
    w4a8_tiles(pool, w, a, out, &amx);
}

/// The tile driver, generic over the engine (see the module docs).
pub(super) fn w4a8_tiles<T: Tiles>(
    pool: &ThreadPool,
    w: &PackedW4,
    a: &QuantActs,
    out: &mut [f32],
    tiles: &T,
) {
    let (m, n, k, groups) = (a.m(), w.n(), w.k(), w.groups());
    let halves = n.div_ceil(HALF);
    let chunks = m.div_ceil(M_CHUNK);
    let units = halves * chunks;
    let Some(out) = OutSink::new(out, m, n) else {
        return;
    };
    let codes = a.codes();
    assert!(codes.len() >= a.m_padded() * k && a.m_padded().is_multiple_of(16));
    pool.run(|wk| {
        let mine = split_range(units, wk.threads, wk.index);
        if mine.is_empty() {
            return;
        }
        let mut scratch =
            wk.scratch(4 * TILE + 2 * C_LEN * 4 + M_CHUNK * HALF * 4 + 2 * groups * m * 4 + 128);
        let b: &mut [u8] = carve(&mut scratch, 4 * TILE);
        let b: &mut [u8; 4 * TILE] = b.try_into().expect("4 KB B buffer");
        let cbuf: &mut [i32] = carve(&mut scratch, 2 * C_LEN);
        let (c0, c1) = cbuf.split_at_mut(C_LEN);
        let mut cs: [&mut [i32; C_LEN]; 2] =
            [c0.try_into().expect("C0"), c1.try_into().expect("C1")];
        let acc: &mut [f32] = carve(&mut scratch, M_CHUNK * HALF);
        // Per group, every row's activation scale and code sum, group-major: one contiguous
        // run per (group, M-chunk) for the epilogues.
        let sa_all: &mut [f32] = carve(&mut scratch, groups * m);
        let big_a_all: &mut [f32] = carve(&mut scratch, groups * m);
        row_factors(a, sa_all, big_a_all);
        tiles.begin();
        for unit in mine {
            let (hp, chunk) = (unit / chunks, unit % chunks);
            let (p, h) = (hp / 2, hp % 2);
            let m0 = chunk * M_CHUNK;
            let rows = M_CHUNK.min(m - m0);
            acc[..rows * HALF].fill(0.0);
            for g in 0..groups {
                let rec = w.record(p, g);
                tiles.unpack_b(rec, h, b);
                let group = Group {
                    rec,
                    h,
                    g,
                    m0,
                    rows,
                    sa: &sa_all[g * m + m0..][..rows],
                    big_a: &big_a_all[g * m + m0..][..rows],
                };
                tiles.load_b(b);
                group_blocks(tiles, a, b, &mut cs, &group, acc);
            }
            let c0 = p * PANEL + h * HALF;
            // SAFETY: each (half-panel, M-chunk) unit, hence each (row, column) range,
            // belongs to exactly one thread; `acc` holds `rows` rows of HALF values.
            unsafe { out.write_tile(m0, rows, c0, HALF, acc, HALF) };
        }
        tiles.end();
    });
}

/// Every row's activation scale and code sum per group, group-major (`[g·M + r]`).
fn row_factors(a: &QuantActs, sa: &mut [f32], big_a: &mut [f32]) {
    let m = a.m();
    for (g, (sa, big_a)) in sa
        .chunks_exact_mut(m)
        .zip(big_a.chunks_exact_mut(m))
        .enumerate()
    {
        for r in 0..m {
            sa[r] = a.scale(r, g);
            big_a[r] = a.sum(r, g) as f32;
        }
    }
}

/// One group of one (half-panel, M-chunk) unit.
struct Group<'a> {
    /// The group's record.
    rec: &'a [u8],
    /// Half-panel within the panel (0 or 1).
    h: usize,
    /// Group index.
    g: usize,
    /// First row of the M-chunk.
    m0: usize,
    /// Rows of the M-chunk.
    rows: usize,
    /// Activation scale per row of the chunk.
    sa: &'a [f32],
    /// Activation code sum per row of the chunk.
    big_a: &'a [f32],
}

/// Runs every 16-row block of the chunk against the resident B of `group`, each block's
/// epilogue overlapping the next block's TDPs (two C buffers).
fn group_blocks<T: Tiles>(
    tiles: &T,
    a: &QuantActs,
    b: &[u8; 4 * TILE],
    cs: &mut [&mut [i32; C_LEN]; 2],
    group: &Group<'_>,
    acc: &mut [f32],
) {
    let mut prev: Option<(usize, usize)> = None; // (first row, live rows)
    for (i, r0) in (0..group.rows).step_by(BLOCK_ROWS).enumerate() {
        let live = BLOCK_ROWS.min(group.rows - r0);
        let k = a.k();
        // Rows r0..r0+16 exist: r0 < rows, and the codes are padded to a multiple of 16 rows.
        let a_rows = &a.codes()[(group.m0 + r0) * k + group.g * GROUP..][..15 * k + 2 * 64];
        let [c_even, c_odd] = cs;
        let (cur, old) = if i % 2 == 0 {
            (&mut **c_even, &**c_odd)
        } else {
            (&mut **c_odd, &**c_even)
        };
        let mut epilogue_prev = || {
            if let Some((pr0, plive)) = prev {
                epilogue_at(tiles, old, group, pr0, plive, acc);
            }
        };
        // SAFETY: `a_rows` holds the block's 16 rows of 128 bytes at stride K; the caller ran
        // begin() and loaded `b` as the B operand.
        unsafe { tiles.block(a_rows.as_ptr(), k, b, cur, &mut epilogue_prev) };
        prev = Some((r0, live));
    }
    if let Some((pr0, plive)) = prev {
        let last = &*cs[(group.rows.div_ceil(BLOCK_ROWS) - 1) % 2];
        epilogue_at(tiles, last, group, pr0, plive, acc);
    }
}

fn epilogue_at<T: Tiles>(
    tiles: &T,
    c: &[i32; C_LEN],
    group: &Group<'_>,
    r0: usize,
    live: usize,
    acc: &mut [f32],
) {
    let ctx = EpilogueCtx {
        rows: live,
        sa: &group.sa[r0..r0 + live],
        big_a: &group.big_a[r0..r0 + live],
        rec: group.rec,
        col0: group.h * HALF,
    };
    tiles.epilogue(c, &ctx, &mut acc[r0 * HALF..(r0 + live) * HALF]);
}

#[cfg(test)]
mod tests {
    //! The AMX driver with the scalar tile emulator, against the exact reference; and the
    //! real AMX variant where the host has it.
    use super::*;
    use crate::kernels::acts::Bf16Rows;
    use crate::kernels::bf16::Bf16;
    use crate::kernels::fidelity::Rng;
    use crate::kernels::verify::Expected;

    fn case(m: usize, n: usize, k: usize, seed: u64, threads: usize) {
        let w = PackedW4::random(n, k, seed).unwrap();
        let mut rng = Rng::new(seed);
        let x: Vec<Bf16> = (0..m * k)
            .map(|_| Bf16::from_f32(rng.normal() as f32))
            .collect();
        let a = QuantActs::quantize(Bf16Rows::new(&x, m, k).unwrap()).unwrap();
        let want = Expected::w4a8(&w.unpack(), &a);
        let pool = ThreadPool::new(threads).unwrap();
        let mut got = vec![f32::NAN; m * n];
        w4a8_tiles(&pool, &w, &a, &mut got, &Emulated);
        if let Err(e) = want.check(&got) {
            panic!("emulated AMX driver M={m} N={n} K={k} seed {seed}: {e}");
        }
        match crate::kernels::registry::by_name("w4a8-amx")
            .unwrap()
            .ready()
        {
            Ok(amx) => {
                let mut hw = vec![f32::NAN; m * n];
                amx.w4a8(&pool, &w, &a, &mut hw).unwrap();
                if let Err(e) = want.check(&hw) {
                    panic!("w4a8-amx M={m} N={n} K={k} seed {seed}: {e}");
                }
            }
            Err(e) => eprintln!("SKIPPED w4a8-amx hardware check (M={m}): {e}"),
        }
    }

    #[test]
    fn emulated_driver_matches_reference() {
        let mut seed = 7000;
        for m in [1, 5, 16, 17, 31, 32, 33, 64, 129] {
            for (n, k) in [(63, 128), (200, 256)] {
                seed += 1;
                case(m, n, k, seed, 2);
            }
        }
        case(130, 65, 384, 7100, 3);
    }

    #[test]
    fn unpack_b_matches_code_positions() {
        let w = PackedW4::random(64, 128, 3).unwrap();
        let q = w.unpack();
        let mut b = [0u8; 4 * TILE];
        for h in 0..2 {
            unpack_b(w.record(0, 0), h, &mut b);
            for jj in 0..2 {
                for s in 0..2 {
                    for kq in 0..16 {
                        for n in 0..16 {
                            for t in 0..4 {
                                let col = 32 * h + 16 * jj + n;
                                let kk = 64 * s + 4 * kq + t;
                                assert_eq!(
                                    b[(2 * jj + s) * TILE + kq * 64 + 4 * n + t],
                                    q.codes[col * 128 + kk]
                                );
                            }
                        }
                    }
                }
            }
            if crate::kernels::cpu::has(Feature::Avx512f)
                && crate::kernels::cpu::has(Feature::Avx512bw)
            {
                let mut fast = [0u8; 4 * TILE];
                // SAFETY: AVX-512 F/BW confirmed just above.
                unsafe { unpack_b_avx512(w.record(0, 0), h, &mut fast) };
                assert!(
                    fast == b,
                    "AVX-512 unpack differs from the scalar one (half {h})"
                );
            } else {
                eprintln!("SKIPPED AVX-512 B unpack: no AVX-512 F/BW");
            }
        }
    }

    /// One block on the hardware against the emulator, bit for bit (integer arithmetic, so
    /// any difference is a semantic one: operand order, signedness, VNNI layout, strides).
    /// Full-range bytes on both sides, so swapping the signed and unsigned operands shows.
    #[test]
    fn hardware_block_matches_emulator() {
        if let Err(e) = crate::kernels::registry::by_name("w4a8-amx")
            .unwrap()
            .ready()
        {
            eprintln!("SKIPPED w4a8-amx block vs emulator: {e}");
            return;
        }
        // SAFETY: `ready()` just confirmed every feature `W4A8_AMX.requires` lists.
        let amx = unsafe { Amx::new_unchecked() };
        let mut rng = Rng::new(77);
        // Two 16-row blocks of rows 192 bytes apart (128 read per row).
        let lda = 192;
        let a: Vec<i8> = (0..32 * lda).map(|_| rng.next_u64() as i8).collect();
        let mut b = [0u8; 4 * TILE];
        b.iter_mut().for_each(|x| *x = rng.next_u64() as u8);
        amx.begin();
        amx.load_b(&b);
        // Two blocks against one resident B, the second with the first's epilogue slot used
        // (as the driver does): B must survive both and the `between` code.
        let mut calls = 0;
        for block in 0..2 {
            let (mut want, mut got) = ([0i32; C_LEN], [0i32; C_LEN]);
            let a_block = a[block * 16 * lda..].as_ptr();
            // SAFETY: A holds 16 rows of `lda` ≥ 128 bytes at `a_block`.
            unsafe { Emulated.block(a_block, lda, &b, &mut want, &mut || {}) };
            // SAFETY: as above; `begin` configured the tiles and `load_b(&b)` ran on this
            // thread.
            unsafe { amx.block(a_block, lda, &b, &mut got, &mut || calls += 1) };
            if let Some(i) = (0..C_LEN).find(|&i| want[i] != got[i]) {
                amx.end();
                panic!(
                    "tdpbsud block {block}: C[{i}] = {} on AMX, {} emulated",
                    got[i], want[i]
                );
            }
        }
        amx.end();
        assert_eq!(calls, 2, "`between` runs once per block");
    }

    #[test]
    fn tile_config_is_valid() {
        let c = tile::TileConfig::all_16x64();
        assert_eq!(c.palette, 1);
        assert!(c.colsb[8..].iter().all(|&x| x == 0) && c.rows[8..].iter().all(|&x| x == 0));
        assert_eq!(&c as *const tile::TileConfig as usize % 64, 0);
    }
}
