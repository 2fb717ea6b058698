//! The GGUF type table, once: the ggml tensor types (ids and block geometry from
//! ggml.h and ggml-common.h), the llama-quantize file types edgeplan plans and builds,
//! and llama-quantize's rule for which type each tensor gets
//! (src/llama-quant.cpp `llama_tensor_get_type_impl`, `use_more_bits`,
//! `tensor_type_fallback`, ggml-org/llama.cpp@0c1e57098). The memory fit
//! (`plan/memory_llama_cpp.rs`) sizes a file with it and the bench's GGUF writer
//! (`bench/engine/gguf.rs`) writes one with it, so the two cannot disagree.

/// A ggml tensor type (ids from ggml.h `enum ggml_type`).
// Named as ggml names them (GGML_TYPE_Q4_K), which the plan prints.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q5_0,
    Q8_0,
    Q4_K,
    Q6_K,
}

impl GgmlType {
    /// The type's id in a GGUF file.
    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q5_0 => 6,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4_K => 12,
            GgmlType::Q6_K => 14,
            GgmlType::BF16 => 30,
        }
    }

    /// (elements per block, bytes per block), ggml-common.h.
    pub fn block(self) -> (u64, u64) {
        match self {
            GgmlType::F32 => (1, 4),
            GgmlType::F16 | GgmlType::BF16 => (1, 2),
            GgmlType::Q4_0 => (32, 18),
            GgmlType::Q5_0 => (32, 22),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q4_K => (256, 144),
            GgmlType::Q6_K => (256, 210),
        }
    }

    /// Bytes of a `cols` x `rows` tensor (`ggml_row_size` x rows).
    pub fn bytes(self, cols: u64, rows: u64) -> u64 {
        let (per, bytes) = self.block();
        (cols / per).saturating_mul(bytes).saturating_mul(rows)
    }

    /// The type llama-quantize stores instead when `cols` is not a multiple of the
    /// block (`tensor_type_fallback`, llama-quant.cpp:390-442).
    pub fn fitted(self, cols: u64) -> GgmlType {
        if cols.is_multiple_of(self.block().0) {
            return self;
        }
        let fallback = match self {
            GgmlType::Q4_K => GgmlType::Q5_0,
            GgmlType::Q6_K => GgmlType::Q8_0,
            other => other,
        };
        if cols.is_multiple_of(fallback.block().0) {
            fallback
        } else {
            GgmlType::F16
        }
    }
}

/// The llama-quantize file types edgeplan plans (the catalog's `gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    Q4_0,
    Q4KM,
    BF16,
    F16,
}

impl FileType {
    /// From the name llama.cpp gives it (a catalog `gguf_type`: `Q4_0`, `Q4_K_M`,
    /// `BF16`, `F16`).
    pub fn parse(s: &str) -> Option<FileType> {
        Some(match s {
            "Q4_0" => FileType::Q4_0,
            "Q4_K_M" => FileType::Q4KM,
            "BF16" => FileType::BF16,
            "F16" => FileType::F16,
            _ => return None,
        })
    }

    /// The name llama.cpp gives it.
    pub fn name(self) -> &'static str {
        match self {
            FileType::Q4_0 => "Q4_0",
            FileType::Q4KM => "Q4_K_M",
            FileType::BF16 => "BF16",
            FileType::F16 => "F16",
        }
    }

    /// `general.file_type` (`enum llama_ftype`, include/llama.h).
    pub fn ftype(self) -> u32 {
        match self {
            FileType::F16 => 1,
            FileType::Q4_0 => 2,
            FileType::Q4KM => 15,
            FileType::BF16 => 32,
        }
    }

    /// The type of the tensors no rule singles out.
    pub fn default_type(self) -> GgmlType {
        match self {
            FileType::Q4_0 => GgmlType::Q4_0,
            FileType::Q4KM => GgmlType::Q4_K,
            FileType::BF16 => GgmlType::BF16,
            FileType::F16 => GgmlType::F16,
        }
    }

    /// Whether llama-quantize's per-tensor rules apply (a 16-bit file keeps one type).
    pub fn quantized(self) -> bool {
        match self {
            FileType::Q4_0 | FileType::Q4KM => true,
            FileType::BF16 | FileType::F16 => false,
        }
    }
}

/// What llama-quantize calls a tensor, as far as its type rules go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    TokenEmbd,
    Output,
    AttnV,
    FfnDown,
    Other,
    /// 1-D: norms and biases, f32 (the converter writes them so, conversion/base.py).
    Vector,
}

/// `use_more_bits` (llama-quant.cpp:452-454): the layers Q4_K_M keeps at Q6_K.
pub fn use_more_bits(i: u64, n: u64) -> bool {
    // Past the first disjunct `i >= n / 8`, so the subtraction cannot underflow.
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// The type of a tensor of `role` (layer `i` of `n`) with `cols` columns: the file
/// type's default; the output head, or a tied embedding that doubles as it, in Q6_K
/// (Q8_0 when its rows are not a multiple of the default's block); in Q4_K_M, Q6_K
/// for `attn_v` and `ffn_down` in the layers [`use_more_bits`] picks; then the
/// block fallback ([`GgmlType::fitted`]).
pub fn tensor_type(ft: FileType, role: Role, tied: bool, i: u64, n: u64, cols: u64) -> GgmlType {
    let base = ft.default_type();
    if role == Role::Vector {
        return GgmlType::F32;
    }
    if !ft.quantized() {
        return base;
    }
    let head = role == Role::Output || (tied && role == Role::TokenEmbd);
    let chosen = if head {
        if cols.is_multiple_of(base.block().0) {
            GgmlType::Q6_K
        } else {
            GgmlType::Q8_0
        }
    } else if ft == FileType::Q4KM
        && matches!(role, Role::AttnV | Role::FfnDown)
        && use_more_bits(i, n)
    {
        GgmlType::Q6_K
    } else {
        base
    };
    chosen.fitted(cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sixteen_bit_files_keep_one_type() {
        for ft in [
            FileType::Q4_0,
            FileType::Q4KM,
            FileType::BF16,
            FileType::F16,
        ] {
            assert_eq!(FileType::parse(ft.name()), Some(ft));
        }
        // (file type, role, tied, cols) -> the type llama-quantize stores.
        let cases = [
            // A 16-bit file keeps its type, even for a tied head.
            (FileType::BF16, Role::Output, true, 1024, GgmlType::BF16),
            // Norms and biases stay f32.
            (FileType::Q4_0, Role::Vector, false, 1024, GgmlType::F32),
            (FileType::Q4_0, Role::Output, false, 1024, GgmlType::Q6_K),
            // A head row that Q4_K's 256-block does not divide: Q8_0 (its 32-block does).
            (FileType::Q4KM, Role::Output, false, 1056, GgmlType::Q8_0),
            // One that not even a 32-block divides: F16.
            (FileType::Q4_0, Role::Output, false, 48, GgmlType::F16),
        ];
        for (ft, role, tied, cols, want) in cases {
            assert_eq!(
                tensor_type(ft, role, tied, 0, 1, cols),
                want,
                "{ft:?} {role:?} {cols}"
            );
        }
    }
}
