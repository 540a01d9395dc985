#!/usr/bin/env bash
# benches/changed.sh — how long `noma changed --base main --format json` takes.
#
# Usage: benches/changed.sh [N ...]          (default: 10000 100000)
#   NOMA=path/to/noma   binary to use (default: target/release/noma, built if missing;
#                       honours CARGO_TARGET_DIR)
#   CHANGED=K           documents changed on the branch (default 50)
#   RUNS=R              timed runs / rounds (default 21)
#   WARM=W              untimed MCP calls per server first (default 5)
#   MODES="..."         MCP scenarios to run (default: idle edit add status)
#   KEEP=1              keep the temporary repositories.
#
# For each N it writes N small documents (~0.5 KB, a section with four claims)
# straight to disk, commits them on `main` in one `git add -A && git commit`,
# branches, then changes CHANGED documents (one claim edited, one added, one
# removed): half committed on the branch, half left as unstaged edits. It times
# the whole `noma changed` process warm (one untimed run first fills the block
# cache), prints the median and the answer's size in bytes.
# It then times the MCP tool `get_changed_blocks` on a running, warmed
# `noma mcp` side by side with `git status --porcelain` (see below).
# Targets: the CLI under 100 ms warm at 10k, an answer whose size follows
# the changed blocks, not N; the watched server at most 0.2x `git status`
# at 100k documents.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
CHANGED="${CHANGED:-50}"
RUNS="${RUNS:-21}"
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(10000 100000)

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
  # The same query as the MCP tool an agent calls, on a running, warmed
  # server, side by side with `git status --porcelain` in the same
  # repository: one client starts `noma mcp` (watched, the default) and a
  # second one with NOMA_MCP_WATCH=0 (every call scans, as before the
  # watcher), warms both with WARM calls, then RUNS rounds; each round times,
  # in turn, one `git status --porcelain` process (spawn to exit), one call
  # on each server (request written to answer read). Rounds alternate, so
  # drift hits all three alike; the ratios are taken round by round and
  # their median printed. Mode "edit": before each round one changed
  # document is rewritten (the server must take in a new event); mode
  # "idle": nothing changes between calls; mode "add": the document is
  # rewritten and `git add`ed before each round (untimed), so git's index
  # changes by one entry, which the watched server follows entry by entry.
  # In these three `git status` runs with --no-optional-locks: it scans the
  # same, but does not rewrite the index. Mode "status": before each round
  # an unchanged document's modification time moves (untimed), and the
  # timed reference is a plain `git status --porcelain`, which refreshes
  # that entry's stat data and rewrites the index (as editors and shell
  # prompts do); the rounds in which it did are counted.
  for mode in ${MODES:-idle edit add status}; do
    python3 - "$NOMA" "$RUNS" "$mode" "$(( (CHANGED - 1) * (n / CHANGED) ))" <<'PY'
import json, os, statistics, subprocess, sys, time
noma, runs, mode, k = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
warm = int(os.environ.get("WARM", "5"))
class Server:
    def __init__(self, watch):
        env = dict(os.environ, NOMA_MCP_WATCH=watch)
        self.p = subprocess.Popen([noma, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env)
        self.i = 0
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "0"}})
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    def ask(self, method, params):
        self.i += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.i, "method": method, "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.i:
                return m
    def call(self):
        t = time.perf_counter()
        m = self.ask("tools/call", {"name": "get_changed_blocks", "arguments": {"base_branch": "main"}})
        dt = (time.perf_counter() - t) * 1000
        assert not m["result"].get("isError"), m
        # The answer's body is structuredContent; the text content may be
        # only a summary of it.
        body = m["result"].get("structuredContent")
        if body is None:
            body = json.loads(m["result"]["content"][0]["text"])
        return dt, body
    def close(self):
        self.p.stdin.close(); self.p.wait()
watched, scanning = Server("1"), Server("0")
doc = f"docs/d{k // 1000}/doc{k}.noma"
original = open(doc).read()
# An unchanged document (the changed ones are multiples of N / CHANGED).
still = "docs/d0/doc1.noma"
def touch(r):
    # Keeps the document changed (and its blocks the same ones) while
    # making its bytes new each round.
    with open(doc, "w") as f:
        f.write(original.replace(f"A note on {k}.", f"A note on {k}, round {r}."))
for _ in range(warm):
    watched.call(); scanning.call()
g, w, s, rw, rs = [], [], [], [], []
status = ["git", "--no-optional-locks", "status", "--porcelain"]
rewrites = 0
for r in range(runs):
    if mode in ("edit", "add"):
        touch(r)
    if mode == "add":
        subprocess.run(["git", "add", "--", doc], check=True)
    if mode == "status":
        os.utime(still)
        status = ["git", "status", "--porcelain"]
        before = os.stat(".git/index").st_ino
    t = time.perf_counter()
    subprocess.run(status, stdout=subprocess.DEVNULL, check=True)
    gt = (time.perf_counter() - t) * 1000
    if mode == "status":
        rewrites += os.stat(".git/index").st_ino != before
    wt, wa = watched.call()
    st, sa = scanning.call()
    assert wa["docs"] == sa["docs"], "watched and scanning servers disagree"
    g.append(gt); w.append(wt); s.append(st); rw.append(wt / gt); rs.append(st / gt)
with open(doc, "w") as f:
    f.write(original)
if mode == "add":
    subprocess.run(["git", "reset", "-q", "--", doc], check=True)
watched.close(); scanning.close()
med = statistics.median
note = f" (the index rewritten in {rewrites} of {runs} rounds)" if mode == "status" else ""
print(f"  MCP get_changed_blocks, {mode:6}, {runs} rounds: {' '.join(status[:-1])} --porcelain {med(g):.1f} ms | "
      f"watched server {med(w):.1f} ms ({med(rw):.3f}x git status) | "
      f"scanning server {med(s):.1f} ms ({med(rs):.3f}x git status){note}")
PY
  done
  cd /
  [[ "${KEEP:-0}" == 1 ]] && echo "  kept $repo" || rm -rf "$repo"
done
