#!/usr/bin/env bash
# The size of .noma/allowed_signers (not a test): `noma replay
# --signatures` of a transcript of 50 signed records, with an
# allowed-signers file of N lines and one of 2N lines (distinct Ed25519
# keys; the signing key's line first, the rest made up), the two run
# alternately, RUNS pairs. Prints each side's median CPU time (user + sys,
# from getrusage: on a shared, loaded machine wall time mostly measures the
# wait for a core) and the median of the pair-by-pair ratios (2N over
# N); a check linear in the file's size stays near 2. With LARGE set, then
# times one run with a LARGE-line file (CPU and wall).
#
#   bash benches/signers_scale.sh [N] [RUNS] [BIN] [LARGE]
#
# BIN defaults to the release binary (built if needed). Needs ssh-keygen
# and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
runs=${2:-11}
bin=${3:-}
large=${4:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-target}/release/noma
fi
bin=$(realpath "$bin")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The work dirs are no repository: the key's principal comes from the
# environment and replay --signatures trusts <dir>/.noma/allowed_signers.
ssh-keygen -q -t ed25519 -N "" -C bench -f "$work/key"
# signers LINES DIR: the signing key's line, then LINES - 1 other keys.
signers() {
  mkdir -p "$2/.noma"
  python3 - "$1" "$2/.noma/allowed_signers" "$(cat "$work/key.pub")" <<'PY'
import base64, os, struct, sys
lines, path, own = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = [f'bench@example.com namespaces="noma" {own}']
for i in range(lines - 1):
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + os.urandom(32)
    key = base64.b64encode(blob).decode()
    out.append(f'user{i}@example.com namespaces="noma" ssh-ed25519 {key}')
open(path, "w").write("\n".join(out) + "\n")
PY
}
printf '# Plan\n\n::claim{id="c1" confidence=0.5}\nOne.\n::\n' >"$work/start.noma"
python3 - "$work/ops.json" <<'PY'
import json, sys
ops = [{"op": "update_attribute", "id": "c1", "key": "confidence", "value": (i + 1) / 100} for i in range(50)]
json.dump(ops, open(sys.argv[1], "w"))
PY
# fixture DIR LINES: the signed document and an allowed-signers file.
fixture() {
  mkdir -p "$1"
  cp "$work/start.noma" "$1/plan.noma"
  signers "$2" "$1"
  NOMA_SIGNING_PRINCIPAL=bench@example.com \
    "$bin" patch "$1/plan.noma" --inplace --ops "$work/ops.json" --key "$work/key" >/dev/null
  # One checked run: the timing loop ignores exit codes.
  "$bin" replay "$1/plan.noma" --base "$work/start.noma" --signatures >"$1/out.txt" ||
    { echo "replay --signatures failed ($2 lines):" >&2; tail -5 "$1/out.txt" >&2; exit 1; }
  [ "$(grep -c "signed by bench@example.com" "$1/out.txt")" -ge 50 ] ||
    { echo "fewer than 50 signed records ($2 lines)" >&2; exit 1; }
}
fixture "$work/one" "$n"
fixture "$work/two" "$((2 * n))"
cpu() { # cpu DIR: one run's user+sys CPU seconds (getrusage, finer than
  # /usr/bin/time's 10 ms); the wall seconds in $work/wall
  python3 - "$work/wall" "$bin" replay "$1/plan.noma" --base "$work/start.noma" --signatures <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open(sys.argv[1], "w").write(f"{time.monotonic() - t:.3f}\n")
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.4f}")
PY
}
: >"$work/pairs"
for _ in $(seq "$runs"); do
  a=$(cpu "$work/one") b=$(cpu "$work/two")
  echo "$a $b" >>"$work/pairs"
done
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "replay --signatures, 50 signed records, CPU seconds, medians of $runs alternating pairs:"
echo "  $n lines:        $(awk '{print $1}' "$work/pairs" | median)"
echo "  $((2 * n)) lines:        $(awk '{print $2}' "$work/pairs" | median)"
echo "  ratio (pair by pair): $(awk '{printf "%.3f\n", $2 / $1}' "$work/pairs" | median)"
if [ -n "$large" ]; then
  fixture "$work/large" "$large"
  c=$(cpu "$work/large")
  echo "  $large lines, one run: $c s CPU, $(cat "$work/wall") s wall"
fi
