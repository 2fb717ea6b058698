//! llama.cpp, fed exactly what edgeplan prints (scripts/engines/e2e_llama.sh): the pinned
//! llama.cpp (b11312, from the llama-cpp-python 0.3.36 sdist) is built for this CPU and
//! its converter's environment installed (cached outside the clone); this host's
//! `plan --engine llama.cpp --format script`, at both priorities, converts and quantizes
//! a tiny random model and serves it with the emitted flags; tokens come back and the
//! log shows the repacked (or AMX) buffer the plan names; the memory fit matches what
//! llama.cpp reports allocating (weights, KV, compute buffer, each within 5%) for the
//! tiny model at two contexts and a random model with Qwen3-0.6B's real config at two.
//!
//! It fails, never skips, when llama.cpp cannot be built. The one way to leave it out is
//! to say so: `EDGEPLAN_ENGINE_TESTS=0` (a fast local loop; CI never sets it).

#[test]
fn the_emitted_llama_cpp_plan_builds_and_serves() {
    if std::env::var("EDGEPLAN_ENGINE_TESTS").as_deref() == Ok("0") {
        eprintln!(
            "NOT RUN: EDGEPLAN_ENGINE_TESTS=0 was set; the llama.cpp end-to-end test did not run"
        );
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("edgeplan");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(root.join("scripts/engines/e2e_llama.sh"))
        .arg(&bin)
        .arg(work.path())
        .current_dir(root);
    // The plan must be this host's, not a caller's EDGEPLAN_* settings.
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
        "the llama.cpp end-to-end run failed (exit {:?}); its log is above",
        out.status.code()
    );
    assert!(stderr.contains("e2e-llama: ok"), "{stderr}");
}
