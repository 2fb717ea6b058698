//! The llama.cpp launcher: `llama-bench` on GGUF files of the model's shapes.
//!
//! For each build asked for (`q4_0`, `q4_k_m`) edgeplan writes a model file of the
//! request's dimensions with random weights, in the tensor types llama-quantize gives
//! that file type ([`super::gguf`]), into a private temporary directory (mode 0700, an
//! unpredictable name, created exclusively) that is removed when the session ends, on
//! success or error. `llama-bench` then runs on each file: one warm-up invocation per
//! build (with `-v`, whose log says whether the weights went to a repacked or AMX
//! buffer), then per round, in a seeded random order, one invocation per build of
//! `-p PREFILL -n GEN -r 1 --no-warmup -o json`, which times the prompt and the
//! generated tokens as two entries. llama.cpp times the whole model (attention, norms
//! and the output head included), so a round reports whole-model step times: every
//! layer timed, the head inside the token time.
//!
//! `llama-bench` is `--llama-bench PATH`, else the first on `PATH`; a missing one, or
//! one that fails, is exit 69 naming the program, with the end of its stderr.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Deserialize;

use super::gguf::{self, Arch, FileType};
use super::protocol::{BuildTimes, EngineKernel, HarnessRequest, Hello, Launcher, Round, Session};
use crate::bench::rng::Rng;
use crate::error::{io_error, unavailable, usage};

/// Tokens generated per decode sample.
pub const GEN_TOKENS: usize = 32;
/// Bytes of llama-bench's stderr kept for an error message.
const STDERR_TAIL: usize = 300;

/// Runs `llama-bench`.
pub struct LlamaBenchLauncher {
    program: PathBuf,
}

impl LlamaBenchLauncher {
    /// `--llama-bench PATH` (must exist), else the first `llama-bench` on `PATH`.
    pub fn find(explicit: Option<&Path>) -> anyhow::Result<LlamaBenchLauncher> {
        if let Some(path) = explicit {
            if !path.is_file() {
                return Err(usage(format!(
                    "--llama-bench {}: no such file; give llama.cpp's llama-bench (BUILD/bin/llama-bench)",
                    path.display()
                )));
            }
            return Ok(LlamaBenchLauncher {
                program: path.to_path_buf(),
            });
        }
        super::vllm::find_on_path("llama-bench")
            .map(|program| LlamaBenchLauncher { program })
            .ok_or_else(|| {
                unavailable(
                    "bench --engine llama.cpp: no llama-bench on PATH; edgeplan's llama.cpp build script (plan --engine llama.cpp --format script, or scripts/engines/llama_install.sh) builds it; give it with --llama-bench PATH",
                )
            })
    }
}

impl Launcher for LlamaBenchLauncher {
    fn engine(&self) -> &'static str {
        "llama.cpp"
    }

    fn program(&self) -> String {
        self.program.display().to_string()
    }

    fn start(&self, request: &HarnessRequest) -> anyhow::Result<Box<dyn Session>> {
        Ok(Box::new(LlamaSession::start(&self.program, request)?))
    }
}

/// One entry of `llama-bench -o json` (tools/llama-bench/llama-bench.cpp,
/// `test::get_fields` and `json_printer`); fields not read are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BenchEntry {
    pub build_commit: String,
    pub build_number: i64,
    #[serde(default)]
    pub cpu_info: String,
    #[serde(default)]
    pub backends: String,
    #[serde(default)]
    pub model_type: String,
    #[serde(default)]
    pub n_threads: usize,
    pub n_prompt: usize,
    pub n_gen: usize,
    pub avg_ns: u64,
    #[serde(default)]
    pub samples_ns: Vec<u64>,
}

/// One invocation's two results.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Seconds per generated token.
    pub token_s: f64,
    /// Seconds for the whole prompt.
    pub prompt_s: f64,
    pub entry: BenchEntry,
}

/// Reads llama-bench's JSON: the prompt entry (`n_gen` 0) and the generation entry
/// (`n_prompt` 0) of one `-p P -n N` invocation.
pub fn parse_output(text: &str, prompt: usize, generated: usize) -> Result<Timing, String> {
    let entries: Vec<BenchEntry> =
        serde_json::from_str(text).map_err(|e| format!("its JSON output did not parse ({e})"))?;
    let find = |p: usize, g: usize| {
        entries
            .iter()
            .find(|e| e.n_prompt == p && e.n_gen == g)
            .ok_or_else(|| format!("its JSON has no entry for {p} prompt and {g} generated tokens"))
    };
    let pp = find(prompt, 0)?;
    let tg = find(0, generated)?;
    // One repetition (`-r 1`): the average is the one sample.
    let secs = |e: &BenchEntry| {
        (e.avg_ns > 0)
            .then_some(e.avg_ns as f64 / 1e9)
            .ok_or_else(|| "it reported a time of 0 ns".to_string())
    };
    Ok(Timing {
        token_s: secs(tg)? / generated as f64,
        prompt_s: secs(pp)?,
        entry: tg.clone(),
    })
}

/// What the warm-up's verbose log says llama.cpp runs: the repacked layouts
/// (ggml/src/ggml-cpu/repack.cpp logs `repack tensor NAME with LAYOUT`) and whether
/// any weight went to the AMX buffer (amx.cpp logs `amx repack tensor`); tensors not
/// named there run ggml-cpu's plain dot products.
pub fn kernel_op(log: &str) -> String {
    let mut layouts: Vec<&str> = Vec::new();
    let mut amx = false;
    for line in log.lines() {
        if line.contains("amx repack tensor") {
            amx = true;
        } else if let Some((_, layout)) = line
            .split_once("repack tensor ")
            .and_then(|(_, rest)| rest.split_once(" with "))
        {
            let layout = layout.trim();
            if !layouts.contains(&layout) {
                layouts.push(layout);
            }
        }
    }
    let mut parts: Vec<String> = layouts.iter().map(|l| format!("repack {l}")).collect();
    if amx {
        parts.push("AMX".to_string());
    }
    if parts.is_empty() {
        "ggml-cpu".to_string()
    } else {
        format!("ggml-cpu ({})", parts.join(", "))
    }
}

/// One build's file.
struct Build {
    name: String,
    ty: FileType,
    file: PathBuf,
    /// Whether llama-bench may put the weights in the AMX or repacked buffer (its
    /// default); cleared after a warm-up that died by a signal with it.
    repack: bool,
}

/// How one llama-bench invocation ended.
enum Outcome {
    Ran(Timing, String),
    /// Killed by `signal` before it reported; its stderr.
    Killed {
        signal: i32,
        log: String,
    },
}

/// How llama-bench is invoked.
struct Runner {
    program: PathBuf,
    prompt: usize,
    threads: usize,
}

/// A llama-bench session: the files, and the rounds run on demand.
struct LlamaSession {
    runner: Runner,
    builds: Vec<Build>,
    max_rounds: usize,
    hello: Hello,
    rng: Rng,
    round: usize,
    stopped: bool,
    /// Removed when the session is dropped, on success or error.
    _dir: tempfile::TempDir,
}

impl LlamaSession {
    fn start(program: &Path, request: &HarnessRequest) -> anyhow::Result<LlamaSession> {
        let begin = Instant::now();
        let arch = Arch::of(request.model.family.as_deref())?;
        gguf::check(&request.model)?;
        if request.prefill_tokens == 0 {
            return Err(usage(
                "bench --engine llama.cpp: the prefill needs at least one token",
            ));
        }
        let dir = private_dir()?;
        let mut skipped = BTreeMap::new();
        let mut builds = Vec::new();
        let mut bytes = BTreeMap::new();
        let mut head_bytes = 0;
        for (i, name) in request.paths.iter().enumerate() {
            let Some(ty) = gguf::build_file_type(name) else {
                skipped.insert(name.clone(), "not a GGUF type edgeplan writes".to_string());
                continue;
            };
            let file = dir.path().join(format!("{name}.gguf"));
            let w = gguf::write_model(&file, &request.model, arch, ty, request.seed + i as u64)
                .map_err(|e| io_error(format!("{}: cannot write: {e}", file.display())))?;
            bytes.insert(name.clone(), w.layers_bytes / request.model.layers as u64);
            head_bytes = head_bytes.max(w.head_bytes);
            builds.push(Build {
                name: name.clone(),
                ty,
                file,
                repack: true,
            });
        }
        let runner = Runner {
            program: program.to_path_buf(),
            prompt: request.prefill_tokens,
            threads: request.threads,
        };
        let (kernels, first) = runner.warm_up(&mut builds)?;
        let hello = Hello {
            engine: "llama.cpp".into(),
            version: first.build_number.to_string(),
            torch: None,
            python: None,
            build: Some(format!("commit {}", first.build_commit)),
            threads: request.threads,
            kernels,
            skipped,
            timed: builds.iter().map(|b| b.name.clone()).collect(),
            layer_weight_bytes: bytes,
            head_weight_bytes: head_bytes,
            layers_timed_decode: request.model.layers,
            layers_timed_prefill: request.model.layers,
            setup_s: begin.elapsed().as_secs_f64(),
            whole_model: true,
        };
        Ok(LlamaSession {
            runner,
            builds,
            max_rounds: request.max_rounds,
            hello,
            rng: Rng::new(request.seed),
            round: 0,
            stopped: false,
            _dir: dir,
        })
    }

    /// The builds in a seeded random order (Fisher-Yates).
    fn order(&mut self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.builds.len()).collect();
        for i in (1..order.len()).rev() {
            let j = (self.rng.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        order
    }
}

impl Runner {
    /// One untimed invocation per build, verbose: it checks the file loads and runs,
    /// and its log names the buffer the weights went to. A build whose warm-up dies by
    /// a signal with llama.cpp's AMX or repacked buffer (ggml-org/llama.cpp#20824 on
    /// some AMX hosts) is reported as crashed and retried with `--repack 0`, which
    /// leaves every extra CPU buffer type out (llama-bench.cpp: `use_extra_bufts`); its
    /// rounds then run that way, and its kernel says so.
    fn warm_up(
        &self,
        builds: &mut [Build],
    ) -> anyhow::Result<(BTreeMap<String, EngineKernel>, BenchEntry)> {
        let mut kernels = BTreeMap::new();
        let mut first = None;
        for b in builds.iter_mut() {
            let mut crashed = None;
            let (timing, log) = match self.run(b, true)? {
                Outcome::Ran(timing, log) => (timing, log),
                Outcome::Killed { signal, log } if repack_buffer_in(&log) => {
                    // Reported in the kernel and the verdict, not printed here.
                    b.repack = false;
                    crashed = Some(signal);
                    self.invoke(b, true)?
                }
                Outcome::Killed { signal, log } => {
                    return Err(self.failure(b, &log, format!("died by {}", signal_name(signal))));
                }
            };
            let mut op = kernel_op(&log);
            if let Some(signal) = crashed {
                op = format!(
                    "{op} with --repack 0 (with repack llama-bench died by {})",
                    signal_name(signal)
                );
            }
            kernels.insert(
                b.name.clone(),
                EngineKernel {
                    kernel_class: b.ty.name().to_string(),
                    op,
                    isa_hint: (!timing.entry.cpu_info.is_empty())
                        .then(|| timing.entry.cpu_info.clone()),
                    rel_error: None,
                    check: "passed".into(),
                },
            );
            first.get_or_insert(timing.entry);
        }
        let first = first.ok_or_else(|| {
            unavailable("bench --engine llama.cpp: none of the builds asked for is a GGUF type")
        })?;
        Ok((kernels, first))
    }

    /// Runs llama-bench once on `b`'s file; its timing and its stderr. Death by a
    /// signal is an error here.
    fn invoke(&self, b: &Build, verbose: bool) -> anyhow::Result<(Timing, String)> {
        match self.run(b, verbose)? {
            Outcome::Ran(timing, log) => Ok((timing, log)),
            Outcome::Killed { signal, log } => {
                Err(self.failure(b, &log, format!("died by {}", signal_name(signal))))
            }
        }
    }

    /// The error for `b`'s invocation: why, and the end of its stderr.
    fn failure(&self, b: &Build, log: &str, why: String) -> anyhow::Error {
        let what = format!("bench --engine llama.cpp: {}", self.program.display());
        let config = if b.repack { "" } else { " (--repack 0)" };
        match stderr_tail(log) {
            Some(t) => unavailable(format!(
                "{what}: {why} on {}{config}; its last output: {t}",
                b.name
            )),
            None => unavailable(format!("{what}: {why} on {}{config}", b.name)),
        }
    }

    /// Runs llama-bench once on `b`'s file.
    fn run(&self, b: &Build, verbose: bool) -> anyhow::Result<Outcome> {
        use std::os::unix::process::ExitStatusExt;
        let mut cmd = Command::new(&self.program);
        cmd.arg("-m")
            .arg(&b.file)
            .args(["-t", &self.threads.to_string()])
            .args(["-p", &self.prompt.to_string()])
            .args(["-n", &GEN_TOKENS.to_string()])
            .args(["-r", "1", "--no-warmup", "-o", "json"]);
        if !b.repack {
            cmd.args(["--repack", "0"]);
        }
        if verbose {
            cmd.arg("-v");
        }
        let out = cmd.output().map_err(|e| {
            unavailable(format!(
                "bench --engine llama.cpp: {}: cannot run: {e}",
                self.program.display()
            ))
        })?;
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        if let Some(signal) = out.status.signal() {
            return Ok(Outcome::Killed { signal, log });
        }
        if !out.status.success() {
            return Err(self.failure(b, &log, format!("exited with {}", out.status)));
        }
        let timing = parse_output(
            &String::from_utf8_lossy(&out.stdout),
            self.prompt,
            GEN_TOKENS,
        )
        .map_err(|why| self.failure(b, &log, why))?;
        Ok(Outcome::Ran(timing, log))
    }
}

/// Whether a llama.cpp log shows the weights in the AMX or repacked buffer.
fn repack_buffer_in(log: &str) -> bool {
    log.lines().any(|l| {
        (l.contains("AMX") || l.contains("CPU_REPACK")) && l.contains("buffer size")
            || l.contains("repack tensor")
    })
}

/// `signal 11 (SIGSEGV)`.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => return format!("signal {signal}"),
    };
    format!("signal {signal} ({name})")
}

/// The last non-empty line of `log`, made printable.
fn stderr_tail(log: &str) -> Option<String> {
    log.lines().rev().find(|l| !l.trim().is_empty()).map(|l| {
        l.chars()
            .filter(|c| !c.is_control())
            .take(STDERR_TAIL)
            .collect()
    })
}

/// A new private directory for the model files: mode 0700, a random name, created
/// exclusively (tempfile retries on a name that exists rather than reuse it).
fn private_dir() -> anyhow::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("edgeplan-llama-bench-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|e| {
            io_error(format!(
                "bench --engine llama.cpp: cannot create a temporary directory in {}: {e}",
                std::env::temp_dir().display()
            ))
        })
}

impl Session for LlamaSession {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn next_round(&mut self) -> anyhow::Result<Option<Round>> {
        if self.stopped || self.round >= self.max_rounds {
            return Ok(None);
        }
        self.round += 1;
        let mut times = BTreeMap::new();
        for i in self.order() {
            let b = &self.builds[i];
            let (t, _) = self.runner.invoke(b, false)?;
            times.insert(
                b.name.clone(),
                BuildTimes {
                    decode_layers_s: t.token_s,
                    head_s: 0.0,
                    prefill_layers_s: t.prompt_s,
                },
            );
        }
        Ok(Some(Round {
            round: self.round,
            times,
        }))
    }

    fn answer(&mut self, more: bool) -> anyhow::Result<()> {
        self.stopped = !more;
        Ok(())
    }

    fn finish(self: Box<Self>) -> anyhow::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
