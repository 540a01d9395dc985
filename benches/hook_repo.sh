#!/usr/bin/env bash
# benches/hook_repo.sh — how long `noma hook pre-commit` takes in a big repository.
#
# Usage: benches/hook_repo.sh [N ...]        (default: 1000 10000)
#   NOMA=path/to/noma   binary to use (default: target/release/noma, built if missing;
#                       honours CARGO_TARGET_DIR)
#   SAMPLE=K            at most K documents get a transcript (default 1000): making
#                       10,000 transcripts with one `noma patch` process each is slow,
#                       and the hook only ever reads the transcripts of staged documents.
#   KEEP=1              keep the temporary repositories.
#
# For each N it builds a temporary repository of N small documents (`synth 5`,
# ~1.6 KB each), gives SAMPLE of them a transcript via `noma patch
# --inplace`, commits everything in bulk (`git add -A`), then patches 10 documents
# with transcripts, stages them and times `noma hook pre-commit` with a warm cache
# (one untimed run first), 30 runs. Uses hyperfine when installed, else a `date +%s%N`
# loop; either way it prints the median.
# Target: under 50 ms, and no growth from N=1,000 to N=10,000 (the hook reads only
# the staged paths from the index and object database).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
SYNTH="$(bench_synth)"
SAMPLE="${SAMPLE:-1000}"
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(1000 10000)

export GIT_CONFIG_NOSYSTEM=1
op_for() { # $1 = claim id, $2 = body
  printf '{"op":"replace_block","id":"%s","content":"::claim{id=\\"%s\\" confidence=0.8}\\n%s\\n::"}' "$1" "$1" "$2"
}

for n in "${sizes[@]}"; do
  repo="$(mktemp -d)"
  export HOME="$repo/.home"
  mkdir -p "$HOME"
  cd "$repo"
  git -c init.defaultBranch=main init -q
  git config user.name bench
  git config user.email bench@example.com
  "$SYNTH" 5 > "$repo/.template.noma"
  t0=$(date +%s%N)
  for ((i = 0; i < n; i++)); do
    d="docs/d$((i / 1000))"
    [[ $((i % 1000)) -eq 0 ]] && mkdir -p "$d"
    cp "$repo/.template.noma" "$d/doc$i.noma"
  done
  rm "$repo/.template.noma"
  with_t=$(( n < SAMPLE ? n : SAMPLE ))
  git add -A && git commit -qm "documents" --no-verify
  for ((i = 0; i < with_t; i++)); do
    "$NOMA" patch "docs/d$((i / 1000))/doc$i.noma" --inplace --actor-kind agent \
      --actor-name bench --op "$(op_for claim-1 "Claim one, revised.")" > /dev/null
  done
  git add -A && git commit -qm "transcripts" --no-verify
  t1=$(date +%s%N)
  for ((i = 0; i < 10; i++)); do
    "$NOMA" patch "docs/d0/doc$i.noma" --inplace --actor-kind agent --actor-name bench \
      --op "$(op_for claim-0 "Claim zero, revised in the benchmark.")" > /dev/null
  done
  git add -A
  staged=$(git diff --cached --name-only | wc -l)
  "$NOMA" hook pre-commit > /dev/null 2>&1 || { echo "hook failed:"; "$NOMA" hook pre-commit; exit 1; }
  echo "== N=$n documents ($with_t with transcripts; setup $(( (t1 - t0) / 1000000 )) ms); $staged staged files"
  if command -v hyperfine > /dev/null; then
    json="$repo/.hyperfine.json"
    hyperfine --warmup 2 --runs 30 --style basic -N --export-json "$json" \
      "$NOMA hook pre-commit" 2>&1 | grep -E "Time|Range"
    median=$(grep -o '"median": *[0-9.e+-]*' "$json" | head -n 1 | sed 's/.*: *//')
    awk -v m="$median" 'BEGIN { printf "  median %.1f ms (30 runs)\n", m * 1000 }'
  else
    times=()
    for ((r = 0; r < 30; r++)); do
      s=$(date +%s%N); "$NOMA" hook pre-commit > /dev/null 2>&1; e=$(date +%s%N)
      times+=($(( (e - s) / 1000 )))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '
      { t[NR] = $1; total += $1 }
      END { printf "  mean %.1f ms, min %.1f ms, median %.1f ms (30 runs)\n",
              total / NR / 1000, t[1] / 1000, (t[15] + t[16]) / 2000 }'
  fi
  cd /
  [[ "${KEEP:-0}" == 1 ]] && echo "  kept $repo" || rm -rf "$repo"
done
