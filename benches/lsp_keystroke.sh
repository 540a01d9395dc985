#!/usr/bin/env bash
# Diagnostics after one keystroke on a 10,000-section document: `noma lsp`
# (A, release build) against the reference's language server (B), time from
# didChange to publishDiagnostics, rounds alternating A B A B, and each
# server's peak RSS. Optional; needs a built reference checkout at $NOMA_REF
# (node_modules/ and dist/), Node >= 20 and Python 3. Results: the section
# "Language server keystroke" of docs/performance.md.
#
#   NOMA_REF=/tmp/noma-ref benches/lsp_keystroke.sh [--rounds 5] [--edits 20] [--sections 10000]
#       [--records N] [--hover-history N --commits C]
#
# --records N: the document is in a git repository with a transcript of N
# `update_attribute` records (made by `noma patch --inplace --ops`, 1,000 a
# request, committed without the hook); both servers run in it.
# --hover-history N --commits C: `noma lsp` only (no reference needed): a
# 20-section document whose transcript has N records over C commits; each
# round removes the block cache, opens the document, sends a hover on a
# block id (its history cold) and types at once; the keystrokes' times and
# when the hover was answered are printed.
#
# Our side is $NOMA, or target/release/noma (built first).
set -euo pipefail
project="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tests/differential/common.sh
source "$project/tests/differential/common.sh"
root="$project"  # common.sh sets it for scripts in tests/differential

ref="${NOMA_REF:-}"
hover_history=0
for a in "$@"; do [[ "$a" == --hover-history ]] && hover_history=1; done
if [[ $hover_history == 0 ]] && [[ -z "$ref" || ! -f "$ref/packages/lsp-server/src/index.ts" || ! -d "$ref/node_modules/vscode-languageserver" || ! -f "$ref/dist/index.js" ]]; then
  echo "skipped: no reference (set NOMA_REF to a built reference checkout: npm ci --ignore-scripts && npx tsc)"
  exit 0
fi
require_tools node python3

sections=10000
records=0
commits=1
history_records=0
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sections) sections="$2"; shift 2 ;;
    --records) records="$2"; shift 2 ;;
    --hover-history) history_records="$2"; shift 2 ;;
    --commits) commits="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

# records_in DIR DOC N COMMITS IDS: appends N update_attribute records on
# claim-0 .. claim-(IDS-1) to DIR/DOC's transcript, over COMMITS commits.
records_in() {
  local dir="$1" doc="$2" n="$3" c="$4" ids="$5" per done k
  per=$(((n + c - 1) / c))
  for ((done = 0; done < n; done += per)); do
    k=$((n - done < per ? n - done : per))
    python3 - "$dir/ops.json" "$done" "$k" "$ids" <<'PY'
import json, sys
f, first, n, ids = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ops = [{"op": "update_attribute", "id": f"claim-{g % ids}", "key": "confidence",
        "value": (g % 997) / 1000 + 0.0001} for g in range(first, first + n)]
json.dump(ops, open(f, "w"))
PY
    (cd "$dir" && "$noma" patch "$doc" --inplace --ops ops.json >/dev/null && rm ops.json &&
      git add "$doc" "$doc.patches" && git commit -qm "records to $((done + k))" --no-verify)
  done
}

# A repository of its own, with a git identity and no user settings.
new_repo() {
  mkdir -p "$1"
  (cd "$1" && git init -q && git config user.name bench && git config user.email bench@example.com)
  export GIT_CONFIG_NOSYSTEM=1
}

noma="${NOMA:-}"
if [[ -z "$noma" ]]; then
  (cd "$root" && cargo build --release --quiet)
  noma="${CARGO_TARGET_DIR:-$root/target}/release/noma"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
synth="$(source "$root/benches/common.sh" && bench_synth)"
if ((history_records > 0)); then
  new_repo "$work/doc"
  "$synth" 20 > "$work/doc/small.noma"
  (cd "$work/doc" && git add small.noma && git commit -qm document --no-verify)
  records_in "$work/doc" small.noma "$history_records" "$commits" 20
  echo "$(wc -l < "$work/doc/small.noma.patches") records over $commits commits"
  # On the id of claim-3 (its heading line).
  at="$(grep -n '^::claim{id="claim-3"' "$work/doc/small.noma" | cut -d: -f1)"
  python3 "$root/benches/lsp_keystroke.py" --a "$noma lsp" --doc "$work/doc/small.noma" \
    --cwd "$work/doc" --reset "rm -rf '$work/doc/.noma/cache'" --hover "$((at - 1)):14" "${args[@]}"
  exit 0
fi
build_ref_lsp "$ref" "$work"
cwd=()
if ((records > 0)); then
  new_repo "$work/doc"
  "$synth" "$sections" > "$work/doc/big.noma"
  (cd "$work/doc" && git add big.noma && git commit -qm document --no-verify)
  records_in "$work/doc" big.noma "$records" $(((records + 999) / 1000)) "$sections"
  echo "$(wc -l < "$work/doc/big.noma.patches") records"
  cwd=(--cwd "$work/doc")
else
  # Outside any repository: the document has no transcript to guard.
  mkdir "$work/doc"
  "$synth" "$sections" > "$work/doc/big.noma"
fi
python3 "$root/benches/lsp_keystroke.py" --a "$noma lsp" \
  --b "node $work/dist/index.js --stdio" --doc "$work/doc/big.noma" "${cwd[@]}" "${args[@]}"
