#!/usr/bin/env bash
# Two noma binaries side by side (not a test): a one-op `noma patch
# --inplace` on the ~3 MB / 10,000-section synthetic document, committed in
# a git repository of its own per binary, through bench_pair (A B A B ...,
# medians and pair-by-pair ratios). Each run first restores the document
# and removes its transcript (a 3 MB copy, the same for both sides), so
# every run is a first patch: the writer's context (work tree, actor,
# genesis need, signer), the engine, the transcript's first record.
#
#   bash benches/patch_inplace.sh A_NOMA B_NOMA [RUNS]
set -euo pipefail
. "$(dirname "$0")/common.sh"
a=$1 b=$2 runs=${3:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench_home "$work"
"$(bench_synth)" 10000 >"$work/big.noma"
op='{"op":"update_attribute","id":"claim-4999","key":"confidence","value":0.5}'
for side in a b; do
  mkdir "$work/$side"
  (cd "$work/$side" && git init -q && cp ../big.noma doc.noma && git add doc.noma && git commit -qm doc)
done
run() {
  echo "cd $work/$1 && cp ../big.noma doc.noma && rm -f doc.noma.patches && $2 patch doc.noma --inplace --no-sign --op '$op'"
}
echo "document: $(wc -c <"$work/big.noma") bytes; A=$a B=$b; $runs pairs"
bench_pair "$runs" "$(run a "$a")" "$(run b "$b")"
