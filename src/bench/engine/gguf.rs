//! A GGUF writer for `bench --engine llama.cpp`: a model file of the request's shapes
//! with random weights, quantized the way llama-quantize would store it, so llama-bench
//! runs llama.cpp's own kernels on exactly the tensor types a deployed file holds.
//!
//! The format is GGUF version 3 as llama.cpp b11312 reads it (ggml/src/gguf.cpp): the
//! magic `GGUF`, the version, the tensor and key-value counts, the key-values, one info
//! per tensor (name, dimensions, ggml type, offset into the data section), padding to
//! `general.alignment` (32), then each tensor's data, each padded to 32. Block layouts
//! are ggml-common.h's; quantized payloads are random bytes, but every f16 scale (`d`,
//! `dmin`) is a small finite constant, so no weight is NaN or infinite. Norm weights are
//! f32 ones, biases f32 zeros.
//!
//! Tensor types follow llama-quantize (src/llama-quant.cpp, `llama_tensor_get_type_impl`):
//! the file type's default type; the output head, or a tied token embedding that doubles
//! as it, in Q6_K (Q8_0 when its rows do not fill a block of the default type); in
//! Q4_K_M, Q6_K for `attn_v` and `ffn_down` in the layers `use_more_bits` picks; a type
//! whose block does not divide the row falls back (Q4_K to Q5_0, Q6_K to Q8_0, then F16).
//!
//! The vocabulary is none (`tokenizer.ggml.model = "none"` with `{arch}.vocab_size`):
//! llama.cpp then adds that many dummy tokens (src/llama-vocab.cpp), and llama-bench
//! feeds random token ids below it.

use std::io::{self, Write};
use std::path::Path;

use super::protocol::ModelDims;
use crate::bench::rng::Rng;
pub use crate::contract::gguf::{FileType, GgmlType};
use crate::contract::gguf::{Role, tensor_type};
use crate::error::data_error;

/// The data section's alignment (`GGUF_DEFAULT_ALIGNMENT`, gguf.h).
pub const ALIGNMENT: u64 = 32;
/// The GGUF version written.
pub const VERSION: u32 = 3;

/// The file type of a build `bench --engine llama.cpp` writes, from its build name
/// (`q4_0`, `q4_k_m`, any case); `None` for a build the writer does not make.
pub fn build_file_type(build: &str) -> Option<FileType> {
    match build.to_ascii_lowercase().as_str() {
        "q4_0" => Some(FileType::Q4_0),
        "q4_k_m" => Some(FileType::Q4KM),
        _ => None,
    }
}

/// The llama.cpp architectures whose tensor set the writer knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Plain attention (src/models/llama.cpp).
    Llama,
    /// q/k/v biases (src/models/qwen2.cpp).
    Qwen2,
    /// q/k RMS norms (src/models/qwen3.cpp).
    Qwen3,
}

impl Arch {
    /// From the config's `model_type`; an exit-65 error for any other family.
    pub fn of(family: Option<&str>) -> anyhow::Result<Arch> {
        match family {
            Some("llama") => Ok(Arch::Llama),
            Some("qwen2") => Ok(Arch::Qwen2),
            Some("qwen3") => Ok(Arch::Qwen3),
            other => Err(data_error(format!(
                "bench --engine llama.cpp: model family {} is not one the GGUF writer knows (llama, qwen2, qwen3)",
                other.map_or_else(|| "(none given)".to_string(), |f| format!("{f:?}"))
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
        }
    }
}

/// One tensor of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    /// ggml's order: `ne[0]` is the row length.
    pub ne: Vec<u64>,
    pub ty: GgmlType,
    /// The decoder layer it belongs to.
    pub layer: Option<usize>,
    /// Norm weights are ones; biases zeros.
    ones: bool,
}

impl TensorSpec {
    pub fn bytes(&self) -> u64 {
        let (per, bytes) = self.ty.block();
        let rows: u64 = self.ne[1..].iter().product();
        self.ne[0] / per * bytes * rows
    }
}

/// The tensors of a model file, in the order the converter writes them.
pub fn tensors(m: &ModelDims, arch: Arch, ft: FileType) -> Vec<TensorSpec> {
    let (h, v, n) = (m.hidden_size as u64, m.vocab_size as u64, m.layers as u64);
    let q = (m.attention_heads * m.head_dim) as u64;
    let kv = (m.kv_heads * m.head_dim) as u64;
    let ff = m.intermediate_size as u64;
    let tied = m.tie_word_embeddings;
    let t = |name: String, ne: Vec<u64>, role: Role, layer: Option<usize>| TensorSpec {
        ty: tensor_type(ft, role, tied, layer.unwrap_or(0) as u64, n, ne[0]),
        ones: role == Role::Vector && name.ends_with(".weight"),
        name,
        ne,
        layer,
    };
    let mut out = vec![t(
        "token_embd.weight".into(),
        vec![h, v],
        Role::TokenEmbd,
        None,
    )];
    out.push(t("output_norm.weight".into(), vec![h], Role::Vector, None));
    if !tied {
        out.push(t("output.weight".into(), vec![h, v], Role::Output, None));
    }
    for i in 0..m.layers {
        let b = |s: &str| format!("blk.{i}.{s}");
        let l = Some(i);
        out.push(t(b("attn_norm.weight"), vec![h], Role::Vector, l));
        out.push(t(b("attn_q.weight"), vec![h, q], Role::Other, l));
        out.push(t(b("attn_k.weight"), vec![h, kv], Role::Other, l));
        out.push(t(b("attn_v.weight"), vec![h, kv], Role::AttnV, l));
        if arch == Arch::Qwen2 {
            out.push(t(b("attn_q.bias"), vec![q], Role::Vector, l));
            out.push(t(b("attn_k.bias"), vec![kv], Role::Vector, l));
            out.push(t(b("attn_v.bias"), vec![kv], Role::Vector, l));
        }
        out.push(t(b("attn_output.weight"), vec![q, h], Role::Other, l));
        if arch == Arch::Qwen3 {
            let hd = m.head_dim as u64;
            out.push(t(b("attn_q_norm.weight"), vec![hd], Role::Vector, l));
            out.push(t(b("attn_k_norm.weight"), vec![hd], Role::Vector, l));
        }
        out.push(t(b("ffn_norm.weight"), vec![h], Role::Vector, l));
        out.push(t(b("ffn_gate.weight"), vec![h, ff], Role::Other, l));
        out.push(t(b("ffn_up.weight"), vec![h, ff], Role::Other, l));
        out.push(t(b("ffn_down.weight"), vec![ff, h], Role::FfnDown, l));
    }
    out
}

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U32(u32),
    F32(f32),
    Str(String),
}

impl Value {
    /// `enum gguf_type`, gguf.h.
    fn type_id(&self) -> u32 {
        match self {
            Value::U32(_) => 4,
            Value::F32(_) => 6,
            Value::Str(_) => 8,
        }
    }
}

/// The metadata llama.cpp needs to load the model (keys from gguf-py/gguf/constants.py).
pub fn metadata(m: &ModelDims, arch: Arch, ft: FileType) -> Vec<(String, Value)> {
    let a = arch.name();
    let u = |x: usize| Value::U32(x as u32);
    let rope_base = if arch == Arch::Llama {
        10_000.0
    } else {
        1_000_000.0
    };
    vec![
        ("general.architecture".into(), Value::Str(a.into())),
        (
            "general.name".into(),
            Value::Str(format!("edgeplan-bench-{a}-random")),
        ),
        ("general.file_type".into(), Value::U32(ft.ftype())),
        ("general.alignment".into(), Value::U32(ALIGNMENT as u32)),
        (format!("{a}.block_count"), u(m.layers)),
        (format!("{a}.context_length"), u(4096)),
        (format!("{a}.embedding_length"), u(m.hidden_size)),
        (format!("{a}.feed_forward_length"), u(m.intermediate_size)),
        (format!("{a}.attention.head_count"), u(m.attention_heads)),
        (format!("{a}.attention.head_count_kv"), u(m.kv_heads)),
        (format!("{a}.attention.key_length"), u(m.head_dim)),
        (format!("{a}.attention.value_length"), u(m.head_dim)),
        (format!("{a}.rope.freq_base"), Value::F32(rope_base)),
        (
            format!("{a}.attention.layer_norm_rms_epsilon"),
            Value::F32(1e-6),
        ),
        (format!("{a}.vocab_size"), u(m.vocab_size)),
        ("tokenizer.ggml.model".into(), Value::Str("none".into())),
    ]
}

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub file_bytes: u64,
    /// Bytes of the decoder layers' tensors, all layers.
    pub layers_bytes: u64,
    /// Bytes of the output head (the token embedding when tied).
    pub head_bytes: u64,
}

/// Checks what the writer cannot store: zero dimensions, heads that do not fit.
pub fn check(m: &ModelDims) -> anyhow::Result<()> {
    let dims = [
        ("hidden_size", m.hidden_size),
        ("intermediate_size", m.intermediate_size),
        ("num_hidden_layers", m.layers),
        ("num_attention_heads", m.attention_heads),
        ("num_key_value_heads", m.kv_heads),
        ("head_dim", m.head_dim),
        ("vocab_size", m.vocab_size),
    ];
    if let Some((name, _)) = dims.iter().find(|(_, v)| *v == 0 || *v > u32::MAX as usize) {
        return Err(data_error(format!(
            "bench --engine llama.cpp: the model's {name} is 0 or too large for a GGUF file"
        )));
    }
    if !m.attention_heads.is_multiple_of(m.kv_heads) {
        return Err(data_error(format!(
            "bench --engine llama.cpp: {} attention heads are not a multiple of {} key-value heads",
            m.attention_heads, m.kv_heads
        )));
    }
    Ok(())
}

/// Writes the model file of `m` in file type `ft` to `path` (which must not exist).
pub fn write_model(
    path: &Path,
    m: &ModelDims,
    arch: Arch,
    ft: FileType,
    seed: u64,
) -> io::Result<Written> {
    let specs = tensors(m, arch, ft);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut w = io::BufWriter::with_capacity(1 << 20, file);
    let meta = metadata(m, arch, ft);
    let mut pos = write_header(&mut w, &meta, &specs)?;
    let mut rng = Rng::new(seed);
    for spec in &specs {
        pos += write_data(&mut w, spec, &mut rng)?;
        pos += pad(&mut w, pos)?;
    }
    w.flush()?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    let layers_bytes = specs
        .iter()
        .filter(|s| s.layer.is_some())
        .map(TensorSpec::bytes)
        .sum();
    let head_name = if m.tie_word_embeddings {
        "token_embd.weight"
    } else {
        "output.weight"
    };
    let head_bytes = specs
        .iter()
        .find(|s| s.name == head_name)
        .map_or(0, TensorSpec::bytes);
    Ok(Written {
        file_bytes: pos,
        layers_bytes,
        head_bytes,
    })
}

fn put_str(w: &mut impl Write, s: &str) -> io::Result<u64> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())?;
    Ok(8 + s.len() as u64)
}

/// Writes everything before the data section (padded to it); returns its length.
fn write_header(
    w: &mut impl Write,
    meta: &[(String, Value)],
    specs: &[TensorSpec],
) -> io::Result<u64> {
    let mut pos = 0u64;
    w.write_all(b"GGUF")?;
    w.write_all(&VERSION.to_le_bytes())?;
    w.write_all(&(specs.len() as i64).to_le_bytes())?;
    w.write_all(&(meta.len() as i64).to_le_bytes())?;
    pos += 24;
    for (key, value) in meta {
        pos += put_str(w, key)?;
        w.write_all(&value.type_id().to_le_bytes())?;
        pos += 4;
        pos += match value {
            Value::U32(x) => w.write_all(&x.to_le_bytes()).map(|_| 4)?,
            Value::F32(x) => w.write_all(&x.to_le_bytes()).map(|_| 4)?,
            Value::Str(s) => put_str(w, s)?,
        };
    }
    let mut offset = 0u64;
    for spec in specs {
        pos += put_str(w, &spec.name)?;
        w.write_all(&(spec.ne.len() as u32).to_le_bytes())?;
        for d in &spec.ne {
            w.write_all(&(*d as i64).to_le_bytes())?;
        }
        w.write_all(&spec.ty.id().to_le_bytes())?;
        w.write_all(&offset.to_le_bytes())?;
        pos += 4 + 8 * spec.ne.len() as u64 + 4 + 8;
        offset += spec.bytes().next_multiple_of(ALIGNMENT);
    }
    pos += pad(w, pos)?;
    Ok(pos)
}

/// Zero bytes up to the next multiple of the alignment.
fn pad(w: &mut impl Write, pos: u64) -> io::Result<u64> {
    let n = pos.next_multiple_of(ALIGNMENT) - pos;
    w.write_all(&vec![0u8; n as usize])?;
    Ok(n)
}

/// f16 bits of the scales every quantized block carries (0.01 and 0.001: small and
/// finite, so the random payloads dequantize to moderate weights).
const F16_0_01: u16 = 0x211f;
const F16_0_001: u16 = 0x1419;

/// Writes one tensor's data; returns its length.
fn write_data(w: &mut impl Write, spec: &TensorSpec, rng: &mut Rng) -> io::Result<u64> {
    let total = spec.bytes();
    if spec.ty == GgmlType::F32 {
        let value: f32 = if spec.ones { 1.0 } else { 0.0 };
        let chunk: Vec<u8> = std::iter::repeat_n(value.to_le_bytes(), total as usize / 4)
            .flatten()
            .collect();
        w.write_all(&chunk)?;
        return Ok(total);
    }
    let block = spec.ty.block().1 as usize;
    let per_chunk = ((1usize << 20) / block).max(1);
    let mut buf = vec![0u8; per_chunk * block];
    let mut left = total as usize / block;
    while left > 0 {
        let n = left.min(per_chunk);
        let chunk = &mut buf[..n * block];
        fill_random(chunk, rng);
        for b in chunk.chunks_exact_mut(block) {
            set_scales(spec.ty, b);
        }
        w.write_all(chunk)?;
        left -= n;
    }
    Ok(total)
}

fn fill_random(buf: &mut [u8], rng: &mut Rng) {
    let mut words = buf.chunks_exact_mut(8);
    for c in &mut words {
        c.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let rest = words.into_remainder();
    let last = rng.next_u64().to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&last[..n]);
}

/// Overwrites one block's f16 scales (ggml-common.h layouts).
fn set_scales(ty: GgmlType, b: &mut [u8]) {
    let put =
        |b: &mut [u8], at: usize, bits: u16| b[at..at + 2].copy_from_slice(&bits.to_le_bytes());
    match ty {
        // block_q4_0 / q5_0 / q8_0: `ggml_half d` first.
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => put(b, 0, F16_0_01),
        // block_q4_K: d, dmin, then scales[12] and qs[128].
        GgmlType::Q4_K => {
            put(b, 0, F16_0_001);
            put(b, 2, F16_0_001);
        }
        // block_q6_K: ql[128], qh[64], scales[16] (int8), then d.
        GgmlType::Q6_K => put(b, 208, F16_0_001),
        // f16 weights: small random values (sign, exponent 2^-10 .. 2^-7).
        GgmlType::F16 => {
            for pair in b.chunks_exact_mut(2) {
                let r = u16::from_le_bytes([pair[0], pair[1]]);
                let bits = (r & 0x83ff) | ((5 + (r >> 10) % 4) << 10);
                pair.copy_from_slice(&bits.to_le_bytes());
            }
        }
        // bf16 weights likewise (exponent field 117 .. 120: 2^-10 .. 2^-7).
        GgmlType::BF16 => {
            for pair in b.chunks_exact_mut(2) {
                let r = u16::from_le_bytes([pair[0], pair[1]]);
                let bits = (r & 0x807f) | ((117 + (r >> 7) % 4) << 7);
                pair.copy_from_slice(&bits.to_le_bytes());
            }
        }
        GgmlType::F32 => {}
    }
}

#[cfg(test)]
pub(crate) mod tests;
