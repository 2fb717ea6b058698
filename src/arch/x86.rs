//! XCR0 through XGETBV, behind the OSXSAVE check that makes the instruction defined.

use core::arch::x86_64::__cpuid;

/// CPUID.1:ECX bit 27: the OS has enabled XSAVE, so XGETBV does not fault.
const OSXSAVE: u32 = 1 << 27;

/// XCR0 (the state components the OS enabled), or `None` when the CPU does not report
/// OSXSAVE and XGETBV would raise #UD.
pub fn xcr0() -> Option<u64> {
    // CPUID leaf 1 exists on every x86_64 CPU.
    if __cpuid(1).ecx & OSXSAVE == 0 {
        return None;
    }
    // SAFETY: OSXSAVE was just seen set, the architectural condition for XGETBV not to
    // fault.
    Some(unsafe { xgetbv0() })
}

/// Reads XCR0.
///
/// # Safety
/// The CPU must report OSXSAVE (CPUID.1:ECX[27]); otherwise XGETBV raises #UD.
#[target_feature(enable = "xsave")]
unsafe fn xgetbv0() -> u64 {
    // SAFETY: the caller guarantees OSXSAVE, so XGETBV with ECX = 0 is defined.
    unsafe { core::arch::x86_64::_xgetbv(0) }
}
