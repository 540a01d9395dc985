#!/usr/bin/env bash
# benches/merge_record.sh — two noma binaries side by side on a small
# repository (not a test): the merge driver on a transcript and on its
# document, `noma reconcile`, and `noma record` of a hand edit.
#
# Usage: benches/merge_record.sh A B [RUNS]   (default RUNS 10)
#
# The repository: a 200-section document (`synth 200`, benches/common.sh) on `main` with a
# 50-record transcript; then 20 records on a branch `agent` and 20 others
# on `main`, so both sides appended. Rows (bench_pair in benches/common.sh:
# A B A B ..., medians and ratios A/B pair by pair):
#   driver-transcript  `noma merge-driver` of the transcript's merge-base,
#                      main and agent versions (the everyday merge)
#   driver-document    the same for the document
#   reconcile          `noma reconcile --base main --format json` on agent
#   record             `noma record` of a one-line hand edit on agent (the
#                      transcript and document restored before each run)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
a=$(realpath "$1") b=$(realpath "$2") runs=${3:-10}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bench_home "$work"
export NOMA_ACTOR=bench

patch_ops() { # $1 = binary, $2 = first claim, $3 = count, $4 = step
  python3 - "$2" "$3" "$4" >"$work/ops.json" <<'PY'
import json, sys
first, n, step = (int(x) for x in sys.argv[1:])
json.dump([{"op": "update_attribute", "id": f"claim-{(first + i * step) % 200}",
            "key": "confidence", "value": (first + i) / 1000 + 0.0001} for i in range(n)], sys.stdout)
PY
  "$1" patch doc.noma --inplace --ops "$work/ops.json" >/dev/null
}

repo="$work/repo"
mkdir -p "$repo"
cd "$repo"
git init -q
"$a" init --no-hooks --no-mcp >/dev/null
"$(bench_synth)" 200 >doc.noma
git add -A
git commit -qm document --no-verify
for i in $(seq 0 49); do patch_ops "$a" "$i" 1 1; done
git add -A && git commit -qm history --no-verify
git checkout -qb agent
for i in $(seq 0 19); do patch_ops "$a" $((2 * i + 1)) 1 1; done
git add -A && git commit -qm agent --no-verify
git checkout -q main
for i in $(seq 0 19); do patch_ops "$a" $((2 * i + 100)) 1 1; done
git add -A && git commit -qm main --no-verify
base=$(git merge-base main agent)
for f in doc.noma doc.noma.patches; do
  git show "$base:$f" >"$work/base-$f"
  git show "main:$f" >"$work/ours-$f"
  git show "agent:$f" >"$work/theirs-$f"
done
git checkout -q agent
cp doc.noma.patches "$work/agent.patches"
sed "s/^Claim number 7 holds\./A hand edit of claim seven./" doc.noma >"$work/edited.noma"
cmp -s doc.noma "$work/edited.noma" && { echo "the hand edit changed nothing" >&2; exit 1; }
cp doc.noma "$work/agent.noma"

driver() { # $1 = binary, $2 = file
  echo "cp $work/ours-$2 $work/a-$2 && $1 merge-driver $work/base-$2 $work/a-$2 $work/theirs-$2 7 $2"
}
record() {
  echo "cp $work/agent.patches doc.noma.patches && cp $work/edited.noma doc.noma && $1 record doc.noma"
}
echo "A=$a B=$b runs=$runs ($(wc -l <doc.noma.patches) records on agent)"
echo "driver-transcript"
bench_pair "$runs" "$(driver "$a" doc.noma.patches)" "$(driver "$b" doc.noma.patches)"
echo "driver-document"
bench_pair "$runs" "$(driver "$a" doc.noma)" "$(driver "$b" doc.noma)"
echo "reconcile"
bench_pair "$runs" "$a reconcile --base main --format json" "$b reconcile --base main --format json"
echo "record"
bench_pair "$runs" "$(record "$a")" "$(record "$b")"
cp "$work/agent.patches" doc.noma.patches
cp "$work/agent.noma" doc.noma
