#!/usr/bin/env bash
# benches/transcript_scale.sh — replay, the pre-commit hook and one more patch
# against one document whose transcript holds N records (issue 35).
#
# Usage: benches/transcript_scale.sh [N ...]     (default: 10000 100000 1000000)
#   NOMA=path     binary A (default: $CARGO_TARGET_DIR/release/noma, built if missing)
#   NOMA_B=path   binary B, run alternately with A (A B A B ...): side by side,
#                 the ratio taken pair by pair. Without it only A is timed.
#   RUNS=k        timed runs of each binary and scenario (default 5, after one
#                 untimed run of each)
#   BATCH=k       ops per `noma patch --ops` request while building (default 10000)
#   WORK=dir      where the repositories go (default: a new temporary directory)
#   KEEP=1        keep them (their paths are printed), e.g. to time them again
#   SCENARIOS=... which scenarios run, in this order (default: "replay hook
#                 patch reconcile"; also "hook-read", below; "" builds only)
#   REUSE=1       time the repositories an earlier KEEP=1 run left in WORK
#                 instead of building them again (only after SCENARIOS that
#                 leave the staged one-record append alone: replay, hook,
#                 hook-read)
#
# For each N: a repository with one small document (`synth 20`,
# ~5 KB), and a transcript built by N/BATCH `noma patch --inplace --ops`
# requests of `update_attribute` ops (each applies: the value changes every
# time), so every record is a real one, chained and replayable (~670 bytes a
# record). The document and transcript are committed without the hook, then one
# more record is made with `noma patch --inplace --op` and staged. Timed, as
# whole processes with /usr/bin/time (wall seconds and peak resident memory):
#   replay   `noma replay doc.noma --base <the first state>`
#   hook     `noma hook pre-commit` on that staged one-record append
#   patch    one more `noma patch --inplace --op` (each run appends a record)
#   reconcile-cold / reconcile-warm
#            `noma reconcile --base main --format json` after the records above
#            are committed on a branch `agent` (the PR check of a branch that
#            appended): cold removes .noma/cache first (a fresh CI checkout,
#            the history replayed once), warm keeps what the run before
#            remembered (the checkpoint: only the branch's records replayed)
#   hook-read     `noma hook pre-commit` (A) against one `git cat-file blob`
#                 of the staged transcript into /dev/null (B), alternating,
#                 wall and CPU, the ratios taken pair by pair (bench_pair):
#                 the hook's floor is one read of the staged blob (issue 47). The untimed first hook run remembers the
#                 committed transcript, as the hook that accepted the
#                 previous commit would have.
# Every run's exit status must be 0 (the hook and replay accept; the script
# stops otherwise). NOMA_MAX_FILE_BYTES is raised to 4 GB for every process so
# a binary that still caps transcripts at 512 MiB can be timed past it.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
SYNTH="$(bench_synth)"
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
NOMA_B="${NOMA_B:+$(abs "$NOMA_B")}"
RUNS="${RUNS:-5}"
SCENARIOS="${SCENARIOS-replay hook patch reconcile}"
BATCH="${BATCH:-10000}"
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(10000 100000 1000000)
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
export NOMA_MAX_FILE_BYTES=4000000000
bench_home "$WORK"

# Every timed process is a shell that execs noma (so the figures are noma's)
# with @PID@ in its arguments replaced by the process id: one more patch then
# applies whatever ran before it.
# With COLD set, the block cache is removed first (outside the timed noma,
# inside the timed shell: a few milliseconds of rm).
EXEC=(bash -c '[[ -n "${COLD:-}" ]] && rm -rf .noma/cache; bin="$1"; shift; exec "$bin" "${@//@PID@/$$}"' bash)
OP='{"op":"update_attribute","id":"claim-4","key":"confidence","value":0.@PID@}'

# Prints one scenario's row: median wall and peak of A (and B, and the
# pairwise ratios A/B). $1 = label, $2 = records (for records/s), rest = args.
scenario() {
  local label="$1" records="$2"
  shift 2
  if [[ -n "$NOMA_B" ]]; then
    versus "$label" "$records" "$(printf '%q ' "${EXEC[@]}" "$NOMA_B" "$@")" "${EXEC[@]}" "$NOMA" "$@"
  else
    versus "$label" "$records" "" "${EXEC[@]}" "$NOMA" "$@"
  fi
}

# Like `scenario` for any two commands: $1 = label, $2 = records, $3 = B
# (one shell-quoted string, run by bash -c; empty: A alone), rest = A.
versus() {
  local label="$1" records="$2" cmd_b="$3"
  shift 3
  local a b
  a="$(mktemp)" b="$(mktemp)"
  "$@" >/dev/null 2>&1 || true # untimed first run
  [[ -n "$cmd_b" ]] && { bash -c "$cmd_b" >/dev/null 2>&1 || true; }
  for ((r = 0; r < RUNS; r++)); do
    timed "$a" "$@"
    [[ -n "$cmd_b" ]] && timed "$b" bash -c "exec $cmd_b"
  done
  python3 - "$label" "$records" "$a" "$b" <<'PY'
import statistics as st, sys
label, records, fa, fb = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def load(f):
    return [tuple(float(x) for x in l.split()) for l in open(f) if l.strip()]
a, b = load(fa), load(fb)
def row(name, runs):
    wall = st.median(r[0] for r in runs)
    peak = st.median(r[1] for r in runs) / 1024
    rate = f", {records / wall:,.0f} records/s" if records and wall > 0 else ""
    return f"{name} wall {wall:.2f} s (min {min(r[0] for r in runs):.2f}, max {max(r[0] for r in runs):.2f}), peak {peak:.1f} MiB{rate}"
print(f"  {label:14} A: {row('', a)}")
if b:
    print(f"  {'':14} B: {row('', b)}")
    ratios_w = [x[0] / y[0] for x, y in zip(a, b) if y[0] > 0]
    ratios_m = [x[1] / y[1] for x, y in zip(a, b)]
    if ratios_w:
        print(f"  {'':14} A/B wall {st.median(ratios_w):.3f}, peak {st.median(ratios_m):.3f} (median of {len(ratios_w)} pairs)")
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

echo "A = $NOMA"
[[ -n "$NOMA_B" ]] && echo "B = $NOMA_B"
echo "$RUNS runs each$([[ -n "$NOMA_B" ]] && echo ", A and B alternating"); work in $WORK"
build() { # $1 = N: the repository with N records and one more staged
  local n="$1"
  "$SYNTH" 20 >doc.noma
  cp doc.noma "$WORK/base$n.noma"
  # Committed first, so the first patch writes no genesis record and the
  # replay starts from this version (--base).
  git add doc.noma
  git commit -qm "document" --no-verify
  t0=$(date +%s)
  for ((done = 0; done < n; done += BATCH)); do
    k=$((n - done < BATCH ? n - done : BATCH))
    ops_file "$WORK/ops.json" "$done" "$k"
    "$NOMA" patch doc.noma --inplace --ops "$WORK/ops.json" >/dev/null
  done
  t1=$(date +%s)
  git add doc.noma doc.noma.patches
  git commit -qm "$n records" --no-verify
  t2=$(date +%s)
  "$NOMA" patch doc.noma --inplace \
    --op '{"op":"update_attribute","id":"claim-3","key":"confidence","value":0.123}' >/dev/null
  git add doc.noma doc.noma.patches
  built="built in $((t1 - t0)) s, committed in $((t2 - t1)) s"
}

for n in "${sizes[@]}"; do
  repo="$WORK/r$n"
  if [[ "${REUSE:-0}" == 1 && -d "$repo/.git" ]]; then
    cd "$repo"
    built="reused"
  else
    rm -rf "$repo"
    mkdir -p "$repo"
    cd "$repo"
    git init -q
    build "$n"
  fi
  records=$(git cat-file -p :doc.noma.patches | wc -l)
  bytes=$(git cat-file -s :doc.noma.patches)
  echo "== $records records ($bytes bytes); $built"
  for s in $SCENARIOS; do
    case "$s" in
      replay) scenario replay "$records" replay doc.noma --base "$WORK/base$n.noma" ;;
      hook) scenario hook 0 hook pre-commit ;;
      hook-read)
        # B reads the blob the hook must read once: the staged transcript.
        # Wall, CPU (user + system, children included) and peak, pair by pair.
        echo "  hook-vs-read   (A: noma hook pre-commit, B: git cat-file blob >/dev/null)"
        bench_pair "$RUNS" "exec '$NOMA' hook pre-commit" \
          "exec git cat-file blob $(git rev-parse :doc.noma.patches)"
        ;;
      patch) scenario patch 0 patch doc.noma --inplace --op "$OP" ;;
      reconcile)
        git checkout -qb agent
        git add doc.noma doc.noma.patches
        git commit -qm "more records" --no-verify
        export COLD=1
        scenario reconcile-cold 0 reconcile --base main --format json
        unset COLD
        scenario reconcile-warm 0 reconcile --base main --format json
        ;;
      *) echo "unknown scenario $s" >&2; exit 2 ;;
    esac
  done
  cd "$WORK"
  [[ "${KEEP:-0}" == 1 ]] && echo "  kept $repo" || rm -rf "$repo" "$WORK/base$n.noma"
done
