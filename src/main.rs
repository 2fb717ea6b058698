//! The `edgeplan` binary: parse, dispatch, and turn the result into an exit code.

use std::process::ExitCode;

use clap::Parser;
use edgeplan::cli::{Cli, Command};
use edgeplan::error::{Exit, exit_for, is_broken_pipe};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("edgeplan: {err:#}");
            ExitCode::from(exit_for(&err).code())
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Probe(args) => edgeplan::probe::run(args),
        Command::Plan(args) => edgeplan::plan::run(args),
        Command::Check(args) => edgeplan::plan::check(args),
        Command::Bench(args) => edgeplan::bench::run(args),
    }
}
