//! The shared W4A8 work split for panel kernels (scalar, AVX2, AVX-VNNI, AVX-512 VNNI):
//! threads take contiguous ranges of 64-column panels; when there are fewer panels than
//! threads, K is split too (split-K: per-slice partial sums in the pool's shared buffer,
//! reduced by the caller). Rows are processed in chunks of [`ROW_CHUNK`] so the per-thread
//! f32 accumulator stays in L1.
//!
//! An ISA module provides only the panel microkernel (see [`PanelKernel`]); this file owns
//! threading, output masking for N % 64 and the reduction.

use std::ops::Range;

use super::acts::QuantActs;
use super::buf::carve;
use super::pack::{PANEL, PackedW4};
use super::pool::{SharedMut, ThreadPool, split_range};

/// Rows per accumulator chunk.
pub const ROW_CHUNK: usize = 16;

/// A panel microkernel: for `panel`, groups `groups` and rows `rows` (≤ [`ROW_CHUNK`]),
/// write `acc[(r − rows.start)·64 + c]` = the partial W4A8 output of column `64·panel + c`
/// over those groups (overwrite, not accumulate).
pub trait PanelKernel: Sync {
    /// See the trait docs.
    fn run(
        &self,
        w: &PackedW4,
        a: &QuantActs,
        panel: usize,
        groups: Range<usize>,
        rows: Range<usize>,
        acc: &mut [f32],
    );
}

impl<F> PanelKernel for F
where
    F: Fn(&PackedW4, &QuantActs, usize, Range<usize>, Range<usize>, &mut [f32]) + Sync,
{
    fn run(
        &self,
        w: &PackedW4,
        a: &QuantActs,
        panel: usize,
        groups: Range<usize>,
        rows: Range<usize>,
        acc: &mut [f32],
    ) {
        self(w, a, panel, groups, rows, acc)
    }
}

/// How many K slices each panel is cut into for `threads` threads.
pub fn k_slices(panels: usize, groups: usize, threads: usize) -> usize {
    if panels >= threads {
        1
    } else {
        (threads / panels).clamp(1, groups)
    }
}

/// Compute `out[M][N]` with `kern` over all threads of `pool`. Shapes are the caller's
/// contract (checked by `registry::Ready`).
pub fn w4a8_panels<K: PanelKernel>(
    pool: &ThreadPool,
    w: &PackedW4,
    a: &QuantActs,
    out: &mut [f32],
    kern: &K,
) {
    let (m, n, panels, groups) = (a.m(), w.n(), w.panels(), w.groups());
    let threads = pool.threads();
    let ks = k_slices(panels, groups, threads);
    if ks == 1 {
        let out = SharedMut::new(out);
        pool.run(|wk| {
            let mine = split_range(panels, wk.threads, wk.index);
            let mut scratch = wk.scratch(ROW_CHUNK * PANEL * 4);
            let acc: &mut [f32] = carve(&mut scratch, ROW_CHUNK * PANEL);
            for p in mine {
                let cols = PANEL.min(n - p * PANEL);
                for r0 in (0..m).step_by(ROW_CHUNK) {
                    let rows = r0..(r0 + ROW_CHUNK).min(m);
                    kern.run(w, a, p, 0..groups, rows.clone(), acc);
                    for r in rows.clone() {
                        // SAFETY: each panel (hence each column range) belongs to one thread.
                        let dst = unsafe { out.slice(r * n + p * PANEL, cols) };
                        dst.copy_from_slice(&acc[(r - r0) * PANEL..][..cols]);
                    }
                }
            }
        });
    } else {
        let width = panels * PANEL;
        let mut part = pool.partials(ks * m * width);
        let shared = SharedMut::new(&mut part[..ks * m * width]);
        pool.run(|wk| {
            let mine = split_range(panels * ks, wk.threads, wk.index);
            let mut scratch = wk.scratch(ROW_CHUNK * PANEL * 4);
            let acc: &mut [f32] = carve(&mut scratch, ROW_CHUNK * PANEL);
            for unit in mine {
                let (p, s) = (unit / ks, unit % ks);
                let gr = split_range(groups, ks, s);
                for r0 in (0..m).step_by(ROW_CHUNK) {
                    let rows = r0..(r0 + ROW_CHUNK).min(m);
                    kern.run(w, a, p, gr.clone(), rows.clone(), acc);
                    for r in rows.clone() {
                        // SAFETY: (slice, panel) units are disjoint across threads.
                        let dst = unsafe { shared.slice((s * m + r) * width + p * PANEL, PANEL) };
                        dst.copy_from_slice(&acc[(r - r0) * PANEL..][..PANEL]);
                    }
                }
            }
        });
        for r in 0..m {
            for c in 0..n {
                out[r * n + c] = (0..ks).map(|s| part[(s * m + r) * width + c]).sum();
            }
        }
    }
}
