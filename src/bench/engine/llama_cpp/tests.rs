use super::*;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/engines")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_captured_llama_bench_output_parses_into_token_and_prompt_times() {
    let t = parse_output(&fixture("llama-bench-q4_0.json"), 64, 32).unwrap();
    // tg32: 98,764,843 ns for 32 tokens; pp64: 77,567,510 ns.
    assert!((t.token_s - 98_764_843e-9 / 32.0).abs() < 1e-12);
    assert!((t.prompt_s - 77_567_510e-9).abs() < 1e-12);
    assert_eq!(t.entry.build_commit, "0c1e57098");
    assert_eq!(t.entry.build_number, 11312);
    assert_eq!(t.entry.n_threads, 2);
    assert_eq!(t.entry.model_type, "qwen3 ?B Q4_0");
    let km = parse_output(&fixture("llama-bench-q4_k_m.json"), 64, 32).unwrap();
    assert_eq!(km.entry.model_type, "qwen3 ?B Q4_K - Medium");
}

#[test]
fn output_without_the_asked_entries_or_not_json_is_refused() {
    let text = fixture("llama-bench-q4_0.json");
    let err = parse_output(&text, 128, 32).unwrap_err();
    assert!(err.contains("128 prompt"), "{err}");
    let err = parse_output(&text, 64, 16).unwrap_err();
    assert!(err.contains("16 generated"), "{err}");
    assert!(
        parse_output("llama-bench: error", 64, 32)
            .unwrap_err()
            .contains("did not parse")
    );
    let zero = text.replace("\"avg_ns\": 98764843", "\"avg_ns\": 0");
    assert!(parse_output(&zero, 64, 32).unwrap_err().contains("0 ns"));
}

#[test]
fn the_verbose_log_names_the_repacked_layouts() {
    let log = fixture("llama-bench-q4_k_m-verbose.log");
    assert_eq!(kernel_op(&log), "ggml-cpu (repack q4_K_8x8)");
    assert_eq!(
        kernel_op("load_tensors: CPU_Mapped model buffer size = 1 MiB"),
        "ggml-cpu"
    );
    let amx = [
        "ggml_backend_amx_buffer_set_tensor: amx repack tensor blk.0.attn_q.weight of type q4_0",
        ".repack: repack tensor blk.0.ffn_up.weight with q4_0_8x8",
    ]
    .join("\n");
    assert_eq!(kernel_op(&amx), "ggml-cpu (repack q4_0_8x8, AMX)");
}

#[test]
fn a_missing_llama_bench_is_a_usage_error_naming_the_flag() {
    let err = LlamaBenchLauncher::find(Some(Path::new("/nonexistent/llama-bench")))
        .err()
        .unwrap();
    assert_eq!(crate::error::exit_for(&err), crate::error::Exit::Usage);
    assert!(
        err.to_string()
            .starts_with("--llama-bench /nonexistent/llama-bench"),
        "{err}"
    );
}

#[test]
fn the_model_files_go_to_a_private_directory_that_is_removed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = private_dir().unwrap();
    let path = dir.path().to_path_buf();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("edgeplan-llama-bench-")
    );
    std::fs::write(path.join("q4_0.gguf"), b"x").unwrap();
    drop(dir);
    assert!(!path.exists());
}

fn request(paths: &[&str], min_rounds: usize, max_rounds: usize) -> HarnessRequest {
    let model = crate::bench::engine::gguf::tests::tiny("qwen3", true);
    HarnessRequest {
        model,
        threads: 2,
        seed: 3,
        shapes: Vec::new(),
        lm_head: crate::bench::engine::protocol::Shape {
            name: "lm_head".into(),
            n: 512,
            k: 256,
        },
        paths: paths.iter().map(|p| p.to_string()).collect(),
        layers: 2,
        prefill_layers: 1,
        prefill_tokens: 64,
        min_rounds,
        max_rounds,
    }
}

/// A stand-in llama-bench: logs its model file (and whether it exists), prints the
/// captured JSON, and says it repacked one tensor when run with -v.
fn stand_in(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("llama-bench");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn a_session_warms_up_then_runs_paired_rounds_and_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let json = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/engines/llama-bench-q4_0.json");
    let log = dir.path().join("calls");
    let body = format!(
        "m=; v=; while [ $# -gt 0 ]; do case $1 in -m) m=$2; shift;; -v) v=1;; esac; shift; done\n\
         [ -s \"$m\" ] && echo \"$m $v\" >> {log}\n\
         [ -n \"$v\" ] && echo '.repack: repack tensor blk.0.ffn_up.weight with q4_0_8x8' >&2\n\
         cat {json}",
        log = log.display(),
        json = json.display()
    );
    let launcher = LlamaBenchLauncher::find(Some(&stand_in(dir.path(), &body))).unwrap();
    let mut s = launcher
        .start(&request(&["q4_0", "q4_k_m", "bf16"], 2, 4))
        .unwrap();
    let hello = s.hello().clone();
    assert_eq!(hello.engine, "llama.cpp");
    assert_eq!(
        (hello.version.as_str(), hello.build.as_deref()),
        ("11312", Some("commit 0c1e57098"))
    );
    assert_eq!(hello.timed, vec!["q4_0", "q4_k_m"]);
    assert!(hello.skipped["bf16"].contains("not a GGUF type"));
    assert_eq!(hello.kernels["q4_k_m"].kernel_class, "Q4_K_M");
    assert_eq!(hello.kernels["q4_0"].op, "ggml-cpu (repack q4_0_8x8)");
    assert_eq!(
        (hello.layers_timed_decode, hello.layers_timed_prefill),
        (2, 2)
    );
    assert!(hello.layer_weight_bytes["q4_k_m"] > hello.layer_weight_bytes["q4_0"]);
    let r1 = s.next_round().unwrap().unwrap();
    assert_eq!(r1.round, 1);
    assert!((r1.times["q4_0"].decode_layers_s - 98_764_843e-9 / 32.0).abs() < 1e-12);
    assert_eq!(r1.times["q4_k_m"].head_s, 0.0);
    assert_eq!(s.next_round().unwrap().unwrap().round, 2);
    s.answer(false).unwrap();
    assert!(s.next_round().unwrap().is_none());
    let calls = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    // Two verbose warm-ups, then two builds per round, every file present when run.
    assert_eq!(lines.len(), 6, "{calls}");
    assert!(lines[..2].iter().all(|l| l.ends_with(" 1")));
    let file = Path::new(lines[0].split(' ').next().unwrap()).to_path_buf();
    assert!(file.exists());
    s.finish().unwrap();
    assert!(!file.exists() && !file.parent().unwrap().exists());
}

#[test]
fn a_failing_llama_bench_is_exit_69_with_its_last_line_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let body = format!(
        "echo \"$2\" > {}; echo 'llama_model_load: error loading model' >&2; exit 1",
        seen.display()
    );
    let launcher = LlamaBenchLauncher::find(Some(&stand_in(dir.path(), &body))).unwrap();
    let err = launcher.start(&request(&["q4_0"], 2, 4)).err().unwrap();
    assert_eq!(
        crate::error::exit_for(&err),
        crate::error::Exit::Unavailable
    );
    let text = err.to_string();
    assert!(
        text.contains("llama-bench") && text.contains("error loading model"),
        "{text}"
    );
    let file = std::fs::read_to_string(&seen).unwrap();
    assert!(!Path::new(file.trim()).exists(), "{file}");
}

#[test]
fn an_unknown_family_is_exit_65_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = LlamaBenchLauncher::find(Some(&stand_in(dir.path(), "exit 3"))).unwrap();
    let mut req = request(&["q4_0"], 2, 4);
    req.model.family = Some("gemma3".into());
    let err = launcher.start(&req).err().unwrap();
    assert_eq!(crate::error::exit_for(&err), crate::error::Exit::DataErr);
}

/// The AMX-host crash (ggml-org/llama.cpp#20824), on any host: a stand-in llama-bench
/// that dies by SIGSEGV after logging the AMX buffer unless given `--repack 0`. The
/// build is retried without repack, timed that way in every round, and its kernel says
/// which configuration ran and why.
#[test]
fn a_build_that_crashes_with_the_amx_buffer_is_retried_and_timed_with_repack_0() {
    let dir = tempfile::tempdir().unwrap();
    let json = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/engines/llama-bench-q4_0.json");
    let log = dir.path().join("calls");
    let body = format!(
        "echo \"$*\" >> {log}\n\
         case \"$*\" in *'--repack 0'*) cat {json}; exit 0;; esac\n\
         echo 'load_tensors:          AMX model buffer size =    10.00 MiB' >&2\n\
         kill -SEGV $$",
        log = log.display(),
        json = json.display()
    );
    let launcher = LlamaBenchLauncher::find(Some(&stand_in(dir.path(), &body))).unwrap();
    let mut s = launcher.start(&request(&["q4_0"], 1, 2)).unwrap();
    let op = s.hello().kernels["q4_0"].op.clone();
    assert!(op.contains("--repack 0"), "{op}");
    assert!(op.contains("signal 11 (SIGSEGV)"), "{op}");
    assert_eq!(s.hello().timed, vec!["q4_0"]);
    assert!(s.next_round().unwrap().is_some());
    let calls = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    // The crashed warm-up, the retried one, then the round: all after the first
    // without repack.
    assert_eq!(lines.len(), 3, "{calls}");
    assert!(!lines[0].contains("--repack 0"), "{calls}");
    assert!(
        lines[1..].iter().all(|l| l.contains("--repack 0")),
        "{calls}"
    );
}

/// A crash the repack buffer does not explain, or one that --repack 0 does not cure,
/// is exit 69 naming the signal (and the configuration).
#[test]
fn a_crash_without_the_repack_buffer_or_with_repack_0_too_is_exit_69_naming_the_signal() {
    for (body, want) in [
        ("kill -SEGV $$", "died by signal 11 (SIGSEGV) on q4_0"),
        (
            "echo 'load_tensors: CPU_REPACK model buffer size = 1.00 MiB' >&2; kill -BUS $$",
            "died by signal 7 (SIGBUS) on q4_0 (--repack 0)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let launcher = LlamaBenchLauncher::find(Some(&stand_in(dir.path(), body))).unwrap();
        let err = launcher.start(&request(&["q4_0"], 1, 2)).err().unwrap();
        assert_eq!(
            crate::error::exit_for(&err),
            crate::error::Exit::Unavailable
        );
        assert!(err.to_string().contains(want), "{err}");
    }
}
