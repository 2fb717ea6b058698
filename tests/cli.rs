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
