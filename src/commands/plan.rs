//! `edgeplan plan`: gather the profiles (files, stdin, a sysroot or the live probe),
//! plan each one, add the memory fit, render, and pick the exit code.
//!
//! The domain work is `plan`'s (pure `decide`, `memory::fit`, `render`); this file only
//! wires it to `probe` and `model`, writes stdout and stderr, and decides the exit code.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::engine::{self, Engine};
use crate::error::{Exit, exit_for, usage};
use crate::plan::input::{self, Loaded};
use crate::plan::{Catalog, load_catalog, memory, plan_one, render};
use crate::profile::Priority;

/// What `plan` was asked to do.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub source: Source,
    pub priority: Priority,
    pub format: PlanFormat,
    pub expect: Option<String>,
    pub explain: bool,
    pub catalog: Option<PathBuf>,
    /// The engine the plan is rendered for.
    pub engine: Engine,
    /// The memory fit to compute, when `--model` was given.
    pub fit: Option<FitArgs>,
}

/// How the plans are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    Table,
    Json,
    Jsonl,
    Env,
    Args,
    /// A bash script that builds the checkpoint and serves it.
    Script,
}

/// Where the profiles come from.
#[derive(Debug, Clone)]
pub enum Source {
    Profiles(Vec<PathBuf>),
    Sysroot(PathBuf),
    Live,
}

/// The memory-fit flags, checked; the model is loaded when the command runs.
#[derive(Debug, Clone)]
pub struct FitArgs {
    /// A preset name or a config.json path.
    pub model: String,
    pub context: u64,
    pub concurrency: u64,
    pub kv_dtype: memory::KvDtype,
    pub headroom: f64,
}

/// Loads the model (65 for a bad config, 66 for a missing one).
fn fit_request(fit: &FitArgs) -> anyhow::Result<memory::FitRequest> {
    let model = crate::model::ModelShape::load(&fit.model).context("--model")?;
    Ok(memory::FitRequest {
        model,
        context: fit.context,
        concurrency: fit.concurrency,
        kv_dtype: fit.kv_dtype,
        headroom: fit.headroom,
    })
}

/// Streams the profiles to plan, good and bad, to `f`.
fn gather(
    source: &Source,
    f: &mut dyn FnMut(input::Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    match source {
        Source::Profiles(specs) => {
            if specs.iter().any(|s| s.as_os_str() == "-") {
                crate::output::hint_if_stdin_is_terminal("profiles");
            }
            input::for_each(specs, &mut std::io::stdin().lock(), f)
        }
        Source::Sysroot(dir) => {
            let shown = dir.display().to_string();
            let profile = input::check_consistent(crate::probe::from_sysroot(dir)?, &shown)?;
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or(shown);
            let label = profile.label.clone().unwrap_or(name);
            f(Ok(Loaded { label, profile }))
        }
        Source::Live => {
            let profile = input::check_consistent(crate::probe::live()?, "live probe")?;
            let label = profile.label.clone().unwrap_or_else(|| "this host".into());
            f(Ok(Loaded { label, profile }))
        }
    }
}

/// The formats that describe one device.
fn single_name(format: PlanFormat) -> Option<&'static str> {
    match format {
        PlanFormat::Json => Some("json"),
        PlanFormat::Env => Some("env"),
        PlanFormat::Args => Some("args"),
        PlanFormat::Script => Some("script"),
        PlanFormat::Table | PlanFormat::Jsonl => None,
    }
}

/// `edgeplan plan`.
pub fn run(request: PlanRequest) -> anyhow::Result<Exit> {
    let fit = request.fit.as_ref().map(fit_request).transpose()?;
    let catalog = load_catalog(request.catalog.as_deref())?;
    catalog.require(request.engine)?;
    check_expect(request.expect.as_deref(), &catalog)?;
    let single = single_name(request.format);

    // Plans are rendered as they are made, so a fleet of any size is never held in
    // memory (the table's fleet view keeps one short row per device). The one-device
    // formats are held until the end: env, args and script feed `eval` and `$(...)`, so
    // they are printed only on success and a failing command leaves a script nothing.
    let mut out = crate::output::stdout();
    let mut held: Vec<u8> = Vec::new();
    let mut first_error = None;
    let mut mismatch = false;
    let mut too_big = false;
    let mut seen = 0usize;
    let mut pending: Option<crate::plan::Plan> = None;
    let mut fleet: Option<render::FleetTable> = None;

    gather(&request.source, &mut |item| {
        seen += 1;
        if let Some(name) = single
            && seen > 1
        {
            return Err(usage(format!(
                "--format {name} describes one device, but the inputs hold more than one profile; use --format jsonl or table for a fleet"
            )));
        }
        let one = match item {
            Ok(one) => one,
            Err(err) => {
                let exit = exit_for(&err.error);
                diag!("edgeplan: {:#}", err.error);
                first_error.get_or_insert(exit);
                if request.format == PlanFormat::Jsonl {
                    render::jsonl_error(
                        &mut out,
                        &err.source,
                        err.line,
                        &format!("{:#}", err.error),
                        exit.code(),
                    )?;
                }
                return Ok(());
            }
        };
        let mut plan = plan_one(&one, request.priority, &catalog, request.engine);
        if let Some(fit) = &fit {
            plan = fit_or_fall_back(plan, &one, &request, &catalog, fit);
            if let Some(spec) = catalog.get(&plan.path.name) {
                too_big |= !attach_fit(&mut plan, &one, &memory_of(&one, spec, fit));
            }
        }
        engine::attach(&mut plan, request.engine);
        mismatch |= !expectation_holds(request.expect.as_deref(), &plan);
        match request.format {
            PlanFormat::Table => match (&mut fleet, pending.take()) {
                (Some(fleet), _) => fleet.add(&plan)?,
                (None, Some(first)) => {
                    let mut table = render::FleetTable::new(request.explain, fit.is_some());
                    table.add(&first)?;
                    table.add(&plan)?;
                    fleet = Some(table);
                }
                (None, None) => pending = Some(plan),
            },
            PlanFormat::Json => render::json(&mut held, &plan)?,
            PlanFormat::Jsonl => render::jsonl(&mut out, std::slice::from_ref(&plan))?,
            PlanFormat::Env => render::env(&mut held, &plan)?,
            PlanFormat::Args => render::args(&mut held, &plan)?,
            PlanFormat::Script => {
                let text = engine::script(&plan, &one.profile, request.engine)
                    .with_context(|| one.label.clone())?;
                held.extend_from_slice(text.as_bytes());
            }
        }
        Ok(())
    })?;
    finish_table(&mut out, fleet, pending, request.explain)?;

    // Precedence: unreadable input, then "does not fit", then an --expect mismatch.
    let exit = match first_error {
        Some(code) => code,
        None if too_big => Exit::DoesNotFit,
        None if mismatch => Exit::CheckFailed,
        None => Exit::Success,
    };
    // json shows the plan whatever the exit (as table and jsonl do); the formats a
    // script consumes print only on success.
    if exit == Exit::Success || request.format == PlanFormat::Json {
        out.write_all(&held)?;
    }
    out.flush()?;
    Ok(exit)
}

/// Writes the table format's output (the fleet, or the one device's table), through the
/// terminal filter: tables show input text (labels, notes, catalog prose).
fn finish_table(
    out: &mut dyn Write,
    fleet: Option<render::FleetTable>,
    pending: Option<crate::plan::Plan>,
    explain: bool,
) -> anyhow::Result<()> {
    let mut out = crate::output::Terminal::new(out);
    if let Some(fleet) = fleet {
        fleet.finish(&mut out)?;
    } else if let Some(plan) = pending {
        render::table_one(&mut out, &plan, explain)?;
    }
    Ok(())
}

/// `--expect NAME` must name a path of the catalog: bad input data (65), as an unknown
/// `expect` in a `check` manifest is.
fn check_expect(expect: Option<&str>, catalog: &Catalog) -> anyhow::Result<()> {
    match expect {
        Some(want) if catalog.get(want).is_none() => {
            let known: Vec<&str> = catalog.paths().iter().map(|p| p.name.as_str()).collect();
            Err(crate::error::data_error(format!(
                "--expect {want}: not a path in the {} (known: {})",
                catalog.origin,
                known.join(", ")
            )))
        }
        _ => Ok(()),
    }
}

/// The memory fit of `spec` on this device, as its engine allocates it.
fn memory_of(
    one: &Loaded,
    spec: &crate::plan::catalog::PathSpec,
    fit: &memory::FitRequest,
) -> crate::plan::memory::MemoryFit {
    match spec.engine {
        crate::contract::Engine::LlamaCpp => {
            crate::plan::memory_llama_cpp::fit(&one.profile, spec, fit)
        }
        crate::contract::Engine::Vllm => memory::fit(&one.profile, spec, fit),
    }
}

/// `plan`, or, when its path does not fit and it names a memory fallback (a path chosen
/// for speed or fidelity over a smaller one: a CPU's measured bf16, a GPU's 16-bit
/// weights), the plan re-made for memory, said on stderr. The fallback is taken when it
/// fits, or when the first path's weights alone do not; a KV cache too big for both
/// keeps the first path and its advice (a shorter context or fewer sequences).
fn fit_or_fall_back(
    plan: crate::plan::Plan,
    one: &Loaded,
    request: &PlanRequest,
    catalog: &crate::plan::Catalog,
    fit: &memory::FitRequest,
) -> crate::plan::Plan {
    let (Some(fallback), Some(spec)) = (&plan.memory_fallback, catalog.get(&plan.path.name)) else {
        return plan;
    };
    let first = memory_of(one, spec, fit);
    if first.fits != Some(false) {
        return plan;
    }
    let options = crate::plan::rules::Options { memory_first: true };
    let smaller =
        crate::plan::plan_one_with(one, request.priority, catalog, request.engine, options);
    let smaller_fits = catalog
        .get(&smaller.path.name)
        .is_some_and(|s| memory_of(one, s, fit).fits == Some(true));
    let weights_overflow = first
        .budget_bytes
        .is_some_and(|b| first.weights_bytes > b - first.headroom_bytes.unwrap_or(0).min(b));
    if !smaller_fits && !weights_overflow {
        return plan;
    }
    diag!(
        "edgeplan: {}: {} does not fit at this context; planned its memory fallback, {}",
        one.label,
        plan.path.name,
        fallback
    );
    smaller
}

/// Adds the memory fit to `plan` (its figures join the deployment), with its warnings
/// on stderr. False when the model does not fit.
fn attach_fit(
    plan: &mut crate::plan::Plan,
    one: &Loaded,
    memory: &crate::plan::memory::MemoryFit,
) -> bool {
    let memory = memory.clone();
    // The fitted context, sequences and KV size join the deployment the engine renders.
    crate::plan::deploy::apply_fit(&memory, &mut plan.deploy);
    if memory.beyond_context_limit {
        diag!(
            "edgeplan: warning: {}: --context {} is past {}'s limit of {} tokens",
            one.label,
            memory.context,
            memory.model,
            memory.context_limit.unwrap_or(0)
        );
    }
    if memory.fits.is_none() {
        diag!(
            "edgeplan: warning: {}: memory fit unknown ({}); not a pass",
            one.label,
            memory.budget_source
        );
    }
    let fits = memory.fits != Some(false);
    if !fits {
        diag!(
            "edgeplan: {}",
            memory::does_not_fit_line(&one.label, &memory)
        );
    }
    plan.memory = Some(memory);
    fits
}

/// False (with a line on stderr) when `--expect` names another path than the plan's.
fn expectation_holds(expect: Option<&str>, plan: &crate::plan::Plan) -> bool {
    let Some(want) = expect.filter(|w| *w != plan.path.name) else {
        return true;
    };
    diag!(
        "edgeplan: --expect {want}: {} planned {} at priority {}",
        plan.device.as_deref().unwrap_or("the device"),
        plan.path.name,
        plan.priority.as_str()
    );
    false
}
