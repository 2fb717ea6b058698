//! The bench report: one serde struct that is the JSON schema, and its table rendering.
//!
//! Every output format renders from [`BenchReport`] (hyperfine's single result type):
//! `--format json` serializes it as is (contract.md's `schema_version`, `threads`,
//! `memory_bandwidth_gbps`, `results`, `fidelity`, `verdict`, plus the extra keys
//! below); the table is a Markdown-style rendering of the same values. Nothing here
//! measures anything.

use std::fmt::Write as _;

use serde::Serialize;

use super::rows::{Bandwidth, FidelityRow, KernelCheck, Peak, ResultRow};
use super::verdict::Verdict;
use crate::output;
use crate::profile::Tool;

/// Major version of the bench JSON.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BenchReport {
    pub schema_version: u32,
    pub tool: Tool,
    /// `real`, or `fake` when the test executor produced the figures (never a measurement).
    pub executor: String,
    /// When the run started, RFC 3339 UTC (`2026-12-01T03:20:00Z`).
    pub measured_at: String,
    pub host: Host,
    pub model: ModelInfo,
    pub threads: usize,
    pub quick: bool,
    pub prefill_tokens: usize,
    /// Multi-threaded read bandwidth over a buffer larger than the L3, this run.
    pub memory_bandwidth_gbps: Option<f64>,
    pub bandwidth: Option<Bandwidth>,
    /// The compute ceilings measured this run (register-only loops, all threads).
    pub peaks: Vec<Peak>,
    pub memory: MemoryUse,
    /// Every kernel variant with its correctness check outcome.
    pub kernels: Vec<KernelCheck>,
    pub results: Vec<ResultRow>,
    pub fidelity: Vec<FidelityRow>,
    /// The paired, interleaved rounds the verdict rests on.
    pub paired: Option<super::rows::PairedRun>,
    /// The verdict on edgeplan's own kernels.
    pub verdict: Verdict,
    /// `bench --engine`: the engine's own kernels on this host, and which build to
    /// deploy with that engine here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<super::engine::report::EngineReport>,
    /// How the figures were obtained and what they leave out.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Host {
    pub cpu_model: Option<String>,
    pub logical_cpus: Option<u32>,
    pub l3_bytes: u64,
    /// Where the L3 size came from: `sysfs`, `cpuid` or `default`.
    pub l3_source: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModelInfo {
    pub name: String,
    pub layers: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub vocab_size: usize,
    /// Weights of one model step (decoder linears plus lm_head).
    pub params_per_step: u64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemoryUse {
    /// The most bytes the run was sized to hold at once (weights, staging, activations,
    /// probe buffers), checked against the budget before anything was allocated.
    pub planned_peak_bytes: u64,
    /// The process's peak resident set (`VmHWM`) at the end of the run.
    pub rss_peak_bytes: Option<u64>,
    /// What the profile allows (available memory, capped by the cgroup limit).
    pub budget_bytes: Option<u64>,
}

impl BenchReport {
    /// The human rendering: a header, the results, fidelity and kernel tables, the verdict.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        self.write_header(&mut out);
        self.write_results(&mut out);
        self.write_paired(&mut out);
        self.write_fidelity(&mut out);
        self.write_verdict(&mut out);
        if let Some(engine) = &self.engine {
            out.push('\n');
            engine.write_table(&mut out);
        }
        out
    }

    /// The run: model, threads, L3, executor, bandwidth, peaks, memory.
    fn write_header(&self, out: &mut String) {
        let bw = self
            .bandwidth
            .as_ref()
            .map_or("not measured".to_string(), |b| {
                format!(
                    "{:.1} GB/s best (median {:.1}, min {:.1}; {} buffer)",
                    b.gbps,
                    b.gbps_median,
                    b.gbps_min,
                    output::bytes(b.buffer_bytes)
                )
            });
        let _ = writeln!(
            out,
            "edgeplan bench: {} ({} layers), {} threads{}, L3 {} ({})",
            self.model.name,
            self.model.layers,
            self.threads,
            if self.quick { ", quick" } else { "" },
            output::bytes(self.host.l3_bytes),
            self.host.l3_source
        );
        let _ = writeln!(
            out,
            "host: {}, run started {}, {} {}",
            self.host.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.measured_at,
            self.tool.name,
            self.tool.version
        );
        if self.executor != "real" {
            let _ = writeln!(
                out,
                "executor: {} (figures are NOT measurements)",
                self.executor
            );
        }
        let _ = writeln!(out, "memory read bandwidth: {bw}");
        let peaks: Vec<String> = self
            .peaks
            .iter()
            .map(|p| match (p.tmacs, &p.skipped) {
                (Some(t), _) if p.emulated.is_some() => {
                    format!(
                        "{} {t:.3} TMAC/s (emulated, not a measurement)",
                        p.unit.as_str()
                    )
                }
                (Some(t), _) => format!("{} {t:.3} TMAC/s", p.unit.as_str()),
                (None, Some(why)) => format!("{} skipped ({why})", p.unit.as_str()),
                (None, None) => format!("{} -", p.unit.as_str()),
            })
            .collect();
        let _ = writeln!(out, "compute peaks: {}", peaks.join("; "));
        let _ = writeln!(
            out,
            "memory: planned peak {}, resident peak {}, budget {}",
            output::bytes(self.memory.planned_peak_bytes),
            self.memory
                .rss_peak_bytes
                .map_or("unknown".to_string(), output::bytes),
            self.memory
                .budget_bytes
                .map_or("an unknown budget".to_string(), output::bytes)
        );
        out.push('\n');
    }

    /// The results table and who won each race.
    fn write_results(&self, out: &mut String) {
        let mut table = output::table();
        table.set_header(vec![
            "path", "phase", "tokens", "kernel", "ms/step", "min-max", "tok/s", "GB/s", "% bw",
            "TMAC/s", "% peak", "layers",
        ]);
        for r in &self.results {
            table.add_row(vec![
                r.path.to_string(),
                r.phase.name().to_string(),
                r.tokens.to_string(),
                r.kernel.clone(),
                output::ms(r.step_ms),
                format!(
                    "{}-{}",
                    output::ms(r.step_ms_min),
                    output::ms(r.step_ms_max)
                ),
                format!("{:.1}", r.tokens_per_s),
                format!("{:.1}", r.weight_gbps),
                output::percent(r.bandwidth_pct),
                format!("{:.3}", r.tmacs),
                output::percent(r.peak_pct),
                format!("{}/{}", r.layers_measured, self.model.layers),
            ]);
        }
        let _ = writeln!(out, "{table}");
        for r in self.results.iter().filter(|r| !r.alternatives.is_empty()) {
            let others: Vec<String> = r
                .alternatives
                .iter()
                .map(|a| format!("{} {} ms", a.kernel, output::ms(a.step_ms)))
                .collect();
            let _ = writeln!(
                out,
                "{} {}: {} won the race against {}",
                r.path,
                r.phase.name(),
                r.kernel,
                others.join(", ")
            );
        }
        out.push('\n');
    }

    /// The paired rounds: each comparison's ratio, interval and judgement.
    fn write_paired(&self, out: &mut String) {
        let Some(p) = &self.paired else {
            return;
        };
        let _ = writeln!(
            out,
            "paired rounds: {} in {:.1} s (stopped: {}); ratio = planned / rival step time per round, median and {:.0}% sign interval, tie band {:.0}%",
            p.rounds,
            p.seconds,
            match p.stopped {
                super::rows::Stop::Decided => "decided",
                super::rows::Stop::Budget => "time budget spent",
                super::rows::Stop::Rounds => "round limit",
            },
            p.confidence * 100.0,
            p.tie_band_pct
        );
        if p.comparisons.is_empty() {
            let _ = writeln!(
                out,
                "(no planned CPU path to compare: the rows above are for information)"
            );
            out.push('\n');
            return;
        }
        let mut table = output::table();
        table.set_header(vec![
            "phase",
            "planned",
            "rival",
            "ratio",
            "95% interval",
            "judgement",
        ]);
        for c in &p.comparisons {
            table.add_row(vec![
                c.phase.name().to_string(),
                c.planned.to_string(),
                c.rival.to_string(),
                format!("{:.3}", c.ratio.median),
                format!("{:.3}-{:.3}", c.ratio.low, c.ratio.high),
                match c.judgement {
                    super::paired::Judgement::Holds => "holds (fastest or tied)",
                    super::paired::Judgement::Beaten => "beaten",
                    super::paired::Judgement::Undecided => "undecided",
                }
                .to_string(),
            ]);
        }
        let _ = writeln!(out, "{table}\n");
    }

    /// The fidelity table, when fidelity was measured.
    fn write_fidelity(&self, out: &mut String) {
        if !self.fidelity.is_empty() {
            let mut table = output::table();
            table.set_header(vec![
                "path",
                "scheme",
                "kernel",
                "rel error",
                "cosine",
                "top-1 agreement",
                "layer",
            ]);
            for f in &self.fidelity {
                table.add_row(vec![
                    f.path.to_string(),
                    f.scheme.clone(),
                    f.kernel.clone(),
                    format!("{:.4}", f.rel_error),
                    format!("{:.5}", f.cosine),
                    format!(
                        "{:.1}% of {} (vocab {})",
                        f.top1_agreement * 100.0,
                        f.top1_states,
                        f.top1_vocab
                    ),
                    f.layer.clone(),
                ]);
            }
            let _ = writeln!(out, "{table}\n");
        }
    }

    /// Failed kernels, the verdict and the notes.
    fn write_verdict(&self, out: &mut String) {
        let problems: Vec<&KernelCheck> = self
            .kernels
            .iter()
            .filter(|k| k.status == "failed")
            .collect();
        for k in problems {
            let _ = writeln!(
                out,
                "kernel {} FAILED its correctness check and was not timed: {}",
                k.name,
                k.detail.as_deref().unwrap_or("no detail")
            );
        }
        let _ = writeln!(out, "{}", self.verdict.summary_line());
        for line in &self.verdict.notes {
            let _ = writeln!(out, "  note: {line}");
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
    }
}
