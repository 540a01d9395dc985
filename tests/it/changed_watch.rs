//! Randomized: the MCP server's watched changed-document index
//! (`noma_git::changes::watch`) answers exactly what a full scan of the work
//! tree answers, after every step of random sequences of edits, creations,
//! deletions, renames (plain and `git mv`), directory moves and removals,
//! ignore-rule changes, `git checkout` of other branches, `git stash` /
//! `stash pop`, `git add`, `git reset` (whole or one path), commits
//! (`commit -a` too) and plain `git status` (which rewrites the index
//! with refreshed stat data), all through the real `git` CLI. A step that
//! changed only git's index (`status`, `add`, `reset`) must be answered
//! incrementally while no entry is unmerged.
//!
//! The seed is printed first (`NOMA_TEST_SEED` reruns one); cases default
//! to 24, about 12 s in the dev profile (`PROPTEST_CASES` overrides): a
//! broken rename pairing was caught by one run in three, so the pairs an
//! incremental answer must keep have their own fixed test below. A failing
//! step names the case's steps so far.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use noma_git::cache::BlockCache;
use noma_git::changes::watch::{self, Answered, WatchedChanges};
use noma_git::changes::{self, Query};
use noma_git::git::repo::Repo;

use crate::common::{run_at, text};

#[derive(Debug, Clone)]
enum Step {
    /// Rewrite one line of the `i`-th document (variant `v`).
    Edit(usize, u8),
    /// Rewrite one line of the document the last creation or rename
    /// made (a rename candidate of git's pairing, while it is one).
    EditLast(u8),
    /// A new document, in a new directory when the flag is set.
    Create(usize, bool),
    Delete(usize),
    /// Move the `i`-th document to a new name (`git mv` when set).
    Rename(usize, usize, bool),
    /// Only the modification time changes.
    Touch(usize),
    /// Move the `i`-th directory to a new name.
    MoveDir(usize),
    RemoveDir(usize),
    /// Ignore the `i`-th document through a `.gitignore` in its directory.
    Ignore(usize),
    Checkout(u8),
    Stash,
    StashPop,
    AddAll,
    AddOne(usize),
    Commit,
    /// `git commit -a`.
    CommitAll,
    /// `git reset` (mixed, every path).
    Reset,
    /// `git reset -- <path>` of the `i`-th document.
    ResetOne(usize),
    /// A plain `git status`: refreshes the index's stat data.
    Status,
}

impl Step {
    /// Whether the step changes nothing but git's index (and files no
    /// listing reads), so a call after it is answered incrementally.
    fn index_only(&self) -> bool {
        matches!(
            self,
            Step::AddAll | Step::AddOne(_) | Step::Reset | Step::ResetOne(_) | Step::Status
        )
    }
}

fn step() -> impl Strategy<Value = Step> {
    let i = 0..64usize;
    prop_oneof![
        4 => (i.clone(), any::<u8>()).prop_map(|(i, v)| Step::Edit(i, v)),
        2 => any::<u8>().prop_map(Step::EditLast),
        2 => (i.clone(), any::<bool>()).prop_map(|(i, d)| Step::Create(i, d)),
        2 => i.clone().prop_map(Step::Delete),
        2 => (i.clone(), 0..64usize, any::<bool>()).prop_map(|(i, j, g)| Step::Rename(i, j, g)),
        1 => i.clone().prop_map(Step::Touch),
        1 => i.clone().prop_map(Step::MoveDir),
        1 => i.clone().prop_map(Step::RemoveDir),
        1 => i.clone().prop_map(Step::Ignore),
        1 => (0..3u8).prop_map(Step::Checkout),
        1 => Just(Step::Stash),
        1 => Just(Step::StashPop),
        1 => Just(Step::AddAll),
        1 => i.clone().prop_map(Step::AddOne),
        1 => Just(Step::Commit),
        1 => Just(Step::CommitAll),
        1 => Just(Step::Reset),
        1 => i.prop_map(Step::ResetOne),
        2 => Just(Step::Status),
    ]
}

/// A document of `n` claims, long enough for git to pair a moved, edited
/// copy as a rename.
fn doc(tag: &str) -> String {
    let mut s = format!("# {tag}\n\n");
    for c in 0..6 {
        s.push_str(&format!(
            "::claim{{id=\"c{c}\"}}\nClaim {c} of {tag}.\n::\n\n"
        ));
    }
    s
}

fn git(dir: &Path, args: &[&str]) -> bool {
    run_at(dir, "git", args).status.success()
}

pub(crate) fn must_git(dir: &Path, args: &[&str]) {
    let o = run_at(dir, "git", args);
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
}

/// The `.noma` files of the work tree, repository-relative, sorted.
fn documents(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "noma") {
                let rel = p.strip_prefix(root).expect("inside");
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// The directories holding documents (never the root).
fn directories(root: &Path) -> Vec<String> {
    let mut dirs: Vec<String> = documents(root)
        .iter()
        .filter_map(|d| d.rsplit_once('/').map(|(dir, _)| dir.to_string()))
        .collect();
    dirs.dedup();
    dirs
}

fn pick(list: &[String], i: usize) -> Option<&String> {
    (!list.is_empty()).then(|| &list[i % list.len()])
}

/// A repository: `main` with two directories of documents; `other`
/// branches from it with an edit, a removal and a new directory; `work`
/// (checked out) with a committed edit.
fn setup(d: &Path) {
    must_git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join(".gitignore"), ".noma/cache/\n").unwrap();
    // The block cache's directory exists before the watcher starts, as in
    // a repository the server has run in before (a new directory makes
    // the next query scan).
    std::fs::create_dir_all(d.join(".noma/cache")).unwrap();
    for dir in ["a", "b"] {
        std::fs::create_dir_all(d.join(dir)).unwrap();
        for k in 0..4 {
            std::fs::write(
                d.join(format!("{dir}/d{k}.noma")),
                doc(&format!("{dir}{k}")),
            )
            .unwrap();
        }
    }
    std::fs::write(d.join("top.noma"), doc("top")).unwrap();
    must_git(d, &["add", "-A"]);
    must_git(d, &["commit", "-q", "-m", "base"]);
    must_git(d, &["checkout", "-q", "-b", "other"]);
    std::fs::write(d.join("a/d0.noma"), doc("a0").replace("Claim 1", "Other 1")).unwrap();
    std::fs::remove_file(d.join("b/d1.noma")).unwrap();
    std::fs::create_dir_all(d.join("c")).unwrap();
    std::fs::write(d.join("c/new.noma"), doc("c-new")).unwrap();
    must_git(d, &["add", "-A"]);
    must_git(d, &["commit", "-q", "-m", "other"]);
    must_git(d, &["checkout", "-q", "main"]);
    must_git(d, &["checkout", "-q", "-b", "work"]);
    std::fs::write(d.join("a/d1.noma"), doc("a1").replace("Claim 2", "Work 2")).unwrap();
    must_git(d, &["commit", "-q", "-am", "work"]);
}

/// Rewrites one claim line of `p` (or appends a note when none is left).
pub(crate) fn edit(d: &Path, p: &str, v: u8, n: usize) {
    let Ok(text) = std::fs::read_to_string(d.join(p)) else {
        return;
    };
    let line = format!("Claim {} of", v % 6);
    let edited = text.replacen(&line, &format!("Edited {v} {n}:"), 1);
    let edited = if edited == text {
        format!("{text}::note{{id=\"n{n}\"}}\nNote {n}.\n::\n")
    } else {
        edited
    };
    std::fs::write(d.join(p), edited).unwrap();
}

/// Applies one step; `last` is the path the last creation or rename made.
fn apply(d: &Path, s: &Step, serial: &mut usize, last: &mut Option<String>) {
    *serial += 1;
    let n = *serial;
    let docs = documents(d);
    let dirs = directories(d);
    match s {
        Step::Edit(i, v) => {
            if let Some(p) = pick(&docs, *i) {
                edit(d, p, *v, n);
            }
        }
        Step::EditLast(v) => {
            if let Some(p) = last.as_deref() {
                edit(d, p, *v, n);
            }
        }
        Step::Create(i, new_dir) => {
            let dir = if *new_dir {
                format!("n{n}/deep")
            } else {
                pick(&dirs, *i).cloned().unwrap_or_else(|| "a".into())
            };
            std::fs::create_dir_all(d.join(&dir)).unwrap();
            let path = format!("{dir}/x{n}.noma");
            std::fs::write(d.join(&path), doc(&format!("x{n}"))).unwrap();
            *last = Some(path);
        }
        Step::Delete(i) => {
            if let Some(p) = pick(&docs, *i) {
                let _ = std::fs::remove_file(d.join(p));
            }
        }
        Step::Rename(i, j, with_git) => {
            if let Some(p) = pick(&docs, *i) {
                let dir = pick(&dirs, *j).cloned().unwrap_or_else(|| "a".into());
                let to = format!("{dir}/r{n}.noma");
                if !*with_git || !git(d, &["mv", p, &to]) {
                    let _ = std::fs::rename(d.join(p), d.join(&to));
                }
                *last = Some(to);
            }
        }
        Step::Touch(i) => {
            if let Some(p) = pick(&docs, *i) {
                let f = std::fs::OpenOptions::new().append(true).open(d.join(p));
                if let Ok(f) = f {
                    let _ = f.set_modified(std::time::SystemTime::now());
                }
            }
        }
        Step::MoveDir(i) => {
            if let Some(dir) = pick(&dirs, *i) {
                let _ = std::fs::rename(d.join(dir), d.join(format!("m{n}")));
            }
        }
        Step::RemoveDir(i) => {
            if let Some(dir) = pick(&dirs, *i) {
                let _ = std::fs::remove_dir_all(d.join(dir));
            }
        }
        Step::Ignore(i) => {
            if let Some(p) = pick(&docs, *i) {
                let (dir, name) = p.rsplit_once('/').unwrap_or(("", p));
                let ignore: PathBuf = d.join(dir).join(".gitignore");
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(ignore)
                    .unwrap();
                writeln!(f, "{name}").unwrap();
            }
        }
        Step::Checkout(b) => {
            let branch = ["main", "work", "other"][*b as usize % 3];
            // Refused when local changes would be overwritten: a real outcome.
            git(d, &["checkout", "-q", branch]);
        }
        Step::Stash => {
            git(d, &["stash", "-q", "-u"]);
        }
        Step::StashPop => {
            git(d, &["stash", "pop", "-q"]);
        }
        Step::AddAll => {
            git(d, &["add", "-A"]);
        }
        Step::AddOne(i) => {
            if let Some(p) = pick(&docs, *i) {
                git(d, &["add", "--", p]);
            }
        }
        Step::Commit => {
            git(
                d,
                &["commit", "-q", "--no-verify", "-m", &format!("step {n}")],
            );
        }
        Step::CommitAll => {
            git(
                d,
                &["commit", "-qa", "--no-verify", "-m", &format!("step {n}")],
            );
        }
        Step::Reset => {
            git(d, &["reset", "-q"]);
        }
        Step::ResetOne(i) => {
            if let Some(p) = pick(&docs, *i) {
                git(d, &["reset", "-q", "--", p]);
            }
        }
        Step::Status => {
            must_git(d, &["status", "--porcelain"]);
        }
    }
}

/// Whether git's index has unmerged entries (the watcher scans then).
fn unmerged(d: &Path) -> bool {
    !run_at(d, "git", &["ls-files", "-u"]).stdout.is_empty()
}

/// A [`setup`] repository in a new directory, with a watcher on it and
/// its block cache.
pub(crate) fn watched_repo() -> (tempfile::TempDir, Repo, WatchedChanges, BlockCache) {
    let tmp = tempfile::tempdir().expect("tempdir");
    setup(tmp.path());
    let repo = Repo::discover(tmp.path()).expect("repo");
    let w = WatchedChanges::new(&repo).expect("the layout is watchable");
    let cache = BlockCache::open(tmp.path());
    (tmp, repo, w, cache)
}

/// The watched and the scanned answers at this moment, compared; returns
/// how the watched one was answered.
pub(crate) fn compare(d: &Path, w: &WatchedChanges, cache: &BlockCache, ctx: &str) -> Answered {
    let repo = Repo::discover(d).expect("repo");
    let main = std::process::Command::new("git")
        .args(["rev-parse", "main"])
        .current_dir(d)
        .output()
        .expect("git rev-parse");
    let base: noma_git::git::Oid = String::from_utf8_lossy(&main.stdout)
        .trim()
        .parse()
        .expect("main");
    let head = repo.head_commit().expect("head");
    let mb = repo.merge_base(base, head).expect("merge base");
    let (watched, how) = w.worktree_changes(&repo, mb).expect("watched");
    let scanned = repo.worktree_changes(mb, "*.noma").expect("scanned");
    assert_eq!(watched, scanned, "listing differs ({how:?}) {ctx}");
    let q = Query {
        base: "main".into(),
        ..Query::default()
    };
    let a = changes::changed_blocks_watched(&repo, &q, cache, Some(w)).expect("watched blocks");
    let b = changes::changed_blocks(&repo, &q, cache).expect("scanned blocks");
    assert_eq!(a, b, "changed blocks differ {ctx}");
    how
}

/// Runs one case; returns how many of its steps were answered
/// incrementally, and how many steps it had.
fn run_case(steps: &[Step]) -> (usize, usize) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path();
    setup(d);
    let repo = Repo::discover(d).expect("repo");
    let w = WatchedChanges::new(&repo).expect("the layout is watchable");
    assert_eq!(w.unusable(), None, "the watcher must start here");
    let cache = BlockCache::open(d);
    compare(d, &w, &cache, "at the start");
    // One edit first: a plain edit is answered incrementally, or the
    // property below would hold of the full scan alone.
    let mut serial = 0;
    let mut last = None;
    let mut first = vec![Step::Edit(0, 1)];
    first.extend_from_slice(steps);
    let mut incremental = 0;
    for (k, s) in first.iter().enumerate() {
        apply(d, s, &mut serial, &mut last);
        let ctx = format!("after step {k} of {first:?}");
        let how = compare(d, &w, &cache, &ctx);
        if k == 0 {
            assert_eq!(how, Answered::Incremental, "a plain edit scanned the tree");
        }
        if s.index_only() && !unmerged(d) {
            assert_eq!(
                how,
                Answered::Incremental,
                "an index rewrite scanned, {ctx}"
            );
        }
        incremental += usize::from(how == Answered::Incremental);
    }
    // Every cookie is removed once its event is in.
    let left: Vec<_> = std::fs::read_dir(d.join(".git"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("noma-sync-"))
        .collect();
    assert!(left.is_empty(), "cookies left behind: {left:?}");
    (incremental, first.len())
}

/// The run's seed: `NOMA_TEST_SEED` (a number, or `random` to draw one
/// from the clock), else a fixed one, so CI does not turn red by the draw
/// (as the forgery generator and the simulator do). Seed
/// 1795956065947464219 found `[Edit(0, 1), Stash, StashPop, Reset]`
/// answered by a full scan at the reset; it is the named test
/// `a_reset_after_stash_pop_is_answered_incrementally`.
fn seed() -> u64 {
    match std::env::var("NOMA_TEST_SEED") {
        Ok(v) if v.trim() == "random" => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|t| t.as_nanos() as u64)
            .unwrap_or(1),
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("NOMA_TEST_SEED={v:?} is not a number or `random`")),
        Err(_) => 1,
    }
}

#[test]
fn watched_changes_equal_the_full_scan_after_every_step() {
    let seed = seed();
    let _ = writeln!(std::io::stderr(), "changed_watch: NOMA_TEST_SEED={seed}");
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(24),
        max_shrink_iters: 16,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let tally = std::cell::Cell::new((0, 0));
    let result = runner.run(&proptest::collection::vec(step(), 4..16), |steps| {
        let (inc, all) = std::panic::catch_unwind(|| run_case(&steps)).map_err(|e| {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            TestCaseError::fail(msg)
        })?;
        let (i, a) = tally.get();
        tally.set((i + inc, a + all));
        Ok(())
    });
    if let Err(e) = result {
        panic!("seed {seed}: {e}");
    }
    let (inc, all) = tally.get();
    let _ = writeln!(
        std::io::stderr(),
        "changed_watch: {inc} of {all} steps answered incrementally"
    );
}

/// Found by a CI run's seed (1795956065947464219): the index `git reset`
/// writes after a `git stash pop` was answered by a full scan (the answer
/// was right; the cost was not).
#[test]
fn a_reset_after_stash_pop_is_answered_incrementally() {
    run_case(&[Step::Stash, Step::StashPop, Step::Reset]);
}

/// git pairs a deleted with an added tracked document as one rename; an
/// incremental answer that asked about the touched path alone would break
/// the pair. Each step here is answered incrementally and equals the scan.
#[test]
fn renames_stay_git_pairs_when_answered_incrementally() {
    let (tmp, repo, w, cache) = watched_repo();
    let d = tmp.path();
    // A staged move (the index changed: this call scans), then an edit of
    // the moved document: still the pair a/d0 -> a/moved.
    must_git(d, &["mv", "a/d0.noma", "a/moved.noma"]);
    compare(d, &w, &cache, "after git mv");
    edit(d, "a/moved.noma", 3, 1);
    assert_eq!(
        compare(d, &w, &cache, "after editing the moved document"),
        Answered::Incremental
    );
    // A staged copy, then its original deleted in the work tree only: git
    // pairs the two; the touched path alone is a deletion.
    std::fs::copy(d.join("b/d2.noma"), d.join("b/copy.noma")).unwrap();
    must_git(d, &["add", "b/copy.noma"]);
    compare(d, &w, &cache, "after adding the copy");
    std::fs::remove_file(d.join("b/d2.noma")).unwrap();
    assert_eq!(
        compare(d, &w, &cache, "after deleting the original"),
        Answered::Incremental
    );
    let listing = repo
        .worktree_changes(repo.head_commit().unwrap(), "*.noma")
        .unwrap();
    assert!(
        listing
            .iter()
            .any(|c| c.old_path.as_deref() == Some("b/d2.noma")),
        "git pairs the deleted original with its copy: {listing:?}"
    );
    // The original back: the pair dissolves into an addition.
    std::fs::copy(d.join("b/copy.noma"), d.join("b/d2.noma")).unwrap();
    assert_eq!(
        compare(d, &w, &cache, "after restoring the original"),
        Answered::Incremental
    );
}

/// Ignore rules outside the work tree (here a `core.excludesFile`) are not
/// watched; a query notices that they changed by their metadata.
#[test]
fn a_changed_excludes_file_outside_the_tree_is_noticed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path();
    setup(d);
    let outside = tempfile::tempdir().expect("tempdir");
    let ignore = outside.path().join("ignore");
    std::fs::write(&ignore, "").unwrap();
    must_git(
        d,
        &[
            "config",
            "core.excludesFile",
            ignore.to_str().expect("utf-8"),
        ],
    );
    std::fs::write(d.join("a/new.noma"), doc("new")).unwrap();
    let repo = Repo::discover(d).expect("repo");
    let w = WatchedChanges::new(&repo).expect("the layout is watchable");
    let cache = BlockCache::open(d);
    compare(d, &w, &cache, "at the start");
    edit(d, "a/d2.noma", 1, 1);
    assert_eq!(
        compare(d, &w, &cache, "after an edit"),
        Answered::Incremental
    );
    let listed = |w: &WatchedChanges| {
        let mb = repo.head_commit().unwrap();
        let (l, _) = w.worktree_changes(&repo, mb).unwrap();
        l.iter().any(|c| c.path == "a/new.noma")
    };
    assert!(listed(&w), "a/new.noma is untracked and not ignored yet");
    std::fs::write(&ignore, "new.noma\n").unwrap();
    compare(d, &w, &cache, "after ignoring it outside the tree");
    assert!(!listed(&w), "a/new.noma is ignored now");
}

/// More events between two calls than the watcher and the kernel can
/// hold: events are lost, so the next call scans, and sees the document
/// changed after the flood. The flood must exceed the watcher's queue
/// ([`watch::QUEUE`]) plus the kernel's (`max_queued_events`): events still
/// in the kernel's queue when the call starts are drained by the call
/// itself, so a smaller flood is lost or not depending on how far the
/// watcher's thread lagged behind the writes (CI once saw 80,000 events
/// answered incrementally, correctly, with nothing lost). (Fails if a call
/// trusts a queue that lost events; the lost flag itself only spares the
/// call the cookie's 5 s wait, which also ends in a scan.)
#[test]
fn a_flood_of_events_makes_the_next_call_scan() {
    let (tmp, _repo, w, cache) = watched_repo();
    let d = tmp.path();
    assert_eq!(w.unusable(), None, "the watcher must start here");
    compare(d, &w, &cache, "at the start");
    let kernel: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .expect("inotify's max_queued_events (the watcher runs on Linux only)");
    let writes = (watch::QUEUE + kernel) / 2 + 4096;
    // Two files written in turn: inotify merges an event only with an
    // identical one right before it.
    let mut a = std::fs::File::create(d.join("flood-a.txt")).unwrap();
    let mut b = std::fs::File::create(d.join("flood-b.txt")).unwrap();
    for _ in 0..writes {
        a.write_all(b"x").unwrap();
        b.write_all(b"x").unwrap();
    }
    edit(d, "b/d3.noma", 2, 1);
    assert_eq!(
        compare(d, &w, &cache, "after the flood"),
        Answered::FullScan,
        "{} events between two calls",
        2 * writes
    );
    edit(d, "b/d3.noma", 4, 2);
    assert_eq!(
        compare(d, &w, &cache, "after the next edit"),
        Answered::Incremental,
        "the watcher is back after the scan"
    );
}
