//! `bench --engine vllm|llama.cpp`: time the engine's own kernels on the model's shapes
//! on this host, beside edgeplan's kernels, and say which build to deploy for that
//! engine here.
//!
//! The engine runs in its own process (a [`protocol::Launcher`]: the vLLM harness under
//! the user's Python, `llama-bench`, or the fake engine tests use) and reports paired,
//! interleaved rounds: in each round every build it can run here does one decode step
//! and one prefill step, in a random order. The statistics are bench's own
//! ([`crate::bench::paired`]): per-round ratios of the planned build's step time to each
//! rival's, their median and 95 % sign interval, the fixed 3 % tie band; the rounds stop
//! when every comparison is decided or the budget is spent. The roofline and edgeplan's
//! own kernels come from the same bench run ([`BenchReport`]), so each engine figure is
//! also a share of what this host can do.
//!
//! The verdict rests on decode, the phase that sets generation speed: at speed priority
//! the plan is confirmed when its build holds against every rival, contradicted when a
//! rival beats it beyond the band (that rival is then the build to deploy); at fidelity
//! priority a build that keeps more bits and is not slower is the one to deploy.

pub mod fake;
pub mod gguf;
pub mod llama_cpp;
pub mod protocol;
pub mod report;
pub mod solo;
pub mod vllm;

use std::collections::BTreeMap;

use protocol::{HarnessRequest, Launcher, Round, Shape};
use report::{EngineBuildRow, EngineComparison, EnginePaired, EngineReport, EngineRow};

use super::backend::{KernelPath, Phase};
use super::clock::{Clock, RoundsPolicy};
use super::paired::{CONFIDENCE, TIE_BAND, judge, median_interval, ratios, wants_more};
use super::report::BenchReport;
use super::rows::{Peak, ResultRow, Stop};
use super::workload::{GROUP, Workload};
use crate::bench::verdict::Status;
use crate::error::unavailable;

mod verdict;

/// One build the engine may deploy on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineBuild {
    /// The engine's name for it (`w4a16`, `bf16`, `w4a8`; `q4_0`, `q4_k_m`).
    pub build: String,
    /// The catalog path that deploys it.
    pub catalog_path: String,
    pub bits_per_weight: f64,
    /// edgeplan's kernel path for the same weights, to compare with.
    pub own_path: Option<KernelPath>,
}

/// What `run` needs besides the launcher and the clock.
pub struct EngineInputs<'a> {
    pub builds: Vec<EngineBuild>,
    /// The planned build's name, or why the plan is not one of the engine's CPU builds.
    pub planned: Result<String, String>,
    pub priority: crate::profile::Priority,
    pub workload: &'a Workload,
    pub model: protocol::ModelDims,
    pub threads: usize,
    pub prefill_tokens: usize,
    pub quick: bool,
    pub rounds: RoundsPolicy,
    pub l3_bytes: u64,
}

/// What the engine rows are set against: edgeplan's own run of the same bench.
#[derive(Debug, Clone, Copy)]
pub struct OwnRun<'a> {
    pub memory_bandwidth_gbps: Option<f64>,
    pub results: &'a [ResultRow],
    pub peaks: &'a [Peak],
}

impl<'a> OwnRun<'a> {
    pub fn of(report: &'a BenchReport) -> OwnRun<'a> {
        OwnRun {
            memory_bandwidth_gbps: report.memory_bandwidth_gbps,
            results: &report.results,
            peaks: &report.peaks,
        }
    }
}

/// Per-round step times of one build, in seconds.
#[derive(Debug, Default, Clone)]
pub struct Series {
    decode: Vec<f64>,
    prefill: Vec<f64>,
}

impl Series {
    pub fn of(&self, phase: Phase) -> &[f64] {
        match phase {
            Phase::Decode => &self.decode,
            Phase::Prefill => &self.prefill,
        }
    }
}

/// The engine's shapes of one decoder layer: q/k/v and gate/up merged as vLLM's
/// `QKVParallelLinear` and `MergedColumnParallelLinear` hold them.
pub fn merged_shapes(workload: &Workload) -> Vec<Shape> {
    let mut out: Vec<Shape> = Vec::new();
    for g in &workload.per_layer {
        let merged = out.last().and_then(|last| {
            match (last.name.as_str(), g.name.as_str()) {
                ("q_proj", "k_proj") | ("qkv_proj", "v_proj") => Some("qkv_proj"),
                ("gate_proj", "up_proj") => Some("gate_up_proj"),
                _ => None,
            }
            .filter(|_| last.k == g.k)
        });
        match (merged, out.last_mut()) {
            (Some(name), Some(last)) => {
                last.n += g.n;
                last.name = name.to_string();
            }
            _ => out.push(Shape {
                name: g.name.clone(),
                n: g.n,
                k: g.k,
            }),
        }
    }
    out
}

/// Distinct decoder layers a decode sample walks: enough 4-bit layers to exceed twice
/// the L3 (so weights stream from DRAM, as in serving), at most the model's.
pub fn decode_layers(workload: &Workload, l3_bytes: u64) -> usize {
    let per_layer: u64 = workload
        .per_layer
        .iter()
        .map(|g| g.bytes(KernelPath::W4A16))
        .sum();
    let need = (2 * l3_bytes).div_ceil(per_layer.max(1)) as usize;
    need.clamp(1, workload.layers)
}

/// What the engine's rounds produced, before it is set against edgeplan's own run.
pub struct Measured {
    engine: &'static str,
    program: String,
    hello: protocol::Hello,
    series: BTreeMap<String, Series>,
    rounds: usize,
    seconds: f64,
    stopped: Stop,
}

/// Runs the engine's paired rounds. It runs before edgeplan's own kernels, so a missing
/// engine fails in seconds and the two never share the CPU.
pub fn measure(
    inputs: &EngineInputs,
    launcher: &dyn Launcher,
    clock: &dyn Clock,
) -> anyhow::Result<Measured> {
    let request = harness_request(inputs);
    let start = clock.now();
    let mut session = launcher.start(&request)?;
    let hello = session.hello().clone();
    if hello.engine != launcher.engine() {
        return Err(unavailable(format!(
            "bench --engine {}: {} answered as {:?}",
            launcher.engine(),
            launcher.program(),
            hello.engine
        )));
    }
    if hello.timed.is_empty() {
        return Err(unavailable(format!(
            "bench --engine {}: the engine could run none of the builds here ({})",
            launcher.engine(),
            describe_skips(&hello.skipped)
        )));
    }
    let planned = inputs
        .planned
        .as_ref()
        .ok()
        .filter(|p| hello.timed.contains(p));
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    let mut n = 0;
    let stopped = loop {
        let Some(round) = session.next_round()? else {
            break Stop::Rounds;
        };
        if round.round != n + 1 {
            return Err(unavailable(format!(
                "bench --engine {}: round {} arrived after round {n}",
                launcher.engine(),
                round.round
            )));
        }
        add_round(&mut series, &round, &hello, inputs.workload.layers);
        n += 1;
        if n >= request.max_rounds {
            break Stop::Rounds;
        }
        if n >= request.min_rounds {
            let open = planned
                .is_some_and(|p| comparisons(&series, p).iter().any(|c| wants_more(&c.ratio)));
            let over = clock.now() - start > inputs.rounds.budget_s;
            session.answer(open && !over)?;
            if !open {
                break Stop::Decided;
            }
            if over {
                break Stop::Budget;
            }
        }
    };
    session.finish()?;
    Ok(Measured {
        engine: launcher.engine(),
        program: launcher.program(),
        hello,
        series,
        rounds: n,
        seconds: clock.now() - start,
        stopped,
    })
}

impl EngineInputs<'_> {
    /// The engine's solo run after `run`: the planned build (else the first it timed)
    /// for [`solo::SOLO_ROUNDS`] rounds, nothing else.
    pub fn solo(&self, run: &Measured) -> Option<EngineInputs<'_>> {
        let timed = &run.hello.timed;
        let build = self
            .planned
            .as_ref()
            .ok()
            .filter(|p| timed.contains(p))
            .or_else(|| timed.first())?;
        Some(EngineInputs {
            builds: self
                .builds
                .iter()
                .filter(|b| &b.build == build)
                .cloned()
                .collect(),
            planned: Ok(build.clone()),
            priority: self.priority,
            workload: self.workload,
            model: self.model.clone(),
            threads: self.threads,
            prefill_tokens: self.prefill_tokens,
            quick: self.quick,
            rounds: RoundsPolicy {
                min_rounds: solo::SOLO_ROUNDS,
                max_rounds: solo::SOLO_ROUNDS,
                budget_s: f64::INFINITY,
            },
            l3_bytes: self.l3_bytes,
        })
    }

    /// The own paths edgeplan's solo run times: those the engine's rows compare with.
    pub fn own_paths(&self) -> Vec<KernelPath> {
        solo::own_paths(self.builds.iter().map(|b| b.own_path))
    }
}

impl Measured {
    /// Sets this run's figures of both sides against their solo runs.
    pub fn solo_check(
        &self,
        own: &[ResultRow],
        engine_solo: &Measured,
        own_solo: &[ResultRow],
        load: Vec<solo::LoadSample>,
    ) -> solo::SoloCheck {
        solo::check(
            &self.series,
            own,
            solo::SoloRuns {
                engine: &engine_solo.series,
                own: own_solo,
                load,
            },
        )
    }
}

fn harness_request(inputs: &EngineInputs) -> HarnessRequest {
    let w = inputs.workload;
    HarnessRequest {
        model: inputs.model.clone(),
        threads: inputs.threads,
        seed: 1,
        shapes: merged_shapes(w),
        lm_head: Shape {
            name: "lm_head".into(),
            n: w.lm_head.n,
            k: w.lm_head.k,
        },
        paths: inputs.builds.iter().map(|b| b.build.clone()).collect(),
        layers: decode_layers(w, inputs.l3_bytes),
        prefill_layers: if inputs.quick { 1 } else { 2 },
        prefill_tokens: inputs.prefill_tokens,
        min_rounds: inputs.rounds.min_rounds,
        max_rounds: inputs.rounds.max_rounds,
    }
}

/// The report section: the engine's rows set against edgeplan's own run, the paired
/// comparisons and the verdict.
pub fn assemble(
    inputs: &EngineInputs,
    m: Measured,
    own: OwnRun,
    solo: Option<solo::SoloCheck>,
) -> EngineReport {
    let hello = &m.hello;
    let planned = inputs
        .planned
        .as_ref()
        .ok()
        .filter(|p| hello.timed.contains(p));
    let comparisons = planned.map_or_else(Vec::new, |p| comparisons(&m.series, p));
    let results = rows(inputs, own, hello, &m.series);
    let mut verdict = verdict::decide(inputs, hello, &comparisons, &results);
    // Which configuration ran, where it is not the engine's default (llama-bench
    // retried without repack after a crash).
    for (build, k) in hello
        .kernels
        .iter()
        .filter(|(_, k)| k.op.contains("with --repack 0"))
    {
        verdict
            .reason
            .push_str(&format!("; {build} ran with --repack 0 ({})", k.op));
    }
    // A run whose sides were disturbed decides nothing.
    if solo.as_ref().is_some_and(|s| s.noisy) && verdict.status != Status::NotApplicable {
        verdict.status = Status::Inconclusive;
        verdict.noisy = true;
        verdict.recommended_build = verdict.planned_build.clone();
        verdict.recommended_path = verdict.planned.clone();
        verdict.reason = format!(
            "the run is noisy (a side's figures are more than {:.0} % off a short run of it alone: see the solo check), so it decides nothing; the rounds alone said: {}",
            solo::NOISE_LIMIT_PCT,
            verdict.reason
        );
    }
    EngineReport {
        engine: m.engine.to_string(),
        version: hello.version.clone(),
        runtime: runtime(hello),
        program: m.program.clone(),
        threads: hello.threads,
        builds: build_rows(inputs, hello),
        layers_timed_decode: hello.layers_timed_decode,
        layers_timed_prefill: hello.layers_timed_prefill,
        setup_s: hello.setup_s,
        results,
        paired: EnginePaired {
            rounds: m.rounds,
            seconds: m.seconds,
            stopped: m.stopped,
            confidence: CONFIDENCE,
            tie_band_pct: TIE_BAND * 100.0,
            comparisons,
        },
        notes: notes(inputs, hello),
        verdict,
        solo,
    }
}

fn describe_skips(skipped: &BTreeMap<String, String>) -> String {
    skipped
        .iter()
        .map(|(b, why)| format!("{b}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Adds one round's step times: the timed layers scaled to the model's, plus the
/// lm_head in decode (a prefill needs the logits of its last position only).
fn add_round(
    series: &mut BTreeMap<String, Series>,
    round: &Round,
    hello: &protocol::Hello,
    layers: usize,
) {
    let scale = |timed: usize| layers as f64 / timed.max(1) as f64;
    for (build, t) in &round.times {
        let s = series.entry(build.clone()).or_default();
        s.decode
            .push(t.decode_layers_s * scale(hello.layers_timed_decode) + t.head_s);
        s.prefill
            .push(t.prefill_layers_s * scale(hello.layers_timed_prefill));
    }
}

/// The planned build against every other timed build, per phase.
fn comparisons(series: &BTreeMap<String, Series>, planned: &str) -> Vec<EngineComparison> {
    let Some(mine) = series.get(planned) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for phase in [Phase::Decode, Phase::Prefill] {
        for (rival, theirs) in series.iter().filter(|(b, _)| b.as_str() != planned) {
            if let Some(ratio) = median_interval(&ratios(mine.of(phase), theirs.of(phase))) {
                out.push(EngineComparison {
                    phase,
                    planned: planned.to_string(),
                    rival: rival.clone(),
                    ratio,
                    judgement: judge(&ratio),
                });
            }
        }
    }
    out
}

fn runtime(hello: &protocol::Hello) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = &hello.torch {
        out.push(format!("torch {t}"));
    }
    if let Some(p) = &hello.python {
        out.push(format!("python {p}"));
    }
    if let Some(b) = &hello.build {
        out.push(b.clone());
    }
    out
}

fn build_rows(inputs: &EngineInputs, hello: &protocol::Hello) -> Vec<EngineBuildRow> {
    inputs
        .builds
        .iter()
        .map(|b| {
            let kernel = hello.kernels.get(&b.build).cloned();
            let failed = kernel
                .as_ref()
                .filter(|k| k.check != "passed")
                .map(|k| format!("its check against the reference failed ({})", k.check));
            EngineBuildRow {
                build: b.build.clone(),
                catalog_path: b.catalog_path.clone(),
                timed: hello.timed.contains(&b.build),
                skipped: hello.skipped.get(&b.build).cloned().or(failed),
                kernel,
            }
        })
        .collect()
}

/// The rows: each timed build in each phase, with its roofline shares and edgeplan's
/// kernel for the same path.
fn rows(
    inputs: &EngineInputs,
    own: OwnRun,
    hello: &protocol::Hello,
    series: &BTreeMap<String, Series>,
) -> Vec<EngineRow> {
    let w = inputs.workload;
    let layer_macs: u64 = w.per_layer.iter().map(|g| g.params()).sum();
    let mut out = Vec::new();
    for b in inputs
        .builds
        .iter()
        .filter(|b| series.contains_key(&b.build))
    {
        let layer_bytes = hello.layer_weight_bytes.get(&b.build).copied().unwrap_or(0);
        for phase in [Phase::Decode, Phase::Prefill] {
            let Some(step) = median_interval(series[&b.build].of(phase)) else {
                continue;
            };
            let (tokens, bytes, macs) = match phase {
                Phase::Decode => (
                    1,
                    layer_bytes * w.layers as u64 + hello.head_weight_bytes,
                    layer_macs * w.layers as u64 + w.lm_head.params(),
                ),
                Phase::Prefill => (
                    inputs.prefill_tokens,
                    layer_bytes * w.layers as u64,
                    layer_macs * w.layers as u64 * inputs.prefill_tokens as u64,
                ),
            };
            out.push(row(own, b, phase, tokens, bytes, macs, step, hello));
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn row(
    own_run: OwnRun,
    b: &EngineBuild,
    phase: Phase,
    tokens: usize,
    bytes: u64,
    macs: u64,
    step: crate::bench::paired::Interval,
    hello: &protocol::Hello,
) -> EngineRow {
    let secs = step.median.max(1e-12);
    let weight_gbps = bytes as f64 / secs / 1e9;
    let tmacs = macs as f64 / secs / 1e12;
    let own = b.own_path.and_then(|p| {
        own_run
            .results
            .iter()
            .find(|r| r.path == p && r.phase == phase)
    });
    let peak = own.and_then(|r| {
        own_run
            .peaks
            .iter()
            .find(|p| p.unit == r.peak_unit)
            .and_then(|p| p.tmacs)
    });
    let kernel = hello
        .kernels
        .get(&b.build)
        .map_or_else(String::new, |k| k.op.clone());
    EngineRow {
        build: b.build.clone(),
        catalog_path: b.catalog_path.clone(),
        phase,
        tokens,
        kernel,
        step_ms: scale_interval(step, 1000.0),
        tokens_per_s: tokens as f64 / secs,
        weight_bytes: bytes,
        weight_gbps,
        bandwidth_pct: (phase == Phase::Decode)
            .then_some(own_run.memory_bandwidth_gbps)
            .flatten()
            .filter(|bw| *bw > 0.0)
            .map(|bw| weight_gbps / bw * 100.0),
        macs,
        tmacs,
        peak_pct: (phase == Phase::Prefill)
            .then_some(peak)
            .flatten()
            .filter(|p| *p > 0.0)
            .map(|p| tmacs / p * 100.0),
        own_path: b.own_path,
        own_kernel: own.map(|r| r.kernel.clone()),
        own_step_ms: own.map(|r| r.step_ms),
        vs_own_pct: own.map(|r| r.step_ms / (secs * 1000.0) * 100.0),
    }
}

fn scale_interval(i: crate::bench::paired::Interval, f: f64) -> crate::bench::paired::Interval {
    crate::bench::paired::Interval {
        median: i.median * f,
        low: i.low * f,
        high: i.high * f,
        n: i.n,
    }
}

fn notes(inputs: &EngineInputs, hello: &protocol::Hello) -> Vec<String> {
    let mut notes = vec![if hello.whole_model {
        format!(
            "the engine's whole model (random weights of {}'s shapes): its times include attention, norms and sampling, so its % bw, % peak and vs-own shares (which count the linear layers' bytes and multiply-adds) understate its kernels",
            inputs.workload.model
        )
    } else {
        format!(
            "the engine's linear layers only (its kernels on random weights of {}'s shapes, group {GROUP}); attention, norms and sampling are left out, as in edgeplan's own rows",
            inputs.workload.model
        )
    }];
    if hello.layers_timed_decode < inputs.workload.layers {
        notes.push(format!(
            "decode walks {} distinct layers (more than twice the L3) and is scaled to the model's {}",
            hello.layers_timed_decode, inputs.workload.layers
        ));
    }
    for (build, why) in &hello.skipped {
        notes.push(format!("{build} not timed: {why}"));
    }
    notes
}

#[cfg(test)]
mod tests;
