//! `plan --engine llama.cpp --format script`: a self-contained bash script that
//! converts a Hugging Face checkpoint to GGUF with the pinned llama.cpp's converter,
//! quantizes it with its `llama-quantize` (4-bit paths), and serves the file with
//! `llama-server` and the rendering's flags.
//!
//! The pinned llama.cpp is the tree vendored in the PyPI sdist of llama-cpp-python
//! 0.3.36 (ggml-org/llama.cpp@0c1e57098, build 11312): with `EDGEPLAN_INSTALL=1` the
//! script fetches that sdist with `pip download` (its sha256 checked), builds
//! llama-server and llama-quantize for this CPU (`GGML_NATIVE`; with CUDA for a GPU
//! plan) and creates the converter's environment from the pinned list
//! (scripts/engines/convert.lock, the one CI installs from). The converter runs through
//! scripts/engines/llama_convert.py (embedded), which is the converter itself plus one
//! option: `EDGEPLAN_GGUF_PRE_TOKENIZER` names the BPE pre-tokenizer of a tokenizer the
//! converter does not recognise. A failed run leaves nothing: the files are written to
//! a private temporary directory inside OUT_DIR and moved into place at the end; on
//! failure that directory goes, and OUT_DIR too when the run created it.
//!
//! Before it serves, the script runs the serve line once on a free loopback port and
//! asks for a few tokens (`smoke`). llama.cpp's AMX buffer segfaults on the first
//! inference on some AMX hosts (ggml-org/llama.cpp#20824, seen on a KVM Xeon family 6
//! model 167; CPU flags cannot tell those hosts apart), so a server that dies by a
//! signal with the AMX or CPU_REPACK weight buffer in its log gets `--no-repack`
//! (common/arg.cpp: `no_extra_bufts`, which leaves every extra CPU buffer type out of
//! src/llama-model.cpp `make_cpu_buft_list`, AMX and repack alike) in the serve line the
//! script runs and prints, once that passes the same check.

use std::fmt::Write as _;

use super::llama_cpp;
use super::vllm_script::PY_DELIMITER;
use crate::plan::Plan;
use crate::plan::schema::{EngineRendering, Target};
use crate::profile::Profile;

/// The sdist that carries the pinned llama.cpp tree, and its sha256 (as
/// scripts/engines/llama_install.sh pins them).
pub const SDIST_VERSION: &str = "0.3.36";
pub const SDIST_SHA256: &str = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e";
/// The upstream commit and build number of the vendored tree.
pub const LLAMA_COMMIT: &str = "0c1e57098";
macro_rules! llama_build {
    () => {
        "11312"
    };
}
pub const LLAMA_BUILD: &str = llama_build!();
/// The build tools, from PyPI (scikit-build-core: the sdist's backend, which
/// `pip download` needs to read its metadata).
pub const TOOLS_PINS: &str =
    "cmake==4.4.5 ninja==1.13.2 scikit-build-core==1.1.2 pathspec==1.1.1 packaging==26.4";

/// The converter environment's lock (CI installs from the same file).
const CONVERT_LOCK: &str = include_str!("../../scripts/engines/convert.lock");
/// The converter wrapper (CI runs the same file).
const CONVERT_PY: &str = include_str!("../../scripts/engines/llama_convert.py");

/// `fail` and `need_cmd`, as every build script has them.
const SHELL_FAIL_FNS: &str = super::common::shell_fail_fns!();

/// Where the script looks for the tree and the converter environment, under `$HOME`.
const TREE_DEFAULT: &str = concat!(".cache/edgeplan/llama.cpp-b", llama_build!());
const CONVERT_VENV_DEFAULT: &str =
    concat!(".cache/edgeplan/venv-convert-llama.cpp-b", llama_build!());

/// The script for `plan` (rendered for llama.cpp) on the device of `profile`.
pub fn script(plan: &Plan, _profile: &Profile) -> anyhow::Result<String> {
    let rendering = llama_cpp::render(plan);
    let d = &plan.deploy;
    let Some(gguf_type) = d.weights.gguf_type.as_deref().filter(|_| rendering.runs) else {
        return Err(crate::error::data_error(format!(
            "path `{}`: not a llama.cpp path (no GGUF type): plan with --engine llama.cpp",
            plan.path.name
        )));
    };
    let mut s = String::new();
    super::common::script_opening(
        &mut s,
        plan,
        &rendering,
        "edgeplan plan --engine llama.cpp --format script",
    )?;
    header(&mut s, &rendering, gguf_type, d.target == Target::Gpu)?;
    functions(&mut s, &rendering, d.target == Target::Gpu)?;
    body(&mut s, &rendering, gguf_type)?;
    Ok(s)
}

/// The converter's `--outtype` for the intermediate (or final) 16-bit file.
fn outtype(gguf_type: &str) -> &'static str {
    match gguf_type {
        "F16" => "f16",
        _ => "bf16",
    }
}

fn quantized(gguf_type: &str) -> bool {
    !matches!(gguf_type, "BF16" | "F16")
}

/// Comment header: what the script does, usage, environment, prerequisites.
fn header(
    s: &mut String,
    rendering: &EngineRendering,
    gguf_type: &str,
    gpu: bool,
) -> std::fmt::Result {
    let steps = if quantized(gguf_type) {
        format!(
            "converts it to GGUF ({}) with llama.cpp's converter, quantizes that to\n# {gguf_type} with llama-quantize",
            outtype(gguf_type)
        )
    } else {
        format!("converts it to a {gguf_type} GGUF file with llama.cpp's converter")
    };
    let (cuda_note, prereq) = if gpu {
        (
            " with CUDA (-DGGML_CUDA=ON)",
            "bash, python3 (3.11 to 3.14) with venv; for EDGEPLAN_INSTALL=1 a C/C++\n# compiler, tar, sha256sum and the CUDA toolkit (nvcc) with an NVIDIA driver",
        )
    } else {
        (
            "",
            "bash, python3 (3.11 to 3.14) with venv; for EDGEPLAN_INSTALL=1 a C/C++\n# compiler (cc, c++), tar and sha256sum",
        )
    };
    write!(
        s,
        r#"#
# Takes a local Hugging Face checkpoint, {steps},
# then serves the file:
#   {command} OUT_DIR/model-{gguf_type}.gguf {flags}
#
# Usage: build.sh [MODEL_DIR [OUT_DIR]]
#   MODEL_DIR  a local Hugging Face model directory (config.json, safetensors, tokenizer);
#              default $EDGEPLAN_MODEL
#   OUT_DIR    where model-{gguf_type}.gguf goes; default $EDGEPLAN_OUT, else ./model-gguf
# Environment:
#   EDGEPLAN_LLAMA_CPP     a llama.cpp tree of the pinned release with build/bin/llama-server
#                          and build/bin/llama-quantize built; default
#                          ~/{TREE_DEFAULT}
#   EDGEPLAN_CONVERT_VENV  the converter's Python environment; default
#                          ~/{CONVERT_VENV_DEFAULT}
#   EDGEPLAN_INSTALL=1     create what is missing: the tree from the sdist of
#                          llama-cpp-python=={SDIST_VERSION} (pip download, sha256 checked; it vendors
#                          llama.cpp {LLAMA_COMMIT}, build {LLAMA_BUILD}), compiled for this machine{cuda_note};
#                          the environment from the pinned list below
#   EDGEPLAN_GGUF_PRE_TOKENIZER  the BPE pre-tokenizer name (e.g. gpt-2) to record when the
#                          converter does not recognise the model's tokenizer
#   EDGEPLAN_NO_SERVE=1    build only
#   EDGEPLAN_SERVE_ARGS    extra llama-server flags (--host, --port ...)
#   EDGEPLAN_SMOKE_TIMEOUT seconds the smoke run's server may take to get ready (600)
#
# Before serving, the script asks llama-server (the serve line's flags, a free port on
# 127.0.0.1) for a few tokens. If it dies by a signal with the AMX or CPU_REPACK weight
# buffer in use (a known llama.cpp failure on some AMX hosts, ggml-org/llama.cpp#20824),
# it says so in one line and serves with --no-repack, after the same check passes.
#
# Prerequisites: {prereq};
# about 6 GB of disk for the converter's environment (PyPI's torch).
"#,
        command = rendering.command.join(" "),
        flags = rendering.flags.join(" "),
    )
}

/// The shell functions: failure, checks, and the two installers.
fn functions(s: &mut String, rendering: &EngineRendering, gpu: bool) -> std::fmt::Result {
    let cuda = if gpu { " -DGGML_CUDA=ON" } else { "" };
    let smoke = smoke_functions(server_program(rendering));
    let lock = super::common::lock_lines(CONVERT_LOCK);
    write!(
        s,
        r#"set -euo pipefail
{SHELL_FAIL_FNS}# Builds llama-server and llama-quantize of the pinned llama.cpp into the tree $1.
build_llama_cpp() {{
    local dest=$1 work src sdist=llama_cpp_python-{SDIST_VERSION}.tar.gz
    for c in cc c++ tar sha256sum; do need_cmd "$c" "to build llama.cpp"; done
    work=$(mktemp -d)
    python3 -m venv "$work/tools" && "$work/tools/bin/pip" install {TOOLS_PINS} || fail "could not install the build tools"
    PATH="$work/tools/bin:$PATH" "$work/tools/bin/pip" download --no-deps --no-binary :all: --no-build-isolation llama-cpp-python=={SDIST_VERSION} -d "$work" || fail "could not download llama-cpp-python=={SDIST_VERSION}"
    echo "{SDIST_SHA256}  $work/$sdist" | sha256sum -c --quiet || fail "$sdist: sha256 mismatch"
    tar -xzf "$work/$sdist" -C "$work" "llama_cpp_python-{SDIST_VERSION}/vendor/llama.cpp"
    src="$work/llama_cpp_python-{SDIST_VERSION}/vendor/llama.cpp"
    rm -f "$src/.git"
    PATH="$work/tools/bin:$PATH" cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON{cuda} -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_COMMIT={LLAMA_COMMIT} -DLLAMA_BUILD_NUMBER={LLAMA_BUILD} || fail "cmake configure failed"
    PATH="$work/tools/bin:$PATH" cmake --build "$src/build" -j "$(nproc)" --target llama-server llama-quantize || fail "the llama.cpp build failed"
    mkdir -p "$(dirname "$dest")" && mv "$src" "$dest"
    rm -rf "$work"
}}
{smoke}# Creates the converter's environment $1 from the pinned list, with the tree's gguf-py.
install_convert_env() {{
    python3 -m venv "$1" && cat >"$1/edgeplan.lock" <<'EDGEPLAN_LOCK' && "$1/bin/pip" install --no-deps -r "$1/edgeplan.lock" && "$1/bin/pip" install --no-deps --no-build-isolation "$LLAMA_CPP/gguf-py"
{lock}EDGEPLAN_LOCK
}}
"#
    )
}

/// `smoke` and `smoke_once`: the serve line run once on a loopback port, asked for a
/// few tokens, stopped; how it ended is the return status.
fn smoke_functions(bin: &str) -> String {
    format!(
        r#"# smoke FLAG...: llama-server with FLAGs (the serve line's own) on a free loopback port,
# asked for a few tokens, then stopped; its output goes to $SMOKE_LOG. Returns 0 when
# tokens came back, the server's exit status when it died first (128+N: signal N), 1
# when it answered without tokens or was not ready in EDGEPLAN_SMOKE_TIMEOUT seconds.
smoke() {{
    local attempt rc
    for attempt in 1 2 3; do
        rc=0
        smoke_once "$@" || rc=$?
        # A port taken between choosing it and binding it: choose another.
        [ "$rc" -gt 0 ] && [ "$rc" -le 128 ] && [ "$attempt" -lt 3 ] &&
            grep -q "couldn't bind HTTP server socket" "$SMOKE_LOG" || break
    done
    return "$rc"
}}
smoke_once() {{
    local port rc=0 waited=0
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || return 1
    # The server runs inside a subshell, so that the subshell, not this script, reaps it
    # and a crash is reported once, by the lines below (its status is the subshell's).
    rm -f "$SMOKE_LOG.pid"
    ( "$LLAMA_CPP/build/bin/{bin}" "$@" --host 127.0.0.1 --port "$port" >"$SMOKE_LOG" 2>&1 </dev/null &
      echo $! >"$SMOKE_LOG.pid"
      wait $! ) 2>/dev/null &
    SMOKE_WAITER=$!
    until [ -s "$SMOKE_LOG.pid" ]; do sleep 0.1; done
    SMOKE_PID=$(cat "$SMOKE_LOG.pid")
    while :; do
        python3 - "$port" <<'{PY_DELIMITER}' 2>>"$SMOKE_LOG.check" && rc=0 || rc=$?
import json, sys, urllib.request
base = "http://127.0.0.1:" + sys.argv[1]
try:
    with urllib.request.urlopen(base + "/health", timeout=5) as r:
        ready = r.status == 200
except Exception:
    ready = False
if not ready:
    sys.exit(2)
body = json.dumps({{"prompt": "Hello", "n_predict": 4, "temperature": 0}}).encode()
req = urllib.request.Request(base + "/completion", body, {{"Content-Type": "application/json"}})
try:
    with urllib.request.urlopen(req, timeout=300) as r:
        n = json.load(r).get("tokens_predicted", 0)
except Exception as e:
    print(f"smoke: /completion: {{e}}", file=sys.stderr)
    sys.exit(1)
sys.exit(0 if n > 0 else 1)
{PY_DELIMITER}
        [ "$rc" = 2 ] || break
        kill -0 "$SMOKE_PID" 2>/dev/null || break
        [ "$waited" -lt "${{EDGEPLAN_SMOKE_TIMEOUT:-600}}" ] || break
        sleep 1
        waited=$((waited + 1))
    done
    if [ "$rc" = 0 ]; then
        kill -KILL "$SMOKE_PID" 2>/dev/null || true
        wait "$SMOKE_WAITER" 2>/dev/null || true
        SMOKE_PID=
        return 0
    fi
    # A request cut off by a crash: give the server a moment to be gone.
    for _ in 1 2 3 4 5; do
        [ "$rc" = 1 ] && kill -0 "$SMOKE_PID" 2>/dev/null || break
        sleep 1
    done
    if kill -0 "$SMOKE_PID" 2>/dev/null; then
        kill -KILL "$SMOKE_PID" 2>/dev/null || true
        wait "$SMOKE_WAITER" 2>/dev/null || true
        SMOKE_PID=
        return 1
    fi
    rc=0
    wait "$SMOKE_WAITER" 2>/dev/null || rc=$?
    SMOKE_PID=
    [ "$rc" != 0 ] || rc=1
    return "$rc"
}}
"#
    )
}

/// The server binary the serve line runs (`llama-server`).
fn server_program(rendering: &EngineRendering) -> &str {
    rendering
        .command
        .first()
        .map_or("llama-server", String::as_str)
}

/// Arguments, checks, the conversion and quantization, a smoke run, then the serve line.
fn body(s: &mut String, rendering: &EngineRendering, gguf_type: &str) -> std::fmt::Result {
    let out_type = outtype(gguf_type);
    let quantize = if quantized(gguf_type) {
        format!(
            r#""$LLAMA_CPP/build/bin/llama-quantize" "$WORK/model-{out_type}.gguf" "$WORK/model-{gguf_type}.gguf" {gguf_type} || fail "llama-quantize failed"
rm -f "$WORK/model-{out_type}.gguf"
"#
        )
    } else {
        String::new()
    };
    write!(
        s,
        r#"MODEL_DIR=${{1:-${{EDGEPLAN_MODEL:-}}}}
OUT_DIR=${{2:-${{EDGEPLAN_OUT:-./model-gguf}}}}
LLAMA_CPP=${{EDGEPLAN_LLAMA_CPP:-$HOME/{TREE_DEFAULT}}}
CONVERT_VENV=${{EDGEPLAN_CONVERT_VENV:-$HOME/{CONVERT_VENV_DEFAULT}}}
[ -n "$MODEL_DIR" ] || {{ echo "usage: ${{0##*/}} MODEL_DIR [OUT_DIR] (or set EDGEPLAN_MODEL)" >&2; exit 2; }}
[ -f "$MODEL_DIR/config.json" ] || fail "$MODEL_DIR: no config.json (a local Hugging Face model directory is needed)"
need_cmd python3 "Python 3.11 to 3.14"
if [ ! -x "$LLAMA_CPP/build/bin/llama-server" ] || [ ! -x "$LLAMA_CPP/build/bin/llama-quantize" ]; then
    [ "${{EDGEPLAN_INSTALL:-0}}" = 1 ] || fail "no built llama.cpp at $LLAMA_CPP: set EDGEPLAN_INSTALL=1 to build the pinned one, or point EDGEPLAN_LLAMA_CPP at one"
    [ ! -e "$LLAMA_CPP" ] || fail "$LLAMA_CPP exists but has no build/bin/llama-server and llama-quantize"
    echo "${{0##*/}}: building llama.cpp into $LLAMA_CPP" >&2
    build_llama_cpp "$LLAMA_CPP"
fi
[ -f "$LLAMA_CPP/convert_hf_to_gguf.py" ] || fail "$LLAMA_CPP: no convert_hf_to_gguf.py (not a llama.cpp tree)"
if [ ! -x "$CONVERT_VENV/bin/python" ]; then
    [ "${{EDGEPLAN_INSTALL:-0}}" = 1 ] || fail "no converter environment at $CONVERT_VENV: set EDGEPLAN_INSTALL=1 to create it with the pinned versions, or point EDGEPLAN_CONVERT_VENV at one"
    echo "${{0##*/}}: creating $CONVERT_VENV" >&2
    install_convert_env "$CONVERT_VENV" || fail "could not create $CONVERT_VENV (see pip's output above)"
fi
"$CONVERT_VENV/bin/python" -c 'import torch, transformers, gguf' || fail "$CONVERT_VENV lacks torch, transformers or gguf"
# A failed run leaves nothing: the work directory goes, and OUT_DIR too if this run made it
# (rmdir removes it only when empty).
CREATED_OUT=
[ -d "$OUT_DIR" ] || {{ mkdir -p "$OUT_DIR"; CREATED_OUT=1; }}
WORK=$(mktemp -d "$OUT_DIR/.edgeplan-build.XXXXXX")
SMOKE_PID=
trap '[ -z "$SMOKE_PID" ] || kill -KILL "$SMOKE_PID" 2>/dev/null; rm -rf "$WORK"; [ -z "$CREATED_OUT" ] || rmdir "$OUT_DIR" 2>/dev/null || true' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PRE=()
[ -z "${{EDGEPLAN_GGUF_PRE_TOKENIZER:-}}" ] || PRE=(--pre-tokenizer "$EDGEPLAN_GGUF_PRE_TOKENIZER")
cat >"$WORK/llama_convert.py" <<'{PY_DELIMITER}'
{CONVERT_PY}{PY_DELIMITER}
"$CONVERT_VENV/bin/python" "$WORK/llama_convert.py" --llama-cpp "$LLAMA_CPP" "${{PRE[@]}}" "$MODEL_DIR" --outtype {out_type} --outfile "$WORK/model-{out_type}.gguf" || fail "the GGUF conversion failed"
{quantize}mv "$WORK/model-{gguf_type}.gguf" "$OUT_DIR/model-{gguf_type}.gguf"
echo "${{0##*/}}: wrote $OUT_DIR/model-{gguf_type}.gguf" >&2
[ "${{EDGEPLAN_NO_SERVE:-0}}" = 1 ] && exit 0
SERVE=({rest} "$OUT_DIR/model-{gguf_type}.gguf" {flags})
# A few tokens with the serve line's own flags before the server is handed over.
# llama.cpp's AMX and repacked weight buffers crash the first inference on some hosts
# (ggml-org/llama.cpp#20824): when the server dies by a signal with one of them in its
# log, the serve line gets --no-repack (no extra CPU buffer types: the plain kernels),
# provided that gives tokens.
NO_REPACK=()
SMOKE_LOG="$WORK/smoke.log"
rc=0
smoke "${{SERVE[@]}}" || rc=$?
if [ "$rc" -gt 128 ]; then
    sig="signal $((rc - 128)), SIG$(kill -l "$((rc - 128))" 2>/dev/null || echo '?')"
    buffer=$(grep -oE '(AMX|CPU_REPACK) model buffer size' "$SMOKE_LOG" | head -n 1 | cut -d' ' -f1 || true)
    [ -n "$buffer" ] || {{ tail -q -n 20 "$SMOKE_LOG" "$SMOKE_LOG.check" >&2 2>/dev/null; fail "llama-server died on its first tokens ($sig; its log above)"; }}
    echo "${{0##*/}}: llama-server died on its first tokens ($sig) with the $buffer weight buffer (known on some AMX hosts: ggml-org/llama.cpp#20824); serving with --no-repack" >&2
    NO_REPACK=(--no-repack)
    rc=0
    smoke "${{SERVE[@]}}" "${{NO_REPACK[@]}}" || rc=$?
    [ "$rc" = 0 ] || {{ tail -q -n 20 "$SMOKE_LOG" "$SMOKE_LOG.check" >&2 2>/dev/null; fail "llama-server fails with --no-repack too (exit status $rc; its log above)"; }}
elif [ "$rc" != 0 ]; then
    tail -q -n 20 "$SMOKE_LOG" "$SMOKE_LOG.check" >&2 2>/dev/null
    fail "llama-server gave no tokens in its smoke run (exit status $rc; its log above)"
fi
rm -rf "$WORK"
trap - EXIT
echo "${{0##*/}}: serving: $LLAMA_CPP/build/bin/{bin} ${{SERVE[*]}}${{NO_REPACK[*]:+ ${{NO_REPACK[*]}}}}" >&2
# shellcheck disable=SC2086 # EDGEPLAN_SERVE_ARGS is split into flags on purpose
exec "$LLAMA_CPP/build/bin/{bin}" "${{SERVE[@]}}" "${{NO_REPACK[@]}}" ${{EDGEPLAN_SERVE_ARGS:-}}
"#,
        bin = server_program(rendering),
        rest = rendering.command.get(1..).unwrap_or_default().join(" "),
        flags = rendering.flags.join(" "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pins here and in the CI installer are one set.
    #[test]
    fn pins_match_the_ci_installer() {
        let ci = include_str!("../../scripts/engines/llama_install.sh");
        for (name, value) in [
            ("SDIST_SHA256", SDIST_SHA256),
            ("LCP_VERSION", SDIST_VERSION),
            ("LLAMA_COMMIT", LLAMA_COMMIT),
            ("LLAMA_BUILD", LLAMA_BUILD),
        ] {
            assert!(
                ci.lines()
                    .any(|l| l.starts_with(&format!("{name}={value}"))),
                "{name}={value} not in llama_install.sh"
            );
        }
        assert!(ci.contains(&format!("TOOLS_PINS=\"{TOOLS_PINS}\"")));
    }
}
