//! The watched changed-document index (`noma_git::changes::watch`) follows
//! rewrites of git's index: a rewrite that changes no entry (a plain
//! `git status` refreshing stat data) and one that changes a few (`git
//! add`, `git reset`, `git rm --cached`) are answered incrementally and
//! equal the full scan; a commit keeps its fallback (a full scan), and so
//! does an index this reader cannot follow (a split index).

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use noma_git::changes::watch::Answered;

use crate::changed_watch::{compare, edit, must_git, watched_repo};

/// The inode of `.git/index`: git writes a new file and renames it over.
fn index_inode(d: &Path) -> u64 {
    std::fs::metadata(d.join(".git/index"))
        .expect("index")
        .ino()
}

/// A plain `git status` after an unchanged document's modification time
/// moved: git refreshes the entry's stat data and rewrites the index, and
/// the next call is still answered from the kept listing (it was a full
/// scan before the index was followed entry by entry). The refresh changes
/// git's answer: until it, `git diff-index` lists the touched document as
/// modified (stat data differs, no id), so a follower that ignored stat
/// data would keep that entry.
#[test]
fn a_stat_refresh_of_the_index_is_answered_incrementally() {
    let (tmp, repo, w, cache) = watched_repo();
    let d = tmp.path();
    compare(d, &w, &cache, "at the start");
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("a/d2.noma"))
        .expect("open");
    // In the past: a time after the index's write would make git compare
    // the contents (a racily clean entry) instead of listing it.
    let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    f.set_modified(past).expect("mtime");
    drop(f);
    assert_eq!(
        compare(d, &w, &cache, "after the touch"),
        Answered::Incremental
    );
    let mb = repo.head_commit().expect("head");
    let listed = |w: &noma_git::changes::watch::WatchedChanges| {
        let (l, _) = w.worktree_changes(&repo, mb).expect("listing");
        l.iter().any(|c| c.path == "a/d2.noma")
    };
    assert!(listed(&w), "git lists the touched document until a refresh");
    let before = index_inode(d);
    must_git(d, &["status", "--porcelain"]);
    assert_ne!(index_inode(d), before, "git status rewrote the index");
    assert_eq!(
        compare(d, &w, &cache, "after git status"),
        Answered::Incremental,
        "a stat refresh scanned the tree"
    );
    assert!(!listed(&w), "refreshed: no longer listed");
}

/// Staging and unstaging documents, new and changed, is followed entry by
/// entry; a commit falls back to a full scan.
#[test]
fn adds_and_resets_are_answered_incrementally() {
    let (tmp, _repo, w, cache) = watched_repo();
    let d = tmp.path();
    compare(d, &w, &cache, "at the start");
    edit(d, "b/d3.noma", 2, 1);
    std::fs::write(d.join("a/new.noma"), "# New\n").expect("write");
    compare(d, &w, &cache, "after the edits");
    let steps: [&[&str]; 6] = [
        &["add", "b/d3.noma"],
        &["add", "a/new.noma"],
        &["reset", "-q", "--", "b/d3.noma"],
        &["rm", "-q", "--cached", "a/new.noma"],
        &["add", "-A"],
        &["reset", "-q"],
    ];
    for args in steps {
        must_git(d, args);
        assert_eq!(
            compare(d, &w, &cache, &format!("after git {args:?}")),
            Answered::Incremental,
            "git {args:?} scanned the tree"
        );
    }
    must_git(d, &["commit", "-qam", "all"]);
    assert_eq!(
        compare(d, &w, &cache, "after git commit -a"),
        Answered::FullScan,
        "HEAD moved: the kept listings are dropped"
    );
}

/// A split index keeps its entries in a second file this reader does not
/// follow: every call scans, and the answers stay the scan's.
#[test]
fn a_split_index_is_scanned_not_followed() {
    let (tmp, _repo, w, cache) = watched_repo();
    let d = tmp.path();
    compare(d, &w, &cache, "at the start");
    must_git(d, &["update-index", "--split-index"]);
    compare(d, &w, &cache, "after splitting the index");
    edit(d, "a/d2.noma", 1, 1);
    must_git(d, &["add", "a/d2.noma"]);
    assert_eq!(
        compare(d, &w, &cache, "after an add to the split index"),
        Answered::FullScan
    );
    edit(d, "a/d2.noma", 3, 2);
    assert_eq!(compare(d, &w, &cache, "after an edit"), Answered::FullScan);
}
