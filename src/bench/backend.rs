//! The seam between `bench` and the kernels: what a GEMM backend must offer.
//!
//! `bench` never calls a kernel directly. It asks a [`Backend`] for its kernel variants
//! (each with an availability verdict), has it check a variant against the scalar
//! reference, pack weights for a path, prepare activations, run one GEMM with a chosen
//! variant, and run a closure on every worker of its thread pool (for the bandwidth and
//! peak probes, so they use the same threads as the GEMMs). The real backend adapts
//! `crate::kernels`; the fake one (`fake.rs`) does tiny scalar work so the report and the
//! verdict can be tested without timing noise.

use serde::Serialize;

pub use crate::kernels::registry::Unit;
/// The path, phase and scheme vocabulary is the kernels' own.
pub use crate::kernels::registry::{KernelPath, Phase};
pub use crate::kernels::weights::Scheme;

/// One kernel variant as `bench` sees it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelInfo {
    /// The name `--kernel` takes (e.g. `w4a8-avx2`).
    pub name: String,
    pub path: KernelPath,
    /// The phases this variant serves (a GEMV may serve decode only).
    pub phases: Vec<Phase>,
    /// The unit whose peak is this variant's roofline.
    pub unit: Unit,
    /// `None` when this host can run it, else why not (missing CPU or OS feature).
    pub unavailable: Option<String>,
    /// Preference when several variants could serve a phase: higher is tried first (the
    /// kernels' registry rank, one meaning everywhere).
    pub rank: u32,
}

impl KernelInfo {
    pub fn serves(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }
}

/// Runs a closure on every worker of a pool and waits for all of them.
pub trait Parallel {
    /// Number of workers `run` uses.
    fn workers(&self) -> usize;
    /// Calls `f(worker, workers)` once on each worker, concurrently.
    fn run(&self, f: &(dyn Fn(usize, usize) + Sync));
}

/// What `bench` needs from a kernel library.
pub trait Backend: Parallel {
    /// Packed weights, ready for the GEMMs of one path.
    type Weights: Send + Sync;
    /// Activations prepared for one path (quantized for W4A8, bf16 for the others).
    type Input;

    /// Every variant this build knows, available or not.
    fn kernels(&self) -> Vec<KernelInfo>;
    /// Runs `kernel` on small shapes against the scalar reference; `Err` says what failed.
    fn verify(&self, kernel: &KernelInfo) -> Result<(), String>;
    /// Packs `w` (`n` rows of `k`, row-major f32) for `path`.
    fn pack(
        &self,
        path: KernelPath,
        w: &[f32],
        n: usize,
        k: usize,
        scheme: Scheme,
    ) -> anyhow::Result<Self::Weights>;
    /// Packed weights of the right layout and size holding arbitrary valid codes, scales
    /// and zeros: timing buffers that need no f32 original (quantizing a 151936-row
    /// lm_head from f32 would take longer than timing it).
    fn synthetic(
        &self,
        path: KernelPath,
        n: usize,
        k: usize,
        seed: u64,
    ) -> anyhow::Result<Self::Weights>;
    /// A copy of packed weights in fresh memory (so the rotation never reuses a buffer).
    fn duplicate(&self, w: &Self::Weights) -> Self::Weights;
    /// Bytes the packed weights occupy (what a decode step streams from memory).
    fn weight_bytes(&self, w: &Self::Weights) -> usize;
    /// Prepares `x` (`m` rows of `k`) as input of `path`.
    fn input(&self, path: KernelPath, x: &[f32], m: usize, k: usize)
    -> anyhow::Result<Self::Input>;
    /// `out[m][n] = x · wᵀ` with the given variant, on all workers.
    fn gemm(
        &self,
        kernel: &KernelInfo,
        w: &Self::Weights,
        x: &Self::Input,
        out: &mut [f32],
    ) -> anyhow::Result<()>;
    /// Whether the AMX tile data permission was granted (requested once by the kernels).
    fn amx_ready(&self) -> Result<(), String>;
    /// `real`, or `fake` for the simulated test executor (the report's `executor`).
    fn executor(&self) -> &'static str;
    /// Bytes of the bandwidth probe's buffer on a host with an L3 of `l3_bytes`.
    fn bandwidth_bytes(&self, l3_bytes: u64) -> u64;
    /// `Some(why)` when this backend's compute peaks are not measured at all.
    fn peaks_skipped(&self) -> Option<&'static str>;
}
