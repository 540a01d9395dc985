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
