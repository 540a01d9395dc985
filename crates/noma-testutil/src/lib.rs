//! Helpers shared by the unit tests (compiled for tests only).

use std::path::Path;

pub mod synth;

/// Runs `git` in `dir` with an isolated configuration and a fixed identity;
/// panics when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?}");
}

/// `../shared/reference` (the reference implementation's data beside this
/// repository), which a user's clone does not have. Absent, `test` is
/// skipped with a visible `SKIP` line, except in CI (`CI` set), where the
/// data must be present so that the test cannot pass vacuously (the same
/// rule as the integration tests' `common::shared_reference`).
pub fn shared_reference(test: &str) -> Option<std::path::PathBuf> {
    use std::io::Write;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {} not found; CI must provide the reference data",
        dir.display()
    );
    // Straight to the stderr handle: the test harness captures eprintln!.
    let _ = writeln!(
        std::io::stderr(),
        "SKIP {test}: ../shared/reference not found"
    );
    None
}

/// A small deterministic generator (xorshift), so a failing random test
/// names the seed that reproduces it.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}
