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
    cmd
}

/// Path of a file under `fixtures/`.
#[allow(dead_code)]
pub fn fixture(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}
