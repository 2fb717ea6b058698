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

#[test]
fn completions_and_man_page_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let out = edgeplan().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        for sub in ["probe", "plan", "check", "bench", "schema"] {
            assert!(text.contains(sub), "{shell} completions lack {sub}");
        }
    }
    let out = edgeplan().arg("man").output().unwrap();
    assert!(out.status.success());
    let man = String::from_utf8(out.stdout).unwrap();
    assert!(
        man.starts_with(".ie") || man.starts_with(".TH"),
        "{}",
        &man[..40]
    );
    assert!(man.contains(".SH \"EDGEPLAN PLAN\""));
    assert!(man.contains("\\-\\-priority"));
    edgeplan().args(["completions", "tcsh"]).assert().code(2);
}

#[test]
fn the_bash_completion_script_loads_in_bash() {
    let out = edgeplan().args(["completions", "bash"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("edgeplan.bash");
    std::fs::write(&file, out.stdout).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg("source \"$1\" && complete -p edgeplan")
        .arg("bash")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}
