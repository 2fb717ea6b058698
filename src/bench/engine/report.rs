//! The `engine` section of the bench report: the engine's own kernels, timed on this
//! host, beside edgeplan's kernels and the rooflines of the same run, and the verdict
//! for that engine. Values only; [`EngineReport::write_table`] renders them.

use std::fmt::Write as _;

use serde::Serialize;

use super::protocol::EngineKernel;
use crate::bench::backend::{KernelPath, Phase};
use crate::bench::paired::{Interval, Judgement};
use crate::bench::rows::Stop;
use crate::bench::verdict::Status;
use crate::output;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EngineReport {
    /// `vllm` or `llama.cpp`.
    pub engine: String,
    /// The engine's version as it reports it (`0.32.0`; llama.cpp: the build number).
    pub version: String,
    /// What else the figures depend on (`torch 2.13.0+cu130`, `python 3.11.7`, a build
    /// commit).
    pub runtime: Vec<String>,
    /// The program that ran the engine's kernels (the Python interpreter, `llama-bench`).
    pub program: String,
    pub threads: usize,
    /// Every build asked for: the kernel the engine picked, its check, or why it was not
    /// timed.
    pub builds: Vec<EngineBuildRow>,
    pub layers_timed_decode: usize,
    pub layers_timed_prefill: usize,
    /// Seconds the engine spent preparing its weights before the first round.
    pub setup_s: f64,
    pub results: Vec<EngineRow>,
    pub paired: EnginePaired,
    pub verdict: EngineVerdict,
    pub notes: Vec<String>,
    /// Each side's figures against a short run of that side alone (absent when the
    /// solo runs were not made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solo: Option<super::solo::SoloCheck>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EngineBuildRow {
    /// The engine's name for the build (`w4a16`, `bf16`, `w4a8`; `q4_0`, `q4_k_m`).
    pub build: String,
    /// The catalog path that deploys it (`w4a16-tinygemm`, `gguf-q4_0`).
    pub catalog_path: String,
    pub kernel: Option<EngineKernel>,
    pub timed: bool,
    /// Why it was not timed (the engine would not run it here, or its check failed).
    pub skipped: Option<String>,
}

/// One build in one phase, over the paired rounds.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EngineRow {
    pub build: String,
    pub catalog_path: String,
    pub phase: Phase,
    pub tokens: usize,
    /// The op the engine ran (`cpu_gemm_wna16`, `onednn_mm`, ...).
    pub kernel: String,
    /// Milliseconds per model step (linear layers only): median and 95 % sign interval
    /// over the rounds.
    pub step_ms: Interval,
    pub tokens_per_s: f64,
    /// Weight bytes one step reads, as the engine stores them.
    pub weight_bytes: u64,
    pub weight_gbps: f64,
    /// `weight_gbps` as a share of the memory bandwidth measured in this run (decode).
    pub bandwidth_pct: Option<f64>,
    pub macs: u64,
    pub tmacs: f64,
    /// `tmacs` as a share of the peak of the unit edgeplan's kernel for the same path
    /// used (prefill).
    pub peak_pct: Option<f64>,
    /// edgeplan's kernel for the same weight path, from this run.
    pub own_path: Option<KernelPath>,
    pub own_kernel: Option<String>,
    pub own_step_ms: Option<f64>,
    /// The engine's speed as a share of edgeplan's kernel's (`own_step_ms / step_ms`).
    pub vs_own_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EngineComparison {
    pub phase: Phase,
    pub planned: String,
    pub rival: String,
    /// Per-round `planned / rival` step time: median and 95 % sign interval.
    pub ratio: Interval,
    pub judgement: Judgement,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EnginePaired {
    pub rounds: usize,
    pub seconds: f64,
    pub stopped: Stop,
    pub confidence: f64,
    pub tie_band_pct: f64,
    pub comparisons: Vec<EngineComparison>,
}

/// Which build to deploy for this engine on this host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EngineVerdict {
    /// The planned catalog path, or `null` when there is no plan the engine's CPU
    /// kernels can check.
    pub planned: Option<String>,
    pub planned_build: Option<String>,
    pub priority: crate::profile::Priority,
    pub status: Status,
    /// The build to deploy with this engine on this host, and its catalog path.
    pub recommended_build: Option<String>,
    pub recommended_path: Option<String>,
    pub reason: String,
    /// Set when an interval is wider than 10 % of its median.
    pub noisy: bool,
}

impl EngineVerdict {
    pub fn summary_line(&self, engine: &str) -> String {
        let word = match self.status {
            Status::Confirmed => "CONFIRMED",
            Status::Contradicted => "CONTRADICTED",
            Status::Inconclusive => "INCONCLUSIVE",
            Status::NotApplicable => "NOT APPLICABLE",
        };
        match &self.planned {
            Some(p) => format!(
                "engine verdict ({engine}): plan {p} (priority {}) {word}: {}",
                self.priority, self.reason
            ),
            None => format!("engine verdict ({engine}): {word}: {}", self.reason),
        }
    }
}

impl EngineReport {
    /// The engine section of the table output.
    pub fn write_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "engine: {} {} ({}), {} threads, {} decode / {} prefill layers timed, setup {:.1} s",
            self.engine,
            self.version,
            self.runtime.join(", "),
            self.threads,
            self.layers_timed_decode,
            self.layers_timed_prefill,
            self.setup_s
        );
        for b in &self.builds {
            let kernel = b.kernel.as_ref().map_or("-".to_string(), |k| {
                format!("{} ({}), check {}", k.kernel_class, k.op, k.check)
            });
            let state = match &b.skipped {
                Some(why) => format!("not timed: {why}"),
                None => "timed".to_string(),
            };
            let _ = writeln!(out, "  {} [{}]: {kernel}; {state}", b.build, b.catalog_path);
        }
        let mut table = output::table();
        table.set_header(vec![
            "build",
            "phase",
            "ms/step",
            "95% interval",
            "tok/s",
            "% bw",
            "% peak",
            "vs own",
        ]);
        for r in &self.results {
            table.add_row(vec![
                r.build.clone(),
                r.phase.name().to_string(),
                output::ms(r.step_ms.median),
                format!(
                    "{}-{}",
                    output::ms(r.step_ms.low),
                    output::ms(r.step_ms.high)
                ),
                format!("{:.1}", r.tokens_per_s),
                output::percent(r.bandwidth_pct),
                output::percent(r.peak_pct),
                output::percent(r.vs_own_pct),
            ]);
        }
        let _ = writeln!(out, "{table}");
        for c in &self.paired.comparisons {
            let _ = writeln!(
                out,
                "  {} {} / {}: {:.3} [{:.3}, {:.3}] over {} rounds: {}",
                c.phase.name(),
                c.planned,
                c.rival,
                c.ratio.median,
                c.ratio.low,
                c.ratio.high,
                c.ratio.n,
                match c.judgement {
                    Judgement::Holds => "holds",
                    Judgement::Beaten => "beaten",
                    Judgement::Undecided => "undecided",
                }
            );
        }
        if let Some(solo) = &self.solo {
            let _ = writeln!(out, "{}", solo.summary_line());
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        let _ = writeln!(out, "{}", self.verdict.summary_line(&self.engine));
    }
}
