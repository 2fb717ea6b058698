//! x86_64 CPU features: what the CPU reports, what the OS enabled, what may be used.
//!
//! The decision logic (`features.rs`) works on register values behind the [`X86Cpu`]
//! trait, so it compiles and is unit-tested on every host with synthetic values. The
//! live CPU is `native.rs`, compiled only on x86_64 Linux (this file is the only place that
//! `cfg`-gates it); it reads XCR0 and asks for the AMX permission through [`crate::arch`],
//! the same primitives the kernels use.
//!
//! Order of checks for each feature: CPUID bit (`cpu`) -> OSXSAVE, then XCR0 state bits
//! (`os`; for AMX also the Linux XTILEDATA permission) -> `usable` = both, and for AMX a
//! CPUID leaf 0x1D palette.

mod features;

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
use features::NoCpu;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use features::X86Cpu;
pub use features::{FEATURES, probe};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod native;

/// The live CPU, when this build runs on x86_64 Linux.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub fn native() -> Option<impl X86Cpu> {
    Some(native::Native)
}

/// The live CPU, when this build runs on x86_64 Linux.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub fn native() -> Option<NoCpu> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::request_amx_permission;

    /// On whatever host runs the tests: the helper the kernels call and the probe agree.
    #[test]
    fn request_amx_permission_agrees_with_the_live_probe() {
        let granted = request_amx_permission();
        if let Some(cpu) = native() {
            let facts = probe(&cpu);
            let tile = facts.features["amx_tile"];
            assert_eq!(granted, tile.os == Some(true), "{facts:?}");
            // Asking twice is harmless and gives the same answer.
            assert_eq!(granted, request_amx_permission());
        } else {
            assert!(!granted);
        }
    }
}
