//! Bundled int4 GEMM kernels (W4A8, W4A16, bf16) with scalar references.
//! (Skeleton: filled in by the kernels work.)
