#!/usr/bin/env bash
# Diagnostics after one keystroke on a 10,000-section document: `noma lsp`
# (A, release build) against the reference's language server (B), time from
# didChange to publishDiagnostics, rounds alternating A B A B, and each
# server's peak RSS. Optional; needs a built reference checkout at $NOMA_REF
# (node_modules/ and dist/), Node >= 20 and Python 3. Results: the section
# "Language server keystroke" of docs/performance.md.
#
#   NOMA_REF=/tmp/noma-ref benches/lsp_keystroke.sh [--rounds 5] [--edits 20] [--sections 10000]
#
# Our side is $NOMA, or target/release/noma (built first).
set -euo pipefail
project="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tests/differential/common.sh
source "$project/tests/differential/common.sh"
root="$project"  # common.sh sets it for scripts in tests/differential

ref="${NOMA_REF:-}"
if [[ -z "$ref" || ! -f "$ref/packages/lsp-server/src/index.ts" || ! -d "$ref/node_modules/vscode-languageserver" || ! -f "$ref/dist/index.js" ]]; then
  echo "skipped: no reference (set NOMA_REF to a built reference checkout: npm ci --ignore-scripts && npx tsc)"
  exit 0
fi
require_tools node python3

sections=10000
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sections) sections="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

noma="${NOMA:-}"
if [[ -z "$noma" ]]; then
  (cd "$root" && cargo build --release --quiet)
  noma="${CARGO_TARGET_DIR:-$root/target}/release/noma"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
build_ref_lsp "$ref" "$work"
# Outside any repository: the document has no transcript to guard.
mkdir "$work/doc"
"$(source "$root/benches/common.sh" && bench_synth)" "$sections" > "$work/doc/big.noma"
python3 "$root/benches/lsp_keystroke.py" --a "$noma lsp" \
  --b "node $work/dist/index.js --stdio" --doc "$work/doc/big.noma" "${args[@]}"
