//! `edgeplan plan` and `edgeplan check`: the weight-path decision, end to end.
//!
//! The pipeline: load the catalog (`catalog.rs`: built-in, or `--catalog FILE`), get the
//! profiles (`input.rs`: files, stdin, directories, JSON Lines; or `crate::probe` for
//! `--sysroot` and the live host), decide each one (`rules.rs`, pure), render them
//! (`render.rs`). In a fleet run a bad profile is reported on stderr and the rest are
//! still planned; the exit code is then the first error's (65 bad data, 66 missing).
//! `--expect` and `check` (`check.rs`) exit 1 on a mismatch. With `--model`, each plan
//! also gets a memory fit (`memory.rs`), and a device the model does not fit exits 3.
//! A profile saved by `bench --save` also gets its measured figures beside the
//! catalog's (`measured.rs`); they are reported, never decided on.
//!
//! Other modules call [`decide`] (pure) with a [`Catalog`] (usually
//! [`Catalog::builtin`]); the [`Plan`] it returns is the JSON contract's plan object.

pub mod catalog;
pub mod check;
pub mod input;
pub mod measured;
pub mod memory;
pub mod render;
pub mod rules;
pub mod schema;

use std::io::Write;

use anyhow::Context;
use std::path::PathBuf;

pub use catalog::{Catalog, PathId, PathSpec};
pub use rules::decide;
pub use schema::{Plan, Priority};

use crate::cli::{CheckArgs, PlanArgs, PlanFormat};
use crate::error::{Coded, Exit, exit_for};
use input::Loaded;

/// What `plan` was asked to do, free of clap.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub source: Source,
    pub priority: Priority,
    pub format: PlanFormat,
    pub expect: Option<String>,
    pub explain: bool,
    pub catalog: Option<PathBuf>,
    /// The memory fit to compute, when `--model` was given.
    pub fit: Option<memory::FitRequest>,
}

/// Where the profiles come from.
#[derive(Debug, Clone)]
pub enum Source {
    Profiles(Vec<PathBuf>),
    Sysroot(PathBuf),
    Live,
}

fn usage(message: String) -> anyhow::Error {
    Coded {
        exit: Exit::Usage,
        message,
    }
    .into()
}

impl PlanRequest {
    /// Resolves the arguments: usage errors (2) for bad memory-fit flags, and the model
    /// is loaded here (65 for a bad config, 66 for a missing one).
    pub fn new(args: PlanArgs) -> anyhow::Result<PlanRequest> {
        let source = match (args.profile.is_empty(), args.sysroot) {
            (false, _) => Source::Profiles(args.profile),
            (true, Some(dir)) => Source::Sysroot(dir),
            (true, None) => Source::Live,
        };
        let fit = match args.model {
            None => None,
            Some(spec) => {
                let Some(context) = args.context.filter(|c| *c > 0) else {
                    return Err(usage(
                        "--model needs --context TOKENS (a positive context length) for the memory fit".into(),
                    ));
                };
                if args.concurrency == 0 {
                    return Err(usage("--concurrency must be at least 1".into()));
                }
                let Some(kv_dtype) = memory::KvDtype::parse(&args.kv_dtype) else {
                    return Err(usage(format!(
                        "--kv-dtype {:?} is not one of bf16, fp16, fp8, int8, f32",
                        args.kv_dtype
                    )));
                };
                let headroom = args.headroom.unwrap_or(memory::DEFAULT_HEADROOM);
                if !(0.0..1.0).contains(&headroom) {
                    return Err(usage(format!(
                        "--headroom {headroom} must be a fraction in [0, 1), e.g. 0.10"
                    )));
                }
                let model = crate::model::ModelShape::load(&spec)
                    .with_context(|| format!("--model {spec}"))?;
                Some(memory::FitRequest {
                    model,
                    context,
                    concurrency: u64::from(args.concurrency),
                    kv_dtype,
                    headroom,
                })
            }
        };
        Ok(PlanRequest {
            source,
            priority: args.priority.into(),
            format: args.format,
            expect: args.expect,
            explain: args.explain,
            catalog: args.catalog,
            fit,
        })
    }
}

fn load_catalog(path: Option<&PathBuf>) -> anyhow::Result<Catalog> {
    match path {
        Some(path) => Catalog::from_file(path),
        None => Ok(Catalog::builtin()),
    }
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

/// Plans one loaded profile, naming the device by its label.
pub fn plan_one(one: &Loaded, priority: Priority, catalog: &Catalog) -> Plan {
    let mut plan = decide(&one.profile, priority, catalog);
    plan.device = Some(one.label.clone());
    measured::attach(&one.profile, &mut plan);
    plan
}

/// `edgeplan plan`.
pub fn run(args: PlanArgs) -> anyhow::Result<Exit> {
    let request = PlanRequest::new(args)?;
    let catalog = load_catalog(request.catalog.as_ref())?;
    let inputs = gather(&request.source)?;
    let single_only = matches!(
        request.format,
        PlanFormat::Json | PlanFormat::Env | PlanFormat::Args
    );
    if single_only && inputs.profiles.len() + inputs.errors.len() > 1 {
        let format = match request.format {
            PlanFormat::Json => "json",
            PlanFormat::Env => "env",
            _ => "args",
        };
        return Err(Coded {
            exit: Exit::Usage,
            message: format!(
                "--format {format} describes one device, but the inputs hold {} profiles; use --format jsonl or table for a fleet",
                inputs.profiles.len() + inputs.errors.len()
            ),
        }
        .into());
    }
    let mut first_error = None;
    for err in &inputs.errors {
        eprintln!("edgeplan: {err:#}");
        first_error.get_or_insert(exit_for(err));
    }
    let hint = match &request.expect {
        Some(want) if catalog.get(want).is_none() => format!(
            " (`{want}` is not a path in the {}; check the spelling)",
            catalog.origin
        ),
        _ => String::new(),
    };
    let mut mismatch = false;

    // Plans are rendered as they are made, so a large fleet is never held in memory.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let fleet_view = request.format == PlanFormat::Table && inputs.profiles.len() > 1;
    let mut fleet =
        fleet_view.then(|| render::FleetTable::new(request.explain, request.fit.is_some()));
    let mut too_big = false;
    for one in &inputs.profiles {
        let mut plan = plan_one(one, request.priority, &catalog);
        if let (Some(fit), Some(spec)) = (&request.fit, catalog.get(&plan.path.name)) {
            let memory = memory::fit(&one.profile, spec, fit);
            // The fitted max_model_len, max_num_seqs, ... join the path's kwargs.
            plan.engine_kwargs.extend(memory.engine_kwargs.clone());
            if memory.beyond_context_limit {
                eprintln!(
                    "edgeplan: warning: {}: --context {} is past {}'s limit of {} tokens",
                    one.label,
                    memory.context,
                    memory.model,
                    memory.context_limit.unwrap_or(0)
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
            (PlanFormat::Env, _) => render::env(&mut out, &plan)?,
            (PlanFormat::Args, _) => render::args(&mut out, &plan)?,
        }
        if let Some(want) = request.expect.as_ref().filter(|w| **w != plan.path.name) {
            mismatch = true;
            eprintln!(
                "edgeplan: --expect {want}: {} planned {} at priority {}{hint}",
                plan.device.as_deref().unwrap_or("the device"),
                plan.path.name,
                plan.priority.as_str()
            );
        }
    }
    if let Some(fleet) = fleet {
        fleet.finish(&mut out)?;
    }
    out.flush()?;

    // Precedence: unreadable input, then "does not fit", then an --expect mismatch.
    Ok(match first_error {
        Some(code) => code,
        None if too_big => Exit::DoesNotFit,
        None if mismatch => Exit::CheckFailed,
        None => Exit::Success,
    })
}

/// `edgeplan check MANIFEST.toml`.
pub fn check(args: CheckArgs) -> anyhow::Result<Exit> {
    let catalog = load_catalog(args.catalog.as_ref())?;
    let cases = check::read_manifest(&args.manifest, &catalog)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let exit = check::run_cases(
        &args.manifest,
        &cases,
        &catalog,
        &mut out,
        &mut std::io::stderr(),
    )?;
    out.flush()?;
    Ok(exit)
}
