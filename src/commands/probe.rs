//! `edgeplan probe`: probe the live host or a captured tree, print the warnings, dump
//! what was read when asked, and write the profile as JSON or a table.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::error::Exit;
use crate::probe::{self, dump, render, sysroot::SysRoot};

/// What `probe` was asked to do.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    /// Read a captured tree below this directory instead of `/`.
    pub sysroot: Option<PathBuf>,
    /// `None`: a table on a terminal, JSON otherwise.
    pub format: Option<ProbeFormat>,
    /// Copy every file read into this directory.
    pub dump: Option<PathBuf>,
}

/// How the profile is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeFormat {
    Json,
    Table,
}

/// `edgeplan probe`.
pub fn run(request: ProbeRequest) -> anyhow::Result<Exit> {
    let sys = match &request.sysroot {
        Some(dir) => {
            probe::check_sysroot(dir)?;
            SysRoot::at(dir)
        }
        None => SysRoot::live(),
    };
    let profile = probe::probe(&sys)?;
    for warning in &profile.warnings {
        eprintln!("edgeplan: warning: {warning}");
    }
    if let Some(dir) = &request.dump {
        let count = dump::write(&sys, dir)?;
        eprintln!(
            "edgeplan: wrote {count} entries to {} (replay with --sysroot {})",
            dir.display(),
            dir.display()
        );
    }
    let format = request
        .format
        .unwrap_or(if std::io::stdout().is_terminal() {
            ProbeFormat::Table
        } else {
            ProbeFormat::Json
        });
    let text = match format {
        ProbeFormat::Json => crate::output::json_text(&profile)?,
        ProbeFormat::Table => render::table(&profile),
    };
    crate::output::print_stdout(&text)?;
    Ok(Exit::Success)
}
