//! llama.cpp, fed exactly what edgeplan prints (scripts/engines/e2e_llama.sh): the pinned
//! llama.cpp (b11312, from the llama-cpp-python 0.3.36 sdist) is built for this CPU and
//! its converter's environment installed (cached outside the clone); this host's
//! `plan --engine llama.cpp --format script`, at both priorities, converts and quantizes
//! a tiny random model and serves it with the emitted flags; tokens come back and the
//! log shows the repacked (or AMX) buffer the plan names; the memory fit matches what
//! llama.cpp reports allocating (weights, KV, compute buffer, each within 5%) for the
//! tiny model at two contexts and a random model with Qwen3-0.6B's real config at two.
//! And `bench --engine llama.cpp` runs the real llama-bench on GGUF files it writes of a
//! tiny model's shapes (`EDGEPLAN_LLAMA_BENCH`, else the installer's build).
//!
//! It fails, never skips, when llama.cpp cannot be built. The one way to leave it out is
//! to say so: `EDGEPLAN_ENGINE_TESTS=0` (a fast local loop; CI never sets it).

#[test]
fn the_emitted_llama_cpp_plan_builds_and_serves() {
    crate::util::engine_end_to_end("e2e_llama.sh", "e2e-llama: ok");
}

/// llama-bench: `EDGEPLAN_LLAMA_BENCH`, else the one the installer builds (and only
/// re-checks when its cached build matches). A failed install fails the test.
fn llama_bench() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("EDGEPLAN_LLAMA_BENCH") {
        let path = std::path::PathBuf::from(path);
        assert!(
            path.is_file(),
            "EDGEPLAN_LLAMA_BENCH={} is no file",
            path.display()
        );
        return path;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("bash")
        .arg(root.join("scripts/engines/llama_install.sh"))
        .env("EDGEPLAN_LLAMA_ONLY", "build")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "llama_install.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let tree = stdout
        .lines()
        .find_map(|l| l.strip_prefix("EDGEPLAN_LLAMA_CPP="))
        .unwrap_or_else(|| panic!("llama_install.sh said no EDGEPLAN_LLAMA_CPP: {stdout}"));
    std::path::Path::new(tree).join("build/bin/llama-bench")
}

/// `bench --engine llama.cpp` runs the real llama-bench on GGUF files edgeplan writes of
/// a tiny model's shapes (hidden 256, 2 layers, vocab 512): both GGUF builds are timed
/// with the kernel llama.cpp names, the report validates against `schema bench`, and
/// the model files are gone afterwards. Fails, never skips, unless
/// `EDGEPLAN_ENGINE_TESTS=0` says to leave it out.
#[test]
fn bench_times_llama_cpps_own_kernels_on_a_tiny_model() {
    if std::env::var("EDGEPLAN_ENGINE_TESTS").as_deref() == Ok("0") {
        eprintln!("NOT RUN: EDGEPLAN_ENGINE_TESTS=0 was set; bench --engine llama.cpp did not run");
        return;
    }
    let program = llama_bench();
    let work = tempfile::tempdir().unwrap();
    let tmp = work.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let config = work.path().join("tiny.json");
    std::fs::write(
        &config,
        r#"{"model_type": "qwen3", "hidden_size": 256, "intermediate_size": 512,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 64, "vocab_size": 512, "tie_word_embeddings": true}"#,
    )
    .unwrap();
    let out = crate::util::edgeplan()
        .args([
            "bench",
            "--engine",
            "llama.cpp",
            "--quick",
            "--format",
            "json",
        ])
        .arg("--llama-bench")
        .arg(&program)
        .arg("--model-config")
        .arg(&config)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let engine = &report["engine"];
    assert_eq!(engine["engine"], "llama.cpp", "{engine}");
    assert!(
        engine["version"].as_str().unwrap().parse::<u32>().is_ok(),
        "{engine}"
    );
    for (build, class) in [("q4_0", "Q4_0"), ("q4_k_m", "Q4_K_M")] {
        let row = engine["builds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["build"] == build)
            .unwrap_or_else(|| panic!("no {build} in {engine}"));
        assert_eq!(row["timed"], true, "{row}");
        assert_eq!(row["kernel"]["kernel_class"], class, "{row}");
        assert_eq!(row["kernel"]["check"], "passed", "{row}");
        assert!(
            row["kernel"]["op"]
                .as_str()
                .unwrap()
                .starts_with("ggml-cpu"),
            "{row}"
        );
        for phase in ["decode", "prefill"] {
            let r = engine["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["build"] == build && r["phase"] == phase)
                .unwrap_or_else(|| panic!("no {build} {phase} row in {engine}"));
            assert!(r["tokens_per_s"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    assert!(engine["verdict"].is_object(), "{engine}");
    let schema = crate::util::edgeplan()
        .args(["schema", "bench"])
        .output()
        .unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&report),
        "the report fails `schema bench`"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "model files left behind: {left:?}");
}
