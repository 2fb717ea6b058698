//! The M loop shared by the AMX-BF16 drivers (W4A16 prefill and bf16 prefill): for one
//! 32-column slab of VNNI-2 weight rows, run every 32-row block of the activations through
//! the 2×2 tile block and copy the valid part of each C tile to the output.
//!
//! Activations are read in place (bf16 rows, stride 2·K bytes); a last block with fewer
//! than 32 rows reads from a zero-padded copy prepared once per worker ([`TailRows`]),
//! never by changing the tile configuration (kernels.md §4.3, ggml's zero-padded A).

use crate::kernels::acts::Bf16Rows;
use crate::kernels::panel_split::OutSink;
use crate::kernels::x86::amx::bf16_engine::{BlockArgs, CTile, TileEngine};

/// The rows of the last, partial 32-row block, zero-padded to 32 rows.
pub(crate) struct TailRows<'a> {
    /// Rows actually present (1..32), or 0 when M is a multiple of 32.
    pub rows: usize,
    /// `32·K` bf16 values (as bytes), rows past `rows` zero.
    pub buf: &'a [u8],
}

impl<'a> TailRows<'a> {
    /// Bytes of scratch a tail needs for K.
    pub(crate) fn bytes(k: usize) -> usize {
        32 * k * 2
    }

    /// Copies the partial block of `x` into `scratch` (≥ [`TailRows::bytes`]).
    pub(crate) fn prepare(x: Bf16Rows<'_>, scratch: &'a mut [u8]) -> TailRows<'a> {
        let r0 = x.m / 32 * 32;
        let rows = x.m - r0;
        if rows == 0 {
            return TailRows { rows, buf: &[] };
        }
        let bytes = Self::bytes(x.k);
        let buf = &mut scratch[..bytes];
        buf.fill(0);
        for r in 0..rows {
            let src = x.row(r0 + r);
            for (i, v) in src.iter().enumerate() {
                let b = v.0.to_le_bytes();
                buf[(r * x.k + i) * 2] = b[0];
                buf[(r * x.k + i) * 2 + 1] = b[1];
            }
        }
        TailRows { rows, buf }
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
/// least 128 readable bytes each at the given strides; `tail` was prepared from `x`; no
/// other thread writes output columns `col0..col0+32` during the call.
pub(crate) unsafe fn slab_rows<T: TileEngine>(
    engine: &T,
    x: Bf16Rows<'_>,
    tail: &TailRows<'_>,
    slab: Slab,
    sink: &OutSink<'_>,
    col0: usize,
    c: &mut CTile,
) {
    let ksteps = x.k / 32;
    let lda = 2 * x.k;
    let mut r0 = 0;
    while r0 < x.m {
        let (a, rows) = if r0 + 32 <= x.m {
            (x.data[r0 * x.k..].as_ptr().cast::<u8>(), 32)
        } else {
            (tail.buf.as_ptr(), tail.rows)
        };
        let args = BlockArgs {
            a,
            lda,
            b: slab.b,
            ldb: slab.ldb,
            bstep: slab.bstep,
            ksteps,
        };
        // SAFETY: 32 rows of 2·K bytes are readable at `a` (a full block of x, or the
        // 32-row tail copy); B is the caller's contract; begin() ran.
        unsafe { engine.block(&args, c) };
        // SAFETY: this thread owns columns col0..col0+32 (caller's contract).
        unsafe { sink.write_tile(r0, rows, col0, 32, &c.0, 32) };
        r0 += 32;
    }
}
