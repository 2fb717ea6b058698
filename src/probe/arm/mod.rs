//! arm64 CPU features and identity: HWCAP bits, `Features` words, implementer/part names.
//!
//! `features.rs` holds the arch-neutral logic (tested on any CI host): the HWCAP bit
//! table and the merge of HWCAP with the cpuinfo `Features` line; `midr.rs` names
//! implementers and parts.
//! Reading the live auxiliary vector is the only aarch64-only code and is gated here.

mod features;
mod midr;

pub use features::{from_hwcaps, from_words};
pub use midr::{display_name, parse_midr, vendor_name};

/// `(AT_HWCAP, AT_HWCAP2)` of this process, on aarch64 Linux.
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
pub fn live_hwcaps() -> Option<(u64, u64)> {
    Some(crate::arch::aarch64::hwcaps())
}

/// `(AT_HWCAP, AT_HWCAP2)` of this process, on aarch64 Linux.
#[cfg(not(all(target_arch = "aarch64", target_os = "linux")))]
pub fn live_hwcaps() -> Option<(u64, u64)> {
    None
}
