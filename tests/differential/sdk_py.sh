#!/usr/bin/env bash
# The reference Python agent SDK (packages/agent-sdk-py) against `noma mcp`
# (optional; never run in CI). See tests/differential/README.md, "Agent SDK
# suites".
#
#   NOMA_REF=/tmp/noma-ref tests/differential/sdk_py.sh
#
# Needs the SDK installed in $PYTHON (default python3) with its test extras:
#   pip install "<reference>/packages/agent-sdk-py[test]" "mcp<2"
# (the SDK reads `isError` under its mcp 1.x name; under mcp 2 it never sees
# a system error) and skips (exit 0, "skipped: ...") when it is not.
#
# 1. The SDK's own tests (packages/agent-sdk-py/tests of NOMA_REF, a
#    checkout or any git repository of the reference). They start the server
#    as `node <ref>/packages/mcp-server/dist/index.js`; in a temporary copy
#    that file is a stub that execs `$NOMA mcp --root <copy>` (the copy is a
#    git repository holding the documents they read). Only the server
#    command changes. Skipped when NOMA_REF or node is missing.
# 2. tests/differential/sdk_py_test.py: a read / validate / patch round trip
#    through the SDK against `$NOMA mcp` in a temporary git repository.
#
# Our side is $NOMA, or target/debug/noma (under $CARGO_TARGET_DIR when set),
# built first when missing. Exits non-zero when a test fails.
set -euo pipefail
# shellcheck source=tests/differential/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
python="${PYTHON:-python3}"

require_tools "$python"
if ! sdk="$("$python" -c 'import noma_agent_sdk, pytest, pytest_asyncio; print(noma_agent_sdk.__file__)' 2>/dev/null)"; then
  echo "skipped: the Python agent SDK is not installed in $python (pip install \"<reference>/packages/agent-sdk-py[test]\")"
  exit 0
fi
require_tools git

noma="$(our_noma)"
export NOMA="$noma"
echo "SDK: $sdk"
echo "server: $noma mcp"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/noma-sdk-py.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
status=0

# 1. The SDK's own tests, server command swapped.
ref="${NOMA_REF:-}"
if [[ -z "$ref" || ! -d "$ref" ]]; then
  echo "own tests: skipped (set NOMA_REF to a reference checkout or git repository)"
elif ! command -v node >/dev/null 2>&1; then
  echo "own tests: skipped (no node: the SDK's tests start the server with node)"
else
  copy="$tmp/ref"
  mkdir -p "$copy"
  if git -C "$ref" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    ref_commit="$(git -C "$ref" rev-parse --short HEAD)"
    git -C "$ref" archive HEAD packages/agent-sdk-py examples | tar -x -C "$copy"
  else
    ref_commit="unknown"
    mkdir -p "$copy/packages"
    cp -a "$ref/packages/agent-sdk-py" "$copy/packages/"
    cp -a "$ref/examples" "$copy/"
  fi
  git -C "$copy" init -q
  mkdir -p "$copy/packages/mcp-server/dist"
  write_mcp_stub "$copy/packages/mcp-server/dist/index.mjs" "$noma" "$copy"
  # The tests run `node <dist/index.js>`; an ES module stub needs .mjs or a
  # package.json with "type": "module".
  printf '{ "type": "module" }\n' >"$copy/packages/mcp-server/package.json"
  mv "$copy/packages/mcp-server/dist/index.mjs" "$copy/packages/mcp-server/dist/index.js"
  echo "own tests (reference $ref_commit):"
  set +e
  (cd "$copy/packages/agent-sdk-py" && "$python" -m pytest -q -rs -p no:cacheprovider tests) 2>&1 | tail -20
  own=${PIPESTATUS[0]}
  set -e
  [[ $own == 0 ]] || status=$own
fi

# 2. The round trip.
echo "round trip (tests/differential/sdk_py_test.py):"
set +e
(cd "$tmp" && "$python" -m pytest -q -rs -p no:cacheprovider "$here/sdk_py_test.py") 2>&1 | tail -20
rt=${PIPESTATUS[0]}
set -e
[[ $rt == 0 ]] || status=$rt
exit $status
