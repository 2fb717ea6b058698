//! Memory read bandwidth, measured in the same run and with the same thread pool as the
//! GEMMs, so every decode figure has its roofline.
//!
//! Each worker sums its own contiguous share of a buffer several times larger than the
//! L3 (filled with non-zero data, so no page is the shared zero page). The share is read
//! as [`STREAMS`] concurrent streams: split into that many equal parts, visited in turn
//! [`BLOCK_WORDS`] words (1 KiB) at a time, each block summed with the host's widest
//! loads (32-byte AVX2 loads and four accumulators on x86-64). With one stream per thread
//! the same loop read 8-14 % less on a Zen 4 VM, less than the decode GEMVs themselves
//! streamed (decode read 107-117 % of it); with 4-8 streams it reads as fast as the
//! hardware lets, and the GEMVs sit at 94-101 % of it (docs/lab/bench-runs.md has the
//! figures). The roofline is the best repeat (noise only ever slows a read down, as
//! STREAM reports it); the median and min are kept too.

use std::hint::black_box;

use super::backend::Parallel;
use super::clock::{Clock, Sampling};
use super::rows::Bandwidth;
use super::stats::Summary;

/// The buffer: four times the L3, at least 512 MiB (the reference used 1 GiB).
pub fn buffer_bytes(l3_bytes: u64) -> u64 {
    (4 * l3_bytes).max(512 << 20)
}

/// Concurrent read streams per worker: as fast as a true lockstep loop over 4-8 streams
/// on the Zen 4 VM this was tuned on; more than 8 gained nothing.
pub const STREAMS: usize = 8;

/// Words each stream advances per visit: 1 KiB, 16 cache lines, so each visit is a few
/// back-to-back loads the core overlaps with the next stream's (4 KiB visits read ~5 %
/// less, 512 B the same).
pub const BLOCK_WORDS: usize = 128;

/// Wrapping sum of `words` read as [`STREAMS`] interleaved streams of [`BLOCK_WORDS`]
/// blocks; every word is read exactly once (the tail past the last whole round last).
pub fn interleaved_sum(words: &[u64]) -> u64 {
    let per = words.len() / STREAMS / BLOCK_WORDS * BLOCK_WORDS;
    let mut sum = 0u64;
    for at in (0..per).step_by(BLOCK_WORDS) {
        for s in 0..STREAMS {
            let start = s * per + at;
            sum = sum.wrapping_add(super::peaks::wide_sum(&words[start..start + BLOCK_WORDS]));
        }
    }
    sum.wrapping_add(super::peaks::wide_sum(&words[STREAMS * per..]))
}

/// The share of `len` words worker `w` of `n` reads.
fn share(len: usize, w: usize, n: usize) -> std::ops::Range<usize> {
    let per = len.div_ceil(n.max(1));
    (w * per).min(len)..((w + 1) * per).min(len)
}

/// The probe's buffer, kept so the rounds can re-run it between decode steps.
pub struct Probe {
    buf: Vec<u64>,
}

impl Probe {
    /// Allocates and fills a buffer of about `bytes`.
    pub fn new(bytes: u64) -> Probe {
        let words = (bytes / 8) as usize;
        Probe {
            buf: (0..words as u64).map(|i| i | 1).collect(),
        }
    }

    pub fn bytes(&self) -> u64 {
        self.buf.len() as u64 * 8
    }

    /// One timed pass over the whole buffer, all workers; returns GB/s.
    pub fn once(&self, pool: &dyn Parallel, clock: &dyn Clock) -> f64 {
        let words = self.buf.len();
        let workers = pool.workers();
        let buf = &self.buf;
        let t = clock.time(&mut || {
            pool.run(&|w, _n| {
                black_box(interleaved_sum(black_box(&buf[share(words, w, workers)])));
            })
        });
        self.bytes() as f64 / t.max(1e-12) / 1e9
    }
}

/// Measures read bandwidth with `probe` under `sampling`.
pub fn measure(
    pool: &dyn Parallel,
    clock: &dyn Clock,
    probe: &Probe,
    sampling: Sampling,
) -> anyhow::Result<Bandwidth> {
    let mut gbps = Vec::new();
    let mut run = || -> anyhow::Result<f64> {
        let g = probe.once(pool, clock);
        gbps.push(g);
        Ok(1.0 / g.max(1e-12))
    };
    sampling.collect(clock, &mut run)?;
    // collect() also ran the warm-up passes: keep the timed ones.
    let timed = &gbps[sampling.warmup.min(gbps.len())..];
    let s = Summary::of(timed).ok_or_else(|| anyhow::anyhow!("bandwidth: no samples"))?;
    Ok(Bandwidth {
        gbps: s.max,
        gbps_median: s.median,
        gbps_min: s.min,
        buffer_bytes: probe.bytes(),
        repeats: s.n,
        paired: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_sum_matches_the_obvious_fold() {
        let v: Vec<u64> = (0..1003).map(|i| i * 7 + 1).collect();
        assert_eq!(super::super::peaks::wide_sum(&v), v.iter().sum::<u64>());
        assert_eq!(super::super::peaks::wide_sum(&[]), 0);
    }

    #[test]
    fn interleaved_streams_read_every_word_once() {
        // Lengths around whole rounds of streams x blocks, and shorter than one block.
        let round = STREAMS * BLOCK_WORDS;
        for len in [
            0,
            1,
            127,
            128,
            round - 1,
            round,
            round + 1,
            3 * round + 77,
            10_007,
        ] {
            // Distinct, large words: a word read twice or skipped changes the sum.
            let v: Vec<u64> = (0..len as u64)
                .map(|i| (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect();
            let want = v.iter().fold(0u64, |a, &w| a.wrapping_add(w));
            assert_eq!(interleaved_sum(&v), want, "len {len}");
        }
    }

    #[test]
    fn shares_cover_the_buffer_once() {
        for n in 1..5 {
            let total: usize = (0..n).map(|w| share(10, w, n).len()).sum();
            assert_eq!(total, 10);
        }
        assert!(share(2, 3, 4).is_empty());
    }

    #[test]
    fn buffer_is_at_least_four_l3s() {
        assert_eq!(buffer_bytes(32 << 20), 512 << 20);
        assert_eq!(buffer_bytes(300 << 20), 1200 << 20);
    }
}
