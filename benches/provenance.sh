#!/usr/bin/env bash
# Signed replay (not a test): a 10,000-record transcript whose every record
# is signed, verified by `noma replay --signatures`, side by side with plain
# `noma replay` of the same transcript (the two alternating run by run, the
# ratio taken pair by pair, after 3 warm-ups each), and the sidecar's bytes
# per record.
#
#   bash benches/provenance.sh [RUNS] [BIN]
#
# BIN defaults to the release binary (built if needed). Needs ssh-keygen
# and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
bin=${2:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-target}/release/noma
fi
bin=$(realpath "$bin")
synth=$(source benches/common.sh && bench_synth)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 10,000 applied records on a small document, one signed request. The work
# dir is no repository: the key's principal comes from the environment and
# replay --signatures trusts $work/.noma/allowed_signers.
ssh-keygen -q -t ed25519 -N "" -C bench -f "$work/key"
mkdir -p "$work/.noma"
echo "bench@example.com namespaces=\"noma\" $(cat "$work/key.pub")" >"$work/.noma/allowed_signers"
"$synth" 20 >"$work/small.noma"
cp "$work/small.noma" "$work/start.noma"
python3 - "$work/ops.json" <<'PY'
import json, sys
ops = [{"op": "update_attribute", "id": f"claim-{i % 20}", "key": "confidence", "value": (i % 997) / 1000 + 0.0001} for i in range(10000)]
json.dump(ops, open(sys.argv[1], "w"))
PY
NOMA_SIGNING_PRINCIPAL=bench@example.com \
  "$bin" patch "$work/small.noma" --inplace --ops "$work/ops.json" --key "$work/key" >/dev/null
records=$(wc -l <"$work/small.noma.patches")
signatures=$(wc -l <"$work/small.noma.provenance")
bytes=$(wc -c <"$work/small.noma.provenance")
tbytes=$(wc -c <"$work/small.noma.patches")
echo "records: $records, signatures: $signatures"
echo "sidecar: $bytes bytes, $((bytes / records)) bytes per record (transcript: $((tbytes / records)) bytes per record)"
# One checked run of each first: the timing loop ignores exit codes.
"$bin" replay "$work/small.noma" --base "$work/start.noma" >/dev/null
"$bin" replay "$work/small.noma" --base "$work/start.noma" --signatures >"$work/out.txt" ||
  { echo "replay --signatures failed:" >&2; tail -5 "$work/out.txt" >&2; exit 1; }
grep -c "signed by bench@example.com" "$work/out.txt" | xargs echo "records verified as signed:"
plain=("$bin" replay "$work/small.noma" --base "$work/start.noma")
signed=("${plain[@]}" --signatures)
cpu() { # cpu CMD...: one run's user+sys CPU seconds
  /usr/bin/time -f "%U %S" -o "$work/t" "$@" >/dev/null 2>&1 || true
  awk '{printf "%.3f\n", $1 + $2}' "$work/t"
}
for _ in 1 2 3; do cpu "${plain[@]}" >/dev/null; cpu "${signed[@]}" >/dev/null; done
: >"$work/pairs"
for _ in $(seq "$runs"); do
  a=$(cpu "${signed[@]}") b=$(cpu "${plain[@]}")
  echo "$a $b" >>"$work/pairs"
done
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "cpu seconds, medians of $runs alternating pairs:"
echo "  replay --signatures: $(awk '{print $1}' "$work/pairs" | median)"
echo "  replay:              $(awk '{print $2}' "$work/pairs" | median)"
echo "  ratio (pair by pair): $(awk '{printf "%.3f\n", $1 / $2}' "$work/pairs" | median)"
