//! aarch64: feature detection only for now. The NEON `sdot`/`smmla` kernels of kernels.md
//! §4.7 are not written yet; `w4a8-scalar` serves this target.

use super::cpu::Feature;
use super::registry::Variant;

/// The aarch64 variants, in registry order.
pub static VARIANTS: &[&Variant] = &[];

/// Why `f` is unusable here, or `None`.
pub fn missing(f: Feature) -> Option<&'static str> {
    let ok = match f {
        Feature::Neon => std::arch::is_aarch64_feature_detected!("neon"),
        Feature::Dotprod => std::arch::is_aarch64_feature_detected!("dotprod"),
        Feature::I8mm => std::arch::is_aarch64_feature_detected!("i8mm"),
        _ => false,
    };
    if ok { None } else { Some(f.name()) }
}

/// AMX does not exist on aarch64.
pub fn amx_permission() -> Result<(), &'static str> {
    Err("amx (not an x86-64 CPU)")
}
