//! The memory fit on real model configs (`fixtures/models/real`, cut to the keys edgeplan
//! reads, and `fixtures/models/real-full`, complete and unmodified; each a public copy cited
//! in its folder's README) against figures computed by hand (`manifest.toml`), the refusals
//! of configs outside the formulas, and the engine kwargs the fit puts into the plan.

use serde::Deserialize;

use crate::util::{edgeplan, fixture};

#[derive(Debug, Deserialize)]
struct Manifest {
    model: Vec<Expected>,
    /// Configs outside the formulas: exit 65 with `error` in the message.
    #[serde(default)]
    refused: Vec<Refused>,
}

#[derive(Debug, Deserialize)]
struct Refused {
    file: String,
    error: String,
}

#[derive(Debug, Deserialize)]
struct Expected {
    file: String,
    weights_4bit: u64,
    weights_bf16: u64,
    kv_4k: u64,
    kv_32k: u64,
    kv_engine_32k_h100: u64,
    /// Full-attention and sliding-window layers.
    layers: [u64; 2],
    active_params_per_token: Option<u64>,
    context_limit: Option<u64>,
}

/// `plan --format json` for one profile and model; the exit code and the whole plan.
fn plan(profile: &str, model: &str, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let out = edgeplan()
        .args(["plan", "--format", "json", "--model", model, "--profile"])
        .arg(fixture(&format!("profiles/{profile}.json")))
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let plan =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{model}: {e}: {stderr}"));
    (out.status.code().unwrap(), plan, stderr)
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn manifest(folder: &str) -> Manifest {
    let text = std::fs::read_to_string(fixture(&format!("models/{folder}/manifest.toml"))).unwrap();
    toml::from_str(&text).unwrap()
}

#[test]
fn real_configs_match_the_hand_computed_manifest() {
    check_manifest("real", 12);
}

#[test]
fn complete_real_configs_match_the_hand_computed_manifest() {
    check_manifest("real-full", 8);
}

#[test]
fn complete_real_configs_outside_the_formulas_are_refused() {
    let manifest = manifest("real-full");
    assert!(!manifest.refused.is_empty());
    for want in &manifest.refused {
        let out = edgeplan()
            .args(["plan", "--format", "json", "--context", "4096", "--model"])
            .arg(format!("fixtures/models/real-full/{}", want.file))
            .arg("--profile")
            .arg(fixture("profiles/hand-cuda-h100.json"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(65), "{}: {stderr}", want.file);
        assert!(out.stdout.is_empty(), "{}", want.file);
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(&want.error), "{}: {stderr}", want.file);
        assert!(stderr.contains(&want.file), "names the file: {stderr}");
    }
}

/// Every `[[model]]` of `models/<folder>/manifest.toml` against `plan --format json`.
fn check_manifest(folder: &str, at_least: usize) {
    let manifest = manifest(folder);
    let dir = tempfile::tempdir().unwrap();
    let catalog_16 = crate::util::catalog_without_gpu_4bit(dir.path());
    let catalog_16 = catalog_16.to_str().unwrap();
    assert!(
        manifest.model.len() >= at_least,
        "at least {at_least} configs in {folder}"
    );
    for want in &manifest.model {
        let model = format!("fixtures/models/{folder}/{}", want.file);
        let name = &want.file;
        for (ctx, kv) in [("4096", want.kv_4k), ("32768", want.kv_32k)] {
            let (_, p, _) = plan("hand-x86-avx512-noamx", &model, &["--context", ctx]);
            let m = &p["memory"];
            assert_eq!(
                u(&m["weights_bytes"]),
                want.weights_4bit,
                "{name}: 4-bit weights"
            );
            assert_eq!(u(&m["kv_bytes"]), kv, "{name}: KV at {ctx}");
        }
        // The 16-bit figures: a catalog without the GPU 4-bit paths, so that a model
        // too big for the H100 in bf16 is not planned as its 4-bit fallback.
        let (_, p, _) = plan(
            "hand-cuda-h100",
            &model,
            &["--context", "32768", "--catalog", catalog_16],
        );
        let m = &p["memory"];
        assert_eq!(
            u(&m["weights_bytes"]),
            want.weights_bf16,
            "{name}: bf16 weights"
        );
        assert_eq!(
            u(&m["kv_engine_bytes"]),
            want.kv_engine_32k_h100,
            "{name}: engine KV"
        );
        let kinds = m["kv_by_layer_kind"].as_array().unwrap();
        assert_eq!(
            [u(&kinds[0]["layers"]), u(&kinds[1]["layers"])],
            want.layers,
            "{name}: layer kinds"
        );
        assert_eq!(
            m["active_params_per_token"].as_u64(),
            want.active_params_per_token,
            "{name}: active parameters"
        );
        assert_eq!(m["context_limit"].as_u64(), want.context_limit, "{name}");
    }
}

#[test]
fn every_real_config_has_its_source_in_the_readme() {
    for folder in ["real", "real-full"] {
        let readme =
            std::fs::read_to_string(fixture(&format!("models/{folder}/README.md"))).unwrap();
        let m = manifest(folder);
        let files = m
            .model
            .iter()
            .map(|e| &e.file)
            .chain(m.refused.iter().map(|r| &r.file));
        for file in files {
            let line = readme
                .lines()
                .find(|l| l.starts_with(&format!("| `{file}`")))
                .unwrap_or_else(|| panic!("{folder}/{file} is not in the README"));
            assert!(
                line.contains("github.com/") && line.split('|').any(|c| c.trim().len() == 40),
                "{folder}/{file}: the README names no repository and commit: {line}"
            );
        }
    }
}

#[test]
fn gemma2_without_layer_types_is_half_sliding_not_all_sliding() {
    // gemma-2-2b at 32k: 13 full x 32,768 + 13 sliding x 4,096 tokens, 4,096 B each:
    // 4.5 times the all-sliding figure (26 x 4,096 x 4,096 = 436,207,616 B).
    let (_, p, _) = plan(
        "hand-x86-avx512-noamx",
        "fixtures/models/real/gemma-2-2b.json",
        &["--context", "32768"],
    );
    assert_eq!(u(&p["memory"]["kv_bytes"]), 9 * 436_207_616 / 2);
}

#[test]
fn gemma_ties_its_head_by_default() {
    // gemma-2b's config has no tie_word_embeddings; GemmaConfig's default is true, so a
    // 16-bit path stores no separate head.
    let (_, p, _) = plan(
        "hand-cuda-h100",
        "fixtures/models/real/gemma-2b.json",
        &["--context", "4096"],
    );
    assert_eq!(u(&p["memory"]["weights"]["lm_head"]), 0);
}

#[test]
fn mistral_sliding_layers_hold_the_window_plus_the_prefill_chunk() {
    // A Mistral-7B-v0.1 shape (sliding_window 4096 on every layer) at 32k on an H100:
    // the architecture holds 4,096 tokens a layer; vLLM allocates
    // (ceil((4,095 + 8,192) / 16) + 1) x 16 = 12,304: three times as much.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("mistral.json");
    std::fs::write(
        &cfg,
        r#"{"model_type": "mistral", "vocab_size": 32000, "sliding_window": 4096}"#,
    )
    .unwrap();
    let (code, p, _) = plan(
        "hand-cuda-h100",
        cfg.to_str().unwrap(),
        &["--context", "32768"],
    );
    assert_eq!(code, 0);
    let m = &p["memory"];
    let per_token = 32 * 2 * 8 * 128 * 2; // 32 layers, 8 KV heads of 128, bf16
    assert_eq!(u(&m["kv_bytes"]), per_token * 4096);
    assert_eq!(u(&m["kv_engine_bytes"]), per_token * 12_304);
    assert_eq!(u(&m["engine"]["groups"][0]["tokens_per_sequence"]), 12_304);
}

#[test]
fn the_fitted_kwargs_are_in_json_and_args() {
    let (code, p, _) = plan(
        "hand-x86-avx512-noamx",
        "fixtures/models/real/qwen3-0.6b.json",
        &["--context", "16384", "--concurrency", "2"],
    );
    assert_eq!(code, 0);
    let kwargs = &p["engine_kwargs"];
    assert_eq!(kwargs["max_model_len"], serde_json::json!(16384));
    assert_eq!(kwargs["max_num_batched_tokens"], serde_json::json!(2048));
    let seqs = u(&kwargs["max_num_seqs"]);
    assert!(seqs >= 2, "{kwargs}");
    assert_eq!(seqs, u(&p["memory"]["max_concurrency"]).min(256));
    let out = edgeplan()
        .args([
            "plan",
            "--format",
            "args",
            "--model",
            "fixtures/models/real/qwen3-0.6b.json",
            "--context",
            "16384",
            "--profile",
            "fixtures/profiles/hand-cuda-h100.json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let args = String::from_utf8(out.stdout).unwrap();
    assert!(args.contains("--max-model-len 16384"), "{args}");
    assert!(args.contains("--gpu-memory-utilization 0.9"), "{args}");
    assert!(args.contains("--max-num-batched-tokens 8192"), "{args}");
    // Without --model the flags are the path's own: its dtype.
    let out = edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(fixture("profiles/hand-cuda-h100.json"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "--dtype bfloat16\n");
}

#[test]
fn a_context_past_the_model_limit_is_flagged_not_refused() {
    let (code, p, stderr) = plan(
        "hand-cuda-h100",
        "fixtures/models/real/gemma-2-2b.json",
        &["--context", "32768"],
    );
    assert_eq!(code, 0, "the fit decides the exit code");
    let m = &p["memory"];
    assert_eq!(m["beyond_context_limit"], serde_json::json!(true));
    assert_eq!(u(&m["context_limit"]), 8192);
    assert!(
        u(&m["max_context"]) <= 8192,
        "the largest context stops at the limit"
    );
    assert!(
        stderr.contains("past") && stderr.contains("8192"),
        "{stderr}"
    );
    let env = edgeplan()
        .args([
            "plan",
            "--format",
            "env",
            "--model",
            "fixtures/models/real/gemma-2-2b.json",
            "--context",
            "32768",
            "--profile",
            "fixtures/profiles/hand-cuda-h100.json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let env = String::from_utf8(env.stdout).unwrap();
    assert!(
        env.contains("EDGEPLAN_ENGINE_ENV=VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\n")
            && env.contains("--max-model-len 32768"),
        "{env}"
    );
    assert!(
        m["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("VLLM_ALLOW_LONG_MAX_MODEL_LEN")),
        "{m}"
    );
}

#[test]
fn moe_configs_plan_with_every_expert_counted() {
    let (code, p, _) = plan(
        "hand-x86-avx512-noamx",
        "fixtures/models/real/qwen3-30b-a3b.json",
        &["--context", "4096"],
    );
    let m = &p["memory"];
    // 30.5 B parameters in 4.25 bits (15.5 GiB) do not fit the 16 GiB cgroup less 10%
    // headroom: exit 3, not a refusal.
    assert_eq!(code, 3);
    assert!(u(&m["weights_bytes"]) > 15 << 30);
    assert!(u(&m["active_params_per_token"]) < 4_000_000_000);
    assert!(u(&m["weights"]["router"]) > 0);
    let (code, _, _) = plan(
        "hand-x86-amx-usable",
        "fixtures/models/real/qwen3-30b-a3b.json",
        &["--context", "32768"],
    );
    assert_eq!(code, 0, "fits in 230 GiB");
}

#[test]
fn an_unknown_family_missing_keys_names_them_all_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("odd.json");
    std::fs::write(&cfg, r#"{"model_type": "odd", "hidden_size": 64}"#).unwrap();
    let out = edgeplan()
        .args(["plan", "--model"])
        .arg(&cfg)
        .args(["--context", "8", "--profile"])
        .arg(fixture("profiles/hand-cuda-h100.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for key in [
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "vocab_size",
    ] {
        assert!(stderr.contains(key), "{stderr}");
    }
}
