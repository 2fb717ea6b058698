//! The bench report: one serde struct that is the JSON schema, and its table rendering.
//!
//! Every output format renders from [`BenchReport`] (hyperfine's single result type):
//! `--format json` serializes it as is (contract.md's `schema_version`, `threads`,
//! `memory_bandwidth_gbps`, `results`, `fidelity`, `verdict`, plus the extra keys
//! below); the table is a Markdown-style rendering of the same values. Nothing here
//! measures anything.

use std::fmt::Write as _;

use serde::Serialize;

use super::backend::Phase;
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
        self.to_table_at(output::width())
    }

    /// [`BenchReport::to_table`] laid out for `width` columns.
    pub fn to_table_at(&self, width: usize) -> String {
        let mut out = String::new();
        self.write_header(&mut out, width);
        self.write_results(&mut out, width);
        self.write_paired(&mut out, width);
        self.write_fidelity(&mut out, width);
        self.write_verdict(&mut out, width);
        if let Some(engine) = &self.engine {
            out.push('\n');
            engine.write_table(&mut out);
        }
        out
    }

    /// The run: model, threads, L3, executor, bandwidth, peaks, memory.
    fn write_header(&self, out: &mut String, width: usize) {
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
        let first = format!(
            "edgeplan bench: {} ({} layers), {} threads{}, L3 {} ({})",
            self.model.name,
            self.model.layers,
            self.threads,
            if self.quick { ", quick" } else { "" },
            output::bytes(self.host.l3_bytes),
            self.host.l3_source
        );
        out.push_str(&output::wrapped(&first, width, "", "  "));
        let host = format!(
            "host: {}, run started {}, {} {}",
            self.host.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.measured_at,
            self.tool.name,
            self.tool.version
        );
        out.push_str(&output::wrapped(&host, width, "", "  "));
        if self.executor != "real" {
            let _ = writeln!(
                out,
                "executor: {} (figures are NOT measurements)",
                self.executor
            );
        }
        let bw = format!("memory read bandwidth: {bw}");
        out.push_str(&output::wrapped(&bw, width, "", "  "));
        // Units skipped for the same reason are named once, after it.
        let mut peaks: Vec<String> = Vec::new();
        let mut skipped: Vec<(&str, Vec<&str>)> = Vec::new();
        for p in &self.peaks {
            match (p.tmacs, &p.skipped) {
                (Some(t), _) if p.emulated.is_some() => peaks.push(format!(
                    "{} {t:.3} TMAC/s (emulated, not a measurement)",
                    p.unit.as_str()
                )),
                (Some(t), _) => peaks.push(format!("{} {t:.3} TMAC/s", p.unit.as_str())),
                (None, Some(why)) => match skipped.iter_mut().find(|(w, _)| w == why) {
                    Some((_, units)) => units.push(p.unit.as_str()),
                    None => skipped.push((why, vec![p.unit.as_str()])),
                },
                (None, None) => peaks.push(format!("{} -", p.unit.as_str())),
            }
        }
        for (why, units) in skipped {
            peaks.push(format!("{} skipped ({why})", units.join(", ")));
        }
        let peaks = format!("compute peaks: {}", peaks.join("; "));
        out.push_str(&output::wrapped(&peaks, width, "", "  "));
        let memory = format!(
            "memory: planned peak {}, resident peak {}, budget {}",
            output::bytes(self.memory.planned_peak_bytes),
            self.memory
                .rss_peak_bytes
                .map_or("unknown".to_string(), output::bytes),
            self.memory
                .budget_bytes
                .map_or("an unknown budget".to_string(), output::bytes)
        );
        out.push_str(&output::wrapped(&memory, width, "", "  "));
        out.push('\n');
    }

    /// The results, one table per phase (decode against the bandwidth roofline, prefill
    /// against the compute peak), and who won each race.
    fn write_results(&self, out: &mut String, width: usize) {
        for phase in [Phase::Decode, Phase::Prefill] {
            let rows: Vec<&ResultRow> = self.results.iter().filter(|r| r.phase == phase).collect();
            if rows.is_empty() {
                continue;
            }
            out.push_str(&output::wrapped(
                &self.phase_caption(phase, &rows),
                width,
                "",
                "  ",
            ));
            let mut table = output::table_at(width);
            let (roof, share) = match phase {
                Phase::Decode => ("GB/s", "% bw"),
                Phase::Prefill => ("TMAC/s", "% peak"),
            };
            table.set_header(vec![
                "path", "kernel", "ms/step", "min-max", "tok/s", roof, share,
            ]);
            for r in rows {
                let (roof, share) = match phase {
                    Phase::Decode => (format!("{:.1}", r.weight_gbps), bandwidth_cell(r)),
                    Phase::Prefill => (format!("{:.3}", r.tmacs), output::percent(r.peak_pct)),
                };
                table.add_row(vec![
                    r.path.to_string(),
                    output::cell(&r.kernel),
                    output::ms(r.step_ms),
                    format!(
                        "{}-{}",
                        output::ms(r.step_ms_min),
                        output::ms(r.step_ms_max)
                    ),
                    format!("{:.1}", r.tokens_per_s),
                    roof,
                    share,
                ]);
            }
            let _ = writeln!(out, "{table}\n");
        }
        if self.results.iter().any(over_the_roofline) {
            out.push_str(&output::wrapped(OVER_THE_ROOFLINE, width, "", "  "));
        }
        let raced: Vec<&ResultRow> = self
            .results
            .iter()
            .filter(|r| !r.alternatives.is_empty())
            .collect();
        for r in &raced {
            let others: Vec<String> = r
                .alternatives
                .iter()
                .map(|a| format!("{} {} ms", a.kernel, output::ms(a.step_ms)))
                .collect();
            let line = format!(
                "{} {}: {} won the race against {}",
                r.path,
                r.phase.name(),
                r.kernel,
                others.join(", ")
            );
            out.push_str(&output::wrapped(&line, width, "", "  "));
        }
        if !raced.is_empty() {
            out.push('\n');
        }
    }

    /// The line above a phase's table: tokens per step and the layers timed.
    fn phase_caption(&self, phase: Phase, rows: &[&ResultRow]) -> String {
        let tokens = rows.first().map_or(0, |r| r.tokens);
        let mut layers: Vec<usize> = rows.iter().map(|r| r.layers_measured).collect();
        layers.dedup();
        let timed = match layers.as_slice() {
            [one] => format!("{one} of {} layers timed", self.model.layers),
            _ => format!(
                "{} layers, some timed fewer (JSON: layers_measured)",
                self.model.layers
            ),
        };
        let roof = match phase {
            Phase::Decode => "% bw: of the memory read bandwidth",
            Phase::Prefill => "% peak: of the kernel's compute peak",
        };
        let tokens = if tokens == 1 {
            "1 token".to_string()
        } else {
            format!("{tokens} tokens")
        };
        format!("{} ({tokens} per step, {timed}; {roof}):", phase.name())
    }

    /// The paired rounds: each comparison's ratio, interval and judgement.
    fn write_paired(&self, out: &mut String, width: usize) {
        let Some(p) = &self.paired else {
            return;
        };
        let line = format!(
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
        out.push_str(&output::wrapped(&line, width, "", "  "));
        if p.comparisons.is_empty() {
            let _ = writeln!(
                out,
                "(no planned CPU path to compare: the rows above are for information)"
            );
            out.push('\n');
            return;
        }
        let mut table = output::table_at(width);
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

    /// The fidelity table, when fidelity was measured; the layer and the top-1 sample
    /// sizes go in the caption when every row shares them.
    fn write_fidelity(&self, out: &mut String, width: usize) {
        let Some(first) = self.fidelity.first() else {
            return;
        };
        let shared = self.fidelity.iter().all(|f| {
            (&f.layer, f.top1_states, f.top1_vocab)
                == (&first.layer, first.top1_states, first.top1_vocab)
        });
        let mut header = vec!["path", "scheme", "kernel", "rel error", "cosine", "top-1"];
        if shared {
            let caption = format!(
                "fidelity (layer {}; top-1 agreement over {} hidden states, vocab {}):",
                first.layer, first.top1_states, first.top1_vocab
            );
            out.push_str(&output::wrapped(&caption, width, "", "  "));
        } else {
            header.push("layer");
        }
        let mut table = output::table_at(width);
        table.set_header(header);
        for f in &self.fidelity {
            let top1 = if shared {
                format!("{:.1}%", f.top1_agreement * 100.0)
            } else {
                format!(
                    "{:.1}% of {} (vocab {})",
                    f.top1_agreement * 100.0,
                    f.top1_states,
                    f.top1_vocab
                )
            };
            let mut row = vec![
                f.path.to_string(),
                output::cell(&f.scheme),
                output::cell(&f.kernel),
                format!("{:.4}", f.rel_error),
                format!("{:.5}", f.cosine),
                top1,
            ];
            if !shared {
                row.push(output::cell(&f.layer));
            }
            table.add_row(row);
        }
        let _ = writeln!(out, "{table}\n");
    }

    /// Failed kernels, the verdict and the notes, each wrapped with a hanging indent.
    fn write_verdict(&self, out: &mut String, width: usize) {
        for k in self.kernels.iter().filter(|k| k.status == "failed") {
            let line = format!(
                "kernel {} FAILED its correctness check and was not timed: {}",
                k.name,
                k.detail.as_deref().unwrap_or("no detail")
            );
            out.push_str(&output::wrapped(&line, width, "", "  "));
        }
        for line in self.verdict.summary_line().lines() {
            out.push_str(&output::wrapped(line, width, "", "  "));
        }
        for line in &self.verdict.notes {
            out.push_str(&output::wrapped(line, width, "  note: ", "        "));
        }
        for note in &self.notes {
            out.push_str(&output::wrapped(note, width, "note: ", "      "));
        }
    }
}

/// What a decode `% bw` over 100 means, said under the tables when one is.
pub const OVER_THE_ROOFLINE: &str = "* over 100 %: the decode read its weights faster than the bandwidth probe read its buffer in the same rounds. No kernel reads memory faster than the memory delivers: the probe under-reads on this host (its access pattern, or a probe pass slowed by other load), so treat the share as 100 % and the probe as a lower bound";

/// Whether a row's bandwidth share is over the roofline.
fn over_the_roofline(r: &ResultRow) -> bool {
    r.phase == Phase::Decode && r.bandwidth_pct.is_some_and(|p| p > 100.5)
}

/// The `% bw` cell: the share, marked `*` when over 100 (see [`OVER_THE_ROOFLINE`]).
fn bandwidth_cell(r: &ResultRow) -> String {
    let shown = output::percent(r.bandwidth_pct);
    if over_the_roofline(r) {
        format!("{shown}*")
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::backend::KernelPath;

    #[test]
    fn a_decode_share_over_100_is_marked_and_prefill_never() {
        let mut row = ResultRow::example(KernelPath::W4A8, Phase::Decode, 10.0, 0.1, "k");
        row.bandwidth_pct = Some(99.6);
        assert_eq!(bandwidth_cell(&row), "100%", "rounds to 100, not over it");
        row.bandwidth_pct = Some(108.0);
        assert_eq!(bandwidth_cell(&row), "108%*");
        assert!(over_the_roofline(&row));
        row.phase = Phase::Prefill;
        assert!(!over_the_roofline(&row));
        row.bandwidth_pct = None;
        assert_eq!(bandwidth_cell(&row), "-");
        assert!(OVER_THE_ROOFLINE.starts_with("* over 100 %"));
    }
}
