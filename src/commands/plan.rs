//! `edgeplan plan`: gather the profiles (files, stdin, a sysroot or the live probe),
//! plan each one, add the memory fit, render, and pick the exit code.
//!
//! The domain work is `plan`'s (pure `decide`, `memory::fit`, `render`); this file only
//! wires it to `probe` and `model`, writes stdout and stderr, and decides the exit code.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

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
    let model = crate::model::ModelShape::load(&fit.model)
        .with_context(|| format!("--model {}", fit.model))?;
    Ok(memory::FitRequest {
        model,
        context: fit.context,
        concurrency: fit.concurrency,
        kv_dtype: fit.kv_dtype,
        headroom: fit.headroom,
    })
}

/// Gets the profiles to plan: the good ones and the errors.
fn gather(source: &Source) -> anyhow::Result<input::Inputs> {
    match source {
        Source::Profiles(specs) => Ok(input::load(specs, &mut std::io::stdin().lock())),
        Source::Sysroot(dir) => {
            let shown = dir.display().to_string();
            let profile = input::check_consistent(crate::probe::from_sysroot(dir)?, &shown)?;
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or(shown);
            let label = profile.label.clone().unwrap_or(name);
            Ok(input::Inputs {
                profiles: vec![Loaded { label, profile }],
                errors: vec![],
            })
        }
        Source::Live => {
            let profile = input::check_consistent(crate::probe::live()?, "live probe")?;
            let label = profile.label.clone().unwrap_or_else(|| "this host".into());
            Ok(input::Inputs {
                profiles: vec![Loaded { label, profile }],
                errors: vec![],
            })
        }
    }
}

/// `edgeplan plan`.
pub fn run(request: PlanRequest) -> anyhow::Result<Exit> {
    let fit = request.fit.as_ref().map(fit_request).transpose()?;
    let catalog = load_catalog(request.catalog.as_deref())?;
    let inputs = gather(&request.source)?;
    check_single(request.format, inputs.profiles.len() + inputs.errors.len())?;
    let mut first_error = None;
    for err in &inputs.errors {
        eprintln!("edgeplan: {err:#}");
        first_error.get_or_insert(exit_for(err));
    }
    check_expect(request.expect.as_deref(), &catalog)?;
    let mut mismatch = false;

    // Plans are rendered as they are made, so a large fleet is never held in memory.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let fleet_view = request.format == PlanFormat::Table && inputs.profiles.len() > 1;
    let mut fleet = fleet_view.then(|| render::FleetTable::new(request.explain, fit.is_some()));
    let mut too_big = false;
    // env, args and script feed `eval` and `$(...)`: they are held back and printed only on
    // success, so a failing command leaves a script nothing to run with.
    let mut held: Vec<u8> = Vec::new();
    for one in &inputs.profiles {
        let mut plan = plan_one(one, request.priority, &catalog);
        if let (Some(fit), Some(spec)) = (&fit, catalog.get(&plan.path.name)) {
            let memory = memory::fit(&one.profile, spec, fit);
            if memory.fits.is_none() {
                eprintln!(
                    "edgeplan: warning: {}: memory fit unknown ({}); not a pass",
                    one.label, memory.budget_source
                );
            }
            if memory.fits == Some(false) {
                too_big = true;
                eprintln!(
                    "edgeplan: {}",
                    memory::does_not_fit_line(&one.label, &memory)
                );
            }
            plan.memory = Some(memory);
        }
        match (request.format, &mut fleet) {
            (PlanFormat::Table, Some(fleet)) => fleet.add(&plan)?,
            (PlanFormat::Table, None) => render::table_one(&mut out, &plan, request.explain)?,
            (PlanFormat::Json, _) => render::json(&mut out, &plan)?,
            (PlanFormat::Jsonl, _) => render::jsonl(&mut out, std::slice::from_ref(&plan))?,
            (PlanFormat::Env, _) => render::env(&mut held, &plan)?,
            (PlanFormat::Args, _) => render::args(&mut held, &plan)?,
            (PlanFormat::Script, _) => {
                let lm_head = catalog.get(&plan.path.name).map(|spec| spec.lm_head);
                let text = crate::plan::script::script(&plan, &one.profile, lm_head)
                    .with_context(|| one.label.clone())?;
                held.extend_from_slice(text.as_bytes());
            }
        }
        if let Some(want) = request.expect.as_ref().filter(|w| **w != plan.path.name) {
            mismatch = true;
            eprintln!(
                "edgeplan: --expect {want}: {} planned {} at priority {}",
                plan.device.as_deref().unwrap_or("the device"),
                plan.path.name,
                plan.priority.as_str()
            );
        }
    }
    if let Some(fleet) = fleet {
        fleet.finish(&mut out)?;
    }

    // Precedence: unreadable input, then "does not fit", then an --expect mismatch.
    let exit = match first_error {
        Some(code) => code,
        None if too_big => Exit::DoesNotFit,
        None if mismatch => Exit::CheckFailed,
        None => Exit::Success,
    };
    if exit == Exit::Success {
        out.write_all(&held)?;
    }
    out.flush()?;
    Ok(exit)
}

/// `json`, `env` and `args` describe one device: a usage error for a fleet.
fn check_single(format: PlanFormat, inputs: usize) -> anyhow::Result<()> {
    let name = match format {
        PlanFormat::Json => "json",
        PlanFormat::Env => "env",
        PlanFormat::Args => "args",
        PlanFormat::Script => "script",
        PlanFormat::Table | PlanFormat::Jsonl => return Ok(()),
    };
    if inputs > 1 {
        return Err(usage(format!(
            "--format {name} describes one device, but the inputs hold {inputs} profiles; use --format jsonl or table for a fleet"
        )));
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
