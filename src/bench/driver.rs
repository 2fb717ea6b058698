//! The bench pipeline, generic over the backend and the clock: load the inputs, refuse
//! what cannot fit, check the kernels, measure, decide and print.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};

use super::backend::{Backend, BenchPath, KernelInfo, Phase, Scheme, Unit};
use super::clock::{Clock, FakeClock, RealClock, Sampling};
use super::fake::FakeBackend;
use super::fidelity::{FidelitySize, Reference};
use super::host;
use super::measure::{Roofs, Rotation, RowSpec, Timer, row};
use super::peaks::{self, PeakBudget};
use super::report::{
    Alternative, BenchReport, FidelityRow, Host, KernelCheck, MemoryUse, ModelInfo, Peak,
    ResultRow, fmt_bytes,
};
use super::request::{BenchRequest, Executor, ModelSpec, resolve_threads, usage};
use super::verdict::{self, PlanInput, VerdictInput};
use super::workload::{GROUP, Workload};
use super::{bandwidth, save};
use crate::error::{Coded, Exit, read_error};
use crate::model::ModelShape;
use crate::profile::Profile;

/// Entry point once the request is resolved.
pub fn run(req: BenchRequest) -> anyhow::Result<Exit> {
    let (profile, source) = load_profile(&req)?;
    let shape = match &req.model {
        ModelSpec::Preset(name) => ModelShape::load(name)?,
        ModelSpec::Config(path) => ModelShape::from_config_file(path)?,
    };
    let workload = Workload::from_model(&shape)?;
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (threads, thread_note) =
        resolve_threads(req.threads, profile.cpu.usable_threads, host_cpus)?;
    let ctx = Context {
        req: &req,
        profile: &profile,
        source,
        workload: &workload,
        threads,
        thread_note,
    };
    match req.executor {
        Executor::Fake(slow) => {
            let clock = Arc::new(FakeClock::new(0.0));
            let backend = FakeBackend::new(threads, clock.clone()).slowing(slow);
            ctx.execute(&backend, clock.as_ref(), "fake")
        }
        Executor::Real => {
            let backend = super::kernels_backend::KernelsBackend::new(threads)?;
            ctx.execute(&backend, &RealClock::new(), "real")
        }
    }
}

fn load_profile(req: &BenchRequest) -> anyhow::Result<(Profile, String)> {
    match &req.profile {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| read_error(path, &e))?;
            let shown = path.display().to_string();
            Ok((Profile::from_json(&text, &shown)?, shown))
        }
        None => Ok((crate::probe::live()?, "live probe".to_string())),
    }
}

/// The plan for `profile` at `priority`, as the verdict needs it.
fn plan_for(
    profile: &Profile,
    priority: crate::cli::Priority,
    source: &str,
) -> Result<PlanInput, String> {
    super::planned_path(profile, priority).map(|name| PlanInput {
        name,
        priority: priority.as_str().to_string(),
        source: source.to_string(),
        x86_without_amx: profile.hardware_class == crate::profile::HardwareClass::X86Cpu
            && !crate::plan::rules::x86_amx_int8_usable(profile),
    })
}

struct Context<'a> {
    req: &'a BenchRequest,
    profile: &'a Profile,
    source: String,
    workload: &'a Workload,
    threads: usize,
    thread_note: Option<String>,
}

/// Sampling policies: (bandwidth, decode, prefill).
fn policies(quick: bool) -> (Sampling, Sampling, Sampling) {
    if quick {
        (
            Sampling {
                warmup: 1,
                min_repeats: 3,
                max_repeats: 5,
                budget: 0.3,
            },
            Sampling {
                warmup: 1,
                min_repeats: 3,
                max_repeats: 3,
                budget: 0.3,
            },
            // The decode rotation already touched the layer prefill reuses.
            Sampling {
                warmup: 0,
                min_repeats: 2,
                max_repeats: 2,
                budget: 0.0,
            },
        )
    } else {
        (
            Sampling {
                warmup: 1,
                min_repeats: 5,
                max_repeats: 10,
                budget: 1.0,
            },
            Sampling {
                warmup: 1,
                min_repeats: 5,
                max_repeats: 15,
                budget: 1.5,
            },
            Sampling {
                warmup: 1,
                min_repeats: 3,
                max_repeats: 7,
                budget: 1.5,
            },
        )
    }
}

/// The verified kernels of `path` that serve `phase`, best rank first. The scalar
/// reference is a contender only when nothing else serves the phase.
fn candidates<'k>(
    kernels: &'k [KernelInfo],
    checks: &[KernelCheck],
    path: BenchPath,
    phase: Phase,
    forced: Option<&str>,
) -> Vec<&'k KernelInfo> {
    let passed = |k: &KernelInfo| {
        checks
            .iter()
            .any(|c| c.name == k.name && c.status == "passed")
    };
    let mut found: Vec<&KernelInfo> = kernels
        .iter()
        .filter(|k| k.path == path && k.serves(phase) && passed(k))
        .filter(|k| forced.is_none_or(|f| k.name == f))
        .collect();
    found.sort_by_key(|k| k.rank);
    if found.iter().any(|k| k.unit != Unit::Scalar) {
        found.retain(|k| k.unit != Unit::Scalar);
    }
    found
}

impl Context<'_> {
    fn execute<B: Backend>(
        &self,
        backend: &B,
        clock: &dyn Clock,
        executor: &str,
    ) -> anyhow::Result<Exit> {
        let req = self.req;
        let w = self.workload;
        let kernels = backend.kernels();
        if req.list_kernels {
            print_stdout(&kernel_list(&kernels, req.json)?)?;
            return Ok(Exit::Success);
        }
        let forced = match &req.kernel {
            Some(name) => Some(force(&kernels, name)?),
            None => None,
        };

        // The plan, and the paths to run (the planned one always included).
        let plan = plan_for(self.profile, req.priority, &self.source);
        let mut notes: Vec<String> = self.thread_note.iter().cloned().collect();
        let mut paths = if req.paths.is_empty() {
            BenchPath::ALL.to_vec()
        } else {
            req.paths.clone()
        };
        if let Some(k) = forced
            && !paths.contains(&k.path)
        {
            paths.push(k.path);
        }
        if let Ok(p) = &plan {
            match verdict::bench_path_for(&p.name) {
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

        // Memory: refuse before allocating anything large.
        let (l3, l3_source) = host::l3_size();
        let tokens = req.prefill_tokens;
        let bw_bytes = match executor {
            "fake" => super::fake::FAKE_REGION_BYTES,
            _ => bandwidth::buffer_bytes(l3),
        };
        let fsize = FidelitySize::for_run(w.vocab_size, req.quick);
        let fid_bytes = 4
            * (fsize.vocab * w.hidden_size
                + fsize.states * w.hidden_size
                + fsize.states * fsize.vocab) as u64
            * 2;
        let per_path: Vec<(BenchPath, u64)> = paths
            .iter()
            .map(|&p| (p, w.path_bytes(p, l3, req.quick, tokens) + fid_bytes))
            .collect();
        let need = per_path
            .iter()
            .map(|&(_, b)| b)
            .max()
            .unwrap_or(0)
            .max(bw_bytes);
        let budget = host::memory_budget(self.profile);
        if let Some(budget) = budget {
            if need > budget {
                let (worst, bytes) = per_path
                    .iter()
                    .max_by_key(|(_, b)| *b)
                    .copied()
                    .unwrap_or((BenchPath::Bf16, need));
                return Err(Coded {
                    exit: Exit::DoesNotFit,
                    message: format!(
                        "{}: the {worst} path needs {} (decode rotation over twice the {} L3, plus staging) but the profile's memory budget is {}; use --paths without {worst}, --quick, or a smaller model",
                        w.model,
                        fmt_bytes(bytes),
                        fmt_bytes(l3),
                        fmt_bytes(budget)
                    ),
                }
                .into());
            }
        } else {
            notes.push("the profile has no memory figures: the memory check was skipped".into());
        }

        // Correctness gate, before any timing.
        let checks = check_kernels(backend, &kernels, &paths);
        let failed_paths: Vec<BenchPath> = paths
            .iter()
            .copied()
            .filter(|p| {
                let mine: Vec<&KernelCheck> = checks.iter().filter(|c| c.path == *p).collect();
                mine.iter().any(|c| c.status == "failed")
                    && !mine.iter().any(|c| c.status == "passed")
            })
            .collect();

        let progress = Progress::new(2 + 3 * paths.len() as u64);
        let (bw_policy, dec_policy, pre_policy) = policies(req.quick);

        progress.stage("memory bandwidth");
        let bw = bandwidth::measure(backend, clock, bw_bytes, bw_policy)?;
        progress.stage("compute peaks");
        let amx = backend.amx_ready();
        let peaks: Vec<Peak> = match executor {
            "fake" => peaks::UNITS
                .iter()
                .map(|&unit| Peak {
                    unit,
                    tmacs: None,
                    skipped: Some("fake executor: not measured".into()),
                })
                .collect(),
            _ => peaks::measure_all(
                backend,
                clock,
                &amx,
                // Short slices, best of many: on a shared host some slice runs unpreempted.
                PeakBudget {
                    slice_s: if req.quick { 0.004 } else { 0.005 },
                    runs: if req.quick { 5 } else { 9 },
                },
            ),
        };
        let peak_of = |u: Unit| peaks.iter().find(|p| p.unit == u).and_then(|p| p.tmacs);
        let roofs = Roofs {
            bandwidth_gbps: Some(bw.gbps),
            peak_tmacs: &peak_of,
        };

        let mut results: Vec<ResultRow> = Vec::new();
        let mut fidelity: Vec<FidelityRow> = Vec::new();
        let mut reference: Option<Reference> = None;
        let mut cached: Option<Rotation<B::Weights>> = None;
        let forced_name = forced.map(|k| k.name.as_str());
        for &path in &paths {
            let forced_here = forced.filter(|k| k.path == path).map(|k| k.name.as_str());
            let dec = candidates(&kernels, &checks, path, Phase::Decode, forced_here);
            let pre = candidates(&kernels, &checks, path, Phase::Prefill, forced_here);
            if dec.is_empty() && pre.is_empty() {
                notes.push(format!(
                    "{path}: no kernel passed its check on this host; not timed"
                ));
                progress.skip(3);
                continue;
            }
            let plan_d = w.decode_plan(path, l3, req.quick);
            let pre_layers = w.prefill_layers(req.quick);
            let instances = plan_d.instances.max(pre_layers);
            progress.stage(&format!(
                "{path}: packing {} of weights",
                fmt_bytes(plan_d.working_set_bytes)
            ));
            // W4A8 and W4A16 share a layout: keep the rotation rather than pack it twice.
            let rot = match cached.take() {
                Some(r) if r.serves(path, instances) => r,
                other => {
                    drop(other);
                    Rotation::build(backend, path, w, instances, 1)?
                }
            };
            let timer = Timer {
                backend,
                clock,
                workload: w,
                sampling: dec_policy,
            };
            let layer_bytes = rot.layer_bytes(backend, 0);
            let head_bytes = backend.weight_bytes(&rot.head) as u64;

            // Decode: each candidate, the fastest reported.
            progress.stage(&format!("{path}: decode"));
            let mut raced: Vec<ResultRow> = Vec::new();
            for k in &dec {
                let samples = timer.decode(k, &rot, plan_d)?;
                let spec = RowSpec {
                    path,
                    phase: Phase::Decode,
                    tokens: 1,
                    kernel: k,
                    weight_bytes: layer_bytes * w.layers as u64 + head_bytes,
                    macs: w.step_params(),
                    layers_measured: plan_d.instances.min(w.layers),
                    working_set_bytes: layer_bytes * plan_d.instances as u64 + head_bytes,
                };
                raced.push(row(spec, &samples, &roofs)?);
            }
            let best = fastest_of(raced);
            let decode_kernel = best.as_ref().map(|r| r.kernel.clone());
            results.extend(best);

            // Prefill.
            progress.stage(&format!("{path}: prefill"));
            let timer = Timer {
                sampling: pre_policy,
                ..timer
            };
            let only_scalar = pre.iter().all(|k| k.unit == Unit::Scalar);
            let mut raced: Vec<ResultRow> = Vec::new();
            if pre.is_empty() {
                notes.push(format!(
                    "{path}: no verified kernel serves prefill; not timed"
                ));
            } else if only_scalar && forced_name.is_none() {
                notes.push(format!("{path}: only the scalar reference serves prefill here; not timed (minutes per step)"));
            } else {
                for k in &pre {
                    let samples = timer.prefill(k, &rot, pre_layers, tokens)?;
                    let spec = RowSpec {
                        path,
                        phase: Phase::Prefill,
                        tokens,
                        kernel: k,
                        weight_bytes: layer_bytes * w.layers as u64,
                        macs: w.layer_params() * w.layers as u64 * tokens as u64,
                        layers_measured: pre_layers,
                        working_set_bytes: layer_bytes * pre_layers as u64,
                    };
                    raced.push(row(spec, &samples, &roofs)?);
                }
            }
            let best = fastest_of(raced);
            let prefill_kernel = best.as_ref().map(|r| r.kernel.clone());
            results.extend(best);
            cached = Some(rot);

            // Fidelity with the kernel that served prefill (else decode).
            let fk_name = prefill_kernel.or(decode_kernel);
            if let Some(fk) = fk_name.and_then(|n| kernels.iter().find(|k| k.name == n)) {
                let reference = reference.get_or_insert_with(|| {
                    Reference::new(backend, &w.per_layer[0], w.hidden_size, fsize, 42)
                });
                let schemes: &[Scheme] = match path {
                    BenchPath::Bf16 => &[Scheme::Symmetric],
                    _ => &[Scheme::Symmetric, Scheme::Asymmetric],
                };
                for &scheme in schemes {
                    fidelity.push(reference.measure(backend, path, fk, scheme)?);
                }
            }
        }
        drop(cached);
        progress.finish();

        // Verdict.
        let mut verdict = verdict::decide(VerdictInput {
            plan,
            priority: req.priority.as_str().to_string(),
            results: &results,
            fidelity: &fidelity,
            failed_paths: &failed_paths,
            notes: if self.source != "live probe" {
                vec![format!(
                    "the plan is for the profile {}; the measurements are this host's",
                    self.source
                )]
            } else {
                vec![]
            },
        });

        // Real timings under user-mode emulation measure the emulator: no verdict from them.
        if let Some(why) = crate::arch::emulation::emulation().filter(|_| executor == "real") {
            verdict.status = verdict::Status::Inconclusive;
            verdict.confirmed = false;
            verdict.confirmed_in.clear();
            verdict.reason =
                format!("emulated timings mean nothing ({why}); run bench on the device");
        }
        notes.extend(self.run_notes(l3, req.quick, fsize));
        let planned_bytes = need;
        let report = BenchReport {
            schema_version: super::report::SCHEMA_VERSION,
            tool: crate::profile::Tool::this(),
            executor: executor.to_string(),
            host: Host {
                cpu_model: self.profile.cpu.model_name.clone(),
                logical_cpus: self.profile.cpu.logical_cpus,
                l3_bytes: l3,
                l3_source: l3_source.to_string(),
            },
            model: ModelInfo {
                name: w.model.clone(),
                layers: w.layers,
                hidden_size: w.hidden_size,
                intermediate_size: w.intermediate_size,
                vocab_size: w.vocab_size,
                params_per_step: w.step_params(),
            },
            threads: self.threads,
            quick: req.quick,
            prefill_tokens: tokens,
            memory_bandwidth_gbps: Some(bw.gbps),
            bandwidth: Some(bw),
            peaks,
            memory: MemoryUse {
                planned_peak_bytes: planned_bytes,
                rss_peak_bytes: host::peak_rss(),
                budget_bytes: budget,
            },
            kernels: checks,
            results,
            fidelity,
            verdict,
            notes,
        };

        let text = if req.json {
            let mut t = serde_json::to_string_pretty(&report)?;
            t.push('\n');
            t
        } else {
            report.to_table()
        };
        print_stdout(&text)?;
        if let Some(path) = &req.save {
            save::save(self.profile, &report, path)?;
            eprintln!(
                "edgeplan: measurements saved into a copy of the profile at {}",
                path.display()
            );
        }
        if req.strict && report.verdict.status == verdict::Status::Contradicted {
            eprintln!(
                "edgeplan: bench --strict: the measurements contradict the plan: {}",
                report.verdict.reason
            );
            return Ok(Exit::CheckFailed);
        }
        Ok(Exit::Success)
    }

    fn run_notes(&self, l3: u64, quick: bool, fsize: FidelitySize) -> Vec<String> {
        let w = self.workload;
        let mut notes = vec![
            "figures are the linear layers' GEMMs only (attention, norms, sampling excluded; activations prepared before timing): tokens/s is an upper bound".to_string(),
            format!(
                "decode streams distinct per-layer buffers plus an untied, quantized lm_head ({} x {}); the working set is over twice the {} L3",
                w.lm_head.n,
                w.lm_head.k,
                fmt_bytes(l3)
            ),
            format!(
                "prefill times {} of {} layers and scales to all; the lm_head is left out (a prefill needs only the last position's logits)",
                w.prefill_layers(quick),
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
        if quick {
            notes.push("--quick: fewer decode layers (extrapolated) and repeats".into());
        }
        notes
    }
}

/// The fastest of the rows raced for one path and phase, with the others as its
/// alternatives.
fn fastest_of(mut raced: Vec<ResultRow>) -> Option<ResultRow> {
    raced.sort_by(|a, b| a.step_ms.total_cmp(&b.step_ms));
    let mut rows = raced.into_iter();
    let mut best = rows.next()?;
    best.alternatives = rows
        .map(|r| Alternative {
            kernel: r.kernel,
            step_ms: r.step_ms,
        })
        .collect();
    Some(best)
}

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

fn check_kernels<B: Backend>(
    backend: &B,
    kernels: &[KernelInfo],
    paths: &[BenchPath],
) -> Vec<KernelCheck> {
    kernels
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
                        eprintln!("edgeplan: warning: kernel {} failed its correctness check and will not be timed: {why}", k.name);
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
        .collect()
}

fn kernel_list(kernels: &[KernelInfo], json: bool) -> anyhow::Result<String> {
    if json {
        let mut t = serde_json::to_string_pretty(kernels)?;
        t.push('\n');
        return Ok(t);
    }
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::ASCII_MARKDOWN)
        .set_header(vec!["kernel", "path", "phases", "unit", "on this host"]);
    for k in kernels {
        let phases: Vec<&str> = k.phases.iter().map(|p| p.as_str()).collect();
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

fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// A progress bar on stderr, only when stderr is a terminal.
struct Progress(ProgressBar);

impl Progress {
    fn new(stages: u64) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress(ProgressBar::hidden());
        }
        let bar = ProgressBar::new(stages);
        if let Ok(style) =
            ProgressStyle::with_template("bench [{bar:20}] {pos}/{len} {msg} ({elapsed})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress(bar)
    }

    fn stage(&self, what: &str) {
        self.0.set_message(what.to_string());
        self.0.inc(1);
    }

    fn skip(&self, n: u64) {
        self.0.inc(n);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str, path: BenchPath, unit: Unit, rank: u32) -> KernelInfo {
        KernelInfo {
            name: name.into(),
            path,
            phases: vec![Phase::Decode],
            unit,
            unavailable: None,
            rank,
        }
    }

    fn passed(name: &str, path: BenchPath) -> KernelCheck {
        KernelCheck {
            name: name.into(),
            path,
            phases: vec![],
            unit: Unit::Scalar,
            status: "passed".into(),
            detail: None,
        }
    }

    #[test]
    fn candidates_prefer_rank_and_drop_scalar_when_possible() {
        let ks = [
            k("w4a8-scalar", BenchPath::W4a8, Unit::Scalar, 9),
            k("w4a8-avx2", BenchPath::W4a8, Unit::Avx2Int8, 2),
            k("w4a8-vnni", BenchPath::W4a8, Unit::Avx512Vnni, 1),
        ];
        let checks = [
            passed("w4a8-scalar", BenchPath::W4a8),
            passed("w4a8-avx2", BenchPath::W4a8),
        ];
        let c = candidates(&ks, &checks, BenchPath::W4a8, Phase::Decode, None);
        let names: Vec<&str> = c.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["w4a8-avx2"],
            "unchecked vnni and scalar are out"
        );
        let c = candidates(
            &ks,
            &checks,
            BenchPath::W4a8,
            Phase::Decode,
            Some("w4a8-scalar"),
        );
        assert_eq!(c.len(), 1);
        assert!(candidates(&ks, &checks, BenchPath::W4a8, Phase::Prefill, None).is_empty());
    }

    #[test]
    fn forcing_an_unknown_or_unavailable_kernel_is_a_usage_error() {
        let mut missing = k("w4a8-amx", BenchPath::W4a8, Unit::AmxInt8, 0);
        missing.unavailable = Some("no AMX-INT8 on this CPU".into());
        let ks = [missing, k("w4a8-avx2", BenchPath::W4a8, Unit::Avx2Int8, 1)];
        let err = force(&ks, "nope").unwrap_err();
        assert_eq!(crate::error::exit_for(&err), Exit::Usage);
        assert!(err.to_string().contains("w4a8-avx2"));
        let err = force(&ks, "w4a8-amx").unwrap_err();
        assert!(err.to_string().contains("no AMX-INT8"), "{err}");
        assert_eq!(force(&ks, "w4a8-avx2").unwrap().name, "w4a8-avx2");
    }
}
