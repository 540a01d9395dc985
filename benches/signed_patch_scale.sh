#!/usr/bin/env bash
# benches/signed_patch_scale.sh — one signed `noma patch` on a document whose
# transcript already holds N signed records, small against large, side by
# side (not a test).
#
# Usage: benches/signed_patch_scale.sh [SMALL LARGE]   (default: 1000 1000000)
#   NOMA=path   the binary (default: $CARGO_TARGET_DIR/release/noma, built if missing)
#   RUNS=k      timed runs of each size (default 10, after one untimed run each),
#               the two sizes alternating run by run
#   WORK=dir    where the two directories go (default: a new temporary directory)
#
# Each directory holds one small document (`synth 20`), an
# Ed25519 key made by ssh-keygen, `.noma/allowed_signers` listing it, and a
# transcript of N applied `update_attribute` records built by signed
# `noma patch --inplace --ops` requests of at most 10,000 ops, so every
# record is real and has its signature in `doc.noma.provenance` (~406 bytes
# a record: ~400 MB of sidecar at a million). Timed, as whole processes with
# /usr/bin/time (wall seconds and peak resident memory): one more signed
# `noma patch --inplace --op --key` in each directory, alternately; the row
# gives each size's medians and the median of the pairwise ratios
# large/small. The signing writer appends to the sidecar after reading only
# its tail, so the ratio stays near 1 however long the history is.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
SYNTH="$(bench_synth)"
RUNS="${RUNS:-10}"
small="${1:-1000}"
large="${2:-1000000}"
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
export NOMA_MAX_FILE_BYTES=4000000000
export NOMA_SIGNING_PRINCIPAL=bench@example.com

build() { # $1 = records
  local dir="$WORK/n$1" done k
  if [[ -s "$dir/doc.noma.patches" ]] && [[ "$(wc -l <"$dir/doc.noma.patches")" -ge "$1" ]]; then
    return
  fi
  rm -rf "$dir"
  mkdir -p "$dir/.noma"
  ssh-keygen -q -t ed25519 -N "" -C bench -f "$dir/key"
  echo "bench@example.com namespaces=\"noma\" $(cat "$dir/key.pub")" >"$dir/.noma/allowed_signers"
  "$SYNTH" 20 >"$dir/doc.noma"
  for ((done = 0; done < $1; done += 10000)); do
    k=$(($1 - done < 10000 ? $1 - done : 10000))
    python3 - "$WORK/ops.json" "$done" "$k" <<'PY'
import json, sys
f, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
json.dump([{"op": "update_attribute", "id": f"claim-{g % 20}", "key": "confidence",
            "value": (g % 997) / 1000 + 0.0001} for g in range(first, first + n)], open(f, "w"))
PY
    "$NOMA" patch "$dir/doc.noma" --inplace --ops "$WORK/ops.json" --key "$dir/key" >/dev/null
  done
  echo "n=$1: $(wc -l <"$dir/doc.noma.patches") records ($(wc -c <"$dir/doc.noma.patches") bytes), sidecar $(wc -l <"$dir/doc.noma.provenance") lines ($(wc -c <"$dir/doc.noma.provenance") bytes)"
}

build "$small"
build "$large"

# One signed patch in directory $2, timed into file $1; each run sets a new
# value, so every run appends one applied record and one signature.
run=0
timed() {
  local t
  t="$(mktemp)"
  run=$((run + 1))
  # Wall time from the shell's clock (microseconds; /usr/bin/time's %e has
  # only centiseconds and a signed patch takes milliseconds), peak memory
  # from /usr/bin/time.
  local t0=$EPOCHREALTIME
  /usr/bin/time -f '%M' -o "$t" "$NOMA" patch "$2/doc.noma" --inplace --key "$2/key" \
    --op "{\"op\":\"update_attribute\",\"id\":\"claim-4\",\"key\":\"confidence\",\"value\":0.$$$run}" >/dev/null
  local t1=$EPOCHREALTIME
  echo "$(python3 -c "print($t1 - $t0)") $(cat "$t")" >>"$1"
  rm -f "$t"
}
a="$(mktemp)" b="$(mktemp)"
timed /dev/null "$WORK/n$small"
timed /dev/null "$WORK/n$large"
for ((r = 0; r < RUNS; r++)); do
  timed "$a" "$WORK/n$small"
  timed "$b" "$WORK/n$large"
done
python3 - "$small" "$large" "$a" "$b" <<'PY'
import statistics as st, sys
small, large, fa, fb = sys.argv[1:5]
load = lambda f: [tuple(float(x) for x in l.split()) for l in open(f) if l.strip()]
a, b = load(fa), load(fb)
for n, runs in ((small, a), (large, b)):
    print(f"  {n:>8} records: wall {st.median(r[0] for r in runs) * 1000:.2f} ms, peak {st.median(r[1] for r in runs) / 1024:.1f} MiB")
print(f"  large/small: wall {st.median(y[0] / x[0] for x, y in zip(a, b) if x[0] > 0):.3f}, "
      f"peak {st.median(y[1] / x[1] for x, y in zip(a, b)):.3f} (median of {len(a)} pairs)")
PY
rm -f "$a" "$b"
