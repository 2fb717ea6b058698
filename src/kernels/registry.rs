//! The registry of kernel variants: every W4A8 / W4A16 / bf16 kernel the crate ships, with
//! its name, path, the phases it serves, the CPU features it needs and a preference rank.
//!
//! - List: [`all`] (what `bench --list-kernels` prints, with [`Variant::missing`]).
//! - Force by name: [`by_name`] then [`Variant::ready`] (an error names missing features), or
//!   the `EDGEPLAN_KERNEL` environment variable, which [`select`] honours for its path.
//! - Default: [`select`]`(path, m)` picks the available variant of highest rank serving the
//!   phase of M ([`Phase::for_m`]: decode for M ≤ 4, prefill above).
//!
//! Holding a [`Ready`] proves the host can run the variant (memchr's `Option`-constructor
//! idea), so its call methods are safe; they validate shapes before entering the kernel.
//!
//! Adding a variant: write `pub static MY_VARIANT: Variant = Variant { .. }` next to the
//! kernel (an `unsafe fn` with the path's signature, see [`W4A8Fn`] etc.), and add
//! `&file::MY_VARIANT` to the arch list in `x86/mod.rs` (or `aarch64/mod.rs`, or
//! `PORTABLE` in `kernels/mod.rs` for scalar code).

use std::sync::OnceLock;

use super::acts::{Bf16Rows, QuantActs};
use super::cpu::{self, Feature};
use super::error::KernelError;
use super::pack::{PackedBf16, PackedW4};
use super::pool::ThreadPool;

/// Which weight/activation format a kernel computes: the crate's one path vocabulary
/// (bench's `results[].path`, `--paths`, the catalog's `bench_path`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum KernelPath {
    /// int4 weights × int8 activations.
    W4A8,
    /// int4 weights × bf16 activations.
    W4A16,
    /// bf16 weights × bf16 activations.
    Bf16,
}

impl KernelPath {
    /// Every path, in report order.
    pub const ALL: [KernelPath; 3] = [KernelPath::W4A8, KernelPath::W4A16, KernelPath::Bf16];

    /// The path named `text` (`w4a8`, `w4a16`, `bf16`; any case, trimmed).
    pub fn parse(text: &str) -> Option<KernelPath> {
        KernelPath::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text.trim()))
    }

    /// Whether weights packed for `self` serve `other` too (W4A8 and W4A16 share P64·G128).
    pub fn shares_layout(self, other: KernelPath) -> bool {
        self == other || (self != KernelPath::Bf16 && other != KernelPath::Bf16)
    }

    /// Bits each weight occupies in memory, scales and zeros included (kernels.md §1).
    pub fn bits_per_weight(self) -> f64 {
        match self {
            KernelPath::W4A8 | KernelPath::W4A16 => 4.25,
            KernelPath::Bf16 => 16.0,
        }
    }

    /// `"w4a8"`, `"w4a16"`, `"bf16"`.
    pub fn name(self) -> &'static str {
        match self {
            KernelPath::W4A8 => "w4a8",
            KernelPath::W4A16 => "w4a16",
            KernelPath::Bf16 => "bf16",
        }
    }
}

impl std::fmt::Display for KernelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Decode (few rows per weight load) or prefill (many rows).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// M ≤ [`DECODE_MAX_M`].
    Decode,
    /// M > [`DECODE_MAX_M`].
    Prefill,
}

/// Largest M treated as decode by the default selection.
pub const DECODE_MAX_M: usize = 4;

impl Phase {
    /// The phase the default selection uses for M rows.
    pub fn for_m(m: usize) -> Phase {
        if m <= DECODE_MAX_M {
            Phase::Decode
        } else {
            Phase::Prefill
        }
    }
    /// `"decode"` or `"prefill"`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Decode => "decode",
            Phase::Prefill => "prefill",
        }
    }
}

/// W4A8 kernel: `out[M][N] = W4A8(w, a)`; overwrites all of `out`.
///
/// # Safety
/// The host supports the variant's features; shapes agree (`w.k() == a.k()`,
/// `out.len() == a.m() * w.n()`), which [`Ready::w4a8`] checks.
pub type W4A8Fn = unsafe fn(&ThreadPool, &PackedW4, &QuantActs, &mut [f32]);
/// W4A16 kernel: `out[M][N]`; overwrites all of `out`.
///
/// # Safety
/// As [`W4A8Fn`], with `x.k == w.k()` and `out.len() == x.m * w.n()`.
pub type W4A16Fn = unsafe fn(&ThreadPool, &PackedW4, Bf16Rows<'_>, &mut [f32]);
/// bf16 kernel: `out[M][N]`; overwrites all of `out`.
///
/// # Safety
/// As [`W4A8Fn`], with `x.k == w.k()` and `out.len() == x.m * w.n()`.
pub type Bf16Fn = unsafe fn(&ThreadPool, &PackedBf16, Bf16Rows<'_>, &mut [f32]);

/// The entry point of a variant, by path.
#[derive(Clone, Copy, Debug)]
pub enum KernelFn {
    /// A W4A8 kernel.
    W4A8(W4A8Fn),
    /// A W4A16 kernel.
    W4A16(W4A16Fn),
    /// A bf16 kernel.
    Bf16(Bf16Fn),
}

/// The compute unit a kernel leans on, which names its roofline (`peaks.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    AmxInt8,
    AmxBf16,
    Avx512Vnni,
    AvxVnni,
    Avx2Int8,
    /// AVX-512-BF16 `vdpbf16ps` (two bf16 products per f32 lane).
    Avx512Bf16,
    Avx512Fma,
    Avx2Fma,
    /// arm64 Advanced SIMD (FEAT_I8MM) `smmla`: 2x8 by 8x2 s8 into 2x2 int32, 32 MACs.
    NeonI8mm,
    /// arm64 Advanced SIMD (FEAT_DotProd) `sdot`: four 4-way s8 dot products, 16 MACs.
    NeonDotprod,
    /// arm64 ARMv8.0 Advanced SIMD int8: `smlal`/`smlal2` s8 x s8 into int16, 8 MACs each
    /// (`w4a8-neon` adds one `sadalp` to int32 per 16 of them).
    NeonInt8,
    /// arm64 Advanced SIMD (FEAT_BF16) `bfmmla`: 2x4 by 4x2 bf16 into 2x2 f32, 16 MACs.
    NeonBfmmla,
    /// arm64 Advanced SIMD (FEAT_BF16) `bfdot`: four bf16 pairs into f32 lanes, 8 MACs.
    NeonBfdot,
    /// arm64 ARMv8.0 Advanced SIMD f32 `fmla` (.4s), 4 MACs.
    NeonFma,
    Scalar,
}

impl Unit {
    /// True for the integer (int8 multiply) units, the rooflines of W4A8.
    pub fn is_int8(self) -> bool {
        matches!(
            self,
            Unit::AmxInt8
                | Unit::Avx512Vnni
                | Unit::AvxVnni
                | Unit::Avx2Int8
                | Unit::NeonI8mm
                | Unit::NeonDotprod
                | Unit::NeonInt8
        )
    }

    /// The name in reports and JSON (`avx512-vnni`, `neon-dotprod`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::AmxInt8 => "amx-int8",
            Unit::AmxBf16 => "amx-bf16",
            Unit::Avx512Vnni => "avx512-vnni",
            Unit::AvxVnni => "avx-vnni",
            Unit::Avx2Int8 => "avx2-int8",
            Unit::Avx512Bf16 => "avx512-bf16",
            Unit::Avx512Fma => "avx512-fma",
            Unit::Avx2Fma => "avx2-fma",
            Unit::NeonI8mm => "neon-i8mm",
            Unit::NeonDotprod => "neon-dotprod",
            Unit::NeonInt8 => "neon-int8",
            Unit::NeonBfmmla => "neon-bfmmla",
            Unit::NeonBfdot => "neon-bfdot",
            Unit::NeonFma => "neon-fma",
            Unit::Scalar => "scalar",
        }
    }
}

/// One kernel variant.
#[derive(Debug)]
pub struct Variant {
    /// Unique name, `<path>-<kind>-<isa>` (e.g. `w4a8-gemv-avx512vnni`).
    pub name: &'static str,
    /// ISA label for reports (`avx512vnni`, `amx`, `avx2`, `scalar`, ...).
    pub isa: &'static str,
    /// The compute unit its inner loop leans on: names its roofline in `bench`.
    pub unit: Unit,
    /// Phases it is meant for (it computes any M correctly regardless).
    pub phases: &'static [Phase],
    /// Features it needs.
    pub requires: &'static [Feature],
    /// Preference among available variants of the same path and phase; higher wins.
    pub rank: u32,
    /// Entry point.
    pub kernel: KernelFn,
}

impl Variant {
    /// The path this variant computes.
    pub fn path(&self) -> KernelPath {
        match self.kernel {
            KernelFn::W4A8(_) => KernelPath::W4A8,
            KernelFn::W4A16(_) => KernelPath::W4A16,
            KernelFn::Bf16(_) => KernelPath::Bf16,
        }
    }

    /// Why this host cannot run it (empty when it can).
    pub fn missing(&self) -> Vec<&'static str> {
        self.requires
            .iter()
            .filter_map(|&f| cpu::missing(f))
            .collect()
    }

    /// True when this host can run it.
    pub fn is_available(&self) -> bool {
        self.requires.iter().all(|&f| cpu::has(f))
    }

    /// True when it is meant for `phase`.
    pub fn serves(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }

    /// Proof of availability, or an error naming what is missing.
    pub fn ready(&'static self) -> Result<Ready, KernelError> {
        let missing = self.missing();
        if missing.is_empty() {
            Ok(Ready { v: self })
        } else {
            Err(KernelError::Unavailable {
                name: self.name.to_string(),
                missing,
            })
        }
    }
}

/// A variant this host can run (see [`Variant::ready`]).
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    v: &'static Variant,
}

impl Ready {
    /// The variant.
    pub fn variant(&self) -> &'static Variant {
        self.v
    }

    /// Name of the variant.
    pub fn name(&self) -> &'static str {
        self.v.name
    }

    /// Run a W4A8 variant: `out[M][N]` (row-major, overwritten).
    pub fn w4a8(
        &self,
        pool: &ThreadPool,
        w: &PackedW4,
        a: &QuantActs,
        out: &mut [f32],
    ) -> Result<(), KernelError> {
        let KernelFn::W4A8(f) = self.v.kernel else {
            return Err(KernelError::WrongPath {
                name: self.v.name.into(),
                want: "w4a8",
            });
        };
        check_out(w.n(), w.k(), a.m(), a.k(), out.len())?;
        // SAFETY: `Ready` proves the features; shapes checked just above.
        unsafe { f(pool, w, a, out) };
        Ok(())
    }

    /// Run a W4A16 variant: `out[M][N]` (row-major, overwritten).
    pub fn w4a16(
        &self,
        pool: &ThreadPool,
        w: &PackedW4,
        x: Bf16Rows<'_>,
        out: &mut [f32],
    ) -> Result<(), KernelError> {
        let KernelFn::W4A16(f) = self.v.kernel else {
            return Err(KernelError::WrongPath {
                name: self.v.name.into(),
                want: "w4a16",
            });
        };
        check_out(w.n(), w.k(), x.m, x.k, out.len())?;
        // SAFETY: `Ready` proves the features; shapes checked just above.
        unsafe { f(pool, w, x, out) };
        Ok(())
    }

    /// Run a bf16 variant: `out[M][N]` (row-major, overwritten).
    pub fn bf16(
        &self,
        pool: &ThreadPool,
        w: &PackedBf16,
        x: Bf16Rows<'_>,
        out: &mut [f32],
    ) -> Result<(), KernelError> {
        let KernelFn::Bf16(f) = self.v.kernel else {
            return Err(KernelError::WrongPath {
                name: self.v.name.into(),
                want: "bf16",
            });
        };
        check_out(w.n(), w.k(), x.m, x.k, out.len())?;
        // SAFETY: `Ready` proves the features; shapes checked just above.
        unsafe { f(pool, w, x, out) };
        Ok(())
    }
}

fn check_out(n: usize, wk: usize, m: usize, ak: usize, out_len: usize) -> Result<(), KernelError> {
    if wk != ak {
        return Err(KernelError::Shape(format!(
            "weights have K = {wk}, activations K = {ak}"
        )));
    }
    if out_len != m * n {
        return Err(KernelError::Shape(format!(
            "output holds {out_len} values, {m}x{n} needs {}",
            m * n
        )));
    }
    Ok(())
}

/// Every variant compiled for this target, available or not, in registry order.
pub fn all() -> &'static [&'static Variant] {
    static ALL: OnceLock<Vec<&'static Variant>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v: Vec<&'static Variant> = super::arch::VARIANTS.to_vec();
        v.extend_from_slice(super::PORTABLE);
        v
    })
}

/// Variants of `path`, available or not.
pub fn for_path(path: KernelPath) -> impl Iterator<Item = &'static Variant> {
    all().iter().copied().filter(move |v| v.path() == path)
}

/// The variant called `name`.
pub fn by_name(name: &str) -> Result<&'static Variant, KernelError> {
    all()
        .iter()
        .copied()
        .find(|v| v.name == name)
        .ok_or_else(|| KernelError::UnknownKernel(name.to_string()))
}

/// The best available variant of `path` for `phase` (highest rank), ignoring the override.
pub fn best(path: KernelPath, phase: Phase) -> Option<Ready> {
    for_path(path)
        .filter(|v| v.serves(phase) && v.is_available())
        .max_by_key(|v| v.rank)
        .map(|v| Ready { v })
}

/// The `EDGEPLAN_KERNEL` override, read once.
pub fn env_override() -> Option<&'static str> {
    static ENV: OnceLock<Option<String>> = OnceLock::new();
    ENV.get_or_init(|| {
        std::env::var("EDGEPLAN_KERNEL")
            .ok()
            .filter(|s| !s.is_empty())
    })
    .as_deref()
}

/// Default choice for `path` and `m` rows: the `EDGEPLAN_KERNEL` variant when it names one of
/// this path (an error if unknown or unavailable), else [`best`] for [`Phase::for_m`]. A scalar
/// variant serves every path and phase, so this fails only through the override.
pub fn select(path: KernelPath, m: usize) -> Result<Ready, KernelError> {
    select_with(path, m, env_override())
}

/// [`select`] with an explicit override name instead of `EDGEPLAN_KERNEL`.
pub fn select_with(path: KernelPath, m: usize, forced: Option<&str>) -> Result<Ready, KernelError> {
    if let Some(name) = forced {
        let v = by_name(name)?;
        if v.path() == path {
            return v.ready();
        }
    }
    best(path, Phase::for_m(m))
        .or_else(|| best(path, Phase::Decode))
        .or_else(|| best(path, Phase::Prefill))
        .ok_or_else(|| KernelError::UnknownKernel(format!("<any {} kernel>", path.name())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_requires_what_its_unit_runs_on() {
        for v in all() {
            let needs = |f: Feature| v.requires.contains(&f);
            let ok = match v.unit {
                Unit::AmxInt8 => needs(Feature::AmxInt8),
                Unit::AmxBf16 => needs(Feature::AmxBf16),
                Unit::Avx512Vnni => needs(Feature::Avx512vnni),
                Unit::AvxVnni => needs(Feature::AvxVnni),
                Unit::Avx2Int8 => needs(Feature::Avx2),
                Unit::Avx512Bf16 => needs(Feature::Avx512bf16),
                Unit::Avx512Fma => needs(Feature::Avx512f),
                Unit::Avx2Fma => needs(Feature::Avx2) && needs(Feature::Fma),
                Unit::NeonI8mm => needs(Feature::Neon) && needs(Feature::I8mm),
                Unit::NeonDotprod => needs(Feature::Neon) && needs(Feature::Dotprod),
                Unit::NeonInt8 | Unit::NeonFma => needs(Feature::Neon),
                Unit::NeonBfmmla | Unit::NeonBfdot => needs(Feature::Neon) && needs(Feature::Bf16),
                Unit::Scalar => v.requires.is_empty(),
            };
            assert!(
                ok,
                "{}: unit {} but requires {:?}",
                v.name,
                v.unit.as_str(),
                v.requires
            );
            assert_eq!(
                v.unit.is_int8(),
                v.path() == KernelPath::W4A8 && v.unit != Unit::Scalar,
                "{}: int8 units serve exactly the vector W4A8 kernels",
                v.name
            );
        }
    }

    /// Every unit, x86 then arm64 then scalar.
    const UNITS: [Unit; 15] = [
        Unit::AmxInt8,
        Unit::AmxBf16,
        Unit::Avx512Vnni,
        Unit::AvxVnni,
        Unit::Avx2Int8,
        Unit::Avx512Bf16,
        Unit::Avx512Fma,
        Unit::Avx2Fma,
        Unit::NeonI8mm,
        Unit::NeonDotprod,
        Unit::NeonInt8,
        Unit::NeonBfmmla,
        Unit::NeonBfdot,
        Unit::NeonFma,
        Unit::Scalar,
    ];

    #[test]
    fn unit_names_are_the_json_names() {
        for u in UNITS {
            let json = serde_json::to_string(&u).unwrap();
            assert_eq!(json, format!("\"{}\"", u.as_str()), "{u:?}");
        }
        let mut names: Vec<&str> = UNITS.iter().map(|u| u.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), UNITS.len(), "unit names must be unique");
    }
}
