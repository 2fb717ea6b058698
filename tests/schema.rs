//! The JSON Schemas: `edgeplan schema KIND` matches the copy committed under
//! `docs/schema/`, and every fixture profile, every plan the fixtures produce (json and
//! jsonl), the probe of every fixture sysroot and the CI manifest validate against them.

use std::path::{Path, PathBuf};

use crate::util::{edgeplan, fixture};

fn schema(kind: &str) -> serde_json::Value {
    let out = edgeplan().args(["schema", kind]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/schema")
        .join(format!("{kind}.schema.json"));
    assert_eq!(
        std::fs::read_to_string(&committed).unwrap(),
        text,
        "{} is stale: regenerate it with `edgeplan schema {kind} > {}`",
        committed.display(),
        committed.display()
    );
    serde_json::from_str(&text).unwrap()
}

fn validate(schema: &serde_json::Value, what: &str, instance: &serde_json::Value) {
    let validator = jsonschema::validator_for(schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn profiles() -> Vec<PathBuf> {
    let mut all = json_files(&fixture("profiles"));
    all.extend(json_files(&fixture("profiles-measured")));
    all
}

#[test]
fn fixture_profiles_and_probe_output_match_the_profile_schema() {
    let schema = schema("profile");
    for file in profiles() {
        let value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        validate(&schema, &file.display().to_string(), &value);
    }
    let mut sysroots: Vec<PathBuf> = std::fs::read_dir(fixture("sysroots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    sysroots.sort();
    assert!(!sysroots.is_empty());
    for dir in sysroots {
        let out = edgeplan()
            .args(["probe", "--format", "json", "--sysroot"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", dir.display());
        let value = serde_json::from_slice(&out.stdout).unwrap();
        validate(
            &schema,
            &format!("probe --sysroot {}", dir.display()),
            &value,
        );
    }
}

#[test]
fn every_plan_matches_the_plan_schema() {
    let schema = schema("plan");
    for file in profiles() {
        for priority in ["speed", "fidelity"] {
            let out = edgeplan()
                .args(["plan", "--format", "json", "--priority", priority])
                .args(["--model", "qwen3-1.7b", "--context", "4096", "--profile"])
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                matches!(out.status.code(), Some(0 | 3)),
                "{}",
                file.display()
            );
            let value = serde_json::from_slice(&out.stdout).unwrap();
            validate(&schema, &format!("plan {}", file.display()), &value);
        }
    }
    let out = edgeplan()
        .args(["plan", "--format", "jsonl", "--profile"])
        .arg(fixture("profiles"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for (i, line) in text.lines().enumerate() {
        let value = serde_json::from_str(line).unwrap();
        validate(&schema, &format!("jsonl line {}", i + 1), &value);
    }
}

#[test]
fn the_ci_manifest_matches_the_check_schema() {
    let schema = schema("check");
    let text = std::fs::read_to_string(fixture("expect.toml")).unwrap();
    let value: toml::Value = toml::from_str(&text).unwrap();
    let value = serde_json::to_value(value).unwrap();
    validate(&schema, "fixtures/expect.toml", &value);
    let bad =
        serde_json::json!({"case": [{"profile": "p.json", "expect": "bf16", "priority": "fast"}]});
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        !validator.is_valid(&bad),
        "a bad priority must fail the schema"
    );
}

#[test]
fn a_wrong_type_fails_the_profile_schema() {
    let schema = schema("profile");
    let text = std::fs::read_to_string(fixture("profiles/hand-x86-amx-usable.json")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["cpu"]["features"]["amx_int8"]["usable"] = serde_json::json!("yes");
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(!validator.is_valid(&value));
}

#[test]
fn bench_reports_match_the_bench_schema() {
    let schema = schema("bench");
    // The fake executor: the live plan, an AMX profile and a GPU plan (not applicable).
    let cases: [&[&str]; 4] = [
        &[],
        &["--profile", "bench/xeon-amx-2vcpu.json"],
        &["--profile", "profiles/hand-cuda-h100.json"],
        &["--profile", "bench/host-epyc-avx2.json", "--engine", "vllm"],
    ];
    for extra in cases {
        let mut cmd = edgeplan();
        cmd.env("EDGEPLAN_BENCH_EXECUTOR", "fake")
            .args(["bench", "--quick", "--format", "json", "--model-config"])
            .arg(fixture("bench/tiny-config.json"));
        if let [flag, file, rest @ ..] = extra {
            cmd.arg(flag).arg(fixture(file)).args(rest);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        validate(&schema, &format!("bench {extra:?}"), &value);
    }
    let mut broken = serde_json::json!({});
    broken["verdict"] = serde_json::json!("yes");
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        !validator.is_valid(&broken),
        "a report without its keys must fail"
    );
}
