//! W4A8 (int4 weights × int8 activations) on AVX: `avx512vnni.rs` (zmm `vpdpbusd`) and
//! `avx2.rs` (AVX2 `vpmaddubsw`+`vpmaddwd`, and AVX-VNNI ymm `vpdpbusd`), `gemm_avx2.rs`
//! (the AVX2 prefill GEMM). The AMX-INT8
//! kernel is in `../amx/w4a8.rs`. All of them run through the one work splitter
//! (`kernels::panel_split::w4a8_panels`).

pub(crate) mod avx2;
pub(crate) mod avx512vnni;
pub(crate) mod gemm_avx2;
