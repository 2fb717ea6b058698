//! `plan --format script`: a self-contained bash script that builds and serves the plan.
//!
//! One script per path kind, each using public tools only, stating its prerequisites in
//! its header and checking them before any work starts:
//! - the 4-bit CPU paths (`gptq`, `cpu_int4`): GPTQModel (it writes the GPTQ checkpoint
//!   format, `quantize_config.json` with `quant_method: gptq`, that vLLM's `--quantization
//!   gptq` loads) with the path's settings: 4 bits, group 128, no act-order, the output
//!   head quantized and untied from the embedding when the model ties them; symmetric
//!   for `--priority speed`, asymmetric for `fidelity`; then `vllm serve` with the plan's
//!   flags;
//! - 16-bit GPU paths (`bf16`, `fp16`): the `vllm serve` line;
//! - the phone NPU (`export-qnn-w8a16`): a Qualcomm AI Hub quantize job (int8 weights,
//!   int16 activations) and a QNN context-binary compile for a device with the profile's
//!   HTP (Hexagon) arch.
//!
//! The Python parts are quoted heredocs (`<<'EDGEPLAN_PY'`), so the shell never expands
//! them and the tests can byte-compile each one. Nothing here decides or prints.

use std::fmt::Write as _;

use super::catalog::LmHead;
use super::render::vllm_flags;
use super::schema::{Plan, Priority};
use crate::profile::Profile;

/// The heredoc delimiter of every embedded Python program.
pub const PY_DELIMITER: &str = "EDGEPLAN_PY";

/// What the script builds, from the path's properties (not its name, so a custom
/// catalog's paths get a script too).
enum Kind {
    Gptq,
    Serve16(&'static str),
    Qnn,
}

fn kind(plan: &Plan, lm_head: Option<LmHead>) -> anyhow::Result<Kind> {
    let p = &plan.path;
    match (p.runs_in_vllm, p.quantization.as_deref(), p.group_size) {
        (false, _, _) if plan.hardware_class == crate::profile::HardwareClass::NpuPhone => {
            Ok(Kind::Qnn)
        }
        (true, Some("gptq" | "cpu_int4"), Some(_)) if lm_head.is_some() => Ok(Kind::Gptq),
        (true, None, None) => Ok(Kind::Serve16(if p.name.contains("fp16") {
            "float16"
        } else {
            "bfloat16"
        })),
        _ => Err(crate::error::data_error(format!(
            "path `{}`: edgeplan has no build script for quantization {:?} on {} (the script covers GPTQ 4-bit CPU paths, 16-bit vLLM serving and the QNN phone export)",
            p.name,
            p.quantization.as_deref().unwrap_or("none"),
            plan.hardware_class
        ))),
    }
}

/// The script for `plan` on the device of `profile`. `lm_head` is the catalog's setting
/// for the path.
pub fn script(plan: &Plan, profile: &Profile, lm_head: Option<LmHead>) -> anyhow::Result<String> {
    let mut s = String::new();
    // The label is the profile's, free text: a newline in it would end the comment and
    // run the rest as a command.
    let device: String = plan
        .device
        .as_deref()
        .unwrap_or("this device")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    writeln!(s, "#!/usr/bin/env bash")?;
    writeln!(
        s,
        "# Written by `edgeplan plan --format script` ({} {}) for {device}:",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(
        s,
        "# path {}, priority {}, class {}.",
        plan.path.name,
        plan.priority.as_str(),
        plan.hardware_class
    )?;
    match kind(plan, lm_head)? {
        Kind::Gptq => gptq(&mut s, plan, lm_head == Some(LmHead::Quantized))?,
        Kind::Serve16(dtype) => serve16(&mut s, plan, dtype)?,
        Kind::Qnn => qnn(&mut s, profile)?,
    }
    Ok(s)
}

fn threads_line(s: &mut String, plan: &Plan) -> std::fmt::Result {
    if let Some(t) = plan.threads {
        writeln!(s, "export OMP_NUM_THREADS=\"${{OMP_NUM_THREADS:-{t}}}\"")?;
    }
    Ok(())
}

const FAIL_FN: &str = r#"fail() { echo "${0##*/}: $*" >&2; exit 1; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || fail "needs \`$1\` on PATH ($2)"; }
need_py() {
    python3 - "$@" <<'EDGEPLAN_PY' || fail "missing Python packages (see the prerequisites above)"
import importlib.util
import sys

missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
if missing:
    print("missing Python modules: " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
EDGEPLAN_PY
}
"#;

/// The GPTQ build script: its header and checks, the GPTQModel program, then the
/// `vllm serve` line.
fn gptq(s: &mut String, plan: &Plan, head_quantized: bool) -> anyhow::Result<()> {
    gptq_shell(s, plan, head_quantized)?;
    gptq_python(
        s,
        plan.path.group_size.unwrap_or(128),
        plan.priority == Priority::Speed,
        head_quantized,
    )?;
    threads_line(s, plan)?;
    writeln!(s, "exec vllm serve \"$OUT_DIR\" {}", vllm_flags(plan))?;
    Ok(())
}

/// The GPTQ script's header (settings, usage, prerequisites) and its argument and
/// prerequisite checks.
fn gptq_shell(s: &mut String, plan: &Plan, head_quantized: bool) -> std::fmt::Result {
    let p = &plan.path;
    let group = p.group_size.unwrap_or(128);
    let sym = plan.priority == Priority::Speed;
    let quant = p.quantization.as_deref().unwrap_or("gptq");
    let flags = vllm_flags(plan);
    let serve_pkg = if quant == "cpu_int4" {
        "vLLM-Omni's CPU backend, which provides --quantization cpu_int4"
    } else {
        "vLLM built for CPU (pip install vllm, CPU wheels)"
    };
    write!(
        s,
        r#"#
# Builds a 4-bit GPTQ checkpoint (bits 4, group {group}, sym {sym}, desc_act false,
# lm_head {head}) with GPTQModel, then serves it with vLLM: `vllm serve OUT {flags}`.
#
# Usage: build.sh MODEL_DIR CALIBRATION.txt [OUT_DIR]
#   MODEL_DIR        a local Hugging Face model directory (config.json + safetensors)
#   CALIBRATION.txt  calibration text, one sample per line (at least 8 lines; a few
#                    hundred lines of text like the deployment's prompts is typical)
#   OUT_DIR          where the checkpoint goes (default ./model-{name})
# Set EDGEPLAN_NO_SERVE=1 to build only.
#
# Prerequisites: bash, python3 (3.10 or later) with torch, transformers and gptqmodel
# (pip install torch transformers gptqmodel); to serve, {serve_pkg}.
set -euo pipefail
{FAIL_FN}
[ $# -ge 2 ] || {{ echo "usage: ${{0##*/}} MODEL_DIR CALIBRATION.txt [OUT_DIR]" >&2; exit 2; }}
MODEL_DIR=$1
CALIBRATION=$2
OUT_DIR=${{3:-./model-{name}}}
[ -f "$MODEL_DIR/config.json" ] || fail "$MODEL_DIR: no config.json (a local Hugging Face model directory is needed)"
[ -s "$CALIBRATION" ] || fail "$CALIBRATION: missing or empty calibration text"
need_cmd python3 "Python 3.10 or later"
need_py torch transformers gptqmodel
[ "${{EDGEPLAN_NO_SERVE:-0}}" = 1 ] || need_cmd vllm "{serve_pkg}"

"#,
        name = p.name,
        head = if head_quantized {
            "quantized, untied first when tied"
        } else {
            "model dtype"
        },
    )
}

/// The GPTQModel program (a quoted heredoc): untie a tied head when it is to be
/// quantized, quantize with `group`, `sym` and the head setting, save; then the
/// build-only exit.
fn gptq_python(s: &mut String, group: u32, sym: bool, head_quantized: bool) -> std::fmt::Result {
    write!(
        s,
        r#"python3 - "$MODEL_DIR" "$CALIBRATION" "$OUT_DIR" <<'{PY_DELIMITER}'
import shutil
import sys
import tempfile

import torch
from gptqmodel import GPTQModel, QuantizeConfig
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

model_dir, calibration, out_dir = sys.argv[1:4]
BITS = 4
GROUP_SIZE = {group}
SYM = {sym_py}
QUANTIZE_HEAD = {head_py}

with open(calibration, encoding="utf-8") as f:
    samples = [line.strip() for line in f if line.strip()]
if len(samples) < 8:
    sys.exit(f"{{calibration}}: {{len(samples)}} samples; at least 8 lines of text are needed")

source = model_dir
untied = None
config = AutoConfig.from_pretrained(model_dir)
if QUANTIZE_HEAD and getattr(config, "tie_word_embeddings", False):
    # The head shares the embedding's tensor: give it its own copy so that it can be
    # quantized while the embedding stays 16-bit.
    untied = tempfile.mkdtemp(prefix="edgeplan-untied-")
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.bfloat16)
    head = model.get_output_embeddings()
    head.weight = torch.nn.Parameter(head.weight.detach().clone())
    model.config.tie_word_embeddings = False
    model.save_pretrained(untied)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(untied)
    del model
    source = untied

quantize_config = QuantizeConfig(
    bits=BITS,
    group_size=GROUP_SIZE,
    sym=SYM,
    desc_act=False,
    lm_head=QUANTIZE_HEAD,
)
model = GPTQModel.load(source, quantize_config)
model.quantize(samples, batch_size=1)
model.save(out_dir)
if untied is not None:
    shutil.rmtree(untied, ignore_errors=True)
print(f"wrote {{out_dir}}", file=sys.stderr)
{PY_DELIMITER}

[ "${{EDGEPLAN_NO_SERVE:-0}}" = 1 ] && exit 0
"#,
        sym_py = if sym { "True" } else { "False" },
        head_py = if head_quantized { "True" } else { "False" },
    )
}

/// The 16-bit GPU script: no conversion, the `vllm serve` line in `dtype`.
fn serve16(s: &mut String, plan: &Plan, dtype: &str) -> anyhow::Result<()> {
    let flags = vllm_flags(plan);
    let flags = if flags.is_empty() {
        format!("--dtype {dtype}")
    } else {
        format!("--dtype {dtype} {flags}")
    };
    write!(
        s,
        r#"#
# No conversion: the checkpoint is served as it is, in {dtype}.
#
# Usage: build.sh MODEL
#   MODEL  a local Hugging Face model directory or a model id vLLM can load
#
# Prerequisites: bash, vLLM with CUDA support (pip install vllm) and an NVIDIA driver.
set -euo pipefail
{FAIL_FN}
[ $# -ge 1 ] || {{ echo "usage: ${{0##*/}} MODEL" >&2; exit 2; }}
MODEL=$1
need_cmd vllm "pip install vllm"
exec vllm serve "$MODEL" {flags}
"#
    )?;
    Ok(())
}

/// The phone NPU script: an AI Hub quantize and compile job for the profile's HTP arch.
fn qnn(s: &mut String, profile: &Profile) -> anyhow::Result<()> {
    let (htp, soc) = qnn_target(profile)?;
    write!(
        s,
        r#"#
# vLLM has no phone-NPU backend: this exports a QNN context binary, weights int8 and
# activations int16 (w8a16), calibrated, for a device with Hexagon {htp} (SoC {soc}),
# through Qualcomm AI Hub (quantize job, then compile job).
#
# Usage: build.sh MODEL.onnx CALIBRATION.npz [OUT.bin]
#   MODEL.onnx       the model exported to ONNX with fixed input shapes
#   CALIBRATION.npz  calibration inputs: one array per model input, the samples stacked
#                    on the first axis (real activations: uncalibrated exports failed)
#   OUT.bin          the QNN context binary (default ./model-w8a16-{htp}.bin)
#
# Prerequisites: bash, python3 with numpy and qai-hub (pip install qai-hub numpy), and
# an AI Hub API token configured (`qai-hub configure --api_token TOKEN`); the jobs run
# on Qualcomm's hosted devices.
set -euo pipefail
{FAIL_FN}
[ $# -ge 2 ] || {{ echo "usage: ${{0##*/}} MODEL.onnx CALIBRATION.npz [OUT.bin]" >&2; exit 2; }}
ONNX=$1
CALIBRATION=$2
OUT=${{3:-./model-w8a16-{htp}.bin}}
[ -s "$ONNX" ] || fail "$ONNX: missing or empty ONNX model"
[ -s "$CALIBRATION" ] || fail "$CALIBRATION: missing or empty calibration arrays"
need_cmd python3 "Python 3.9 or later"
need_py numpy qai_hub
[ -f "${{HOME:-/nonexistent}}/.qai_hub/client.ini" ] || fail "no AI Hub token: run qai-hub configure --api_token TOKEN"

exec python3 - "$ONNX" "$CALIBRATION" "$OUT" <<'{PY_DELIMITER}'
import sys

import numpy as np
import qai_hub as hub

onnx_path, calibration, out_path = sys.argv[1:4]
HTP_ARCH = "{htp}"

arrays = np.load(calibration)
data = {{name: list(arrays[name]) for name in arrays.files}}
if not data or any(len(v) == 0 for v in data.values()):
    sys.exit(f"{{calibration}}: no calibration samples")

devices = hub.get_devices(attributes=f"hexagon:{{HTP_ARCH}}")
if not devices:
    sys.exit(f"AI Hub lists no device with Hexagon {{HTP_ARCH}}")
device = devices[0]
print(f"target: {{device.name}} (hexagon:{{HTP_ARCH}})", file=sys.stderr)

model = hub.upload_model(onnx_path)
quantize = hub.submit_quantize_job(
    model=model,
    calibration_data=data,
    weights_dtype=hub.QuantizeDtype.INT8,
    activations_dtype=hub.QuantizeDtype.INT16,
)
quantized = quantize.get_target_model()
if quantized is None:
    sys.exit("the AI Hub quantize job failed; see its page on AI Hub")
compile_job = hub.submit_compile_job(
    model=quantized,
    device=device,
    options="--target_runtime qnn_context_binary",
)
compiled = compile_job.get_target_model()
if compiled is None:
    sys.exit("the AI Hub compile job failed; see its page on AI Hub")
compiled.download(out_path)
print(f"wrote {{out_path}}", file=sys.stderr)
{PY_DELIMITER}
"#
    )?;
    Ok(())
}

/// The profile's HTP (Hexagon) arch, checked to be a plain arch name, and its SoC
/// model (`unknown` when the profile has none) reduced to safe characters.
fn qnn_target(profile: &Profile) -> anyhow::Result<(String, String)> {
    let android = profile.android.as_ref();
    let htp = android
        .and_then(|a| a.npu.as_ref())
        .and_then(|n| n.htp_arch.clone());
    let soc = android.and_then(|a| a.soc_model.clone());
    let Some(htp) = htp else {
        return Err(crate::error::data_error(
            "android.npu.htp_arch is unknown: the QNN export needs the HTP (Hexagon) arch; re-probe on the phone",
        ));
    };
    if !htp.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(crate::error::data_error(format!(
            "android.npu.htp_arch {htp:?} is not an arch name like v75"
        )));
    }
    let soc = soc.unwrap_or_else(|| "unknown".into());
    let soc: String = soc
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_ ".contains(*c))
        .collect();
    Ok((htp, soc))
}
