//! Software prefetch of the next weight block while the current one is in use.
//!
//! The prefill GEMMs prepare one weight block per (panel, group) — unpacked, dequantized,
//! or read in place — and then pass every row of the M chunk over it. Each block's first
//! touch would wait for DRAM with nothing to overlap, because everything after it needs
//! the block; so while the rows of block `g` run, the bytes block `g + 1` will read are
//! prefetched a few cache lines per register block.
//!
//! The decode GEMVs stream each panel once, front to back; [`stream_ahead`] keeps a fixed
//! distance of prefetched lines in front of the read position, which the hardware
//! prefetchers of some CPUs do not (on a Zen 1 the bf16 GEMV read 17 GB/s from DRAM with
//! 2 threads without it and 20 with it).

use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};

/// Bytes ahead of the read position that [`stream_ahead`] prefetches (kernels_bench, Zen 1,
/// bf16 GEMV 6144 × 2048, 2 threads: 2 KB and 8 KB within noise of each other, both
/// 12-20 % faster than none).
pub(crate) const STREAM_AHEAD: usize = 4096;

/// Prefetches `lines` cache lines starting [`STREAM_AHEAD`] bytes after `at`, into L1.
/// Call once per `64·lines` bytes consumed from a sequential stream.
#[inline(always)]
pub(crate) fn stream_ahead(at: *const u8, lines: usize) {
    for l in 0..lines {
        let p = at.wrapping_add(STREAM_AHEAD + 64 * l);
        // SAFETY: a prefetch is only a hint: it never faults, even past the end of the
        // stream's allocation, and writes nothing; `wrapping_add` keeps the address
        // arithmetic defined. SSE is part of the x86-64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
}

/// The next block's source bytes and how far their prefetch has got.
pub(crate) struct NextBlock<'a> {
    bytes: Option<&'a [u8]>,
    line: usize,
}

impl<'a> NextBlock<'a> {
    /// Prefetches `bytes` (None: nothing to prefetch, e.g. the task's last group).
    pub(crate) fn new(bytes: Option<&'a [u8]>) -> Self {
        NextBlock { bytes, line: 0 }
    }

    /// Lines of the source (0 when there is none).
    pub(crate) fn lines(&self) -> usize {
        self.bytes.map_or(0, |b| b.len().div_ceil(64))
    }

    /// Prefetches the next `count` lines into L1 (fewer at the end).
    #[inline(always)]
    pub(crate) fn advance(&mut self, count: usize) {
        let Some(bytes) = self.bytes else { return };
        let stop = bytes
            .len()
            .div_ceil(64)
            .min(self.line.saturating_add(count));
        while self.line < stop {
            // SAFETY: the address is inside `bytes` (line · 64 < len); a prefetch never
            // faults and writes nothing. SSE is part of the x86-64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(64 * self.line).cast()) };
            self.line += 1;
        }
    }

    /// Prefetches whatever is left.
    #[inline(always)]
    pub(crate) fn finish(&mut self) {
        self.advance(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::NextBlock;

    #[test]
    fn advances_by_lines_and_stops_at_the_end() {
        let bytes = vec![0u8; 4352];
        let mut next = NextBlock::new(Some(&bytes));
        assert_eq!(next.lines(), 68);
        next.advance(4);
        assert_eq!(next.line, 4);
        next.advance(100);
        assert_eq!(next.line, 68);
        next.finish();
        assert_eq!(next.line, 68);
        let mut none = NextBlock::new(None);
        none.finish();
        assert_eq!((none.lines(), none.line), (0, 0));
        let odd = vec![0u8; 65];
        let mut two = NextBlock::new(Some(&odd));
        two.finish();
        assert_eq!(two.line, 2);
    }
}
