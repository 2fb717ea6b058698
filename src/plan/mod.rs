//! `edgeplan plan` and `edgeplan check`: the weight-path decision, end to end.
//!
//! The pipeline: load the catalog (`catalog.rs`: built-in, or `--catalog FILE`), get the
//! profiles (`input.rs`: files, stdin, directories, JSON Lines; or `crate::probe` for
//! `--sysroot` and the live host), decide each one (`rules.rs`, pure), render them
//! (`render.rs`). In a fleet run a bad profile is reported on stderr and the rest are
//! still planned; the exit code is then the first error's (65 bad data, 66 missing).
//! `--expect` and `check` (`check.rs`) exit 1 on a mismatch.
//!
//! Other modules call [`decide`] (pure) with a [`Catalog`] (usually
//! [`Catalog::builtin`]); the [`Plan`] it returns is the JSON contract's plan object.

pub mod catalog;
pub mod check;
pub mod input;
pub mod render;
pub mod rules;
pub mod schema;

use std::io::Write;
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
}

/// Where the profiles come from.
#[derive(Debug, Clone)]
pub enum Source {
    Profiles(Vec<PathBuf>),
    Sysroot(PathBuf),
    Live,
}

impl From<PlanArgs> for PlanRequest {
    fn from(args: PlanArgs) -> PlanRequest {
        let source = match (args.profile.is_empty(), args.sysroot) {
            (false, _) => Source::Profiles(args.profile),
            (true, Some(dir)) => Source::Sysroot(dir),
            (true, None) => Source::Live,
        };
        PlanRequest {
            source,
            priority: args.priority.into(),
            format: args.format,
            expect: args.expect,
            explain: args.explain,
            catalog: args.catalog,
        }
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
    plan
}

/// `edgeplan plan`.
pub fn run(args: PlanArgs) -> anyhow::Result<Exit> {
    let request = PlanRequest::from(args);
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
    let mut fleet = fleet_view.then(|| render::FleetTable::new(request.explain));
    for one in &inputs.profiles {
        let plan = plan_one(one, request.priority, &catalog);
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

    Ok(match first_error {
        Some(code) => code,
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
