#!/usr/bin/env bash
# Two noma binaries side by side on the provenance paths (not a test):
# `noma reconcile --base main` on a small repository whose policy requires
# signatures (DOCS documents, each with a signed transcript on `main` and two
# more signed records on the branch `pr`), and `noma replay --signatures`
# of a RECORDS-record transcript, every record signed, and one more signed
# `noma patch --inplace` on a copy of that transcript for each binary (each
# run appends one record to its own copy). Each pair of runs is
# A then B (bench_pair in benches/common.sh), ratios A/B taken pair by pair.
#
#   bash benches/provenance_ab.sh A_NOMA B_NOMA [RUNS] [DOCS] [RECORDS]
#
# Needs git, ssh-keygen and python3. B_NOMA sets the repositories up.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
a=$(realpath "$1") b=$(realpath "$2") runs=${3:-10} docs=${4:-20} records=${5:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench_home "$work"
export GIT_CONFIG_NOSYSTEM=1 NOMA_SIGNING_PRINCIPAL=bench@example.com
ssh-keygen -q -t ed25519 -N "" -C bench -f "$work/key"

# The signed repository.
repo=$work/repo
mkdir -p "$repo/.noma" && cd "$repo"
git -c init.defaultBranch=main init -q
printf '.noma/cache/\n' >.gitignore
printf 'provenance:\n  signatures: required\n' >.noma/config.yml
echo "bench@example.com namespaces=\"noma\" $(cat "$work/key.pub")" >.noma/allowed_signers
"$(bench_synth)" 5 >"$work/tpl.noma"
op() { printf '{"op":"update_attribute","id":"claim-%d","key":"confidence","value":0.%d}' "$1" "$2"; }
for ((i = 0; i < docs; i++)); do
  cp "$work/tpl.noma" "d$i.noma"
  "$b" patch "d$i.noma" --inplace --key "$work/key" --op "$(op 0 1)" >/dev/null
done
git add -A && git commit -qm "signed documents" --no-verify
git checkout -q -b pr
for ((i = 0; i < docs; i++)); do
  "$b" patch "d$i.noma" --inplace --key "$work/key" --op "[$(op 1 2),$(op 2 3)]" >/dev/null
done
git add -A && git commit -qm "signed edits" --no-verify
"$b" reconcile --base main --format json >/dev/null ||
  { echo "reconcile fails on the bench repository" >&2; exit 1; }

# The signed transcript (no repository: trust comes from the directory).
flat=$work/flat
mkdir -p "$flat/.noma"
cp "$repo/.noma/allowed_signers" "$flat/.noma/"
cp "$work/tpl.noma" "$flat/doc.noma" && cp "$work/tpl.noma" "$flat/start.noma"
python3 - "$flat/ops.json" "$records" <<'PY'
import json, sys
n = int(sys.argv[2])
json.dump([{"op": "update_attribute", "id": f"claim-{i % 5}", "key": "confidence",
            "value": (i % 997) / 1000 + 0.0001} for i in range(n)], open(sys.argv[1], "w"))
PY
"$b" patch "$flat/doc.noma" --inplace --ops "$flat/ops.json" --key "$work/key" >/dev/null
replay="replay $flat/doc.noma --base $flat/start.noma --signatures"
"$b" $replay >/dev/null || { echo "replay --signatures fails" >&2; exit 1; }

echo "A=$a B=$b; $docs signed documents, $records signed records; $runs pairs"
echo "reconcile --base main (signatures required):"
bench_pair "$runs" "cd $repo && $a reconcile --base main --format json" \
  "cd $repo && $b reconcile --base main --format json"
echo "replay --signatures:"
bench_pair "$runs" "$a $replay" "$b $replay"

# A signed write: each binary appends to its own copy of the transcript.
for side in a b; do
  mkdir -p "$work/w$side/.noma"
  cp "$flat/.noma/allowed_signers" "$work/w$side/.noma/"
  cp "$flat/doc.noma" "$flat/doc.noma.patches" "$flat/doc.noma.provenance" "$work/w$side/"
done
write() { echo "$1 patch $work/w$2/doc.noma --inplace --key $work/key --op '$(op 3 4)'"; }
echo "signed patch (one record onto $records signed records):"
bench_pair "$runs" "$(write "$a" a)" "$(write "$b" b)"
