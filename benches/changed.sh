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
  cd /
  [[ "${KEEP:-0}" == 1 ]] && echo "  kept $repo" || rm -rf "$repo"
done
