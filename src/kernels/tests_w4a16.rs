//! Tests of every W4A16 and bf16 x86 variant against the scalar references
//! (`kernels::reference`) on identical packed inputs: edge shapes around the 4-row, 16/32-row
//! and 64-column blocks, seeded random data and extremes, 1 vs 2 threads, split-K.
//!
//! Tolerances are derived per output from the magnitudes involved, not picked per test:
//! - f32-accumulating paths (FMA, `vdpbf16ps`): `2⁻¹⁴ · Σ_g |s|·(Σ q·|a| + |z|·Σ|a|)` for
//!   W4A16 (the fold's two terms, which is what f32 rounding acts on) and `2⁻¹² · Σ|w·a|`
//!   for bf16 (exact products, long sums);
//! - AMX W4A16 adds the rounding of each dequantized weight to bf16. Each rounding error is
//!   at most `2⁻⁹·|w|` and they are independent, so their sum stays within a few standard
//!   deviations of `2⁻⁹·√Σ(w·a)²`; the bound used is `2⁻⁶ · √Σ(w·a)²` (8σ-ish), much
//!   tighter than the worst case `2⁻⁸ · Σ|w·a|` and deterministic for the fixed seeds;
//! - plus `1e-30` absolute for flushed denormals.
//!
//! An indexing or layout bug moves an output by about `Σ|w·a| / √K`, far above these bounds
//! even at K = 6144. Every registered variant goes through [`w4a16_case`] / [`bf16_case`];
//! variants the host cannot run are skipped with a line on stderr. `x86/amx_emu_tests.rs`
//! feeds the AMX drivers with emulated tiles through the same harness.

use super::acts::Bf16Rows;
use super::bf16::Bf16;
use super::pack::{PackedBf16, PackedW4};
use super::pool::ThreadPool;
use super::reference;
use super::registry::KernelPath;
use super::tests::{pool, runnable};
use super::weights::{GROUP, QuantWeights};

/// splitmix64: tiny, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// How the weights and activations of a case are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Data {
    /// Random codes, scales ~1e-2, integer and fractional zeros, activations in [-2, 2).
    Random,
    /// Codes only 0 and 15, fractional zeros.
    CodeExtremes,
    /// Activations of ±1e35.
    Huge,
    /// Activations at ±the largest finite bf16 (3.39e38), with weights small enough that the
    /// outputs stay finite: exercises the power-of-two group rescaling of the fold.
    MaxBf16,
    /// Every activation a bf16 denormal.
    Denormal,
    /// Every other activation row all zero.
    ZeroRows,
}

fn weights(n: usize, k: usize, data: Data, rng: &mut Rng) -> QuantWeights {
    let g = k / GROUP;
    let codes = (0..n * k)
        .map(|_| match data {
            Data::CodeExtremes => 15 * (rng.below(2) as u8),
            _ => rng.below(16) as u8,
        })
        .collect();
    let scales = (0..n * g)
        .map(|_| {
            let unit = if data == Data::MaxBf16 { 1e-6 } else { 0.01 };
            Bf16::from_f32(unit * (0.5 + rng.unit().abs()))
        })
        .collect();
    let zeros = (0..n * g)
        .map(|i| {
            let z = match (data, i % 3) {
                (Data::CodeExtremes, _) => 7.5 + 0.25 * rng.below(4) as f32,
                (_, 0) => 8.0,
                (_, 1) => rng.below(16) as f32,
                _ => rng.below(64) as f32 / 4.0,
            };
            Bf16::from_f32(z)
        })
        .collect();
    QuantWeights::from_parts(n, k, codes, scales, zeros).expect("valid parts")
}

fn activations(m: usize, k: usize, data: Data, rng: &mut Rng) -> Vec<Bf16> {
    (0..m * k)
        .map(|i| match data {
            Data::Huge => Bf16::from_f32(if rng.below(2) == 0 { 1e35 } else { -1e35 }),
            Data::MaxBf16 => Bf16(0x7F7F | ((rng.below(2) as u16) << 15)),
            Data::Denormal => Bf16((rng.below(0x7F) as u16 + 1) | ((rng.below(2) as u16) << 15)),
            Data::ZeroRows if (i / k).is_multiple_of(2) => Bf16::ZERO,
            _ => Bf16::from_f32(2.0 * rng.unit()),
        })
        .collect()
}

/// Per-output tolerance bounds for W4A16: (fold magnitude, √Σ(w·a)²).
#[allow(clippy::needless_range_loop)]
fn w4a16_mags(w: &QuantWeights, x: &[Bf16], m: usize) -> Vec<(f64, f64)> {
    let k = w.k;
    let mut out = Vec::with_capacity(m * w.n);
    for r in 0..m {
        let row = &x[r * k..(r + 1) * k];
        for n in 0..w.n {
            let (mut fold, mut sq) = (0.0f64, 0.0f64);
            for g in 0..k / GROUP {
                let (s, z) = (w.scale(n, g) as f64, w.zero(n, g) as f64);
                let (mut qa, mut sa) = (0.0f64, 0.0f64);
                for i in g * GROUP..(g + 1) * GROUP {
                    let a = row[i].to_f32().abs() as f64;
                    let q = w.codes[n * k + i] as f64;
                    qa += q * a;
                    sa += a;
                    sq += ((q - z) * s * a).powi(2);
                }
                fold += s.abs() * (qa + z.abs() * sa);
            }
            out.push((fold, sq.sqrt()));
        }
    }
    out
}

fn check(name: &str, case: &str, got: &[f32], want: &[f64], tol: &[f64]) {
    assert_eq!(got.len(), want.len(), "{name} {case}: output length");
    for (i, ((&g, &w), &t)) in got.iter().zip(want).zip(tol).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(
            err <= t,
            "{name} {case}: output {i} = {g}, reference {w}, |err| {err:e} > tol {t:e}"
        );
    }
}

/// A boxed W4A16 entry point.
pub(crate) type W4Call = Box<dyn Fn(&ThreadPool, &PackedW4, Bf16Rows<'_>, &mut [f32])>;
/// A boxed bf16 entry point.
pub(crate) type B16Call = Box<dyn Fn(&ThreadPool, &PackedBf16, Bf16Rows<'_>, &mut [f32])>;
/// A W4A16 kernel under test: name, entry, and whether it rounds weights to bf16 (AMX).
pub(crate) type W4Entry = (String, W4Call, bool);
/// A bf16 kernel under test.
pub(crate) type B16Entry = (String, B16Call);

/// Every registered W4A16 variant this host can run.
fn w4a16_registered() -> Vec<W4Entry> {
    runnable(KernelPath::W4A16)
        .into_iter()
        .map(|r| {
            let name = r.name().to_string();
            let amx = r.variant().isa == "amx";
            let f: W4Call = Box::new(move |p, w, x, o| r.w4a16(p, w, x, o).expect("shapes agree"));
            (name, f, amx)
        })
        .collect()
}

/// Every registered bf16 variant this host can run.
fn bf16_registered() -> Vec<B16Entry> {
    runnable(KernelPath::Bf16)
        .into_iter()
        .map(|r| {
            let name = r.name().to_string();
            let f: B16Call = Box::new(move |p, w, x, o| r.bf16(p, w, x, o).expect("shapes agree"));
            (name, f)
        })
        .collect()
}

/// Runs `entries` on one case with 1, 2 and 3 threads; returns how many ran.
pub(crate) fn w4a16_case(
    entries: &[W4Entry],
    m: usize,
    n: usize,
    k: usize,
    data: Data,
    seed: u64,
) -> usize {
    let pools = [pool(1), pool(2), pool(3)];
    let mut rng = Rng(seed);
    let w = weights(n, k, data, &mut rng);
    let x = activations(m, k, data, &mut rng);
    let rows = Bf16Rows::new(&x, m, k).expect("valid rows");
    let packed = PackedW4::pack(&w);
    let want = reference::w4a16(&w, rows);
    let mags = w4a16_mags(&w, &x, m);
    let case = format!("m={m} n={n} k={k} {data:?} seed={seed}");
    let mut ran = 0;
    for (name, f, bf16_w) in entries {
        let tol: Vec<f64> = mags
            .iter()
            .map(|&(fold, rms)| {
                let t = 2f64.powi(-14) * fold + 1e-30;
                if *bf16_w { t + 2f64.powi(-6) * rms } else { t }
            })
            .collect();
        let mut outs = Vec::new();
        for pool in pools {
            let mut out = vec![f32::NAN; m * n];
            f(pool, &packed, rows, &mut out);
            check(
                name,
                &format!("{case} threads={}", pool.threads()),
                &out,
                &want,
                &tol,
            );
            outs.push(out);
        }
        // Without split-K every thread count computes each output in the same order.
        if packed.panels() >= 3 {
            for o in &outs[1..] {
                assert!(
                    o.iter()
                        .zip(&outs[0])
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{name} {case}: multi-threaded result differs from single-threaded"
                );
            }
        }
        ran += 1;
    }
    ran
}

/// Runs `entries` on one bf16 case with 1, 2 and 3 threads; returns how many ran.
pub(crate) fn bf16_case(
    entries: &[B16Entry],
    m: usize,
    n: usize,
    k: usize,
    data: Data,
    seed: u64,
) -> usize {
    let pools = [pool(1), pool(2), pool(3)];
    let mut rng = Rng(seed);
    let w: Vec<Bf16> = (0..n * k)
        .map(|i| match (data, i % 97) {
            (Data::Denormal, 0) => Bf16(0x0005),
            (Data::MaxBf16, _) => Bf16::from_f32(rng.unit() * 1e-4),
            _ => Bf16::from_f32(rng.unit() * 0.05),
        })
        .collect();
    let x = activations(m, k, data, &mut rng);
    let rows = Bf16Rows::new(&x, m, k).expect("valid rows");
    let packed = PackedBf16::pack(&w, n, k);
    let want = reference::bf16(&w, n, rows);
    let tol: Vec<f64> = (0..m * n)
        .map(|i| {
            let (r, c) = (i / n, i % n);
            let abs: f64 = (0..k)
                .map(|j| (w[c * k + j].to_f32() as f64 * x[r * k + j].to_f32() as f64).abs())
                .sum();
            2f64.powi(-12) * abs + 1e-30
        })
        .collect();
    let case = format!("m={m} n={n} k={k} {data:?} seed={seed}");
    let mut ran = 0;
    for (name, f) in entries {
        let mut outs = Vec::new();
        for pool in pools {
            let mut out = vec![f32::NAN; m * n];
            f(pool, &packed, rows, &mut out);
            check(
                name,
                &format!("{case} threads={}", pool.threads()),
                &out,
                &want,
                &tol,
            );
            outs.push(out);
        }
        if packed.panels() >= 3 {
            for o in &outs[1..] {
                assert!(
                    o.iter()
                        .zip(&outs[0])
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{name} {case}: multi-threaded result differs from single-threaded"
                );
            }
        }
        ran += 1;
    }
    ran
}

/// The M sweep of the brief at K = 128..384 with N off the 64-column grid.
pub(crate) const MS: [usize; 15] = [1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129];

#[test]
fn w4a16_all_variants_small_k_m_sweep() {
    let e = w4a16_registered();
    for (i, &m) in MS.iter().enumerate() {
        let (n, k) = [(65, 128), (100, 256), (130, 384)][i % 3];
        assert!(w4a16_case(&e, m, n, k, Data::Random, 100 + i as u64) > 0);
    }
}

#[test]
fn w4a16_all_variants_large_k() {
    let e = w4a16_registered();
    for (m, n, k) in [
        (1, 70, 2048),
        (4, 33, 2048),
        (1, 65, 6144),
        (3, 20, 6144),
        (33, 40, 2048),
    ] {
        assert!(w4a16_case(&e, m, n, k, Data::Random, (m * k + n) as u64) > 0);
    }
}

#[test]
fn w4a16_extremes() {
    let e = w4a16_registered();
    for data in [
        Data::CodeExtremes,
        Data::Huge,
        Data::MaxBf16,
        Data::Denormal,
        Data::ZeroRows,
    ] {
        for (m, n, k) in [(1, 65, 256), (5, 64, 128), (33, 70, 256)] {
            assert!(w4a16_case(&e, m, n, k, data, 7) > 0);
        }
    }
}

#[test]
fn w4a16_split_k_small_n() {
    let e = w4a16_registered();
    // One panel and two threads: the groups are split between them.
    for (m, n, k) in [(1, 1, 512), (2, 63, 1024), (6, 64, 384)] {
        assert!(w4a16_case(&e, m, n, k, Data::Random, 11) > 0);
    }
}

#[test]
fn bf16_all_variants_small_k_m_sweep() {
    let e = bf16_registered();
    for (i, &m) in MS.iter().enumerate() {
        let (n, k) = [(65, 128), (100, 256), (130, 384)][i % 3];
        assert!(bf16_case(&e, m, n, k, Data::Random, 200 + i as u64) > 0);
    }
}

#[test]
fn bf16_large_k_extremes_and_split_k() {
    let e = bf16_registered();
    for (m, n, k) in [(1, 70, 2048), (2, 65, 6144), (17, 40, 2048), (1, 1, 1024)] {
        assert!(bf16_case(&e, m, n, k, Data::Random, (m + n) as u64) > 0);
    }
    for data in [Data::Huge, Data::MaxBf16, Data::Denormal, Data::ZeroRows] {
        assert!(bf16_case(&e, 5, 65, 256, data, 3) > 0);
        assert!(bf16_case(&e, 33, 64, 128, data, 4) > 0);
    }
}

#[test]
fn registered_variants_match_their_entry_points() {
    use super::registry;
    // The portable fallbacks exist on every target; the SIMD variants only where their
    // instructions can be compiled (x86_64 and aarch64).
    let (w4a16, bf16): (&[&str], &[&str]) = if cfg!(target_arch = "aarch64") {
        (
            &[
                "w4a16-scalar",
                "w4a16-gemv-neon",
                "w4a16-gemv-neon-bfdot",
                "w4a16-gemm-neon-bfmmla",
            ],
            &[
                "bf16-scalar",
                "bf16-gemv-neon",
                "bf16-gemv-neon-bfdot",
                "bf16-gemm-neon-bfmmla",
            ],
        )
    } else if cfg!(target_arch = "x86_64") {
        (
            &[
                "w4a16-scalar",
                "w4a16-gemv-avx2",
                "w4a16-gemv-avx512",
                "w4a16-gemv-avx512bf16",
                "w4a16-gemm-amx",
            ],
            &[
                "bf16-scalar",
                "bf16-gemv-avx2",
                "bf16-gemv-avx512",
                "bf16-gemm-amx",
            ],
        )
    } else {
        (&["w4a16-scalar"], &["bf16-scalar"])
    };
    for (path, wanted) in [(KernelPath::W4A16, w4a16), (KernelPath::Bf16, bf16)] {
        let names: Vec<_> = registry::for_path(path).map(|v| v.name).collect();
        for want in wanted {
            assert!(names.contains(want), "{want} not registered: {names:?}");
        }
    }
}
