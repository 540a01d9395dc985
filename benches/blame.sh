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
#   REUSE=1       time the repositories a KEEP=1 run left in WORK, not new ones
#   OTHER=path    another build: a third pair times cold `blame` of NOMA (A)
#                 against OTHER's (B), e.g. the build before a change
#   COMMITS=c     spread the N records over c commits of N/c records each
#                 (default 1); e.g. COMMITS=500 benches/blame.sh 5000
#
# For each N: a repository with one small document (`synth 20`),
# and a transcript of N `update_attribute` records made by N/BATCH
# `noma patch --inplace --ops` requests (as benches/transcript_scale.sh makes
# it, ~670 bytes a record), committed without the hook (with COMMITS=c, one
# commit each N/c records, each made by one request). Timed as whole
# processes by bench_pair (benches/common.sh: /usr/bin/time, wall and CPU
# seconds, peak resident memory), the two commands of a pair in turn
# (A B A B ...), the ratios taken pair by pair (on a loaded machine the CPU
# ratio is the steadier one):
#   cold    A = `noma blame doc.noma`,
#           B = `noma replay doc.noma --base <the first state>`,
#           each with .noma/cache removed first
#           (the target: A/B at most 1.5)
#   warm    A = `noma blame doc.noma`, the answer cached by the run before,
#           B = `noma log doc.noma --block claim-3 --limit 1`, also warm
#           (the target: both under 50 ms)
#   one more  then one more record is made and committed, and the block
#           cache as the warm runs left it is saved; before each run it is
#           put back (a copy inside the timing, for both), so every run is
#           the first after that commit:
#           A = `noma blame doc.noma`, B = `noma replay` as in cold
#           (the target: A/B at most 1.3)
# Every run's exit status must be 0 (the script stops otherwise).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
SYNTH="$(bench_synth)"
RUNS="${RUNS:-5}"
BATCH="${BATCH:-10000}"
COMMITS="${COMMITS:-1}"
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(100000)
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
export NOMA_MAX_FILE_BYTES=4000000000
bench_home "$WORK"

# Prints a pair's rows (bench_pair: A B A B ..., medians of wall, CPU and
# peak, and of the ratios A/B pair by pair). $1 = label, $2 = both's mode
# (cold removes the block cache first, a few ms of rm inside the timing),
# $3 and $4 = A's and B's arguments, $5 = B's binary (default $NOMA).
pair() {
  local label="$1" mode="$2" a_args="$3" b_args="$4" b_bin="${5:-$NOMA}" pre=""
  [[ "$mode" == cold ]] && pre="rm -rf .noma/cache; "
  echo "  $label: A = $NOMA $a_args, B = $b_bin $b_args"
  bench_pair "$RUNS" "${pre}exec $NOMA $a_args" "${pre}exec $b_bin $b_args"
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

# Builds the repository $1 holding a document whose transcript has $2
# records, and leaves the shell in it.
build() {
  local repo="$1" n="$2" done k
  rm -rf "$repo"
  mkdir -p "$repo"
  cd "$repo"
  git init -q
  "$SYNTH" 20 >doc.noma
  cp doc.noma "$WORK/base$n.noma"
  git add doc.noma
  git commit -qm "document" --no-verify
  local per=$((n / COMMITS < BATCH ? n / COMMITS : BATCH))
  ((per > 0)) || per=1
  for ((done = 0; done < n; done += per)); do
    k=$((n - done < per ? n - done : per))
    ops_file "$WORK/ops.json" "$done" "$k"
    "$NOMA" patch doc.noma --inplace --ops "$WORK/ops.json" >/dev/null
    if ((COMMITS > 1)); then
      git add doc.noma doc.noma.patches
      git commit -qm "records to $((done + k))" --no-verify
    fi
  done
  if ((COMMITS <= 1)); then
    git add doc.noma doc.noma.patches
    git commit -qm "$n records" --no-verify
  fi
}

echo "noma = $NOMA; $RUNS runs each, A and B alternating; work in $WORK"
for n in "${sizes[@]}"; do
  repo="$WORK/r$n"
  if [[ "${REUSE:-0}" == 1 && -f "$repo/doc.noma.patches" && -f "$WORK/base$n.noma" ]]; then
    cd "$repo"
  else
    build "$repo" "$n"
  fi
  echo "== $(wc -l <doc.noma.patches) records ($(wc -c <doc.noma.patches) bytes)"
  pair cold cold "blame doc.noma" "replay doc.noma --base $WORK/base$n.noma"
  pair warm warm "blame doc.noma" "log doc.noma --block claim-3 --limit 1"
  if [[ "${REUSE:-0}" != 1 ]]; then
    ops_file "$WORK/ops.json" "$n" 1
    "$NOMA" patch doc.noma --inplace --ops "$WORK/ops.json" >/dev/null
    git add doc.noma doc.noma.patches
    git commit -qm "one more record" --no-verify
    rm -rf "$WORK/cache.saved"
    cp -a .noma/cache "$WORK/cache.saved"
  fi
  restore="rm -rf .noma/cache; cp -a $WORK/cache.saved .noma/cache; "
  echo "  one more: A = $NOMA blame doc.noma, B = $NOMA replay doc.noma --base ...; the cache before the commit put back first"
  bench_pair "$RUNS" "${restore}exec $NOMA blame doc.noma" \
    "${restore}exec $NOMA replay doc.noma --base $WORK/base$n.noma"
  if [[ -n "${OTHER:-}" ]]; then
    pair "cold, against OTHER" cold "blame doc.noma" "blame doc.noma" "$OTHER"
  fi
  cd "$WORK"
  [[ "${KEEP:-0}" == 1 ]] && echo "  kept $repo" || rm -rf "$repo" "$WORK/base$n.noma"
done
