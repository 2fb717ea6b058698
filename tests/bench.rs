//! `edgeplan bench`: report shape, verdict end to end, --save, and bad input.
//!
//! Timing runs use the fake executor (`EDGEPLAN_BENCH_EXECUTOR=fake`): GEMMs charge a
//! virtual clock instead of running, so these tests are fast and assert structure and
//! logic, never a speed. The JSON is read into types defined here, so the wire format is
//! checked on its own terms.

use serde::Deserialize;

use crate::util::{edgeplan, fixture};

#[derive(Debug, Deserialize)]
struct Report {
    schema_version: u32,
    executor: String,
    threads: usize,
    memory_bandwidth_gbps: f64,
    peaks: Vec<Peak>,
    memory: Memory,
    kernels: Vec<Kernel>,
    results: Vec<ResultRow>,
    fidelity: Vec<Fidelity>,
    paired: Paired,
    verdict: Verdict,
    notes: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Paired {
    rounds: usize,
    stopped: String,
    tie_band_pct: f64,
    comparisons: Vec<Comparison>,
}

#[derive(Debug, Deserialize)]
struct Comparison {
    phase: String,
    planned: String,
    rival: String,
    ratio: Interval,
    judgement: String,
}

#[derive(Debug, Deserialize)]
struct Interval {
    median: f64,
    low: f64,
    high: f64,
    n: usize,
}

#[derive(Debug, Deserialize)]
struct Peak {
    unit: String,
    tmacs: Option<f64>,
    skipped: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Memory {
    planned_peak_bytes: u64,
    budget_bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Kernel {
    name: String,
    status: String,
    detail: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ResultRow {
    path: String,
    phase: String,
    tokens: usize,
    kernel: String,
    step_ms: f64,
    step_ms_min: f64,
    step_ms_max: f64,
    tokens_per_s: f64,
    weight_gbps: f64,
    bandwidth_pct: Option<f64>,
    tmacs: f64,
    layers_measured: usize,
    working_set_bytes: u64,
}

#[derive(Debug, Deserialize)]
struct Fidelity {
    path: String,
    scheme: String,
    rel_error: f64,
    cosine: f64,
    top1_agreement: f64,
    top1_vocab: usize,
}

#[derive(Debug, Deserialize)]
struct Verdict {
    planned: Option<String>,
    fastest: serde_json::Value,
    confirmed: bool,
    status: String,
    reason: String,
    other_device: Option<String>,
}

const TINY: &str = "bench/tiny-config.json";
const HOST: &str = "bench/host-epyc-avx2.json";
const AMX: &str = "bench/xeon-amx-2vcpu.json";
/// An x86 host with AVX-512 and no AMX: its vLLM plan is 4-bit W4A16.
const ZEN4: &str = "profiles/x86-epyc-zen4.json";

fn fake_bench(executor: &str) -> assert_cmd::Command {
    let mut cmd = edgeplan();
    cmd.env("EDGEPLAN_BENCH_EXECUTOR", executor)
        .arg("bench")
        .arg("--quick");
    cmd
}

fn json_report(args: &[&str]) -> Report {
    let out = fake_bench("fake")
        .args(["--model-config"])
        .arg(fixture(TINY))
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON report")
}

#[test]
fn json_report_has_the_contract_shape() {
    let r = json_report(&["--profile", fixture(HOST).to_str().unwrap()]);
    assert_eq!(r.schema_version, 1);
    assert_eq!(r.executor, "fake");
    assert_eq!(r.threads, 2);
    // The fake executor charges 20 GB/s for its bandwidth probe.
    assert!(
        (r.memory_bandwidth_gbps - 20.0).abs() < 0.5,
        "{}",
        r.memory_bandwidth_gbps
    );
    // All three paths in both phases.
    for path in ["w4a8", "w4a16", "bf16"] {
        for phase in ["decode", "prefill"] {
            let row = r
                .results
                .iter()
                .find(|x| x.path == path && x.phase == phase)
                .unwrap_or_else(|| panic!("no {path} {phase} row in {:?}", r.results));
            assert_eq!(row.tokens, if phase == "decode" { 1 } else { 128 });
            assert!(row.step_ms_min <= row.step_ms && row.step_ms <= row.step_ms_max);
            assert!(row.tokens_per_s > 0.0 && row.tmacs > 0.0 && row.weight_gbps > 0.0);
            assert!(row.layers_measured >= 1);
            assert_eq!(row.bandwidth_pct.is_some(), phase == "decode");
        }
    }
    // Decode walks more than twice this host's L3 of distinct buffers.
    let l3 = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index3/size").ok();
    if l3.is_some() {
        for row in r.results.iter().filter(|x| x.phase == "decode") {
            assert!(row.working_set_bytes >= 2 * 1024 * 1024, "{row:?}");
        }
    }
    // Fidelity: symmetric and asymmetric int4, one bf16 row.
    let schemes: Vec<(&str, &str)> = r
        .fidelity
        .iter()
        .map(|f| (f.path.as_str(), f.scheme.as_str()))
        .collect();
    for want in [
        ("w4a8", "symmetric"),
        ("w4a8", "asymmetric"),
        ("w4a16", "symmetric"),
        ("w4a16", "asymmetric"),
        ("bf16", "bf16"),
    ] {
        assert!(schemes.contains(&want), "{want:?} missing from {schemes:?}");
    }
    for f in &r.fidelity {
        assert!(f.rel_error >= 0.0 && f.rel_error < 1.0, "{f:?}");
        assert!(f.cosine > 0.5 && f.cosine <= 1.0 + 1e-9, "{f:?}");
        assert!((0.0..=1.0).contains(&f.top1_agreement));
        assert_eq!(f.top1_vocab, 1024);
    }
    let bf16 = r.fidelity.iter().find(|f| f.path == "bf16").unwrap();
    let w4 = r
        .fidelity
        .iter()
        .find(|f| f.path == "w4a16" && f.scheme == "symmetric")
        .unwrap();
    assert!(
        bf16.rel_error < w4.rel_error,
        "bf16 weights must be closer to f32 than int4"
    );
    // Peaks are listed, the fake executor measures none.
    assert!(r.peaks.iter().any(|p| p.unit == "amx-int8"));
    assert!(
        r.peaks
            .iter()
            .all(|p| p.tmacs.is_none() && p.skipped.is_some())
    );
    assert!(r.memory.planned_peak_bytes > 0);
    assert!(r.memory.budget_bytes.is_some());
    assert!(r.notes.iter().any(|n| n.contains("upper bound")));
    assert!(!r.verdict.reason.is_empty());
    assert!(r.verdict.fastest.get("decode").is_some());
}

#[test]
fn a_kernel_failing_its_check_is_reported_and_not_timed() {
    let r = json_report(&[
        "--profile",
        fixture(HOST).to_str().unwrap(),
        "--paths",
        "w4a8",
    ]);
    let broken = r
        .kernels
        .iter()
        .find(|k| k.name == "w4a8-fake-broken")
        .unwrap();
    assert_eq!(broken.status, "failed");
    assert!(
        broken
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("scalar reference")
    );
    assert!(r.results.iter().all(|x| x.kernel != "w4a8-fake-broken"));
    assert!(
        r.results
            .iter()
            .any(|x| x.path == "w4a8" && x.kernel == "w4a8-fake"),
        "the run goes on"
    );
    let missing = r
        .kernels
        .iter()
        .find(|k| k.name == "w4a8-fake-missing")
        .unwrap();
    assert_eq!(missing.status, "unavailable");
    // Only the asked path (plus the planned one, if any) ran.
    assert!(r.results.iter().all(|x| {
        x.path == "w4a8"
            || Some(x.path.as_str())
                == r.verdict
                    .planned
                    .as_deref()
                    .map(|p| &p[..p.find('-').unwrap_or(p.len())])
    }));
}

#[test]
fn table_has_results_rooflines_fidelity_and_verdict() {
    let out = fake_bench("fake")
        .arg("--model-config")
        .arg(fixture(TINY))
        .arg("--profile")
        .arg(fixture(HOST))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "memory read bandwidth",
        "compute peaks",
        "| path",
        "ms/step",
        "% bw",
        "TMAC/s",
        "% peak",
        "rel error",
        "top-1 agreement",
        "verdict: ",
        "NOT measurements",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    assert!(
        out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains('\u{1b}'),
        "no progress bar off a terminal"
    );
}

#[test]
fn amx_speed_plan_is_confirmed_or_contradicted_end_to_end() {
    let ok = json_report(&["--profile", fixture(AMX).to_str().unwrap()]);
    if ok.verdict.planned.as_deref() != Some("w4a8-amx") {
        // The planner decides; this test only holds the bench side to it.
        eprintln!(
            "planner chose {:?}; skipping the AMX verdict check",
            ok.verdict.planned
        );
        return;
    }
    assert!(ok.verdict.confirmed, "{:?}", ok.verdict);
    assert_eq!(ok.verdict.status, "confirmed");
    edgeplan()
        .env("EDGEPLAN_BENCH_EXECUTOR", "fake-slow-w4a8")
        .args(["bench", "--quick", "--strict", "--model-config"])
        .arg(fixture(TINY))
        .arg("--profile")
        .arg(fixture(AMX))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("contradict"));
}

#[test]
fn save_writes_measurements_into_a_profile_copy() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("measured.json");
    fake_bench("fake")
        .arg("--model-config")
        .arg(fixture(TINY))
        .arg("--profile")
        .arg(fixture(HOST))
        .arg("--save")
        .arg(&saved)
        .args(["--format", "json"])
        .assert()
        .success();
    let text = std::fs::read_to_string(&saved).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["cpu"]["model_name"], "AMD EPYC");
    let results = v["measurements"]["bench"]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    // The saved profile is still a profile.
    let p = edgeplan::profile::Profile::from_json(&text, "saved").unwrap();
    let measured = p.measurements.expect("typed measurements").bench;
    assert_eq!(measured.paths().len(), 3);
}

#[test]
fn the_fake_executor_takes_its_date_from_source_date_epoch() {
    let run = |epoch: &str| {
        fake_bench("fake")
            .env("SOURCE_DATE_EPOCH", epoch)
            .arg("--model-config")
            .arg(fixture(TINY))
            .arg("--profile")
            .arg(fixture(HOST))
            .args(["--format", "json"])
            .output()
            .unwrap()
    };
    let out = run("1234567890");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["measured_at"], "2009-02-13T23:31:30Z");
    assert_eq!(v["tool"]["version"], env!("CARGO_PKG_VERSION"));
    let out = run("soon");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SOURCE_DATE_EPOCH=soon"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn list_kernels_names_every_variant() {
    let out = edgeplan()
        .args(["bench", "--list-kernels", "--profile"])
        .arg(fixture(HOST))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("w4a8-scalar"), "{text}");
}

#[test]
fn bad_input_gets_one_line_and_the_documented_code() {
    let host = fixture(HOST);
    let tiny = fixture(TINY);
    let cases: Vec<(Vec<std::ffi::OsString>, i32, &str)> = vec![
        (vec!["--threads".into(), "0".into()], 2, "--threads 0"),
        (vec!["--threads".into(), "4096".into()], 2, "--threads 4096"),
        (vec!["--paths".into(), "w4a9".into()], 2, "w4a9"),
        (
            vec!["--prefill-tokens".into(), "0".into()],
            2,
            "--prefill-tokens 0",
        ),
        (vec!["--kernel".into(), "w4a8-nope".into()], 2, "w4a8-nope"),
        (vec!["--model".into(), "gpt-17".into()], 65, "gpt-17"),
        (
            vec!["--model-config".into(), "/nonexistent/config.json".into()],
            66,
            "/nonexistent/config.json",
        ),
        (
            vec![
                "--model-config".into(),
                fixture("bench/config-missing-hidden.json").into(),
            ],
            65,
            "hidden_size",
        ),
        (
            vec![
                "--model-config".into(),
                tiny.clone().into(),
                "--profile".into(),
                "/nonexistent/p.json".into(),
            ],
            66,
            "p.json",
        ),
        (vec!["--rounds".into(), "3".into()], 2, "--rounds 3"),
        (vec!["--budget".into(), "0".into()], 2, "--budget 0"),
        (vec!["--budget".into(), "soon".into()], 2, "--budget soon"),
    ];
    for (args, code, needle) in cases {
        let mut cmd = fake_bench("fake");
        if !args.iter().any(|a| a == "--profile") {
            cmd.arg("--profile").arg(&host);
        }
        let out = cmd.args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args:?}: one line, got {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}

#[test]
fn a_model_too_big_for_memory_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.json");
    let text = std::fs::read_to_string(fixture(HOST)).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["memory"]["available_bytes"] = serde_json::json!(2u64 << 30);
    std::fs::write(&small, v.to_string()).unwrap();
    // The real executor: it must refuse before allocating or timing anything.
    edgeplan()
        .args(["bench", "--model", "llama-3.1-8b", "--profile"])
        .arg(&small)
        .assert()
        .code(3)
        .stderr(predicates::str::contains("memory budget"))
        .stdout("");
}

#[test]
fn paired_rounds_back_the_verdict() {
    let r = json_report(&["--profile", fixture(HOST).to_str().unwrap()]);
    let p = &r.paired;
    // The fake clock makes every round identical: decided at the quick minimum.
    assert_eq!((p.rounds, p.stopped.as_str()), (8, "decided"));
    assert_eq!(p.tie_band_pct, 3.0);
    assert!(!p.comparisons.is_empty());
    for c in &p.comparisons {
        assert_eq!(c.ratio.n, p.rounds);
        assert!(c.ratio.low <= c.ratio.median && c.ratio.median <= c.ratio.high);
        assert_ne!(c.planned, c.rival);
        assert!(["decode", "prefill"].contains(&c.phase.as_str()));
        let expect = if c.ratio.high <= 1.03 {
            "holds"
        } else if c.ratio.low > 1.03 {
            "beaten"
        } else {
            "undecided"
        };
        assert_eq!(c.judgement, expect, "{c:?}");
    }
    // --rounds fixes the count.
    let r = json_report(&[
        "--profile",
        fixture(HOST).to_str().unwrap(),
        "--rounds",
        "11",
    ]);
    assert_eq!((r.paired.rounds, r.paired.stopped.as_str()), (11, "rounds"));
}

#[test]
fn gpu_and_jetson_plans_are_not_applicable_and_strict_passes() {
    for profile in [
        "profiles/hand-cuda-h100.json",
        "profiles/hand-jetson-orin.json",
    ] {
        let path = fixture(profile);
        let r = json_report(&["--profile", path.to_str().unwrap(), "--strict"]);
        assert_eq!(
            r.verdict.status, "not_applicable",
            "{profile}: {:?}",
            r.verdict
        );
        assert!(!r.verdict.confirmed);
        assert!(
            r.verdict.reason.contains("for information"),
            "{}",
            r.verdict.reason
        );
        assert!(
            r.paired.comparisons.is_empty(),
            "nothing of the plan to compare"
        );
        // The CPU rows are still measured, and labelled as this host's.
        assert!(!r.results.is_empty());
        let label = r.verdict.other_device.expect("another device is labelled");
        assert!(label.contains("this host"), "{label}");
    }
    // Even with a path made slow, --strict passes: not_applicable never fails it.
    edgeplan()
        .env("EDGEPLAN_BENCH_EXECUTOR", "fake-slow-bf16")
        .args(["bench", "--quick", "--strict", "--model-config"])
        .arg(fixture(TINY))
        .arg("--profile")
        .arg(fixture("profiles/hand-cuda-h100.json"))
        .assert()
        .success()
        .stdout(predicates::str::contains("NOT APPLICABLE"));
}

#[test]
fn engine_flags_belong_to_their_engine() {
    let host = fixture(HOST);
    let cases: [(&[&str], &str); 4] = [
        (&["--python", "/usr/bin/python3"], "--python"),
        (&["--llama-bench", "/bin/true"], "--llama-bench"),
        (
            &["--engine", "vllm", "--llama-bench", "/bin/true"],
            "--llama-bench",
        ),
        (
            &["--engine", "vllm", "--python", "/nonexistent/python"],
            "/nonexistent/python",
        ),
    ];
    for (args, needle) in cases {
        let out = fake_bench("real")
            .arg("--profile")
            .arg(&host)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// A Python without vLLM is one line, exit 69, naming the interpreter, and nothing on
/// stdout: never a silent fallback to edgeplan's kernels under the engine's name.
#[test]
fn an_engine_that_is_not_installed_is_exit_69() {
    let dir = tempfile::tempdir().unwrap();
    // A "Python" that cannot import vLLM: it runs the harness's import and fails as
    // Python does (the harness's own error line and status 3).
    let fake_python = dir.path().join("python");
    std::fs::write(
        &fake_python,
        "#!/bin/sh\necho '{\"kind\": \"error\", \"message\": \"ModuleNotFoundError: No module named '\\''vllm'\\''\"}'\nexit 3\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake_python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = fake_bench("real")
        .arg("--profile")
        .arg(fixture(HOST))
        .args(["--model-config"])
        .arg(fixture(TINY))
        .args(["--engine", "vllm", "--python"])
        .arg(&fake_python)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{stderr}");
    assert!(stderr.contains("No module named"), "{stderr}");
    assert!(
        stderr.contains(&fake_python.display().to_string()),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    let last = stderr.trim_end().lines().last().unwrap();
    assert!(last.starts_with("edgeplan: "), "{stderr}");
}

#[test]
fn engine_section_reports_the_engines_kernels_and_its_verdict() {
    let r: serde_json::Value = {
        let out = fake_bench("fake")
            .args(["--model-config"])
            .arg(fixture(TINY))
            .args(["--profile"])
            .arg(fixture(ZEN4))
            .args(["--engine", "vllm", "--format", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let e = &r["engine"];
    assert_eq!(e["engine"], "vllm");
    assert_eq!(e["program"], "fake");
    assert_eq!(r["executor"], "fake");
    let builds: Vec<&str> = e["builds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["build"].as_str().unwrap())
        .collect();
    assert!(
        builds.contains(&"w4a16") && builds.contains(&"bf16") && builds.contains(&"w4a8"),
        "{builds:?}"
    );
    // Every engine row sits beside edgeplan's own kernel for the same path.
    for row in e["results"].as_array().unwrap() {
        assert!(row["own_step_ms"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["vs_own_pct"].as_f64().unwrap() > 0.0, "{row}");
    }
    assert_eq!(e["verdict"]["status"], "contradicted");
    assert_eq!(e["verdict"]["recommended_path"], "bf16");
    // The table says the same in words.
    let out = fake_bench("fake")
        .args(["--model-config"])
        .arg(fixture(TINY))
        .args(["--profile"])
        .arg(fixture(ZEN4))
        .args(["--engine", "vllm", "--strict"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("engine verdict (vllm): plan w4a16"), "{text}");
    assert!(text.contains("deploy bf16"), "{text}");
    // --strict follows the engine's verdict.
    assert_eq!(out.status.code(), Some(1));
}

/// The fake `--engine vllm` run's JSON under `executor`, with its exit status.
fn engine_run(executor: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = fake_bench(executor)
        .args(["--model-config"])
        .arg(fixture(TINY))
        .args(["--profile"])
        .arg(fixture(ZEN4))
        .args(["--engine", "vllm", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), report, stderr)
}

/// The solo check: each side of an `--engine` run is set against a short run of it alone.
/// On a quiet (fake) host both sides agree with their solo runs; with one side slowed 2x
/// in the run only (`fake-disturb-own|engine`), that side's figures are marked noisy with
/// the figures in the reason, the other side's are not, and the verdict decides nothing.
#[test]
fn an_engine_run_with_one_side_slowed_is_marked_noisy_and_decides_nothing() {
    let (code, quiet, stderr) = engine_run("fake", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let solo = &quiet["engine"]["solo"];
    assert_eq!(solo["noisy"], false, "{solo}");
    assert_eq!(solo["limit_pct"], 10.0);
    let sides: Vec<&str> = solo["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["side"].as_str().unwrap())
        .collect();
    assert!(
        sides.contains(&"engine") && sides.contains(&"own"),
        "{solo}"
    );
    assert_ne!(quiet["engine"]["verdict"]["status"], "inconclusive");
    let quiet_status = quiet["engine"]["verdict"]["status"].clone();

    for (executor, side, other) in [
        ("fake-disturb-own", "own", "engine"),
        ("fake-disturb-engine", "engine", "own"),
    ] {
        let (code, r, stderr) = engine_run(executor, &[]);
        assert_eq!(code, Some(0), "{executor}: {stderr}");
        let solo = &r["engine"]["solo"];
        assert_eq!(solo["noisy"], true, "{executor}: {solo}");
        for f in solo["figures"].as_array().unwrap() {
            let off = f["off_pct"].as_f64().unwrap();
            if f["side"] == side {
                assert!(
                    f["noisy"] == true && (off - 100.0).abs() < 5.0,
                    "{executor}: {f}"
                );
            } else {
                assert_eq!(f["side"], other);
                assert!(f["noisy"] == false && off.abs() < 10.0, "{executor}: {f}");
            }
        }
        let reason = solo["reason"].as_str().unwrap();
        let label = if side == "own" {
            "edgeplan's"
        } else {
            "the engine's"
        };
        assert!(
            reason.contains(label) && reason.contains("alone (+"),
            "{reason}"
        );
        let v = &r["engine"]["verdict"];
        assert_eq!(v["status"], "inconclusive", "{executor}: {v}");
        assert_eq!(v["noisy"], true);
        assert!(
            v["reason"].as_str().unwrap().contains("the run is noisy"),
            "{v}"
        );
        // The same run without the disturbance decides; this one must not.
        assert_ne!(v["status"], quiet_status);
    }
}

/// `--save` of a noisy `--engine` run saves nothing and exits 75 (try again) with one
/// line naming the file; the report still goes to stdout. A quiet run saves.
#[test]
fn save_refuses_a_noisy_engine_run_and_keeps_a_quiet_one() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("measured.json");
    let t = target.to_str().unwrap();
    let (code, report, stderr) = engine_run("fake-disturb-engine", &["--save", t]);
    assert_eq!(code, Some(75), "{stderr}");
    assert!(!target.exists(), "a noisy run was saved");
    assert_eq!(report["engine"]["solo"]["noisy"], true);
    let last = stderr.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with(&format!(
            "edgeplan: bench --save {t}: nothing saved: noisy run: "
        )),
        "{stderr}"
    );
    let (code, _, stderr) = engine_run("fake", &["--save", t]);
    assert_eq!(code, Some(0), "{stderr}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(saved["measurements"]["engines"][0]["engine"], "vllm");
}
