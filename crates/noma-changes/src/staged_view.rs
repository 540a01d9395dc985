//! One path's entry of `git diff-index -M <merge base>` (the merge base's
//! tree against the work tree through the index), worked out in-process
//! from what the watcher already holds: the index entry it read, the
//! merge base's tree entry and one `lstat` of the file. A call after a
//! `git add` of one document then starts no git process, which would read
//! the whole index again (8.8 MB at 100,000 documents).
//!
//! It follows git's own rule (`diff-lib.c`, `read-cache.c`): an entry
//! whose stat data matches the file is taken at its staged id, without
//! reading the file; one whose size or modification time (seconds)
//! differs is modified with no id (the zero id), also unread; a racily
//! clean entry (the file's recorded time not before the index file's) is
//! hashed and compared with its id. Whenever git's answer would depend on
//! something this does not know, the answer is [`View::Unsure`] and the
//! caller asks git: stat fields git compares only under some settings or
//! builds (nanoseconds, ctime, inode, device, owner), the executable bit
//! (`core.fileMode`), a racily clean file whose bytes differ from its id
//! or whose bytes a setting converts (`core.autocrlf`, attributes), a
//! symbolic link, submodule or directory on either side, a file that is
//! missing or not a regular file, assume-unchanged, skip-worktree or
//! intent-to-add entries, and a configured file system monitor. Unmerged,
//! split and sparse indexes are never read (`index_file.rs`).

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use super::index_file::{Entry, IndexEntries};
use crate::git::repo::{ChangeKind, Repo, StagedChange};
use crate::git::Oid;

/// Git's modes of a regular file.
const REGULAR: [u32; 2] = [0o100644, 0o100755];
/// The empty blob's id, which an entry recorded with size 0 may have.
const EMPTY_BLOB: [u8; 20] = [
    0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b, 0x29, 0xae, 0x77, 0x5a, 0xd8, 0xc2,
    0xe4, 0x8c, 0x53, 0x91,
];

/// One path's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum View {
    /// What git lists for the path (None: nothing).
    Sure(Option<StagedChange>),
    /// Git must be asked (why, for tests and debugging).
    Unsure(&'static str),
}

/// The `diff-index` entry of `path` against the merge base `mb`, from
/// `index` (the watcher's read) and the work tree under `root`.
pub(crate) fn staged_view(
    repo: &Repo,
    root: &Path,
    mb: Oid,
    index: &IndexEntries,
    path: &str,
) -> View {
    // A path through a file of the tree, or a tree libgit2 cannot read:
    // git's own answer (and error) then.
    let Ok(old) = repo.tree_entry_at(mb, path) else {
        return View::Unsure("the merge base's tree entry");
    };
    if old.is_some_and(|(_, mode)| !REGULAR.contains(&mode)) {
        return View::Unsure("not a regular file at the merge base");
    }
    let change = |kind, new_id, old_id| StagedChange {
        kind,
        path: path.to_string(),
        old_path: None,
        new_id,
        old_id,
        new_link: false,
    };
    let Some(e) = index.get(path) else {
        // Not in the index: deleted, or nothing to list.
        return View::Sure(old.map(|(id, _)| change(ChangeKind::Deleted, None, Some(id))));
    };
    if e.special {
        return View::Unsure("assume-unchanged, skip-worktree or intent-to-add");
    }
    if !REGULAR.contains(&e.mode) {
        return View::Unsure("a link or submodule in the index");
    }
    let file = root.join(path);
    let Ok(st) = std::fs::symlink_metadata(&file) else {
        return View::Unsure("no file in the work tree");
    };
    if !st.file_type().is_file() {
        return View::Unsure("not a regular file in the work tree");
    }
    if (st.mode() ^ e.mode) & 0o100 != 0 {
        return View::Unsure("the executable bit differs");
    }
    // Git compares the low 32 bits, as its index stores them.
    let changed = st.size() as u32 != e.size
        || st.mtime() as u32 != e.mtime.0
        || (e.size == 0 && e.id != EMPTY_BLOB);
    let clean = if changed {
        false
    } else {
        if let Err(why) = clean_entry(repo, root, index, path, &file, &st, &e) {
            return View::Unsure(why);
        }
        true
    };
    let new_id = if clean {
        Oid::from_bytes(&e.id)
    } else {
        Some(Oid::zero())
    };
    View::Sure(match old {
        None => Some(change(ChangeKind::Added, new_id, None)),
        Some((id, mode)) if clean && Some(id) == new_id && mode == e.mode => None,
        Some((id, _)) => Some(change(ChangeKind::Modified, new_id, Some(id))),
    })
}

/// Whether an entry whose size and modification second match is clean
/// as git would judge it: the rest of its stat data equal, and a racily
/// clean entry's bytes hashing to its id; `Err` names why git must be
/// asked.
fn clean_entry(
    repo: &Repo,
    root: &Path,
    index: &IndexEntries,
    path: &str,
    file: &Path,
    st: &std::fs::Metadata,
    e: &Entry,
) -> Result<(), &'static str> {
    let same = (
        st.mtime_nsec() as u32,
        st.ctime() as u32,
        st.ctime_nsec() as u32,
    ) == (e.mtime.1, e.ctime.0, e.ctime.1)
        && (st.dev() as u32, st.ino() as u32, st.uid(), st.gid()) == (e.dev, e.ino, e.uid, e.gid);
    if !same {
        return Err("stat data differs in fields git may not compare");
    }
    // Racily clean: written in the same second as the index (or after), so
    // git reads the bytes. Seconds only: a build that compares nanoseconds
    // too finds fewer racy entries, and a racy entry whose bytes match is
    // clean in both.
    let racy = index.mtime().is_none_or(|(sec, _)| sec <= e.mtime.0);
    if racy {
        let id = Oid::from_bytes(&e.id);
        let attributes = attribute_files(repo, root, index, path);
        if id.is_none() || repo.unconverted_blob_id(path, file, attributes) != id {
            return Err("a racily clean entry");
        }
    }
    Ok(())
}

/// Whether any attribute file may apply to `path`: one in the index, in
/// the work tree in its directory or above, `.git/info/attributes`, the
/// user's (`core.attributesFile`, or git's default under the XDG or home
/// configuration directory) or the system's (`/etc/gitattributes`).
/// Looked at on disk: libgit2's lookup loads the whole index.
fn attribute_files(repo: &Repo, root: &Path, index: &IndexEntries, path: &str) -> bool {
    if index.has_attributes() {
        return true;
    }
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    let mut dir = Path::new(path).parent();
    while let Some(d) = dir {
        if exists(&root.join(d).join(".gitattributes")) {
            return true;
        }
        dir = d.parent();
    }
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let xdg = var("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| var("HOME").map(|h| Path::new(&h).join(".config")));
    // Unknown settings count as attributes (libgit2 then looks).
    exists(&root.join(".git/info/attributes"))
        || exists(Path::new("/etc/gitattributes"))
        || repo.config_string("core.attributesFile").is_some()
        || xdg.is_none_or(|x| exists(&x.join("git/attributes")))
}

/// [`staged_view`] of every path of `paths`, in order; None when any one
/// is unsure (the caller asks git about them all), and always with a file
/// system monitor configured (`core.fsmonitor`: git then takes entries the
/// monitor vouches for without their stat data).
pub(crate) fn staged_views<'a>(
    repo: &Repo,
    root: &Path,
    mb: Oid,
    index: &IndexEntries,
    paths: impl IntoIterator<Item = &'a String>,
) -> Option<Vec<StagedChange>> {
    if repo
        .config_string("core.fsmonitor")
        .is_some_and(|v| !v.eq_ignore_ascii_case("false"))
    {
        return None;
    }
    let mut out = Vec::new();
    for p in paths {
        match staged_view(repo, root, mb, index, p) {
            View::Sure(c) => out.extend(c),
            View::Unsure(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_testutil::git;

    /// A racily clean entry is settled by its bytes: the staged id when
    /// they hash to it, git asked when they do not (an index whose entry
    /// names another blob than the file's, as a touch-update-touch within
    /// one second leaves it).
    #[test]
    fn a_racily_clean_entry_is_hashed_and_a_mismatch_asks_git() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("a.noma"), "one\n").unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "base"]);
        let repo = Repo::discover(d).unwrap();
        let mb = repo.head_commit().unwrap();
        std::fs::write(d.join("a.noma"), "two\n").unwrap();
        // In the future: racy whatever the index's time.
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.join("a.noma"))
            .unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(100))
            .unwrap();
        drop(f);
        git(d, &["add", "a.noma"]);
        let index = super::super::index_file::read(&d.join(".git"), None).unwrap();
        let e = index.get("a.noma").unwrap();
        assert!(index.mtime().unwrap().0 <= e.mtime.0, "racy");
        let two = Oid::from_bytes(&e.id);
        let one = repo.blob_id_at(mb, "a.noma").unwrap();
        assert_ne!(two, one);
        assert_eq!(
            staged_view(&repo, d, mb, &index, "a.noma"),
            View::Sure(Some(StagedChange {
                kind: ChangeKind::Modified,
                path: "a.noma".into(),
                old_path: None,
                new_id: two,
                old_id: one,
                new_link: false,
            }))
        );
        // The same entry naming the old blob: the bytes differ from it.
        let mut bytes = std::fs::read(d.join(".git/index")).unwrap();
        let at = 12 + 40;
        assert_eq!(&bytes[at..at + 20], two.unwrap().as_bytes());
        bytes[at..at + 20].copy_from_slice(one.unwrap().as_bytes());
        let patched = super::super::index_file::parse(&bytes).unwrap();
        assert_eq!(
            staged_view(&repo, d, mb, &patched, "a.noma"),
            View::Unsure("a racily clean entry")
        );
        // Not in the index: a deletion, from the tree alone.
        git(d, &["rm", "-q", "--cached", "a.noma"]);
        let index = super::super::index_file::read(&d.join(".git"), None).unwrap();
        assert!(matches!(
            staged_view(&repo, d, mb, &index, "a.noma"),
            View::Sure(Some(StagedChange {
                kind: ChangeKind::Deleted,
                ..
            }))
        ));
        assert_eq!(
            staged_view(&repo, d, mb, &index, "none.noma"),
            View::Sure(None)
        );
    }
}
