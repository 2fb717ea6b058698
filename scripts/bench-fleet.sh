#!/usr/bin/env sh
# Times `edgeplan plan` over a 10,000-profile fleet, as one JSON Lines file and as a
# directory of files. The fleet is the hand-written fixtures repeated 1,000 times.
# Usage: scripts/bench-fleet.sh [N_REPEATS]   (run from the repository root)
set -eu
repeats=${1:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
bin=target/release/edgeplan

# One profile per line: the fixtures are pretty-printed, and JSON needs no newlines.
lines=$(for f in fixtures/profiles/hand-*.json; do tr -d '\n' < "$f"; echo; done)
i=0
while [ "$i" -lt "$repeats" ]; do printf '%s\n' "$lines"; i=$((i + 1)); done > "$work/big.jsonl"
mkdir "$work/dir"
split -l 1 -a 5 --additional-suffix=.json "$work/big.jsonl" "$work/dir/p"
echo "profiles: $(wc -l < "$work/big.jsonl") lines, $(ls "$work/dir" | wc -l) files, $(du -h "$work/big.jsonl" | cut -f1)"

for format in jsonl table; do
    echo "== plan --profile big.jsonl --format $format"
    /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS" "$bin" plan --profile "$work/big.jsonl" --format "$format" > /dev/null
done
echo "== plan --profile DIR (10,000 files) --format jsonl"
/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS" "$bin" plan --profile "$work/dir" --format jsonl > /dev/null
