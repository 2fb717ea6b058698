//! The M loop shared by the AMX-BF16 drivers (W4A16 prefill and bf16 prefill): for one
//! 32-column slab of VNNI-2 weight rows, run every 32-row block of the activations through
//! the 2×2 tile block and copy the valid part of each C tile to the output.
//!
//! Activations are repacked once per worker and call into tile order ([`TiledRows`]): per
//! 32-row block and k-step of 32, the 16 rows of the first A tile (64 B each) then the 16 of
//! the second, 2 KB contiguous, blocks one after the other. Read in place instead, an A tile
//! is 16 lines at a stride of 2·K bytes (4096 or more, so all in one L1 set) fetched from L2 at
//! every k-step; on the first AMX host that held the kernels at 17 % of the tile peak. Rows
//! past M are zero in the repacked copy, so a partial last block needs no other
//! configuration (kernels.md §4.3, ggml's zero-padded A).

use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16::Bf16;
use crate::kernels::panel_split::OutSink;
use crate::kernels::x86::amx::bf16_engine::{BlockArgs, CTile, TileEngine};

/// bf16 values of one k-step of one 32-row block: 32 rows × 32.
const STEP_VALUES: usize = 32 * 32;

/// The activations in tile order (see the module docs).
pub(crate) struct TiledRows<'a> {
    /// Rows actually present.
    m: usize,
    /// Columns (a multiple of 32).
    k: usize,
    /// `⌈M/32⌉·32·K` bf16 values.
    buf: &'a [Bf16],
}

impl<'a> TiledRows<'a> {
    /// bf16 values of scratch the repacked `m × k` activations need.
    pub(crate) fn len(m: usize, k: usize) -> usize {
        m.div_ceil(32) * 32 * k
    }

    /// Repacks `x` (K a multiple of 32) into `scratch` (≥ [`TiledRows::len`] values).
    pub(crate) fn prepare(x: Bf16Rows<'_>, scratch: &'a mut [Bf16]) -> TiledRows<'a> {
        let buf = &mut scratch[..Self::len(x.m, x.k)];
        for (block, dst_block) in buf.chunks_exact_mut(32 * x.k).enumerate() {
            for r in 0..32 {
                let row = block * 32 + r;
                for (kk, dst_step) in dst_block.chunks_exact_mut(STEP_VALUES).enumerate() {
                    let dst = &mut dst_step[r * 32..][..32];
                    if row < x.m {
                        dst.copy_from_slice(&x.row(row)[kk * 32..][..32]);
                    } else {
                        dst.fill(Bf16::ZERO);
                    }
                }
            }
        }
        TiledRows {
            m: x.m,
            k: x.k,
            buf,
        }
    }
}

/// One slab of B: `ksteps` steps of 16 VNNI-2 rows; columns 0–15 at byte 0 of a row,
/// 16–31 at byte 64.
#[derive(Clone, Copy)]
pub(crate) struct Slab {
    /// First row of step 0.
    pub b: *const u8,
    /// Row stride in bytes.
    pub ldb: usize,
    /// Bytes between steps.
    pub bstep: usize,
}

/// Runs all row blocks of `x` against `slab`, writing output columns `col0..col0+32`.
///
/// # Safety
///
/// `engine.begin()` ran on this thread; the slab holds `x.k / 32` steps of 16 rows of at
/// least 128 readable bytes each at the given strides; no other thread writes output
/// columns `col0..col0+32` during the call.
pub(crate) unsafe fn slab_rows<T: TileEngine>(
    engine: &T,
    x: &TiledRows<'_>,
    slab: Slab,
    sink: &OutSink<'_>,
    col0: usize,
    c: &mut CTile,
) {
    for (block, a) in x.buf.chunks_exact(32 * x.k).enumerate() {
        let r0 = 32 * block;
        let args = BlockArgs {
            a: a.as_ptr().cast::<u8>(),
            lda: 64,
            astep: 2 * STEP_VALUES,
            b: slab.b,
            ldb: slab.ldb,
            bstep: slab.bstep,
            ksteps: x.k / 32,
        };
        // SAFETY: `a` is one 32-row block of K/32 steps of 2 KB (rows 16–31 at +1024 =
        // 16·lda); B is the caller's contract; begin() ran.
        unsafe { engine.block(&args, c) };
        // SAFETY: this thread owns columns col0..col0+32 (caller's contract).
        unsafe { sink.write_tile(r0, 32.min(x.m - r0), col0, 32, &c.0, 32) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiled_rows_place_each_value_and_zero_the_padding() {
        let (m, k) = (35, 128);
        let data: Vec<Bf16> = (0..m * k).map(|i| Bf16(i as u16 + 1)).collect();
        let x = Bf16Rows::new(&data, m, k).unwrap();
        let mut scratch = vec![Bf16(0xAAAA); TiledRows::len(m, k) + 7];
        let t = TiledRows::prepare(x, &mut scratch);
        assert_eq!(t.buf.len(), 64 * k);
        for row in 0..64 {
            for col in 0..k {
                let (block, r, kk, j) = (row / 32, row % 32, col / 32, col % 32);
                let got = t.buf[block * 32 * k + kk * STEP_VALUES + r * 32 + j].0;
                let want = if row < m {
                    (row * k + col) as u16 + 1
                } else {
                    0
                };
                assert_eq!(got, want, "row {row} col {col}");
            }
        }
    }
}
