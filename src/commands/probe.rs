//! `edgeplan probe`: probe the live host or a captured tree, print the warnings, dump
//! what was read when asked, and write the profile as JSON or a table.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::error::{Exit, io_error};
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
    if let Some(dir) = &request.dump {
        check_dump_target(dir)?;
    }
    let sys = match &request.sysroot {
        Some(dir) => {
            probe::check_sysroot(dir)?;
            SysRoot::at(dir)
        }
        None => SysRoot::live(),
    };
    let profile = probe::probe(&sys)?;
    for warning in &profile.warnings {
        diag!("edgeplan: warning: {warning}");
    }
    if let Some(dir) = &request.dump {
        let count = dump::write(&sys, dir)?;
        diag!(
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
        ProbeFormat::Table => crate::output::terminal_text(&render::table(&profile)),
    };
    crate::output::print_stdout(&text)?;
    Ok(Exit::Success)
}

/// `--dump DIR` writes a whole tree of files, replacing any of the same name: it goes
/// into a new or empty directory only, so it can never overwrite a capture (the
/// `--sysroot` being read, with redacted copies), `/` (a live `/sys`), or anything else
/// the user keeps there. 74, before anything is probed.
fn check_dump_target(dir: &std::path::Path) -> anyhow::Result<()> {
    let shown = dir.display();
    match crate::fsx::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(io_error(format!(
                "--dump {shown}: directory is not empty; give a new or empty directory (a dump would overwrite what is there)"
            ))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) if dir.exists() && !dir.is_dir() => Err(io_error(format!(
            "--dump {shown}: exists and is not a directory; give a new or empty directory"
        ))),
        // Anything else (a parent that is a file, no permission) is the dump's own
        // "cannot write dump" error, with the path it failed on.
        Err(_) => Ok(()),
    }
}
