#!/usr/bin/env bash
# benches/mcp_read_doc.sh — MCP `read_doc` per call, `noma mcp` (A) against
# the reference's MCP server (B), on a ~270 KB document with a transcript.
#
# Usage: benches/mcp_read_doc.sh [REVISION ...]   (default: 2025-06-18)
#   NOMA=path      the binary (default: $CARGO_TARGET_DIR/release/noma, built if missing)
#   REF_MCP=path   the reference server's entry point (default:
#                  /tmp/chainless-ref/packages/mcp-server/dist/index.js, run with node)
#   B='command'    server B instead of the reference (e.g. another noma: 'noma-old mcp')
#   SECTIONS=k     `synth k` (default 918: 270 KB)
#   CALLS=n        timed rounds (default 40), after one untimed call per server
#   WORK=dir       where the repository goes (default: a new temporary directory)
#
# The document is `synth $SECTIONS`, committed, then given a
# transcript of 3 records by `noma patch --inplace` (read_doc's
# unrecorded_edit check then reads a real transcript), committed again.
# benches/mcp_read_doc.py is the client: one plain JSON-RPC stdio client for
# both servers, which initializes each with the REVISION asked for and times
# each call from its request's write to its decoded answer, A and B
# alternating per round; it prints the median per-round ratio A/B.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
SYNTH="$(bench_synth)"
REF_MCP="${REF_MCP:-/tmp/chainless-ref/packages/mcp-server/dist/index.js}"
SECTIONS="${SECTIONS:-918}"
CALLS="${CALLS:-40}"
revisions=("$@")
[[ ${#revisions[@]} -eq 0 ]] && revisions=(2025-06-18)
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
bench_home "$WORK"

repo="$WORK/repo"
rm -rf "$repo"
mkdir -p "$repo"
cd "$repo"
git init -q
"$SYNTH" "$SECTIONS" >doc.noma
git add doc.noma
git commit -qm doc
for i in 1 2 3; do
  "$NOMA" patch doc.noma --inplace \
    --op "{\"op\":\"update_attribute\",\"id\":\"claim-$i\",\"key\":\"confidence\",\"value\":0.$i}" >/dev/null
done
git add -A
git commit -qm patched
echo "document: $(wc -c <doc.noma) bytes, transcript: $(wc -l <doc.noma.patches) records"

a="$NOMA mcp --root $repo"
b="${B:-node $REF_MCP}"
for rev in "${revisions[@]}"; do
  echo "== revision $rev: A = $a; B = $b"
  python3 "$here/benches/mcp_read_doc.py" --file "$repo/doc.noma" \
    --calls "$CALLS" --version "$rev" --a "$a" --b "$b" --cwd "$repo"
done
