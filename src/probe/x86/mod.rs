//! x86_64 CPU features: what the CPU reports, what the OS enabled, what may be used.
//!
//! The decision logic (`features.rs`) works on register values behind the [`X86Cpu`]
//! trait, so it compiles and is unit-tested on every host with synthetic values. The
//! real instructions and the `arch_prctl` syscall live in `native.rs`, compiled only on
//! x86_64 Linux; this file is the only place that `cfg`-gates them.
//!
//! Order of checks for each feature: CPUID bit (`cpu`) -> OSXSAVE, then XCR0 state bits
//! (`os`; for AMX also the Linux XTILEDATA permission) -> `usable` = both, and for AMX a
//! CPUID leaf 0x1D palette.

mod features;

pub use features::{FEATURES, NoCpu, State, X86Cpu, X86Facts, hypervisor_name, probe};

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

/// Asks Linux for this process's permission to use AMX tile data
/// (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`) and reads it back with
/// `ARCH_GET_XCOMP_PERM`. True when bits 17 and 18 are granted. Per process and
/// idempotent; call it before starting threads that run AMX code. Always false off
/// x86_64 Linux.
pub fn request_amx_permission() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        native::request_amx_permission()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
