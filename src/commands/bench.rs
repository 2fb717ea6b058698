//! `edgeplan bench`: load the profile, the model and the plan under test, pick the
//! executor (the real kernels, or the fake one tests use), run the bench pipeline, then
//! print the report, `--save` it into a copy of the profile, and apply `--strict`.
//!
//! This is where bench and plan meet: the plan is made here (built-in catalog) and handed
//! to bench as a [`PlanInput`]; bench never imports plan.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};

use crate::bench::backend::{Backend, KernelPath};
use crate::bench::clock::{self, Clock, FakeClock, RealClock};
use crate::bench::engine::protocol::Launcher;
use crate::bench::engine::solo::{LoadSample, Side, Stage};
use crate::bench::engine::{self, EngineBuild, EngineInputs, fake::FakeEngine, vllm::VllmLauncher};
use crate::bench::fake::FakeBackend;
use crate::bench::host;
use crate::bench::kernels_backend::KernelsBackend;
use crate::bench::request::{BenchRequest, Effort, EngineChoice, ModelSpec, resolve_threads};
use crate::bench::verdict::{PlanInput, Status};
use crate::bench::workload::Workload;
use crate::bench::{self, Inputs, Outcome, save};
use crate::contract::Engine;
use crate::error::{Exit, data_error, io_error, read_text_capped, temp_fail};
use crate::model::ModelShape;
use crate::output;
use crate::plan::input::{MAX_INPUT_BYTES, check_consistent};
use crate::profile::{HardwareClass, Priority, Profile};

use super::profile_copy;

/// The environment variable that swaps in the fake executor (tests only).
pub const EXECUTOR_ENV: &str = "EDGEPLAN_BENCH_EXECUTOR";

/// Which executor runs the GEMMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executor {
    Real,
    /// Simulated GEMMs (and, with `--engine`, the fake engine) on a virtual clock.
    Fake(FakeSettings),
}

/// What the fake executor simulates besides its default speeds (tests only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FakeSettings {
    /// This path runs 4x slower (to test a contradicted plan end to end).
    pub slow: Option<KernelPath>,
    /// This side runs 2x slower in the `--engine` run than in its solo run, as when
    /// another job shares the host (to test the solo check).
    pub disturb: Option<Side>,
}

/// A resolved `bench` command line.
#[derive(Debug, Clone)]
pub struct BenchCommand {
    pub request: BenchRequest,
    pub executor: Executor,
}

/// `edgeplan bench`.
pub fn run(cmd: BenchCommand) -> anyhow::Result<Exit> {
    let req = &cmd.request;
    if let Some(path) = &req.save {
        profile_copy::check_writable(path, "--save")?;
    }
    let (profile, source, original) = load_profile(req.profile.as_deref())?;
    let shape = match &req.model {
        ModelSpec::Preset(name) => ModelShape::load(name)?,
        ModelSpec::Config(path) => ModelShape::from_config_file(path)?,
    };
    let workload = Workload::from_model(&shape)?;
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (threads, thread_note) =
        resolve_threads(req.threads, profile.cpu.usable_threads, host_cpus)?;
    let (host_cpu, other_device) = compare_with_host(&profile, &source);
    let started_unix = clock::run_start(
        matches!(cmd.executor, Executor::Fake(_)),
        crate::timestamp::now_unix(),
        std::env::var(clock::SOURCE_DATE_EPOCH).ok().as_deref(),
    )?;
    let plan = plan_input(&profile, req.priority, &source);
    let engine_inputs = req
        .engine
        .as_ref()
        .map(|choice| engine_inputs(choice, (&profile, &plan), req, (&workload, &shape), threads));
    let inputs = Inputs {
        request: req,
        profile: &profile,
        host_cpu,
        other_device,
        plan: Ok(plan),
        workload: &workload,
        threads,
        thread_note,
        started_unix,
    };
    let outcome = match cmd.executor {
        Executor::Fake(fake) => run_fake(&inputs, engine_inputs.as_ref(), fake, threads)?,
        Executor::Real => run_real(
            &inputs,
            engine_inputs.as_ref(),
            req.engine.as_ref(),
            threads,
        )?,
    };
    finish(req, &profile, original.as_deref(), outcome)
}

/// The fake executor's run: simulated kernels, and the fake engine with `--engine`.
fn run_fake(
    inputs: &Inputs,
    engine: Option<&EngineInputs>,
    fake: FakeSettings,
    threads: usize,
) -> anyhow::Result<Outcome> {
    let clock = Arc::new(FakeClock::new(0.0));
    let Some(e) = engine else {
        let backend = FakeBackend::new(threads, clock.clone()).slowing(fake.slow);
        return execute(inputs, &backend, clock.as_ref());
    };
    let factor = |side: Side, stage: Stage| match (fake.disturb, stage) {
        (Some(d), Stage::EngineRun | Stage::OwnRun) if d == side => 2.0,
        _ => 1.0,
    };
    let launcher = |stage: Stage| -> anyhow::Result<Box<dyn Launcher>> {
        let mut engine = FakeEngine::vllm_like(clock.clone());
        engine.disturbance = factor(Side::Engine, stage);
        Ok(Box::new(engine))
    };
    let backend = |stage: Stage| {
        Ok(FakeBackend::new(threads, clock.clone())
            .slowing(fake.slow)
            .disturbed(factor(Side::Own, stage)))
    };
    let sides = Sides {
        launcher: &launcher,
        backend: &backend,
        load: &|_| None,
    };
    with_engine(inputs, e, &sides, clock.as_ref())
}

/// The real run: this host's kernels, and the engine's with `--engine`. One bench at a
/// time on this host (bench::lock), held until this returns, over the engine's rounds,
/// edgeplan's own and the solo runs.
fn run_real(
    inputs: &Inputs,
    engine: Option<&EngineInputs>,
    choice: Option<&EngineChoice>,
    threads: usize,
) -> anyhow::Result<Outcome> {
    let _lock = bench::lock::acquire(
        &bench::lock::default_path(),
        bench::lock::MAX_WAIT,
        &|line| diag!("edgeplan: {line}"),
    );
    let (Some(e), Some(choice)) = (engine, choice) else {
        return execute(inputs, &KernelsBackend::new(threads)?, &RealClock::new());
    };
    let launcher = |stage: Stage| -> anyhow::Result<Box<dyn Launcher>> {
        let launcher = launcher_for(choice)?;
        let what = match stage {
            Stage::EngineSolo => "its solo run: the planned build again, alone",
            _ => "it prepares its weights first: a minute or two",
        };
        diag!(
            "edgeplan: timing {}'s own kernels with {} ({what})",
            launcher.engine(),
            launcher.program()
        );
        Ok(launcher)
    };
    let backend = |_| KernelsBackend::new(threads);
    let sides = Sides {
        launcher: &launcher,
        backend: &backend,
        load: &host_load,
    };
    with_engine(inputs, e, &sides, &RealClock::new())
}

/// The engine's launcher for `choice`: the vLLM harness under a Python, or llama-bench.
fn launcher_for(choice: &EngineChoice) -> anyhow::Result<Box<dyn engine::protocol::Launcher>> {
    match choice {
        EngineChoice {
            engine: Engine::Vllm,
            program,
        } => Ok(Box::new(VllmLauncher::find(program.as_deref())?)),
        EngineChoice {
            engine: Engine::LlamaCpp,
            program,
        } => Ok(Box::new(engine::llama_cpp::LlamaBenchLauncher::find(
            program.as_deref(),
        )?)),
    }
}

/// The engine's builds on a CPU (from the catalog, each with the edgeplan kernel path
/// that measures the same weights) and the planned one.
fn engine_inputs<'a>(
    choice: &EngineChoice,
    (profile, plan): (&Profile, &PlanInput),
    req: &BenchRequest,
    (workload, shape): (&'a Workload, &ModelShape),
    threads: usize,
) -> EngineInputs<'a> {
    let catalog = crate::plan::Catalog::builtin();
    let (builds, planned) = match choice.engine {
        Engine::Vllm => {
            let builds = catalog
                .paths()
                .iter()
                .filter(|p| p.engine == Engine::Vllm)
                .filter_map(|p| {
                    let bench = p.bench_path.as_deref()?;
                    // One build per bench path: fp16 is measured by bf16.
                    (p.name == bench || p.name.starts_with(&format!("{bench}-"))).then(|| {
                        EngineBuild {
                            build: bench.to_string(),
                            catalog_path: p.name.clone(),
                            bits_per_weight: p.bits_per_weight.unwrap_or(16.0),
                            own_path: KernelPath::parse(bench),
                        }
                    })
                })
                .collect();
            let planned = match (&plan.off_cpu, plan.bench_path) {
                (Some(why), _) => Err(format!(
                    "{} {why}: the engine's CPU kernels do not check it",
                    plan.name
                )),
                (None, Some(p)) => Ok(p.name().to_string()),
                (None, None) => Err(format!("{} is not one of vLLM's CPU builds", plan.name)),
            };
            (builds, planned)
        }
        Engine::LlamaCpp => {
            // The plan under test is llama.cpp's own for this profile.
            let name = crate::plan::decide_for(profile, req.priority, &catalog, Engine::LlamaCpp)
                .path
                .name;
            llama_cpp_builds(&catalog, &name, plan.off_cpu.as_deref())
        }
    };
    EngineInputs {
        builds,
        planned,
        priority: req.priority,
        workload,
        model: engine::protocol::ModelDims {
            family: shape.model_type.clone(),
            hidden_size: workload.hidden_size,
            intermediate_size: workload.intermediate_size,
            layers: workload.layers,
            attention_heads: shape.num_attention_heads as usize,
            kv_heads: shape.num_key_value_heads as usize,
            head_dim: shape.head_dim as usize,
            vocab_size: workload.vocab_size,
            tie_word_embeddings: shape.tie_word_embeddings,
        },
        threads,
        prefill_tokens: req.prefill_tokens,
        quick: req.effort.is_quick(),
        rounds: req.rounds_policy(),
        l3_bytes: host::l3_size().0,
    }
}

/// llama.cpp's CPU builds the plan weighs (the catalog's 4-bit GGUF paths; edgeplan's
/// W4A8 kernels compute as they do, with 8-bit activations), and the planned one.
fn llama_cpp_builds(
    catalog: &crate::plan::Catalog,
    planned: &str,
    off_cpu: Option<&str>,
) -> (Vec<EngineBuild>, Result<String, String>) {
    let builds: Vec<EngineBuild> = catalog
        .paths()
        .iter()
        .filter(|p| p.engine == Engine::LlamaCpp && p.bits_per_weight.unwrap_or(16.0) < 8.0)
        .filter_map(|p| {
            Some(EngineBuild {
                build: p.gguf_type.as_deref()?.to_ascii_lowercase(),
                catalog_path: p.name.clone(),
                bits_per_weight: p.bits_per_weight.unwrap_or(16.0),
                own_path: Some(KernelPath::W4A8),
            })
        })
        .collect();
    let planned = match off_cpu {
        Some(why) => Err(format!(
            "{} {why}: the engine's CPU kernels do not check it",
            planned
        )),
        None => builds
            .iter()
            .find(|b| b.catalog_path == planned)
            .map(|b| b.build.clone())
            .ok_or_else(|| format!("{} is not one of llama.cpp's 4-bit CPU builds", planned)),
    };
    (builds, planned)
}

/// How an `--engine` run gets each side, per stage: the engine's launcher, edgeplan's
/// backend (made afresh for each stage, so no pool outlives its stage), and the host's
/// load (none under the fake executor).
struct Sides<'a, B> {
    launcher: &'a dyn Fn(Stage) -> anyhow::Result<Box<dyn Launcher>>,
    backend: &'a dyn Fn(Stage) -> anyhow::Result<B>,
    load: &'a dyn Fn(Stage) -> Option<LoadSample>,
}

/// An `--engine` run: the engine's rounds, edgeplan's own run, then each side briefly
/// alone (the solo check), in that order, never two at once; then the engine's section
/// set against the own run, into the report.
fn with_engine<B: Backend>(
    inputs: &Inputs,
    e: &EngineInputs,
    sides: &Sides<B>,
    clock: &dyn Clock,
) -> anyhow::Result<Outcome> {
    let mut load: Vec<LoadSample> = Vec::new();
    load.extend((sides.load)(Stage::EngineRun));
    let measured = engine::measure(e, (sides.launcher)(Stage::EngineRun)?.as_ref(), clock)?;
    load.extend((sides.load)(Stage::OwnRun));
    let (mut report, warnings) = match execute(inputs, &(sides.backend)(Stage::OwnRun)?, clock)? {
        Outcome::Report { report, warnings } => (report, warnings),
        kernels @ Outcome::Kernels(_) => return Ok(kernels),
    };
    let solo = match e.solo(&measured) {
        Some(engine_solo) => {
            load.extend((sides.load)(Stage::EngineSolo));
            let launcher = (sides.launcher)(Stage::EngineSolo)?;
            let engine_alone = engine::measure(&engine_solo, launcher.as_ref(), clock)?;
            load.extend((sides.load)(Stage::OwnSolo));
            let own_alone = own_solo(
                inputs,
                &e.own_paths(),
                &(sides.backend)(Stage::OwnSolo)?,
                clock,
            )?;
            Some(measured.solo_check(&report.results, &engine_alone, &own_alone, load))
        }
        None => None,
    };
    let section = engine::assemble(e, measured, engine::OwnRun::of(&report), solo);
    report.engine = Some(section);
    Ok(Outcome::Report { report, warnings })
}

/// edgeplan's kernels alone, briefly: a `--quick` run of `paths` with no plan, no
/// engine and no progress bar; its result rows.
fn own_solo<B: Backend>(
    inputs: &Inputs,
    paths: &[KernelPath],
    backend: &B,
    clock: &dyn Clock,
) -> anyhow::Result<Vec<bench::rows::ResultRow>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let request = BenchRequest {
        paths: paths.to_vec(),
        effort: Effort::Quick,
        rounds: None,
        budget_s: None,
        strict: false,
        save: None,
        engine: None,
        list_kernels: false,
        ..inputs.request.clone()
    };
    let solo = Inputs {
        request: &request,
        profile: inputs.profile,
        host_cpu: inputs.host_cpu.clone(),
        other_device: inputs.other_device.clone(),
        plan: Err("the solo run of edgeplan's kernels tests no plan".into()),
        workload: inputs.workload,
        threads: inputs.threads,
        thread_note: None,
        started_unix: inputs.started_unix,
    };
    let hidden = Bar(ProgressBar::hidden());
    match bench::run(&solo, backend, clock, &hidden)? {
        Outcome::Report { report, .. } => Ok(report.results),
        Outcome::Kernels(_) => Ok(Vec::new()),
    }
}

/// The host's load now, from `/proc/loadavg` (read capped, as every file edgeplan finds).
fn host_load(stage: Stage) -> Option<LoadSample> {
    let text =
        crate::fsx::read_text(Path::new("/proc/loadavg"), 4096, crate::fsx::Source::Found).ok()?;
    LoadSample::parse(stage, &text)
}

fn execute<B: Backend>(inputs: &Inputs, backend: &B, clock: &dyn Clock) -> anyhow::Result<Outcome> {
    bench::run(inputs, backend, clock, &Bar::new())
}

/// Prints the outcome, saves it, and picks the exit code. `original` is the input
/// profile as the user gave it (absent for the live probe): the saved copy keeps every
/// field of it this edgeplan does not know.
fn finish(
    req: &BenchRequest,
    profile: &Profile,
    original: Option<&str>,
    outcome: Outcome,
) -> anyhow::Result<Exit> {
    let (report, warnings) = match outcome {
        Outcome::Kernels(kernels) => {
            output::print_stdout(&output::terminal_text(&bench::kernel_list(
                &kernels, req.json,
            )?))?;
            return Ok(Exit::Success);
        }
        Outcome::Report { report, warnings } => (report, warnings),
    };
    for warning in &warnings {
        diag!("edgeplan: warning: {warning}");
    }
    let text = if req.json {
        output::json_text(&report)?
    } else {
        output::terminal_text(&report.to_table())
    };
    output::print_stdout(&text)?;
    if let (Some(path), Some(why)) = (&req.save, noisy(&report)) {
        return Err(temp_fail(format!(
            "bench --save {}: nothing saved: {why}",
            path.display()
        )));
    }
    if let Some(path) = &req.save {
        let mut copy = profile.clone();
        copy.measurements = Some(save::measurements(&report, profile.measurements.as_ref()));
        let text = profile_copy::merged_text(&output::json_text(&copy)?, original)?;
        let in_place = req
            .profile
            .as_deref()
            .is_some_and(|input| same_file(input, path));
        profile_copy::write_atomically(path, &text, "--save")?;
        if in_place {
            diag!(
                "edgeplan: measurements saved into the profile {} (updated in place)",
                path.display()
            );
        } else {
            diag!(
                "edgeplan: measurements saved into a copy of the profile at {}",
                path.display()
            );
        }
    }
    // With --engine, the engine's verdict is the one that says what to deploy.
    let (status, reason) = match &report.engine {
        Some(e) => (e.verdict.status, &e.verdict.reason),
        None => (report.verdict.status, &report.verdict.reason),
    };
    if req.strict && status == Status::Contradicted {
        diag!("edgeplan: bench --strict: the measurements contradict the plan: {reason}");
        return Ok(Exit::CheckFailed);
    }
    Ok(Exit::Success)
}

/// Why the run's figures must not be kept: the solo check found it noisy.
fn noisy(report: &bench::report::BenchReport) -> Option<&str> {
    report
        .engine
        .as_ref()
        .and_then(|e| e.solo.as_ref())
        .and_then(|s| s.reason.as_deref())
}

/// True when `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The profile to plan against: the file, stdin (`-`), or the live probe; with its
/// name, and the document as given (for `--save`). Read as `plan` reads one: capped,
/// UTF-8, and a profile whose class contradicts its architecture is refused (65).
fn load_profile(path: Option<&Path>) -> anyhow::Result<(Profile, String, Option<String>)> {
    let (text, shown) = match path {
        Some(path) if path.as_os_str() == "-" => {
            crate::output::hint_if_stdin_is_terminal("the profile");
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(std::io::stdin().lock(), MAX_INPUT_BYTES + 1),
                &mut bytes,
            )
            .map_err(|e| io_error(format!("stdin: cannot read: {e}")))?;
            if bytes.len() as u64 > MAX_INPUT_BYTES {
                return Err(data_error(format!(
                    "stdin: more than {} MiB; a profile is never that large",
                    MAX_INPUT_BYTES >> 20
                )));
            }
            let text = String::from_utf8(bytes)
                .map_err(|_| data_error("stdin: profile is not UTF-8 text"))?;
            (text, "stdin".to_string())
        }
        Some(path) => (
            read_text_capped(path, "profile", MAX_INPUT_BYTES, crate::fsx::Source::Named)?,
            path.display().to_string(),
        ),
        None => return Ok((crate::probe::live()?, "live probe".to_string(), None)),
    };
    // A UTF-8 byte-order mark is ignored, as plan ignores it (RFC 8259 §8.1).
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Err(data_error(format!(
            "{shown}: empty input, no profile in it"
        )));
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| data_error(format!("{shown}: not valid JSON: {e}")))?;
    let profile = check_consistent(Profile::from_value(value, &shown)?, &shown)?;
    Ok((profile, shown, Some(text.to_string())))
}

/// This host's CPU model, and a label when the profile describes another device (the
/// figures are always this host's).
fn compare_with_host(profile: &Profile, source: &str) -> (Option<String>, Option<String>) {
    if source == "live probe" {
        return (profile.cpu.model_name.clone(), None);
    }
    let shown = |p: &Profile| {
        format!(
            "{} ({})",
            p.cpu.model_name.as_deref().unwrap_or("an unnamed CPU"),
            p.hardware_class.as_str()
        )
    };
    match crate::probe::live() {
        Ok(host) => {
            let same = host.hardware_class == profile.hardware_class
                && host.cpu.model_name == profile.cpu.model_name;
            let label = (!same).then(|| {
                format!(
                    "the profile {source} describes another device, {}: every figure here is this host's, {}",
                    shown(profile),
                    shown(&host)
                )
            });
            (host.cpu.model_name, label)
        }
        Err(e) => (
            None,
            Some(format!(
                "this host could not be probed ({e}) to compare with the profile {source}: every figure here is this host's"
            )),
        ),
    }
}

/// The plan for `profile` at `priority` (built-in catalog), as the verdict needs it.
fn plan_input(profile: &Profile, priority: Priority, source: &str) -> PlanInput {
    let catalog = crate::plan::Catalog::builtin();
    let plan = crate::plan::decide(profile, priority, &catalog);
    let bench_path = catalog
        .get(&plan.path.name)
        .and_then(|spec| spec.bench_path.as_deref())
        .and_then(KernelPath::parse);
    let off_cpu = match profile.hardware_class {
        HardwareClass::CudaDiscrete => {
            Some("runs on the CUDA GPU (a discrete-GPU plan)".to_string())
        }
        HardwareClass::Jetson => {
            Some("runs on the Jetson's integrated GPU (CUDA, unified memory)".to_string())
        }
        HardwareClass::NpuPhone if bench_path.is_none() => {
            Some("is an export for the phone's NPU".to_string())
        }
        _ => None,
    };
    PlanInput {
        name: plan.path.name,
        bench_path: bench_path.filter(|_| off_cpu.is_none()),
        off_cpu,
        priority,
        source: source.to_string(),
        x86_without_amx: profile.hardware_class == HardwareClass::X86Cpu
            && !profile.x86_amx_int8_usable(),
    }
}

/// A progress bar on stderr, only when stderr is a terminal.
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar(ProgressBar::hidden());
        }
        let bar = ProgressBar::new(0);
        if let Ok(style) =
            ProgressStyle::with_template("bench [{bar:20}] {pos}/{len} {msg} ({elapsed})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Bar(bar)
    }
}

impl bench::Progress for Bar {
    fn start(&self, stages: u64) {
        self.0.set_length(stages);
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
