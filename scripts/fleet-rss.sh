#!/usr/bin/env bash
# Plans a generated JSON Lines fleet of SIZE_MB megabytes (default 1024) with the release
# build and reports the wall time and peak RSS (GNU time, /usr/bin/time -v).
# Usage: scripts/fleet-rss.sh [SIZE_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-1024}
[ -x /usr/bin/time ] || { echo "fleet-rss.sh: needs GNU time (/usr/bin/time; apt-get install time)" >&2; exit 1; }
cargo build --release --quiet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
line=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":")))' \
    fixtures/profiles/hand-x86-amx-usable.json)
bytes=$(( ${#line} + 1 ))
count=$(( size_mb * 1024 * 1024 / bytes + 1 ))
# `yes` ends on SIGPIPE when head has enough: not a failure here.
(set +o pipefail; yes "$line" | head -n "$count" > "$tmp/fleet.jsonl")
echo "fleet: $(du -m "$tmp/fleet.jsonl" | cut -f1) MiB, $count profiles"
/usr/bin/time -v target/release/edgeplan plan --profile "$tmp/fleet.jsonl" --format jsonl \
    2> "$tmp/time.txt" | wc -l | sed 's/^/plans written: /'
grep -E "Elapsed|Maximum resident|User time|System time" "$tmp/time.txt"
