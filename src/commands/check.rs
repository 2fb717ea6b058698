//! `edgeplan check MANIFEST.toml`: every case of the manifest planned and compared; the
//! report on stdout, failures on stderr, exit 1 if any case fails.

use std::io::Write;

use crate::error::Exit;
use crate::plan::{check, load_catalog};

use super::CheckRequest;

/// `edgeplan check`.
pub fn run(request: CheckRequest) -> anyhow::Result<Exit> {
    let catalog = load_catalog(request.catalog.as_deref())?;
    let cases = check::read_manifest(&request.manifest, &catalog)?;
    let mut out = crate::output::stdout();
    let exit = check::run_cases(
        &request.manifest,
        &cases,
        &catalog,
        &mut crate::output::Terminal::new(&mut out),
        &mut std::io::stderr(),
    )?;
    out.flush()?;
    Ok(exit)
}
