//! Helpers shared by the integration tests.

use assert_cmd::Command;

/// The `edgeplan` binary with no EDGEPLAN_* variables from the caller's environment.
pub fn edgeplan() -> Command {
    let mut cmd = Command::cargo_bin("edgeplan").expect("edgeplan binary is built");
    for (key, _) in std::env::vars() {
        if key.starts_with("EDGEPLAN_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("NO_COLOR", "1");
    // Human output is laid out for COLUMNS when set; the tests pin the default, 80.
    cmd.env_remove("COLUMNS");
    cmd
}

/// Path of a file under `fixtures/`.
#[allow(dead_code)]
pub fn fixture(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// Runs an engine's end-to-end script (scripts/engines/`script` BINARY WORK) with this
/// host's plan (no caller EDGEPLAN_* settings but the engines' cache), prints its log,
/// and asserts that it succeeded and said `done`. `EDGEPLAN_ENGINE_TESTS=0` is the one
/// way to leave it out (a fast local loop; CI never sets it): it fails, never skips,
/// when the engine cannot be installed.
#[allow(dead_code)]
pub fn engine_end_to_end(script: &str, done: &str) {
    if std::env::var("EDGEPLAN_ENGINE_TESTS").as_deref() == Ok("0") {
        eprintln!("NOT RUN: EDGEPLAN_ENGINE_TESTS=0 was set; {script} did not run");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("edgeplan");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(root.join("scripts/engines").join(script))
        .arg(&bin)
        .arg(work.path())
        .current_dir(root);
    for (key, _) in std::env::vars() {
        if key.starts_with("EDGEPLAN_") && key != "EDGEPLAN_ENGINES_CACHE" {
            cmd.env_remove(key);
        }
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "{script} failed (exit {:?}); its log is above",
        out.status.code()
    );
    assert!(stderr.contains(done), "{stderr}");
}

/// The built-in catalog without its optional GPU 4-bit paths (w4a16-gpu-*), written to
/// `dir`: a GPU then keeps its 16-bit plan whatever the fit.
#[allow(dead_code)]
pub fn catalog_without_gpu_4bit(dir: &std::path::Path) -> std::path::PathBuf {
    let builtin = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/plan/catalog.toml"
    ))
    .unwrap();
    let mut parts = builtin.split("[[path]]\n");
    let mut text = parts.next().unwrap().to_string();
    let mut dropped = 0;
    for part in parts {
        if part.starts_with("name = \"w4a16-gpu-") {
            dropped += 1;
            continue;
        }
        text.push_str("[[path]]\n");
        text.push_str(part);
    }
    assert_eq!(dropped, 2, "the built-in catalog's two GPU 4-bit paths");
    let file = dir.join("catalog-no-gpu-4bit.toml");
    std::fs::write(&file, text).unwrap();
    file
}

/// What [`run_measured`] saw of one run.
#[allow(dead_code)]
#[derive(Debug)]
pub struct Measured {
    /// The exit code; `None` when a signal ended it (or the watchdog killed it).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: std::time::Duration,
    /// The child's own peak resident set (`wait4`'s `ru_maxrss`), in KiB.
    pub max_rss_kib: u64,
}

/// Runs `cmd` (stdin closed, output captured) and measures its time and peak RSS; kills
/// its process group and panics when it runs past `limit`, so a hang fails the test
/// instead of hanging the suite.
#[allow(dead_code)]
// The child is reaped by `wait4` (for its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
pub fn run_measured(cmd: &mut std::process::Command, limit: std::time::Duration) -> Measured {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    // The peak RSS comes from GNU time, which forks the command from its own small
    // process: a child forked from this test binary would count the binary's own
    // resident memory (other tests' buffers) in its ru_maxrss, which exec keeps.
    let rss_file = tempfile::NamedTempFile::new().unwrap();
    let mut wrapped = std::process::Command::new("/usr/bin/time");
    wrapped
        .args(["-f", "%M", "-o"])
        .arg(rss_file.path())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapped.env(key, v),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    let cmd = &mut wrapped;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = std::time::Instant::now();
    let mut child = cmd.spawn().expect("spawn /usr/bin/time (Debian's `time`)");
    let pid = child.id() as libc::pid_t;
    let mut pipes = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|mut p| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = p.by_ref().take(4 << 20).read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    });
    let (out, err) = (pipes.next().unwrap(), pipes.next().unwrap());
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child; both out-pointers are valid.
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            break;
        }
        if start.elapsed() > limit {
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            panic!("{cmd:?} ran past {limit:?}; killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let elapsed = start.elapsed();
    // Whatever the run left in its group (a stuck grandchild) is not the test's to keep.
    // SAFETY: signalling the child's own process group.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Measured {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed,
        max_rss_kib: std::fs::read_to_string(rss_file.path())
            .ok()
            .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
            .unwrap_or_else(|| {
                panic!("no peak RSS from /usr/bin/time (usage {})", usage.ru_maxrss)
            }),
    }
}

/// The built `edgeplan` as a plain `std::process::Command`, with no EDGEPLAN_* from the
/// caller, for [`run_measured`].
#[allow(dead_code)]
pub fn edgeplan_std() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("edgeplan"));
    for (key, _) in std::env::vars() {
        if key.starts_with("EDGEPLAN_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("NO_COLOR", "1").env_remove("COLUMNS");
    cmd
}

/// Makes a FIFO at `path`.
#[allow(dead_code)]
pub fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}
