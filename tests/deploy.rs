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

/// Runs `edgeplan` to completion and returns (exit code, stdout lines, peak RSS in KiB),
/// the peak being the child's VmHWM sampled while it streams.
// The child is reaped by `libc::wait4` (for its exit status), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_measured(args: &[&std::ffi::OsStr]) -> (i32, u64, i64) {
    use std::io::Read;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("edgeplan"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut lines = 0u64;
    // The child's own peak, VmHWM of its address space, sampled while it streams. Not
    // wait4's ru_maxrss: a spawned child's maxrss starts at the spawning process's peak
    // (exec carries the old address space's high-water mark over), so it would count this
    // test harness, whatever the other tests running in it allocated.
    let status_path = format!("/proc/{}/status", child.id());
    let hwm_kib = || -> Option<i64> {
        let status = std::fs::read_to_string(&status_path).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let mut peak_kib = 0i64;
    loop {
        let n = stdout.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
        peak_kib = peak_kib.max(hwm_kib().unwrap_or(0));
    }
    let mut status = 0;
    // SAFETY: the pid is our own unwaited child; status is a valid out-pointer and a null
    // rusage is allowed.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, std::ptr::null_mut()) };
    assert!(pid > 0);
    let code = libc::WEXITSTATUS(status);
    assert!(peak_kib > 0, "no VmHWM sample while the child ran");
    (code, lines, peak_kib)
}

#[test]
fn a_fleet_over_64_mib_streams_in_constant_memory_with_error_records() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("profiles/hand-x86-amx-usable.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let line = serde_json::to_string(&value).unwrap();
    let path = dir.path().join("fleet.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut written = 0usize;
    let mut count = 0u64;
    use std::io::Write;
    while written < 68 << 20 {
        if count == 1000 {
            writeln!(file, "{{\"schema_version\": 1, \"cpu\": \"broken\"}}").unwrap();
        } else {
            writeln!(file, "{line}").unwrap();
        }
        written += line.len() + 1;
        count += 1;
    }
    file.flush().unwrap();
    drop(file);
    let (code, lines, rss_kib) = run_measured(&[
        "plan".as_ref(),
        "--format".as_ref(),
        "jsonl".as_ref(),
        "--profile".as_ref(),
        path.as_os_str(),
    ]);
    assert_eq!(code, 65, "one bad line");
    assert_eq!(lines, count, "one record per line, the bad one included");
    assert!(
        rss_kib < 100 * 1024,
        "peak RSS {} MiB for a {} MiB fleet",
        rss_kib / 1024,
        written >> 20
    );
}

#[test]
fn check_and_bench_read_stdin_with_dash() {
    let manifest = format!(
        "[[case]]\nprofile = {:?}\nexpect = \"w4a8-amx\"\n",
        fixture("profiles/hand-x86-amx-usable.json")
            .display()
            .to_string()
    );
    edgeplan()
        .args(["check", "-"])
        .write_stdin(manifest)
        .assert()
        .success()
        .stdout(predicate::str::contains("1 passed, 0 failed"));
    let text = std::fs::read_to_string(fixture("profiles/hand-x86-amx-usable.json")).unwrap();
    edgeplan()
        .env("EDGEPLAN_BENCH_EXECUTOR", "fake")
        .args(["bench", "--quick", "--format", "json", "--profile", "-"])
        .args(["--model-config"])
        .arg(fixture("bench/tiny-config.json"))
        .write_stdin(text)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"verdict\""));
    edgeplan()
        .args(["bench", "--profile", "-", "--list-kernels"])
        .write_stdin("{\"schema_version\": 1, \"cpu\": 3}")
        .assert()
        .code(65)
        .stderr(predicate::str::contains("stdin: cpu: expected struct Cpu"));
}

#[test]
fn a_bogus_kernel_override_is_a_usage_error() {
    edgeplan()
        .env("EDGEPLAN_KERNEL", "bogus")
        .args(["bench", "--list-kernels"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "EDGEPLAN_KERNEL=bogus: not a kernel variant",
        ));
}

#[test]
fn bench_save_to_an_unwritable_place_fails_before_the_run() {
    edgeplan()
        .env("EDGEPLAN_BENCH_EXECUTOR", "fake")
        .args([
            "bench",
            "--quick",
            "--save",
            "/nonexistent-dir/measured.json",
            "--profile",
        ])
        .arg(fixture("profiles/hand-x86-amx-usable.json"))
        .assert()
        .code(74)
        .stdout("")
        .stderr(predicate::str::contains(
            "--save /nonexistent-dir/measured.json: cannot write",
        ));
}

#[test]
fn a_type_error_names_the_field_path() {
    let text = std::fs::read_to_string(fixture("profiles/hand-x86-amx-usable.json")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["cpu"]["features"]["amx_int8"]["usable"] = serde_json::json!("yes");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.json");
    std::fs::write(&file, value.to_string()).unwrap();
    edgeplan()
        .args(["plan", "--profile"])
        .arg(&file)
        .assert()
        .code(65)
        .stderr(predicate::str::contains(
            "x.json: cpu.features.amx_int8.usable: expected a boolean, got string \"yes\"",
        ));
}

#[test]
fn the_manifest_states_the_rust_version_and_ships_no_debug_info() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
    )
    .unwrap();
    let manifest: toml::Value = toml::from_str(&text).unwrap();
    let version = manifest["package"]["rust-version"].as_str().unwrap();
    assert!(version.starts_with("1."), "{version}");
    let release = &manifest["profile"]["release"];
    assert_eq!(release["debug"].as_bool(), Some(false));
    assert_eq!(release["strip"].as_str(), Some("debuginfo"));
}
