//! The bench pipeline as stages, generic over the backend and the clock: select the
//! paths, budget the memory, gate the kernels, measure the rooflines, race the kernels
//! (in `race.rs`), decide the verdict, assemble the report. No stage prints: warnings
//! come back in the [`Outcome`] and progress goes to the caller's [`Progress`].

use super::backend::{Backend, KernelInfo, KernelPath, Phase, Unit};
use super::bandwidth;
use super::clock::Clock;
use super::fidelity::FidelitySize;
use super::host;
use super::paired::{CONFIDENCE, TIE_BAND, median_interval};
use super::peaks;
use super::race::{self, Progress, Race};
use super::report::{self, BenchReport, Host, MemoryUse, ModelInfo};
use super::request::{BenchRequest, Effort};
use super::rounds::{self, Entrant};
use super::rows::{KernelCheck, PairedRun, Peak, ResultRow};
use super::verdict::{self, PlanInput, VerdictInput};
use super::workload::{GROUP, Workload};
use crate::error::{Coded, Exit, usage};
use crate::output;
use crate::profile::{Profile, Tool};

/// Everything a run needs besides the backend and the clock.
pub struct Inputs<'a> {
    pub request: &'a BenchRequest,
    pub profile: &'a Profile,
    /// This host's CPU model (the report's host is always this one).
    pub host_cpu: Option<String>,
    /// Set when the profile describes another device than this host: the label.
    pub other_device: Option<String>,
    /// The plan under test, or why there is none.
    pub plan: Result<PlanInput, String>,
    pub workload: &'a Workload,
    pub threads: usize,
    /// Why the thread count differs from the profile's, if it does.
    pub thread_note: Option<String>,
    /// When the run started, in seconds since the Unix epoch (the report's `measured_at`).
    pub started_unix: i64,
}

/// What a run produced.
pub enum Outcome {
    /// `--list-kernels`: every variant, available or not.
    Kernels(Vec<KernelInfo>),
    /// A measured run, and the warnings to show (kernels that failed their check).
    Report {
        report: Box<BenchReport>,
        warnings: Vec<String>,
    },
}

/// How much memory the run will hold, checked against the profile before allocating.
struct Sizing {
    l3: u64,
    l3_source: &'static str,
    bandwidth_bytes: u64,
    fidelity: FidelitySize,
    need: u64,
    budget: Option<u64>,
}

/// Runs the pipeline.
pub fn run<B: Backend>(
    inputs: &Inputs,
    backend: &B,
    clock: &dyn Clock,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome> {
    let req = inputs.request;
    let kernels = backend.kernels();
    if req.list_kernels {
        return Ok(Outcome::Kernels(kernels));
    }
    let forced = match &req.kernel {
        Some(name) => Some(force(&kernels, name)?),
        None => None,
    };
    let mut notes: Vec<String> = inputs.thread_note.iter().cloned().collect();
    let paths = select(req, forced, &inputs.plan, &mut notes);
    let sizing = budget(inputs, backend, &paths, &mut notes)?;
    let (checks, failed_paths, warnings) = gate(backend, &kernels, &paths);
    let policies = req.effort.policies();
    // Bandwidth, peaks, three per path (packing, decode, prefill), and the rounds.
    progress.start(3 + 3 * paths.len() as u64);
    progress.stage("memory bandwidth");
    let probe = bandwidth::Probe::new(sizing.bandwidth_bytes);
    let mut bw = bandwidth::measure(backend, clock, &probe, policies.bandwidth)?;
    progress.stage("compute peaks");
    let peaks = peaks_stage(backend, clock, req.effort);
    let race = race::run(
        &Race {
            backend,
            clock,
            progress,
            workload: inputs.workload,
            kernels: &kernels,
            checks: &checks,
            forced,
            l3: sizing.l3,
            effort: req.effort,
            tokens: req.prefill_tokens,
            fidelity: sizing.fidelity,
            policies,
        },
        &paths,
        &bw,
        &peaks,
        &mut notes,
    )?;
    progress.stage("paired rounds");
    let planned = inputs.plan.as_ref().ok().and_then(|p| p.bench_path);
    let rounded = rounds_stage(
        inputs, backend, clock, &kernels, &sizing, &probe, &peaks, planned, race,
    )?;
    drop(probe);
    progress.finish();
    bw.paired = median_interval(&rounded.gbps);
    let mut peaks = peaks;
    for p in peaks.iter_mut() {
        p.paired = rounded
            .peak_tmacs
            .iter()
            .find(|(unit, _)| *unit == p.unit)
            .and_then(|(_, series)| median_interval(series));
    }
    let verdict = verdict_stage(inputs, backend.executor(), &rounded, &failed_paths);
    notes.extend(run_notes(
        inputs.workload,
        sizing.l3,
        req.effort,
        sizing.fidelity,
    ));
    let report = assemble(
        inputs,
        backend.executor(),
        sizing,
        bw,
        peaks,
        checks,
        rounded,
        verdict,
        notes,
    );
    Ok(Outcome::Report {
        report: Box::new(report),
        warnings,
    })
}

/// Stage *select*: the paths asked for (all three by default), the forced kernel's, and
/// the planned one.
fn select(
    req: &BenchRequest,
    forced: Option<&KernelInfo>,
    plan: &Result<PlanInput, String>,
    notes: &mut Vec<String>,
) -> Vec<KernelPath> {
    let mut paths = if req.paths.is_empty() {
        KernelPath::ALL.to_vec()
    } else {
        req.paths.clone()
    };
    if let Some(k) = forced
        && !paths.contains(&k.path)
    {
        paths.push(k.path);
    }
    if let Ok(p) = plan {
        match p.bench_path {
            Some(bp) if !paths.contains(&bp) => {
                notes.push(format!("added {bp}: it is the planned path ({})", p.name));
                paths.push(bp);
            }
            Some(_) => {}
            None => notes.push(format!(
                "the planned path {} has no bench path; measuring the CPU paths anyway",
                p.name
            )),
        }
    }
    paths.sort();
    paths
}

/// Stage *budget*: the most bytes the run holds at once, refused (exit 3) before
/// anything large is allocated when the profile's memory budget is smaller.
fn budget<B: Backend>(
    inputs: &Inputs,
    backend: &B,
    paths: &[KernelPath],
    notes: &mut Vec<String>,
) -> anyhow::Result<Sizing> {
    let (w, req) = (inputs.workload, inputs.request);
    let (l3, l3_source) = host::l3_size();
    let bandwidth_bytes = backend.bandwidth_bytes(l3);
    let fidelity = FidelitySize::for_run(w.vocab_size, req.effort);
    let fid_bytes = 4
        * (fidelity.vocab * w.hidden_size
            + fidelity.states * w.hidden_size
            + fidelity.states * fidelity.vocab) as u64
        * 2;
    let per_path: Vec<(KernelPath, u64)> = paths
        .iter()
        .map(|&p| {
            (
                p,
                w.path_bytes(p, l3, req.effort, req.prefill_tokens) + fid_bytes,
            )
        })
        .collect();
    // The paired rounds hold the probe's buffer and one rotation per weight layout at
    // once (w4a8 and w4a16 share theirs).
    let layout_max = |int4: bool| {
        per_path
            .iter()
            .filter(|(p, _)| (*p != KernelPath::Bf16) == int4)
            .map(|&(_, b)| b)
            .max()
            .unwrap_or(0)
    };
    let need = bandwidth_bytes + layout_max(true) + layout_max(false);
    let budget = host::memory_budget(inputs.profile);
    match budget {
        Some(budget) if need > budget => {
            let (worst, bytes) = per_path
                .iter()
                .max_by_key(|(_, b)| *b)
                .copied()
                .unwrap_or((KernelPath::Bf16, need));
            return Err(Coded {
                exit: Exit::DoesNotFit,
                message: format!(
                    "{}: the run holds {} at once (the bandwidth buffer and one rotation per weight layout; the {worst} path alone needs {}: decode rotation over twice the {} L3, plus staging) but the profile's memory budget is {}; use --paths without {worst}, --quick, or a smaller model",
                    w.model,
                    output::bytes(need),
                    output::bytes(bytes),
                    output::bytes(l3),
                    output::bytes(budget)
                ),
            }
            .into());
        }
        Some(_) => {}
        None => {
            notes.push("the profile has no memory figures: the memory check was skipped".into())
        }
    }
    Ok(Sizing {
        l3,
        l3_source,
        bandwidth_bytes,
        fidelity,
        need,
        budget,
    })
}

/// Stage *gate*: every kernel of the chosen paths checked against the scalar reference
/// before any timing. Returns the checks, the paths whose every checked kernel failed,
/// and one warning per failed kernel.
fn gate<B: Backend>(
    backend: &B,
    kernels: &[KernelInfo],
    paths: &[KernelPath],
) -> (Vec<KernelCheck>, Vec<KernelPath>, Vec<String>) {
    let mut warnings = Vec::new();
    let checks: Vec<KernelCheck> = kernels
        .iter()
        .map(|k| {
            let (status, detail) = if let Some(why) = &k.unavailable {
                ("unavailable", Some(why.clone()))
            } else if !paths.contains(&k.path) {
                ("not_run", None)
            } else {
                match backend.verify(k) {
                    Ok(()) => ("passed", None),
                    Err(why) => {
                        warnings.push(format!(
                            "kernel {} failed its correctness check and will not be timed: {why}",
                            k.name
                        ));
                        ("failed", Some(why))
                    }
                }
            };
            KernelCheck {
                name: k.name.clone(),
                path: k.path,
                phases: k.phases.clone(),
                unit: k.unit,
                status: status.to_string(),
                detail,
            }
        })
        .collect();
    let failed = paths
        .iter()
        .copied()
        .filter(|p| {
            let mine: Vec<&KernelCheck> = checks.iter().filter(|c| c.path == *p).collect();
            mine.iter().any(|c| c.status == "failed") && !mine.iter().any(|c| c.status == "passed")
        })
        .collect();
    (checks, failed, warnings)
}

/// Stage *peaks*: every unit's compute peak, or the backend's reason for skipping them.
fn peaks_stage<B: Backend>(backend: &B, clock: &dyn Clock, effort: Effort) -> Vec<Peak> {
    match backend.peaks_skipped() {
        Some(why) => peaks::UNITS
            .iter()
            .map(|&unit| Peak::skipped(unit, why))
            .collect(),
        None => peaks::measure_all(backend, clock, &backend.amx_ready(), effort.peak_budget()),
    }
}

/// The race's rows after the paired rounds, and how the rounds went.
struct Rounded {
    results: Vec<ResultRow>,
    fidelity: Vec<super::rows::FidelityRow>,
    paired: PairedRun,
    gbps: Vec<f64>,
    /// Per unit re-measured in the rounds, its TMAC/s by round.
    peak_tmacs: Vec<(Unit, Vec<f64>)>,
}

/// Stage *rounds*: every raced row once per round with the bandwidth probe and the peak
/// loop of each unit a prefill row runs on (where its start-of-run peak was measured),
/// order shuffled per round (see `rounds.rs`); the rows then carry the round figures.
#[allow(clippy::too_many_arguments)]
fn rounds_stage<B: Backend>(
    inputs: &Inputs,
    backend: &B,
    clock: &dyn Clock,
    kernels: &[KernelInfo],
    sizing: &Sizing,
    probe: &bandwidth::Probe,
    peaks: &[Peak],
    planned: Option<KernelPath>,
    race: race::Raced<B::Weights>,
) -> anyhow::Result<Rounded> {
    let (w, req) = (inputs.workload, inputs.request);
    let race::Raced {
        mut results,
        fidelity,
        rotations,
    } = race;
    let entrants: Vec<Entrant<B::Weights>> = results
        .iter()
        .filter_map(|r| {
            Some(Entrant {
                path: r.path,
                phase: r.phase,
                kernel: kernels.iter().find(|k| k.name == r.kernel)?,
                rotation: rotations.iter().find(|x| x.path.shares_layout(r.path))?,
                decode: w.decode_plan(r.path, sizing.l3, req.effort),
                prefill_layers: w.prefill_layers(req.effort),
                tokens: r.tokens,
            })
        })
        .collect();
    let round_peaks = round_peaks(backend, clock, &entrants, peaks);
    let probes = rounds::Probes {
        bandwidth: probe,
        peaks: &round_peaks,
    };
    let policy = req.rounds_policy();
    let done = rounds::run(backend, clock, w, &entrants, probes, planned, policy)?;
    let comparisons = rounds::compare(&entrants, &done.seconds, planned);
    let keys: Vec<(KernelPath, Phase)> = entrants.iter().map(|e| (e.path, e.phase)).collect();
    drop(entrants);
    drop(rotations);
    let peak_tmacs: Vec<(Unit, Vec<f64>)> = round_peaks
        .iter()
        .map(|p| p.unit)
        .zip(done.peak_tmacs)
        .collect();
    for (key, secs) in keys.iter().zip(&done.seconds) {
        if let Some(row) = results.iter_mut().find(|r| (r.path, r.phase) == *key) {
            let unit_peaks = peak_tmacs
                .iter()
                .find(|(unit, _)| *unit == row.peak_unit)
                .map(|(_, series)| series.as_slice());
            rounds::refresh(row, secs, &done.gbps, unit_peaks);
        }
    }
    Ok(Rounded {
        results,
        fidelity,
        paired: PairedRun {
            rounds: done.gbps.len(),
            seconds: done.spent_s,
            stopped: done.stopped,
            confidence: CONFIDENCE,
            tie_band_pct: TIE_BAND * 100.0,
            comparisons,
        },
        gbps: done.gbps,
        peak_tmacs,
    })
}

/// The peak loops to re-run every round: one per unit the prefill entrants run on, for
/// the units whose peak the run measured (none where the backend measures no peaks).
fn round_peaks<B: Backend>(
    backend: &B,
    clock: &dyn Clock,
    entrants: &[Entrant<B::Weights>],
    peaks: &[Peak],
) -> Vec<peaks::RoundPeak> {
    if backend.peaks_skipped().is_some() {
        return Vec::new();
    }
    let amx = backend.amx_ready();
    let rows = entrants.iter().map(|e| (e.phase, e.kernel.unit));
    paired_peak_units(rows, peaks)
        .into_iter()
        .filter_map(|u| peaks::RoundPeak::new(u, backend, clock, &amx))
        .collect()
}

/// The units of the prefill rows among `rows` (phase, unit) whose peak was measured, each
/// once.
fn paired_peak_units(rows: impl Iterator<Item = (Phase, Unit)>, peaks: &[Peak]) -> Vec<Unit> {
    let mut units: Vec<Unit> = rows
        .filter(|(phase, _)| *phase == Phase::Prefill)
        .map(|(_, unit)| unit)
        .filter(|u| peaks.iter().any(|p| p.unit == *u && p.tmacs.is_some()))
        .collect();
    units.sort_by_key(|u| u.as_str());
    units.dedup();
    units
}

/// Stage *verdict*: the plan against the rows and the paired comparisons.
fn verdict_stage(
    inputs: &Inputs,
    executor: &str,
    rounded: &Rounded,
    failed_paths: &[KernelPath],
) -> verdict::Verdict {
    let mut verdict = verdict::decide(VerdictInput {
        plan: inputs.plan.clone(),
        priority: inputs.request.priority,
        results: &rounded.results,
        comparisons: &rounded.paired.comparisons,
        fidelity: &rounded.fidelity,
        failed_paths,
        notes: Vec::new(),
    });
    verdict.other_device = inputs.other_device.clone();
    // Real timings under user-mode emulation measure the emulator: no verdict from them.
    if let Some(why) = crate::arch::emulation::emulation().filter(|_| executor == "real") {
        verdict.status = verdict::Status::Inconclusive;
        verdict.confirmed = false;
        verdict.confirmed_in.clear();
        verdict.reason = format!("emulated timings mean nothing ({why}); run bench on the device");
    }
    verdict
}

/// The report, from the stages' results.
#[allow(clippy::too_many_arguments)]
fn assemble(
    inputs: &Inputs,
    executor: &str,
    sizing: Sizing,
    bw: super::rows::Bandwidth,
    peaks: Vec<Peak>,
    checks: Vec<KernelCheck>,
    race: Rounded,
    verdict: verdict::Verdict,
    notes: Vec<String>,
) -> BenchReport {
    let (w, profile) = (inputs.workload, inputs.profile);
    BenchReport {
        schema_version: report::SCHEMA_VERSION,
        tool: Tool::this(),
        executor: executor.to_string(),
        measured_at: crate::timestamp::format_rfc3339(inputs.started_unix),
        host: Host {
            cpu_model: inputs.host_cpu.clone(),
            logical_cpus: match inputs.other_device {
                None => profile.cpu.logical_cpus,
                Some(_) => std::thread::available_parallelism()
                    .ok()
                    .map(|n| n.get() as u32),
            },
            l3_bytes: sizing.l3,
            l3_source: sizing.l3_source.to_string(),
        },
        model: ModelInfo {
            name: w.model.clone(),
            layers: w.layers,
            hidden_size: w.hidden_size,
            intermediate_size: w.intermediate_size,
            vocab_size: w.vocab_size,
            params_per_step: w.step_params(),
        },
        threads: inputs.threads,
        quick: inputs.request.effort.is_quick(),
        prefill_tokens: inputs.request.prefill_tokens,
        memory_bandwidth_gbps: Some(bw.gbps),
        bandwidth: Some(bw),
        peaks,
        memory: MemoryUse {
            planned_peak_bytes: sizing.need,
            rss_peak_bytes: host::peak_rss(),
            budget_bytes: sizing.budget,
        },
        kernels: checks,
        results: race.results,
        fidelity: race.fidelity,
        paired: Some(race.paired),
        verdict,
        engine: None,
        notes,
    }
}

/// How the figures were obtained and what they leave out.
fn run_notes(w: &Workload, l3: u64, effort: Effort, fsize: FidelitySize) -> Vec<String> {
    let mut notes = vec![
        "figures are the linear layers' GEMMs only (attention, norms, sampling excluded; activations prepared before timing): tokens/s is an upper bound".to_string(),
        format!(
            "decode streams distinct per-layer buffers plus an untied, quantized lm_head ({} x {}); the working set is over twice the {} L3",
            w.lm_head.n,
            w.lm_head.k,
            output::bytes(l3)
        ),
        format!(
            "prefill times {} of {} layers and scales to all; the lm_head is left out (a prefill needs only the last position's logits)",
            w.prefill_layers(effort),
            w.layers
        ),
        format!(
            "fidelity: seeded Gaussian weights and activations; layer {} over {} tokens; top-1 over {} hidden states and {} of {} vocabulary rows",
            w.per_layer.first().map_or("-", |g| g.name.as_str()),
            fsize.tokens,
            fsize.states,
            fsize.vocab,
            w.vocab_size
        ),
        format!("int4 weights are {GROUP}-weight groups with a bf16 scale and zero: 4.25 bits per weight"),
    ];
    if effort.is_quick() {
        notes.push("--quick: fewer decode layers (extrapolated) and repeats".into());
    }
    notes
}

/// `--kernel NAME`: the variant, or a usage error naming the choices or why it cannot run.
fn force<'k>(kernels: &'k [KernelInfo], name: &str) -> anyhow::Result<&'k KernelInfo> {
    let Some(k) = kernels.iter().find(|k| k.name == name) else {
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        return Err(usage(format!(
            "--kernel {name}: no such kernel; use one of {}",
            names.join(", ")
        )));
    };
    if let Some(why) = &k.unavailable {
        return Err(usage(format!(
            "--kernel {name}: not available on this host: {why}"
        )));
    }
    Ok(k)
}

/// `--list-kernels`: JSON, or a table of every variant and whether this host runs it.
pub fn kernel_list(kernels: &[KernelInfo], json: bool) -> anyhow::Result<String> {
    if json {
        return output::json_text(kernels);
    }
    let mut table = output::table();
    table.set_header(vec!["kernel", "path", "phases", "unit", "on this host"]);
    for k in kernels {
        let phases: Vec<&str> = k.phases.iter().map(|p| p.name()).collect();
        table.add_row(vec![
            k.name.clone(),
            k.path.to_string(),
            phases.join(", "),
            k.unit.as_str().to_string(),
            k.unavailable
                .as_ref()
                .map_or("available".to_string(), |w| format!("unavailable: {w}")),
        ]);
    }
    Ok(format!("{table}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::backend::Unit;

    fn k(name: &str, path: KernelPath, unit: Unit, rank: u32) -> KernelInfo {
        KernelInfo {
            name: name.into(),
            path,
            phases: vec![crate::bench::backend::Phase::Decode],
            unit,
            unavailable: None,
            rank,
        }
    }

    #[test]
    fn only_measured_prefill_units_get_a_peak_loop_in_every_round() {
        let peak = |unit, tmacs: Option<f64>| match tmacs {
            Some(t) => Peak::measured(unit, t, None),
            None => Peak::skipped(unit, "no such unit"),
        };
        let peaks = [
            peak(Unit::Avx2Int8, Some(0.09)),
            peak(Unit::Avx2Fma, Some(0.04)),
            peak(Unit::AmxInt8, None),
        ];
        let rows = [
            (Phase::Decode, Unit::Avx2Int8),
            (Phase::Prefill, Unit::Avx2Fma),
            (Phase::Prefill, Unit::Avx2Fma),
            (Phase::Prefill, Unit::AmxInt8),
        ];
        // Decode rows have the bandwidth probe; an unmeasured unit has nothing to pair.
        assert_eq!(
            paired_peak_units(rows.into_iter(), &peaks),
            vec![Unit::Avx2Fma]
        );
        let prefill_int8 = [
            (Phase::Prefill, Unit::Avx2Int8),
            (Phase::Prefill, Unit::Avx2Fma),
        ];
        assert_eq!(
            paired_peak_units(prefill_int8.into_iter(), &peaks),
            vec![Unit::Avx2Fma, Unit::Avx2Int8]
        );
    }

    #[test]
    fn forcing_an_unknown_or_unavailable_kernel_is_a_usage_error() {
        let mut missing = k("w4a8-amx", KernelPath::W4A8, Unit::AmxInt8, 0);
        missing.unavailable = Some("no AMX-INT8 on this CPU".into());
        let ks = [missing, k("w4a8-avx2", KernelPath::W4A8, Unit::Avx2Int8, 1)];
        let err = force(&ks, "nope").unwrap_err();
        assert_eq!(crate::error::exit_for(&err), Exit::Usage);
        assert!(err.to_string().contains("w4a8-avx2"));
        let err = force(&ks, "w4a8-amx").unwrap_err();
        assert!(err.to_string().contains("no AMX-INT8"), "{err}");
        assert_eq!(force(&ks, "w4a8-avx2").unwrap().name, "w4a8-avx2");
    }
}
