//! `plan --format script`: every fixture profile gets a script that `bash -n` accepts and
//! whose Python parts byte-compile; the scripts for six fixtures match golden files in
//! `fixtures/scripts/`; a script stops early, naming what is missing, without its tools;
//! where GPTQModel is installed, the GPTQ script quantizes a tiny model made locally.

use std::path::Path;

use crate::util::{edgeplan, fixture};

/// The Python programs a script embeds as `<<'EDGEPLAN_PY'` heredocs.
fn embedded_python(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in script.lines() {
        match &mut current {
            None if line.contains("<<'EDGEPLAN_PY'") => current = Some(String::new()),
            Some(body) if line == "EDGEPLAN_PY" => {
                out.push(std::mem::take(body));
                current = None;
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "unterminated heredoc");
    out
}

fn script_for(profile: &Path, priority: &str) -> String {
    let out = edgeplan()
        .args([
            "plan",
            "--format",
            "script",
            "--priority",
            priority,
            "--profile",
        ])
        .arg(profile)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        profile.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn python_ok() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_fixture_script_parses_in_bash_and_python() {
    let dir = tempfile::tempdir().unwrap();
    let mut profiles: Vec<_> = std::fs::read_dir(fixture("profiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    profiles.sort();
    let python = python_ok();
    if !python {
        eprintln!("SKIPPED: python3 not found; the embedded Python was not byte-compiled");
    }
    let mut compiled = 0;
    for profile in &profiles {
        for priority in ["speed", "fidelity"] {
            let script = script_for(profile, priority);
            assert!(script.starts_with("#!/usr/bin/env bash\n"), "{script}");
            assert!(script.contains("set -euo pipefail"));
            let file = dir.path().join("build.sh");
            std::fs::write(&file, &script).unwrap();
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                check.status.success(),
                "{}: bash -n: {}",
                profile.display(),
                String::from_utf8_lossy(&check.stderr)
            );
            let programs = embedded_python(&script);
            assert!(
                !programs.is_empty(),
                "{}: no Python in the script",
                profile.display()
            );
            if python {
                for (i, program) in programs.iter().enumerate() {
                    let py = dir.path().join(format!("part{i}.py"));
                    std::fs::write(&py, program).unwrap();
                    let out = std::process::Command::new("python3")
                        .args(["-m", "py_compile"])
                        .arg(&py)
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}: py_compile: {}\n{program}",
                        profile.display(),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    compiled += 1;
                }
            }
        }
    }
    assert!(!python || compiled >= profiles.len() * 2);
}

#[test]
fn scripts_match_the_golden_files() {
    for entry in std::fs::read_dir(fixture("scripts")).unwrap() {
        let golden = entry.unwrap().path();
        let stem = golden.file_stem().unwrap().to_string_lossy().into_owned();
        let (name, priority) = stem.rsplit_once('-').unwrap();
        let got = script_for(&fixture(&format!("profiles/{name}.json")), priority);
        let want = std::fs::read_to_string(&golden).unwrap();
        assert!(
            got == want,
            "{stem}: the script differs from {} (regenerate it with `edgeplan plan --format script --priority {priority} --profile fixtures/profiles/{name}.json`)",
            golden.display()
        );
    }
}

#[test]
fn the_settings_follow_the_path_and_priority() {
    let speed = script_for(&fixture("profiles/hand-x86-amx-usable.json"), "speed");
    assert!(speed.contains("SYM = True\n"));
    assert!(speed.contains("QUANTIZE_HEAD = True\n"));
    assert!(speed.contains("GROUP_SIZE = 128\n"));
    assert!(speed.contains("desc_act=False"));
    assert!(speed.contains("exec vllm serve \"$OUT_DIR\" --quantization gptq\n"));
    assert!(speed.contains("OMP_NUM_THREADS:-24"));
    let fidelity = script_for(&fixture("profiles/hand-x86-amx-usable.json"), "fidelity");
    assert!(fidelity.contains("SYM = False\n"));
    assert!(fidelity.contains("--quantization cpu_int4\n"));
    let t4 = script_for(&fixture("profiles/hand-cuda-t4.json"), "speed");
    assert!(
        t4.contains("exec vllm serve \"$MODEL\" --dtype float16\n"),
        "{t4}"
    );
    let h100 = script_for(&fixture("profiles/hand-cuda-h100.json"), "speed");
    assert!(h100.contains("--dtype bfloat16\n"));
    let npu = script_for(&fixture("profiles/hand-android-npu.json"), "speed");
    assert!(npu.contains("HTP_ARCH = \"v75\""));
    assert!(npu.contains("hub.QuantizeDtype.INT16"));
}

#[test]
fn a_script_stops_early_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("build.sh");
    std::fs::write(
        &file,
        script_for(&fixture("profiles/hand-x86-amx-usable.json"), "speed"),
    )
    .unwrap();
    // No arguments: usage, exit 2.
    let out = std::process::Command::new("bash")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"));
    // A directory that is not a model.
    let out = std::process::Command::new("bash")
        .arg(&file)
        .arg(dir.path())
        .arg(dir.path().join("calib.txt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no config.json"));
    // A model directory and calibration text, but an empty PATH: no python3.
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    std::fs::write(dir.path().join("calib.txt"), "hello\n").unwrap();
    let out = std::process::Command::new("/bin/bash")
        .arg(&file)
        .arg(dir.path())
        .arg(dir.path().join("calib.txt"))
        .env("PATH", dir.path().join("nothing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs `python3` on PATH"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn script_describes_one_device_and_is_empty_on_failure() {
    edgeplan()
        .args(["plan", "--format", "script", "--profile"])
        .arg(fixture("profiles"))
        .assert()
        .code(2)
        .stdout("");
    edgeplan()
        .args([
            "plan",
            "--format",
            "script",
            "--expect",
            "bf16",
            "--profile",
        ])
        .arg(fixture("profiles/hand-x86-amx-usable.json"))
        .assert()
        .code(1)
        .stdout("");
}

/// Makes a tiny random Llama-style model (tied embeddings, a word-level tokenizer) in
/// `dir`, locally: no hub downloads.
const TINY_MODEL_PY: &str = r#"
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = sys.argv[1]
vocab = {f"w{i}": i for i in range(255)}
vocab["[UNK]"] = 255
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[UNK]", eos_token="[UNK]")
config = LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=True)
LlamaForCausalLM(config).save_pretrained(out)
fast.save_pretrained(out)
"#;

#[test]
fn the_gptq_script_quantizes_a_tiny_local_model_when_the_quantizer_is_installed() {
    let ready = std::process::Command::new("python3")
        .args(["-c", "import torch, transformers, tokenizers, gptqmodel"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ready {
        eprintln!(
            "SKIPPED: the GPTQ build script was not run on a model: python3 with torch, transformers and gptqmodel is not installed here (pip install torch transformers gptqmodel)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny");
    let made = std::process::Command::new("python3")
        .args(["-c", TINY_MODEL_PY])
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let calibration = dir.path().join("calib.txt");
    let line: Vec<String> = (0..64).map(|i| format!("w{}", (i * 7) % 255)).collect();
    std::fs::write(&calibration, format!("{}\n", line.join(" ")).repeat(16)).unwrap();
    let script = dir.path().join("build.sh");
    std::fs::write(
        &script,
        script_for(&fixture("profiles/hand-x86-amx-usable.json"), "speed"),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(&model)
        .arg(&calibration)
        .arg(&out_dir)
        .env("EDGEPLAN_NO_SERVE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = std::fs::read_to_string(out_dir.join("config.json")).unwrap();
    assert!(config.contains("gptq"), "{config}");
}
