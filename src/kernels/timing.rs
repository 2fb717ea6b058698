//! Timing helpers for kernel benchmarks (used by `examples/kernels_bench.rs` and available
//! to `edgeplan bench`): DRAM read bandwidth, and a W4A8 timing loop that verifies the
//! variant first, then rotates over enough weight copies to exceed the last-level cache.
//!
//! Weight copies are generated directly in packed form ([`PackedW4::random`]); one call
//! covers one (N, K, M) shape. Times are medians over calls; GB/s counts packed weight bytes
//! (4.25 bits/weight, N padded to 64), TMAC/s counts M·N·K multiply-adds.

use std::time::{Duration, Instant};

use super::acts::{Bf16Rows, QuantActs};
use super::bf16::Bf16;
use super::error::KernelError;
use super::fidelity::Rng;
use super::pack::PackedW4;
use super::pool::{ThreadPool, split_range};
use super::reference;
use super::registry::Ready;

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
    /// Packed weight bytes streamed per second (GB/s, 1e9).
    pub weight_gbps: f64,
    /// Multiply-accumulates per second (1e12).
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

/// Sum-read `bytes` of memory on all threads of `pool`; best-of GB/s over `budget`.
pub fn read_bandwidth(pool: &ThreadPool, bytes: usize, budget: Duration) -> f64 {
    let words = bytes / 8;
    let buf: Vec<u64> = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9))
        .collect();
    let start = Instant::now();
    let mut best = 0.0f64;
    let mut reps = 0;
    while reps < 2 || (start.elapsed() < budget && reps < 50) {
        let t = Instant::now();
        pool.run(|w| {
            let part = &buf[split_range(words, w.threads, w.index)];
            let mut s = [0u64; 8];
            for c in part.chunks_exact(8) {
                for i in 0..8 {
                    s[i] = s[i].wrapping_add(c[i]);
                }
            }
            std::hint::black_box(s);
        });
        best = best.max(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
        reps += 1;
    }
    best
}

/// Time a W4A8 variant on an N×K weight with M rows. Weight copies are added until their
/// total size reaches `working_set` bytes. The variant is first checked against the exact
/// reference on the first 64..128 columns (same K, same M rows, up to 8 rows).
pub fn time_w4a8(
    kern: &Ready,
    pool: &ThreadPool,
    n: usize,
    k: usize,
    m: usize,
    working_set: usize,
    budget: Duration,
) -> Result<Timing, KernelError> {
    let first = PackedW4::random(n, k, 1)?;
    let copies = working_set.div_ceil(first.bytes()).max(1);
    let mut ws = vec![first];
    for c in 1..copies {
        ws.push(PackedW4::random(n, k, 1 + c as u64)?);
    }
    let mut rng = Rng::new(99);
    let x: Vec<Bf16> = (0..m * k)
        .map(|_| Bf16::from_f32(rng.normal() as f32))
        .collect();
    let a = QuantActs::quantize(Bf16Rows::new(&x, m, k)?)?;
    verify(kern, pool, &ws[0], &x, m, k)?;
    let mut out = vec![0.0f32; m * n];
    for w in &ws {
        kern.w4a8(pool, w, &a, &mut out)?; // warm-up: page faults, scratch growth, tile config
    }
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let start = Instant::now();
    let mut i = 0;
    while times.len() < 5 || (start.elapsed() < budget && times.len() < 100_000) {
        let c = thread_cpu_secs();
        let t = Instant::now();
        kern.w4a8(pool, &ws[i % copies], &a, &mut out)?;
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
        weight_gbps: ws[0].bytes() as f64 / secs / 1e9,
        tmacs: (m * n * k) as f64 / secs / 1e12,
        calls: times.len(),
        cpu_secs: cpu[cpu.len() / 2],
    })
}

fn verify(
    kern: &Ready,
    pool: &ThreadPool,
    w: &PackedW4,
    x: &[Bf16],
    m: usize,
    k: usize,
) -> Result<(), KernelError> {
    let head = w.first_panels(2);
    let mv = m.min(8);
    let a = QuantActs::quantize(Bf16Rows::new(&x[..mv * k], mv, k)?)?;
    let want = reference::w4a8(&head.unpack(), &a);
    let mut got = vec![0.0f32; mv * head.n()];
    kern.w4a8(pool, &head, &a, &mut got)?;
    let err = reference::rel_error(&got, &want);
    if err > 1e-5 {
        return Err(KernelError::Data(format!(
            "kernel {} failed verification before timing (relative error {err:.2e})",
            kern.name()
        )));
    }
    Ok(())
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
