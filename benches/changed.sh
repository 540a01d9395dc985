#!/usr/bin/env bash
# benches/changed.sh — how long `noma changed --base main --format json` takes.
#
# Usage: benches/changed.sh [N ...]          (default: 1000 10000)
#   NOMA=path/to/noma   binary to use (default: target/release/noma, built if missing;
#                       honours CARGO_TARGET_DIR)
#   CHANGED=K           documents changed on the branch (default 50)
#   RUNS=R              timed runs (default 21)
#   KEEP=1              keep the temporary repositories.
#
# For each N it writes N small documents (~0.5 KB, a section with four claims)
# straight to disk, commits them on `main` in one `git add -A && git commit`,
# branches, then changes CHANGED documents (one claim edited, one added, one
# removed): half committed on the branch, half left as unstaged edits. It times
# the whole `noma changed` process warm (one untimed run first fills the block
# cache), prints the median and the answer's size in bytes.
# It then times the MCP tool `get_changed_blocks` on a running `noma mcp`.
# Target: under 100 ms warm, and an answer whose size follows the changed
# blocks, not N (the same for N=1,000 and N=10,000).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$here/target}"
NOMA="${NOMA:-$target/release/noma}"
if [[ ! -x "$NOMA" ]]; then
  (cd "$here" && cargo build --release --quiet)
fi
NOMA="$(cd "$(dirname "$NOMA")" && pwd)/$(basename "$NOMA")"
CHANGED="${CHANGED:-50}"
RUNS="${RUNS:-21}"
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(1000 10000)

export GIT_CONFIG_NOSYSTEM=1

median_ms() { # stdin: one microsecond figure per line
  sort -n | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "%.1f", m/1000}'
}

time_runs() { # $@ = command; prints the median in ms
  for ((r = 0; r < RUNS; r++)); do
    s=$(date +%s%N); "$@" > /dev/null 2>&1; e=$(date +%s%N)
    echo $(( (e - s) / 1000 ))
  done | median_ms
}

for n in "${sizes[@]}"; do
  repo="$(mktemp -d)"
  export HOME="$repo/.home"
  mkdir -p "$HOME"
  cd "$repo"
  git -c init.defaultBranch=main init -q
  git config user.name bench
  git config user.email bench@example.com
  printf '.noma/cache/\n.home/\n' > .gitignore
  t0=$(date +%s%N)
  for ((i = 0; i < n; i++)); do
    d="docs/d$((i / 1000))"
    [[ $((i % 1000)) -eq 0 ]] && mkdir -p "$d"
    printf '# Document %d\n\nAbout document %d.\n\n::claim{id="c1"}\nClaim one of %d.\n::\n\n::claim{id="c2"}\nClaim two of %d.\n::\n\n::claim{id="c3"}\nClaim three of %d.\n::\n\n::note{id="n1"}\nA note on %d.\n::\n' \
      "$i" "$i" "$i" "$i" "$i" "$i" > "$d/doc$i.noma"
  done
  # Files older than the index keep git's stat cache trustworthy (no racy
  # entries to re-read on every diff).
  sleep 1.1
  git add -A && git commit -qm "documents" --no-verify
  git checkout -q -b work
  change() { # $1 = document index
    local f="docs/d$(( $1 / 1000 ))/doc$1.noma"
    sed -i -e "s/^Claim one of $1\.$/Claim one of $1, revised./" \
      -e "s/^::note{id=\"n1\"}$/::claim{id=\"c4\"}\nA new claim.\n::\n\n::note{id=\"n1\"}/" "$f"
    # Drop claim three (its three lines and the blank line after it).
    sed -i -e '/^::claim{id="c3"}$/,+3d' "$f"
  }
  half=$(( CHANGED / 2 ))
  for ((k = 0; k < half; k++)); do change $(( k * (n / CHANGED) )); done
  git commit -qam "branch edits" --no-verify
  for ((k = half; k < CHANGED; k++)); do change $(( k * (n / CHANGED) )); done
  t1=$(date +%s%N)

  "$NOMA" changed --base main --format json > "$repo/.answer.json"
  docs=$(grep -o '"path":' "$repo/.answer.json" | wc -l)
  blocks=$(grep -o '"kind":' "$repo/.answer.json" | wc -l)
  bytes=$(wc -c < "$repo/.answer.json")
  echo "== N=$n documents, $CHANGED changed (setup $(( (t1 - t0) / 1000000 )) ms)"
  echo "  answer: $docs documents, $blocks blocks, $bytes bytes"
  echo "  noma changed --base main --format json: median $(time_runs "$NOMA" changed --base main --format json) ms ($RUNS runs, warm)"
  echo "  noma changed --base main --docs:        median $(time_runs "$NOMA" changed --base main --docs) ms"
  echo "  git status --porcelain (reference):     median $(time_runs git status --porcelain) ms"
  # The same query as the MCP tool an agent calls, on a running server:
  # one initialize, then RUNS calls of get_changed_blocks, each timed from
  # request written to answer read.
  python3 - "$NOMA" "$RUNS" <<'PY'
import json, subprocess, sys, time
noma, runs = sys.argv[1], int(sys.argv[2])
p = subprocess.Popen([noma, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
def send(msg):
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
def answer(i):
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i:
            return m
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
answer(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
times, size = [], 0
for i in range(1, runs + 2):
    t = time.perf_counter()
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
          "params": {"name": "get_changed_blocks", "arguments": {"base_branch": "main"}}})
    m = answer(i)
    if i > 1:  # the first call warms the server
        times.append((time.perf_counter() - t) * 1000)
    assert not m["result"].get("isError"), m
    size = len(m["result"]["content"][0]["text"])
p.stdin.close(); p.wait()
times.sort()
print(f"  MCP get_changed_blocks (running server): median {times[len(times) // 2]:.1f} ms ({len(times)} calls), answer {size} bytes")
PY
  cd /
  [[ "${KEEP:-0}" == 1 ]] && echo "  kept $repo" || rm -rf "$repo"
done
