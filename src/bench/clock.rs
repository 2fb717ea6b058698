//! The clock seam: where `bench` reads time, so tests can replace it.
//!
//! Every duration in a report comes from [`Clock::now`]. [`RealClock`] reads a monotonic
//! [`std::time::Instant`]; [`FakeClock`] advances a fixed step per reading, which makes
//! every measured interval identical and the whole report deterministic (hyperfine's
//! mock-executor idea). Sampling policy (warm-up, repeats, time bound) lives here too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Seconds as `f64`, the unit of every raw measurement.
pub type Seconds = f64;

/// A monotonic time source.
pub trait Clock {
    /// Seconds since an arbitrary origin; never decreases.
    fn now(&self) -> Seconds;

    /// Time one call of `f`.
    fn time(&self, f: &mut dyn FnMut()) -> Seconds {
        let start = self.now();
        f();
        (self.now() - start).max(0.0)
    }
}

/// The variable that pins the fake executor's `measured_at`: reproducible-builds.org's
/// `SOURCE_DATE_EPOCH`, seconds since the Unix epoch.
pub const SOURCE_DATE_EPOCH: &str = "SOURCE_DATE_EPOCH";

/// When a run starts, in seconds since the Unix epoch (the report's `measured_at`):
/// `now`, except that the fake executor takes `source_date_epoch` when it is given, so
/// the profiles it saves reproduce byte for byte. A real run never does: a build shell
/// that exports the variable (Nix does) must not backdate a measurement. A value that is
/// not a whole number of seconds is an error naming the variable.
pub fn run_start(fake: bool, now: i64, source_date_epoch: Option<&str>) -> anyhow::Result<i64> {
    match source_date_epoch.filter(|_| fake) {
        None => Ok(now),
        Some(v) => v.trim().parse::<i64>().map_err(|_| {
            crate::error::usage(format!(
                "{SOURCE_DATE_EPOCH}={v}: not a whole number of seconds since 1970-01-01"
            ))
        }),
    }
}

/// The wall clock.
#[derive(Debug)]
pub struct RealClock {
    origin: Instant,
}

impl RealClock {
    pub fn new() -> RealClock {
        RealClock {
            origin: Instant::now(),
        }
    }
}

impl Default for RealClock {
    fn default() -> Self {
        RealClock::new()
    }
}

impl Clock for RealClock {
    fn now(&self) -> Seconds {
        self.origin.elapsed().as_secs_f64()
    }
}

/// A virtual clock: it advances `step` seconds at each reading, plus whatever a fake
/// executor charges with [`FakeClock::advance`]. Time is kept in whole nanoseconds so
/// every figure derived from it is exact and repeatable.
#[derive(Debug)]
pub struct FakeClock {
    step_ns: u64,
    t_ns: AtomicU64,
}

impl FakeClock {
    pub fn new(step: Seconds) -> FakeClock {
        FakeClock {
            step_ns: (step * 1e9).round() as u64,
            t_ns: AtomicU64::new(0),
        }
    }

    /// Charges `dt` seconds of simulated work.
    pub fn advance(&self, dt: Seconds) {
        self.t_ns
            .fetch_add((dt * 1e9).round() as u64, Ordering::Relaxed);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Seconds {
        let t = self.t_ns.fetch_add(self.step_ns, Ordering::Relaxed) + self.step_ns;
        t as f64 / 1e9
    }
}

/// How many times to run a measurement: untimed warm-up runs, then timed repeats,
/// stopping early once `budget` seconds of repeats have passed (but never before
/// `min_repeats`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub warmup: usize,
    pub min_repeats: usize,
    pub max_repeats: usize,
    pub budget: Seconds,
}

impl Sampling {
    /// One timed sample, no warm-up: a single step, as the paired rounds and the
    /// alternated race take them.
    pub const ONCE: Sampling = Sampling {
        warmup: 0,
        min_repeats: 1,
        max_repeats: 1,
        budget: 0.0,
    };

    /// Runs `sample` (which returns the seconds of one sample) under this policy and
    /// returns the timed samples. `clock` bounds the total time.
    pub fn collect(
        &self,
        clock: &dyn Clock,
        sample: &mut dyn FnMut() -> anyhow::Result<Seconds>,
    ) -> anyhow::Result<Vec<Seconds>> {
        for _ in 0..self.warmup {
            sample()?;
        }
        let start = clock.now();
        let mut samples = Vec::with_capacity(self.max_repeats);
        while samples.len() < self.max_repeats.max(1) {
            samples.push(sample()?);
            let spent = clock.now() - start;
            if samples.len() >= self.min_repeats.max(1) && spent >= self.budget {
                break;
            }
        }
        Ok(samples)
    }
}

/// When to stop adding paired rounds (`rounds.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundsPolicy {
    pub min_rounds: usize,
    pub max_rounds: usize,
    /// Seconds of rounds after which no new round starts (past `min_rounds`).
    pub budget_s: Seconds,
}

/// How long each timed run of a compute-peak loop lasts, and how many are run.
#[derive(Debug, Clone, Copy)]
pub struct PeakBudget {
    pub slice_s: f64,
    pub runs: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fake_executor_takes_source_date_epoch() {
        assert_eq!(
            run_start(false, 1_800_000_000, None).unwrap(),
            1_800_000_000
        );
        assert_eq!(
            run_start(false, 1_800_000_000, Some("315532800")).unwrap(),
            1_800_000_000
        );
        assert_eq!(run_start(true, 1_800_000_000, None).unwrap(), 1_800_000_000);
        assert_eq!(
            run_start(true, 1_800_000_000, Some("1796083200")).unwrap(),
            1_796_083_200
        );
        let err = run_start(true, 0, Some("yesterday")).unwrap_err();
        assert!(
            err.to_string().contains("SOURCE_DATE_EPOCH=yesterday"),
            "{err}"
        );
        assert_eq!(crate::error::exit_for(&err), crate::error::Exit::Usage);
    }

    #[test]
    fn fake_clock_makes_every_interval_one_step() {
        let clock = FakeClock::new(0.25);
        assert_eq!(clock.time(&mut || {}), 0.25);
        assert_eq!(clock.time(&mut || {}), 0.25);
    }

    #[test]
    fn fake_clock_charges_advanced_work() {
        let clock = FakeClock::new(0.0);
        let dt = clock.time(&mut || clock.advance(0.004));
        assert_eq!(dt, 0.004);
    }

    #[test]
    fn sampling_stops_at_budget_but_not_before_min_repeats() {
        let clock = FakeClock::new(1.0);
        let policy = Sampling {
            warmup: 2,
            min_repeats: 3,
            max_repeats: 50,
            budget: 0.5,
        };
        let mut calls = 0;
        let samples = policy
            .collect(&clock, &mut || {
                calls += 1;
                Ok(0.01)
            })
            .unwrap();
        assert_eq!(samples.len(), 3);
        assert_eq!(calls, 5, "two warm-up runs are not samples");
    }

    #[test]
    fn sampling_stops_at_max_repeats() {
        let clock = FakeClock::new(0.0);
        let policy = Sampling {
            warmup: 0,
            min_repeats: 1,
            max_repeats: 4,
            budget: 10.0,
        };
        let samples = policy.collect(&clock, &mut || Ok(1.0)).unwrap();
        assert_eq!(samples, vec![1.0; 4]);
    }

    #[test]
    fn real_clock_is_monotonic() {
        let clock = RealClock::new();
        let a = clock.now();
        let b = clock.now();
        assert!(b >= a);
    }
}
