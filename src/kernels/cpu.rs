//! CPU features the kernel variants require, detected at run time (CPU, OS and, for AMX,
//! the Linux permission). The per-architecture probing lives in `x86/mod.rs` and
//! `aarch64/mod.rs`; this file is the architecture-neutral vocabulary.

/// A feature a kernel variant may require.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// x86 AVX2.
    Avx2,
    /// x86 FMA3.
    Fma,
    /// AVX-512 Foundation.
    Avx512f,
    /// AVX-512 byte/word.
    Avx512bw,
    /// AVX-512 vector length extensions.
    Avx512vl,
    /// AVX-512 VNNI (`vpdpbusd` on zmm).
    Avx512vnni,
    /// AVX-512 BF16 (`vdpbf16ps`, `vcvtne2ps2bf16`).
    Avx512bf16,
    /// AVX-512 VBMI (`vpermb`).
    Avx512vbmi,
    /// AVX-VNNI (VEX `vpdpbusd` on ymm).
    AvxVnni,
    /// AMX tiles: CPU, OS (XCR0 bits 17/18) and the process permission.
    AmxTile,
    /// AMX-INT8 (plus everything `AmxTile` needs).
    AmxInt8,
    /// AMX-BF16 (plus everything `AmxTile` needs).
    AmxBf16,
    /// aarch64 Advanced SIMD.
    Neon,
    /// aarch64 `sdot`/`udot`.
    Dotprod,
    /// aarch64 `smmla`.
    I8mm,
    /// aarch64 FEAT_BF16 (`bfdot`, `bfmmla`).
    Bf16,
}

impl Feature {
    /// The name used in messages and `--list-kernels` (Rust's target-feature spelling).
    pub fn name(self) -> &'static str {
        match self {
            Feature::Avx2 => "avx2",
            Feature::Fma => "fma",
            Feature::Avx512f => "avx512f",
            Feature::Avx512bw => "avx512bw",
            Feature::Avx512vl => "avx512vl",
            Feature::Avx512vnni => "avx512vnni",
            Feature::Avx512bf16 => "avx512bf16",
            Feature::Avx512vbmi => "avx512vbmi",
            Feature::AvxVnni => "avxvnni",
            Feature::AmxTile => "amx-tile",
            Feature::AmxInt8 => "amx-int8",
            Feature::AmxBf16 => "amx-bf16",
            Feature::Neon => "neon",
            Feature::Dotprod => "dotprod",
            Feature::I8mm => "i8mm",
            Feature::Bf16 => "bf16",
        }
    }
}

/// Why `f` is unusable on this host (`None` when it is usable). AMX reasons distinguish the
/// CPU, the OS (XCR0) and the `arch_prctl` permission.
pub fn missing(f: Feature) -> Option<&'static str> {
    super::arch::missing(f)
}

/// True when `f` is usable on this host.
pub fn has(f: Feature) -> bool {
    missing(f).is_none()
}

/// Request (once per process) the AMX tile-data permission. `Ok` when AMX is usable now;
/// `Err` names why not (no AMX CPU, OS without XTILEDATA, permission refused, not x86).
pub fn amx_permission() -> Result<(), &'static str> {
    super::arch::amx_permission()
}
