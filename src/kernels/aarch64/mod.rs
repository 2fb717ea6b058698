//! aarch64 kernels and feature detection (kernels.md §4.7).
//!
//! Dispatch order (highest rank first, per path and phase; see `registry::select`):
//! - W4A8 prefill: `w4a8-neon-i8mm` (`smmla`) → `w4a8-neon-dotprod` (`sdot`) → `w4a8-neon`
//!   (ARMv8.0 `smull`/`smlal`/`sadalp`) → `w4a8-scalar`; decode: dotprod → neon → scalar.
//! - W4A16 prefill: `w4a16-gemm-neon-bfmmla` → `w4a16-gemv-neon-bfdot` → `w4a16-gemv-neon`
//!   (f32 `fmla`) → `w4a16-scalar`; decode: bfdot → neon → scalar.
//! - bf16 prefill: `bf16-gemm-neon-bfmmla` → `bf16-gemv-neon-bfdot` → `bf16-gemv-neon` →
//!   `bf16-scalar`; decode: bfdot → neon → scalar.
//!
//! Availability comes from HWCAP/HWCAP2 through [`crate::arch::aarch64`], the bit table the
//! probe reports (`asimd`, `asimddp`, `i8mm`, `bf16`). `sdot`, `smmla`, `bfdot` and `bfmmla`
//! have no stable intrinsics in Rust 1.95, so [`ops`] emits them with `asm!` inside
//! `#[target_feature]` functions; everything else uses `std::arch::aarch64` intrinsics.

use super::cpu::Feature;
use super::registry::Variant;

mod bf16_bf16;
mod bf16_neon;
mod ops;
mod w4a16_bf16;
mod w4a16_neon;
mod w4a8_dotprod;
mod w4a8_i8mm;
mod w4a8_neon;

/// The aarch64 variants, in registry order. Add new aarch64 variants here (one line each).
pub static VARIANTS: &[&Variant] = &[
    &w4a8_i8mm::W4A8_I8MM,
    &w4a8_dotprod::W4A8_DOTPROD,
    &w4a8_neon::W4A8_NEON,
    &w4a16_bf16::GEMM_BFMMLA,
    &w4a16_bf16::GEMV_BFDOT,
    &w4a16_neon::GEMV_NEON,
    &bf16_bf16::GEMM_BFMMLA,
    &bf16_bf16::GEMV_BFDOT,
    &bf16_neon::GEMV_NEON,
];

/// Why `f` is unusable here, or `None`. Reads HWCAP (the probe's names, see the module docs).
pub fn missing(f: Feature) -> Option<&'static str> {
    let hwcap = match f {
        Feature::Neon => "asimd",
        Feature::Dotprod => "asimddp",
        Feature::I8mm => "i8mm",
        Feature::Bf16 => "bf16",
        _ => return Some(f.name()),
    };
    if hwcap_has(hwcap) {
        None
    } else {
        Some(f.name())
    }
}

#[cfg(target_os = "linux")]
fn hwcap_has(name: &str) -> bool {
    crate::arch::aarch64::has(name)
}

/// Off Linux there is no auxiliary vector; std's detector answers instead.
#[cfg(not(target_os = "linux"))]
fn hwcap_has(name: &str) -> bool {
    match name {
        "asimd" => std::arch::is_aarch64_feature_detected!("neon"),
        "asimddp" => std::arch::is_aarch64_feature_detected!("dotprod"),
        "i8mm" => std::arch::is_aarch64_feature_detected!("i8mm"),
        "bf16" => std::arch::is_aarch64_feature_detected!("bf16"),
        _ => false,
    }
}

/// AMX does not exist on aarch64.
pub fn amx_permission() -> Result<(), &'static str> {
    Err("amx (not an x86-64 CPU)")
}

#[cfg(test)]
mod tests {
    use super::super::registry::Variant;
    use super::*;

    /// What CI expects of the emulated CPU (`.ci/run` sets `EDGEPLAN_EXPECT_KERNELS`):
    /// `all` under `qemu-aarch64 -cpu max` (no aarch64 variant may be skipped), `neon` under
    /// an ARMv8.0 model (dotprod, i8mm and bf16 absent, so every fallback is what ran).
    /// Unset: nothing is asserted (real hardware varies).
    #[test]
    fn emulated_cpu_offers_what_ci_expects() {
        let expect = std::env::var("EDGEPLAN_EXPECT_KERNELS").unwrap_or_default();
        let avail = |v: &Variant| v.is_available();
        if !expect.is_empty() {
            // CI runs these under qemu-user without saying so: bench must notice by itself.
            assert!(
                crate::arch::emulation::emulation().is_some(),
                "qemu-user not detected; set EDGEPLAN_EMULATED=1 for bench runs under this qemu"
            );
        }
        match expect.as_str() {
            "" => {}
            "all" => {
                for v in VARIANTS {
                    assert!(
                        avail(v),
                        "{} would be SKIPPED: missing {:?}",
                        v.name,
                        v.missing()
                    );
                }
            }
            "neon" => {
                for v in VARIANTS {
                    let plain = v.requires == [Feature::Neon];
                    assert_eq!(avail(v), plain, "{}: available = {}", v.name, avail(v));
                }
            }
            other => panic!("EDGEPLAN_EXPECT_KERNELS={other}: expected `all` or `neon`"),
        }
    }

    #[test]
    fn every_path_has_a_plain_neon_variant() {
        use super::super::registry::KernelPath;
        for path in [KernelPath::W4A8, KernelPath::W4A16, KernelPath::Bf16] {
            assert!(
                VARIANTS
                    .iter()
                    .any(|v| v.path() == path && v.requires == [Feature::Neon]),
                "{} has no ARMv8.0 NEON variant",
                path.name()
            );
        }
        // Advanced SIMD is mandatory on arm64 Linux, so the plain variants always run.
        assert_eq!(missing(Feature::Neon), None);
    }
}
