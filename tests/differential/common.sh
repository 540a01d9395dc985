# Shared by the optional differential and SDK scripts (sourced, not run):
# where the project is, and which `noma` binary is our side.
#
#   require_tools TOOL...   prints "skipped: no TOOL" and exits 0 when one is missing
#   our_noma                prints the absolute path of $NOMA, or of
#                           target/debug/noma (under $CARGO_TARGET_DIR when
#                           set), built first when missing
#   write_mcp_stub OUT NOMA ROOT
#                           writes an ES-module server stub at OUT that runs
#                           `NOMA mcp --root ROOT` (the SDKs pass the server
#                           a filtered environment, so the paths are baked
#                           in; they parse the text content as JSON, which
#                           every result's text is)

here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

require_tools() {
  local tool
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "skipped: no $tool"
      exit 0
    fi
  done
}

our_noma() {
  local noma="${NOMA:-}"
  if [[ -z "$noma" ]]; then
    noma="${CARGO_TARGET_DIR:-$root/target}/debug/noma"
    if [[ ! -x "$noma" ]]; then
      (cd "$root" && cargo build --quiet)
    fi
  fi
  echo "$(cd "$(dirname "$noma")" && pwd)/$(basename "$noma")"
}

write_mcp_stub() {
  node -e '
const [out, noma, root] = process.argv.slice(1);
require("fs").writeFileSync(out,
`import { spawn } from "node:child_process";
const child = spawn(${JSON.stringify(noma)}, ["mcp", "--root", ${JSON.stringify(root)}], { stdio: "inherit" });
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(s, () => child.kill(s));
child.on("error", (e) => { console.error("noma-mcp stub: " + e.message); process.exit(127); });
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
`);' "$1" "$2" "$3"
}

# build_ref_lsp REF OUT
#                           compiles the reference's language server
#                           (REF/packages/lsp-server) into OUT/dist with the
#                           reference's own tsc, writing nothing under REF
#                           (OUT/node_modules links to REF's)
build_ref_lsp() {
  local ref="$1" out="$2"
  ln -sfn "$ref/node_modules" "$out/node_modules"
  (cd "$ref" && node node_modules/typescript/bin/tsc -p packages/lsp-server \
    --outDir "$out/dist" --declarationDir "$out/dist" --sourceMap false) >&2
}
