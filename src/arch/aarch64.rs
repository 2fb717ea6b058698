//! arm64 CPU facts from the Linux auxiliary vector: `AT_HWCAP` / `AT_HWCAP2`, read with
//! `getauxval` (libc). HWCAP is the kernel's statement that this process may execute an
//! extension, so the kernels' dispatch asks it rather than a second detector.
//!
//! The bit table is [`super::arm_hwcap`], which the probe reports from too: the names the
//! kernel registry asks for (`asimd`, `asimddp`, `i8mm`, `bf16`) are the names `probe`
//! reports, so a profile and the kernel list of the same host cannot disagree.

use std::sync::OnceLock;

/// `(AT_HWCAP, AT_HWCAP2)` of this process, read once.
pub fn hwcaps() -> (u64, u64) {
    static CAPS: OnceLock<(u64, u64)> = OnceLock::new();
    *CAPS.get_or_init(|| {
        // SAFETY: getauxval only reads the auxiliary vector the kernel gave this process;
        // an absent entry returns 0.
        unsafe {
            (
                libc::getauxval(libc::AT_HWCAP),
                libc::getauxval(libc::AT_HWCAP2),
            )
        }
    })
}

/// True when HWCAP reports the feature the probe calls `name` (`asimd`, `asimddp`, `i8mm`,
/// `bf16`, ...). Unknown names are false.
pub fn has(name: &str) -> bool {
    let (hwcap, hwcap2) = hwcaps();
    super::arm_hwcap::is_set(name, hwcap, hwcap2).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asimd_is_always_present_and_agrees_with_std() {
        // Advanced SIMD is mandatory in the arm64 Linux ABI.
        assert!(has("asimd"));
        assert!(!has("no-such-feature"));
        assert_eq!(
            has("asimddp"),
            std::arch::is_aarch64_feature_detected!("dotprod")
        );
        assert_eq!(has("i8mm"), std::arch::is_aarch64_feature_detected!("i8mm"));
        assert_eq!(has("bf16"), std::arch::is_aarch64_feature_detected!("bf16"));
    }
}
