#!/usr/bin/env bash
# The llama.cpp plan, run for real: what `edgeplan plan --engine llama.cpp` prints for
# this host, fed to the pinned llama.cpp (b11312, vendored in llama-cpp-python 0.3.36).
# Run by tests/engine_llama_cpp.rs (so by `cargo test --all-targets`); exits nonzero on
# the first failure, never skips.
#
#  1. llama_install.sh: the tree built for this CPU and the converter's environment
#     (cached in $EDGEPLAN_ENGINES_CACHE).
#  2. A tiny random Qwen3-shaped model (tiny_model.py), and a random model with a real
#     config (fixtures/models/real/qwen3-0.6b.json: Qwen3-0.6B's shapes).
#  3. For each priority, `edgeplan plan --engine llama.cpp --format script` for this host,
#     run as written with only the model, the output dir, the tree, the converter's
#     environment, the tokenizer's pre-tokenizer name and the server's port given by
#     env: the converter and llama-quantize write the GGUF file, llama-server serves it
#     with the emitted flags; /completion must return tokens, and on a CPU with a
#     repacked layout for the type (AVX2, Arm dotprod/i8mm) the log must show the
#     CPU_REPACK (or AMX) buffer the plan's trace names.
#  4. The memory fit against llama.cpp's own report: for the tiny model at 4096 and
#     8192 tokens and the Qwen3-0.6B config at 4096 and 16384, `plan --model CONFIG
#     --context N --format json` and llama-server started with that plan's flags on
#     the Q4_0 file; the file's tensors, the repacked copies, the KV and the compute
#     buffer must each be within 5% of what the file holds and llama.cpp logs
#     allocating (check_llama_memory.py).
#
#  5. Every fixture profile at both priorities, with and without a --model fit: the
#     flags through llama-server's own parser (CPU and GPU plans alike; a CPU build
#     accepts --n-gpu-layers with a warning).
#
# Usage: e2e_llama.sh EDGEPLAN_BINARY [WORK_DIR]
# Env: EDGEPLAN_ENGINES_CACHE, E2E_SERVE_TIMEOUT (seconds, default 900).
set -euo pipefail
E2E_NAME=e2e-llama
# shellcheck source=scripts/engines/e2e_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

bash "$HERE/llama_install.sh" >"$WORK/llama.env" || die "llama_install.sh failed"
# shellcheck disable=SC1091
. "$WORK/llama.env"
export EDGEPLAN_LLAMA_CPP EDGEPLAN_CONVERT_VENV
PY="$EDGEPLAN_CONVERT_VENV/bin/python"
lap install

"$PY" "$HERE/tiny_model.py" "$WORK/tiny" >"$WORK/tiny.log" 2>&1 \
  || { tail -n 30 "$WORK/tiny.log" >&2; die "tiny model"; }
"$PY" "$HERE/tiny_model.py" "$WORK/qwen3-0.6b" --config "$ROOT/fixtures/models/real/qwen3-0.6b.json" \
  >"$WORK/qwen.log" 2>&1 || { tail -n 30 "$WORK/qwen.log" >&2; die "Qwen3-0.6B-shaped model"; }
lap "models"


free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready PORT LOG: until /health answers 200, or the server dies, or the timeout.
wait_ready() {
  local port=$1 log=$2 waited=0
  until "$PY" - "$port" <<'EOF' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=5) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
  do
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 40 "$log" >&2; die "llama-server exited before it was ready (log: $log)"; }
    [ "$waited" -lt "$TIMEOUT" ] || { tail -n 40 "$log" >&2; die "llama-server not ready after $TIMEOUT s"; }
    sleep 2; waited=$((waited + 2))
  done
}

# tokens PORT: a completion of 8 tokens must come back.
tokens() {
  "$PY" - "$1" <<'EOF'
import json, sys, urllib.request
body = json.dumps({"prompt": "The quick brown fox", "n_predict": 8, "temperature": 0}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/completion", body, {"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=300) as r:
    out = json.load(r)
n = out.get("tokens_predicted", 0)
print(f"completion: {n} tokens: {out.get('content', '')!r}", file=sys.stderr)
sys.exit(0 if n > 0 else 1)
EOF
}

# The buffer the plan's trace expects on this host, from its llama_cpp_cpu_kernels step.
expected_buffer() {
  "$PY" -c '
import json, sys
plan = json.load(open(sys.argv[1]))
step = next((s for s in plan["explain"] if s["rule"] == "llama_cpp_cpu_kernels"), None)
text = step["outcome"] if step else ""
print("AMX" if text.startswith("AMX") else "CPU_REPACK" if "repacks" in text else "")
' "$1"
}

# 3. Each priority's script, as written: build and serve the tiny model.
FELL_BACK=0
for priority in speed fidelity; do
  "$EDGEPLAN" plan --engine llama.cpp --priority "$priority" --format script >"$WORK/build-$priority.sh" \
    || die "plan --format script ($priority)"
  "$EDGEPLAN" plan --engine llama.cpp --priority "$priority" --format json >"$WORK/plan-$priority.json" \
    || die "plan --format json ($priority)"
  gguf_type=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["deploy"]["weights"]["gguf_type"])' "$WORK/plan-$priority.json")
  port=$(free_port)
  log="$WORK/server-$priority.log"
  say "$priority: $gguf_type via the emitted script (log: $log)"
  setsid env EDGEPLAN_MODEL="$WORK/tiny" EDGEPLAN_OUT="$WORK/gguf-$priority" \
    EDGEPLAN_GGUF_PRE_TOKENIZER=gpt-2 \
    EDGEPLAN_SERVE_ARGS="--host 127.0.0.1 --port $port --log-verbosity 5" \
    bash "$WORK/build-$priority.sh" >"$log" 2>&1 &
  SERVER_PID=$!
  wait_ready "$port" "$log"
  tokens "$port" || die "$priority: no tokens from llama-server (log: $log)"
  [ -f "$WORK/gguf-$priority/model-$gguf_type.gguf" ] || die "$priority: no model-$gguf_type.gguf written"
  want=$(expected_buffer "$WORK/plan-$priority.json")
  if grep -q "serving with --no-repack" "$log"; then
    # The script's smoke run crashed with the AMX/repacked buffer (ggml-org/llama.cpp#20824,
    # on some AMX hosts) and it fell back: the server it runs must carry --no-repack and
    # hold no extra buffer.
    grep "died on its first tokens" "$log" >&2
    grep -q "serving: .* --no-repack" "$log" || die "$priority: the script fell back but its serve line has no --no-repack"
    # (The smoke runs logged to the script's work dir: $log is the served server's.)
    if grep "model buffer size" "$log" | grep -Eq "AMX|CPU_REPACK"; then
      die "$priority: served with --no-repack, yet the log shows an AMX or CPU_REPACK buffer"
    fi
    FELL_BACK=1
    say "$priority: the script fell back to --no-repack after the crash; $want was not served"
  elif [ -n "$want" ]; then
    grep -q "$want model buffer size" "$log" || { grep -i "buffer size" "$log" >&2; die "$priority: the plan says $want, the log has no $want model buffer"; }
    say "$priority: the log shows the $want buffer the plan names"
  fi
  stop_server
  lap "$priority script"
done

# 4. The memory fit against llama.cpp's report, on the speed plan's Q4_0 files.
setsid env EDGEPLAN_MODEL="$WORK/qwen3-0.6b" EDGEPLAN_OUT="$WORK/gguf-qwen" EDGEPLAN_NO_SERVE=1 \
  EDGEPLAN_GGUF_PRE_TOKENIZER=gpt-2 bash "$WORK/build-speed.sh" >"$WORK/build-qwen.log" 2>&1 \
  || { tail -n 30 "$WORK/build-qwen.log" >&2; die "building the Qwen3-0.6B-shaped Q4_0 file"; }
lap "Qwen3-0.6B-shaped Q4_0 file"
off=0
for case in "tiny 4096 $WORK/gguf-speed" "tiny 8192 $WORK/gguf-speed" \
            "qwen3-0.6b 4096 $WORK/gguf-qwen" "qwen3-0.6b 16384 $WORK/gguf-qwen"; do
  set -- $case
  model=$1 ctx=$2 dir=$3
  config="$WORK/$model/config.json"
  "$EDGEPLAN" plan --engine llama.cpp --priority speed --model "$config" --context "$ctx" \
    --format json >"$WORK/fit-$model-$ctx.json" || die "plan --model $model --context $ctx"
  mapfile -t flags < <("$EDGEPLAN" plan --engine llama.cpp --priority speed --model "$config" \
    --context "$ctx" --format args | tr ' ' '\n')
  port=$(free_port)
  log="$WORK/fit-$model-$ctx.log"
  # On a host where the scripts fell back (the AMX buffer crashes the first matmul),
  # no warm-up: the buffers are allocated at load, before anything is computed.
  warm=()
  [ "$FELL_BACK" = 0 ] || warm=(--no-warmup)
  setsid "$EDGEPLAN_LLAMA_CPP/build/bin/llama-server" --model "$dir/model-Q4_0.gguf" "${flags[@]}" "${warm[@]}" \
    --host 127.0.0.1 --port "$port" --log-verbosity 4 >"$log" 2>&1 &
  SERVER_PID=$!
  wait_ready "$port" "$log"
  stop_server
  "$PY" "$HERE/llama_buffers.py" "$log" >"$WORK/buffers-$model-$ctx.json" || die "no buffer report in $log"
  say "$model at $ctx tokens:"
  "$PY" "$HERE/check_llama_memory.py" "$WORK/fit-$model-$ctx.json" "$WORK/buffers-$model-$ctx.json" "$dir/model-Q4_0.gguf" \
    || { say "$model at $ctx tokens: OFF by more than 5% (plan $WORK/fit-$model-$ctx.json, log $log)"; off=$((off + 1)); }
done
[ "$off" = 0 ] || die "$off of 4 memory fits are off by more than 5% from llama.cpp's report"
lap "memory fits"

# 5. Every fixture profile at both priorities, with and without a --model fit: its flags
#    through llama-server's own parser (a bad flag stops it with "invalid argument";
#    good flags get as far as loading the model, which does not exist here).
checked=0
for profile in "$ROOT"/fixtures/profiles/*.json; do
  for priority in speed fidelity; do
    for fit in "" "--model qwen3-1.7b --context 8192"; do
      # shellcheck disable=SC2086 # $fit is two flags or none
      args=$("$EDGEPLAN" plan --engine llama.cpp --priority "$priority" --profile "$profile" $fit --format args 2>/dev/null) || continue
      # shellcheck disable=SC2086 # the flags, split on purpose
      out=$(timeout 60 "$EDGEPLAN_LLAMA_CPP/build/bin/llama-server" --model "$WORK/absent.gguf" $args \
        --host 127.0.0.1 --port "$(free_port)" 2>&1 || true)
      if grep -q "invalid argument\|error while handling argument" <<<"$out" || ! grep -q "failed to load model" <<<"$out"; then
        echo "$out" | tail -n 5 >&2
        die "llama-server rejects the flags for $(basename "$profile") ($priority${fit:+, $fit}): $args"
      fi
      checked=$((checked + 1))
    done
  done
done
[ "$checked" -ge 40 ] || die "only $checked fixture renderings were checked"
lap "$checked fixture renderings through llama-server's parser"
say "ok"
