//! Compute peaks: how many multiply-accumulates per second each unit the kernels use can
//! reach on this host, measured briefly with register-only loops on every worker.
//!
//! These are the rooflines of the prefill figures (`% peak`). Each loop keeps enough
//! independent accumulators in registers to hide latency and touches no memory, so it
//! measures the unit's throughput at whatever clock the host runs under that load. The
//! iteration count is calibrated to a short time slice; the best of a few runs is kept
//! (noise only ever slows a register loop down). Units whose ISA or OS permission is
//! missing are skipped with the reason. The ISA code lives in `x86.rs` and `aarch64.rs`;
//! other architectures report the x86 units as skipped. Under user-mode emulation
//! ([`crate::arch::emulation`]) the loops still run, but every figure carries the reason it
//! is not a measurement of the CPU.

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86_64")]
mod x86;

use super::backend::{Parallel, Unit};
use super::clock::Clock;
pub use super::clock::PeakBudget;
use super::rows::Peak;

/// A unit's loop: runs `iters` iterations and does `macs` multiply-accumulates in each.
pub struct Loop {
    pub macs: u64,
    pub run: fn(u64),
}

/// The units measured on this architecture, best first.
#[cfg(target_arch = "aarch64")]
pub const UNITS: &[Unit] = &aarch64::UNITS;
/// The units measured on this architecture, best first.
#[cfg(not(target_arch = "aarch64"))]
pub const UNITS: &[Unit] = &X86_UNITS;

/// The x86 units, best first.
#[cfg_attr(target_arch = "aarch64", allow(dead_code))]
const X86_UNITS: [Unit; 8] = [
    Unit::AmxInt8,
    Unit::AmxBf16,
    Unit::Avx512Vnni,
    Unit::AvxVnni,
    Unit::Avx2Int8,
    Unit::Avx512Bf16,
    Unit::Avx512Fma,
    Unit::Avx2Fma,
];

/// The loop for `unit`, or why this host cannot run it. `amx` is the kernels' answer to
/// whether the AMX tile permission was granted.
pub fn loop_for(unit: Unit, amx: &Result<(), String>) -> Result<Loop, String> {
    #[cfg(target_arch = "x86_64")]
    {
        x86::loop_for(unit, amx)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let _ = amx;
        aarch64::loop_for(unit)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (unit, amx);
        Err("not an x86_64 host".into())
    }
}

/// Wrapping sum of `words` with the widest loads this host has (the bandwidth probe); the
/// kernels' streaming read.
pub use crate::kernels::wide_sum;

/// Measures one loop on all workers: TMAC/s, best of `budget.runs`.
pub fn measure(pool: &dyn Parallel, clock: &dyn Clock, lp: &Loop, budget: PeakBudget) -> f64 {
    let iters = calibrate(pool, clock, lp, budget.slice_s);
    best_tmacs(pool, clock, lp, iters, budget.runs)
}

/// Iterations of `lp` that take about `slice_s` on all workers: grown until a run is long
/// enough to time, then scaled to the slice.
fn calibrate(pool: &dyn Parallel, clock: &dyn Clock, lp: &Loop, slice_s: f64) -> u64 {
    let time = |iters: u64| clock.time(&mut || pool.run(&|_, _| (lp.run)(iters)));
    let mut iters = 256u64;
    let mut t = time(iters);
    while t < slice_s / 20.0 && iters < (1 << 40) {
        iters *= 8;
        t = time(iters);
    }
    if t > 0.0 {
        iters = ((iters as f64 * slice_s / t) as u64).clamp(1, 1 << 42);
    }
    iters
}

/// TMAC/s of the best of `runs` runs of `iters` iterations on all workers.
fn best_tmacs(pool: &dyn Parallel, clock: &dyn Clock, lp: &Loop, iters: u64, runs: usize) -> f64 {
    let best = (0..runs.max(1))
        .map(|_| clock.time(&mut || pool.run(&|_, _| (lp.run)(iters))))
        .fold(f64::INFINITY, f64::min);
    pool.workers() as f64 * iters as f64 * lp.macs as f64 / best.max(1e-12) / 1e12
}

/// Seconds of one run of a [`RoundPeak`].
pub const ROUND_SLICE_S: f64 = 0.02;
/// Runs of a [`RoundPeak`] per round; the best is kept (noise only slows a register loop).
pub const ROUND_RUNS: usize = 3;

/// A unit's peak loop calibrated once, then re-measured in every paired round so each
/// prefill step has a roofline taken in its own round (as the decode steps have the
/// bandwidth probe's pass): on a shared host the start-of-run peak and a step timed
/// minutes later can see different neighbours.
pub struct RoundPeak {
    pub unit: Unit,
    lp: Loop,
    iters: u64,
}

impl RoundPeak {
    /// The calibrated loop for `unit`, or `None` when this host cannot run it.
    pub fn new(
        unit: Unit,
        pool: &dyn Parallel,
        clock: &dyn Clock,
        amx: &Result<(), String>,
    ) -> Option<RoundPeak> {
        let lp = loop_for(unit, amx).ok()?;
        Some(RoundPeak::with_loop(unit, lp, pool, clock))
    }

    /// [`RoundPeak::new`] for a given loop.
    pub fn with_loop(unit: Unit, lp: Loop, pool: &dyn Parallel, clock: &dyn Clock) -> RoundPeak {
        let iters = calibrate(pool, clock, &lp, ROUND_SLICE_S);
        RoundPeak { unit, lp, iters }
    }

    /// This round's TMAC/s: the best of [`ROUND_RUNS`] runs.
    pub fn once(&self, pool: &dyn Parallel, clock: &dyn Clock) -> f64 {
        best_tmacs(pool, clock, &self.lp, self.iters, ROUND_RUNS)
    }
}

/// Every unit: measured, or skipped with the reason. Under user-mode emulation the
/// measured ones say so (`Peak::emulated`).
pub fn measure_all(
    pool: &dyn Parallel,
    clock: &dyn Clock,
    amx: &Result<(), String>,
    budget: PeakBudget,
) -> Vec<Peak> {
    measure_units(
        UNITS,
        pool,
        clock,
        amx,
        budget,
        crate::arch::emulation::emulation(),
    )
}

/// [`measure_all`] over `units`, with the emulation verdict given.
fn measure_units(
    units: &[Unit],
    pool: &dyn Parallel,
    clock: &dyn Clock,
    amx: &Result<(), String>,
    budget: PeakBudget,
    emulated: Option<String>,
) -> Vec<Peak> {
    units
        .iter()
        .map(|&unit| match loop_for(unit, amx) {
            Ok(lp) => Peak::measured(
                unit,
                measure(pool, clock, &lp, budget),
                emulated.as_ref().map(|why| {
                    format!("{why}: the emulator's speed, not a measurement of the CPU")
                }),
            ),
            Err(why) => Peak::skipped(unit, why),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::clock::RealClock;
    use crate::bench::fake::ScopedPool;

    fn budget() -> PeakBudget {
        PeakBudget {
            slice_s: 0.002,
            runs: 1,
        }
    }

    #[test]
    fn every_unit_is_measured_or_says_why_not() {
        let pool = ScopedPool::new(1);
        let peaks = measure_all(&pool, &RealClock::new(), &Err("test".into()), budget());
        assert_eq!(peaks.len(), UNITS.len());
        for p in &peaks {
            match (p.tmacs, &p.skipped) {
                (Some(t), None) => assert!(t > 0.0 && t.is_finite(), "{p:?}"),
                (None, Some(why)) => assert!(!why.is_empty()),
                _ => panic!("{p:?}"),
            }
        }
        let measured = |u: Unit| peaks.iter().any(|p| p.unit == u && p.tmacs.is_some());
        #[cfg(target_arch = "x86_64")]
        assert!(
            !measured(Unit::AmxInt8),
            "AMX must be skipped without the permission"
        );
        // Plain Advanced SIMD is on every arm64 CPU. What CI's emulated CPUs must offer
        // (`.ci/run` sets EDGEPLAN_EXPECT_KERNELS): `all` under `-cpu max`, only the
        // ARMv8.0 units under `-cpu cortex-a53`.
        #[cfg(target_arch = "aarch64")]
        {
            assert!(
                measured(Unit::NeonFma) && measured(Unit::NeonInt8),
                "{peaks:?}"
            );
            let plain = |u: Unit| matches!(u, Unit::NeonFma | Unit::NeonInt8);
            match std::env::var("EDGEPLAN_EXPECT_KERNELS")
                .unwrap_or_default()
                .as_str()
            {
                "all" => assert!(peaks.iter().all(|p| measured(p.unit)), "{peaks:?}"),
                "neon" => {
                    for p in &peaks {
                        assert_eq!(measured(p.unit), plain(p.unit), "{p:?}");
                    }
                }
                _ => {}
            }
            if std::env::var_os("EDGEPLAN_EXPECT_KERNELS").is_some() {
                // CI runs under qemu-user: the figures must say they are not measurements.
                assert!(
                    peaks
                        .iter()
                        .filter(|p| p.tmacs.is_some())
                        .all(|p| p.emulated.is_some()),
                    "{peaks:?}"
                );
            }
        }
    }

    #[test]
    fn emulated_figures_are_labelled_and_skips_are_not() {
        let pool = ScopedPool::new(1);
        let clock = RealClock::new();
        let amx = Err("test".into());
        let why = "EDGEPLAN_EMULATED=1".to_string();
        let peaks = measure_units(UNITS, &pool, &clock, &amx, budget(), Some(why));
        assert!(peaks.iter().any(|p| p.tmacs.is_some()), "{peaks:?}");
        for p in &peaks {
            match &p.emulated {
                Some(label) => {
                    assert!(p.tmacs.is_some(), "{p:?}");
                    assert!(
                        label.contains("EDGEPLAN_EMULATED=1")
                            && label.contains("not a measurement")
                    );
                }
                None => assert!(p.tmacs.is_none(), "{p:?}"),
            }
        }
        let real = measure_units(UNITS, &pool, &clock, &amx, budget(), None);
        assert!(real.iter().all(|p| p.emulated.is_none()));
    }

    #[test]
    fn every_vector_kernel_has_a_roofline_here() {
        for v in crate::kernels::registry::all() {
            if v.unit != Unit::Scalar {
                assert!(
                    UNITS.contains(&v.unit),
                    "{}: unit {} has no peak loop on this architecture",
                    v.name,
                    v.unit.as_str()
                );
            }
        }
    }
}
