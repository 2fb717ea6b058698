//! The weight-path catalog: what each path the rules can choose *is*.
//!
//! The data lives in `catalog.toml`, embedded in the binary with `include_str!`;
//! `--catalog FILE` replaces it. The rules in `rules.rs` name paths through [`PathId`]
//! and never carry facts or prose themselves. Loading checks everything the rules rely
//! on (every [`PathId`] present, names unique, numbers sane), so a [`Catalog`] that
//! exists is complete: looking up a rule's path cannot fail. Errors name the file and the
//! line (from toml's spans) and give exit 65.
//! Not in here: which path a device gets (`rules.rs`) and how a plan is shown (`render.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::error::data_error;
use crate::profile::HardwareClass;

/// The catalog that ships inside the binary.
const BUILTIN: &str = include_str!("catalog.toml");

/// Catalog files bigger than this are refused (a catalog is a few KiB).
const MAX_CATALOG_BYTES: u64 = 4 << 20;

pub use crate::contract::Engine;

/// The paths the rules can choose. A catalog defines every vLLM path but the optional
/// ones ([`PathId::optional`]); the llama.cpp paths are needed only to plan for
/// llama.cpp ([`Catalog::require`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathId {
    ExportQnnW8a16,
    Bf16,
    Fp16,
    W4a16,
    W4a8Amx,
    /// 4-bit GPTQ on an NVIDIA GPU, bf16 activations (compute capability 8.0 and up).
    W4a16GpuBf16,
    /// 4-bit GPTQ on an NVIDIA GPU, fp16 activations (compute capability 7.5).
    W4a16GpuFp16,
    GgufQ4_0,
    GgufQ4KM,
    GgufBf16,
    GgufF16,
}

impl PathId {
    pub const ALL: [PathId; 11] = [
        PathId::ExportQnnW8a16,
        PathId::Bf16,
        PathId::Fp16,
        PathId::W4a16,
        PathId::W4a8Amx,
        PathId::W4a16GpuBf16,
        PathId::W4a16GpuFp16,
        PathId::GgufQ4_0,
        PathId::GgufQ4KM,
        PathId::GgufBf16,
        PathId::GgufF16,
    ];

    /// The name the catalog, `--expect` and the plan JSON use.
    pub fn name(self) -> &'static str {
        match self {
            PathId::ExportQnnW8a16 => "export-qnn-w8a16",
            PathId::Bf16 => "bf16",
            PathId::Fp16 => "fp16",
            PathId::W4a16 => "w4a16",
            PathId::W4a8Amx => "w4a8-amx",
            PathId::W4a16GpuBf16 => "w4a16-gpu-bf16",
            PathId::W4a16GpuFp16 => "w4a16-gpu-fp16",
            PathId::GgufQ4_0 => "gguf-q4_0",
            PathId::GgufQ4KM => "gguf-q4_k_m",
            PathId::GgufBf16 => "gguf-bf16",
            PathId::GgufF16 => "gguf-f16",
        }
    }

    /// The engine whose rules name this path.
    pub fn engine(self) -> Engine {
        match self {
            PathId::GgufQ4_0 | PathId::GgufQ4KM | PathId::GgufBf16 | PathId::GgufF16 => {
                Engine::LlamaCpp
            }
            _ => Engine::Vllm,
        }
    }

    /// Paths a catalog may leave out: the rules name them only when the catalog has
    /// them (the GPU 4-bit paths are only a memory fallback; without them a GPU plan
    /// keeps its 16-bit weights and a fit that does not fit says so).
    pub fn optional(self) -> bool {
        matches!(self, PathId::W4a16GpuBf16 | PathId::W4a16GpuFp16)
    }

    /// The paths `engine`'s rules name.
    pub fn for_engine(engine: Engine) -> impl Iterator<Item = PathId> {
        PathId::ALL
            .into_iter()
            .filter(move |id| id.engine() == engine)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a path stores the output head (`lm_head`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LmHead {
    /// Stored at the path's bits per weight, untied from the embedding.
    Quantized,
    /// Kept at the model's 16-bit dtype (tied to the embedding if the model ties it).
    ModelDtype,
}

/// The kernel family a path expects the engine to run: what its weights and
/// activations are, whatever the engine calls it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum KernelFamily {
    /// int4 weights, int8 activations (quantized inside the kernel).
    W4a8,
    /// int4 weights, 16-bit activations.
    W4a16,
    /// 16-bit weights and activations.
    Dense,
    /// An exported graph for a phone NPU: no engine serves it.
    NpuExport,
}

impl KernelFamily {
    /// Stored bits of a quantized weight (16 for dense paths).
    pub fn weight_bits(self) -> u32 {
        match self {
            KernelFamily::W4a8 | KernelFamily::W4a16 => 4,
            KernelFamily::Dense => 16,
            KernelFamily::NpuExport => 8,
        }
    }
}

/// An element type, as engines spell it in full (`bfloat16`, not `bf16`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    Bfloat16,
    Float16,
    Int8,
    Int16,
}

impl DType {
    pub fn as_str(self) -> &'static str {
        match self {
            DType::Bfloat16 => "bfloat16",
            DType::Float16 => "float16",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
        }
    }
}

/// One weight path, as the catalog defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct PathSpec {
    pub name: String,
    /// Earlier names of the path, still accepted by `--expect` and `check`.
    pub aliases: Vec<String>,
    pub kernel: KernelFamily,
    pub activations: DType,
    /// The 16-bit dtype of the unquantized tensors and of the compute.
    pub dtype: DType,
    /// The checkpoint's quantization format (`quant_method`), `None` for 16-bit weights.
    pub quantization: Option<String>,
    /// For a quantized checkpoint: a symmetric grid (no zero points).
    pub symmetric: Option<bool>,
    pub group_size: Option<u32>,
    pub bits_per_weight: Option<f64>,
    pub lm_head: LmHead,
    pub fused_cpu_norms: bool,
    pub runs_in_vllm: bool,
    /// The engine the path is built for (`vllm` unless the catalog says otherwise).
    pub engine: Engine,
    /// For a llama.cpp path: the file type `llama-quantize` is given (`Q4_0`,
    /// `Q4_K_M`) or the converter's `--outtype` for a 16-bit file (`BF16`, `F16`).
    pub gguf_type: Option<String>,
    pub verified_on: Vec<HardwareClass>,
    pub build_with: Option<String>,
    /// The `edgeplan bench` path that measures this path (`w4a8` for `w4a8-amx`), if any.
    pub bench_path: Option<String>,
    pub rationale: String,
    pub notes: Vec<Note>,
    pub by_class: BTreeMap<HardwareClass, ClassText>,
}

/// Per-class text: a rationale that replaces the path's, and notes shown only to plans
/// for that class (first, with the notes measured on it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassText {
    pub rationale: Option<String>,
    pub notes: Vec<Note>,
}

/// One note of a path: its text and where its figures were measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub text: String,
    /// `None` for a plain-string note, which does not say (catalogs written before
    /// notes carried their hardware).
    pub measured_on: Option<NoteScope>,
    /// The machine the figures came from (`Intel Xeon Platinum 8480C, 24 threads`).
    pub hardware: Option<String>,
}

/// Where a note holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteScope {
    /// Measured on hardware of this class.
    Class(HardwareClass),
    /// Holds on any hardware: a fact about the format or the engine's source, or a
    /// figure that does not depend on the device (a file size, a perplexity).
    Any,
}

impl NoteScope {
    /// The catalog's and the plan's spelling: a class name or `any`.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteScope::Class(class) => class.as_str(),
            NoteScope::Any => "any",
        }
    }
}

impl PathSpec {
    /// Whether this path was measured on hardware of `class`.
    pub fn verified_for(&self, class: HardwareClass) -> bool {
        self.verified_on.contains(&class)
    }

    /// The rationale for `class` (a per-class one when the catalog has it).
    pub fn rationale_for(&self, class: HardwareClass) -> &str {
        self.by_class
            .get(&class)
            .and_then(|t| t.rationale.as_deref())
            .unwrap_or(&self.rationale)
    }

    /// The notes `class` gets from the catalog: the path's own, then any for `class`
    /// alone (the plan orders and labels them: `notes.rs`).
    pub fn class_notes(&self, class: HardwareClass) -> &[Note] {
        self.by_class
            .get(&class)
            .map_or(&[][..], |t| t.notes.as_slice())
    }
}

/// A loaded, checked catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    /// Where it came from: `built-in` or the file path.
    pub origin: String,
    paths: Vec<PathSpec>,
    /// `required[id.index()]` is the position in `paths` of the path `id` names
    /// (always present for vLLM's paths; llama.cpp's are checked by [`Catalog::require`]).
    required: [Option<usize>; PathId::ALL.len()],
}

impl Catalog {
    /// The catalog embedded in the binary.
    pub fn builtin() -> Catalog {
        match Catalog::parse(BUILTIN, "built-in catalog") {
            Ok(catalog) => catalog,
            // The embedded file is checked by a unit test; reaching this is a build bug.
            Err(err) => panic!("the built-in catalog does not load: {err:#}"),
        }
    }

    /// Reads a catalog file (`--catalog FILE`): 66 when missing, 65 when bad.
    pub fn from_file(path: &Path) -> anyhow::Result<Catalog> {
        let shown = path.display().to_string();
        // Capped as it is read, not by its stated size: `/dev/zero` or a pipe
        // (`<(yes)`) says 0 bytes and never ends.
        let text = crate::error::read_text_capped(
            path,
            "catalog",
            MAX_CATALOG_BYTES,
            crate::fsx::Source::Named,
        )?;
        Catalog::parse(&text, &shown)
    }

    /// Parses and checks catalog text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Catalog> {
        let raw: RawCatalog = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| format!(":{}", line_of(text, s.start)))
                .unwrap_or_default();
            data_error(format!("{origin}{at}: bad catalog: {}", e.message().trim()))
        })?;
        let bad = |offset: usize, what: String| {
            data_error(format!(
                "{origin}:{}: bad catalog: {what}",
                line_of(text, offset)
            ))
        };
        if *raw.schema_version.get_ref() != 1 {
            return Err(bad(
                raw.schema_version.span().start,
                format!(
                    "schema_version {} is not supported (this edgeplan reads 1)",
                    raw.schema_version.get_ref()
                ),
            ));
        }
        let mut paths: Vec<PathSpec> = Vec::with_capacity(raw.path.len());
        for entry in raw.path {
            let at = entry.span().start;
            let raw_path = entry.into_inner();
            let spec = raw_path
                .check()
                .map_err(|(offset, what)| bad(offset.unwrap_or(at), what))?;
            if paths.iter().any(|p| p.name == spec.name) {
                return Err(bad(at, format!("path `{}` is defined twice", spec.name)));
            }
            paths.push(spec);
        }
        for (i, spec) in paths.iter().enumerate() {
            for alias in &spec.aliases {
                if paths.iter().enumerate().any(|(j, other)| {
                    other.name == *alias || (j != i && other.aliases.contains(alias))
                }) {
                    return Err(data_error(format!(
                        "{origin}: bad catalog: path `{}` has alias `{alias}`, which another path already uses",
                        spec.name
                    )));
                }
            }
        }
        let required = PathId::ALL.map(|id| paths.iter().position(|p| p.name == id.name()));
        let catalog = Catalog {
            origin: origin.to_string(),
            paths,
            required,
        };
        if let Some(first) = catalog.missing(Engine::Vllm).first() {
            let end = line_of(text, text.len());
            return Err(data_error(format!(
                "{origin}:{end}: bad catalog: no [[path]] named `{first}`; the rules need all of: {}",
                PathId::for_engine(Engine::Vllm)
                    .filter(|id| !id.optional())
                    .map(PathId::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for id in PathId::ALL {
            if let Some(spec) = catalog.required[id.index()].map(|i| &catalog.paths[i])
                && spec.engine != id.engine()
            {
                return Err(data_error(format!(
                    "{origin}: bad catalog: path `{}` is for engine {}, but the rules use it for {}",
                    spec.name,
                    spec.engine,
                    id.engine()
                )));
            }
        }
        Ok(catalog)
    }

    /// Checks that the catalog defines every path `engine`'s rules name: a catalog
    /// written for vLLM alone cannot plan for llama.cpp (65, naming what is missing).
    pub fn require(&self, engine: Engine) -> anyhow::Result<()> {
        let missing = self.missing(engine);
        if missing.is_empty() {
            return Ok(());
        }
        let all: Vec<&str> = PathId::for_engine(engine)
            .filter(|id| !id.optional())
            .map(PathId::name)
            .collect();
        Err(data_error(format!(
            "{}: bad catalog: no [[path]] named `{}`; planning for {engine} needs all of: {}",
            self.origin,
            missing.join("`, `"),
            all.join(", ")
        )))
    }

    /// The paths `engine`'s rules need that this catalog lacks (optional ones aside).
    fn missing(&self, engine: Engine) -> Vec<&'static str> {
        PathId::for_engine(engine)
            .filter(|id| !id.optional() && self.required[id.index()].is_none())
            .map(PathId::name)
            .collect()
    }

    /// The path a rule names. Present for vLLM's paths by construction and for
    /// llama.cpp's once [`Catalog::require`] passed; otherwise the built-in catalog's
    /// definition stands in (the commands call `require` first, so that is a bug).
    pub fn path(&self, id: PathId) -> &PathSpec {
        match self.required[id.index()] {
            Some(i) => &self.paths[i],
            None => {
                static BUILTIN_CATALOG: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
                let builtin = BUILTIN_CATALOG.get_or_init(Catalog::builtin);
                debug_assert!(false, "path {} used without Catalog::require", id.name());
                builtin.path(id)
            }
        }
    }

    /// The path a rule names, when the catalog defines it: the optional paths
    /// ([`PathId::optional`]) may be absent from a replacement catalog.
    pub fn try_path(&self, id: PathId) -> Option<&PathSpec> {
        self.required[id.index()].map(|i| &self.paths[i])
    }

    /// A path by name or by one of its earlier names, for `--expect` and `check`.
    pub fn get(&self, name: &str) -> Option<&PathSpec> {
        self.paths.iter().find(|p| p.name == name).or_else(|| {
            self.paths
                .iter()
                .find(|p| p.aliases.iter().any(|a| a == name))
        })
    }

    /// Every path, in file order.
    pub fn paths(&self) -> &[PathSpec] {
        &self.paths
    }
}

/// 1-based line of a byte offset.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    schema_version: Spanned<u32>,
    #[serde(default)]
    path: Vec<Spanned<RawPath>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
    name: Spanned<String>,
    #[serde(default)]
    aliases: Vec<String>,
    kernel: KernelFamily,
    activations: DType,
    dtype: DType,
    #[serde(default)]
    quantization: Option<Spanned<String>>,
    #[serde(default)]
    symmetric: Option<bool>,
    #[serde(default)]
    group_size: Option<Spanned<i64>>,
    #[serde(default)]
    bits_per_weight: Option<Spanned<f64>>,
    lm_head: LmHead,
    fused_cpu_norms: bool,
    runs_in_vllm: bool,
    #[serde(default)]
    engine: Engine,
    #[serde(default)]
    gguf_type: Option<Spanned<String>>,
    #[serde(default)]
    verified_on: Vec<HardwareClass>,
    #[serde(default)]
    build_with: Option<Spanned<String>>,
    #[serde(default)]
    bench_path: Option<String>,
    rationale: Spanned<String>,
    #[serde(default)]
    notes: Vec<Spanned<RawNote>>,
    #[serde(default)]
    by_class: BTreeMap<HardwareClass, RawClassText>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClassText {
    #[serde(default)]
    rationale: Option<String>,
    #[serde(default)]
    notes: Vec<Spanned<RawNote>>,
}

/// A note as written: a plain string (where it was measured unsaid), or a table
/// `{ text, measured_on, hardware }`.
enum RawNote {
    Plain(String),
    Labelled(RawLabelledNote),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabelledNote {
    text: String,
    measured_on: String,
    #[serde(default)]
    hardware: Option<String>,
}

impl<'de> Deserialize<'de> for RawNote {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawNote;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a note: a string, or { text, measured_on, hardware }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawNote, E> {
                Ok(RawNote::Plain(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawNote, A::Error> {
                let de = serde::de::value::MapAccessDeserializer::new(map);
                RawLabelledNote::deserialize(de).map(RawNote::Labelled)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// A semantic error: the byte offset of the bad value (when known) and what is wrong.
type Problem = (Option<usize>, String);

impl RawPath {
    /// The path as the planner uses it, once every field has passed its check (the
    /// first that fails is the error).
    fn check(self) -> Result<PathSpec, Problem> {
        let name = checked_name(&self.name)?;
        check_quantization(&name, self.quantization.as_ref())?;
        let gguf_type = checked_gguf_type(&name, self.engine, self.gguf_type)?;
        let group_size = checked_group_size(&name, self.group_size.as_ref())?;
        check_bits_per_weight(&name, self.bits_per_weight.as_ref())?;
        check_texts(&name, &self.rationale, self.build_with.as_ref())?;
        let notes = checked_notes(&name, self.notes)?;
        let mut by_class = BTreeMap::new();
        for (class, text) in self.by_class {
            let notes = checked_notes(&name, text.notes)?;
            let rationale = text.rationale;
            by_class.insert(class, ClassText { rationale, notes });
        }
        Ok(PathSpec {
            name,
            aliases: self.aliases,
            kernel: self.kernel,
            activations: self.activations,
            dtype: self.dtype,
            quantization: self.quantization.map(Spanned::into_inner),
            symmetric: self.symmetric,
            group_size,
            bits_per_weight: self.bits_per_weight.map(Spanned::into_inner),
            lm_head: self.lm_head,
            fused_cpu_norms: self.fused_cpu_norms,
            runs_in_vllm: self.runs_in_vllm,
            engine: self.engine,
            gguf_type,
            verified_on: self.verified_on,
            build_with: self.build_with.map(Spanned::into_inner),
            bench_path: self.bench_path,
            rationale: self.rationale.into_inner().trim().to_string(),
            notes,
            by_class,
        })
    }
}

/// The notes as the planner uses them: text not empty; a labelled note's
/// `measured_on` a hardware class or `any`, and a class names its `hardware`.
fn checked_notes(name: &str, raw: Vec<Spanned<RawNote>>) -> Result<Vec<Note>, Problem> {
    let mut notes = Vec::with_capacity(raw.len());
    for entry in raw {
        let at = Some(entry.span().start);
        let note = match entry.into_inner() {
            RawNote::Plain(text) => Note {
                text,
                measured_on: None,
                hardware: None,
            },
            RawNote::Labelled(n) => {
                let scope = note_scope(&n.measured_on).ok_or_else(|| {
                    let classes: Vec<&str> =
                        HardwareClass::ALL.iter().map(|c| c.as_str()).collect();
                    (at, format!(
                        "path `{name}`: a note's measured_on `{}` is not a hardware class ({}) or `any`",
                        n.measured_on,
                        classes.join(", ")
                    ))
                })?;
                let hardware = n.hardware.filter(|h| !h.trim().is_empty());
                if matches!(scope, NoteScope::Class(_)) && hardware.is_none() {
                    return Err((
                        at,
                        format!(
                            "path `{name}`: a note measured on {} must name its hardware (hardware = \"...\", or \"not stated\")",
                            scope.as_str()
                        ),
                    ));
                }
                Note {
                    text: n.text,
                    measured_on: Some(scope),
                    hardware,
                }
            }
        };
        if note.text.trim().is_empty() {
            return Err((at, format!("path `{name}`: a note is empty")));
        }
        notes.push(note);
    }
    Ok(notes)
}

/// `any`, or a hardware class by name.
fn note_scope(v: &str) -> Option<NoteScope> {
    if v == "any" {
        return Some(NoteScope::Any);
    }
    HardwareClass::ALL
        .into_iter()
        .find(|c| c.as_str() == v)
        .map(NoteScope::Class)
}

/// The path's name, trimmed: lowercase letters, digits, `-` or `_`, not empty.
fn checked_name(name: &Spanned<String>) -> Result<String, Problem> {
    let trimmed = name.get_ref().trim().to_string();
    let valid = !trimmed.is_empty()
        && trimmed
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return Err((
            Some(name.span().start),
            format!("path name `{trimmed}` must be lowercase letters, digits, `-` or `_`"),
        ));
    }
    Ok(trimmed)
}

/// A `quantization`, when given, must look like a `quant_method` name.
fn check_quantization(name: &str, quantization: Option<&Spanned<String>>) -> Result<(), Problem> {
    let Some(q) = quantization else {
        return Ok(());
    };
    let v = q.get_ref();
    // Engines get it as a flag's value: it must not read as a flag itself.
    if !v.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err((
            Some(q.span().start),
            format!(
                "path `{name}`: quantization `{v}` is not a quantization format name like gptq (omit it for none)"
            ),
        ));
    }
    Ok(())
}

/// A llama.cpp path names its GGUF type (`Q4_0`, `Q4_K_M`, `BF16`: uppercase letters,
/// digits and `_`, passed to llama.cpp's tools as an argument); a vLLM path has none.
fn checked_gguf_type(
    name: &str,
    engine: Engine,
    gguf_type: Option<Spanned<String>>,
) -> Result<Option<String>, Problem> {
    match (engine, gguf_type) {
        (Engine::Vllm, None) => Ok(None),
        (Engine::Vllm, Some(t)) => Err((
            Some(t.span().start),
            format!("path `{name}`: gguf_type is for llama.cpp paths (engine = \"llama.cpp\")"),
        )),
        (Engine::LlamaCpp, None) => Err((
            None,
            format!("path `{name}`: a llama.cpp path needs gguf_type (Q4_0, Q4_K_M, BF16, F16)"),
        )),
        (Engine::LlamaCpp, Some(t)) => {
            let v = t.get_ref();
            let valid = v.starts_with(|c: char| c.is_ascii_uppercase())
                && v.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if valid {
                Ok(Some(v.clone()))
            } else {
                Err((
                    Some(t.span().start),
                    format!("path `{name}`: gguf_type `{v}` is not a GGUF type name like Q4_0"),
                ))
            }
        }
    }
}

/// A `group_size`, when given, as a positive `u32`.
fn checked_group_size(name: &str, group: Option<&Spanned<i64>>) -> Result<Option<u32>, Problem> {
    let Some(g) = group else {
        return Ok(None);
    };
    match u32::try_from(*g.get_ref()) {
        Ok(v) if v > 0 => Ok(Some(v)),
        _ => Err((
            Some(g.span().start),
            format!(
                "path `{name}`: group_size must be a positive integer, not {}",
                g.get_ref()
            ),
        )),
    }
}

/// A `bits_per_weight`, when given, must be a number in (0, 32].
fn check_bits_per_weight(name: &str, bits: Option<&Spanned<f64>>) -> Result<(), Problem> {
    if let Some(b) = bits {
        let v = *b.get_ref();
        if !v.is_finite() || v <= 0.0 || v > 32.0 {
            return Err((
                Some(b.span().start),
                format!("path `{name}`: bits_per_weight must be a number in (0, 32], not {v}"),
            ));
        }
    }
    Ok(())
}

/// The `rationale` must say something, and a `build_with` that is given must too.
fn check_texts(
    name: &str,
    rationale: &Spanned<String>,
    build_with: Option<&Spanned<String>>,
) -> Result<(), Problem> {
    if rationale.get_ref().trim().is_empty() {
        return Err((
            Some(rationale.span().start),
            format!("path `{name}`: rationale is empty"),
        ));
    }
    if let Some(b) = build_with.filter(|b| b.get_ref().trim().is_empty()) {
        return Err((
            Some(b.span().start),
            format!("path `{name}`: build_with is empty (omit it when there is no script)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Exit, exit_for};

    #[test]
    fn builtin_loads_and_has_every_rule_path() {
        let c = Catalog::builtin();
        for id in PathId::ALL {
            assert_eq!(c.path(id).name, id.name());
        }
    }

    #[test]
    fn builtin_names_the_bench_path_that_measures_each_path() {
        let c = Catalog::builtin();
        let bench = |name: &str| c.get(name).unwrap().bench_path.as_deref();
        assert_eq!(bench("w4a8-amx"), Some("w4a8"));
        assert_eq!(bench("w4a16"), Some("w4a16"));
        // The earlier name still finds the path.
        assert_eq!(c.get("w4a16-tinygemm").unwrap().name, "w4a16");
        assert_eq!(bench("bf16"), Some("bf16"));
        assert_eq!(bench("fp16"), Some("bf16"));
        assert_eq!(bench("export-qnn-w8a16"), None);
    }

    #[test]
    fn builtin_matches_the_decision_table() {
        let c = Catalog::builtin();
        let row = |id: PathId| {
            let p = c.path(id);
            (
                p.quantization.clone(),
                p.group_size,
                p.bits_per_weight,
                p.runs_in_vllm,
                p.build_with.clone(),
            )
        };
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            row(PathId::ExportQnnW8a16),
            (
                None,
                None,
                Some(8.0),
                false,
                s("edgeplan plan --format script (Qualcomm AI Hub: QNN w8a16 export)")
            )
        );
        assert_eq!(row(PathId::Bf16), (None, None, Some(16.0), true, None));
        assert_eq!(row(PathId::Fp16), (None, None, Some(16.0), true, None));
        assert_eq!(
            row(PathId::W4a16),
            (
                s("gptq"),
                Some(128),
                Some(4.25),
                true,
                s("edgeplan plan --format script (GPTQModel: 4-bit GPTQ, group 128, symmetric)")
            )
        );
        assert_eq!(
            row(PathId::W4a8Amx),
            (
                s("gptq"),
                Some(128),
                Some(4.25),
                true,
                s("edgeplan plan --format script (GPTQModel: 4-bit GPTQ, group 128, symmetric)")
            )
        );
        assert!(
            c.paths().iter().all(|p| !p.fused_cpu_norms),
            "fused CPU norms are off everywhere"
        );
    }

    #[test]
    fn the_gpu_4bit_paths_are_optional() {
        let text = BUILTIN
            .split("[[path]]\n")
            .enumerate()
            .filter(|(i, part)| *i == 0 || !part.starts_with("name = \"w4a16-gpu-"))
            .map(|(i, part)| {
                if i == 0 {
                    part.to_string()
                } else {
                    format!("[[path]]\n{part}")
                }
            })
            .collect::<String>();
        let c = Catalog::parse(&text, "t").unwrap();
        assert!(c.try_path(PathId::W4a16GpuBf16).is_none());
        assert!(c.try_path(PathId::Bf16).is_some());
        c.require(Engine::Vllm).unwrap();
        let builtin = Catalog::builtin();
        for id in [PathId::W4a16GpuBf16, PathId::W4a16GpuFp16] {
            let p = builtin.try_path(id).unwrap();
            assert!(id.optional());
            assert_eq!(p.quantization.as_deref(), Some("gptq"));
            assert_eq!(p.lm_head, LmHead::ModelDtype);
            assert_eq!(p.kernel, KernelFamily::W4a16);
            assert!(p.verified_on.is_empty(), "not measured on a GPU");
        }
    }

    #[test]
    fn four_bit_paths_store_4_25_bits_by_arithmetic() {
        // 4-bit codes plus a bf16 scale and a bf16 zero per group: 4 + 32 / g.
        let c = Catalog::builtin();
        for id in [
            PathId::W4a16,
            PathId::W4a8Amx,
            PathId::W4a16GpuBf16,
            PathId::W4a16GpuFp16,
        ] {
            let p = c.path(id);
            let g = f64::from(p.group_size.unwrap_or(0));
            assert_eq!(p.bits_per_weight, Some(4.0 + 32.0 / g), "{}", p.name);
        }
    }

    fn err_of(text: &str) -> String {
        let err = Catalog::parse(text, "c.toml").unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        format!("{err:#}")
    }

    #[test]
    fn a_missing_rule_path_names_it() {
        let text = BUILTIN.replace("name = \"w4a8-amx\"", "name = \"w4a8-other\"");
        let msg = err_of(&text);
        assert!(msg.contains("no [[path]] named `w4a8-amx`"), "{msg}");
    }

    #[test]
    fn a_bad_field_gives_its_line() {
        let text = BUILTIN.replacen("bits_per_weight = 4.25", "bits_per_weight = -4.25", 1);
        let want = text.lines().position(|l| l.contains("-4.25")).unwrap() + 1;
        let msg = err_of(&text);
        assert!(
            msg.starts_with(&format!("c.toml:{want}: bad catalog")),
            "{msg}"
        );

        let text = BUILTIN.replacen("group_size = 128", "group_size = \"many\"", 1);
        let want = text.lines().position(|l| l.contains("\"many\"")).unwrap() + 1;
        let msg = err_of(&text);
        assert!(
            msg.starts_with(&format!("c.toml:{want}: bad catalog")),
            "{msg}"
        );
    }

    #[test]
    fn duplicates_unknown_fields_and_syntax_errors_are_65() {
        let dup = format!(
            "{BUILTIN}\n[[path]]\nname = \"bf16\"\nkernel = \"dense\"\nactivations = \"bfloat16\"\ndtype = \"bfloat16\"\nlm_head = \"model_dtype\"\nfused_cpu_norms = false\nruns_in_vllm = true\nrationale = \"x\"\n"
        );
        assert!(err_of(&dup).contains("defined twice"));
        let unknown = BUILTIN.replacen(
            "runs_in_vllm = false",
            "runs_in_vllm = false\nspeedup = 3",
            1,
        );
        assert!(err_of(&unknown).contains("speedup"));
        assert!(err_of("schema_version = 1\n[[path]\n").contains("c.toml:2"));
        assert!(err_of("schema_version = 2\n").contains("schema_version 2"));
        assert!(err_of("").contains("schema_version"));
    }

    #[test]
    fn a_quantization_that_reads_as_a_flag_or_an_alias_taken_twice_is_refused() {
        let flag = BUILTIN.replacen(
            "quantization = \"gptq\"",
            "quantization = \"--trust-remote-code\"",
            1,
        );
        assert!(err_of(&flag).contains("not a quantization format name"));
        let alias = BUILTIN.replacen("aliases = [\"w4a16-tinygemm\"]", "aliases = [\"bf16\"]", 1);
        assert!(
            err_of(&alias).contains("alias `bf16`"),
            "{}",
            err_of(&alias)
        );
    }

    #[test]
    fn notes_carry_where_they_were_measured_and_plain_strings_still_load() {
        let c = Catalog::builtin();
        let amx = c.path(PathId::W4a8Amx);
        assert!(amx.notes.iter().all(|n| n.measured_on.is_some()));
        let first = &amx.notes[0];
        assert_eq!(
            first.measured_on,
            Some(NoteScope::Class(HardwareClass::X86Cpu))
        );
        assert_eq!(
            first.hardware.as_deref(),
            Some("Intel Xeon Platinum 8480C, 24 threads")
        );
        // Every builtin note says where it holds; every class note names its machine.
        for p in c.paths() {
            for n in p
                .notes
                .iter()
                .chain(p.by_class.values().flat_map(|t| &t.notes))
            {
                assert!(n.measured_on.is_some(), "{}: {}", p.name, n.text);
                if matches!(n.measured_on, Some(NoteScope::Class(_))) {
                    assert!(n.hardware.is_some(), "{}: {}", p.name, n.text);
                }
            }
        }
        // A --catalog file in the old form: plain strings, where measured unsaid.
        let old = BUILTIN.replacen(
            "{ measured_on = \"any\", text = \"16 bits per weight: no quantization, no groups.\" }",
            "\"16 bits per weight: no quantization, no groups.\"",
            1,
        );
        assert_ne!(old, BUILTIN);
        let c = Catalog::parse(&old, "old.toml").unwrap();
        let bf16 = c.path(PathId::Bf16);
        assert_eq!(bf16.notes[0].measured_on, None);
        assert_eq!(
            bf16.notes[0].text,
            "16 bits per weight: no quantization, no groups."
        );
    }

    #[test]
    fn a_bad_note_names_its_line() {
        // The first data line (the header comment shows the form too).
        let bad_scope = BUILTIN.replacen(
            "\n    { measured_on = \"x86_cpu\"",
            "\n    { measured_on = \"xeon\"",
            1,
        );
        let want = bad_scope
            .lines()
            .position(|l| l.contains("\"xeon\""))
            .unwrap()
            + 1;
        let msg = err_of(&bad_scope);
        assert!(
            msg.starts_with(&format!("c.toml:{want}: bad catalog")),
            "{msg}"
        );
        assert!(
            msg.contains("measured_on `xeon` is not a hardware class"),
            "{msg}"
        );
        let no_hw = BUILTIN.replacen(
            "measured_on = \"npu_phone\", hardware = \"the study's phone, a Qualcomm Hexagon NPU (model not stated)\", ",
            "measured_on = \"npu_phone\", ",
            1,
        );
        assert_ne!(no_hw, BUILTIN);
        assert!(
            err_of(&no_hw).contains("must name its hardware"),
            "{}",
            err_of(&no_hw)
        );
        let unknown = BUILTIN.replacen(
            "measured_on = \"any\",",
            "measured_on = \"any\", where = \"lab\",",
            1,
        );
        assert!(err_of(&unknown).contains("where"), "{}", err_of(&unknown));
        let empty = BUILTIN.replacen(
            "text = \"16 bits per weight: no quantization, no groups.\"",
            "text = \" \"",
            1,
        );
        assert!(
            err_of(&empty).contains("a note is empty"),
            "{}",
            err_of(&empty)
        );
        assert!(err_of(&BUILTIN.replacen("notes = [", "notes = [ 3,", 1)).contains("a note"));
    }

    #[test]
    fn line_of_counts_from_one() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
