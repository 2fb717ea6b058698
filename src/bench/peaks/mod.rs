//! Compute peaks: how many multiply-accumulates per second each unit the kernels use can
//! reach on this host, measured briefly with register-only loops on every worker.
//!
//! These are the rooflines of the prefill figures (`% peak`). Each loop keeps enough
//! independent accumulators in registers to hide latency and touches no memory, so it
//! measures the unit's throughput at whatever clock the host runs under that load. The
//! iteration count is calibrated to a short time slice; the best of a few runs is kept
//! (noise only ever slows a register loop down). Units whose ISA or OS permission is
//! missing are skipped with the reason. The ISA code lives in `x86.rs`; other
//! architectures report every unit as skipped.

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

/// The units measured, best first.
pub const UNITS: [Unit; 8] = [
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
    #[cfg(not(target_arch = "x86_64"))]
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
    let workers = pool.workers() as f64;
    let time = |iters: u64| clock.time(&mut || pool.run(&|_, _| (lp.run)(iters)));
    // Calibrate: grow until a run is long enough to time, then aim at the slice.
    let mut iters = 256u64;
    let mut t = time(iters);
    while t < budget.slice_s / 20.0 && iters < (1 << 40) {
        iters *= 8;
        t = time(iters);
    }
    if t > 0.0 {
        iters = ((iters as f64 * budget.slice_s / t) as u64).clamp(1, 1 << 42);
    }
    let best = (0..budget.runs.max(1))
        .map(|_| time(iters))
        .fold(f64::INFINITY, f64::min);
    workers * iters as f64 * lp.macs as f64 / best.max(1e-12) / 1e12
}

/// Every unit: measured, or skipped with the reason.
pub fn measure_all(
    pool: &dyn Parallel,
    clock: &dyn Clock,
    amx: &Result<(), String>,
    budget: PeakBudget,
) -> Vec<Peak> {
    UNITS
        .iter()
        .map(|&unit| match loop_for(unit, amx) {
            Ok(lp) => Peak {
                unit,
                tmacs: Some(measure(pool, clock, &lp, budget)),
                skipped: None,
            },
            Err(why) => Peak {
                unit,
                tmacs: None,
                skipped: Some(why),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::clock::RealClock;
    use crate::bench::fake::ScopedPool;

    #[test]
    fn every_unit_is_measured_or_says_why_not() {
        let pool = ScopedPool::new(1);
        let peaks = measure_all(
            &pool,
            &RealClock::new(),
            &Err("test".into()),
            PeakBudget {
                slice_s: 0.002,
                runs: 1,
            },
        );
        assert_eq!(peaks.len(), UNITS.len());
        for p in &peaks {
            match (p.tmacs, &p.skipped) {
                (Some(t), None) => assert!(t > 0.0 && t.is_finite(), "{p:?}"),
                (None, Some(why)) => assert!(!why.is_empty()),
                _ => panic!("{p:?}"),
            }
        }
        let amx = peaks.iter().find(|p| p.unit == Unit::AmxInt8).unwrap();
        assert!(
            amx.tmacs.is_none(),
            "AMX must be skipped without the permission"
        );
    }
}
