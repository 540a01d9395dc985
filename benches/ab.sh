#!/usr/bin/env bash
# Two noma binaries side by side (not a test): `noma check` and a one-op
# `noma patch --out` on the ~3 MB / 10,000-section synthetic document, the
# binaries alternating run by run so a slow phase of the machine hits both.
# Per round: 3 warm-ups each, then RUNS alternating pairs; prints the
# medians and the ratio B/A, and an awk loop's time before and after the
# round as calibration (a slow loop means a slow machine, not a regression).
#
#   bash benches/ab.sh OLD_NOMA NEW_NOMA [ROUNDS] [RUNS]
set -euo pipefail
a=$1 b=$2 rounds=${3:-5} runs=${4:-21}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
doc=$work/big.noma
"$(source "$(dirname "${BASH_SOURCE[0]}")/common.sh" && bench_synth)" 10000 >"$doc"
op='{"op":"update_attribute","id":"claim-4999","key":"confidence","value":0.5}'

ms() { # ms CMD...: one run's wall time in microseconds
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
}
median() { sort -n | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR+1)/2)]/1000}'; }
calibrate() { ms awk 'BEGIN{for(i=0;i<300000;i++)s+=i}' | median_one; }
median_one() { awk '{printf "%.1f", $1/1000}'; }

# One checked run of each command first: `ms` ignores exit codes, and a
# failing command would be timed as if it were the work.
for bin in "$a" "$b"; do
  "$bin" check "$doc" >/dev/null 2>&1 &&
    "$bin" patch "$doc" --op "$op" --out "$work/out.noma" >/dev/null 2>&1 ||
    { echo "$bin fails on the benchmark; not timing it" >&2; exit 1; }
done
echo "document: $(wc -c <"$doc") bytes; A=$a B=$b"
for round in $(seq "$rounds"); do
  before=$(calibrate)
  for cmd in check patch; do
    run() {
      if [ "$cmd" = check ]; then ms "$1" check "$doc"
      else ms "$1" patch "$doc" --op "$op" --out "$work/out.noma"; fi
    }
    for _ in 1 2 3; do run "$a" >/dev/null; run "$b" >/dev/null; done
    ta=() tb=()
    for _ in $(seq "$runs"); do ta+=("$(run "$a")"); tb+=("$(run "$b")"); done
    ma=$(printf '%s\n' "${ta[@]}" | median)
    mb=$(printf '%s\n' "${tb[@]}" | median)
    echo "round $round $cmd: A $ma ms  B $mb ms  B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN{printf "%.2f", b/a}')"
  done
  echo "round $round awk calibration: $before / $(calibrate) ms"
done
