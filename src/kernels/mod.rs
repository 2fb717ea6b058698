//! Bundled int4 GEMM kernels for `edgeplan bench`: W4A8 (int4 weights × int8 activations),
//! W4A16 and bf16, with scalar references, a persistent thread pool and a registry of
//! variants selected at run time.
//!
//! Data flow: f32 weights → [`weights::quantize`] → [`pack::PackedW4`] (P64·G128 records);
//! bf16 activations → [`acts::QuantActs`] (int8 per token and 128-group, plus Σq). A kernel
//! variant from [`registry`] computes `out[M][N]` (f32, row-major) on a [`pool::ThreadPool`].
//! Every variant is checked against [`reference`] (the oracle) through [`verify`] in
//! `tests/`, by the bench's gate and by the timing harnesses.
//!
//! Dispatch order (per path; `x86/mod.rs` and `aarch64/mod.rs` have the chains): AMX → AVX-512
//! VNNI → AVX-VNNI → AVX2 → scalar on x86-64; i8mm/bf16 → dotprod → NEON → scalar on aarch64;
//! scalar elsewhere. `EDGEPLAN_KERNEL=<name>`
//! forces a variant for its path; `registry::by_name(..)?.ready()?` forces one in code.
//!
//! Safety contract: ISA code sits in `#[target_feature]` functions reached only through a
//! [`registry::Ready`], which proves the CPU (and OS, and AMX permission) support the
//! variant; the safe `Ready` methods validate shapes first. `cfg(target_arch)` appears only in
//! this file and the per-arch `mod.rs` files.

pub mod acts;
pub mod bf16;
pub mod bf16_act;
pub mod buf;
pub mod cpu;
pub mod error;
pub mod fidelity;
pub mod pack;
pub mod panel_split;
pub mod pool;
pub mod reference;
pub mod registry;
pub mod scalar;
mod scalar_float;
pub mod timing;
pub mod verify;
pub mod weights;

#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
use x86 as arch;
/// The shared AMX tile configuration and its `ldtilecfg`/`tilerelease` helpers (also used by
/// the bench's AMX peak loops).
#[cfg(target_arch = "x86_64")]
pub use x86::tile as amx_tile;

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "aarch64")]
use aarch64 as arch;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    //! Targets without SIMD kernels: scalar only.
    use super::cpu::Feature;
    use super::registry::Variant;
    pub static VARIANTS: &[&Variant] = &[];
    pub fn missing(f: Feature) -> Option<&'static str> {
        Some(f.name())
    }
    pub fn amx_permission() -> Result<(), &'static str> {
        Err("amx (not an x86-64 CPU)")
    }
}

/// Wrapping sum of `words` with the widest loads this host has (32-byte AVX2 loads and four
/// accumulators on x86-64, as the GEMV kernels read weights; a plain fold elsewhere). The
/// read-bandwidth probes use it.
pub fn wide_sum(words: &[u64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(s) = x86::stream::sum_avx2(words) {
        return s;
    }
    words.iter().fold(0u64, |a, &w| a.wrapping_add(w))
}

#[cfg(test)]
mod tests;

pub use acts::{Bf16Rows, QuantActs};
pub use bf16::Bf16;
pub use buf::AlignedBuf;
pub use error::KernelError;
pub use pack::{PackedBf16, PackedW4};
pub use pool::ThreadPool;
pub use registry::{KernelPath, Phase, Ready, Variant};
pub use weights::{QuantWeights, Scheme};

/// Portable variants, compiled on every target (after the arch list in the registry).
static PORTABLE: &[&Variant] = &[
    &scalar::W4A8_SCALAR,
    &scalar_float::W4A16_SCALAR,
    &scalar_float::BF16_SCALAR,
];

/// W4A8 with the default variant for M (or `EDGEPLAN_KERNEL`): `out[M][N]` overwritten.
pub fn gemm_w4a8(
    pool: &ThreadPool,
    w: &PackedW4,
    a: &QuantActs,
    out: &mut [f32],
) -> Result<(), KernelError> {
    registry::select(KernelPath::W4A8, a.m())?.w4a8(pool, w, a, out)
}

/// W4A16 with the default variant for M (or `EDGEPLAN_KERNEL`): `out[M][N]` overwritten.
pub fn gemm_w4a16(
    pool: &ThreadPool,
    w: &PackedW4,
    x: Bf16Rows<'_>,
    out: &mut [f32],
) -> Result<(), KernelError> {
    registry::select(KernelPath::W4A16, x.m)?.w4a16(pool, w, x, out)
}

/// bf16 with the default variant for M (or `EDGEPLAN_KERNEL`): `out[M][N]` overwritten.
pub fn gemm_bf16(
    pool: &ThreadPool,
    w: &PackedBf16,
    x: Bf16Rows<'_>,
    out: &mut [f32],
) -> Result<(), KernelError> {
    registry::select(KernelPath::Bf16, x.m)?.bf16(pool, w, x, out)
}
