#!/usr/bin/env bash
# Two noma binaries side by side on what their printer writes (not a test):
# `noma check` of the ~3 MB / 10,000-section synthetic document as JSON,
# and of a copy whose 10,000 links point nowhere (10,000 diagnostics, as
# JSON and as text), `noma parse` of it (the AST as JSON, ~tens of MB),
# and `noma hook pre-commit` with it staged. Whole-process runs under
# /usr/bin/time, alternating A B A B (bench_pair in common.sh); prints the
# medians and the median of the pair-by-pair ratios A/B.
#
#   bash benches/output_ab.sh NOMA_A NOMA_B [RUNS]
set -euo pipefail
a=$1 b=$2 runs=${3:-21}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench_home "$work"
"$(bench_synth)" 10000 >"$work/big.noma"
sed 's/\[\[claim-\([0-9]*\)\]\]/[[gone-\1]]/' "$work/big.noma" >"$work/diag.noma"
mkdir "$work/repo"
git -C "$work/repo" init -q
cp "$work/big.noma" "$work/repo/big.noma"
git -C "$work/repo" add big.noma
git -C "$work/repo" commit -qm base
sed 's/Claim number 4999 holds./Claim number 4999 holds, edited./' "$work/big.noma" >"$work/repo/big.noma"
git -C "$work/repo" add big.noma
echo "A=$a B=$b, $runs pairs each"
for what in "check big.noma --format json" "check diag.noma --format json" "check diag.noma" "parse diag.noma"; do
  echo "noma $what"
  # A check that finds errors exits 1: the status is not what is timed.
  bench_pair "$runs" "cd $work && $a $what || test \$? = 1" "cd $work && $b $what || test \$? = 1"
done
echo "noma hook pre-commit (one 3 MB document staged)"
bench_pair "$runs" "cd $work/repo && $a hook pre-commit || test \$? = 1" "cd $work/repo && $b hook pre-commit || test \$? = 1"
