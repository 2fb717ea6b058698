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
use crate::kernels::panel_split::OutSink;
use crate::kernels::x86::amx::bf16_engine::{BlockArgs, CTile, TileEngine};

/// Bytes of one k-step of one 32-row block: 32 rows × 32 bf16.
const STEP_BYTES: usize = 32 * 64;

/// The activations in tile order (see the module docs).
pub(crate) struct TiledRows<'a> {
    /// Rows actually present.
    m: usize,
    /// Columns (a multiple of 32).
    k: usize,
    /// `⌈M/32⌉·32·K` bf16 values as bytes.
    buf: &'a [u8],
}

impl<'a> TiledRows<'a> {
    /// Bytes of scratch the repacked `m × k` activations need.
    pub(crate) fn bytes(m: usize, k: usize) -> usize {
        m.div_ceil(32) * 32 * k * 2
    }

    /// Repacks `x` (K a multiple of 32) into `scratch` (≥ [`TiledRows::bytes`]).
    pub(crate) fn prepare(x: Bf16Rows<'_>, scratch: &'a mut [u8]) -> TiledRows<'a> {
        let bytes = Self::bytes(x.m, x.k);
        let buf = &mut scratch[..bytes];
        let steps = x.k / 32;
        for (block, dst_block) in buf.chunks_exact_mut(32 * x.k * 2).enumerate() {
            for r in 0..32 {
                let row = block * 32 + r;
                for (kk, dst_step) in dst_block.chunks_exact_mut(STEP_BYTES).enumerate() {
                    let dst = &mut dst_step[r * 64..][..64];
                    if row < x.m {
                        let src = &x.row(row)[kk * 32..][..32];
                        for (d, v) in dst.chunks_exact_mut(2).zip(src) {
                            d.copy_from_slice(&v.0.to_le_bytes());
                        }
                    } else {
                        dst.fill(0);
                    }
                }
                debug_assert_eq!(dst_block.len(), steps * STEP_BYTES);
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
    let block_bytes = 32 * x.k * 2;
    for (block, a) in x.buf.chunks_exact(block_bytes).enumerate() {
        let r0 = 32 * block;
        let args = BlockArgs {
            a: a.as_ptr(),
            lda: 64,
            astep: STEP_BYTES,
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
    use crate::kernels::bf16::Bf16;

    #[test]
    fn tiled_rows_place_each_value_and_zero_the_padding() {
        let (m, k) = (35, 128);
        let data: Vec<Bf16> = (0..m * k).map(|i| Bf16(i as u16 + 1)).collect();
        let x = Bf16Rows::new(&data, m, k).unwrap();
        let mut scratch = vec![0xAAu8; TiledRows::bytes(m, k) + 7];
        let t = TiledRows::prepare(x, &mut scratch);
        assert_eq!(t.buf.len(), 64 * k * 2);
        for row in 0..64 {
            for col in 0..k {
                let (block, r, kk, j) = (row / 32, row % 32, col / 32, col % 32);
                let at = block * 32 * k * 2 + kk * STEP_BYTES + r * 64 + 2 * j;
                let got = u16::from_le_bytes([t.buf[at], t.buf[at + 1]]);
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
