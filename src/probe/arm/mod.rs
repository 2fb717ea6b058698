//! arm64 CPU features and identity: HWCAP bits, `Features` words, implementer/part names.
//!
//! `features.rs` holds the arch-neutral logic (tested on any CI host): the HWCAP bit
//! table, the merge of HWCAP with the cpuinfo `Features` line, and the MIDR name tables.
//! Reading the live auxiliary vector is the only aarch64-only code and is gated here.

mod features;

pub use features::{core_name, from_hwcaps, from_words, vendor_name};

/// `(AT_HWCAP, AT_HWCAP2)` of this process, on aarch64 Linux.
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
pub fn live_hwcaps() -> Option<(u64, u64)> {
    // SAFETY: getauxval only reads the auxiliary vector the kernel gave this process;
    // an absent entry returns 0.
    let (hwcap, hwcap2) = unsafe {
        (
            libc::getauxval(libc::AT_HWCAP),
            libc::getauxval(libc::AT_HWCAP2),
        )
    };
    Some((hwcap, hwcap2))
}

/// `(AT_HWCAP, AT_HWCAP2)` of this process, on aarch64 Linux.
#[cfg(not(all(target_arch = "aarch64", target_os = "linux")))]
pub fn live_hwcaps() -> Option<(u64, u64)> {
    None
}
