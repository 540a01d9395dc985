#!/usr/bin/env bash
# Differential check of `noma` against the reference engine (optional; never
# run in CI). Needs a built reference (its dist/ and node_modules/) at
# $NOMA_REF and Node >= 20. See tests/differential/README.md.
#
#   NOMA_REF=/tmp/noma-ref tests/differential/run.sh [--seed N] [--cases N] [--out FILE] [--jobs N]
#
# Our side is $NOMA, or target/debug/noma (under $CARGO_TARGET_DIR when set),
# built first when missing.
set -euo pipefail
# shellcheck source=tests/differential/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ref="${NOMA_REF:-}"
if [[ -z "$ref" || ! -f "$ref/dist/patch.js" || ! -d "$ref/node_modules/js-yaml" ]]; then
  echo "skipped: no reference (set NOMA_REF to a built reference checkout: npm ci --ignore-scripts && npx tsc)"
  exit 0
fi
require_tools node

noma="$(our_noma)"

shared="${NOMA_SHARED:-$root/../shared}"
exec node "$here/driver.mjs" --ref "$ref" --noma "$noma" --root "$root" --shared "$shared" "$@"
