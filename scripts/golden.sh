#!/usr/bin/env bash
# Golden outputs: run the built edgeplan over every fixture and record stdout, stderr and
# the exit code of each run into DIR, so a refactor can be checked to change nothing.
#
#   scripts/golden.sh DIR            # capture (uses target/debug/edgeplan; BIN=... to override)
#   diff -r before/ after/           # compare two captures
#
# Covered: probe --sysroot (json, table) for every sysroot; plan in every format and both
# priorities, --explain, and --model fits for every fixture profile; the fleet view; check
# over the manifest; bench --format json (and table, --save, --list-kernels, --strict)
# under the fake executor. The figures that depend on the run (the bench's peak RSS, the
# age of saved measurements) are blanked.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/golden.sh DIR}
bin=${BIN:-target/debug/edgeplan}
mkdir -p "$out"
n=0

# The fake bench's `measured_at` is pinned; the age `plan` shows for saved measurements
# depends on today's date, so it is blanked.
export SOURCE_DATE_EPOCH=1796083200
blank_age() { sed -E 's/"age_s": ?-?[0-9]+/"age_s": 0/g; s/\([0-9]+ (s|min|h|days) (ago|in the future)\)/(AGE)/g'; }

# run NAME ARGS...: one case; env vars may precede via `env`.
run() {
  local name=$1
  shift
  n=$((n + 1))
  "$@" 2>"$out/$name.err" | blank_age >"$out/$name.out"
  echo "${PIPESTATUS[0]}" >"$out/$name.rc"
}

for s in fixtures/sysroots/*/; do
  s=${s%/}
  b=$(basename "$s")
  run "probe-$b-json" "$bin" probe --sysroot "$s" --format json
  run "probe-$b-table" "$bin" probe --sysroot "$s" --format table
done

for p in fixtures/profiles/*.json fixtures/profiles-measured/*.json fixtures/bench/*.json; do
  b=$(basename "$(dirname "$p")")-$(basename "$p" .json)
  for pr in speed fidelity; do
    for f in table json jsonl env args; do
      run "plan-$b-$pr-$f" "$bin" plan --profile "$p" --priority "$pr" --format "$f"
    done
    run "plan-$b-$pr-explain" "$bin" plan --profile "$p" --priority "$pr" --explain
  done
  for m in qwen3-1.7b llama-3.1-8b fixtures/models/hybrid.json; do
    mb=$(basename "$m" .json)
    run "fit-$b-$mb-table" "$bin" plan --profile "$p" --model "$m" --context 32768
    run "fit-$b-$mb-json" "$bin" plan --profile "$p" --model "$m" --context 4096 --concurrency 4 --format json
  done
  run "fit-$b-headroom-explain" "$bin" plan --profile "$p" --model qwen3-1.7b --context 131072 --kv-dtype fp8 --headroom 0.2 --explain
done

for d in fixtures/profiles fixtures/profiles-measured; do
  b=$(basename "$d")
  for f in table json jsonl env args; do
    run "fleet-$b-$f" "$bin" plan --profile "$d/" --format "$f"
  done
  run "fleet-$b-fidelity" "$bin" plan --profile "$d/" --priority fidelity
  run "fleet-$b-model" "$bin" plan --profile "$d/" --model qwen3-1.7b --context 8192
done
run "fleet-expect-mismatch" "$bin" plan --profile fixtures/profiles/ --expect w4a8-amx
run "fleet-expect-ok" "$bin" plan --profile fixtures/profiles/x86-spr-amx.json --expect w4a8-amx
run "check-manifest" "$bin" check fixtures/expect.toml
for c in fixtures/catalogs/*.toml; do
  run "catalog-$(basename "$c" .toml)" "$bin" plan --profile fixtures/profiles/x86-spr-amx.json --catalog "$c"
  run "check-catalog-$(basename "$c" .toml)" "$bin" check fixtures/expect.toml --catalog "$c"
done
run "plan-missing-profile" "$bin" plan --profile fixtures/nope.json
run "plan-bad-model" "$bin" plan --profile fixtures/profiles/x86-spr-amx.json --model nope
run "usage-bad-flag" "$bin" plan --frobnicate

# bench under the fake executor (a virtual clock; nothing here depends on the host's speed).
tiny=fixtures/bench/tiny-config.json
blank_rss() { sed -E 's/"rss_peak_bytes": [0-9]+/"rss_peak_bytes": 0/; s/resident peak [0-9.]+ [KMGT]?i?B/resident peak X/'; }
bench() {
  local name=$1 exe=$2
  shift 2
  n=$((n + 1))
  EDGEPLAN_BENCH_EXECUTOR=$exe "$bin" bench --quick --threads 1 "$@" 2>"$out/$name.err" | blank_rss >"$out/$name.out"
  echo "${PIPESTATUS[0]}" >"$out/$name.rc"
}
for p in fixtures/bench/*.json fixtures/profiles/x86-spr-amx.json fixtures/profiles/x86-spr-vm-noamx.json fixtures/profiles/arm64-graviton3.json fixtures/profiles/hand-cuda-h100.json; do
  b=$(basename "$p" .json)
  [ "$b" = config-missing-hidden ] && continue
  [ "$b" = tiny-config ] && continue
  bench "bench-$b-json" fake --model-config "$tiny" --profile "$p" --format json
  bench "bench-$b-fidelity-json" fake --model-config "$tiny" --profile "$p" --format json --priority fidelity
done
bench "bench-host-table" fake --model-config "$tiny" --profile fixtures/bench/host-epyc-avx2.json
bench "bench-host-paths" fake --model-config "$tiny" --profile fixtures/bench/host-epyc-avx2.json --paths w4a16 --format json
bench "bench-slow-strict" fake-slow-w4a8 --model-config "$tiny" --profile fixtures/bench/xeon-amx-2vcpu.json --strict --format json
bench "bench-list-json" fake --list-kernels --profile fixtures/bench/host-epyc-avx2.json --format json
bench "bench-list-table" fake --list-kernels --profile fixtures/bench/host-epyc-avx2.json
bench "bench-bad-paths" fake --model-config "$tiny" --profile fixtures/bench/host-epyc-avx2.json --paths nope
bench "bench-bad-kernel" fake --model-config "$tiny" --profile fixtures/bench/host-epyc-avx2.json --kernel nope
bench "bench-bad-config" fake --model-config fixtures/bench/config-missing-hidden.json --profile fixtures/bench/host-epyc-avx2.json
bench "bench-too-big" fake --model llama-3.1-8b --profile fixtures/profiles/x86-container-cgroup2.json
bench "bench-bad-executor" bogus --model-config "$tiny" --profile fixtures/bench/host-epyc-avx2.json
tmp=/tmp/edgeplan-golden-save
rm -rf "$tmp" && mkdir -p "$tmp"
bench "bench-save" fake --model-config "$tiny" --profile fixtures/bench/host-epyc-avx2.json --format json --save "$tmp/saved.json"
blank_rss <"$tmp/saved.json" >"$out/bench-save.saved.json"
run "bench-save-plan-json" "$bin" plan --profile "$tmp/saved.json" --format json
run "bench-save-plan-explain" "$bin" plan --profile "$tmp/saved.json" --explain
rm -rf "$tmp"
echo "golden: $n runs into $out" >&2
