//! The rows of a bench run: what the stages produce and both the verdict and the report
//! read (so neither imports the other). Each is part of the bench JSON as is.

use serde::Serialize;

use super::backend::{KernelPath, Phase, Unit};
use super::paired::Interval;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Bandwidth {
    /// The best repeat: the roofline.
    pub gbps: f64,
    pub gbps_median: f64,
    pub gbps_min: f64,
    pub buffer_bytes: u64,
    pub repeats: usize,
    /// The probe's GB/s over the paired rounds (median, 95 % interval), when they ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<Interval>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Peak {
    pub unit: Unit,
    /// Tera multiply-accumulates per second, all threads; `null` when skipped.
    pub tmacs: Option<f64>,
    /// Why it was not measured (ISA or OS permission missing).
    pub skipped: Option<String>,
    /// Set when the loop ran under user-mode emulation (qemu-user): why the figure is not
    /// a measurement of the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulated: Option<String>,
    /// The loop re-run in every paired round (units of the prefill rows): its TMAC/s over
    /// the rounds (median, 95 % interval), the roofline of each round's prefill share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<Interval>,
}

impl Peak {
    /// A unit measured at `tmacs` (with why it is not the CPU's figure, under emulation).
    pub fn measured(unit: Unit, tmacs: f64, emulated: Option<String>) -> Peak {
        Peak {
            unit,
            tmacs: Some(tmacs),
            skipped: None,
            emulated,
            paired: None,
        }
    }

    /// A unit not measured, and why.
    pub fn skipped(unit: Unit, why: impl Into<String>) -> Peak {
        Peak {
            unit,
            tmacs: None,
            skipped: Some(why.into()),
            emulated: None,
            paired: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
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
    /// `weight_gbps` as a share of the measured memory bandwidth (decode): after the
    /// paired rounds, the median of the per-round shares (each step against the probe
    /// run in the same round).
    pub bandwidth_pct: Option<f64>,
    /// The per-round bandwidth share in percent (median, 95 % interval), decode only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth_pct_paired: Option<Interval>,
    /// Paired rounds this row's step time comes from (0: the race's repeats only).
    pub rounds: usize,
    /// Multiply-accumulates per step.
    pub macs: u64,
    pub tmacs: f64,
    /// The unit whose peak is the roofline, and the share of it reached.
    pub peak_unit: Unit,
    /// `tmacs` as a share of `peak_unit`'s peak: after the paired rounds (prefill), the
    /// median of the per-round shares (each step against the peak loop run in the same
    /// round); otherwise against the peak measured at the start of the run.
    pub peak_pct: Option<f64>,
    /// The per-round peak share in percent (median, 95 % interval), prefill only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_pct_paired: Option<Interval>,
    /// Decoder layers timed (the rest of the step is extrapolated from them).
    pub layers_measured: usize,
    /// Weight bytes the timed rotation walks through (decode: larger than the L3).
    pub working_set_bytes: u64,
    /// The other verified kernels raced for this path and phase, slowest last.
    pub alternatives: Vec<Alternative>,
}

/// A kernel that lost the race for a path and phase.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Alternative {
    pub kernel: String,
    pub step_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
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

/// The planned path against one rival in one phase, over the paired rounds.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    pub phase: Phase,
    pub planned: KernelPath,
    pub rival: KernelPath,
    /// Per-round `planned / rival` step time: median and 95 % sign interval.
    pub ratio: Interval,
    pub judgement: super::paired::Judgement,
}

/// How the paired rounds went, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PairedRun {
    pub rounds: usize,
    pub seconds: f64,
    /// `decided`, `budget` or `rounds`.
    pub stopped: Stop,
    pub confidence: f64,
    pub tie_band_pct: f64,
    pub comparisons: Vec<Comparison>,
}

/// Why the rounds stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Every comparison was decided or narrower than the tie band.
    Decided,
    /// The time budget was spent.
    Budget,
    /// The round limit (`--rounds`, or the effort's maximum) was reached.
    Rounds,
}

#[cfg(test)]
impl ResultRow {
    /// A row for tests: `ms` per step with `mad` spread, nothing else measured.
    pub(crate) fn example(
        path: KernelPath,
        phase: Phase,
        ms: f64,
        mad: f64,
        kernel: &str,
    ) -> ResultRow {
        ResultRow {
            path,
            phase,
            tokens: if phase == Phase::Decode { 1 } else { 128 },
            kernel: kernel.into(),
            step_ms: ms,
            step_ms_min: ms - mad,
            step_ms_max: ms + mad,
            step_ms_mad: mad,
            repeats: 5,
            tokens_per_s: 1000.0 / ms,
            weight_bytes: 0,
            weight_gbps: 0.0,
            bandwidth_pct: None,
            bandwidth_pct_paired: None,
            rounds: 0,
            macs: 0,
            tmacs: 0.0,
            peak_unit: Unit::Scalar,
            peak_pct: None,
            peak_pct_paired: None,
            layers_measured: 28,
            working_set_bytes: 0,
            alternatives: Vec::new(),
        }
    }
}
