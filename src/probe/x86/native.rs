//! The live x86_64 CPU behind [`X86Cpu`]: CPUID through raw-cpuid; XCR0 and the Linux
//! `arch_prctl` XCOMP permission through the crate's shared primitives ([`crate::arch`]).
//! Compiled only on x86_64 Linux.

use super::X86Cpu;

/// The CPU this process runs on.
pub struct Native;

impl X86Cpu for Native {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        let r = raw_cpuid::native_cpuid::cpuid_count(leaf, subleaf);
        [r.eax, r.ebx, r.ecx, r.edx]
    }

    fn xcr0(&self) -> u64 {
        // Only called after CPUID.1:ECX.OSXSAVE[27] was seen set, so `xcr0` (which checks
        // the same bit before XGETBV) answers `Some`.
        crate::arch::xcr0().unwrap_or(0)
    }

    fn request_amx(&self) -> Option<u64> {
        crate::arch::request_xtiledata()
    }
}
