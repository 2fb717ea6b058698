//! Native CPU primitives shared by `probe`, `kernels` and `bench`: reading XCR0 (XGETBV,
//! guarded by the OSXSAVE check), the Linux `arch_prctl` request for the AMX tile-data
//! permission, and on arm64 the HWCAP words (`aarch64.rs`). One implementation, so the probe's report and the kernels' dispatch cannot
//! disagree about what the OS allows.
//!
//! `features.rs` is the one x86 feature table (CPUID + XCR0 + AMX palette + AMX
//! permission) that probe reports, the kernels dispatch on and bench's peak loops check. `cfg` gates for the
//! target live here and nowhere else in this module; off x86_64 (or off Linux for the
//! permission) the functions answer "not available".

#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
pub mod aarch64;
pub mod arm_hwcap;
pub mod emulation;
pub mod features;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod x86_linux;

#[cfg(target_arch = "x86_64")]
pub use x86::xcr0;

/// XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA): the AMX state the OS must enable, and the
/// bits the XCOMP permission mask must grant.
pub const AMX_STATE_BITS: u64 = (1 << 17) | (1 << 18);

/// Asks Linux for this process's permission to use AMX tile data
/// (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`) and reads the granted mask back
/// with `ARCH_GET_XCOMP_PERM`. `None` when the kernel refused either call (or is older than
/// 5.16), and always off x86_64 Linux. Per process and idempotent.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // callers are x86-only
pub fn request_xtiledata() -> Option<u64> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        x86_linux::request_xtiledata()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        None
    }
}

/// [`request_xtiledata`] as a yes/no: true when bits 17 and 18 are granted. Call it before
/// starting threads that run AMX code. Always false off x86_64 Linux.
#[cfg(test)]
pub fn request_amx_permission() -> bool {
    request_xtiledata().is_some_and(|mask| mask & AMX_STATE_BITS == AMX_STATE_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_is_idempotent_and_consistent_with_the_mask() {
        let first = request_amx_permission();
        assert_eq!(first, request_amx_permission());
        if first {
            let mask = request_xtiledata().expect("granted once, readable again");
            assert_eq!(mask & AMX_STATE_BITS, AMX_STATE_BITS);
        }
    }
}
