#!/usr/bin/env bash
# Two noma binaries side by side on the provenance paths (not a test):
# `noma reconcile --base main` on a small repository whose policy requires
# signatures (DOCS documents, each with a signed transcript on `main` and two
# more signed records on the branch `pr`), and `noma replay --signatures`
# of a RECORDS-record transcript, every record signed: each pair of runs is
# A then B (bench_pair in benches/common.sh, /usr/bin/time: 10 ms steps),
# ratios A/B taken pair by pair. Then one more signed `noma patch
# --inplace` onto a RECORDS-record and onto a 10-record signed transcript,
# each binary on its own copy, put back before every run (untimed), timed
# by bash's $EPOCHREALTIME (microseconds): a patch takes a few
# milliseconds, below /usr/bin/time's resolution. Those print the medians,
# and the pair-by-pair ratio's median, quartiles and extremes, then (when
# valgrind is installed) the instructions each binary executes, which the
# machine's load does not change.
#
#   bash benches/provenance_ab.sh A_NOMA B_NOMA [RUNS] [DOCS] [RECORDS] [WRITE_RUNS]
#
# WRITE_RUNS (default RUNS) is the number of pairs of signed patches: on a
# loaded machine a few-millisecond process needs hundreds for a median
# ratio that holds to a few percent.
#
# Needs bash 5, git, ssh-keygen and python3. B_NOMA sets the repositories
# up.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
a=$(realpath "$1") b=$(realpath "$2") runs=${3:-10} docs=${4:-20} records=${5:-2000}
write_runs=${6:-$runs}
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

# A signed transcript of $2 records in the directory $1 (no repository:
# trust comes from the directory): $1/doc.noma, and $1/start.noma, the
# document before them.
signed_transcript() {
  local dir=$1 n=$2
  mkdir -p "$dir/.noma"
  cp "$repo/.noma/allowed_signers" "$dir/.noma/"
  cp "$work/tpl.noma" "$dir/doc.noma" && cp "$work/tpl.noma" "$dir/start.noma"
  python3 - "$dir/ops.json" "$n" <<'PY'
import json, sys
n = int(sys.argv[2])
json.dump([{"op": "update_attribute", "id": f"claim-{i % 5}", "key": "confidence",
            "value": (i % 997) / 1000 + 0.0001} for i in range(n)], open(sys.argv[1], "w"))
PY
  "$b" patch "$dir/doc.noma" --inplace --ops "$dir/ops.json" --key "$work/key" >/dev/null
}
flat=$work/flat
signed_transcript "$flat" "$records"
replay="replay $flat/doc.noma --base $flat/start.noma --signatures"
"$b" $replay >/dev/null || { echo "replay --signatures fails" >&2; exit 1; }

echo "A=$a B=$b; $docs signed documents, $records signed records; $runs pairs"
echo "reconcile --base main (signatures required):"
bench_pair "$runs" "cd $repo && $a reconcile --base main --format json" \
  "cd $repo && $b reconcile --base main --format json"
echo "replay --signatures:"
bench_pair "$runs" "$a $replay" "$b $replay"

# signed_write SRC: one signed record onto the transcript in SRC, by A and
# by B in turn, each on its own copy of SRC put back before each run.
signed_write() {
  local src=$1 side i t0 t1 bin
  local args=(--inplace --key "$work/key" --op "$(op 3 4)")
  for side in a b; do
    mkdir -p "$work/w$side/.noma"
    cp "$src/.noma/allowed_signers" "$work/w$side/.noma/"
  done
  put_back() { cp "$src/doc.noma" "$src/doc.noma.patches" "$src/doc.noma.provenance" "$work/w$1/"; }
  : >"$work/pairs"
  for ((i = -1; i < write_runs; i++)); do # run -1: one untimed run each
    for side in a b; do
      [[ $side == a ]] && bin=$a || bin=$b
      put_back "$side"
      t0=$EPOCHREALTIME
      "$bin" patch "$work/w$side/doc.noma" "${args[@]}" >/dev/null ||
        { echo "signed patch fails: $bin" >&2; exit 1; }
      t1=$EPOCHREALTIME
      [[ $i -ge 0 ]] && printf '%s %s ' "$t0" "$t1" >>"$work/pairs"
    done
    [[ $i -ge 0 ]] && echo >>"$work/pairs"
  done
  awk '
    function sort(v, n,   i, j, x) {
      for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j > 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    }
    function q(v, n, p,   k) { k = 1 + p * (n - 1); return v[int(k)] + (k - int(k)) * (v[int(k) + (k > int(k))] - v[int(k)]) }
    { n++; a[n] = $2 - $1; b[n] = $4 - $3; r[n] = a[n] / b[n] }
    END {
      sort(a, n); sort(b, n); sort(r, n)
      printf "  A: wall %.2f ms, B: wall %.2f ms (medians of %d)\n", 1000 * q(a, n, .5), 1000 * q(b, n, .5), n
      printf "  A/B pair by pair: median %.3f, quartiles %.3f-%.3f, extremes %.3f-%.3f\n", q(r, n, .5), q(r, n, .25), q(r, n, .75), r[1], r[n]
    }' "$work/pairs"
  # Instructions the process executes in user space, which the machine's
  # load does not change (valgrind's callgrind; median of 3 runs each).
  if command -v valgrind >/dev/null; then
    local ir_a=() ir_b=()
    for ((i = 0; i < 3; i++)); do
      for side in a b; do
        [[ $side == a ]] && bin=$a || bin=$b
        put_back "$side"
        t0=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" patch \
          "$work/w$side/doc.noma" "${args[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')
        [[ $side == a ]] && ir_a+=("$t0") || ir_b+=("$t0")
      done
    done
    mapfile -t ir_a < <(printf '%s\n' "${ir_a[@]}" | sort -n)
    mapfile -t ir_b < <(printf '%s\n' "${ir_b[@]}" | sort -n)
    awk -v a="${ir_a[1]}" -v b="${ir_b[1]}" 'BEGIN {
      printf "  instructions (user space): A %d, B %d, A/B %.3f\n", a, b, a / b }'
  fi
}
echo "signed patch (one record onto $records signed records; \$EPOCHREALTIME):"
signed_write "$flat"
signed_transcript "$work/small" 10
echo "signed patch (one record onto 10 signed records; \$EPOCHREALTIME):"
signed_write "$work/small"
