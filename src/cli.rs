//! The command line, as clap types only.
//!
//! Each subcommand's arguments are converted into that command's own request type
//! before any domain code runs, so nothing below `main` sees clap. The doc comments are
//! the `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "edgeplan",
    version,
    about = "Deploy planner for LLMs at the edge: probe a device, plan the weight path, bench the kernels"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the device profile (CPU features with OS enablement, memory, GPUs, Jetson, Android NPU).
    Probe(ProbeArgs),
    /// Choose the weight path for a device and print the engine kwargs and build script.
    Plan(PlanArgs),
    /// Check a TOML manifest of expected plans; exit 1 if any case fails.
    Check(CheckArgs),
    /// Run the bundled int4 GEMM kernels on this host to confirm the plan.
    Bench(BenchArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeFormat {
    Json,
    Table,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Read /proc, /sys and build.prop files below DIR instead of / (nothing live is read).
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    /// Output format (default: table on a terminal, json otherwise).
    #[arg(long, value_enum)]
    pub format: Option<ProbeFormat>,
    /// Copy every file the probe reads into DIR (serials and UUIDs redacted), for --sysroot.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Priority {
    Speed,
    Fidelity,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Speed => "speed",
            Priority::Fidelity => "fidelity",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Table,
    Json,
    Jsonl,
    Env,
    Args,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A profile file (one JSON profile or JSON Lines), `-` for stdin, or a directory of *.json. Repeatable.
    #[arg(long, value_name = "FILE|-|DIR")]
    pub profile: Vec<PathBuf>,
    /// Probe a captured /proc + /sys tree instead of the live host.
    #[arg(long, value_name = "DIR", conflicts_with = "profile")]
    pub sysroot: Option<PathBuf>,
    /// What to optimise for.
    #[arg(long, value_enum, default_value = "speed")]
    pub priority: Priority,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: PlanFormat,
    /// Exit 1 unless every planned path is NAME (for CI).
    #[arg(long, value_name = "NAME")]
    pub expect: Option<String>,
    /// Show each rule with the profile facts it used, and the alternatives that lost.
    #[arg(long)]
    pub explain: bool,
    /// Replace the built-in path catalog with this TOML file.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// Model for the memory fit: a preset name or a Hugging Face config.json.
    #[arg(long, value_name = "PRESET|config.json")]
    pub model: Option<String>,
    /// Context length in tokens for the memory fit.
    #[arg(long, value_name = "TOKENS", requires = "model")]
    pub context: Option<u64>,
    /// Concurrent sequences for the memory fit.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "model")]
    pub concurrency: u32,
    /// KV cache element type for the memory fit.
    #[arg(long, value_name = "DTYPE", default_value = "bf16", requires = "model")]
    pub kv_dtype: String,
    /// Fraction of the budget kept free for activations and the allocator (0..1).
    #[arg(long, value_name = "FRACTION", requires = "model")]
    pub headroom: Option<f64>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The manifest: [[case]] entries with profile, priority and expect.
    #[arg(value_name = "MANIFEST.toml")]
    pub manifest: PathBuf,
    /// Replace the built-in path catalog with this TOML file.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchFormat {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Model preset (qwen3-1.7b, qwen2.5-0.5b, llama-3.1-8b).
    #[arg(
        long,
        value_name = "PRESET",
        default_value = "qwen3-1.7b",
        conflicts_with = "model_config"
    )]
    pub model: String,
    /// A Hugging Face config.json instead of a preset.
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
    /// Paths to run (comma-separated: w4a8, w4a16, bf16); the planned path is always included.
    #[arg(long, value_delimiter = ',', value_name = "PATH,...")]
    pub paths: Vec<String>,
    /// Force one kernel variant by name (see the kernel list in `bench --list-kernels`).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// List the kernel variants and whether this host can run them, then exit.
    #[arg(long)]
    pub list_kernels: bool,
    /// Tokens per prefill step.
    #[arg(long, value_name = "TOKENS", default_value_t = 128)]
    pub prefill_tokens: usize,
    /// Worker threads (default: the profile's usable threads).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Fewer layers and repeats (still a working set over the L3).
    #[arg(long)]
    pub quick: bool,
    /// The profile to plan against (default: probe the live host).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Priority of the plan being confirmed.
    #[arg(long, value_enum, default_value = "speed")]
    pub priority: Priority,
    /// Exit 1 when the measurements contradict the plan.
    #[arg(long)]
    pub strict: bool,
    /// Write the measurements into a copy of the profile at FILE.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: BenchFormat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_cli() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
