//! The commit that introduced each of some transcript lines, found by the
//! lines' op_ids: history is walked oldest first, a commit's changed
//! transcripts (against its first parent) are listed with their sizes
//! (object headers, no content), so a line is found under whatever name
//! its transcript had then (a `git mv` of the document). Transcripts are
//! append-only (the hook and reconcile refuse anything else), so a version
//! holds a line only if it is at least as long as the line's end in the
//! current transcript: only versions that long are read, the oldest first,
//! and the walk stops as soon as every op_id is placed. On a long history
//! that reads the one or two versions that brought the wanted lines, not
//! every version.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use git2::{Delta, DiffOptions};

use super::{libgit2, GitError, Repo};
use crate::git::Oid;

/// One transcript version a commit brought: the walk's position of the
/// commit, the blob, and its size (None: not known without fetching it).
struct Version {
    commit: usize,
    blob: Oid,
    size: Option<u64>,
}

impl Repo {
    /// For each op_id of `wanted`, the oldest commit reachable from HEAD
    /// (at most `max_commits` visited) whose version of some file ending
    /// with `suffix` holds a line naming it, as `op_ids_of` reads a blob's
    /// op_ids. Each op_id comes with the byte offset where its line ends
    /// in the current transcript: a version shorter than that is taken
    /// not to hold it and is not read (an append-only transcript's older
    /// versions are its prefixes). An op_id no commit holds (a record not
    /// committed yet) is absent from the answer. The blob `holds_all` (if
    /// any) is known to hold every op_id of `wanted` and is not read: the
    /// working tree's transcript they were read from, when it is that
    /// blob ([`Repo::worktree_blob_id`]). `path`, the transcript's path
    /// in the repository, lets a history that is one line be bisected
    /// instead ([`Repo::introducing_on_line`]).
    pub fn introducing_commits(
        &self,
        (suffix, path): (&str, Option<&str>),
        (wanted, holds_all): (&HashMap<String, u64>, Option<Oid>),
        max_commits: usize,
        op_ids_of: impl Fn(&[u8]) -> Vec<String>,
    ) -> Result<HashMap<String, Oid>, GitError> {
        if let Some(path) = path.filter(|_| !wanted.is_empty()) {
            let on_line =
                self.introducing_on_line(path, (wanted, holds_all), max_commits, &op_ids_of)?;
            if let Some(found) = on_line {
                return Ok(found);
            }
        }
        let mut found: HashMap<String, Oid> = HashMap::new();
        let Some(head) = self.head_commit() else {
            return Ok(found);
        };
        if wanted.is_empty() {
            return Ok(found);
        }
        let mut walk = self.repo.revwalk().map_err(libgit2)?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .map_err(libgit2)?;
        walk.push(head.raw()).map_err(libgit2)?;
        let commits = (walk.take(max_commits))
            .map(|id| id.map(Oid::from_raw))
            .collect::<Result<Vec<_>, _>>()
            .map_err(libgit2)?;
        let versions = self.versions(&commits, suffix)?;
        // The ends still unplaced, longest last: a version reaches the
        // shortest first.
        let mut open: Vec<(u64, &String)> = wanted.iter().map(|(id, end)| (*end, id)).collect();
        open.sort_unstable();
        // In a partial clone, the first transcript version that is not
        // here brings every later one in one fetch, not one each.
        let mut batched = false;
        for v in &versions {
            let Some(&(shortest, _)) = open.first() else {
                break;
            };
            if v.size.is_some_and(|size| size < shortest) {
                continue;
            }
            // The blob's bytes where libgit2 holds them (no copy of a
            // long transcript), else as `git cat-file` gives them.
            let ids: HashSet<String> = if holds_all == Some(v.blob) {
                wanted.keys().cloned().collect()
            } else {
                if !batched && self.lacks_blob(v.blob) {
                    batched = true;
                    let rest = self.blobs_changed_in(&commits[v.commit..], suffix)?;
                    let _ = self.prefetch_blobs(rest);
                }
                let ids = match self.repo.find_blob(v.blob.raw()) {
                    Ok(b) => op_ids_of(b.content()),
                    Err(_) => op_ids_of(&self.blob(v.blob)?),
                };
                ids.into_iter().collect()
            };
            open.retain(|(_, id)| {
                if ids.contains(*id) {
                    found.insert((*id).clone(), commits[v.commit]);
                    return false;
                }
                true
            });
        }
        Ok(found)
    }

    /// The transcript versions (files ending with `suffix`) each of
    /// `commits` adds or changes against its first parent, each blob
    /// once, at its first commit, with its size from the object's header.
    fn versions(&self, commits: &[Oid], suffix: &str) -> Result<Vec<Version>, GitError> {
        let mut opts = DiffOptions::new();
        opts.pathspec(format!("*{suffix}"));
        let odb = self.repo.odb().map_err(libgit2)?;
        let mut seen: HashSet<Oid> = HashSet::new();
        let mut out = Vec::new();
        for (k, id) in commits.iter().enumerate() {
            let commit = self.repo.find_commit(id.raw()).map_err(libgit2)?;
            let parent = match commit.parent_ids().next() {
                Some(p) => Some(self.tree_of(Oid::from_raw(p))?),
                None => None,
            };
            let tree = commit.tree().map_err(libgit2)?;
            let diff = self
                .repo
                .diff_tree_to_tree(parent.as_ref(), Some(&tree), Some(&mut opts))
                .map_err(libgit2)?;
            for d in diff.deltas() {
                let blob = Oid::from_raw(d.new_file().id());
                let named = d
                    .new_file()
                    .path_bytes()
                    .is_some_and(|p| p.ends_with(suffix.as_bytes()));
                if d.status() == Delta::Deleted || !named || !seen.insert(blob) {
                    continue;
                }
                // A blob a partial clone lacks has no header here either:
                // its size is not asked of the remote (it is read if need be).
                let size = odb
                    .read_header(blob.raw())
                    .ok()
                    .map(|(size, _)| size as u64);
                out.push(Version {
                    commit: k,
                    blob,
                    size,
                });
            }
        }
        Ok(out)
    }

    /// The id of the blob the index holds for the working tree file
    /// `path`, when git would take the file to be that blob without
    /// reading it: the size, modification and change times and inode the
    /// index recorded are the file's, and the index was written after the
    /// file was last modified (otherwise the entry is "racily clean" and
    /// only the content could tell), and the blob is as long as the file.
    /// None in every other case, and off
    /// Unix, where the index's stat data are not all there.
    pub fn worktree_blob_id(&self, path: &Path) -> Option<Oid> {
        let rel = self.relative_path(path)?;
        let index = self.repo.index().ok()?;
        let entry = index.get_path(Path::new(&rel), 0)?;
        let file = std::fs::symlink_metadata(path).ok()?;
        let index_file = std::fs::metadata(self.repo.path().join("index")).ok()?;
        // A filter (line ends converted on checkout) makes the blob other
        // bytes than the file's; a blob of another size is not taken.
        let (size, _) = self.repo.odb().ok()?.read_header(entry.id).ok()?;
        (clean(&entry, &file, &index_file) && size as u64 == file.len())
            .then(|| Oid::from_raw(entry.id))
    }
}

/// Whether `entry` records `file`'s stat data, not racily (see
/// [`Repo::worktree_blob_id`]).
#[cfg(unix)]
fn clean(entry: &git2::IndexEntry, file: &std::fs::Metadata, index: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // The index keeps 32 bits of each, as git truncates them.
    let time = |t: &git2::IndexTime| (i64::from(t.seconds()) as u32, t.nanoseconds());
    let at = |s: i64, ns: i64| (s as u32, ns as u32);
    file.is_file()
        && u64::from(entry.file_size) == file.len() & 0xffff_ffff
        && entry.ino == file.ino() as u32
        && time(&entry.mtime) == at(file.mtime(), file.mtime_nsec())
        && time(&entry.ctime) == at(file.ctime(), file.ctime_nsec())
        && time(&entry.mtime) < at(index.mtime(), index.mtime_nsec())
}

#[cfg(not(unix))]
fn clean(_: &git2::IndexEntry, _: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use noma_testutil::git;

    #[test]
    fn a_file_is_its_index_blob_only_while_its_stat_data_match_not_racily() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        let t = d.join("t.noma.patches");
        std::fs::write(&t, "one\ntwo\n").unwrap();
        // The index written in a later second than the file: not racy.
        let old = std::process::Command::new("touch")
            .args(["-d", "2001-01-01 00:00:00"])
            .arg(&t)
            .status()
            .unwrap();
        assert!(old.success());
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "one"]);
        let r = Repo::discover(d).unwrap();
        let head = r.head_commit().unwrap();
        let id = r.blob_id_at(head, "t.noma.patches").unwrap().unwrap();
        assert_eq!(r.worktree_blob_id(&t), Some(id));
        assert_eq!(r.worktree_blob_id(&d.join("none.noma.patches")), None);
        // Racily clean: the index no newer than the file.
        let racy = std::process::Command::new("touch")
            .args(["-d", "2000-01-01 00:00:00"])
            .arg(d.join(".git/index"))
            .status()
            .unwrap();
        assert!(racy.success());
        assert_eq!(Repo::discover(d).unwrap().worktree_blob_id(&t), None);
        // Rewritten (same size): its stat data no longer match.
        git(d, &["update-index", "--refresh"]);
        std::fs::write(&t, "one\nTWO\n").unwrap();
        assert_eq!(Repo::discover(d).unwrap().worktree_blob_id(&t), None);
    }
}
