//! W4A16 and bf16 through the harness: every registered variant the host can run (plus the
//! AMX drivers with emulated tiles, from `x86/amx_emu_tests.rs`) against the scalar
//! references with the per-path tolerances of [`Expected`]: edge shapes around the 4-row,
//! 16/32-row and 64-column blocks, seeded random data and extremes, 1, 2 and 3 threads
//! (bit-identical without split-K), split-K.

use super::{pool, runnable};
use crate::kernels::acts::Bf16Rows;
use crate::kernels::bf16::Bf16;
use crate::kernels::pack::{PackedBf16, PackedW4};
use crate::kernels::pool::ThreadPool;
use crate::kernels::registry::KernelPath;
use crate::kernels::verify::Expected;
use crate::kernels::weights::{GROUP, QuantWeights};

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
    /// Every code and every zero point 0 (weights identically zero, so the outputs are
    /// exactly zero and only the fold's rounding is tolerated), activations spread over
    /// 2^-20..2^20.
    ZeroWeights,
}

fn weights(n: usize, k: usize, data: Data, rng: &mut Rng) -> QuantWeights {
    let g = k / GROUP;
    let codes = (0..n * k)
        .map(|_| match data {
            Data::CodeExtremes => 15 * (rng.below(2) as u8),
            Data::ZeroWeights => 0,
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
                (Data::ZeroWeights, _) => 0.0,
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
            // 2^-20..2^20: f32 sums of these round, so a fold whose two terms are summed
            // in different orders no longer cancels exactly.
            Data::ZeroWeights => {
                Bf16::from_f32(2.0 * rng.unit() * (2.0f32).powi(rng.below(41) as i32 - 20))
            }
            _ => Bf16::from_f32(2.0 * rng.unit()),
        })
        .collect()
}

fn check(name: &str, case: &str, got: &[f32], expected: &Expected) {
    if let Err(e) = expected.check(got) {
        panic!("{name} {case}: {e}");
    }
}

/// A boxed W4A16 entry point.
pub(crate) type W4Call = Box<dyn Fn(&ThreadPool, &PackedW4, Bf16Rows<'_>, &mut [f32])>;
/// A boxed bf16 entry point.
pub(crate) type B16Call = Box<dyn Fn(&ThreadPool, &PackedBf16, Bf16Rows<'_>, &mut [f32])>;
/// A W4A16 kernel under test: name and entry.
pub(crate) type W4Entry = (String, W4Call);
/// A bf16 kernel under test.
pub(crate) type B16Entry = (String, B16Call);

/// Every registered W4A16 variant this host can run.
fn w4a16_registered() -> Vec<W4Entry> {
    runnable(KernelPath::W4A16)
        .into_iter()
        .map(|r| {
            let name = r.name().to_string();
            let f: W4Call = Box::new(move |p, w, x, o| r.w4a16(p, w, x, o).expect("shapes agree"));
            (name, f)
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
    let expected = Expected::w4a16(&w, rows);
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
                &expected,
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
    let expected = Expected::bf16(&w, n, rows);
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
                &expected,
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
        Data::ZeroWeights,
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

/// Row counts around the prefill GEMMs' blocks: the AVX2 GEMM's GEMV fallback (below 8 or
/// so), its 6-row register blocks with 1..5 rows left (and 7 run as 4 + 3), and
/// several 192-row chunks with 1..5 rows in the last one.
const GEMM_MS: [usize; 14] = [7, 8, 9, 10, 11, 13, 14, 20, 193, 194, 195, 196, 197, 389];

#[test]
fn w4a16_gemm_row_blocks_chunks_and_split_k() {
    let e = w4a16_registered();
    for (i, &m) in GEMM_MS.iter().enumerate() {
        let (n, k) = [(65, 128), (130, 256)][i % 2];
        assert!(w4a16_case(&e, m, n, k, Data::Random, 300 + i as u64) > 0);
    }
    // One panel, 2 and 3 threads: K split between them, at M past the GEMM thresholds.
    for (m, n, k) in [(33, 64, 1024), (197, 20, 768)] {
        assert!(w4a16_case(&e, m, n, k, Data::Random, 17) > 0);
    }
}

#[test]
fn bf16_gemm_row_blocks_chunks_and_split_k() {
    let e = bf16_registered();
    for (i, &m) in GEMM_MS.iter().enumerate() {
        let (n, k) = [(65, 128), (130, 256)][i % 2];
        assert!(bf16_case(&e, m, n, k, Data::Random, 400 + i as u64) > 0);
    }
    for (m, n, k) in [(33, 64, 1024), (197, 20, 768)] {
        assert!(bf16_case(&e, m, n, k, Data::Random, 19) > 0);
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
fn bf16_k_ranges_that_do_not_split_evenly() {
    // One panel (n <= 64) on 3 threads: split-K hands each thread a k range (448, 512 and
    // 704 pairs in thirds) whose pair count is not a multiple of four, so a GEMV that cuts
    // its range into parts (the AVX2 stream variant: four) must take the rows left over.
    let e = bf16_registered();
    for (i, k) in [896, 1024, 1408].into_iter().enumerate() {
        for m in [1, 2] {
            assert!(bf16_case(&e, m, 20, k, Data::Random, 500 + i as u64) > 0);
        }
    }
}

#[test]
fn registered_variants_match_their_entry_points() {
    use crate::kernels::registry;
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
                "w4a16-gemv-avx2-i16",
                "w4a16-gemv-avx512",
                "w4a16-gemv-avx512-i16",
                "w4a16-gemv-avx512bf16",
                "w4a16-gemm-avx2",
                "w4a16-gemm-amx",
            ],
            &[
                "bf16-scalar",
                "bf16-gemv-avx2",
                "bf16-gemv-avx2-stream",
                "bf16-gemv-avx512",
                "bf16-gemm-avx2",
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
