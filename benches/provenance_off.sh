#!/usr/bin/env bash
# What provenance costs where it is off (not a test): `noma patch --inplace`
# of one op on the ~3 MB document and `noma hook pre-commit` with 10 staged
# documents and transcripts, in a repository without a `provenance:`
# section and with no key configured, for two binaries side by side
# (alternating run by run, CPU seconds, the ratio taken pair by pair).
#
#   bash benches/provenance_off.sh NEW_BIN OLD_BIN [RUNS]
set -euo pipefail
new=$(realpath "$1")
old=$(realpath "$2")
runs=${3:-20}
synth=$(source "$(dirname "${BASH_SOURCE[0]}")/common.sh" && bench_synth)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$work/home"
unset NOMA_SIGNING_KEY
mkdir -p "$HOME"
cd "$work"
git -c init.defaultBranch=main init -q repo
cd repo
git config user.name b && git config user.email b@example.com && git config commit.gpgsign false
"$new" init --no-mcp >/dev/null
"$synth" 10000 >big.noma
for i in $(seq 10); do
  "$synth" 5 >"d$i.noma"
  "$new" patch "d$i.noma" --inplace --op '{"op":"update_attribute","id":"claim-1","key":"confidence","value":0.3}' >/dev/null
done
git add -A && git commit -q -m base
for i in $(seq 10); do
  "$new" patch "d$i.noma" --inplace --op '{"op":"update_attribute","id":"claim-2","key":"confidence","value":0.4}' >/dev/null
done
git add -A
"$new" hook pre-commit >/dev/null 2>&1 && "$old" hook pre-commit >/dev/null 2>&1 ||
  { echo "the hook does not pass; not timing it" >&2; exit 1; }
cpu() { # cpu CMD...: one run's user+sys CPU seconds
  /usr/bin/time -f "%U %S" -o "$work/t" "$@" >/dev/null 2>&1 || true
  awk '{printf "%.4f\n", $1 + $2}' "$work/t"
}
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
pairs() { # pairs NAME ARGS...: A = new, B = old, alternating
  local name=$1 a b
  shift
  : >"$work/pairs"
  for _ in $(seq "$runs"); do
    a=$(cpu "$new" "$@") b=$(cpu "$old" "$@")
    echo "$a $b" >>"$work/pairs"
  done
  echo "== $name: medians of $runs pairs, new $(awk '{print $1}' "$work/pairs" | median) s," \
    "old $(awk '{print $2}' "$work/pairs" | median) s," \
    "new/old $(awk '{printf "%.3f\n", $1 / $2}' "$work/pairs" | median)"
}
pairs "noma hook pre-commit, 10 staged documents" hook pre-commit
op='{"op":"update_attribute","id":"claim-5000","key":"confidence","value":0.5}'
pairs "noma patch --inplace, one op on $(wc -c <big.noma) bytes" patch big.noma --inplace --op "$op"
