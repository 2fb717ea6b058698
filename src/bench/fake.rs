//! The test executor: a backend that simulates its GEMMs on a virtual clock, and a
//! plain scoped-thread pool.
//!
//! With `EDGEPLAN_BENCH_EXECUTOR=fake` (hidden; for tests, like hyperfine's
//! `--debug-mode`), `bench` runs this backend under a [`FakeClock`]: every GEMM charges
//! the clock a simulated duration from its bytes and multiply-accumulates instead of
//! running, so the report's shape, the extrapolation and the verdict are exact and
//! repeatable. Packed weights built from real data (the fidelity check) are computed for
//! real with a scalar int4 / bf16 model, so fidelity figures stay meaningful. The report
//! says `"executor": "fake"` so its figures are never mistaken for measurements.

use std::sync::Arc;

use super::backend::{Backend, KernelInfo, KernelPath, Parallel, Phase, Scheme, Unit};
use super::clock::FakeClock;
use super::workload::GROUP;
use crate::kernels::bf16::Bf16;

/// A [`Parallel`] over fresh scoped threads (worker 0 runs on the caller's thread).
#[derive(Debug)]
pub struct ScopedPool {
    workers: usize,
}

impl ScopedPool {
    pub fn new(workers: usize) -> ScopedPool {
        ScopedPool {
            workers: workers.max(1),
        }
    }
}

impl Parallel for ScopedPool {
    fn workers(&self) -> usize {
        self.workers
    }

    fn run(&self, f: &(dyn Fn(usize, usize) + Sync)) {
        let n = self.workers;
        std::thread::scope(|s| {
            for w in 1..n {
                s.spawn(move || f(w, n));
            }
            f(0, n);
        });
    }
}

/// Simulated throughput of the fake kernels: (bytes/s streamed, MAC/s).
fn speed(path: KernelPath) -> (f64, f64) {
    match path {
        KernelPath::W4A8 => (20e9, 400e9),
        KernelPath::W4A16 => (20e9, 150e9),
        KernelPath::Bf16 => (20e9, 250e9),
    }
}

pub struct FakeWeights {
    path: KernelPath,
    n: usize,
    k: usize,
    /// The dequantized matrix when built from real data, `None` for timing-only buffers.
    dequant: Option<Vec<f32>>,
}

pub struct FakeInput {
    m: usize,
    k: usize,
    x: Vec<f32>,
}

pub struct FakeBackend {
    pool: ScopedPool,
    clock: Arc<FakeClock>,
    slow: Option<KernelPath>,
    /// Every GEMM's simulated time is multiplied by this (a disturbed host).
    disturbance: f64,
}

impl FakeBackend {
    pub fn new(workers: usize, clock: Arc<FakeClock>) -> FakeBackend {
        FakeBackend {
            pool: ScopedPool::new(workers),
            clock,
            slow: None,
            disturbance: 1.0,
        }
    }

    /// Makes every GEMM `factor` times slower, as another job on the host would
    /// (to test the solo check of `bench --engine`).
    pub fn disturbed(mut self, factor: f64) -> FakeBackend {
        self.disturbance = factor;
        self
    }

    /// Makes `path` four times slower than its default simulated speed.
    pub fn slowing(mut self, path: Option<KernelPath>) -> FakeBackend {
        self.slow = path;
        self
    }
}

impl Parallel for FakeBackend {
    fn workers(&self) -> usize {
        self.pool.workers()
    }
    /// Runs `f` for real and charges the time to stream [`FAKE_REGION_BYTES`] at the
    /// simulated 20 GB/s (the bandwidth probe reads a buffer of that size in fake runs).
    fn run(&self, f: &(dyn Fn(usize, usize) + Sync)) {
        self.pool.run(f);
        self.clock.advance(FAKE_REGION_BYTES as f64 / 20e9);
    }
}

/// The buffer the bandwidth probe reads under the fake executor.
pub const FAKE_REGION_BYTES: u64 = 1 << 20;

fn kernel(name: &str, path: KernelPath, rank: u32) -> KernelInfo {
    KernelInfo {
        name: name.into(),
        path,
        phases: vec![Phase::Decode, Phase::Prefill],
        // What the simulated speeds stand for (not the scalar reference, which bench
        // keeps out of prefill).
        unit: if path == KernelPath::W4A8 {
            Unit::Avx2Int8
        } else {
            Unit::Avx2Fma
        },
        unavailable: None,
        rank,
    }
}

fn bf16_round(x: f32) -> f32 {
    Bf16::from_f32(x).to_f32()
}

/// Round trip through 4-bit codes per 128-group: symmetric (zero 8) or min/max fitted.
fn int4_round_trip(w: &[f32], scheme: Scheme) -> Vec<f32> {
    let mut out = Vec::with_capacity(w.len());
    for g in w.chunks(GROUP) {
        let (lo, hi) = g
            .iter()
            .fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let (scale, zero) = match scheme {
            Scheme::Symmetric => (lo.abs().max(hi.abs()) / 7.5, 8.0),
            Scheme::Asymmetric => (
                (hi - lo) / 15.0,
                -lo / ((hi - lo) / 15.0).max(f32::MIN_POSITIVE),
            ),
        };
        let scale = if scale > 0.0 { bf16_round(scale) } else { 1.0 };
        let zero = bf16_round(zero);
        out.extend(
            g.iter()
                .map(|&v| ((v / scale + zero).round().clamp(0.0, 15.0) - zero) * scale),
        );
    }
    out
}

fn int8_round_trip(x: &[f32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for g in x.chunks(GROUP) {
        let amax = g.iter().fold(0.0f32, |a, &v| a.max(v.abs()));
        let s = if amax > 0.0 { amax / 127.0 } else { 1.0 };
        out.extend(g.iter().map(|&v| (v / s).round().clamp(-127.0, 127.0) * s));
    }
    out
}

impl Backend for FakeBackend {
    type Weights = FakeWeights;
    type Input = FakeInput;

    fn kernels(&self) -> Vec<KernelInfo> {
        let mut broken = kernel("w4a8-fake-broken", KernelPath::W4A8, 0);
        broken.phases = vec![Phase::Decode];
        vec![
            broken,
            kernel("w4a8-fake", KernelPath::W4A8, 1),
            kernel("w4a16-fake", KernelPath::W4A16, 1),
            kernel("bf16-fake", KernelPath::Bf16, 1),
            KernelInfo {
                unavailable: Some("no such unit on any host".into()),
                ..kernel("w4a8-fake-missing", KernelPath::W4A8, 0)
            },
        ]
    }

    fn verify(&self, kernel: &KernelInfo) -> Result<(), String> {
        if kernel.name.ends_with("broken") {
            Err("max abs error 1.0e0 vs the scalar reference on 64x128 (tolerance 1e-5)".into())
        } else {
            Ok(())
        }
    }

    fn pack(
        &self,
        path: KernelPath,
        w: &[f32],
        n: usize,
        k: usize,
        scheme: Scheme,
    ) -> anyhow::Result<FakeWeights> {
        anyhow::ensure!(
            w.len() == n * k && k.is_multiple_of(GROUP),
            "fake pack: bad shape {n}x{k}"
        );
        let dequant = match path {
            KernelPath::Bf16 => w.iter().map(|&v| bf16_round(v)).collect(),
            _ => w
                .chunks(k)
                .flat_map(|row| int4_round_trip(row, scheme))
                .collect(),
        };
        Ok(FakeWeights {
            path,
            n,
            k,
            dequant: Some(dequant),
        })
    }

    fn synthetic(
        &self,
        path: KernelPath,
        n: usize,
        k: usize,
        _seed: u64,
    ) -> anyhow::Result<FakeWeights> {
        Ok(FakeWeights {
            path,
            n,
            k,
            dequant: None,
        })
    }

    fn duplicate(&self, w: &FakeWeights) -> FakeWeights {
        FakeWeights {
            path: w.path,
            n: w.n,
            k: w.k,
            dequant: w.dequant.clone(),
        }
    }

    fn weight_bytes(&self, w: &FakeWeights) -> usize {
        super::workload::Gemm {
            name: String::new(),
            n: w.n,
            k: w.k,
        }
        .bytes(w.path) as usize
    }

    fn input(&self, path: KernelPath, x: &[f32], m: usize, k: usize) -> anyhow::Result<FakeInput> {
        anyhow::ensure!(x.len() == m * k, "fake input: bad shape {m}x{k}");
        let x = match path {
            KernelPath::W4A8 => x.chunks(k).flat_map(int8_round_trip).collect(),
            _ => x.iter().map(|&v| bf16_round(v)).collect(),
        };
        Ok(FakeInput { m, k, x })
    }

    fn gemm(
        &self,
        kernel: &KernelInfo,
        w: &FakeWeights,
        x: &FakeInput,
        out: &mut [f32],
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            x.k == w.k && out.len() >= x.m * w.n,
            "fake gemm: shapes disagree"
        );
        anyhow::ensure!(
            kernel.path.shares_layout(w.path),
            "fake gemm: {} weights given to {}",
            w.path,
            kernel.name
        );
        let (mut bps, mut macs) = speed(kernel.path);
        if self.slow == Some(kernel.path) {
            bps /= 4.0;
            macs /= 4.0;
        }
        let bytes = self.weight_bytes(w) as f64;
        let work = (x.m * w.n * w.k) as f64;
        self.clock
            .advance((bytes / bps + work / macs) * self.disturbance);
        match &w.dequant {
            Some(d) => {
                for m in 0..x.m {
                    let xr = &x.x[m * w.k..(m + 1) * w.k];
                    for n in 0..w.n {
                        let wr = &d[n * w.k..(n + 1) * w.k];
                        out[m * w.n + n] = xr.iter().zip(wr).map(|(a, b)| a * b).sum();
                    }
                }
            }
            None => out[..x.m * w.n].fill(0.0),
        }
        Ok(())
    }

    fn amx_ready(&self) -> Result<(), String> {
        Err("the fake executor runs no AMX".into())
    }

    fn executor(&self) -> &'static str {
        "fake"
    }

    fn bandwidth_bytes(&self, _l3_bytes: u64) -> u64 {
        FAKE_REGION_BYTES
    }

    fn peaks_skipped(&self) -> Option<&'static str> {
        Some("fake executor: not measured")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_pool_runs_every_worker_once() {
        let seen = std::sync::Mutex::new(Vec::new());
        ScopedPool::new(3).run(&|w, n| seen.lock().unwrap().push((w, n)));
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, vec![(0, 3), (1, 3), (2, 3)]);
    }

    #[test]
    fn int4_round_trip_is_close_and_on_16_levels() {
        let w: Vec<f32> = (0..128).map(|i| (i as f32 - 60.0) / 64.0).collect();
        for scheme in [Scheme::Symmetric, Scheme::Asymmetric] {
            let q = int4_round_trip(&w, scheme);
            let mut levels: Vec<u32> = q.iter().map(|v| v.to_bits()).collect();
            levels.sort();
            levels.dedup();
            assert!(levels.len() <= 16);
            let err = w
                .iter()
                .zip(&q)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(err < 0.1, "{scheme:?} {err}");
        }
    }
}
