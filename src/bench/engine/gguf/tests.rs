use super::*;

/// The tiny model of the tests (hidden 256, intermediate 512, 2 layers, vocab 512).
pub(crate) fn tiny(family: &str, tied: bool) -> ModelDims {
    ModelDims {
        family: Some(family.into()),
        hidden_size: 256,
        intermediate_size: 512,
        layers: 2,
        attention_heads: 4,
        kv_heads: 2,
        head_dim: 64,
        vocab_size: 512,
        tie_word_embeddings: tied,
    }
}

/// A GGUF file read back by a reader written from gguf.h, independent of the writer.
struct Read {
    version: u32,
    kv: Vec<(String, u32, Vec<u8>)>,
    tensors: Vec<(String, Vec<u64>, u32, u64)>,
    data_start: u64,
}

fn read(bytes: &[u8]) -> Read {
    let mut at = 0usize;
    let mut take = |n: usize| {
        let s = &bytes[at..at + n];
        at += n;
        s.to_vec()
    };
    assert_eq!(take(4), b"GGUF");
    let u32_of = |b: Vec<u8>| u32::from_le_bytes(b.try_into().unwrap());
    let u64_of = |b: Vec<u8>| u64::from_le_bytes(b.try_into().unwrap());
    let version = u32_of(take(4));
    let n_tensors = u64_of(take(8));
    let n_kv = u64_of(take(8));
    let mut kv = Vec::new();
    for _ in 0..n_kv {
        let len = u64_of(take(8)) as usize;
        let key = String::from_utf8(take(len)).unwrap();
        let ty = u32_of(take(4));
        let value = match ty {
            4 | 6 => take(4),
            8 => {
                let len = u64_of(take(8)) as usize;
                take(len)
            }
            other => panic!("unexpected type {other}"),
        };
        kv.push((key, ty, value));
    }
    let mut tensors = Vec::new();
    for _ in 0..n_tensors {
        let len = u64_of(take(8)) as usize;
        let name = String::from_utf8(take(len)).unwrap();
        let dims = u32_of(take(4));
        let ne = (0..dims).map(|_| u64_of(take(8))).collect();
        let ty = u32_of(take(4));
        let offset = u64_of(take(8));
        tensors.push((name, ne, ty, offset));
    }
    let data_start = (at as u64).next_multiple_of(ALIGNMENT);
    Read {
        version,
        kv,
        tensors,
        data_start,
    }
}

fn write(m: &ModelDims, arch: Arch, ft: FileType) -> (Vec<u8>, Written) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.gguf");
    let written = write_model(&path, m, arch, ft, 7).unwrap();
    (std::fs::read(&path).unwrap(), written)
}

#[test]
fn a_tiny_qwen3_file_reads_back_with_its_header_offsets_and_metadata() {
    let m = tiny("qwen3", true);
    let (bytes, written) = write(&m, Arch::Qwen3, FileType::Q4KM);
    let r = read(&bytes);
    assert_eq!(r.version, 3);
    assert_eq!(written.file_bytes, bytes.len() as u64);
    // token_embd, output_norm, then 11 per layer (no output: tied).
    assert_eq!(r.tensors.len(), 2 + 2 * 11);
    assert!(!r.tensors.iter().any(|t| t.0 == "output.weight"));
    let mut expect = 0u64;
    for (name, ne, ty, offset) in &r.tensors {
        assert_eq!(*offset, expect, "{name}");
        assert_eq!(offset % ALIGNMENT, 0, "{name}");
        let spec = tensors(&m, Arch::Qwen3, FileType::Q4KM)
            .into_iter()
            .find(|s| &s.name == name)
            .unwrap();
        assert_eq!(&spec.ne, ne);
        assert_eq!(spec.ty.id(), *ty);
        expect += spec.bytes().next_multiple_of(ALIGNMENT);
    }
    assert_eq!(r.data_start + expect, bytes.len() as u64);
    let kv = |k: &str| {
        r.kv.iter()
            .find(|e| e.0 == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    assert_eq!(kv("general.architecture").2, b"qwen3");
    assert_eq!(kv("tokenizer.ggml.model").2, b"none");
    assert_eq!(kv("qwen3.vocab_size").2, 512u32.to_le_bytes());
    assert_eq!(kv("qwen3.block_count").2, 2u32.to_le_bytes());
    assert_eq!(kv("general.alignment").2, 32u32.to_le_bytes());
    assert_eq!(kv("qwen3.attention.key_length").2, 64u32.to_le_bytes());
}

#[test]
fn norms_are_f32_ones_and_every_block_scale_is_small_and_finite() {
    let m = tiny("qwen3", false);
    let (bytes, _) = write(&m, Arch::Qwen3, FileType::Q4KM);
    let r = read(&bytes);
    let data = |name: &str| {
        let t = r.tensors.iter().find(|t| t.0 == name).unwrap();
        let at = (r.data_start + t.3) as usize;
        (t.2, &bytes[at..])
    };
    let (ty, norm) = data("blk.0.attn_norm.weight");
    assert_eq!(ty, 0);
    for i in 0..256 {
        assert_eq!(
            f32::from_le_bytes(norm[4 * i..4 * i + 4].try_into().unwrap()),
            1.0
        );
    }
    let f16 = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]);
    // Q4_K (attn_q of layer 0): d and dmin at the head of each 144-byte block.
    let (ty, q) = data("blk.0.attn_q.weight");
    assert_eq!(ty, 12);
    for block in q[..256 * 144].chunks_exact(144) {
        assert_eq!((f16(block), f16(&block[2..])), (F16_0_001, F16_0_001));
    }
    // Q6_K (ffn_down of layer 1 of 2, a use_more_bits layer): d at byte 208 of 210.
    let (ty, down) = data("blk.1.ffn_down.weight");
    assert_eq!(ty, 14);
    for block in down[..2 * 256 * 210].chunks_exact(210) {
        assert_eq!(f16(&block[208..]), F16_0_001);
    }
    // The scales' bit patterns are the values they claim.
    assert!((half(F16_0_01) - 0.01).abs() < 1e-5);
    assert!((half(F16_0_001) - 0.001).abs() < 1e-6);
}

/// f16 bits to f32 (normal numbers).
fn half(bits: u16) -> f32 {
    let exp = ((bits >> 10) & 0x1f) as i32 - 15;
    let mant = 1.0 + (bits & 0x3ff) as f32 / 1024.0;
    mant * 2f32.powi(exp)
}

#[test]
fn q4_k_m_types_follow_llama_quantize() {
    let mut m = tiny("qwen3", false);
    m.layers = 16;
    let specs = tensors(&m, Arch::Qwen3, FileType::Q4KM);
    let ty = |name: &str| specs.iter().find(|s| s.name == name).unwrap().ty;
    assert_eq!(ty("output.weight"), GgmlType::Q6_K);
    assert_eq!(ty("token_embd.weight"), GgmlType::Q4_K);
    // use_more_bits(i, 16): i < 2, i >= 14, (i - 2) % 3 == 2.
    let promoted: Vec<usize> = (0..16)
        .filter(|i| ty(&format!("blk.{i}.attn_v.weight")) == GgmlType::Q6_K)
        .collect();
    assert_eq!(promoted, vec![0, 1, 4, 7, 10, 13, 14, 15]);
    assert_eq!(ty("blk.3.ffn_down.weight"), GgmlType::Q4_K);
    assert_eq!(ty("blk.4.ffn_down.weight"), GgmlType::Q6_K);
    assert_eq!(ty("blk.4.ffn_up.weight"), GgmlType::Q4_K);
    let q40 = tensors(&tiny("qwen3", true), Arch::Qwen3, FileType::Q4_0);
    let ty0 = |name: &str| q40.iter().find(|s| s.name == name).unwrap().ty;
    // Tied: the embedding doubles as the head, so Q6_K.
    assert_eq!(ty0("token_embd.weight"), GgmlType::Q6_K);
    assert_eq!(ty0("blk.0.attn_v.weight"), GgmlType::Q4_0);
    // A row of 64 cannot hold a 256 block: Q4_K falls back to Q5_0, Q6_K to Q8_0.
    assert_eq!(GgmlType::Q4_K.fitted(64), GgmlType::Q5_0);
    assert_eq!(GgmlType::Q6_K.fitted(64), GgmlType::Q8_0);
    assert_eq!(GgmlType::Q4_0.fitted(48), GgmlType::F16);
}

#[test]
fn each_family_has_its_own_tensors_and_others_are_refused() {
    let names = |arch| -> Vec<String> {
        tensors(&tiny("x", false), arch, FileType::Q4_0)
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    assert!(names(Arch::Qwen2).contains(&"blk.1.attn_k.bias".to_string()));
    assert!(!names(Arch::Qwen2).iter().any(|n| n.contains("q_norm")));
    assert!(names(Arch::Qwen3).contains(&"blk.1.attn_q_norm.weight".to_string()));
    assert!(
        !names(Arch::Llama)
            .iter()
            .any(|n| n.contains("bias") || n.contains("q_norm"))
    );
    let err = Arch::of(Some("gemma3")).unwrap_err();
    assert_eq!(crate::error::exit_for(&err), crate::error::Exit::DataErr);
    assert!(err.to_string().contains("\"gemma3\""), "{err}");
    assert!(Arch::of(None).is_err());
}

#[test]
fn layer_and_head_bytes_add_up_and_the_writer_never_overwrites() {
    let m = tiny("llama", false);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.gguf");
    let w = write_model(&path, &m, Arch::Llama, FileType::Q4_0, 1).unwrap();
    // Per layer: q 256x256, k/v 256x128 each, o 256x256, gate/up 256x512 each, down 512x256.
    let params: u64 = 256 * 256 * 2 + 256 * 128 * 2 + 256 * 512 * 3;
    assert_eq!(w.layers_bytes, 2 * (params / 32 * 18 + 2 * 256 * 4));
    assert_eq!(w.head_bytes, 256 * 512 / 256 * 210);
    assert!(write_model(&path, &m, Arch::Llama, FileType::Q4_0, 1).is_err());
    let mut bad = m.clone();
    bad.kv_heads = 3;
    assert!(check(&bad).is_err());
    assert!(check(&m).is_ok());
}
