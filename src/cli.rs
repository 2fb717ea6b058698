//! The command line: clap types, and [`resolve`] into each command's request.
//!
//! Each subcommand's arguments become that command's own request type (in
//! [`crate::commands`], with domain enums) before any domain code runs, so nothing below
//! `commands` sees clap. Every usage error (exit 2) that clap cannot catch itself is
//! raised here, through the one [`usage`] constructor. The doc comments are the `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};

use crate::commands::bench::{BenchCommand, EXECUTOR_ENV, Executor, FakeSettings};
use crate::commands::plan::{FitArgs, PlanFormat, PlanRequest, Source};
use crate::commands::probe::{ProbeFormat, ProbeRequest};
use crate::commands::schema::SchemaKind;
use crate::commands::{CheckRequest, Request};
use crate::contract::Engine;
use crate::error::usage;
use crate::profile::Priority;

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

/// Parses the process's arguments, with `-h`, `--help` and usage errors wrapped to
/// [`crate::output::width`] (the terminal, `COLUMNS`, or 80), as the tables are.
pub fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command()
        .term_width(crate::output::width())
        .get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
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
    /// Print the JSON Schema of a document edgeplan reads or writes.
    Schema(SchemaArgs),
    /// Print a shell completion script (bash, zsh or fish).
    Completions(CompletionsArgs),
    /// Print the man page (roff), e.g. `edgeplan man > edgeplan.1`.
    Man,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKindArg {
    /// The device profile (`probe --format json`, `plan --profile`).
    Profile,
    /// The plan (`plan --format json`, each line of `--format jsonl`).
    Plan,
    /// The `check` manifest (TOML, checked as its JSON equivalent).
    Check,
    /// The bench report (`bench --format json`).
    Bench,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which document.
    #[arg(value_enum)]
    pub kind: SchemaKindArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: ShellArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeFormatArg {
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
    pub format: Option<ProbeFormatArg>,
    /// Copy every file the probe reads into DIR, a new or empty directory (serials and UUIDs redacted), for --sysroot.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PriorityArg {
    Speed,
    Fidelity,
}

impl From<PriorityArg> for Priority {
    fn from(p: PriorityArg) -> Priority {
        match p {
            PriorityArg::Speed => Priority::Speed,
            PriorityArg::Fidelity => Priority::Fidelity,
        }
    }
}

/// `--engine`'s values are [`Engine::ALL`], spelled as plans spell them: the one engine
/// enum, no copy of it here.
impl ValueEnum for Engine {
    fn value_variants<'a>() -> &'a [Self] {
        &Engine::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()).help(self.summary()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormatArg {
    Table,
    Json,
    Jsonl,
    Env,
    Args,
    /// A bash script that builds the checkpoint with public tools and serves it.
    Script,
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
    pub priority: PriorityArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: PlanFormatArg,
    /// The engine to plan for: its rules choose the path, and its flags, environment
    /// and build script are printed.
    #[arg(long, value_enum, default_value = "vllm")]
    pub engine: Engine,
    /// Exit 1 unless every planned path is NAME (for CI).
    #[arg(long, value_name = "NAME")]
    pub expect: Option<String>,
    /// Show each rule with the profile facts it used, and the alternatives that lost.
    #[arg(long)]
    pub explain: bool,
    /// Replace the built-in path catalog with this TOML file.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// Model for the memory fit: a preset name (docs/models.md), a Hugging Face ORG/NAME
    /// (read from the local Hugging Face cache, else its preset), a config.json, or the
    /// model directory that holds it.
    #[arg(long, value_name = "PRESET|ORG/NAME|PATH", value_hint = ValueHint::AnyPath)]
    pub model: Option<String>,
    /// Context length in tokens for the memory fit: 8192, or with k for x1024 as model
    /// cards mean it (32k = 32768, 128k = 131072).
    #[arg(long, value_name = "TOKENS", requires = "model")]
    pub context: Option<String>,
    /// Concurrent sequences for the memory fit.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "model")]
    pub concurrency: u32,
    /// KV cache element type for the memory fit.
    #[arg(long, value_name = "DTYPE", default_value = "bf16", requires = "model")]
    pub kv_dtype: String,
    /// Fraction of the budget kept free for activations and the allocator (0..1).
    #[arg(
        long,
        value_name = "FRACTION",
        requires = "model",
        allow_negative_numbers = true
    )]
    pub headroom: Option<f64>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The manifest: [[case]] entries with profile, priority and expect; `-` for stdin
    /// (profile paths are then relative to the current directory).
    #[arg(value_name = "MANIFEST.toml|-")]
    pub manifest: PathBuf,
    /// Replace the built-in path catalog with this TOML file.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchFormatArg {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Model whose shapes are run: a preset name (docs/models.md), a Hugging Face
    /// ORG/NAME (read from the local Hugging Face cache, else its preset), a config.json,
    /// or the model directory that holds it.
    #[arg(
        long,
        value_name = "PRESET|ORG/NAME|PATH",
        value_hint = ValueHint::AnyPath,
        default_value = "qwen3-1.7b",
        conflicts_with = "model_config"
    )]
    pub model: String,
    /// A Hugging Face config.json (a file only; --model also takes one).
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
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
    /// Fewer layers and repeats (still a working set over the L3); paired rounds stop
    /// after about 5 s instead of 30 s.
    #[arg(long)]
    pub quick: bool,
    /// Run exactly N paired rounds (at least 6) instead of stopping adaptively.
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Seconds of paired rounds after which no new round starts.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub budget: Option<String>,
    /// The profile to plan against, `-` for stdin (default: probe the live host).
    #[arg(long, value_name = "FILE|-")]
    pub profile: Option<PathBuf>,
    /// Priority of the plan being confirmed.
    #[arg(long, value_enum, default_value = "speed")]
    pub priority: PriorityArg,
    /// Exit 1 when the measurements contradict the plan.
    #[arg(long)]
    pub strict: bool,
    /// Write the measurements into a copy of the profile at FILE (the --profile file itself updates it in place; unknown fields are kept).
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: BenchFormatArg,
    /// Also time this engine's own kernels on the model's shapes (vllm: stock vLLM's CPU
    /// kernels, run by its Python; llama.cpp: llama-bench) and say which build to deploy
    /// with it on this host.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<Engine>,
    /// The Python that vLLM is installed in (with --engine vllm; default: python3 on PATH).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// llama.cpp's llama-bench (with --engine llama.cpp; default: llama-bench on PATH).
    #[arg(long, value_name = "PATH")]
    pub llama_bench: Option<PathBuf>,
}

/// The parsed command line as the request its command runs.
pub(crate) fn resolve(cli: Cli) -> anyhow::Result<Request> {
    Ok(match cli.command {
        Command::Probe(args) => Request::Probe(probe_request(args)?),
        Command::Plan(args) => Request::Plan(plan_request(args)?),
        Command::Check(args) => Request::Check(CheckRequest {
            manifest: args.manifest,
            catalog: args.catalog,
        }),
        Command::Bench(args) => Request::Bench(bench_request(args)?),
        Command::Schema(args) => Request::Schema(match args.kind {
            SchemaKindArg::Profile => SchemaKind::Profile,
            SchemaKindArg::Plan => SchemaKind::Plan,
            SchemaKindArg::Check => SchemaKind::Check,
            SchemaKindArg::Bench => SchemaKind::Bench,
        }),
        Command::Completions(args) => Request::Text(completions(args.shell)),
        Command::Man => Request::Text(man_page()?),
    })
}

/// The completion script for `shell`, from the clap definition above.
fn completions(shell: ShellArg) -> String {
    use clap::CommandFactory;
    use clap_complete::Shell;
    let shell = match shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "edgeplan", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The man page (roff) for edgeplan and its subcommands, from the clap definition: one
/// page, each subcommand a section of it (so it names no `edgeplan-NAME(1)` page), then
/// EXIT STATUS, EXAMPLES and SEE ALSO.
fn man_page() -> anyhow::Result<String> {
    use clap::CommandFactory;
    let command = Cli::command();
    let man = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let subs: Vec<&clap::Command> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .collect();
    out.extend_from_slice(b".SH COMMANDS\n");
    for sub in &subs {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let line = format!(
            ".TP\n\\fBedgeplan {}\\fR\n{}. See EDGEPLAN {} below.\n",
            sub.get_name(),
            roff_text(about.trim_end_matches('.')),
            sub.get_name().to_uppercase()
        );
        out.extend_from_slice(line.as_bytes());
    }
    // One section per subcommand: its synopsis, description and options.
    for sub in subs {
        let name = sub.get_name().to_string();
        let sub = sub.clone().bin_name(format!("edgeplan {name}"));
        out.extend_from_slice(format!(".SH \"EDGEPLAN {}\"\n", name.to_uppercase()).as_bytes());
        let man = clap_mangen::Man::new(sub);
        man.render_synopsis_section(&mut out)?;
        man.render_description_section(&mut out)?;
        man.render_options_section(&mut out)?;
    }
    out.extend_from_slice(man_tail().as_bytes());
    man.render_version_section(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The exit codes, as README.md's table gives them (tests/cli.rs checks that the two
/// list the same codes, and every [`Exit`](crate::error::Exit) code).
const EXIT_STATUS: &[(crate::error::Exit, &str)] = {
    use crate::error::Exit;
    &[
        (Exit::Success, "success"),
        (
            Exit::CheckFailed,
            "a check did not hold: plan --expect mismatch, a failed check case, bench --strict contradicting the plan",
        ),
        (Exit::Usage, "bad usage"),
        (
            Exit::DoesNotFit,
            "plan --model: the model does not fit at the requested context and concurrency (env and args print nothing); bench: the run does not fit in the memory budget",
        ),
        (
            Exit::DataErr,
            "bad input data: a malformed or unsupported profile, manifest, catalog or model config; a path name the catalog does not define",
        ),
        (
            Exit::NoInput,
            "an input file or sysroot does not exist (or a directory is given where a file belongs)",
        ),
        (
            Exit::Unavailable,
            "bench --engine: the engine (vLLM in the given Python, llama-bench) is not installed or failed",
        ),
        (Exit::Software, "internal error"),
        (Exit::IoErr, "I/O error while reading or writing"),
        (
            Exit::TempFail,
            "bench --engine --save: the run was noisy (a side more than 10 % off a short run of it alone); nothing was saved: rerun on a quiet host",
        ),
    ]
};

/// The man page's examples: (what it does, the command). Each command is also one of
/// README.md's examples, which the tests run (tests/cli.rs checks it is there).
const MAN_EXAMPLES: &[(&str, &str)] = &[
    (
        "What would a Sapphire Rapids server run, and why?",
        "edgeplan plan --profile fixtures/profiles/x86-spr-amx.json --explain",
    ),
    (
        "The build script for that server: GPTQModel 4-bit, then vLLM with the plan's env and flags.",
        "edgeplan plan --profile fixtures/profiles/x86-spr-amx.json --format script > build.sh",
    ),
    (
        "A Raspberry Pi 5 runs llama.cpp: which GGUF file, and llama-server's flags.",
        "edgeplan plan --engine llama.cpp --profile fixtures/profiles/arm64-rpi5.json --format args",
    ),
    (
        "CI: every fixture profile plans as expected, at both priorities.",
        "edgeplan check fixtures/expect.toml",
    ),
    (
        "Does Qwen3-1.7B fit at 32k tokens in an 8 GiB container?",
        "edgeplan plan --profile fixtures/profiles/x86-container-cgroup2.json --model qwen3-1.7b --context 32768",
    ),
    ("Confirm the plan on this host.", "edgeplan bench --quick"),
];

/// EXIT STATUS, EXAMPLES and SEE ALSO, in roff.
fn man_tail() -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for (exit, meaning) in EXIT_STATUS {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            exit.code(),
            roff_text(meaning)
        ));
    }
    out.push_str(".SH EXAMPLES\n");
    for (what, command) in MAN_EXAMPLES {
        out.push_str(&format!(
            ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            roff_text(what),
            roff_text(command)
        ));
    }
    out.push_str(
        ".SH \"SEE ALSO\"\nREADME.md and docs/quickstart.md in the edgeplan source tree: \
         three devices from probe to a served model.\n",
    );
    out
}

/// `text` as roff body text: backslashes and hyphens escaped, no line starting with a
/// control character.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.chars().next() {
        Some('.' | '\'') => format!("\\&{escaped}"),
        _ => escaped,
    }
}

fn probe_request(args: ProbeArgs) -> anyhow::Result<ProbeRequest> {
    // `-` means stdin or stdout everywhere else; here it would be a directory named `-`.
    if args.dump.as_ref().is_some_and(|p| p.as_os_str() == "-") {
        return Err(usage(
            "--dump -: give a directory name (a dump is a tree of files, not a stream)",
        ));
    }
    Ok(ProbeRequest {
        sysroot: args.sysroot,
        format: args.format.map(|f| match f {
            ProbeFormatArg::Json => ProbeFormat::Json,
            ProbeFormatArg::Table => ProbeFormat::Table,
        }),
        dump: args.dump,
    })
}

/// A `--context` value: a positive integer, or one with a `k`/`K` suffix meaning x1024,
/// as model cards write context lengths ("32k" is 32768, "128k" is 131072). vLLM's own
/// `--max-model-len` parser (`human_readable_int`, vllm/engine/arg_utils.py) reads
/// lowercase `k` as 1000, so edgeplan only ever hands an engine the resolved integer,
/// never the suffix.
/// The fake executor's settings from `EDGEPLAN_BENCH_EXECUTOR` (`fake`, `fake-slow-PATH`,
/// `fake-disturb-own`, `fake-disturb-engine`).
fn fake_settings(value: &str) -> Option<FakeSettings> {
    use crate::bench::engine::solo::Side;
    let settings = FakeSettings::default();
    match value {
        "fake" => Some(settings),
        "fake-disturb-own" => Some(FakeSettings {
            disturb: Some(Side::Own),
            ..settings
        }),
        "fake-disturb-engine" => Some(FakeSettings {
            disturb: Some(Side::Engine),
            ..settings
        }),
        other => other
            .strip_prefix("fake-slow-")
            .and_then(crate::bench::backend::KernelPath::parse)
            .map(|path| FakeSettings {
                slow: Some(path),
                ..settings
            }),
    }
}

pub fn parse_tokens(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "--context {text:?} is not a token count: give a positive integer, or one with k for x1024 (8192, 32k, 128k)"
        )
    };
    let (digits, scale) = match text.strip_suffix(['k', 'K']) {
        Some(digits) => (digits, 1024),
        None => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let tokens = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(bad)?;
    if tokens == 0 {
        return Err(bad());
    }
    Ok(tokens)
}

/// Usage errors (2) for bad memory-fit flags; the model itself is loaded by the command.
fn plan_request(args: PlanArgs) -> anyhow::Result<PlanRequest> {
    // stdin can be read once: a second `-` would read nothing and report it as an
    // empty profile (65) after planning the first.
    let stdin_count = args.profile.iter().filter(|p| p.as_os_str() == "-").count();
    if stdin_count > 1 {
        return Err(usage(format!(
            "--profile - is given {stdin_count} times; stdin can be read once (put every profile on it as JSON Lines)"
        )));
    }
    let source = match (args.profile.is_empty(), args.sysroot) {
        (false, _) => Source::Profiles(args.profile),
        (true, Some(dir)) => Source::Sysroot(dir),
        (true, None) => Source::Live,
    };
    let fit = match args.model {
        None => None,
        Some(model) => {
            let Some(context) = args.context else {
                return Err(usage(
                    "--model needs --context TOKENS (a positive context length) for the memory fit",
                ));
            };
            let context = parse_tokens(&context).map_err(usage)?;
            if args.concurrency == 0 {
                return Err(usage("--concurrency must be at least 1"));
            }
            let Some(kv_dtype) = crate::plan::memory::KvDtype::parse(&args.kv_dtype) else {
                return Err(usage(format!(
                    "--kv-dtype {:?} is not one of bf16, fp16, fp8, int8, f32",
                    args.kv_dtype
                )));
            };
            let headroom = args
                .headroom
                .unwrap_or(crate::plan::memory::DEFAULT_HEADROOM);
            if !(0.0..1.0).contains(&headroom) {
                return Err(usage(format!(
                    "--headroom {headroom} must be a fraction in [0, 1), e.g. 0.10"
                )));
            }
            Some(FitArgs {
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
        format: match args.format {
            PlanFormatArg::Table => PlanFormat::Table,
            PlanFormatArg::Json => PlanFormat::Json,
            PlanFormatArg::Jsonl => PlanFormat::Jsonl,
            PlanFormatArg::Env => PlanFormat::Env,
            PlanFormatArg::Args => PlanFormat::Args,
            PlanFormatArg::Script => PlanFormat::Script,
        },
        expect: args.expect,
        explain: args.explain,
        engine: args.engine,
        catalog: args.catalog,
        fit,
    })
}

/// Flag values clap accepted but bench cannot use (`--threads 0`, an unknown path in
/// `--paths`, `--prefill-tokens 0`) are usage errors naming the flag; the executor
/// (real, or the fake one tests use) is picked here, once.
fn bench_request(args: BenchArgs) -> anyhow::Result<BenchCommand> {
    use crate::bench::backend::KernelPath;
    use crate::bench::request::{
        BenchRequest, Effort, MAX_PREFILL_TOKENS, ModelSpec, check_budget, check_rounds,
    };
    let mut paths = Vec::new();
    for p in &args.paths {
        if p.trim().is_empty() {
            continue;
        }
        let path = KernelPath::parse(p).ok_or_else(|| {
            usage(format!(
                "--paths: unknown path {p:?}; use w4a8, w4a16 or bf16 (comma-separated)"
            ))
        })?;
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    // The kernels read EDGEPLAN_KERNEL themselves; a name that is no variant would be
    // ignored there, so it is refused here, before any work.
    if let Ok(name) = std::env::var("EDGEPLAN_KERNEL")
        && !name.is_empty()
        && crate::kernels::registry::by_name(&name).is_err()
    {
        return Err(usage(format!(
            "EDGEPLAN_KERNEL={name}: not a kernel variant (`edgeplan bench --list-kernels` lists them)"
        )));
    }
    if args.threads == Some(0) {
        return Err(usage("--threads 0: at least one thread is needed"));
    }
    // `-` means stdin or stdout everywhere else; here it would be a file named `-`.
    if args.save.as_ref().is_some_and(|p| p.as_os_str() == "-") {
        return Err(usage(
            "--save -: give a file name (the report itself is on stdout; --format json writes it as JSON)",
        ));
    }
    if args.prefill_tokens == 0 || args.prefill_tokens > MAX_PREFILL_TOKENS {
        return Err(usage(format!(
            "--prefill-tokens {}: use 1..={MAX_PREFILL_TOKENS}",
            args.prefill_tokens
        )));
    }
    let executor = match std::env::var(EXECUTOR_ENV).as_deref() {
        Ok("real") | Ok("") | Err(_) => Executor::Real,
        Ok(other) => Executor::Fake(fake_settings(other).ok_or_else(|| {
            usage(format!(
                "{EXECUTOR_ENV}={other}: use real, fake, fake-slow-PATH or fake-disturb-own|engine"
            ))
        })?),
    };
    let engine = engine_choice(args.engine, args.python, args.llama_bench)?;
    let request = BenchRequest {
        engine,
        model: match args.model_config {
            Some(path) => ModelSpec::Config(path),
            None => ModelSpec::Preset(args.model),
        },
        paths,
        kernel: args.kernel,
        list_kernels: args.list_kernels,
        prefill_tokens: args.prefill_tokens,
        threads: args.threads,
        effort: if args.quick {
            Effort::Quick
        } else {
            Effort::Full
        },
        rounds: args.rounds.map(check_rounds).transpose()?,
        budget_s: args.budget.as_deref().map(check_budget).transpose()?,
        profile: args.profile,
        priority: args.priority.into(),
        strict: args.strict,
        save: args.save,
        json: args.format == BenchFormatArg::Json,
    };
    Ok(BenchCommand { request, executor })
}

/// `--engine` with the program flag that belongs to it; the other engine's flag, or a
/// program flag without `--engine`, is a usage error.
fn engine_choice(
    engine: Option<Engine>,
    python: Option<PathBuf>,
    llama_bench: Option<PathBuf>,
) -> anyhow::Result<Option<crate::bench::request::EngineChoice>> {
    use crate::bench::request::EngineChoice;
    match (engine, python, llama_bench) {
        (None, None, None) => Ok(None),
        (None, Some(_), _) => Err(usage("--python: give it with --engine vllm")),
        (None, None, Some(_)) => Err(usage("--llama-bench: give it with --engine llama.cpp")),
        (Some(engine @ Engine::Vllm), program, None)
        | (Some(engine @ Engine::LlamaCpp), None, program) => {
            Ok(Some(EngineChoice { engine, program }))
        }
        (Some(Engine::Vllm), _, Some(_)) => Err(usage(
            "--llama-bench: belongs to --engine llama.cpp; vLLM runs under --python",
        )),
        (Some(Engine::LlamaCpp), Some(_), _) => Err(usage(
            "--python: belongs to --engine vllm; llama.cpp runs under --llama-bench",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `plan --engine` and `bench --engine` take exactly [`Engine::ALL`], spelled as
    /// plans spell them.
    #[test]
    fn the_engine_flags_take_every_engine_and_nothing_else() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let want: Vec<&str> = Engine::ALL.iter().map(|e| e.as_str()).collect();
        for sub in ["plan", "bench"] {
            let arg = cli
                .find_subcommand(sub)
                .and_then(|c| c.get_arguments().find(|a| a.get_id() == "engine"))
                .unwrap_or_else(|| panic!("{sub} has no --engine"));
            let got: Vec<String> = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            assert_eq!(got, want, "{sub} --engine");
        }
    }

    #[test]
    fn context_takes_k_as_1024() {
        assert_eq!(parse_tokens("8192"), Ok(8192));
        assert_eq!(parse_tokens("32k"), Ok(32768));
        assert_eq!(parse_tokens("128K"), Ok(131072));
        for bad in [
            "0", "0k", "", "k", "32q", "1.5k", " 32k", "32kk", "+8", "32m",
        ] {
            let err = parse_tokens(bad).unwrap_err();
            assert!(err.contains("is not a token count"), "{bad:?}: {err}");
        }
        assert!(
            parse_tokens(&format!("{}k", u64::MAX / 1024 + 1)).is_err(),
            "overflow"
        );
        assert!(parse_tokens("99999999999999999999").is_err());
    }

    #[test]
    fn verify_cli() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
