//! The resolved bench request: what the user asked for, checked, with no clap types.
//!
//! Flag values that clap accepted but bench cannot use (`--threads 0`, an unknown path
//! in `--paths`, `--prefill-tokens 0`) are usage errors (exit 2) naming the flag.

use std::path::PathBuf;

use super::backend::BenchPath;
use crate::cli::{BenchArgs, BenchFormat, Priority};
use crate::error::{Coded, Exit};

/// The environment variable that swaps in the fake executor (tests only).
pub const EXECUTOR_ENV: &str = "EDGEPLAN_BENCH_EXECUTOR";

/// Largest prefill accepted: beyond it a step takes minutes on a small CPU.
pub const MAX_PREFILL_TOKENS: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executor {
    Real,
    /// Simulated GEMMs on a virtual clock; `Some(path)` makes that path 4x slower (to
    /// test a contradicted plan end to end).
    Fake(Option<BenchPath>),
}

#[derive(Debug, Clone)]
pub struct BenchRequest {
    /// A preset name, or the config.json path.
    pub model: ModelSpec,
    /// Paths asked for (empty: all three); the planned one is added later.
    pub paths: Vec<BenchPath>,
    pub kernel: Option<String>,
    pub list_kernels: bool,
    pub prefill_tokens: usize,
    pub threads: Option<usize>,
    pub quick: bool,
    pub profile: Option<PathBuf>,
    pub priority: Priority,
    pub strict: bool,
    pub save: Option<PathBuf>,
    pub json: bool,
    pub executor: Executor,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ModelSpec {
    Preset(String),
    Config(PathBuf),
}

/// A usage error (exit 2) with the given line.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Coded {
        exit: Exit::Usage,
        message: message.into(),
    }
    .into()
}

impl BenchRequest {
    pub fn from_args(args: BenchArgs) -> anyhow::Result<BenchRequest> {
        let mut paths = Vec::new();
        for p in &args.paths {
            if p.trim().is_empty() {
                continue;
            }
            let path = BenchPath::parse(p).ok_or_else(|| {
                usage(format!(
                    "--paths: unknown path {p:?}; use w4a8, w4a16 or bf16 (comma-separated)"
                ))
            })?;
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        if args.threads == Some(0) {
            return Err(usage("--threads 0: at least one thread is needed"));
        }
        if args.prefill_tokens == 0 || args.prefill_tokens > MAX_PREFILL_TOKENS {
            return Err(usage(format!(
                "--prefill-tokens {}: use 1..={MAX_PREFILL_TOKENS}",
                args.prefill_tokens
            )));
        }
        let executor = match std::env::var(EXECUTOR_ENV).as_deref() {
            Ok("fake") => Executor::Fake(None),
            Ok("real") | Ok("") | Err(_) => Executor::Real,
            Ok(other) => match other.strip_prefix("fake-slow-").and_then(BenchPath::parse) {
                Some(path) => Executor::Fake(Some(path)),
                None => {
                    return Err(usage(format!(
                        "{EXECUTOR_ENV}={other}: use real, fake or fake-slow-PATH"
                    )));
                }
            },
        };
        Ok(BenchRequest {
            model: match args.model_config {
                Some(path) => ModelSpec::Config(path),
                None => ModelSpec::Preset(args.model),
            },
            paths,
            kernel: args.kernel,
            list_kernels: args.list_kernels,
            prefill_tokens: args.prefill_tokens,
            threads: args.threads,
            quick: args.quick,
            profile: args.profile,
            priority: args.priority,
            strict: args.strict,
            save: args.save,
            json: args.format == BenchFormat::Json,
            executor,
        })
    }
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
    use crate::error::exit_for;

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
