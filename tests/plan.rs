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
    verified: bool,
    rationale: String,
    build_with: Option<String>,
    notes: Vec<String>,
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
    assert!(p.path.verified && p.path.runs_in_vllm && !p.path.fused_cpu_norms);
    assert_eq!(
        p.path.build_with.as_deref(),
        Some("analysis/experiments/spark_edge/quantize_gptq_int4.py")
    );
    assert_eq!(
        serde_json::Value::Object(p.engine_kwargs),
        serde_json::json!({"quantization": "gptq"})
    );
    assert!(p.path.rationale.contains("int4_scaled_mm_cpu"));
    assert!(
        p.path
            .notes
            .iter()
            .any(|n| n.contains("86.6") && n.contains("Xeon 8480C"))
    );
    assert!(
        p.path
            .notes
            .iter()
            .any(|n| n.contains("84.5") && n.contains("different run"))
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
            .any(|n| n.contains("36.9 dB") && n.contains("5.1 dB"))
    );

    let jetson = plan_json("hand-jetson-orin", "speed");
    assert_eq!(
        (jetson.path.name.as_str(), jetson.path.verified),
        ("bf16", false)
    );
    let t4 = plan_json("hand-cuda-t4", "speed");
    assert_eq!((t4.path.name.as_str(), t4.path.verified), ("fp16", true));
}

#[test]
fn os_permission_overrules_the_flags_and_the_fallback_is_explained() {
    assert_eq!(
        plan_json("hand-x86-amx-no-permission", "speed").path.name,
        "w4a16-tinygemm"
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
        out.contains("Alternatives that lost:") && out.contains("- w4a16-tinygemm:"),
        "{out}"
    );
    let out = stdout_of(&[
        "plan",
        "--explain",
        "--profile",
        "fixtures/profiles/hand-x86-amx-usable.json",
    ]);
    assert!(
        out.contains("cpu.features.amx_int8.usable = true  [probe verdict (hand-written profile)]"),
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
            "[[case]]\nprofile = {:?}\npriority = {:?}\nexpect = {:?}\n\n",
            abs.display().to_string(),
            case["priority"].as_str().unwrap(),
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
fn expect_toml_covers_every_fixture_profile_at_both_priorities() {
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
            let covered = cases.iter().any(|c| {
                c["profile"].as_str() == Some(&rel) && c["priority"].as_str() == Some(priority)
            });
            assert!(
                covered,
                "fixtures/expect.toml has no {priority} case for {rel}"
            );
        }
    }
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
        .stdout("--quantization cpu_int4\n")
        .stderr(predicate::str::contains(
            "--expect w4a8-amx: hand-x86-amx-usable planned w4a16-tinygemm",
        ));
}

// ---- formats -----------------------------------------------------------------------------

#[test]
fn args_format_is_vllm_flags_or_nothing() {
    edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(profile("hand-x86-amx-usable"))
        .assert()
        .success()
        .stdout("--quantization gptq\n");
    edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(profile("hand-cuda-h100"))
        .assert()
        .success()
        .stdout("");
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
build=analysis/experiments/spark_edge/quantize_gptq_int4.py\n\
npu=export-qnn-w8a16 q=[] vllm=0\n\
argv=5: vllm serve MODEL --quantization gptq\n\
argv=3: vllm serve MODEL\n"
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
        .stdout(predicate::str::contains("\"name\": \"w4a16-tinygemm\""));
}

// ---- fleets ------------------------------------------------------------------------------

#[test]
fn a_directory_gives_the_fleet_table_with_counts() {
    let out = stdout_of(&["plan", "--profile", "fixtures/profiles"]);
    assert!(out.contains("| device"), "{out}");
    for line in [
        "| hand-android-npu ",
        "| hand-x86-amx-flags-only ",
        "| workstation (GPU memory unknown) ",
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
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
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
            "not an edgeplan profile",
        ),
        (
            "arch.json",
            good.replace("\"x86_64\"", "\"riscv64\""),
            "not an edgeplan profile",
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
            "not an edgeplan profile",
        ),
        (
            "float.json",
            good.replace("\"limit_bytes\": null", "\"limit_bytes\": 1.5"),
            "not an edgeplan profile",
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
        "huge.json: more than 64 MiB",
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
    run("catalogs/bad-field.toml", "bad-field.toml:98: bad catalog");
    run(
        "catalogs/negative-group.toml",
        "negative-group.toml:97: bad catalog: path `w4a16-tinygemm`: group_size",
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
            "analysis/experiments/spark_edge/quantize_gptq_int4.py",
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
/// under it appear in order in stdout (`...` skips).
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
        let mut rest = stdout.as_str();
        for want in shown
            .iter()
            .filter(|l| l.trim() != "..." && !l.trim().is_empty())
        {
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
