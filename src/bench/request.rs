//! The resolved bench request: what the user asked for, checked (by `cli::resolve`),
//! with no clap types; and the thread count it resolves to on this host.

use std::path::PathBuf;

use super::backend::KernelPath;
use super::clock::{PeakBudget, RoundsPolicy as Policy, Sampling};
use super::paired::MIN_ROUNDS;
use crate::error::usage;
use crate::profile::Priority;

/// Largest prefill accepted: beyond it a step takes minutes on a small CPU.
pub const MAX_PREFILL_TOKENS: usize = 8192;

/// How hard to measure: `--quick`, resolved once. Every knob that `--quick` turns (the
/// sampling policies, the peak budget, the decode layers, the fidelity sizes) reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Full,
    Quick,
}

/// Sampling policies of the timed stages.
#[derive(Debug, Clone, Copy)]
pub struct Policies {
    pub bandwidth: Sampling,
    pub decode: Sampling,
    pub prefill: Sampling,
}

impl Effort {
    pub fn is_quick(self) -> bool {
        self == Effort::Quick
    }

    /// Repeats and time budgets of the bandwidth probe, decode and prefill.
    pub fn policies(self) -> Policies {
        let s = |warmup, min_repeats, max_repeats, budget| Sampling {
            warmup,
            min_repeats,
            max_repeats,
            budget,
        };
        match self {
            Effort::Quick => Policies {
                bandwidth: s(1, 3, 5, 0.3),
                decode: s(1, 3, 3, 0.3),
                // The decode rotation already touched the layer prefill reuses.
                prefill: s(0, 2, 2, 0.0),
            },
            Effort::Full => Policies {
                bandwidth: s(1, 5, 10, 1.0),
                decode: s(1, 5, 15, 1.5),
                prefill: s(1, 3, 7, 1.5),
            },
        }
    }

    /// The paired rounds: at least `min_rounds`, then until decided or the budget is
    /// spent. One round on the 2-core host costs about 0.15 s for the default model.
    pub fn rounds(self) -> Policy {
        match self {
            Effort::Quick => Policy {
                min_rounds: 8,
                max_rounds: 60,
                budget_s: 5.0,
            },
            Effort::Full => Policy {
                min_rounds: 12,
                max_rounds: 400,
                budget_s: 30.0,
            },
        }
    }

    /// Short slices, best of many: on a shared host some slice runs unpreempted.
    pub fn peak_budget(self) -> PeakBudget {
        match self {
            Effort::Quick => PeakBudget {
                slice_s: 0.004,
                runs: 5,
            },
            Effort::Full => PeakBudget {
                slice_s: 0.005,
                runs: 9,
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct BenchRequest {
    /// A preset name, or the config.json path.
    pub model: ModelSpec,
    /// Paths asked for (empty: all three); the planned one is added later.
    pub paths: Vec<KernelPath>,
    pub kernel: Option<String>,
    pub list_kernels: bool,
    pub prefill_tokens: usize,
    pub threads: Option<usize>,
    pub effort: Effort,
    /// `--rounds N`: exactly N paired rounds (no adaptive stop).
    pub rounds: Option<usize>,
    /// `--budget SECONDS`: the time after which no new paired round starts.
    pub budget_s: Option<f64>,
    pub profile: Option<PathBuf>,
    pub priority: Priority,
    pub strict: bool,
    pub save: Option<PathBuf>,
    pub json: bool,
    /// `--engine`: also time that engine's own kernels.
    pub engine: Option<EngineChoice>,
}

/// The engine `bench --engine` times, and the program that runs it: the Python vLLM is
/// installed in (`--python`; default `python3` on PATH), or llama.cpp's `llama-bench`
/// (`--llama-bench`; default on PATH).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineChoice {
    pub engine: crate::contract::Engine,
    pub program: Option<PathBuf>,
}

impl BenchRequest {
    /// The paired rounds' stopping rule: the effort's, with `--rounds` and `--budget`
    /// applied.
    pub fn rounds_policy(&self) -> Policy {
        let mut p = self.effort.rounds();
        if let Some(b) = self.budget_s {
            p.budget_s = b;
        }
        if let Some(n) = self.rounds {
            p = Policy {
                min_rounds: n,
                max_rounds: n,
                budget_s: f64::INFINITY,
            };
        }
        p
    }
}

/// `--rounds`: at least enough for a 95 % interval, at most a few thousand.
pub fn check_rounds(n: usize) -> anyhow::Result<usize> {
    if (MIN_ROUNDS..=5000).contains(&n) {
        Ok(n)
    } else {
        Err(usage(format!(
            "--rounds {n}: use {MIN_ROUNDS}..=5000 (fewer than {MIN_ROUNDS} rounds give no 95 % interval)"
        )))
    }
}

/// `--budget`: a positive number of seconds.
pub fn check_budget(text: &str) -> anyhow::Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(usage(format!(
            "--budget {text}: give the seconds of paired rounds, a number in (0, 3600]"
        ))),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ModelSpec {
    Preset(String),
    Config(PathBuf),
}

/// The thread count to use: `--threads` checked against this host's logical CPUs, else
/// the profile's usable threads capped to this host. Returns the count and a note when
/// the profile's figure had to be capped.
pub fn resolve_threads(
    asked: Option<usize>,
    profile_usable: Option<u32>,
    host_cpus: usize,
) -> anyhow::Result<(usize, Option<String>)> {
    let host_cpus = host_cpus.max(1);
    match asked {
        Some(0) => Err(usage("--threads 0: at least one thread is needed")),
        Some(n) if n > host_cpus => Err(usage(format!(
            "--threads {n}: this host has {host_cpus} logical CPUs; use 1..={host_cpus} (more threads than CPUs only measures contention)"
        ))),
        Some(n) => Ok((n, None)),
        None => match profile_usable.map(|u| u as usize).filter(|&u| u > 0) {
            Some(u) if u > host_cpus => Ok((
                host_cpus,
                Some(format!(
                    "the profile allows {u} threads but this host has {host_cpus} logical CPUs: using {host_cpus}"
                )),
            )),
            Some(u) => Ok((u, None)),
            None => Ok((host_cpus, None)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Exit, exit_for};

    #[test]
    fn threads_default_to_the_profile_capped_by_the_host() {
        assert_eq!(resolve_threads(None, Some(2), 2).unwrap(), (2, None));
        let (n, note) = resolve_threads(None, Some(24), 2).unwrap();
        assert_eq!(n, 2);
        assert!(note.unwrap().contains("24"));
        assert_eq!(resolve_threads(None, None, 4).unwrap().0, 4);
        assert_eq!(resolve_threads(Some(1), Some(2), 2).unwrap().0, 1);
    }

    #[test]
    fn bad_thread_counts_are_usage_errors() {
        for bad in [0, 3, 1000] {
            let err = resolve_threads(Some(bad), Some(2), 2).unwrap_err();
            assert_eq!(exit_for(&err), Exit::Usage);
            assert!(
                err.to_string().starts_with(&format!("--threads {bad}")),
                "{err}"
            );
        }
    }
}
