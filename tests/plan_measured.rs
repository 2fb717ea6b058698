//! `plan` on profiles saved by `bench --save`: the measured figures beside the
//! catalog's in the table, the JSON `measured` object and `--explain`, for a confirmed,
//! a contradicted and a mismatched (other priority) bench verdict. The decision itself
//! must stay the catalog's in every case.
//!
//! The fixtures in fixtures/profiles-measured/ come from the simulated bench executor
//! (fixtures/profiles-measured/regenerate.sh); one test also makes its own with the
//! real binary, so the fixture files cannot drift from what `bench --save` writes.

use serde_json::Value;

use crate::util::{edgeplan, fixture};

const CONFIRMED: &str = "profiles-measured/spr-amx-confirmed.json";
const CONTRADICTED: &str = "profiles-measured/spr-amx-contradicted.json";
const NOAMX: &str = "profiles-measured/spr-noamx-w4a8-wins.json";

fn plan_out(profile: &std::path::Path, args: &[&str]) -> String {
    let out = edgeplan()
        .arg("plan")
        .arg("--profile")
        .arg(profile)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn plan_json(profile: &std::path::Path, args: &[&str]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&plan_out(profile, &all)).expect("one JSON plan")
}

fn measured_step(plan: &Value) -> &Value {
    plan["explain"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["rule"] == "measured_figures")
        .unwrap_or_else(|| panic!("no measured_figures step in {plan:#}"))
}

#[test]
fn confirmed_measurements_are_shown_beside_the_catalog() {
    let p = fixture(CONFIRMED);
    let plan = plan_json(&p, &[]);
    assert_eq!(plan["schema_version"], 1);
    assert_eq!(plan["path"]["name"], "w4a8-amx");
    let m = &plan["measured"];
    assert_eq!(m["executor"], "fake");
    assert_eq!(m["bench_planned"], "w4a8-amx");
    assert_eq!(m["bench_priority"], "speed");
    assert_eq!(m["bench_verdict"], "confirmed");
    assert_eq!(m["applies"], true);
    assert_eq!(m["confirms_plan"], true);
    assert_eq!(m["contradicts_plan"], false);
    assert_eq!(m["plan_bench_path"], "w4a8");
    let paths: Vec<&str> = m["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["bf16", "w4a16", "w4a8"]);
    let w4a8 = &m["paths"][2];
    assert_eq!(w4a8["decode_kernel"], "w4a8-fake");
    assert!(w4a8["decode_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert!(w4a8["rel_error"].as_f64().unwrap() > 0.0);
    let step = measured_step(&plan);
    let outcome = step["outcome"].as_str().unwrap();
    assert!(outcome.contains("confirm the plan"), "{outcome}");
    assert!(outcome.contains("simulated test executor"), "{outcome}");

    let table = plan_out(&p, &["--explain"]);
    assert!(
        table.contains("Measured by bench (* this plan's path)"),
        "{table}"
    );
    assert!(table.contains("| w4a8 * "), "{table}");
    assert!(
        table.contains("bench verdict: w4a8-amx at priority speed: confirmed"),
        "{table}"
    );
    assert!(!table.contains("CONTRADICT"), "{table}");
    // Wrapped prose: compare with the line breaks and indents folded.
    let flat = table.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("measured_figures: the measurements on this host confirm"));
    assert!(table.contains("measurements.bench.w4a8 = {"), "{table}");
}

#[test]
fn contradicted_measurements_are_stated_and_the_decision_stays() {
    let p = fixture(CONTRADICTED);
    let plan = plan_json(&p, &[]);
    // The rules are unchanged: the catalog's path, kwargs and verification.
    let plain = plan_json(&fixture("profiles/x86-spr-amx.json"), &[]);
    assert_eq!(plan["path"], plain["path"]);
    assert_eq!(plan["engine_kwargs"], plain["engine_kwargs"]);
    assert!(plain.get("measured").is_none(), "{plain:#}");
    let m = &plan["measured"];
    assert_eq!(m["bench_verdict"], "contradicted");
    assert_eq!(m["applies"], true);
    assert_eq!(m["contradicts_plan"], true);
    assert_eq!(m["confirms_plan"], false);
    let reason = m["reason"].as_str().unwrap();
    assert!(reason.contains("CONTRADICT the plan"), "{reason}");
    assert!(reason.contains("w4a16 beats w4a8 in decode"), "{reason}");
    assert!(reason.contains("decision stays the catalog's"), "{reason}");
    let outcome = measured_step(&plan)["outcome"].as_str().unwrap();
    assert!(outcome.contains("CONTRADICT the plan"), "{outcome}");

    let table = plan_out(&p, &["--explain"]);
    assert!(table.contains("| path            | w4a8-amx"), "{table}");
    assert!(
        table.contains("MEASUREMENTS CONTRADICT THIS PLAN:"),
        "{table}"
    );
    assert!(table.contains("measured_figures: the measurements on this host CONTRADICT"));
}

#[test]
fn measurements_at_another_priority_are_not_applied() {
    // Saved at speed for w4a8-amx; planned at fidelity, the path is w4a16.
    let p = fixture(CONTRADICTED);
    let plan = plan_json(&p, &["--priority", "fidelity"]);
    assert_eq!(plan["path"]["name"], "w4a16");
    let m = &plan["measured"];
    assert_eq!(m["applies"], false);
    assert_eq!(m["contradicts_plan"], false);
    assert_eq!(m["confirms_plan"], false);
    assert_eq!(m["plan_bench_path"], "w4a16");
    let reason = m["reason"].as_str().unwrap();
    assert!(
        reason.contains("was for w4a8-amx at priority speed, a different path and priority"),
        "{reason}"
    );
    assert!(reason.contains("not applied here"), "{reason}");
    let table = plan_out(&p, &["--priority", "fidelity", "--explain"]);
    assert!(!table.contains("CONTRADICT"), "{table}");
    assert!(table.contains("| w4a16 * "), "{table}");
    assert!(table.contains("not applied here"), "{table}");

    // Same path, other priority: x86 without AMX plans w4a16 either way.
    let plan = plan_json(&fixture(NOAMX), &["--priority", "fidelity"]);
    assert_eq!(plan["path"]["name"], "w4a16");
    let reason = plan["measured"]["reason"].as_str().unwrap();
    assert!(reason.contains(", a different priority from"), "{reason}");
    assert_eq!(plan["measured"]["contradicts_plan"], false);
}

#[test]
fn w4a8_win_without_amx_says_vllm_cannot_run_it() {
    let plan = plan_json(&fixture(NOAMX), &[]);
    assert_eq!(plan["path"]["name"], "w4a16");
    let m = &plan["measured"];
    assert_eq!(m["contradicts_plan"], true);
    let reason = m["bench_reason"].as_str().unwrap();
    assert!(reason.starts_with("w4a8 beats w4a16 in decode"), "{reason}");
    assert!(reason.contains("vLLM gates W4A8 on AMX"), "{reason}");
    assert!(reason.contains("plan cannot route to it"), "{reason}");
}

#[test]
fn fleet_view_has_a_measured_column() {
    let out = plan_out(
        &fixture(CONFIRMED),
        &[
            "--profile",
            fixture(CONTRADICTED).to_str().unwrap(),
            "--profile",
            fixture("profiles/x86-epyc-zen4.json").to_str().unwrap(),
        ],
    );
    assert!(out.contains("| measured"), "{out}");
    // Rows come in input order; the saved profiles keep their device's label.
    let cells: Vec<(String, String)> = out
        .lines()
        .skip(2)
        .take(3)
        .map(|l| {
            let cols: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (cols[0].to_string(), cols[cols.len() - 1].to_string())
        })
        .collect();
    let want = [
        ("x86-spr-amx", "confirms"),
        ("x86-spr-amx", "CONTRADICTS"),
        ("x86-epyc-zen4", "no"),
    ]
    .map(|(d, m)| (d.to_string(), m.to_string()));
    assert_eq!(cells, want, "{out}");
}

#[test]
fn a_profile_saved_by_bench_plans_with_its_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("measured.json");
    edgeplan()
        .env("EDGEPLAN_BENCH_EXECUTOR", "fake-slow-w4a8")
        .env_remove("SOURCE_DATE_EPOCH")
        .args(["bench", "--quick", "--model-config"])
        .arg(fixture("bench/tiny-config.json"))
        .arg("--profile")
        .arg(fixture("profiles/x86-spr-amx.json"))
        .arg("--save")
        .arg(&saved)
        .args(["--format", "json"])
        .assert()
        .success();
    let fresh = plan_json(&saved, &[]);
    let kept = plan_json(&fixture(CONTRADICTED), &[]);
    // When, on what and by which edgeplan: the run is seconds old (the clock is real).
    let m = &fresh["measured"];
    let at = m["measured_at"].as_str().unwrap();
    assert!(at.len() == 20 && at.ends_with('Z'), "{at}");
    let age = m["age_s"].as_i64().unwrap();
    assert!((0..3600).contains(&age), "{age}");
    assert_eq!(m["edgeplan_version"], env!("CARGO_PKG_VERSION"));
    let saved_profile: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let bench = &saved_profile["measurements"]["bench"];
    assert_eq!(bench["measured_at"], at);
    assert_eq!(bench["tool"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["host_cpu"], bench["host"]["cpu_model"]);
    assert_eq!(fresh["path"]["name"], "w4a8-amx");
    for key in [
        "bench_planned",
        "bench_priority",
        "bench_verdict",
        "applies",
    ] {
        assert_eq!(fresh["measured"][key], kept["measured"][key], "{key}");
    }
    assert_eq!(fresh["measured"]["contradicts_plan"], true);
}

#[test]
fn unreadable_measurements_are_ignored_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("profiles/x86-spr-amx.json")).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["measurements"] = serde_json::json!({"bench": {"results": "not a list"}});
    let file = dir.path().join("odd.json");
    std::fs::write(&file, value.to_string()).unwrap();
    let plan = plan_json(&file, &[]);
    assert_eq!(plan["path"]["name"], "w4a8-amx");
    assert!(plan.get("measured").is_none(), "{plan:#}");
}

#[test]
fn a_real_confirming_bench_run_makes_the_plan_measured() {
    // The fixture's figures are simulated: the plan stays flags-only.
    let plan = plan_json(&fixture(CONFIRMED), &[]);
    assert_eq!(plan["path"]["verified"], "flags-only", "{plan:#}");
    // The same run marked as a real one on this device: measured, saying by what.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture(CONFIRMED)).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["measurements"]["bench"]["executor"] = "real".into();
    value["measurements"]["bench"]["host"]["cpu_model"] = value["cpu"]["model_name"].clone();
    let file = dir.path().join("real.json");
    std::fs::write(&file, value.to_string()).unwrap();
    let plan = plan_json(&file, &[]);
    assert_eq!(plan["path"]["verified"], "measured", "{plan:#}");
    assert_eq!(plan["measured"]["host_matches_profile"], true);
    let basis = plan["path"]["verified_basis"].as_str().unwrap();
    assert!(basis.contains("bench --save"), "{basis}");
    assert!(basis.contains("measured 2026-12-01T00:00:00Z ("), "{basis}");
    // A real run on another CPU measured that CPU, not this device.
    value["measurements"]["bench"]["host"]["cpu_model"] = "Some Other CPU".into();
    std::fs::write(&file, value.to_string()).unwrap();
    let plan = plan_json(&file, &[]);
    assert_eq!(plan["measured"]["host_matches_profile"], false);
    assert_eq!(plan["measured"]["confirms_plan"], true);
    assert_ne!(plan["path"]["verified"], "measured", "{plan:#}");
    let reason = plan["measured"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("the run measured Some Other CPU, not the CPU this profile describes"),
        "{reason}"
    );
    // A contradicting run never makes a plan measured.
    let text = std::fs::read_to_string(fixture(CONTRADICTED)).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["measurements"]["bench"]["executor"] = "real".into();
    std::fs::write(&file, value.to_string()).unwrap();
    let plan = plan_json(&file, &[]);
    assert_ne!(plan["path"]["verified"], "measured", "{plan:#}");
}

/// A profile of `base` carrying one saved `bench --engine vllm` run that recommends
/// `recommended` at `priority`, made by `executor` on `cpu`.
fn with_engine_run(
    dir: &std::path::Path,
    base: &str,
    executor: &str,
    cpu: Option<&str>,
    priority: &str,
    recommended: &str,
) -> std::path::PathBuf {
    let text = std::fs::read_to_string(fixture(base)).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let cpu = cpu
        .map(str::to_string)
        .unwrap_or_else(|| v["cpu"]["model_name"].as_str().unwrap().to_string());
    v["measurements"] = serde_json::json!({
        "bench": {"results": []},
        "engines": [{
            "engine": "vllm",
            "version": "0.32.0",
            "executor": executor,
            "measured_at": "2026-12-03T20:00:00Z",
            "host": {"cpu_model": cpu},
            "results": [],
            "verdict": {
                "planned": "w4a16",
                "priority": priority,
                "status": "contradicted",
                "recommended_path": recommended,
                "reason": "in this engine bf16 decodes faster than w4a16 (time ratio 1.36)"
            }
        }]
    });
    let path = dir.join(format!("{executor}-{priority}-{recommended}.json"));
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

const ZEN4: &str = "profiles/x86-epyc-zen4.json";

#[test]
fn a_saved_engine_run_on_this_device_steers_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let p = with_engine_run(dir.path(), ZEN4, "real", None, "speed", "bf16");
    let plan = plan_json(&p, &["--explain"]);
    assert_eq!(plan["path"]["name"], "bf16", "{plan:#}");
    assert_eq!(plan["memory_fallback"], "w4a16");
    let step = plan["explain"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["rule"] == "measured_engine")
        .expect("a measured_engine step");
    assert!(
        step["outcome"]
            .as_str()
            .unwrap()
            .contains("bf16 decodes faster"),
        "{step}"
    );
    let lost = plan["alternatives"].as_array().unwrap();
    assert!(
        lost.iter()
            .any(|a| a["path"] == "w4a16"
                && a["reason"].as_str().unwrap().contains("memory fallback"))
    );
    assert!(
        !lost.iter().any(|a| a["path"] == "bf16"),
        "the chosen path is no alternative"
    );
}

#[test]
fn an_engine_run_that_cannot_speak_for_this_plan_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        with_engine_run(dir.path(), ZEN4, "fake", None, "speed", "bf16"),
        with_engine_run(
            dir.path(),
            ZEN4,
            "real",
            Some("Another CPU"),
            "speed",
            "bf16",
        ),
        with_engine_run(dir.path(), ZEN4, "real", None, "fidelity", "bf16"),
    ];
    for p in cases {
        let plan = plan_json(&p, &[]);
        assert_eq!(plan["path"]["name"], "w4a16", "{}", p.display());
        assert!(plan.get("memory_fallback").is_none());
    }
}

#[test]
fn a_followed_bigger_build_falls_back_to_the_rule_when_it_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let p = with_engine_run(dir.path(), ZEN4, "real", None, "speed", "bf16");
    // Llama 3.1 8B in bf16 is 16 GB of weights: shrink the device until only 4-bit fits.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["memory"]["available_bytes"] = serde_json::json!(12u64 << 30);
    v["memory"]["total_bytes"] = serde_json::json!(16u64 << 30);
    v["memory"]["budget_bytes"] = serde_json::json!(12u64 << 30);
    std::fs::write(&p, v.to_string()).unwrap();
    let out = edgeplan()
        .args([
            "plan",
            "--format",
            "json",
            "--model",
            "llama-3.1-8b",
            "--context",
            "4096",
            "--profile",
        ])
        .arg(&p)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["path"]["name"], "w4a16", "{stderr}");
    assert_eq!(plan["memory"]["fits"], true);
    assert!(
        stderr.contains("bf16 does not fit") && stderr.contains("memory fallback, w4a16"),
        "{stderr}"
    );
    // Without the squeeze, bf16 fits and stays.
    let roomy = with_engine_run(dir.path(), ZEN4, "real", None, "speed", "bf16");
    let plan = plan_json(&roomy, &["--model", "qwen3-1.7b", "--context", "4096"]);
    assert_eq!(plan["path"]["name"], "bf16");
}
