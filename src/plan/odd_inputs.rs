//! Inputs users write by hand or truncate by mistake, checked for the "bad input gets one
//! clear line, never a panic" contract: every real config in `fixtures/models/` (and a
//! seed for each family that has none), every profile in `fixtures/profiles*/`, the
//! built-in catalog and the `check` manifest, with each of their values in turn removed or
//! replaced by one of the wrong kind or range, either load, plan and get their memory fit
//! without a panic (overflow checks are on in test builds), or are refused with a one-line
//! error naming the input.

use std::path::Path;

use serde_json::Value;

use super::memory::budget;
use super::memory::{FitRequest, KvDtype, fit, kv_parts, weight_bytes};
use super::{Catalog, Priority, decide};
use crate::model::ModelShape;
use crate::profile::Profile;

/// Replacement values: wrong kinds, zero, negatives, fractions, and numbers past u64 and f64.
const ODD: &[&str] = &[
    "null",
    "-1",
    "0",
    "1.5",
    "1e30",
    "1e308",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "\"x\"",
    "[]",
    "{}",
    "true",
    "[1, 2]",
];

/// Starting points for the families no real config in `fixtures/models/` covers, written
/// to take their derivations (MPT's expansion ratio, LFM2's adjusted MLP width, Falcon's
/// and ChatGLM's KV heads, Granite 4.0-H's Mamba-2 layers, Qwen3-Next's linear attention,
/// GPT-2-style key names). Not facts about any checkpoint: only inputs to mutate.
const SEEDS: &[(&str, &str)] = &[
    (
        "mpt",
        r#"{"model_type": "mpt", "d_model": 256, "n_heads": 8, "n_layers": 4, "expansion_ratio": 4,
        "max_seq_len": 2048, "vocab_size": 1000,
        "attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 2}}"#,
    ),
    (
        "lfm2",
        r#"{"model_type": "lfm2", "hidden_size": 256, "block_ff_dim": 1536, "num_hidden_layers": 6,
        "num_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "conv_L_cache": 3,
        "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": 1.0,
        "block_multiple_of": 256, "full_attn_idxs": [2, 5], "tie_embedding": true}"#,
    ),
    (
        "falcon",
        r#"{"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 8,
        "num_hidden_layers": 4, "new_decoder_architecture": true, "num_kv_heads": 2,
        "vocab_size": 1000}"#,
    ),
    (
        "chatglm",
        r#"{"model_type": "chatglm", "num_layers": 4, "padded_vocab_size": 1024,
        "vocab_size": 1000, "hidden_size": 256, "ffn_hidden_size": 512, "kv_channels": 32,
        "num_attention_heads": 8, "seq_length": 4096, "multi_query_attention": true,
        "multi_query_group_num": 2}"#,
    ),
    (
        "granitemoehybrid",
        r#"{"model_type": "granitemoehybrid", "hidden_size": 256, "num_hidden_layers": 4,
        "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000,
        "num_local_experts": 4, "num_experts_per_tok": 2, "intermediate_size": 128,
        "shared_intermediate_size": 256, "mamba_expand": 2, "mamba_n_heads": 8,
        "mamba_d_head": 64, "mamba_d_state": 32, "mamba_n_groups": 1, "mamba_d_conv": 4,
        "layer_types": ["mamba", "attention", "mamba", "mamba"]}"#,
    ),
    (
        "qwen3_next",
        r#"{"model_type": "qwen3_next", "hidden_size": 256, "intermediate_size": 512,
        "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
        "head_dim": 64, "vocab_size": 1000, "full_attention_interval": 4,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 32, "linear_num_key_heads": 4,
        "linear_num_value_heads": 8, "linear_value_head_dim": 32, "num_experts": 8,
        "num_experts_per_tok": 2, "moe_intermediate_size": 64,
        "shared_expert_intermediate_size": 64}"#,
    ),
    (
        "bloom",
        r#"{"model_type": "bloom", "n_embed": 256, "n_layer": 4, "num_attention_heads": 8,
        "vocab_size": 1000}"#,
    ),
    (
        "gpt_bigcode",
        r#"{"model_type": "gpt_bigcode", "n_embd": 256, "n_layer": 4, "n_head": 8,
        "n_inner": null, "n_positions": 2048, "multi_query": true, "vocab_size": 1000}"#,
    ),
];

/// JSON pointers to every value of `v`: object members and the first three items of arrays.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate().take(3) {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        _ => {}
    }
}

/// `base` with the value at `pointer` replaced by `odd` (`None`: removed).
fn mutated(base: &Value, pointer: &str, odd: Option<&Value>) -> Value {
    let mut v = base.clone();
    let (parent, last) = pointer.rsplit_once('/').expect("pointers start with /");
    let last = last.replace("~1", "/").replace("~0", "~");
    match (v.pointer_mut(parent), odd) {
        (Some(Value::Object(m)), Some(x)) => {
            m.insert(last, x.clone());
        }
        (Some(Value::Object(m)), None) => {
            m.remove(&last);
        }
        (Some(Value::Array(a)), x) => {
            let i: usize = last.parse().expect("array index");
            match x {
                Some(x) => a[i] = x.clone(),
                None => {
                    a.remove(i);
                }
            }
        }
        _ => unreachable!("{pointer} names a member of an object or array"),
    }
    v
}

/// Loads `text` and sizes it on every catalog path; `Err` with the one-line message when
/// the config is refused.
fn load_and_fit(text: &str, profile: &Profile, catalog: &Catalog) -> Result<(), String> {
    let model = ModelShape::from_config_json(text, "odd.json").map_err(|e| format!("{e:#}"))?;
    for path in catalog.paths() {
        weight_bytes(&model, path);
        kv_parts(&model, 32_768, 4, KvDtype::Fp8);
        fit(profile, path, &request(&model, 4096, 1));
    }
    Ok(())
}

/// Loads a profile, plans it and fits a model on the planned path; `Err` with the one-line
/// message when the profile is refused.
fn load_and_plan(text: &str, model: &ModelShape, catalog: &Catalog) -> Result<(), String> {
    let profile = Profile::from_json(text, "odd.json").map_err(|e| format!("{e:#}"))?;
    plan_and_fit(&profile, model, catalog);
    Ok(())
}

/// The speed plan of `profile` and the memory fit of `model` on its path.
fn plan_and_fit(profile: &Profile, model: &ModelShape, catalog: &Catalog) {
    let plan = decide(profile, Priority::Speed, catalog);
    budget(profile);
    if let Some(path) = catalog.get(&plan.path.name) {
        fit(profile, path, &request(model, 32_768, 2));
    }
}

fn request(model: &ModelShape, context: u64, concurrency: u64) -> FitRequest {
    FitRequest {
        model: model.clone(),
        context,
        concurrency,
        kv_dtype: KvDtype::Bf16,
        headroom: 0.1,
    }
}

/// `(name, text)` of every `*.json` file in `folders`, sorted by name within each.
fn json_files(root: &Path, folders: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for folder in folders {
        let mut files: Vec<_> = std::fs::read_dir(root.join(folder))
            .expect("folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read");
            out.push((file.display().to_string(), text));
        }
    }
    out
}

/// A fixture profile, loaded.
fn fixture_profile(root: &Path) -> Profile {
    let text =
        std::fs::read_to_string(root.join("fixtures/profiles/x86-spr-amx.json")).expect("fixture");
    Profile::from_json(&text, "x86-spr-amx.json").expect("profile")
}

/// Every value of `base` in turn removed or replaced by each [`ODD`] value, written out by
/// `render` (`None`: the format cannot hold it; skipped) and run through `load`: no panic,
/// and a refusal is one line naming `origin`; `label` names `base` in failures. Returns
/// (cases, refused).
fn sweep(
    label: &str,
    base: &Value,
    origin: &str,
    render: impl Fn(&Value) -> Option<String>,
    load: impl Fn(&str) -> Result<(), String>,
) -> (usize, usize) {
    let odd: Vec<Value> = ODD
        .iter()
        .map(|s| serde_json::from_str(s).expect("valid JSON"))
        .collect();
    let mut at = Vec::new();
    pointers(base, String::new(), &mut at);
    let (mut cases, mut refused) = (0, 0);
    for pointer in &at {
        for x in odd.iter().map(Some).chain([None]) {
            let Some(text) = render(&mutated(base, pointer, x)) else {
                continue;
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(&text)));
            let what = format!("{label}: {pointer} = {x:?}");
            match outcome {
                Err(_) => panic!("{what}: panicked"),
                Ok(Err(line)) => {
                    assert!(!line.contains('\n'), "{what}: a multi-line error: {line}");
                    assert!(
                        line.contains(origin),
                        "{what}: the error does not name the input: {line}"
                    );
                    refused += 1;
                }
                Ok(Ok(())) => {}
            }
            cases += 1;
        }
    }
    (cases, refused)
}

/// JSON text, always representable.
fn json(v: &Value) -> Option<String> {
    Some(v.to_string())
}

/// TOML text; `None` where TOML cannot hold the value (`null`, integers past i64).
fn toml_text(v: &Value) -> Option<String> {
    let t: toml::Value = serde_json::from_value(v.clone()).ok()?;
    toml::to_string(&t).ok()
}

/// [`sweep`] over each JSON text of `bases`; those `must_load` names load unmutated first.
/// Returns (cases, refused) over all of them.
fn sweep_json(
    bases: impl Iterator<Item = (String, String)>,
    must_load: impl Fn(&str) -> bool,
    load: impl Fn(&str) -> Result<(), String>,
) -> (usize, usize) {
    let (mut cases, mut refused) = (0, 0);
    for (name, text) in bases {
        if must_load(&name) {
            let ok = load(&text);
            assert!(ok.is_ok(), "{name} loads unmutated: {ok:?}");
        }
        let base: Value = serde_json::from_str(&text).expect("json");
        let (c, r) = sweep(&name, &base, "odd.json", json, &load);
        (cases, refused) = (cases + c, refused + r);
    }
    (cases, refused)
}

#[test]
fn every_key_of_every_real_config_replaced_by_odd_values_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let profile = fixture_profile(root);
    let catalog = Catalog::builtin();
    let seeds = SEEDS
        .iter()
        .map(|(name, text)| (format!("seed {name}"), text.to_string()));
    let files = json_files(root, &["fixtures/models/real", "fixtures/models/real-full"]);
    // A seed must load as written (some real configs are refused on purpose).
    let (cases, refused) = sweep_json(
        seeds.chain(files),
        |name| name.starts_with("seed "),
        |t| load_and_fit(t, &profile, &catalog),
    );
    assert!(
        cases > 5000 && refused > 1000,
        "{refused} of {cases} refused"
    );
}

#[test]
fn every_key_of_every_fixture_profile_replaced_by_odd_values_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = ModelShape::load("qwen3-1.7b").expect("preset");
    let catalog = Catalog::builtin();
    let files = json_files(root, &["fixtures/profiles", "fixtures/profiles-measured"]);
    let (cases, refused) = sweep_json(
        files.into_iter(),
        |_| true,
        |t| load_and_plan(t, &model, &catalog),
    );
    assert!(
        cases > 5000 && refused > 1000,
        "{refused} of {cases} refused"
    );
}

/// A TOML file of the repository as a JSON tree, for [`sweep`] with [`toml_text`].
fn toml_fixture(root: &Path, rel: &str) -> Value {
    let text = std::fs::read_to_string(root.join(rel)).expect("fixture");
    serde_json::to_value(toml::from_str::<toml::Value>(&text).expect("TOML")).expect("as JSON")
}

#[test]
fn every_value_of_the_catalog_replaced_by_odd_values_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = toml_fixture(root, "src/plan/catalog.toml");
    let profile = fixture_profile(root);
    let model = ModelShape::load("qwen3-1.7b").expect("preset");
    let (cases, refused) = sweep("catalog.toml", &base, "odd.toml", toml_text, |t| {
        let catalog = Catalog::parse(t, "odd.toml").map_err(|e| format!("{e:#}"))?;
        plan_and_fit(&profile, &model, &catalog);
        Ok(())
    });
    assert!(cases > 500 && refused > 100, "{refused} of {cases} refused");
}

#[test]
fn every_value_of_the_check_manifest_replaced_by_odd_values_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = toml_fixture(root, "fixtures/expect.toml");
    let catalog = Catalog::builtin();
    let (cases, refused) = sweep("expect.toml", &base, "odd.toml", toml_text, |t| {
        super::check::parse_manifest(t, "odd.toml", &catalog)
            .map(|_| ())
            .map_err(|e| format!("{e:#}"))
    });
    assert!(cases > 100 && refused > 50, "{refused} of {cases} refused");
}
