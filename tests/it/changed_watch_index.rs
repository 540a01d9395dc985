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

/// Runs `git args`, then compares the watched answer with the scan: it must
/// be incremental; returns how many git processes it started.
fn asked_after(
    d: &Path,
    w: &noma_git::changes::watch::WatchedChanges,
    cache: &noma_git::cache::BlockCache,
    args: &[&str],
) -> u64 {
    let before = w.git_processes();
    if !args.is_empty() {
        must_git(d, args);
    }
    assert_eq!(
        compare(d, w, cache, &format!("after git {args:?}")),
        Answered::Incremental,
        "git {args:?} scanned the tree"
    );
    w.git_processes() - before
}

/// Sets `p`'s modification time `secs` seconds into the past (before the
/// index's next write: git then trusts the entry's stat data).
fn age(d: &Path, p: &str, secs: u64) {
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join(p))
        .expect("open");
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    f.set_modified(t).expect("mtime");
}

/// After `git add`, `git reset`, `git rm --cached` and an edit, the
/// changed entries are worked out from the index entry, the merge base's
/// tree entry and the file's stat data, with no git process (it read the
/// whole index again before); the answers stay the scan's. Both a racily
/// clean entry (added in the second the file was written: its bytes are
/// hashed, as git does) and one git trusts by its stat data.
#[test]
fn staged_changes_are_worked_out_without_git() {
    let (tmp, _repo, w, cache) = watched_repo();
    let d = tmp.path();
    compare(d, &w, &cache, "at the start");
    edit(d, "b/d3.noma", 2, 1);
    assert_eq!(asked_after(d, &w, &cache, &[]), 0, "an edit");
    assert_eq!(
        asked_after(d, &w, &cache, &["add", "b/d3.noma"]),
        0,
        "add, racy"
    );
    edit(d, "a/d2.noma", 3, 2);
    age(d, "a/d2.noma", 100);
    assert_eq!(asked_after(d, &w, &cache, &[]), 0, "an older edit");
    assert_eq!(asked_after(d, &w, &cache, &["add", "a/d2.noma"]), 0, "add");
    assert_eq!(
        asked_after(d, &w, &cache, &["reset", "-q", "--", "b/d3.noma"]),
        0,
        "reset of one path"
    );
    // Staged, then the edit undone in the work tree (another size): git
    // lists it as modified with no id, and it has no changed block.
    let original = std::fs::read(d.join("a/d2.noma")).expect("read");
    must_git(d, &["checkout", "-q", "HEAD", "--", "a/d2.noma"]);
    let head = std::fs::read(d.join("a/d2.noma")).expect("read");
    std::fs::write(d.join("a/d2.noma"), &original).expect("write");
    must_git(d, &["add", "a/d2.noma"]);
    assert_eq!(asked_after(d, &w, &cache, &[]), 0, "staged");
    std::fs::write(d.join("a/d2.noma"), &head).expect("write");
    assert_eq!(
        asked_after(d, &w, &cache, &[]),
        0,
        "reverted in the work tree"
    );
    // A new document added: untracked first (git is asked about it), then
    // staged with no deletion to pair it with.
    std::fs::write(d.join("a/new.noma"), "# New\n").expect("write");
    assert_eq!(asked_after(d, &w, &cache, &[]), 1, "untracked: ls-files");
    assert_eq!(
        asked_after(d, &w, &cache, &["add", "a/new.noma"]),
        0,
        "add new"
    );
    // Out of the index again: an untracked file (git's ls-files is asked).
    assert_eq!(
        asked_after(d, &w, &cache, &["rm", "-q", "--cached", "a/new.noma"]),
        1,
        "rm --cached of a new document"
    );
    assert_eq!(
        asked_after(d, &w, &cache, &["add", "a/new.noma"]),
        0,
        "add new"
    );
}

/// A removal (`git rm`) is a deletion worked out from the index alone; a
/// staged rename (`git mv`), where git's pairing decides, and `git rm
/// --cached` of a document in the merge base go to git. Every answer is
/// the scan's.
#[test]
fn removed_and_renamed_documents_after_git() {
    let (tmp, repo, w, cache) = watched_repo();
    let d = tmp.path();
    compare(d, &w, &cache, "at the start");
    // The file is gone: only ls-files is asked (nothing untracked).
    assert_eq!(
        asked_after(d, &w, &cache, &["rm", "-q", "b/d2.noma"]),
        1,
        "rm"
    );
    // A deletion is listed: an added document could now pair with it.
    std::fs::write(d.join("a/new.noma"), "# New\n").expect("write");
    asked_after(d, &w, &cache, &[]);
    assert!(
        asked_after(d, &w, &cache, &["add", "a/new.noma"]) >= 1,
        "an addition beside a deletion goes to git's pairing"
    );
    must_git(d, &["reset", "-q"]);
    compare(d, &w, &cache, "after reset");
    assert!(
        asked_after(d, &w, &cache, &["mv", "a/d0.noma", "a/moved.noma"]) >= 1,
        "a move goes to git's pairing"
    );
    let listing = repo
        .worktree_changes(repo.head_commit().expect("head"), "*.noma")
        .expect("listing");
    assert!(
        listing
            .iter()
            .any(|c| c.old_path.as_deref() == Some("a/d0.noma")),
        "git pairs the move: {listing:?}"
    );
    assert_eq!(
        asked_after(d, &w, &cache, &["rm", "-q", "--cached", "top.noma"]),
        2,
        "rm --cached beside a pair: ls-files, then git's pairing"
    );
}

/// Entries whose answer git decides by something not read here go to
/// git, and the answers stay the scan's: intent-to-add, the executable
/// bit, a symbolic link, a submodule entry, stat data that differs only in
/// fields git compares under some settings (inode, ctime), and a racily
/// clean entry whose bytes an attribute (`ident`) or a setting
/// (`core.autocrlf`) converts.
#[test]
fn what_git_decides_is_asked_of_git() {
    let (tmp, _repo, w, cache) = watched_repo();
    let d = tmp.path();
    compare(d, &w, &cache, "at the start");
    std::fs::write(d.join("a/ita.noma"), "# Intent\n").expect("write");
    asked_after(d, &w, &cache, &[]);
    assert!(
        asked_after(d, &w, &cache, &["add", "-N", "a/ita.noma"]) >= 1,
        "-N"
    );
    let mode = |p: &str, m: u32| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(d.join(p), std::fs::Permissions::from_mode(m)).expect("chmod");
    };
    mode("a/d3.noma", 0o755);
    assert!(asked_after(d, &w, &cache, &[]) >= 1, "executable bit");
    // Staged, the bits agree: a mode change of the same blob, worked out.
    assert_eq!(
        asked_after(d, &w, &cache, &["add", "a/d3.noma"]),
        0,
        "mode staged"
    );
    std::os::unix::fs::symlink("d2.noma", d.join("b/link.noma")).expect("symlink");
    asked_after(d, &w, &cache, &[]);
    assert!(
        asked_after(d, &w, &cache, &["add", "b/link.noma"]) >= 1,
        "symbolic link"
    );
    let head = String::from_utf8(crate::common::run_at(d, "git", &["rev-parse", "HEAD"]).stdout)
        .expect("utf-8");
    let gitlink = format!("160000,{},sub.noma", head.trim());
    assert!(
        asked_after(
            d,
            &w,
            &cache,
            &["update-index", "--add", "--cacheinfo", &gitlink]
        ) >= 1,
        "a submodule entry"
    );
    must_git(d, &["rm", "-q", "--cached", "sub.noma"]);
    compare(d, &w, &cache, "submodule entry removed");
    // The same bytes, a new inode: only the inode differs.
    let bytes = std::fs::read(d.join("b/d0.noma")).expect("read");
    age(d, "b/d0.noma", 100);
    must_git(d, &["status", "--porcelain"]);
    compare(d, &w, &cache, "refreshed");
    let meta = std::fs::metadata(d.join("b/d0.noma")).expect("stat");
    std::fs::remove_file(d.join("b/d0.noma")).expect("rm");
    let keep = d.join("b/keep-inode");
    std::fs::write(&keep, "x").expect("write");
    std::fs::write(d.join("b/d0.noma"), &bytes).expect("write");
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("b/d0.noma"))
        .expect("open");
    f.set_modified(meta.modified().expect("mtime"))
        .expect("mtime");
    drop(f);
    assert!(
        asked_after(d, &w, &cache, &[]) >= 1,
        "inode and ctime differ"
    );
    // An attribute file in the document's directory: libgit2 is asked
    // whether it converts, and it does (`ident`): git is asked.
    std::fs::write(d.join("b/.gitattributes"), "*.noma ident\n").expect("write");
    compare(d, &w, &cache, "attributes changed: scanned");
    let future = |p: &str| {
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.join(p))
            .expect("open");
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(100);
        f.set_modified(later).expect("mtime");
    };
    std::fs::write(d.join("b/ident.noma"), "# $Id$\n").expect("write");
    future("b/ident.noma");
    asked_after(d, &w, &cache, &[]);
    assert!(
        asked_after(d, &w, &cache, &["add", "b/ident.noma"]) >= 1,
        "an attribute converts"
    );
    // A setting that converts line endings: a racily clean entry's bytes
    // are not the blob's.
    must_git(d, &["config", "core.autocrlf", "true"]);
    compare(d, &w, &cache, "config changed: scanned");
    std::fs::write(d.join("a/crlf.noma"), "# CRLF\r\n\r\nText.\r\n").expect("write");
    // In the future: racily clean for certain once added.
    future("a/crlf.noma");
    asked_after(d, &w, &cache, &[]);
    assert!(
        asked_after(d, &w, &cache, &["add", "a/crlf.noma"]) >= 1,
        "autocrlf"
    );
}

/// A sparse index holds directories outside the cone as single entries
/// (`sdir`): never followed or worked out in-process, every call after it
/// changed scans, and the answers stay the scan's.
#[test]
fn a_sparse_index_is_scanned_not_followed() {
    let (tmp, _repo, w, cache) = watched_repo();
    let d = tmp.path();
    compare(d, &w, &cache, "at the start");
    must_git(
        d,
        &["sparse-checkout", "set", "--cone", "--sparse-index", "a"],
    );
    compare(d, &w, &cache, "after making the index sparse");
    edit(d, "a/d2.noma", 1, 1);
    compare(d, &w, &cache, "after an edit");
    must_git(d, &["add", "a/d2.noma"]);
    assert_eq!(
        compare(d, &w, &cache, "after an add to the sparse index"),
        Answered::FullScan
    );
}
