#!/usr/bin/env bash
# benches/reconcile_many.sh — the PR check of a large PR against `git diff --stat`.
#
# Usage: benches/reconcile_many.sh [DOCS [PATCHED]]     (default: 2000 1000)
#   NOMA=path/to/noma   binary to time (default: target/release/noma, built if missing;
#                       honours CARGO_TARGET_DIR)
#   NOMA_B=path/to/noma a second binary (e.g. the previous release build): then A/B
#                       pairs time NOMA against NOMA_B instead of against git
#   RUNS=R              timed pairs per mode (default 11)
#   REPO=dir            reuse (or build, when absent) the repository in dir
#   KEEP=1              keep the temporary repository
#   PACKED=1            pack the repository (`git gc`) before timing; without
#                       it the objects stay loose (automatic gc is off, so
#                       which one is timed never depends on when git ran it).
#
# It builds a repository of DOCS distinct documents (`synth 5`,
# ~1.6 KB each, the heading numbered), each given a transcript by one
# `noma patch --inplace` (a genesis record and one op), committed on `main`;
# then a branch `pr` on which PATCHED documents (every other one) get one to
# three more records through `noma patch --inplace`, committed. No `noma init`:
# provenance is off, as in a repository that has not turned it on.
#
# It then times, in alternating pairs (A B A B ...), the ratio taken pair by pair:
#   cold: A = `rm -rf .noma/cache; noma reconcile --base main --format json`
#   warm: A = `noma reconcile --base main --format json` (the cache as the previous
#         run left it)
#   B = `git diff --stat main...HEAD` (or NOMA_B's run of the same mode)
# and prints each mode's medians and the median of the pair ratios (wall time,
# and CPU time, user + system, which a machine loaded by other work disturbs
# less; both from benches/rusage.py), and the peak memory of one run of each.
# Target (issue 47): cold within 3x, warm within 2x of `git diff --stat`.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
source "$here/benches/common.sh"
bench_noma
SYNTH="$(bench_synth)"
NOMA_B="${NOMA_B:-}"
RUNS="${RUNS:-11}"
DOCS="${1:-2000}"
PATCHED="${2:-1000}"
(( PATCHED <= DOCS )) || { echo "PATCHED ($PATCHED) > DOCS ($DOCS)" >&2; exit 2; }

export GIT_CONFIG_NOSYSTEM=1

repo="${REPO:-$(mktemp -d)}"
mkdir -p "$repo"
export HOME="$repo/.home"
mkdir -p "$HOME"
cd "$repo"

op() { # $1 = claim id, $2 = body
  printf '{"op":"replace_block","id":"%s","content":"::claim{id=\\"%s\\" confidence=0.7}\\n%s\\n::"}' "$1" "$1" "$2"
}
doc() { printf 'docs/d%d/doc%d.noma' $(( $1 / 1000 )) "$1"; }

build() {
  git -c init.defaultBranch=main init -q
  git config user.name bench
  git config user.email bench@example.com
  git config gc.auto 0
  printf '.noma/cache/\n.home/\n' > .gitignore
  local tpl i n ops
  tpl="$("$SYNTH" 5)"
  for ((i = 0; i < DOCS; i++)); do
    [[ $((i % 1000)) -eq 0 ]] && mkdir -p "docs/d$((i / 1000))"
    printf '%s\n' "${tpl/\# Synthetic/# Synthetic $i}" > "$(doc "$i")"
  done
  for ((i = 0; i < DOCS; i++)); do
    "$NOMA" patch "$(doc "$i")" --inplace --actor-kind agent --actor-name bench \
      --op "$(op claim-0 "Claim zero of document $i.")" > /dev/null
  done
  git add -A && git commit -qm "documents with transcripts" --no-verify
  git checkout -q -b pr
  local stride=$(( DOCS / PATCHED ))
  for ((k = 0; k < PATCHED; k++)); do
    i=$(( k * stride ))
    ops="$(op claim-1 "Claim one of $i, on the PR.")"
    (( k % 3 >= 1 )) && ops="$ops,$(op claim-2 "Claim two of $i, on the PR.")"
    (( k % 3 >= 2 )) && ops="$ops,$(op claim-3 "Claim three of $i, on the PR.")"
    "$NOMA" patch "$(doc "$i")" --inplace --actor-kind agent --actor-name bench \
      --op "[$ops]" > /dev/null
  done
  git add -A && git commit -qm "the PR's edits" --no-verify
}

if [[ ! -d .git ]]; then
  t0=$(date +%s%N)
  build
  echo "built $repo in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
fi
git checkout -q pr
[[ -n "${PACKED:-}" ]] && git gc -q

# The check must pass and cover every patched document, or the timing means nothing.
rm -rf .noma/cache
"$NOMA" reconcile --base main --format json > "$HOME/answer.json" || {
  echo "noma reconcile failed:" >&2; head -c 2000 "$HOME/answer.json" >&2; exit 1; }
checked=$(grep -o '"path": *"[^"]*\.noma"' "$HOME/answer.json" | sort -u | wc -l)
echo "== $DOCS documents, $PATCHED patched on the PR; the check reports $checked documents," \
  "$(git diff --stat main...HEAD | tail -n 1)"

rusage="$here/benches/rusage.py"
cpu_file="$HOME/cpu"
timed() { # $@ = command; `wall user system` seconds go to $cpu_file
  # benches/rusage.py: getrusage's microsecond CPU (GNU time prints 10 ms
  # steps, a quarter of git's 40 ms) and the wall time of the command alone
  # (no shell around it).
  python3 "$rusage" "$cpu_file" -- "$@"
}
wall_us() { awk '{printf "%d", $1 * 1000000}' "$cpu_file"; }
cpu_ms() { awk '{printf "%.3f", ($2 + $3) * 1000}' "$cpu_file"; }
run_a() { # $1 = binary
  timed "$1" reconcile --base main --format json
}
run_b() {
  if [[ -n "$NOMA_B" ]]; then run_a "$NOMA_B"; else timed git diff --stat main...HEAD; fi
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}'; }

b_name="git diff --stat main...HEAD"
[[ -n "$NOMA_B" ]] && b_name="NOMA_B reconcile"
for mode in cold warm; do
  run_a "$NOMA"; run_b # untimed warm-up (OS caches; the warm mode's cache)
  as=() bs=() rs=() cs=()
  for ((r = 0; r < RUNS; r++)); do
    if [[ $mode == cold ]]; then rm -rf .noma/cache; fi
    run_a "$NOMA"; a=$(wall_us); ca=$(cpu_ms)
    if [[ $mode == cold ]]; then rm -rf .noma/cache; fi
    run_b; b=$(wall_us); cb=$(cpu_ms)
    as+=("$a") bs+=("$b") rs+=("$(ratio "$a" "$b")") cs+=("$(ratio "$ca" "$cb")")
  done
  ma=$(printf '%s\n' "${as[@]}" | median)
  mb=$(printf '%s\n' "${bs[@]}" | median)
  printf '%s: noma reconcile median %.1f ms, %s median %.1f ms; A/B wall ratio median %s (pairs: %s); CPU ratio median %s (pairs: %s)\n' \
    "$mode" "$(awk -v x="$ma" 'BEGIN {print x / 1000}')" "$b_name" \
    "$(awk -v x="$mb" 'BEGIN {print x / 1000}')" \
    "$(printf '%s\n' "${rs[@]}" | median)" "${rs[*]}" \
    "$(printf '%s\n' "${cs[@]}" | median)" "${cs[*]}"
done

if [[ -x /usr/bin/time ]]; then
  rm -rf .noma/cache
  peak() { /usr/bin/time -f %M "$@" 2>&1 > /dev/null | tail -n 1; }
  echo "peak memory: noma reconcile cold $(peak "$NOMA" reconcile --base main --format json) KiB," \
    "warm $(peak "$NOMA" reconcile --base main --format json) KiB;" \
    "git diff --stat $(peak git diff --stat main...HEAD) KiB"
fi

if [[ -z "${KEEP:-}" && -z "${REPO:-}" ]]; then
  rm -rf "$repo"
else
  echo "repository kept in $repo"
fi
