#!/usr/bin/env bash
# benches/sim.sh — the team-history simulator's cost (tests/it/sim.rs): two
# builds of the `it` test binary, each running the same histories, timed in
# alternating pairs (A B A B ...) with the ratio taken pair by pair.
#
# Usage: benches/sim.sh A_BIN B_BIN [HISTORIES [PAIRS]]    (default: 8 3)
#   A_BIN, B_BIN   `it` test binaries (target/debug/deps/it-*: `cargo test
#                  --test it --no-run` prints the path), e.g. a branch's
#                  and main's; each runs the noma binary it was built with
#   THREADS=T      NOMA_SIM_THREADS (default 2)
#
# Each run is `NOMA_SIM_HISTORIES=HISTORIES BIN
# sim::random_team_histories_keep_every_invariant --include-ignored --exact` at the
# default seed, timed as a whole process by /usr/bin/time (wall, user and
# system seconds of it and its children). Prints every run, then the
# medians of A, B and of the pair ratios A/B (CPU is user + system, which
# a machine loaded by other work disturbs less than wall time).
set -euo pipefail
a=${1:?usage: benches/sim.sh A_BIN B_BIN [HISTORIES [PAIRS]]}
b=${2:?usage: benches/sim.sh A_BIN B_BIN [HISTORIES [PAIRS]]}
histories=${3:-8}
pairs=${4:-3}
threads=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # BIN OUT: appends "wall cpu" to OUT
  NOMA_SIM_HISTORIES=$histories NOMA_SIM_THREADS=$threads /usr/bin/time -f '%e %U %S' -o "$tmp/t" \
    "$1" sim::random_team_histories_keep_every_invariant --include-ignored --exact >"$tmp/log" 2>&1 ||
    { echo "$1 failed:"; tail -20 "$tmp/log"; exit 1; }
  awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' "$tmp/t" >>"$2"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$pairs"); do
  run "$a" "$tmp/a"
  run "$b" "$tmp/b"
  echo "pair $i: A $(tail -1 "$tmp/a") B $(tail -1 "$tmp/b") (wall s, cpu s)"
done
paste -d' ' "$tmp/a" "$tmp/b" | awk '{ print $1 / $3, $2 / $4 }' >"$tmp/r"
echo "median wall s: A $(cut -d' ' -f1 "$tmp/a" | median) B $(cut -d' ' -f1 "$tmp/b" | median) A/B $(cut -d' ' -f1 "$tmp/r" | median)"
echo "median cpu s:  A $(cut -d' ' -f2 "$tmp/a" | median) B $(cut -d' ' -f2 "$tmp/b" | median) A/B $(cut -d' ' -f2 "$tmp/r" | median)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
