//! The commands: the only layer that writes stdout and stderr, picks exit codes and
//! calls across domains (probe, plan, bench, model).
//!
//! `main` parses the command line, `cli::resolve` turns it into a [`Request`], and
//! [`run`] hands it to the command's module. Each module takes its request (domain
//! types, no clap), calls the domain modules and returns the exit code; errors carry
//! theirs ([`crate::error::Coded`]) up to `main`.

/// `eprintln!` for diagnostics: the formatted text on one line (see
/// [`crate::error::one_line`]).
macro_rules! diag {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::error::one_line(&format!($($arg)*)))
    };
}

pub mod bench;
pub mod check;
pub mod plan;
pub mod probe;
mod profile_copy;
pub mod schema;

use std::path::PathBuf;

use crate::error::Exit;

/// One resolved command line.
#[derive(Debug)]
pub enum Request {
    Probe(probe::ProbeRequest),
    Plan(plan::PlanRequest),
    Check(CheckRequest),
    Bench(bench::BenchCommand),
    Schema(schema::SchemaKind),
    /// Text the command line already rendered (completions, the man page): printed as is.
    Text(String),
}

/// What `check` was asked to do.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub manifest: PathBuf,
    pub catalog: Option<PathBuf>,
}

/// Runs one command to its exit code.
pub fn run(request: Request) -> anyhow::Result<Exit> {
    match request {
        Request::Probe(r) => probe::run(r),
        Request::Plan(r) => plan::run(r),
        Request::Check(r) => check::run(r),
        Request::Bench(r) => bench::run(r),
        Request::Schema(kind) => schema::run(kind),
        Request::Text(text) => {
            crate::output::print_stdout(&text)?;
            Ok(Exit::Success)
        }
    }
}
