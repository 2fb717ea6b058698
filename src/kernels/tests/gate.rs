//! The correctness gate (`verify::gate`, what bench and the timing harnesses run before
//! timing) on every runnable variant, and the fallback chain: for each path and phase,
//! every available variant in rank order, from the default down to the scalar reference,
//! passes the gate when forced by name.

use super::{pool, runnable};
use crate::kernels::registry::{self, KernelPath, Phase};
use crate::kernels::verify;

const PATHS: [KernelPath; 3] = [KernelPath::W4A8, KernelPath::W4A16, KernelPath::Bf16];

#[test]
fn every_runnable_variant_passes_the_gate() {
    for path in PATHS {
        for r in runnable(path) {
            verify::gate(&r, pool(2)).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn fallback_chain_per_phase_is_verified_and_ends_in_scalar() {
    for path in PATHS {
        for phase in [Phase::Decode, Phase::Prefill] {
            let m = if phase == Phase::Decode { 1 } else { 33 };
            let mut chain: Vec<_> = registry::for_path(path)
                .filter(|v| v.serves(phase) && v.is_available())
                .collect();
            chain.sort_by_key(|v| std::cmp::Reverse(v.rank));
            assert_eq!(
                registry::select_with(path, m, None).map(|r| r.name()).ok(),
                chain.first().map(|v| v.name),
                "{} {}: the default is not the top of the chain",
                path.name(),
                phase.name()
            );
            assert_eq!(chain.last().map(|v| v.isa), Some("scalar"));
            for v in chain {
                let forced = registry::select_with(path, m, Some(v.name)).expect("available");
                verify::check_case(&forced, pool(2), m, 70, 256, 77)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", path.name(), phase.name()));
            }
        }
    }
}
