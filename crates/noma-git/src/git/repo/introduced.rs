//! The commit that introduced each of some transcript lines, found by the
//! lines' op_ids: history is walked oldest first and a commit's changed
//! transcripts (against its first parent) are read once, so a line is
//! found under whatever name its transcript had then (a `git mv` of the
//! document), and the walk stops as soon as every op_id is placed.

use std::collections::{HashMap, HashSet};

use git2::{Delta, DiffOptions};

use super::{libgit2, GitError, Repo};
use crate::git::Oid;

impl Repo {
    /// For each op_id of `wanted`, the oldest commit reachable from HEAD
    /// (at most `max_commits` visited) whose version of some file ending
    /// with `suffix` holds a line naming it, as `op_ids_of` reads a blob's
    /// op_ids. An op_id no commit holds (a record not committed yet) is
    /// absent from the answer.
    pub fn introducing_commits(
        &self,
        suffix: &str,
        wanted: &HashSet<String>,
        max_commits: usize,
        op_ids_of: impl Fn(&[u8]) -> Vec<String>,
    ) -> Result<HashMap<String, Oid>, GitError> {
        let mut found: HashMap<String, Oid> = HashMap::new();
        let Some(head) = self.head_commit() else {
            return Ok(found);
        };
        let mut walk = self.repo.revwalk().map_err(libgit2)?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .map_err(libgit2)?;
        walk.push(head.raw()).map_err(libgit2)?;
        let mut opts = DiffOptions::new();
        opts.pathspec(format!("*{suffix}"));
        let mut seen_blobs: HashSet<Oid> = HashSet::new();
        for id in walk.take(max_commits) {
            let id = id.map_err(libgit2)?;
            let commit = self.repo.find_commit(id).map_err(libgit2)?;
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
                if d.status() == Delta::Deleted || !named || !seen_blobs.insert(blob) {
                    continue;
                }
                // The blob's bytes where libgit2 holds them (no copy of a
                // long transcript), else as `git cat-file` gives them.
                let ids = match self.repo.find_blob(blob.raw()) {
                    Ok(b) => op_ids_of(b.content()),
                    Err(_) => op_ids_of(&self.blob(blob)?),
                };
                for op_id in ids {
                    if wanted.contains(&op_id) && !found.contains_key(&op_id) {
                        found.insert(op_id, Oid::from_raw(id));
                    }
                }
            }
            if found.len() == wanted.len() {
                break;
            }
        }
        Ok(found)
    }
}
