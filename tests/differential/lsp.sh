#!/usr/bin/env bash
# Differential check of `noma lsp` against the reference's language server
# (optional; never run in CI). Needs a built reference checkout at $NOMA_REF
# (its node_modules/ and dist/: npm ci --ignore-scripts && npx tsc), Node >= 20
# and Python 3. See tests/differential/README.md, "Language server".
#
#   NOMA_REF=/tmp/noma-ref tests/differential/lsp.sh [--out FILE]
#
# Our side is $NOMA, or target/debug/noma (under $CARGO_TARGET_DIR when set),
# built first when missing.
set -euo pipefail
# shellcheck source=tests/differential/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ref="${NOMA_REF:-}"
if [[ -z "$ref" || ! -f "$ref/packages/lsp-server/src/index.ts" || ! -d "$ref/node_modules/vscode-languageserver" || ! -f "$ref/dist/index.js" ]]; then
  echo "skipped: no reference (set NOMA_REF to a built reference checkout: npm ci --ignore-scripts && npx tsc)"
  exit 0
fi
require_tools node python3
shared="${NOMA_SHARED:-$root/../shared}"
examples="$shared/reference/noma/examples"
if [[ ! -d "$examples" ]]; then
  echo "skipped: no examples at $examples"
  exit 0
fi

noma="$(our_noma)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
build_ref_lsp "$ref" "$work"
python3 "$here/lsp_driver.py" --noma "$noma" --ref-server "$work/dist/index.js" --examples "$examples" \
  --diagnostics-only "$shared/reference/noma/docs" --diagnostics-only "$shared/reference/noma/conformance" \
  --diagnostics-only "$root/conformance" "$@"
