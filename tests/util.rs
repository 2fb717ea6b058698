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
