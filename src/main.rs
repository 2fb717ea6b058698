//! The `edgeplan` binary: parse, resolve into a request, run the command, and turn the
//! result into an exit code.

use std::process::ExitCode;

use edgeplan::error::{exit_for, is_broken_pipe, one_line};

fn main() -> ExitCode {
    let cli = edgeplan::cli::parse();
    match edgeplan::run(cli) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}", one_line(&format!("edgeplan: {err:#}")));
            ExitCode::from(exit_for(&err).code())
        }
    }
}
