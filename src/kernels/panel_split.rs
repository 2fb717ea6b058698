//! How the W4A16 and bf16 panel kernels share work between threads.
//!
//! Output columns come in 64-wide panels, each a contiguous weight stream, so a task is
//! one panel (or one 32-column half-panel for the AMX paths). When there are fewer panels
//! than workers the reduction axis is split too (split-K, kernels.md pitfall 12): each
//! split writes its own partial `[m][n]` buffer and the partials are summed afterwards.
//!
//! The per-task closure gets an [`OutSink`], a raw view of the output that lets disjoint
//! tasks write disjoint columns of the same row-major matrix from different threads.

use std::marker::PhantomData;
use std::ops::Range;

use super::pool::{ThreadPool, split_range};

/// Rows per weight pass of the small-M panel kernels.
pub const MR_MAX: usize = 4;
/// Output columns per panel.
pub const PANEL: usize = 64;
/// Output tile of one panel-kernel call: `[MR_MAX][PANEL]`.
pub type Tile = [f32; MR_MAX * PANEL];

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

/// Runs a panel kernel over the whole `[m][n]` output: tasks are (panel, K split) pairs
/// from [`Grid::new`]`(panels, units, threads, min_units)`, spread over the pool in
/// contiguous ranges; each task calls `f(panel, unit_range, r0, mr, tile)` for every row
/// block of at most [`MR_MAX`] rows and stores the tile. With split-K the partial sums go to
/// a temporary buffer and are reduced into `out`. Nothing is written when
/// `out.len() != m·n`.
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
    if out.len() != m * n {
        return;
    }
    let grid = Grid::new(panels, units, pool.threads(), min_units);
    let mut partial = if grid.splits > 1 {
        vec![0.0f32; grid.splits * m * n]
    } else {
        Vec::new()
    };
    {
        let sinks: Vec<OutSink<'_>> = if grid.splits > 1 {
            partial
                .chunks_exact_mut((m * n).max(1))
                .filter_map(|c| OutSink::new(c, m, n))
                .collect()
        } else {
            OutSink::new(out, m, n).into_iter().collect()
        };
        if sinks.len() != grid.splits {
            return;
        }
        pool.run(|wk| {
            let mut tile: Tile = [0.0; MR_MAX * PANEL];
            for t in split_range(grid.tasks(), wk.threads, wk.index) {
                let (p, s, range) = grid.task(t);
                let mut r0 = 0;
                while r0 < m {
                    let mr = MR_MAX.min(m - r0);
                    f(p, range.clone(), r0, mr, &mut tile);
                    // SAFETY: task (p, s) is the only writer of columns p·64..p·64+64 in
                    // sink s; the tile holds MR_MAX rows of PANEL values.
                    unsafe { sinks[s].write_tile(r0, mr, p * PANEL, PANEL, &tile, PANEL) };
                    r0 += mr;
                }
            }
        });
    }
    if grid.splits > 1 {
        reduce_partials(out, &partial);
    }
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
