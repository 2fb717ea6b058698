//! The live x86_64 instructions behind [`X86Cpu`]: CPUID (through raw-cpuid), XGETBV and
//! the Linux `arch_prctl` XCOMP permission calls. Compiled only on x86_64 Linux.

use super::X86Cpu;

const ARCH_GET_XCOMP_PERM: libc::c_long = 0x1022;
const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
const XFEATURE_XTILEDATA: libc::c_long = 18;

/// The CPU this process runs on.
pub struct Native;

impl X86Cpu for Native {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        let r = raw_cpuid::native_cpuid::cpuid_count(leaf, subleaf);
        [r.eax, r.ebx, r.ecx, r.edx]
    }

    fn xcr0(&self) -> u64 {
        // SAFETY: `X86Cpu::xcr0` is only called after CPUID.1:ECX.OSXSAVE[27] was seen
        // set, which is the architectural condition for XGETBV not to fault (#UD).
        unsafe { xgetbv0() }
    }

    fn request_amx(&self) -> Option<u64> {
        request_xtiledata()
    }
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

/// `ARCH_REQ_XCOMP_PERM(XTILEDATA)` then `ARCH_GET_XCOMP_PERM`; the granted mask.
fn request_xtiledata() -> Option<u64> {
    // SAFETY: arch_prctl with ARCH_REQ_XCOMP_PERM takes an integer argument and only
    // changes this process's permitted xstate; an old kernel returns EINVAL.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    if rc != 0 {
        return None;
    }
    let mut mask: u64 = 0;
    // SAFETY: ARCH_GET_XCOMP_PERM writes one u64 through the pointer, which points to
    // `mask`, alive and writable for the whole call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_GET_XCOMP_PERM,
            &mut mask as *mut u64,
        )
    };
    (rc == 0).then_some(mask)
}

/// See [`super::request_amx_permission`].
pub fn request_amx_permission() -> bool {
    const BITS: u64 = (1 << 17) | (1 << 18);
    request_xtiledata().is_some_and(|mask| mask & BITS == BITS)
}
