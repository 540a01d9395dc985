#!/usr/bin/env bash
# benches/reconcile_scale.sh — the PR check of a branch that appended 10
# records to an N-record transcript, warm, against one read of the
# transcript blob; the same check with provenance on (every record signed)
# against it off; and signed replay's peak memory (not a test).
#
# Usage: benches/reconcile_scale.sh [N [SIGNED_REPLAY_N]]   (default: 1000000 100000)
#   NOMA=path   the binary (default: $CARGO_TARGET_DIR/release/noma, built if missing)
#   RUNS=k      timed runs of each command (default 5, after one untimed run each),
#               the two commands of a row alternating (bench_pair in
#               benches/common.sh: /usr/bin/time, ratios pair by pair)
#   WORK=dir    where the repositories go (default: a new temporary directory);
#               repositories already built there are reused
#
# Each repository holds one small document (`synth 20`)
# committed on `main` with an N-record transcript built by `noma patch
# --inplace --ops` requests of 10,000 `update_attribute` ops (the signed one
# with `--key`, every record signed, `provenance: signatures: required` and
# `.noma/allowed_signers` committed on main), then a branch `agent` with 10
# more records (one request). Rows (medians and pairwise ratios):
#   reconcile-warm vs cat-file   `noma reconcile --base main --format json` on
#                                 `agent` after one untimed run (the checkpoint
#                                 remembered) / `git cat-file blob
#                                 agent:doc.noma.patches` to /dev/null
#   signed vs plain              the same reconcile, provenance on / off
#   replay --signatures          peak memory of `noma replay --signatures` of a
#                                 SIGNED_REPLAY_N-record signed transcript,
#                                 against plain `noma replay` of it
# The untimed run is the whole check (with provenance on it also remembers
# the merge base's sidecar); the timed ones are warm, provenance on too
# (decision signed-check-from-a-remembered-base). At a million records the
# untimed signed run takes minutes and about 6 GiB.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
SYNTH="$(bench_synth)"
RUNS="${RUNS:-5}"
n="${1:-1000000}"
rn="${2:-100000}"
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
export NOMA_MAX_FILE_BYTES=4000000000
export NOMA_SIGNING_PRINCIPAL=bench@example.com
bench_home "$WORK"

ops_file() { # $1 = file, $2 = first global index, $3 = count
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
f, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
json.dump([{"op": "update_attribute", "id": f"claim-{g % 20}", "key": "confidence",
            "value": (g % 997) / 1000 + 0.0001} for g in range(first, first + n)], open(f, "w"))
PY
}

# $1 = directory, $2 = records, $3 = "signed" or "plain". A git repository
# with main (the history) and agent (10 more records), checked out on agent.
build() {
  local dir="$1" records="$2" kind="$3" key=() done k
  [[ -f "$dir/.built" ]] && return
  rm -rf "$dir"
  mkdir -p "$dir"
  cd "$dir"
  git init -q
  "$NOMA" init --no-hooks --no-mcp >/dev/null
  if [[ "$kind" == signed ]]; then
    ssh-keygen -q -t ed25519 -N "" -C bench -f "$WORK/key-$records"
    echo "bench@example.com namespaces=\"noma\" $(cat "$WORK/key-$records.pub")" >.noma/allowed_signers
    printf 'provenance:\n  signatures: required\n' >>.noma/config.yml
    key=(--key "$WORK/key-$records")
  fi
  "$SYNTH" 20 >doc.noma
  cp doc.noma "$WORK/start-$kind-$records.noma"
  git add -A
  git commit -qm "document" --no-verify
  for ((done = 0; done < records; done += 10000)); do
    k=$((records - done < 10000 ? records - done : 10000))
    ops_file "$WORK/ops.json" "$done" "$k"
    "$NOMA" patch doc.noma --inplace --ops "$WORK/ops.json" "${key[@]}" >/dev/null
  done
  git add -A
  git commit -qm "$records records" --no-verify
  git checkout -qb agent
  ops_file "$WORK/ops.json" "$records" 10
  "$NOMA" patch doc.noma --inplace --ops "$WORK/ops.json" "${key[@]}" >/dev/null
  git add -A
  git commit -qm "10 more records" --no-verify
  echo "built $dir: $(wc -l <doc.noma.patches) records ($(wc -c <doc.noma.patches) bytes)"
  touch .built
  cd "$WORK"
}

echo "A = $NOMA; work in $WORK"
build "$WORK/plain$n" "$n" plain
build "$WORK/signed$n" "$n" signed
reconcile=("$NOMA" reconcile --base main --format json)
for kind in plain signed; do
  # The untimed run that remembers the checkpoint; its verdict must hold.
  (cd "$WORK/$kind$n" && "${reconcile[@]}" >"$WORK/verdict-$kind.json") ||
    { echo "reconcile of $kind$n failed:" >&2; tail -c 2000 "$WORK/verdict-$kind.json" >&2; exit 1; }
done
echo "== reconcile-warm ($n records + 10) vs one git cat-file blob of the transcript"
(cd "$WORK/plain$n" && bench_pair "$RUNS" "exec ${reconcile[*]}" \
  "exec git cat-file blob agent:doc.noma.patches")
echo "== reconcile-warm, provenance on (every record signed) vs off"
(cd "$WORK/signed$n" && bench_pair "$RUNS" "exec ${reconcile[*]}" \
  "cd $WORK/plain$n && exec ${reconcile[*]}")

# Signed replay of rn records: no repository, the key's principal from the
# environment, trusted through .noma/allowed_signers in the directory.
rdir="$WORK/replay$rn"
if [[ ! -f "$rdir/.built" ]]; then
  rm -rf "$rdir"
  mkdir -p "$rdir/.noma"
  ssh-keygen -q -t ed25519 -N "" -C bench -f "$rdir/key"
  echo "bench@example.com namespaces=\"noma\" $(cat "$rdir/key.pub")" >"$rdir/.noma/allowed_signers"
  "$SYNTH" 20 >"$rdir/doc.noma"
  cp "$rdir/doc.noma" "$rdir/start.noma"
  for ((done = 0; done < rn; done += 10000)); do
    k=$((rn - done < 10000 ? rn - done : 10000))
    ops_file "$WORK/ops.json" "$done" "$k"
    "$NOMA" patch "$rdir/doc.noma" --inplace --ops "$WORK/ops.json" --key "$rdir/key" >/dev/null
  done
  touch "$rdir/.built"
fi
echo "== replay --signatures vs replay, $rn signed records"
(cd "$rdir" && "$NOMA" replay doc.noma --base start.noma --signatures >/dev/null) ||
  { echo "replay --signatures failed" >&2; exit 1; }
(cd "$rdir" && bench_pair "$RUNS" "exec $NOMA replay doc.noma --base start.noma --signatures" \
  "exec $NOMA replay doc.noma --base start.noma")
