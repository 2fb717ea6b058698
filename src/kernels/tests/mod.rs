//! The kernel test harness: every registered variant the host can run is checked against
//! the scalar reference on identical packed inputs, through the one verification of
//! [`crate::kernels::verify`] (memchr's "every implementation through one harness",
//! candle's "optimized vs reference on the same quantized data"). Lower-ranked variants are
//! the fallbacks the registry picks when a feature is missing, and they run here too; a
//! variant this host cannot run prints `SKIPPED <name>: <reason>` on stderr.
//!
//! - `w4a8.rs`: W4A8 against the exact integer identity; registry and override behaviour.
//! - `float.rs`: W4A16 and bf16 (and the AMX drivers with emulated tiles).
//! - `gate.rs`: the bench/timing correctness gate on every variant, and the fallback chain
//!   per path and phase.

use std::sync::OnceLock;

use super::pool::ThreadPool;
use super::registry::{self, KernelPath, Ready};

pub(crate) mod float;
mod gate;
mod w4a8;

/// Shared pools of 1, 2 and 3 threads.
pub(crate) fn pool(threads: usize) -> &'static ThreadPool {
    static POOLS: OnceLock<Vec<ThreadPool>> = OnceLock::new();
    &POOLS.get_or_init(|| {
        (1..=3)
            .map(|t| ThreadPool::new(t).expect("spawn test pool"))
            .collect()
    })[threads - 1]
}

/// Every runnable variant of `path`; prints the skipped ones with the reason.
pub(crate) fn runnable(path: KernelPath) -> Vec<Ready> {
    let mut out = Vec::new();
    for v in registry::for_path(path) {
        match v.ready() {
            Ok(r) => out.push(r),
            Err(e) => eprintln!("SKIPPED {}: {e}", v.name),
        }
    }
    assert!(!out.is_empty(), "no runnable {} variant", path.name());
    out
}
