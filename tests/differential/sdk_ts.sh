#!/usr/bin/env bash
# The reference TypeScript agent SDK's own suite (packages/agent-sdk) run
# against `noma mcp` instead of the reference MCP server (optional; never run
# in CI). See tests/differential/README.md, "Agent SDK suites".
#
#   NOMA_REF=/tmp/noma-ref tests/differential/sdk_ts.sh [--keep]
#
# NOMA_REF is either a built reference checkout (with node_modules/, as for
# run.sh) or any git repository of the reference (then it is cloned and
# `npm ci --ignore-scripts` runs in the copy). NOMA_REF itself is never
# modified: everything happens in a temporary copy.
#
# The only thing swapped is the server command. The SDK starts the server as
# `node <bin of @ferax564/noma-mcp-server>`; in the copy that package is
# replaced by a stub whose bin execs `$NOMA mcp --root <copy>`. The copy is
# the served workspace (a git repository), and the suite's scratch files go
# under it (TMPDIR=<copy>/.sdk-tmp), since `noma mcp` confines every path to
# its root. The suite's own pretest (building the reference server) is
# skipped; the two reference demos that produce its baselines are run.
#
# Our side is $NOMA, or target/debug/noma (under $CARGO_TARGET_DIR when set),
# built first when missing. Prints the suite's counts; exits with the
# suite's status, or 0 with "skipped: ..." when something is unavailable.
set -euo pipefail
# shellcheck source=tests/differential/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

keep=0
[[ "${1:-}" == "--keep" ]] && keep=1

require_tools node npm git
ref="${NOMA_REF:-}"
if [[ -z "$ref" || ! -d "$ref" ]]; then
  echo "skipped: no reference (set NOMA_REF to a reference checkout or git repository)"
  exit 0
fi
if [[ ! -d "$ref/packages/agent-sdk/test" ]] && ! git -C "$ref" cat-file -e HEAD:packages/agent-sdk/package.json 2>/dev/null; then
  echo "skipped: $ref has no packages/agent-sdk"
  exit 0
fi

noma="$(our_noma)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/noma-sdk-ts.XXXXXX")"
if [[ $keep == 0 ]]; then
  trap 'rm -rf "$tmp"' EXIT
else
  echo "keeping $tmp"
fi
copy="$tmp/ref"

if [[ -d "$ref/node_modules/@modelcontextprotocol" ]]; then
  cp -a "$ref" "$copy"
else
  git clone --quiet "$ref" "$copy"
  echo "npm ci --ignore-scripts in $copy ..."
  (cd "$copy" && npm ci --ignore-scripts --no-audit --no-fund >"$tmp/npm-ci.log" 2>&1) || {
    echo "skipped: npm ci failed (see $tmp/npm-ci.log)"
    trap - EXIT
    exit 0
  }
fi
if [[ ! -x "$copy/node_modules/.bin/tsx" ]]; then
  echo "skipped: the reference copy has no tsx (npm ci incomplete)"
  exit 0
fi
if [[ ! -d "$copy/.git" ]]; then
  git -C "$copy" init --quiet
fi
ref_commit="$(git -C "$copy" rev-parse --short HEAD 2>/dev/null || echo unknown)"

# The swap: @ferax564/noma-mcp-server becomes a stub whose bin runs noma.
stub="$copy/node_modules/@ferax564/noma-mcp-server"
rm -rf "$stub"
mkdir -p "$stub"
cat >"$stub/package.json" <<'EOF'
{ "name": "@ferax564/noma-mcp-server", "version": "0.0.0-noma", "type": "module",
  "bin": { "noma-mcp-server": "noma-mcp.mjs" } }
EOF
write_mcp_stub "$stub/noma-mcp.mjs" "$noma" "$copy"

mkdir -p "$copy/.sdk-tmp"
echo "reference $ref_commit, server: $noma mcp --root $copy"

# Baselines of integration.test.ts: the reference's own demos (engine only).
(cd "$copy" && ./node_modules/.bin/tsx scripts/agent-stale-memo.ts >"$tmp/demo.log" 2>&1 &&
  ./node_modules/.bin/tsx scripts/agent-memory-demo.ts >>"$tmp/demo.log" 2>&1) || {
  echo "warning: the reference demos failed (see $tmp/demo.log); integration.test.ts will fail"
  trap - EXIT
}

set +e
(cd "$copy/packages/agent-sdk" &&
  TMPDIR="$copy/.sdk-tmp" "$copy/node_modules/.bin/tsx" --test test/*.test.ts) >"$tmp/suite.log" 2>&1
status=$?
set -e

grep -E '^not ok|^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms)' "$tmp/suite.log" || true
if [[ $status != 0 ]]; then
  echo "--- failures (full log: $tmp/suite.log) ---"
  grep -nE -A25 '^not ok' "$tmp/suite.log" | head -200 || true
  trap - EXIT
fi
pass="$(sed -n 's/^# pass //p' "$tmp/suite.log" | tail -1)"
tests="$(sed -n 's/^# tests //p' "$tmp/suite.log" | tail -1)"
echo "agent-sdk (TypeScript) against noma mcp: ${pass:-?}/${tests:-?} passed (reference $ref_commit)"
exit $status
