//! x86-64 kernels and feature detection.
//!
//! Dispatch order (highest rank first, per path and phase; see `registry::select`):
//! - W4A8 prefill: `w4a8-gemm-amx` (AMX-INT8) → `w4a8-gemm-avx512vnni` → `w4a8-gemm-avxvnni`
//!   → `w4a8-gemm-avx2` → `w4a8-scalar`.
//! - W4A8 decode: `w4a8-gemv-avx512vnni` → `w4a8-gemv-avxvnni` → `w4a8-gemv-avx2` → scalar.
//! - W4A16 prefill: `w4a16-gemm-amx` (AMX-BF16) → `w4a16-gemv-avx512` → `w4a16-gemv-avx2` →
//!   `w4a16-scalar`; decode: `w4a16-gemv-avx512` → `w4a16-gemv-avx512bf16` → avx2 → scalar.
//! - bf16 prefill: `bf16-gemm-amx` → `bf16-gemv-avx512` → `bf16-gemv-avx2` → `bf16-scalar`;
//!   decode: `bf16-gemv-avx512` → `bf16-gemv-avx2` → scalar.
//!
//! Feature detection uses `is_x86_feature_detected!` except for AMX, which std only exposes
//! unstably: CPUID.(7,0):EDX bits 24/25/22, OSXSAVE, XCR0 bits 17/18, then the Linux
//! `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)` permission (kernels.md §6.2–6.3),
//! requested once and cached. XGETBV and the `arch_prctl` calls are the crate's shared
//! primitives in [`crate::arch`] (the probe uses the same ones).

use std::sync::OnceLock;

use super::cpu::Feature;
use super::registry::Variant;

pub(crate) mod amx;
pub(crate) mod bf16;
mod dpbf16;
mod lanes;
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
    &w4a8::avx2::W4A8_AVX2,
    &w4a16::GEMM_AMX,
    &w4a16::GEMM_AVX512BF16,
    &w4a16::GEMV_AVX512,
    &w4a16::GEMV_AVX512BF16,
    &w4a16::GEMV_AVX2,
    &bf16::GEMM_AMX,
    &bf16::GEMM_AVX512BF16,
    &bf16::GEMV_AVX512,
    &bf16::GEMV_AVX2,
];

/// Why `f` is unusable here, or `None`.
pub fn missing(f: Feature) -> Option<&'static str> {
    let ok = match f {
        Feature::Avx2 => is_x86_feature_detected!("avx2"),
        Feature::Fma => is_x86_feature_detected!("fma"),
        Feature::Avx512f => is_x86_feature_detected!("avx512f"),
        Feature::Avx512bw => is_x86_feature_detected!("avx512bw"),
        Feature::Avx512vl => is_x86_feature_detected!("avx512vl"),
        Feature::Avx512vnni => is_x86_feature_detected!("avx512vnni"),
        Feature::Avx512bf16 => is_x86_feature_detected!("avx512bf16"),
        Feature::Avx512vbmi => is_x86_feature_detected!("avx512vbmi"),
        Feature::AvxVnni => is_x86_feature_detected!("avxvnni"),
        Feature::AmxTile | Feature::AmxInt8 | Feature::AmxBf16 => {
            let amx = amx_cpu();
            let cpu_ok = match f {
                Feature::AmxInt8 => amx.tile && amx.int8,
                Feature::AmxBf16 => amx.tile && amx.bf16,
                _ => amx.tile,
            };
            if !cpu_ok {
                return Some(f.name());
            }
            return amx_permission().err();
        }
        Feature::Neon | Feature::Dotprod | Feature::I8mm | Feature::Bf16 => false,
    };
    if ok { None } else { Some(f.name()) }
}

#[derive(Clone, Copy, Debug, Default)]
struct AmxCpu {
    tile: bool,
    int8: bool,
    bf16: bool,
    /// OSXSAVE and XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA).
    os: bool,
}

fn amx_cpu() -> AmxCpu {
    static AMX: OnceLock<AmxCpu> = OnceLock::new();
    *AMX.get_or_init(|| {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        // CPUID is safe on x86-64; leaf 7 is only read when leaf 0 reports it.
        let max_leaf = __cpuid(0).eax;
        if max_leaf < 7 {
            return AmxCpu::default();
        }
        let l7 = __cpuid_count(7, 0);
        let os = crate::arch::xcr0()
            .is_some_and(|xcr0| xcr0 & crate::arch::AMX_STATE_BITS == crate::arch::AMX_STATE_BITS);
        AmxCpu {
            tile: l7.edx & (1 << 24) != 0,
            int8: l7.edx & (1 << 25) != 0,
            bf16: l7.edx & (1 << 22) != 0,
            os,
        }
    })
}

/// Request the AMX tile-data permission once per process (cached).
pub fn amx_permission() -> Result<(), &'static str> {
    static PERM: OnceLock<Result<(), &'static str>> = OnceLock::new();
    *PERM.get_or_init(|| {
        let amx = amx_cpu();
        if !amx.tile {
            return Err("amx-tile");
        }
        if !amx.os {
            return Err("amx (the OS has not enabled XTILECFG/XTILEDATA in XCR0)");
        }
        request_xtiledata()
    })
}

/// The shared `arch_prctl` request ([`crate::arch::request_amx_permission`]).
#[cfg(target_os = "linux")]
fn request_xtiledata() -> Result<(), &'static str> {
    if crate::arch::request_amx_permission() {
        Ok(())
    } else {
        Err("amx (arch_prctl XTILEDATA permission refused; Linux >= 5.16 needed)")
    }
}

#[cfg(not(target_os = "linux"))]
fn request_xtiledata() -> Result<(), &'static str> {
    Err("amx (tile permission request only implemented for Linux)")
}
