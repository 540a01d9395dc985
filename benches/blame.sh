#!/usr/bin/env bash
# benches/blame.sh — `noma blame` and `noma log` on one document whose
# transcript holds N records, against `noma replay` of the same transcript.
#
# Usage: benches/blame.sh [N ...]     (default: 100000)
#   NOMA=path     the binary (default: $CARGO_TARGET_DIR/release/noma, built if missing)
#   RUNS=k        timed runs of each command (default 5, after one untimed run)
#   BATCH=k       ops per `noma patch --ops` request while building (default 10000)
#   WORK=dir      where the repositories go (default: a new temporary directory)
#   KEEP=1        keep them (their paths are printed), e.g. to time them again
#
# For each N: a repository with one small document (`noma synth --sections
# 20`), and a transcript of N `update_attribute` records made by N/BATCH
# `noma patch --inplace --ops` requests (as benches/transcript_scale.sh makes
# it, ~670 bytes a record), committed without the hook. Timed as whole
# processes with /usr/bin/time (wall seconds, peak resident memory), the two
# commands of a pair in turn (A B A B ...), the ratio taken pair by pair:
#   cold    A = `noma blame doc.noma`,
#           B = `noma replay doc.noma --base <the first state>`,
#           each with .noma/cache removed first
#           (the target: A/B at most 1.5)
#   warm    A = `noma blame doc.noma`, the answer cached by the run before,
#           B = `noma log doc.noma --block claim-3 --limit 1`, also warm
#           (the target: both under 50 ms)
# Every run's exit status must be 0 (the script stops otherwise).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
RUNS="${RUNS:-5}"
BATCH="${BATCH:-10000}"
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(100000)
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
export NOMA_MAX_FILE_BYTES=4000000000
bench_home "$WORK"

# A shell that execs noma (so the figures are noma's); its first argument
# is the mode: `cold` removes the block cache first (a few ms of rm).
EXEC=(bash -c '[[ "$1" == cold ]] && rm -rf .noma/cache; shift; exec "$@"' bash)

# Prints a pair's rows: median wall and peak of A and of B, and the median
# of the pairwise ratios A/B. $1 = label, $2 = both's mode (cold|warm),
# $3 = A's arguments, $4 = B's arguments (one string each, split on spaces).
pair() {
  local label="$1" mode="$2" a_args="$3" b_args="$4" a b
  a="$(mktemp)" b="$(mktemp)"
  # shellcheck disable=SC2086
  "${EXEC[@]}" "$mode" "$NOMA" $a_args >/dev/null 2>&1 || true # untimed
  # shellcheck disable=SC2086
  "${EXEC[@]}" "$mode" "$NOMA" $b_args >/dev/null 2>&1 || true
  for ((r = 0; r < RUNS; r++)); do
    # shellcheck disable=SC2086
    timed "$a" "${EXEC[@]}" "$mode" "$NOMA" $a_args
    # shellcheck disable=SC2086
    timed "$b" "${EXEC[@]}" "$mode" "$NOMA" $b_args
  done
  python3 - "$label" "$a_args" "$b_args" "$a" "$b" <<'PY'
import statistics as st, sys
label, an, bn, fa, fb = sys.argv[1:6]
def load(f):
    return [tuple(float(x) for x in l.split()) for l in open(f) if l.strip()]
a, b = load(fa), load(fb)
def row(runs):
    wall = st.median(r[0] for r in runs)
    peak = st.median(r[1] for r in runs) / 1024
    return f"wall {wall:.3f} s (min {min(r[0] for r in runs):.3f}, max {max(r[0] for r in runs):.3f}), peak {peak:.1f} MiB"
print(f"  {label:5} A {an.split()[0]:7} {row(a)}")
print(f"  {'':5} B {bn.split()[0]:7} {row(b)}")
ratios = [x[0] / y[0] for x, y in zip(a, b) if y[0] > 0]
if ratios:
    print(f"  {'':5} A/B wall {st.median(ratios):.3f} (median of {len(ratios)} pairs)")
PY
  rm -f "$a" "$b"
}

ops_file() { # $1 = file, $2 = first global index, $3 = count
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
f, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ops = [{"op": "update_attribute", "id": f"claim-{g % 20}", "key": "confidence",
        "value": (g % 997) / 1000 + 0.0001} for g in range(first, first + n)]
json.dump(ops, open(f, "w"))
PY
}

echo "noma = $NOMA; $RUNS runs each, A and B alternating; work in $WORK"
for n in "${sizes[@]}"; do
  repo="$WORK/r$n"
  rm -rf "$repo"
  mkdir -p "$repo"
  cd "$repo"
  git init -q
  "$NOMA" synth --sections 20 >doc.noma
  cp doc.noma "$WORK/base$n.noma"
  git add doc.noma
  git commit -qm "document" --no-verify
  for ((done = 0; done < n; done += BATCH)); do
    k=$((n - done < BATCH ? n - done : BATCH))
    ops_file "$WORK/ops.json" "$done" "$k"
    "$NOMA" patch doc.noma --inplace --ops "$WORK/ops.json" >/dev/null
  done
  git add doc.noma doc.noma.patches
  git commit -qm "$n records" --no-verify
  echo "== $(wc -l <doc.noma.patches) records ($(wc -c <doc.noma.patches) bytes)"
  pair cold cold "blame doc.noma" "replay doc.noma --base $WORK/base$n.noma"
  pair warm warm "blame doc.noma" "log doc.noma --block claim-3 --limit 1"
  cd "$WORK"
  [[ "${KEEP:-0}" == 1 ]] && echo "  kept $repo" || rm -rf "$repo" "$WORK/base$n.noma"
done
