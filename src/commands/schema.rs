//! `edgeplan schema profile|plan|check|bench`: the JSON Schema of each document, derived from
//! the serde types that read and write it (schemars), so it cannot drift from the code.
//! The same schemas are committed under `docs/schema/` and checked in the tests against
//! every fixture and command output.

use crate::error::Exit;

/// Which document's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    Profile,
    Plan,
    Check,
    Bench,
}

/// The schema of `kind` as pretty JSON.
pub fn schema_text(kind: SchemaKind) -> anyhow::Result<String> {
    let schema = match kind {
        SchemaKind::Profile => schemars::schema_for!(crate::profile::Profile),
        SchemaKind::Plan => schemars::schema_for!(crate::plan::Plan),
        SchemaKind::Check => schemars::schema_for!(crate::plan::check::RawManifest),
        SchemaKind::Bench => schemars::schema_for!(crate::bench::report::BenchReport),
    };
    crate::output::json_text(&schema)
}

/// `edgeplan schema KIND`.
pub fn run(kind: SchemaKind) -> anyhow::Result<Exit> {
    crate::output::print_stdout(&schema_text(kind)?)?;
    Ok(Exit::Success)
}
