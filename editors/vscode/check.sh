#!/usr/bin/env bash
# Tests and packages the VS Code extension: the grammar's fixtures
# (test/*.test.noma) with vscode-tmgrammar-test, the client's unit tests
# (test/*.test.js) with node --test, then `vsce package` (never publish).
#
# Runs on a copy under target/tools/vscode, where the pinned npm tools are
# installed with `npm ci` once per package-lock.json: later runs skip the
# install (most of a cold run's time) and this directory stays free of
# node_modules. Needs Node.js 20+ and npm.
#
# Usage: editors/vscode/check.sh [OUT.vsix]   (default target/tools/vscode/noma-vscode.vsix)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "editors/vscode/check.sh: $tool is not on PATH (the extension's checks need Node.js 20+ and npm)" >&2
    exit 2
  fi
done

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
stage="$target/tools/vscode"
out="${1:-$stage/noma-vscode.vsix}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
mkdir -p "$stage"

# The sources, fresh each run (a file removed here must not linger there);
# the installed tools and the lockfile they came from stay.
find "$stage" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
tar -C "$here" --exclude=./node_modules --exclude='*.vsix' -cf - . | tar -C "$stage" -xf -
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$stage/"

cd "$stage"
if [ ! -d node_modules ] || ! cmp -s package-lock.json node_modules/.noma-installed-lock; then
  echo "== npm ci (pinned by editors/vscode/package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.noma-installed-lock
fi

echo "== node --test test/*.test.js (the client's settings)"
node --test test/*.test.js

echo "== vscode-tmgrammar-test (test/*.test.noma)"
# The frontmatter embeds VS Code's YAML grammar, absent here: the tool says
# so on stderr, and the fixtures check the grammar's own YAML-key fallback.
node_modules/.bin/vscode-tmgrammar-test -g syntaxes/noma.tmLanguage.json 'test/*.test.noma'

echo "== vsce package"
node_modules/.bin/vsce package --allow-missing-repository --skip-license --out "$out"
echo "packaged $out"
