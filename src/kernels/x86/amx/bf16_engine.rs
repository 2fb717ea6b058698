//! AMX-BF16 2×2 tile microkernel (`TDPBF16PS`, kernels.md §4.4, §4.6, §6.2) and a scalar
//! emulation of the very same block, so the drivers around it (panel dequantization,
//! VNNI-2 addressing, M tails, output clipping) are tested on hosts without AMX.
//!
//! One block computes a 32×32 f32 tile `C = A·B` over `ksteps` steps of 32 k:
//! - A: 32 rows of bf16 activations, row stride `lda` bytes; rows 16–31 start `16·lda`
//!   after rows 0–15; step `kk` reads bytes `64·kk .. 64·kk+64` of each row.
//! - B: VNNI-2 rows, one row per k-pair, each row 32 columns × (bf16, bf16) = 128 bytes
//!   used, row stride `ldb` bytes. Columns 0–15 are the first 64 bytes of a row, columns
//!   16–31 the next 64. Step `kk` starts `kk·bstep` bytes after `b` (16 rows).
//! - C: written once at the end (full-K accumulation in four C tiles), row-major 32×32.
//!
//! Tiles: tmm0/tmm1 = A rows 0–15 / 16–31, tmm2/tmm3 = B columns 0–15 / 16–31,
//! tmm4–7 = C (rows × columns: 00, 01, 10, 11). Every tile is 16 rows × 64 bytes, so one
//! palette-1 configuration serves the whole kernel.
//!
//! Safety contract of the real engine: the process holds the XTILEDATA permission (K1's
//! foundation requests it before the pool starts), every worker calls [`TileEngine::begin`]
//! (`ldtilecfg`) before its first block and [`TileEngine::end`] (`tilerelease`) after its
//! last, and no Rust code runs between the tile instructions of one block (one `asm!`).

use core::arch::asm;

use crate::kernels::x86::amx::tile;

/// A 32×32 f32 output tile, 64-byte aligned for `tilestored`.
#[repr(C, align(64))]
pub(crate) struct CTile(pub [f32; 32 * 32]);

impl CTile {
    pub(crate) fn new() -> CTile {
        CTile([0.0; 32 * 32])
    }
}

/// Operands of one 2×2 block (see the module docs for the layout).
#[derive(Clone, Copy)]
pub(crate) struct BlockArgs {
    /// First A row (32 rows readable, `64·ksteps` bytes each).
    pub a: *const u8,
    /// A row stride in bytes.
    pub lda: usize,
    /// First B row of step 0.
    pub b: *const u8,
    /// B row stride in bytes (≥ 128).
    pub ldb: usize,
    /// Bytes from one k-step's B rows to the next.
    pub bstep: usize,
    /// Steps of 32 k (≥ 1).
    pub ksteps: usize,
}

/// Something that runs the 2×2 block: real AMX or its emulation.
pub(crate) trait TileEngine: Copy + Send + Sync {
    /// Per worker, before its first block (`ldtilecfg`).
    fn begin(&self);
    /// Computes `c = A·B` over the whole K of `args`.
    ///
    /// # Safety
    ///
    /// [`begin`](TileEngine::begin) ran on this thread since the last `end`; the A rows,
    /// B rows of every step, and their strides are readable as described in the module docs.
    unsafe fn block(&self, args: &BlockArgs, c: &mut CTile);
    /// Per worker, after its last block (`tilerelease`).
    fn end(&self);
}

/// Real AMX-BF16. Holding one proves the CPU has AMX-TILE and AMX-BF16, the OS enabled
/// XTILECFG/XTILEDATA, and the process was granted the tile-data permission.
#[derive(Clone, Copy)]
pub(crate) struct AmxBf16 {
    _private: (),
}

impl AmxBf16 {
    /// `Some` only when AMX-BF16 is usable by this process.
    pub(crate) fn new() -> Option<AmxBf16> {
        crate::kernels::cpu::has(crate::kernels::cpu::Feature::AmxBf16)
            .then_some(AmxBf16 { _private: () })
    }
}

impl TileEngine for AmxBf16 {
    fn begin(&self) {
        // SAFETY: `self` proves AMX is usable; the shared palette-1 configuration is valid
        // and lives in a static (it cannot go stale or be elided, pitfall 3).
        unsafe { tile::load(&tile::PALETTE1_16X64) }
    }

    unsafe fn block(&self, args: &BlockArgs, c: &mut CTile) {
        // The loop below is `dec; jnz`: entered with 0 steps it would run 2^64 times, reading
        // far past the operands. No K means C = 0 (what the emulator computes too).
        if args.ksteps == 0 {
            c.0.fill(0.0);
            return;
        }
        let a1 = args.a.wrapping_add(16 * args.lda);
        // SAFETY: the caller guarantees the operand ranges and that begin() configured the
        // tiles; tileloadd/tilestored use SIB addressing with the stride in the index
        // register (pitfall 2); C is 4 KB, 64-aligned, rows of 128 B: tile (i, j) starts at
        // byte 2048·i + 64·j. The tmm registers are declared clobbered.
        unsafe {
            asm!(
                "tilezero tmm4",
                "tilezero tmm5",
                "tilezero tmm6",
                "tilezero tmm7",
                "2:",
                "tileloadd tmm0, [{a} + {lda}*1]",
                "tileloadd tmm2, [{b} + {ldb}*1]",
                "tileloadd tmm3, [{b} + {ldb}*1 + 64]",
                "tdpbf16ps tmm4, tmm0, tmm2",
                "tdpbf16ps tmm5, tmm0, tmm3",
                "tileloadd tmm1, [{a1} + {lda}*1]",
                "tdpbf16ps tmm6, tmm1, tmm2",
                "tdpbf16ps tmm7, tmm1, tmm3",
                "add {a}, 64",
                "add {a1}, 64",
                "add {b}, {bstep}",
                "dec {n}",
                "jnz 2b",
                "mov {n}, 128",
                "tilestored [{c} + {n}*1], tmm4",
                "tilestored [{c} + {n}*1 + 64], tmm5",
                "tilestored [{c} + {n}*1 + 2048], tmm6",
                "tilestored [{c} + {n}*1 + 2112], tmm7",
                a = inout(reg) args.a => _,
                a1 = inout(reg) a1 => _,
                b = inout(reg) args.b => _,
                n = inout(reg) args.ksteps => _,
                lda = in(reg) args.lda,
                ldb = in(reg) args.ldb,
                bstep = in(reg) args.bstep,
                c = in(reg) c.0.as_mut_ptr(),
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                options(nostack)
            );
        }
    }

    fn end(&self) {
        // SAFETY: `self` proves AMX is usable.
        unsafe { tile::release() }
    }
}

#[cfg(test)]
/// Scalar emulation of [`AmxBf16::block`]: same operands, same addressing, and the
/// `TDPBF16PS` arithmetic of the Intel SDM's pseudo-code: per instruction (one k-step of
/// 16 pairs), the even and the odd products of each output go to two separate f32
/// accumulators (fused multiply-add), which are then summed and added to C; bf16 inputs
/// with denormals treated as zero, every f32 result with denormals flushed to zero, RNE.
#[derive(Clone, Copy, Default)]
pub(crate) struct EmulatedTiles;

#[cfg(test)]
/// bf16 bits at `p` as f32, denormals flushed (as `TDPBF16PS` reads its inputs).
///
/// # Safety
///
/// `p` is readable for 2 bytes.
#[inline]
unsafe fn bf16_at(p: *const u8) -> f32 {
    // SAFETY: forwarded contract; unaligned read of a u16.
    let bits = unsafe { p.cast::<u16>().read_unaligned() };
    crate::kernels::bf16_act::bf16_to_f32_daz(bits)
}

#[cfg(test)]
/// `x` with a denormal flushed to zero of the same sign (AMX-BF16 writes no denormals).
#[inline]
fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        0f32.copysign(x)
    } else {
        x
    }
}

#[cfg(test)]
impl TileEngine for EmulatedTiles {
    fn begin(&self) {}

    unsafe fn block(&self, args: &BlockArgs, c: &mut CTile) {
        c.0.fill(0.0);
        for kk in 0..args.ksteps {
            for i in 0..32 {
                // SAFETY: (block) the caller guarantees these ranges (module docs).
                let arow = unsafe { args.a.add(i * args.lda + 64 * kk) };
                // One TDPBF16PS per 16 columns; the columns are independent, so both C
                // tiles of row `i` are done together.
                let (mut even, mut odd) = ([0f32; 32], [0f32; 32]);
                for p in 0..16 {
                    // SAFETY: (block) B row `p` of step `kk` is readable (module docs).
                    let brow = unsafe { args.b.add(kk * args.bstep + p * args.ldb) };
                    // SAFETY: (block) A row `i` holds the 64 bytes of step `kk`; 4p+3 < 64.
                    let (a0, a1) =
                        unsafe { (bf16_at(arow.add(4 * p)), bf16_at(arow.add(4 * p + 2))) };
                    for col in 0..32 {
                        // SAFETY: (block) a B row holds 32 columns × 4 bytes; 4col+3 < 128.
                        let (b0, b1) =
                            unsafe { (bf16_at(brow.add(4 * col)), bf16_at(brow.add(4 * col + 2))) };
                        even[col] = ftz(a0.mul_add(b0, even[col]));
                        odd[col] = ftz(a1.mul_add(b1, odd[col]));
                    }
                }
                for col in 0..32 {
                    let acc = &mut c.0[i * 32 + col];
                    *acc = ftz(*acc + ftz(even[col] + odd[col]));
                }
            }
        }
    }

    fn end(&self) {}
}

#[cfg(test)]
mod tests {
    //! The emulator against hand-worked cases of the SDM's TDPBF16PS pseudo-code (Intel SDM
    //! vol. 2, TDPBF16PS "Operation"): per instruction, the even and the odd bf16 products
    //! of a column go to two separate FP32 accumulators (FMA, DAZ = FTZ = 1, RNE), which are
    //! then added together and to the destination. Summation order and flushing are visible
    //! in the results below, so an emulator that accumulates pair by pair fails them.
    use super::*;

    const ONE: u16 = 0x3F80;
    const TWO_POW_24: u16 = 0x4B80;
    const NEG_TWO_POW_24: u16 = 0xCB80;
    const TWO_POW_NEG_70: u16 = 0x1C80;

    /// One k-step (a single TDPBF16PS per tile): A is 32 rows × 32 bf16 (stride 64 B),
    /// B is 16 VNNI-2 rows × 32 pairs (stride 128 B). Returns C.
    fn run(a: &[u16; 32 * 32], b: &[u16; 16 * 64]) -> CTile {
        let mut c = CTile::new();
        let args = BlockArgs {
            a: a.as_ptr().cast(),
            lda: 64,
            b: b.as_ptr().cast(),
            ldb: 128,
            bstep: 16 * 128,
            ksteps: 1,
        };
        // SAFETY: A holds 32 rows of 64 bytes, B 16 rows of 128 bytes, one step.
        unsafe { EmulatedTiles.block(&args, &mut c) };
        c
    }

    #[test]
    fn even_and_odd_products_accumulate_separately() {
        // Row 0 of A: pairs (1, 1), (1, 1). Column 0 of B: pairs (2^24, 1), (1, −2^24).
        // SDM: even = 2^24 + 1 → 2^24 (RNE), odd = 1 − 2^24 (exact); C = 2^24 + 1 − 2^24 = 1.
        // Accumulating pair by pair gives 2^24 → 2^24 → 2^24 → 0 instead.
        let mut a = [0u16; 32 * 32];
        a[..4].copy_from_slice(&[ONE; 4]);
        let mut b = [0u16; 16 * 64];
        b[0] = TWO_POW_24;
        b[1] = ONE;
        b[64] = ONE;
        b[65] = NEG_TWO_POW_24;
        let c = run(&a, &b);
        assert_eq!(c.0[0], 1.0);
        assert!(c.0[1..].iter().all(|&x| x == 0.0));
    }

    /// The hardware against the emulator, bit for bit, on random operands over 3 k-steps:
    /// the emulator follows the SDM's pseudo-code, and the first AMX host it ran on (an
    /// Intel Xeon with AMX, KVM guest, 2026-12-01) agreed on every output, so the emulated
    /// driver tests stand for the hardware. SKIPPED where AMX-BF16 is not usable.
    #[test]
    fn hardware_block_matches_emulator_bitwise() {
        let Some(amx) = AmxBf16::new() else {
            eprintln!("SKIPPED bf16 AMX block vs emulator: no usable AMX-BF16");
            return;
        };
        let mut rng = crate::kernels::fidelity::Rng::new(91);
        let bf = |rng: &mut crate::kernels::fidelity::Rng| {
            (((rng.normal() as f32).to_bits() + 0x8000) >> 16) as u16
        };
        let (lda, ldb, ksteps) = (3 * 64 + 64, 192, 3);
        let a: Vec<u16> = (0..32 * lda / 2).map(|_| bf(&mut rng)).collect();
        let b: Vec<u16> = (0..16 * ksteps * ldb / 2).map(|_| bf(&mut rng)).collect();
        let args = BlockArgs {
            a: a.as_ptr().cast(),
            lda,
            b: b.as_ptr().cast(),
            ldb,
            bstep: 16 * ldb,
            ksteps,
        };
        let (mut want, mut got) = (CTile::new(), CTile::new());
        // SAFETY: A holds 32 rows of `lda` ≥ 64·ksteps bytes; B holds 16·ksteps rows of
        // `ldb` ≥ 128 bytes; `begin` configured the tiles on this thread.
        unsafe {
            EmulatedTiles.block(&args, &mut want);
            amx.begin();
            amx.block(&args, &mut got);
        }
        amx.end();
        let diff: Vec<usize> = (0..1024)
            .filter(|&i| want.0[i].to_bits() != got.0[i].to_bits())
            .collect();
        assert!(
            diff.is_empty(),
            "{} of 1024 outputs differ; first C[{}] = {:e} on AMX, {:e} emulated",
            diff.len(),
            diff[0],
            got.0[diff[0]],
            want.0[diff[0]]
        );
    }

    #[test]
    fn denormal_results_are_flushed() {
        // 2^-70 · 2^-70 = 2^-140 is an f32 denormal: TDPBF16PS flushes it (FTZ).
        let mut a = [0u16; 32 * 32];
        a[0] = TWO_POW_NEG_70;
        let mut b = [0u16; 16 * 64];
        b[0] = TWO_POW_NEG_70;
        let c = run(&a, &b);
        assert_eq!(c.0[0].to_bits(), 0);
    }
}
