//! Timing helpers for kernel benchmarks (used by `examples/kernels_bench.rs`): DRAM read
//! bandwidth measured the way the kernels read, and one timing loop for a variant of any
//! path that first passes the correctness gate ([`super::verify::gate`]), then rotates over
//! enough weight copies to exceed the last-level cache.
//!
//! Weight copies are generated directly in packed form ([`PackedW4::random`],
//! [`PackedBf16::random`]); one call covers one (N, K, M) shape. Times are medians over
//! calls; GB/s counts packed weight bytes (4.25 bits/weight for int4, 16 for bf16, N padded
//! to 64), TMAC/s counts M·N·K multiply-adds.

use std::time::{Duration, Instant};

use super::acts::{Bf16Rows, QuantActs};
use super::bf16::Bf16;
use super::error::KernelError;
use super::fidelity::Rng;
use super::pack::{PackedBf16, PackedW4};
use super::pool::{ThreadPool, split_range};
use super::registry::{KernelPath, Ready};

/// One timed (variant, shape) result.
#[derive(Clone, Debug)]
pub struct Timing {
    /// Variant name.
    pub kernel: &'static str,
    /// Rows (tokens).
    pub m: usize,
    /// Output columns.
    pub n: usize,
    /// Input features.
    pub k: usize,
    /// Weight copies rotated through.
    pub copies: usize,
    /// Median seconds per call.
    pub secs: f64,
    /// Fastest call, seconds (on a shared host the best call is the better estimate of
    /// what the kernel can do).
    pub best_secs: f64,
    /// Packed weight bytes streamed per second (GB/s, 1e9), at the median.
    pub weight_gbps: f64,
    /// Multiply-accumulates per second (1e12), at the median.
    pub tmacs: f64,
    /// Calls timed.
    pub calls: usize,
    /// Median CPU time of the calling thread per call (Linux; else equal to `secs`). With one
    /// thread this is the kernel's own work time, robust to being descheduled on a busy host.
    pub cpu_secs: f64,
}

/// CPU time consumed by the calling thread, in seconds.
#[cfg(target_os = "linux")]
pub fn thread_cpu_secs() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// CPU time consumed by the calling thread (not available on this OS).
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_secs() -> Option<f64> {
    None
}

/// Read bandwidth of all threads of `pool` (GB/s), measured like the kernels read weights:
/// short calls, each streaming one 32 MiB slice of a `bytes` buffer with
/// [`super::wide_sum`] (rotated, so no slice is cache-resident when it is read again); the
/// best call within `budget` (at least 2 rounds over the slices).
pub fn read_bandwidth(pool: &ThreadPool, bytes: usize, budget: Duration) -> f64 {
    const SLICE: usize = 32 << 20;
    let words = (bytes / 8).max(SLICE / 8);
    let buf: Vec<u64> = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9))
        .collect();
    let slices = (words * 8 / SLICE).max(1);
    let per = words / slices;
    let start = Instant::now();
    let mut best = f64::INFINITY;
    let mut i = 0;
    while i < 2 * slices || (start.elapsed() < budget && i < 1000) {
        let part = &buf[(i % slices) * per..][..per];
        let t = Instant::now();
        pool.run(|w| {
            std::hint::black_box(super::wide_sum(&part[split_range(per, w.threads, w.index)]));
        });
        best = best.min(t.elapsed().as_secs_f64());
        i += 1;
    }
    (per * 8) as f64 / best / 1e9
}

/// Weight copies of one path.
enum Weights {
    W4(Vec<PackedW4>),
    Bf16(Vec<PackedBf16>),
}

/// Time variant `kern` on an N×K weight with M rows. Weight copies are added until their
/// total size reaches `working_set` bytes. The variant first passes the kernels'
/// correctness gate ([`super::verify::gate`]).
pub fn time_variant(
    kern: &Ready,
    pool: &ThreadPool,
    n: usize,
    k: usize,
    m: usize,
    working_set: usize,
    budget: Duration,
) -> Result<Timing, KernelError> {
    super::verify::gate(kern, pool)?;
    let path = kern.variant().path();
    let weights = match path {
        KernelPath::W4A8 | KernelPath::W4A16 => {
            let first = PackedW4::random(n, k, 1)?;
            let copies = working_set.div_ceil(first.bytes()).max(1);
            let mut ws = vec![first];
            for c in 1..copies {
                ws.push(PackedW4::random(n, k, 1 + c as u64)?);
            }
            Weights::W4(ws)
        }
        KernelPath::Bf16 => {
            let first = PackedBf16::random(n, k, 1)?;
            let copies = working_set.div_ceil(first.bytes()).max(1);
            let mut ws = vec![first];
            for c in 1..copies {
                ws.push(PackedBf16::random(n, k, 1 + c as u64)?);
            }
            Weights::Bf16(ws)
        }
    };
    let (copies, bytes) = match &weights {
        Weights::W4(ws) => (ws.len(), ws[0].bytes()),
        Weights::Bf16(ws) => (ws.len(), ws[0].bytes()),
    };
    let mut rng = Rng::new(99);
    let x: Vec<Bf16> = (0..m * k)
        .map(|_| Bf16::from_f32(rng.normal() as f32))
        .collect();
    let rows = Bf16Rows::new(&x, m, k)?;
    let a = QuantActs::quantize(rows)?;
    let mut out = vec![0.0f32; m * n];
    let mut call = |i: usize| -> Result<(), KernelError> {
        match (&weights, path) {
            (Weights::W4(ws), KernelPath::W4A8) => kern.w4a8(pool, &ws[i % copies], &a, &mut out),
            (Weights::W4(ws), _) => kern.w4a16(pool, &ws[i % copies], rows, &mut out),
            (Weights::Bf16(ws), _) => kern.bf16(pool, &ws[i % copies], rows, &mut out),
        }
    };
    for i in 0..copies {
        call(i)?; // warm-up: page faults, scratch growth, tile config
    }
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let start = Instant::now();
    let mut i = 0;
    while times.len() < 5 || (start.elapsed() < budget && times.len() < 100_000) {
        let c = thread_cpu_secs();
        let t = Instant::now();
        call(i)?;
        let wall = t.elapsed().as_secs_f64();
        times.push(wall);
        cpu.push(match (c, thread_cpu_secs()) {
            (Some(c0), Some(c1)) => c1 - c0,
            _ => wall,
        });
        i += 1;
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let secs = times[times.len() / 2];
    Ok(Timing {
        kernel: kern.name(),
        m,
        n,
        k,
        copies,
        secs,
        best_secs: times[0],
        weight_gbps: bytes as f64 / secs / 1e9,
        tmacs: (m * n * k) as f64 / secs / 1e12,
        calls: times.len(),
        cpu_secs: cpu[cpu.len() / 2],
    })
}

/// The linear layers of a Qwen3-1.7B-shaped model: (name, N, K).
pub const QWEN3_1_7B: &[(&str, usize, usize)] = &[
    ("q_proj", 2048, 2048),
    ("k_proj", 1024, 2048),
    ("v_proj", 1024, 2048),
    ("o_proj", 2048, 2048),
    ("gate_proj", 6144, 2048),
    ("up_proj", 6144, 2048),
    ("down_proj", 2048, 6144),
    ("lm_head", 151936, 2048),
];
