//! The one work splitter of the kernels: how every panel kernel (W4A8, W4A16, bf16, scalar
//! and SIMD, and the AMX drivers' output writes) shares an `out[M][N]` between threads.
//!
//! Output columns come in 64-wide panels, each a contiguous weight stream, so a task is
//! one panel (or one 32-column half-panel for the AMX paths). When there are fewer panels
//! than workers the reduction axis is split too (split-K, kernels.md pitfall 12): each
//! split writes its own partial `[m][n]` buffer (the pool's shared partials, kept across
//! calls) and the partials are summed afterwards ([`Grid`] decides the split).
//!
//! Entry points: [`run_panels`] (row blocks of [`MR_MAX`], a `[4][64]` [`Tile`]: W4A16 and
//! bf16) and [`w4a8_panels`] (row chunks of [`ROW_CHUNK`] through a [`PanelKernel`]: W4A8);
//! both are [`run_grid`] with a different row block. Tasks write through an [`OutSink`], a
//! raw view of the output that lets disjoint tasks write disjoint cells from different
//! threads.

use std::marker::PhantomData;
use std::ops::Range;

use super::acts::QuantActs;
use super::buf::carve;
use super::pack::PackedW4;
use super::pool::{ThreadPool, split_range};

/// Rows per weight pass of the small-M panel kernels.
pub const MR_MAX: usize = 4;
/// Output columns per panel.
pub const PANEL: usize = 64;
/// Output tile of one panel-kernel call: `[MR_MAX][PANEL]`.
pub type Tile = [f32; MR_MAX * PANEL];
/// Rows per accumulator chunk of the W4A8 panel kernels (the chunk's `[16][64]` f32
/// accumulator stays in L1).
pub const ROW_CHUNK: usize = 16;

/// A row-major `[m][n]` f32 output shared by tasks that write disjoint column ranges.
#[derive(Clone, Copy)]
pub struct OutSink<'a> {
    ptr: *mut f32,
    m: usize,
    n: usize,
    _life: PhantomData<&'a mut [f32]>,
}

// SAFETY: tasks only write disjoint (row, column) ranges (see `write_tile`'s contract), so
// sharing the pointer between threads cannot produce overlapping writes.
unsafe impl Send for OutSink<'_> {}
// SAFETY: as above.
unsafe impl Sync for OutSink<'_> {}

impl<'a> OutSink<'a> {
    /// Wraps `out`, which must hold `m·n` values.
    pub fn new(out: &'a mut [f32], m: usize, n: usize) -> Option<OutSink<'a>> {
        (out.len() == m.checked_mul(n)?).then_some(OutSink {
            ptr: out.as_mut_ptr(),
            m,
            n,
            _life: PhantomData,
        })
    }

    /// Rows.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Columns.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Copies `tile[r][c]` (row stride `ld`) into rows `r0..r0+rows`, columns
    /// `c0..min(c0+cols, n)`; columns past `n` (panel padding) are dropped.
    ///
    /// # Safety
    ///
    /// No other thread may read or write the same (row, column) cells during the call,
    /// and `tile` must hold `rows·ld` values with `cols ≤ ld`.
    pub unsafe fn write_tile(
        &self,
        r0: usize,
        rows: usize,
        c0: usize,
        cols: usize,
        tile: &[f32],
        ld: usize,
    ) {
        let cols = cols.min(self.n.saturating_sub(c0));
        let rows = rows.min(self.m.saturating_sub(r0));
        for r in 0..rows {
            let src = &tile[r * ld..r * ld + cols];
            // SAFETY: (r0 + r) < m and c0 + cols <= n, so the range is inside the buffer;
            // exclusivity of these cells is the caller's contract.
            unsafe {
                let dst = self.ptr.add((r0 + r) * self.n + c0);
                core::ptr::copy_nonoverlapping(src.as_ptr(), dst, cols);
            }
        }
    }
}

/// The task grid of one call: `panels × splits`, the reduction range cut into `splits`
/// contiguous parts of whole `unit`s (groups of 128 for W4A16, k-steps for bf16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Column panels (or half-panels).
    pub panels: usize,
    /// Parts of the reduction axis (1 = no split-K).
    pub splits: usize,
    /// Reduction units in total.
    pub units: usize,
}

impl Grid {
    /// Splits K only when there are fewer panels than workers, and never into parts
    /// smaller than `min_units`.
    pub fn new(panels: usize, units: usize, workers: usize, min_units: usize) -> Grid {
        let want = if panels == 0 || panels >= workers {
            1
        } else {
            workers.div_ceil(panels)
        };
        let max_splits = (units / min_units.max(1)).max(1);
        Grid {
            panels,
            splits: want.min(max_splits).max(1),
            units,
        }
    }

    /// Number of tasks.
    pub fn tasks(&self) -> usize {
        self.panels * self.splits
    }

    /// (panel, split, unit range) of task `t`.
    pub fn task(&self, t: usize) -> (usize, usize, core::ops::Range<usize>) {
        let (p, s) = (t / self.splits, t % self.splits);
        let lo = self.units * s / self.splits;
        let hi = self.units * (s + 1) / self.splits;
        (p, s, lo..hi)
    }
}

/// Sums `partials` (each `out.len()` long, consecutive) into `out`.
pub fn reduce_partials(out: &mut [f32], partials: &[f32]) {
    out.fill(0.0);
    for part in partials.chunks_exact(out.len().max(1)) {
        for (o, p) in out.iter_mut().zip(part) {
            *o += p;
        }
    }
}

/// Runs `f` over the whole `[m][n]` output: tasks are (panel, K split) pairs from
/// [`Grid::new`]`(panels, units, threads, min_units)`, spread over the pool in contiguous
/// ranges; each task calls `f(panel, unit_range, r0, mr, tile)` for every block of at most
/// `rows` rows, `tile` being `[rows][PANEL]` of the worker's scratch that `f` overwrites
/// (rows `mr..` ignored), and stores it. With split-K the partial sums go to the pool's
/// partials buffer and are reduced into `out`. Nothing is written when `out.len() != m·n`.
#[allow(clippy::too_many_arguments)]
pub fn run_grid<F>(
    pool: &ThreadPool,
    m: usize,
    n: usize,
    panels: usize,
    units: usize,
    min_units: usize,
    rows: usize,
    out: &mut [f32],
    f: F,
) where
    F: Fn(usize, Range<usize>, usize, usize, &mut [f32]) + Sync,
{
    let rows = rows.max(1);
    if out.len() != m * n {
        return;
    }
    let grid = Grid::new(panels, units, pool.threads(), min_units);
    let body = |sinks: &[OutSink<'_>]| {
        pool.run(|wk| {
            let mine = split_range(grid.tasks(), wk.threads, wk.index);
            let mut scratch = wk.scratch(rows * PANEL * 4);
            let tile: &mut [f32] = carve(&mut scratch, rows * PANEL);
            for t in mine {
                let (p, s, range) = grid.task(t);
                let mut r0 = 0;
                while r0 < m {
                    let mr = rows.min(m - r0);
                    f(p, range.clone(), r0, mr, tile);
                    // SAFETY: task (p, s) is the only writer of columns p·64..p·64+64 in
                    // sink s; the tile holds `rows` rows of PANEL values.
                    unsafe { sinks[s].write_tile(r0, mr, p * PANEL, PANEL, tile, PANEL) };
                    r0 += mr;
                }
            }
        });
    };
    if grid.splits == 1 {
        if let Some(sink) = OutSink::new(out, m, n) {
            body(&[sink]);
        }
        return;
    }
    let len = (m * n).max(1);
    let mut part = pool.partials(grid.splits * len);
    let sinks: Vec<OutSink<'_>> = part[..grid.splits * len]
        .chunks_exact_mut(len)
        .filter_map(|c| OutSink::new(&mut c[..m * n], m, n))
        .collect();
    if sinks.len() == grid.splits {
        body(&sinks);
        reduce_partials(out, &part[..grid.splits * len]);
    }
}

/// [`run_grid`] with row blocks of [`MR_MAX`] and a [`Tile`]: the W4A16 and bf16 panel
/// kernels' entry.
#[allow(clippy::too_many_arguments)]
pub fn run_panels<F>(
    pool: &ThreadPool,
    m: usize,
    n: usize,
    panels: usize,
    units: usize,
    min_units: usize,
    out: &mut [f32],
    f: F,
) where
    F: Fn(usize, Range<usize>, usize, usize, &mut Tile) + Sync,
{
    run_grid(
        pool,
        m,
        n,
        panels,
        units,
        min_units,
        MR_MAX,
        out,
        |p, range, r0, mr, tile| {
            let tile: &mut Tile = (&mut tile[..MR_MAX * PANEL])
                .try_into()
                .expect("run_grid hands out MR_MAX rows");
            f(p, range, r0, mr, tile)
        },
    );
}

/// A W4A8 panel microkernel: for `panel`, groups `groups` and rows `rows` (≤ [`ROW_CHUNK`]),
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

/// W4A8 `out[M][N]` with `kern` over all threads of `pool` ([`run_grid`] over 64-column
/// panels and 128-groups, row chunks of [`ROW_CHUNK`]). Shapes are the caller's contract
/// (checked by `registry::Ready`).
pub fn w4a8_panels<K: PanelKernel>(
    pool: &ThreadPool,
    w: &PackedW4,
    a: &QuantActs,
    out: &mut [f32],
    kern: &K,
) {
    run_grid(
        pool,
        a.m(),
        w.n(),
        w.panels(),
        w.groups(),
        1,
        ROW_CHUNK,
        out,
        |p, groups, r0, mr, acc| kern.run(w, a, p, groups, r0..r0 + mr, acc),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_splits_only_when_panels_are_scarce() {
        assert_eq!(Grid::new(32, 16, 2, 1).splits, 1);
        assert_eq!(Grid::new(1, 16, 2, 1).splits, 2);
        assert_eq!(Grid::new(1, 1, 4, 1).splits, 1);
        assert_eq!(Grid::new(2, 48, 16, 4).splits, 8);
        let g = Grid::new(1, 5, 2, 1);
        let covered: Vec<_> = (0..g.tasks()).flat_map(|t| g.task(t).2).collect();
        assert_eq!(covered, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn sink_drops_padding_columns() {
        let mut out = vec![0.0f32; 2 * 3];
        let sink = OutSink::new(&mut out, 2, 3).expect("sizes match");
        let tile: Vec<f32> = (0..8).map(|i| i as f32).collect();
        // SAFETY: single-threaded; the tile holds 2 rows of 4.
        unsafe { sink.write_tile(0, 2, 1, 4, &tile, 4) };
        assert_eq!(out, vec![0.0, 0.0, 1.0, 0.0, 4.0, 5.0]);
    }
}
