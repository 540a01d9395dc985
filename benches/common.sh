# Sourced by the whole-process bench scripts (not run on its own): the
# binary they time and a private git identity, set up once here.

# Sets NOMA to an absolute path: $NOMA if set, else the release build under
# $CARGO_TARGET_DIR (or target/), built first when missing.
bench_noma() {
  local here target
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  target="${CARGO_TARGET_DIR:-$here/target}"
  NOMA="${NOMA:-$target/release/noma}"
  if [[ ! -x "$NOMA" ]]; then
    (cd "$here" && cargo build --release --quiet)
  fi
  NOMA="$(cd "$(dirname "$NOMA")" && pwd)/$(basename "$NOMA")"
}

# Prints the absolute path of the synthetic document generator
# (examples/synth.rs: `synth N` prints a document of N sections), built
# first when missing; the shipped binary has no generator.
bench_synth() {
  local here target
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  target="${CARGO_TARGET_DIR:-$here/target}"
  case "$target" in /*) ;; *) target="$here/$target" ;; esac
  if [[ ! -x "$target/release/examples/synth" ]]; then
    (cd "$here" && cargo build --release --quiet --example synth) >&2
  fi
  echo "$target/release/examples/synth"
}

# Points HOME at DIR/.home with a git identity of its own and no system
# git configuration, so the user's settings (hooks, signing) stay out.
bench_home() {
  export GIT_CONFIG_NOSYSTEM=1
  export HOME="$1/.home"
  mkdir -p "$HOME"
  git config --global user.name bench
  git config --global user.email bench@example.com
  git config --global init.defaultBranch main
}

# timed FILE CMD...: runs CMD once under /usr/bin/time and appends
# "wall_s peak_kib" to FILE; a failing run stops the script.
timed() {
  local out="$1"
  shift
  local t
  t="$(mktemp)"
  if ! /usr/bin/time -f '%e %M' -o "$t" "$@" >/dev/null 2>"$t.err"; then
    echo "failed: $*" >&2
    cat "$t.err" >&2
    exit 1
  fi
  cat "$t" >>"$out"
  rm -f "$t" "$t.err"
}

# bench_pair RUNS A B: the shell commands A and B (run by `sh -c`) in turn,
# one untimed run of each first, then RUNS timed runs of each, A B A B ...,
# each under benches/rusage.py (getrusage: microsecond CPU). Prints each one's median wall and CPU seconds
# and peak resident memory (its largest process), and the medians of the
# ratios A/B taken pair by pair (a slow phase of the machine hits both).
# Output of the commands is thrown away; a failing run stops the script.
bench_pair() {
  local runs=$1 a=$2 b=$3 t i side cmd rusage
  rusage="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/rusage.py"
  t="$(mktemp -d)"
  for cmd in "$a" "$b"; do
    sh -c "$cmd" >/dev/null 2>"$t/err" || { echo "failed: $cmd" >&2; cat "$t/err" >&2; return 1; }
  done
  for ((i = 0; i < runs; i++)); do
    for side in a b; do
      [[ $side == a ]] && cmd=$a || cmd=$b
      python3 "$rusage" "$t/$side" "$cmd" >/dev/null 2>"$t/err" ||
        { echo "failed: $cmd" >&2; cat "$t/err" >&2; return 1; }
    done
    echo "$(cat "$t/a") $(cat "$t/b")" >>"$t/pairs"
  done
  awk '
    function median(v, n,   i, j, x) {
      for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j > 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { n++; aw[n] = $1; ac[n] = $2 + $3; am[n] = $4 / 1024; bw[n] = $5; bc[n] = $6 + $7; bm[n] = $8 / 1024
      rw[n] = $5 > 0 ? $1 / $5 : 0; rc[n] = ($6 + $7) > 0 ? ($2 + $3) / ($6 + $7) : 0 }
    END {
      printf "  A: wall %.3f s, cpu %.4f s, peak %.1f MiB (medians of %d)\n", median(aw, n), median(ac, n), median(am, n), n
      printf "  B: wall %.3f s, cpu %.4f s, peak %.1f MiB\n", median(bw, n), median(bc, n), median(bm, n)
      printf "  A/B pair by pair: wall %.3f, cpu %.3f (medians)\n", median(rw, n), median(rc, n)
    }' "$t/pairs"
  rm -rf "$t"
}
