//! The rows of a bench run: what the stages produce and both the verdict and the report
//! read (so neither imports the other). Each is part of the bench JSON as is.

use serde::Serialize;

use super::backend::{KernelPath, Phase, Unit};

#[derive(Debug, Clone, Serialize)]
pub struct Bandwidth {
    /// The best repeat: the roofline.
    pub gbps: f64,
    pub gbps_median: f64,
    pub gbps_min: f64,
    pub buffer_bytes: u64,
    pub repeats: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Peak {
    pub unit: Unit,
    /// Tera multiply-accumulates per second, all threads; `null` when skipped.
    pub tmacs: Option<f64>,
    /// Why it was not measured (ISA or OS permission missing).
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelCheck {
    pub name: String,
    pub path: KernelPath,
    pub phases: Vec<Phase>,
    pub unit: Unit,
    /// `passed`, `failed`, `unavailable` or `not_run` (not needed for the chosen paths).
    pub status: String,
    pub detail: Option<String>,
}

/// One path in one phase: the contract's `results[]` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultRow {
    pub path: KernelPath,
    pub phase: Phase,
    /// Tokens per step (1 for decode).
    pub tokens: usize,
    pub kernel: String,
    /// Median milliseconds per model step (GEMMs only).
    pub step_ms: f64,
    pub step_ms_min: f64,
    pub step_ms_max: f64,
    /// Median absolute deviation of the step time.
    pub step_ms_mad: f64,
    pub repeats: usize,
    /// Tokens per second from the GEMMs alone: an upper bound for the whole model.
    pub tokens_per_s: f64,
    /// Weight bytes one step reads.
    pub weight_bytes: u64,
    /// Weight bytes per second (decode: the streaming rate that matters).
    pub weight_gbps: f64,
    /// `weight_gbps` as a share of the measured memory bandwidth (decode).
    pub bandwidth_pct: Option<f64>,
    /// Multiply-accumulates per step.
    pub macs: u64,
    pub tmacs: f64,
    /// The unit whose peak is the roofline, and the share of it reached.
    pub peak_unit: Unit,
    pub peak_pct: Option<f64>,
    /// Decoder layers timed (the rest of the step is extrapolated from them).
    pub layers_measured: usize,
    /// Weight bytes the timed rotation walks through (decode: larger than the L3).
    pub working_set_bytes: u64,
    /// The other verified kernels raced for this path and phase, slowest last.
    pub alternatives: Vec<Alternative>,
}

/// A kernel that lost the race for a path and phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternative {
    pub kernel: String,
    pub step_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityRow {
    pub path: KernelPath,
    /// `symmetric`, `asymmetric` (int4 weights) or `bf16`.
    pub scheme: String,
    pub kernel: String,
    /// ‖y − y_f32‖ / ‖y_f32‖ over one layer's output.
    pub rel_error: f64,
    pub cosine: f64,
    /// Share of hidden states whose argmax over the lm_head logits matches f32.
    pub top1_agreement: f64,
    /// Rows of the random lm_head used for the top-1 check (may be below the vocab).
    pub top1_vocab: usize,
    pub top1_states: usize,
    /// The layer whose output was compared, as `name NxK`.
    pub layer: String,
}
