//! bf16 prefill GEMM with `vdpbf16ps` (`bf16-gemm-avx512bf16`): the packed VNNI-2 panel
//! already is a sequence of bf16-pair blocks (64 pair rows × 256 B per 128-k group), so the
//! shared microkernel of `x86/dpbf16.rs` reads the weights in place; each block stays in
//! L1 while every row of the M chunk passes over it.

use crate::kernels::acts::Bf16Rows;
use crate::kernels::pack::{PANEL, PackedBf16};
use crate::kernels::pool::ThreadPool;
use crate::kernels::x86::dpbf16::{self, BLOCK_BYTES, Block, BlockSource};

/// Blocks of a packed bf16 weight, in place.
struct InPlace<'a> {
    w: &'a PackedBf16,
}

impl BlockSource for InPlace<'_> {
    fn block(&self, panel: usize, group: usize, _scratch: &mut Block) -> *const u8 {
        self.source(panel, group).as_ptr()
    }
    fn source(&self, panel: usize, group: usize) -> &[u8] {
        let k = self.w.k();
        let start = panel * PANEL * k + group * BLOCK_BYTES / 2;
        let blk = &self.w.as_slice()[start..start + BLOCK_BYTES / 2];
        // SAFETY: `Bf16` is `repr(transparent)` over `u16`, so the block's BLOCK_BYTES / 2
        // initialized values are BLOCK_BYTES readable bytes with the same lifetime.
        unsafe { core::slice::from_raw_parts(blk.as_ptr().cast::<u8>(), BLOCK_BYTES) }
    }
}

/// Below this many rows the GEMM runs `bf16-gemv-avx512` instead (paired A/B, 6144 × 2048,
/// 2 threads, Zen 4: the GEMV took 0.63, 0.83 and 0.90 of the GEMM's time at M = 4, 8 and
/// 12; the GEMM 0.85 of the GEMV's at 16).
pub(crate) const GEMM_MIN_M: usize = 16;

/// `bf16-gemm-avx512bf16`.
///
/// # Safety
///
/// The CPU runs AVX-512 F/BW/BF16; shapes agree (`x.k == w.k()`, `out.len() == x.m·w.n()`).
pub unsafe fn gemm(pool: &ThreadPool, w: &PackedBf16, x: Bf16Rows<'_>, out: &mut [f32]) {
    if x.m < GEMM_MIN_M {
        // SAFETY: `bf16-gemv-avx512` needs AVX-512 F/BW/BF16, this function's contract.
        return unsafe { super::gemv_avx512(pool, w, x, out) };
    }
    if x.k != w.k() {
        return;
    }
    // SAFETY: the features are this function's contract; every (panel, group) block lies
    // inside the packed buffer (sliced above, which panics rather than reading outside);
    // panels start 64-byte aligned (the buffer is aligned and a panel is 128·K bytes) and
    // blocks are 16 KB apart; the registry checked the output length.
    unsafe { dpbf16::gemm(pool, x, w.n(), w.panels(), &InPlace { w }, out) };
}
