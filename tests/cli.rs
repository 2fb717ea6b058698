//! Usage errors and the version line.

use crate::util::edgeplan;

#[test]
fn unknown_subcommand_is_usage_error_2() {
    edgeplan().arg("frobnicate").assert().code(2);
}

#[test]
fn version_prints() {
    edgeplan()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicates::str::contains("edgeplan"));
}

#[test]
fn a_negative_headroom_is_a_value_not_a_flag() {
    edgeplan()
        .args(["plan", "--profile"])
        .arg(crate::util::fixture("profiles/hand-x86-amx-usable.json"))
        .args([
            "--model",
            "qwen3-1.7b",
            "--context",
            "4096",
            "--headroom",
            "-1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--headroom -1 must be a fraction",
        ));
}
