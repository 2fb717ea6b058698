//! Issue-12 behaviours not covered elsewhere: GPU memory sources in the memory fit, the
//! unknown-memory warning, and the smaller command-line points.

use predicates::prelude::*;

use crate::util::{edgeplan, fixture};

#[test]
fn gpu_fixtures_fit_with_the_memory_source_named() {
    for (profile, name, bytes) in [
        ("x86-t4-server", "Tesla T4", 16u64 << 30),
        ("x86-h100-server", "NVIDIA H100 PCIe", 80u64 << 30),
    ] {
        let out = edgeplan()
            .args([
                "plan",
                "--format",
                "json",
                "--model",
                "qwen3-1.7b",
                "--context",
                "32768",
            ])
            .arg("--profile")
            .arg(fixture(&format!("profiles/{profile}.json")))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{profile}");
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let memory = &plan["memory"];
        assert_eq!(memory["fits"], serde_json::json!(true), "{profile}");
        assert_eq!(
            memory["budget_bytes"],
            serde_json::json!(bytes),
            "{profile}"
        );
        let source = memory["budget_source"].as_str().unwrap();
        assert!(
            source.contains(name) && source.contains("device-id table"),
            "{profile}: {source}"
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn probed_gpu_memory_comes_from_the_device_id_table_with_its_source() {
    let out = edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(fixture("sysroots/x86-t4-server"))
        .output()
        .unwrap();
    let profile: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpu = &profile["gpus"][0];
    assert_eq!(gpu["memory_bytes"], serde_json::json!(16u64 << 30));
    assert_eq!(
        gpu["sources"]["memory_bytes"],
        serde_json::json!("device-id table (marketed size)")
    );
}

#[test]
fn unknown_gpu_memory_warns_and_fits_is_null() {
    let out = edgeplan()
        .args([
            "plan",
            "--format",
            "env",
            "--model",
            "qwen3-1.7b",
            "--context",
            "32768",
        ])
        .arg("--profile")
        .arg(fixture("profiles/hand-cuda-unknown-memory.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("EDGEPLAN_MEMORY_FITS=''\n"), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warning: ") && stderr.contains("memory fit unknown"),
        "{stderr}"
    );
}

#[test]
fn a_failing_check_says_so_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.toml");
    std::fs::write(
        &manifest,
        format!(
            "[[case]]\nprofile = {:?}\nexpect = \"bf16\"\n",
            fixture("profiles/hand-x86-amx-usable.json")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    edgeplan()
        .arg("check")
        .arg(&manifest)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("hand-x86-amx-usable").and(predicate::str::contains("bf16")),
        );
}

#[test]
fn an_unknown_path_name_is_65_in_plan_and_in_check() {
    edgeplan()
        .args(["plan", "--expect", "w4a9", "--profile"])
        .arg(fixture("profiles/hand-x86-amx-usable.json"))
        .assert()
        .code(65)
        .stdout("")
        .stderr(predicate::str::contains("--expect w4a9: not a path"));
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.toml");
    std::fs::write(
        &manifest,
        "[[case]]\nprofile = \"p.json\"\nexpect = \"w4a9\"\n",
    )
    .unwrap();
    edgeplan().arg("check").arg(&manifest).assert().code(65);
}
