#!/usr/bin/env bash
# benches/two_builds.sh — two builds of noma side by side on a small
# repository: `noma check` of its documents and of one large document,
# `noma reconcile` of a branch and the pre-commit hook, each pair alternating (bench_pair in benches/common.sh:
# /usr/bin/time, ratios pair by pair). For a change that should cost
# nothing (code that only moved): the ratios should stay near 1.
#
# Usage: benches/two_builds.sh OTHER_NOMA [DOCS]   (default DOCS: 20)
#   NOMA=path   the build measured (A; default: $CARGO_TARGET_DIR/release/noma,
#               built if missing); OTHER_NOMA is B
#   RUNS=k      timed runs of each command (default 10, after one untimed run each)
#
# The repository: DOCS documents of 40 claims each with a transcript
# (started by `noma record`), committed on `main`; a branch `agent` on which
# every document takes one recorded `update_attribute` (`noma patch --inplace`).
# Last, every document takes a second recorded patch, staged, and the
# pre-commit hook (`noma hook pre-commit`) is timed on that index.
# /usr/bin/time counts CPU in 10 ms steps: give DOCS in the hundreds for
# a ratio finer than that.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
other="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
docs="${2:-20}"
RUNS="${RUNS:-10}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bench_home "$work"
repo="$work/repo"
mkdir -p "$repo"
cd "$repo"
git init -q
for ((d = 0; d < docs; d++)); do
  {
    printf -- '---\ntitle: Doc %d\n---\n\n# Doc %d\n\n' "$d" "$d"
    for ((c = 0; c < 40; c++)); do
      printf '::claim{id="c%d" confidence="0.5"}\nClaim %d of document %d.\n::\n\n' "$c" "$c" "$d"
    done
  } >"doc$d.noma"
  "$NOMA" record "doc$d.noma" >/dev/null
done
git add -A
git commit -qm base
git checkout -qb agent
for ((d = 0; d < docs; d++)); do
  "$NOMA" patch "doc$d.noma" --inplace --actor-kind agent --actor-name bot --reason bench \
    --op '{"op":"update_attribute","id":"c1","key":"confidence","value":0.9}' >/dev/null
done
git add -A
git commit -qm agent

echo "check: A=$NOMA B=$other ($docs documents, $RUNS pairs)"
bench_pair "$RUNS" "cd '$repo' && '$NOMA' check *.noma" "cd '$repo' && '$other' check *.noma"
"$(bench_synth)" 30000 >"$work/big.noma"
echo "check of one $(wc -c <"$work/big.noma")-byte document (synth 30000):"
bench_pair "$RUNS" "'$NOMA' check '$work/big.noma'" "'$other' check '$work/big.noma'"
echo "reconcile --base main:"
bench_pair "$RUNS" "cd '$repo' && '$NOMA' reconcile --base main" \
  "cd '$repo' && '$other' reconcile --base main"
for ((d = 0; d < docs; d++)); do
  "$NOMA" patch "doc$d.noma" --inplace --actor-kind agent --actor-name bot --reason bench \
    --op '{"op":"update_attribute","id":"c2","key":"confidence","value":0.8}' >/dev/null
done
git add -A
echo "hook pre-commit ($docs staged patches):"
bench_pair "$RUNS" "cd '$repo' && '$NOMA' hook pre-commit" "cd '$repo' && '$other' hook pre-commit"
