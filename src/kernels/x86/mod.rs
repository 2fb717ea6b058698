//! x86-64 kernels and feature detection.
//!
//! Dispatch order (highest rank first, per path and phase; see `registry::select`; `bench`
//! races every available variant and reports the fastest):
//! - W4A8 prefill: `w4a8-amx` → `w4a8-gemm-avx512vnni` → `w4a8-avx512vnni` → `w4a8-avxvnni`
//!   → `w4a8-gemm-avx2-asm` → `w4a8-gemm-avx2` → `w4a8-avx2` → `w4a8-scalar`; decode:
//!   `w4a8-avx512vnni` → `w4a8-avxvnni` → `w4a8-avx2` → scalar.
//! - W4A16 prefill: `w4a16-gemm-amx` → `w4a16-gemm-avx512bf16` → `w4a16-gemv-avx512` →
//!   `w4a16-gemm-avx2` → `w4a16-gemv-avx2` → `w4a16-scalar`; decode: `w4a16-gemv-avx512-i16` →
//!   `w4a16-gemv-avx512bf16` → `w4a16-gemv-avx512` → `w4a16-gemv-avx2-i16` → `w4a16-gemv-avx2` → scalar.
//! - bf16 prefill: `bf16-gemm-amx` → `bf16-gemm-avx512bf16` → `bf16-gemv-avx512` →
//!   `bf16-gemm-avx2` → `bf16-gemv-avx2` → `bf16-scalar`; decode: `bf16-gemv-avx512` →
//!   `bf16-gemv-avx2` → scalar.
//! - The prefill GEMMs run their path's GEMV below a measured row count (small prefills).
//!
//! Feature detection is the crate's one x86 feature table ([`crate::arch::features`], the
//! one the probe reports): CPUID bit, OSXSAVE and XCR0 state, and for AMX also CPUID.(7,0):
//! EDX bits 24/25/22, XCR0 bits 17/18, a leaf 0x1D tile palette and the Linux
//! `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)` permission (kernels.md §6.2–6.3),
//! detected once per process.

use super::cpu::Feature;
use super::registry::Variant;

pub(crate) mod amx;
pub(crate) mod bf16;
mod dpbf16;
mod fma_gemm;
mod lanes;
mod prefetch;
pub mod stream;
pub(crate) mod w4a16;
pub(crate) mod w4a8;

pub use amx::tile;

/// The x86 variants, in registry order. Add new x86 variants here (one line each).
pub static VARIANTS: &[&Variant] = &[
    &amx::w4a8::W4A8_AMX,
    &w4a8::avx512vnni::W4A8_GEMM_AVX512VNNI,
    &w4a8::avx512vnni::W4A8_AVX512VNNI,
    &w4a8::avx2::W4A8_AVXVNNI,
    &w4a8::gemm_avx2::W4A8_GEMM_AVX2,
    &w4a8::gemm_avx2::W4A8_GEMM_AVX2_ASM,
    &w4a8::avx2::W4A8_AVX2,
    &w4a8::avx2::W4A8_AVX2_STREAM,
    &w4a16::GEMM_AMX,
    &w4a16::GEMM_AVX512BF16,
    &w4a16::GEMV_AVX512,
    &w4a16::GEMV_AVX512_I16,
    &w4a16::GEMV_AVX512BF16,
    &w4a16::GEMM_AVX2,
    &w4a16::GEMV_AVX2_I16,
    &w4a16::GEMV_AVX2,
    &bf16::GEMM_AMX,
    &bf16::GEMM_AVX512BF16,
    &bf16::GEMV_AVX512,
    &bf16::GEMM_AVX2,
    &bf16::GEMV_AVX2,
    &bf16::GEMV_AVX2_STREAM,
];

/// The feature table's name for `f` (`/proc/cpuinfo` spelling); `None` off x86.
fn table_name(f: Feature) -> Option<&'static str> {
    Some(match f {
        Feature::Avx2 => "avx2",
        Feature::Fma => "fma",
        Feature::Avx512f => "avx512f",
        Feature::Avx512bw => "avx512bw",
        Feature::Avx512vl => "avx512vl",
        Feature::Avx512vnni => "avx512_vnni",
        Feature::Avx512bf16 => "avx512_bf16",
        Feature::Avx512vbmi => "avx512vbmi",
        Feature::AvxVnni => "avx_vnni",
        Feature::AmxTile => "amx_tile",
        Feature::AmxInt8 => "amx_int8",
        Feature::AmxBf16 => "amx_bf16",
        Feature::Neon | Feature::Dotprod | Feature::I8mm | Feature::Bf16 => return None,
    })
}

/// Why `f` is unusable here, or `None`.
pub fn missing(f: Feature) -> Option<&'static str> {
    let Some(name) = table_name(f) else {
        return Some(f.name());
    };
    let live = crate::arch::features::live();
    if matches!(f, Feature::AmxTile | Feature::AmxInt8 | Feature::AmxBf16) {
        if !live.get("amx_tile").cpu || !live.get(name).cpu {
            return Some(f.name());
        }
        return amx_permission().err();
    }
    if live.usable(name) {
        None
    } else {
        Some(f.name())
    }
}

/// Whether AMX tiles can run in this process (the permission is requested once per
/// process, by the feature table's first use).
pub fn amx_permission() -> Result<(), &'static str> {
    let live = crate::arch::features::live();
    let bits = crate::arch::AMX_STATE_BITS;
    if !live.get("amx_tile").cpu {
        return Err("amx-tile");
    }
    if live.xcr0.is_none_or(|xcr0| xcr0 & bits != bits) {
        return Err("amx (the OS has not enabled XTILECFG/XTILEDATA in XCR0)");
    }
    if live.amx_permission != Some(true) {
        return Err(PERMISSION_REFUSED);
    }
    if live.amx_palettes == 0 {
        return Err("amx (CPUID leaf 0x1D reports no tile palette)");
    }
    Ok(())
}

#[cfg(target_os = "linux")]
const PERMISSION_REFUSED: &str =
    "amx (arch_prctl XTILEDATA permission refused; Linux >= 5.16 needed)";
#[cfg(not(target_os = "linux"))]
const PERMISSION_REFUSED: &str = "amx (tile permission request only implemented for Linux)";
