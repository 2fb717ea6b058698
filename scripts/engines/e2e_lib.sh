# Sourced by the end-to-end runs (e2e_plan.sh, e2e_llama.sh) after `set -euo pipefail`,
# with E2E_NAME set and the runner's own arguments (EDGEPLAN_BINARY [WORK_DIR]):
# the run's paths and arguments, its messages, and the one server it may have running.
# shellcheck shell=bash
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
EDGEPLAN="${1:?usage: ${0##*/} EDGEPLAN_BINARY [WORK_DIR]}"
WORK="${2:-$(mktemp -d "/tmp/edgeplan-$E2E_NAME.XXXXXX")}"
TIMEOUT="${E2E_SERVE_TIMEOUT:-900}"
mkdir -p "$WORK"

say() { echo "$E2E_NAME: $*" >&2; }
die() { echo "$E2E_NAME: FAIL: $*" >&2; exit 1; }
t0=$SECONDS
lap() { say "$1 done at $((SECONDS - t0)) s"; }

# The server started in its own process group (setsid), stopped with its children.
SERVER_PID=""
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
trap stop_server EXIT
